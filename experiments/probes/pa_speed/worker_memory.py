"""Issue 34 probe, kept as run: resident memory (MB) of a process doing what the bench's PA-I
worker does before its fit: import JAX, import jkern.pa, start the backend, load UD's training
set, renumber it (frequency order), drop the original (since the eleventh steps the worker
reads the test set after its fit and passes float32 values with dtype=float64: no float64
copy).

    taskset -c 1 python experiments/probes/pa_speed/worker_memory.py
"""
# ruff: noqa
import sys, resource, gc
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
def rss(): return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
def peak(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("start", rss())
import numpy as np
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
print("jax", rss())
from jkern.pa import fit, frequency_order
print("jkern.pa", rss())
jnp.zeros(3).block_until_ready(); print("jax backend up", rss(), peak())
from _pa_data import pa_dataset
train = pa_dataset("ud", "/work/shared/data", "/tmp/jkern-pa-poly", part="train")
print("loaded", rss(), peak(), train.features.indices.dtype, train.features.values.dtype,
      train.features.indices.shape)
order = frequency_order(train.features)
Xtr, _ = order.apply(train.features)
print("renumbered", rss(), peak())
ytr = train.labels
del train; gc.collect()
print("original dropped", rss(), peak())
