"""Issue 34 probe, kept as run: resident memory (MB, now and peak) of a PA-I process before
its fit: after importing JAX, `jkern.pa`, loading UD, opal's renumbering
(`frequency_order`), `apply` to train and test, and the float64 copies the bench worker makes.

    python experiments/probes/pa_speed/load_memory.py
"""
# ruff: noqa
import sys, resource, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
def cur(): return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
def pk(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024
print("start", cur(), pk())
import numpy as np
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
print("jax", cur(), pk())
from jkern.pa import fit, frequency_order
print("jkern.pa", cur(), pk())
from _pa_data import pa_dataset
tr, te = pa_dataset("ud", str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
print("data", cur(), pk(), tr.features.indices.shape, tr.features.indices.dtype, tr.features.values.dtype, te.features.indices.shape, type(tr.features.indices))
o = frequency_order(tr.features)
print("order", cur(), pk())
X, _ = o.apply(tr.features); Xt, _ = o.apply(te.features)
print("apply", cur(), pk(), X.indices.dtype, X.values.dtype, type(X.values))
X = X.astype(jnp.float64); Xt = Xt.astype(jnp.float64)
print("astype", cur(), pk(), X.values.dtype)
