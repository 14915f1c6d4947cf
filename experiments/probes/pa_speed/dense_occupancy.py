"""Issue 34 probe, kept as run: how many of an explicit fit's dense weights (the arithmetic
addresses of the conjunctions of the most frequent features) hold a conjunction that occurs in
the training rows, and how many are not 0 at the fit's end, by size (UD or conj-2 at degree d,
C = 1, 10 epochs): what weights only for occurring conjunctions would save.

    taskset -c 1 python experiments/probes/pa_speed/dense_occupancy.py ud 3
"""
# ruff: noqa
import sys
from math import comb
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
from jkern.pa._slice import dense_seen
import jkern.pa._fit as F
got = {}
orig = F._model_weights
def grab(common, seen, fit_w, rare=None):
    got["common"] = common
    got["live"] = np.asarray(fit_w[0])[:common.offset] != 0
    return orig(common, seen, fit_w, rare)
F._model_weights = grab
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
X, _ = frequency_order(tr.features).apply(tr.features)
fit(X, tr.labels, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
common = got["common"]
idx, idx_j, _ = F._sorted_rows(X)
seen = dense_seen(common, idx_j)
N = common.n_dense
bounds = np.cumsum([0] + [comb(N, j) for j in range(d + 1)])
print(f"{ds} d={d}: {N} dense features, {common.offset:,} dense weights of {common.size:,}")
for j in range(d + 1):
    lo, hi = bounds[j], bounds[j + 1]
    print(f"  size {j}: {hi - lo:,} slots, {int(seen[lo:hi].sum()):,} occur in the rows, {int(got['live'][lo:hi].sum()):,} not 0 at the end")
