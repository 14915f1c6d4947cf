"""Issue 34 probe, kept as run: how many of a test row's triples of common features are in an
explicit model (UD, d = 3, C = 1, 10 epochs), and how many a pair-level filter could skip
(their two rarer features form no pair among the model's keys), per row over the first
20,000 test rows; and the same count of triples present over the first 20,000 training rows.

    taskset -c 0 python experiments/probes/pa_speed/triple_filter.py ud
"""
# ruff: noqa
import itertools, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
ds = sys.argv[1]
tr, te = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); Xt, _ = o.apply(te.features)
sol = fit(X.astype(jnp.float64), tr.labels, degree=3, C=1.0, epochs=10, mode="explicit", key=None)
keys = np.asarray(sol.model.keys); F = sol.model.n_features; base = F + 1
def has(k):
    at = np.minimum(np.searchsorted(keys, k), len(keys) - 1)
    return keys[at] == k
def rows_of(S):
    idx, val = np.asarray(S.indices), np.asarray(S.values)
    return np.sort(np.where((val != 0) & (idx < F), idx, F), axis=1)[:20000].astype(np.int64)
for name, rows in (("test", rows_of(Xt)), ("train", rows_of(X))):
    tot = present = skippable = 0
    for p in itertools.combinations(range(rows.shape[1]), 3):
        f = rows[:, list(p)]
        ok = f[:, 2] < F
        k = (f[:, 0] + 1) + (f[:, 1] + 1) * base + (f[:, 2] + 1) * base ** 2
        tot += ok.sum(); present += (has(k) & ok).sum()
        skippable += (ok & ~has((f[:, 1] + 1) + (f[:, 2] + 1) * base)).sum()
    n = len(rows)
    print(f"{name} rows: triples {tot / n:.1f} a row, in the model {present / n:.1f}, "
          f"skippable by their rarer pair {skippable / n:.1f}; model keys {len(keys):,}")
