"""Issue 34 probe, kept as run: explicit-mode fits (C = 1, 10 epochs) with the dense budget
as is (DENSE_IDS, 2^22 slots: N = 2,895 at d = 2) or, with BUDGET=k, k slots (2^24: every
one of conj-2's 5,000 features dense, no rare part); CPU seconds of three fits in one
process, N, the updates, a checksum of the test margins, and the process's peak RSS so far.

    taskset -c 1 python experiments/probes/pa_speed/dense_budget_ab.py conj2 2
    BUDGET=16777216 taskset -c 1 python experiments/probes/pa_speed/dense_budget_ab.py conj2 2
"""
# ruff: noqa
import os, resource, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
import jkern.pa._fit as FF, jkern.pa._split as SP, jkern.pa._table as T
B = int(os.environ.get("BUDGET") or 0)
if B:
    df = T.dense_features
    FF.dense_features = lambda n, d, budget=B: df(n, d, B)
    SP.dense_features = lambda n, d, budget=B: df(n, d, B)
ds, d = sys.argv[1], int(sys.argv[2])
data = str(Path(__file__).resolve().parents[4] / "shared" / "data")
tr = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels
te = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="test")
Xte, _ = o.apply(te.features); Xte = Xte.astype(jnp.float64)
for rep in range(3):
    c0 = time.process_time()
    sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
    jax.block_until_ready(sol.model)
    t = time.process_time() - c0
    m = np.asarray(sol.model.decision_function(Xte))
    print(f"budget {B or 'default'} fit {rep}: {t:.3f} CPU s, N {sol.stats['n_common']}, "
          f"updates {int(np.asarray(sol.stats['updates']).sum())}, margins checksum "
          f"{int(m.view(np.uint64).sum(dtype=np.uint64))}, peak "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
