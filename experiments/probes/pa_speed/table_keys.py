"""Issue 34 probe, kept as run: `distinct_keys` on the first 40,000 UD training rows, its
compiled enumeration (the default for more than one chunk) against NumPy's (forced by one
chunk covering every row): the same keys, and the seconds each took (the first configuration
includes loading or compiling the program).

    python experiments/probes/pa_speed/table_keys.py
"""
# ruff: noqa
import sys, numpy as np, jax, time
jax.config.update("jax_enable_x64", True)
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _pa_data import pa_dataset
from jkern.pa import frequency_order
import jkern.pa._explicit as E
from jkern.pa._table import dense_features
tr, te = pa_dataset("ud", str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
o = frequency_order(tr.features); X, _ = o.apply(tr.features)
X = X.rows(np.arange(40000))
F = X.n_features
for d, below, nd in [(3, 2263, 293), (2, 2895, 2895), (2, F, 0), (3, F, 0)]:
    t0=time.time(); a, ca = E.distinct_keys(X, d, F + 1, below, n_dense=nd, chunk=1 << 20); t1=time.time()
    # force the numpy path: one chunk covering all rows
    b, cb = E.distinct_keys(X, d, F + 1, below, n_dense=nd, chunk=1 << 40); t2=time.time()
    print(d, below, nd, len(a), len(b), np.array_equal(a, b), ca, cb, "%.2f vs %.2f s" % (t1-t0, t2-t1))
