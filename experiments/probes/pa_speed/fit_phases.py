"""Issue 34 probe, kept as run: the CPU seconds of each part of an explicit-mode fit (C = 1,
10 epochs, file order), the second of two fits in one process (programs loaded), as `fit`
itself calls them: the table, the kept ids, the private counts, the rare pairs, the epochs,
the rare and private conjunctions' weights, the model. Run it from another checkout's root
(or with PYTHONPATH set to it) to compare; parts a checkout lacks are not printed.

    taskset -c 0 python experiments/probes/pa_speed/fit_phases.py ud 3
"""
# ruff: noqa
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
import jkern.pa._fit as F
T = {}
def wrap(name):
    f = getattr(F, name)
    def timed(*a, **k):
        c = time.process_time(); out = f(*a, **k)
        try: jax.block_until_ready(out)
        except Exception: pass
        T[name] = T.get(name, 0) + time.process_time() - c
        return out
    setattr(F, name, timed)
for name in ["common_part", "kept_ids", "private_counts", "worth_paging", "row_pages", "rare_part", "_run_conjunctions",
             "rare_conjunctions", "_model_weights"]:
    if hasattr(F, name): wrap(name)
ds, d = sys.argv[1], int(sys.argv[2])
tr, _ = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
X, _ = frequency_order(tr.features).apply(tr.features)
X = X.astype(jnp.float64)
for _ in range(2):
    T.clear(); c = time.process_time()
    sol = fit(X, tr.labels, degree=d, C=1.0, epochs=10, mode="explicit", key=None)
    jax.block_until_ready(sol.model)
    total = time.process_time() - c
print(f"{ds} d={d}: fit {total:.2f} CPU s; " + ", ".join(f"{k} {v:.2f}" for k, v in T.items())
      + f", rest {total - sum(T.values()):.2f}; updates {int(np.asarray(sol.stats['updates']).sum())}")
