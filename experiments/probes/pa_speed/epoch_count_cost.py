"""Issue 34 probe, kept as run: the explicit fit's epochs program (`_run_conjunctions`) CPU
seconds for 1, 2, 10 and 20 epochs (the second of two fits each, programs loaded) and the
updates of each epoch: what an epoch costs once almost no example updates.

    taskset -c 1 python experiments/probes/pa_speed/epoch_count_cost.py conj2 2
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
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
X, _ = frequency_order(tr.features).apply(tr.features)
f = F._run_conjunctions; T = [0.0]
def timed(*a, **k):
    c = time.process_time(); out = f(*a, **k); jax.block_until_ready(out)
    T[0] += time.process_time() - c
    return out
F._run_conjunctions = timed
for E in [1, 2, 10, 20]:
    for _ in range(2):
        T[0] = 0
        sol = fit(X, tr.labels, degree=d, C=1.0, epochs=E, mode="explicit", dtype=jnp.float64, key=None)
        jax.block_until_ready(sol.model)
    print(f"epochs {E}: {T[0]:.3f} CPU s; updates per epoch {np.asarray(sol.stats['updates']).tolist()}")
