"""Issue 34 probe, kept as run: where the explicit model's test margins go (the bench
worker's last step): one fit (UD or conj2, degree d, explicit mode, one core), then
`decision_function` on the test rows twice, the second under cProfile (the top entries by
own time printed).

    taskset -c 0 python experiments/probes/pa_speed/test_margins_parts.py ud 3
"""
# ruff: noqa
import sys, time, cProfile, pstats
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
ds, d = sys.argv[1], int(sys.argv[2])
tr, te = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); Xt, _ = o.apply(te.features)
X, Xt = X.astype(jnp.float64), Xt.astype(jnp.float64)
sol = fit(X, tr.labels, degree=d, C=1.0, epochs=10, mode="explicit", key=None)
for again in range(2):
    t = time.process_time()
    if again:
        pr = cProfile.Profile(); pr.enable()
    m = np.asarray(sol.model.decision_function(Xt))
    if again:
        pr.disable()
    print(f"test margins {time.process_time() - t:.2f} CPU s ({len(m)} rows)", flush=True)
pstats.Stats(pr).sort_stats("tottime").print_stats(10)
