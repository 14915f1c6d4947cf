"""Issue 34 probe, kept as run: the CPU seconds of each step of a process doing what the
bench's PA-I worker does (explicit mode, C = 1, 10 epochs): import JAX, import jkern.pa, read
the training set, renumber it, fit, read and renumber the test set, its margins.

    taskset -c 1 python experiments/probes/pa_speed/worker_steps.py conj2 2
"""
# ruff: noqa
import time, sys
from pathlib import Path
t0 = time.process_time()
marks = []
def mark(step): marks.append((step, time.process_time()))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
import jax; jax.config.update("jax_enable_x64", True); import jax.numpy as jnp
mark("import jax")
from jkern.pa import fit, frequency_order
mark("import jkern.pa")
from _pa_data import pa_dataset
ds, d = sys.argv[1], int(sys.argv[2])
data = str(Path(__file__).resolve().parents[4] / "shared" / "data")
tr = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="train")
mark("read train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels; del tr
mark("renumber")
sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, throw=True,
          key=None)
jax.block_until_ready(sol.model); np.asarray(sol.stats["updated"])
mark("fit")
te = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="test")
Xt, _ = o.apply(te.features); Xt = Xt.astype(jnp.float64)
mark("read + renumber test")
np.asarray(sol.model.decision_function(Xt))
mark("test margins")
prev = t0
for step, t in marks:
    print(f"{step:22s} {t - prev:6.3f}")
    prev = t
print(f"{'total':22s} {prev - t0:6.3f}")
