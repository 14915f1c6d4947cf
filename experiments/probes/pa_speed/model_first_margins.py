"""Issue 34 probe, kept as run: an explicit model's margins on the test set (`ConjunctionModel.
decision_function`, `block` rows a step, default 4096) right after its fit (C = 1, 10
epochs), twice: user and system CPU seconds and minor page faults of each call (the first
builds the model's layout and loads the program), and the process's peak RSS.

    taskset -c 1 python experiments/probes/pa_speed/model_first_margins.py conj2 3
"""
# ruff: noqa
import resource, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
ds, d = sys.argv[1], int(sys.argv[2])
block = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
data = str(Path(__file__).resolve().parents[4] / "shared" / "data")
tr = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels
sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
jax.block_until_ready(sol.model)
te = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="test")
Xte, _ = o.apply(te.features); Xte = Xte.astype(jnp.float64)
def ru():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime, r.ru_stime, r.ru_minflt
out = []
for rep in range(2):
    a = ru(); np.asarray(sol.model.decision_function(Xte, block=block)); b = ru()
    out.append(f"call {rep}: user {b[0]-a[0]:.3f} sys {b[1]-a[1]:.3f} faults {b[2]-a[2]}")
print(f"{len(sol.model.keys):,} keys; " + " | ".join(out) + f"; peak "
      f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
