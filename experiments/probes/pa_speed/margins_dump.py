"""Issue 34 probe, kept as run: one explicit-mode fit (C = 1, 10 epochs, file order) and its
test margins saved as .npy, to compare two checkouts bit for bit; prints the model's keys.

    python experiments/probes/pa_speed/margins_dump.py ud 3 /tmp/m_new.npy
    (in another checkout, PYTHONPATH=that checkout, the same with /tmp/m_old.npy)
"""
# ruff: noqa
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
ds, d, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tr, te = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); Xt, _ = o.apply(te.features)
X, Xt = X.astype(jnp.float64), Xt.astype(jnp.float64)
sol = fit(X, tr.labels, degree=d, C=1.0, epochs=10, mode="explicit", key=None)
np.save(out, np.asarray(sol.model.decision_function(Xt)))
print(len(sol.model.keys))
