"""Issue 34 probe, kept as run: how much of explicit mode's stored ids (`kept_ids`, n x K)
a prefix trie of the training rows would hold. Rows are the fit's: frequency-ordered, sorted,
features below N (`rare_features`) kept. A trie node is a distinct prefix x^j of a row; it
adds the conjunctions whose largest feature is x_j (Σ_{i<d} C(j-1, i) of them, dense or
not). Printed: rows, widths, n x K, the rows' own conjunctions, distinct rows, trie nodes
and their conjunctions, and those among them that are not dense (the ones searched).

    python experiments/probes/pa_speed/prefix_share.py ud 3
"""
# ruff: noqa
import sys, math
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import numpy as np
from _pa_data import pa_dataset
from jkern.pa import frequency_order
from jkern.pa._rare import rare_features
from jkern.pa._table import dense_features

ds, d = sys.argv[1], int(sys.argv[2])
tr, te = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
o = frequency_order(tr.features); X, _ = o.apply(tr.features)
F = X.n_features
val = np.asarray(X.values); idx = np.sort(np.where(val != 0, np.asarray(X.indices), F), axis=1)
nd = dense_features(F, d)
N = rare_features(idx, idx < F, F, nd)
rows = np.where(idx < N, idx, F)
rows = np.sort(rows, axis=1)
w = (rows < F).sum(1)
W = int(w.max())
rows = rows[:, :W]
K = sum(math.comb(W, j) for j in range(d + 1))
n = len(rows)
own = int(sum(np.bincount(w, minlength=W + 1)[k] * sum(math.comb(k, j) for j in range(d + 1)) for k in range(W + 1)))
uniq = np.unique(rows, axis=0)
# trie nodes: distinct prefixes of each length j (1..W) among rows with >= j features
nodes = 0; conj = 0; searched = 0
new_at = [0] + [sum(math.comb(j - 1, i) for i in range(d)) for j in range(1, W + 1)]
for j in range(1, W + 1):
    pre = uniq[uniq[:, j - 1] < F][:, :j]
    p = np.unique(pre, axis=0)
    nodes += len(p); conj += len(p) * new_at[j]
    # not dense: the new feature (largest) is >= nd
    searched += int((p[:, -1] >= nd).sum()) * new_at[j]
print(f"{ds} d={d}: n={n} F={F} n_dense={nd} N={N} width mean {w.mean():.1f} max {W} K={K}")
print(f"  n*K = {n*K:,} ({n*K*4/2**20:.0f} MB int32); rows' own conjunctions {own:,} ({own*4/2**20:.0f} MB)")
print(f"  distinct rows {len(uniq):,}; trie nodes {nodes:,}; their conjunctions {conj:,} ({conj*4/2**20:.0f} MB), not dense {searched:,} ({searched*4/2**20:.0f} MB)")
# the rows' own searched conjunctions (largest feature in [n_dense, N)): what a ragged store
# of only the searched ids holds
a = (rows < N).sum(1); b = (rows < nd).sum(1)
own_searched = int(sum(sum(math.comb(int(x), j) - math.comb(int(y), j) for j in range(1, d + 1))
                       * c for (x, y), c in zip(*np.unique(np.stack([a, b], 1), axis=0, return_counts=True))))
print(f"  rows' own searched conjunctions {own_searched:,} ({own_searched*4/2**20:.0f} MB)")
