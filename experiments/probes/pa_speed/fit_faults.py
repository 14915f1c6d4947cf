"""Issue 34 probe, kept as run: user and system CPU seconds and minor page faults (first
touches of memory) of one explicit PA-I fit and of each of its parts (UD or conj-2 at degree
d, C = 1, 10 epochs, the bench worker's inputs), from getrusage around each part.

    taskset -c 1 python experiments/probes/pa_speed/fit_faults.py conj2 2
"""
# ruff: noqa
import resource, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
import jax; jax.config.update("jax_enable_x64", True); import jax.numpy as jnp
from jkern.pa import fit, frequency_order
import jkern.pa._fit as F
from _pa_data import pa_dataset
def ru():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, r.ru_minflt
T = {}
def wrap(name):
    f = getattr(F, name)
    def g(*a, **k):
        u0, s0, f0 = ru(); out = f(*a, **k)
        try: jax.block_until_ready(out)
        except Exception: pass
        u1, s1, f1 = ru()
        t = T.setdefault(name, [0, 0, 0]); t[0] += u1 - u0; t[1] += s1 - s0; t[2] += f1 - f0
        return out
    setattr(F, name, g)
for n in ["_sorted_rows", "common_part", "kept_ids", "private_counts", "worth_paging", "rare_part",
          "_run_conjunctions", "rare_conjunctions", "_model_weights", "release_freed_memory"]:
    if hasattr(F, n): wrap(n)
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels; del tr
u0, s0, f0 = ru()
sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, throw=True, key=None)
jax.block_until_ready(sol.model); np.asarray(sol.stats["updated"])
u1, s1, f1 = ru()
print(f"fit: user {u1 - u0:.3f} s, system {s1 - s0:.3f} s, minor faults {f1 - f0}")
for k, (u, s, fl) in T.items():
    print(f"  {k:22s} user {u:.3f} system {s:.3f} faults {fl}")
