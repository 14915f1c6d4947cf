"""Issue 34 probe, kept as run: a vmapped grid of 4 C values (explicit mode, 10 epochs) on
the first N rows of a data set, two calls in one process, CPU seconds each.

    taskset -c 1 python experiments/probes/pa_speed/grid_small.py ud 2 20000
"""
# ruff: noqa
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
ds, d, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
train, test = pa_dataset(ds, "/work/shared/data", "/tmp/jkern-pa-poly", max_train=n)
X, _ = frequency_order(train.features).apply(train.features); X = X.astype(jnp.float64)
Cs = jnp.asarray([0.25, 0.5, 1.0, 2.0])
for i in range(2):
    c = time.process_time()
    w = jax.vmap(lambda C: fit(X, train.labels, C=C, degree=d, epochs=10, mode="explicit", block_size=32, key=None).model.weights)(Cs)
    jax.block_until_ready(w)
    print(f"grid {i}: {time.process_time()-c:.2f} CPU s", w.shape, flush=True)
