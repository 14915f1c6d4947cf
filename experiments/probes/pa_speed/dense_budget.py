"""Issue 34 probe, kept as run: an explicit fit with the dense layouts capped at BUDGET ids
(`_table.dense_features`; the library uses 2^22), two fits in one process (CPU, system s,
peak RSS), the test margins saved to /tmp/dense_<data><d>_<budget>.npy to compare budgets.

    taskset -c 1 python experiments/probes/pa_speed/dense_budget.py conj2 2 1048576
"""
# ruff: noqa
import sys, time, resource
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
import jkern.pa._table as T
budget = int(sys.argv[3])
T.dense_features.__defaults__ = (budget,)
from jkern.pa import fit, frequency_order
ds, d = sys.argv[1], int(sys.argv[2])
train, test = pa_dataset(ds, "/work/shared/data", "/tmp/jkern-pa-poly")
o = frequency_order(train.features)
X, _ = o.apply(train.features); X = X.astype(jnp.float64)
Xt, _ = o.apply(test.features); Xt = Xt.astype(jnp.float64)
for i in range(2):
    r0 = resource.getrusage(resource.RUSAGE_SELF); c = time.process_time()
    sol = fit(X, train.labels, degree=d, C=1.0, epochs=10, mode="explicit", block_size=32, key=None)
    jax.block_until_ready(sol.model)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"budget {budget} fit {i}: cpu {time.process_time()-c:.2f} sys {r1.ru_stime-r0.ru_stime:.2f} peak {r1.ru_maxrss/1024:.0f}")
m = np.asarray(sol.model.decision_function(Xt)); np.save(f"/tmp/dense_{ds}{d}_{budget}.npy", m)
