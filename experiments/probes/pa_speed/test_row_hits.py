"""Issue 34 probe, kept as run: how many of a test row's conjunctions an explicit UD model holds
(one fit, C = 1, 10 epochs, degree 3), size by size, over every 50th test row, and how many of
its triples have a pair prefix (their two smallest features) that some triple of the model
has: what a lookup by prefix (pecco's trie) could skip.

    taskset -c 1 python experiments/probes/pa_speed/test_row_hits.py
"""
# ruff: noqa
import sys, itertools
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
data = str(Path(__file__).resolve().parents[4] / "shared" / "data")
tr = pa_dataset("ud", data, "/tmp/jkern-pa-poly", part="train")
te = pa_dataset("ud", data, "/tmp/jkern-pa-poly", part="test")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); Xt, _ = o.apply(te.features)
sol = fit(X, tr.labels, degree=3, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
keys = np.asarray(sol.model.keys); base = X.n_features + 1
print("model keys", len(keys))
idx = np.asarray(Xt.indices); val = np.asarray(Xt.values)
rows = [np.sort(idx[i][val[i] != 0]) for i in range(0, len(idx), 50)]
def key(U): return sum((int(f) + 1) * base ** i for i, f in enumerate(U))
def present(table, ks):
    ks = np.asarray(ks, np.int64); at = np.minimum(np.searchsorted(table, ks), len(table) - 1)
    return table[at] == ks
prefixes = np.unique(keys[keys >= base ** 2] % base ** 2)
total = {1: 0, 2: 0, 3: 0}; held = {1: 0, 2: 0, 3: 0}; live_prefix = 0
for r in rows:
    for j in (1, 2, 3):
        U = list(itertools.combinations(r.tolist(), j))
        if not U:
            continue
        total[j] += len(U); held[j] += int(present(keys, [key(u) for u in U]).sum())
        if j == 3:
            live_prefix += int(present(prefixes, [key(u[:2]) for u in U]).sum())
for j in (1, 2, 3):
    print(f"size {j}: {total[j]:,} in {len(rows):,} rows, {held[j] / total[j]:.3f} in the model")
print(f"triples with a prefix some model triple has: {live_prefix / total[3]:.3f} "
      f"({len(prefixes):,} such prefixes)")
