"""Issue 34 probe, kept as run: how many of a UD test row's triples pair pruning would skip
(d = 3 slicing model and test rows as classify.py keeps them in /tmp/pke; 2,000 rows).

    python experiments/probes/pa_speed/prune_pairs.py
"""
# ruff: noqa
import numpy as np, itertools
def isin(a, sorted_b):
    i = np.minimum(np.searchsorted(sorted_b, a), len(sorted_b)-1)
    return sorted_b[i] == a
s = np.load('/tmp/pke/sv_ud_d3.npz'); t = np.load('/tmp/pke/test_ud.npz')
F = int(s['n_features'])
present = s['values'] != 0
idx = np.where(present, s['indices'], -1)
counts = np.bincount(idx[present], minlength=F)
held = np.flatnonzero(counts); order = held[np.lexsort((held, -counts[held]))]
N = len(order); rank = np.full(F, N); rank[order] = np.arange(N)
def ranked(ind, val):
    r = np.where(val != 0, rank[np.where(val != 0, ind, 0)], N)
    return np.sort(r, axis=1)
S = ranked(s['indices'], s['values'])
def combos(R, j):
    out = []
    for c in itertools.combinations(range(R.shape[1]), j):
        cols = R[:, list(c)]
        ok = cols[:, -1] < N
        out.append(np.where(ok, sum(cols[:, i].astype(np.int64) * (N+1)**i for i in range(j)), -1))
    return np.stack(out, 1)
pairs = np.unique(combos(S, 2)); pairs = pairs[pairs >= 0]
trip = np.unique(combos(S, 3)); trip = trip[trip >= 0]
print("model pairs", len(pairs), "triples", len(trip), "N", N)
rng = np.random.default_rng(0); rows = rng.choice(len(t['labels']), 2000, replace=False)
T = ranked(t['indices'][rows], t['values'][rows])
tot = 0; pass1 = 0; pass3 = 0; found = 0; M = 4096
for c in itertools.combinations(range(T.shape[1]), 3):
    a, b, d = T[:, c[0]], T[:, c[1]], T[:, c[2]]
    ok = d < N
    tot += ok.sum()
    key = lambda x, y: x.astype(np.int64) + y.astype(np.int64) * (N+1)
    p01 = isin(key(a, b), pairs); p02 = isin(key(a, d), pairs); p12 = isin(key(b, d), pairs)
    pass1 += (ok & p01).sum(); pass3 += (ok & p01 & p02 & p12).sum()
    k3 = a.astype(np.int64) + b.astype(np.int64)*(N+1) + d.astype(np.int64)*(N+1)**2
    found += (ok & isin(k3, trip)).sum()
    # within M only
print(f"triples in rows (in-model features): {tot}, pair01 exists {pass1}, all pairs exist {pass3}, triple exists {found}")
print("per row:", tot/2000, pass3/2000, found/2000)
