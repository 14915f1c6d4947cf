"""Issue 34 probe, kept as run: the cost of a chunk of visits' conjunction ids on UD (the
fit's rows, frequency-ordered, N from `rare_features`), ns per row on one core: read from a
stored `[n, K]` array, `CommonPart.ids_from` (dense ids computed, searched ones read from
`kept_ids`' `KeptIds`), the dense ids alone (`dense_ids_of`, as `ids_from` computes them, and
a second colex build written here) and the whole search (`CommonPart.ids`).

    taskset -c 1 python experiments/probes/pa_speed/ids.py 3
"""
# ruff: noqa
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import frequency_order
from jkern.pa._split import common_part
from jkern.pa._rare import rare_features
from jkern.pa._table import dense_features
from jkern.pa._slice import kept_ids
d = int(sys.argv[1])
tr, te = pa_dataset("ud", str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
X, _ = frequency_order(tr.features).apply(tr.features)
F = X.n_features; val = np.asarray(X.values)
idx = np.sort(np.where(val != 0, np.asarray(X.indices), F), axis=1)
N = rare_features(idx, idx < F, F, dense_features(F, d))
common = common_part(X, d, F, below=N)
idx_j = jnp.asarray(idx, jnp.int32)
kept = kept_ids(common, idx_j, 10)
n = len(idx); C = 4096
pos = jnp.asarray(np.random.default_rng(0).permutation(n)[: (n // C) * C].reshape(-1, C), jnp.int32)
full = jax.jit(lambda c, i: jax.lax.map(c.ids, i.reshape(-1, C, i.shape[1])).reshape(-1, c.n_ids))(common, jnp.pad(idx_j, ((0, -n % C), (0, 0)), mode="edge"))[:n]
def run(name, f, *a):
    g = jax.jit(f); jax.block_until_ready(g(*a)); ts = []
    for _ in range(3):
        t = time.process_time(); jax.block_until_ready(g(*a)); ts.append(time.process_time() - t)
    print(f"{name:12s} {1e9*min(ts)/pos.size:.1f} ns/row", flush=True)
run("stored", lambda ids, p: jax.lax.map(lambda q: ids[q].sum(1), p), full, pos)
run("ids_from", lambda c, k, p: jax.lax.map(lambda q: c.ids_from(idx_j[q], k, q).sum(1), p), common, kept, pos)
run("dense only", lambda c, p: jax.lax.map(lambda q: jnp.concatenate(c.dense_ids_of(idx_j[q]), axis=-1).sum(1), p), common, pos)
run("ids search", lambda c, p: jax.lax.map(lambda q: c.ids(idx_j[q]).sum(1), p), common, pos)
from jkern.pa._table import _comb, _dense_offset
def colex_dense(c, f):
    f = f[..., :c.width]; W = c.width; nd = c.n_dense
    ok = f < nd; small = jnp.minimum(f, nd)
    T = [_comb(small, i + 1) for i in range(c.degree)]
    okf = ok
    out = [jnp.zeros(f.shape[:-1] + (1,), jnp.int32)]
    prev = None  # [B, C(p, j-1)] ids-sum of the (j-1)-combos within first p positions (colex)
    level = [None] * (c.degree + 1)
    # level j: list over p (largest position) of [B, C(p, j-1)] partial sums
    singles = T[0]  # size-1: id = f
    sizes = []
    lower = None  # colex array of size j-1 combos over all W positions: [B, C(W, j-1)]
    for j in range(1, c.degree + 1):
        parts = []
        for p in range(W):
            if j == 1:
                parts.append(T[0][..., p:p + 1])
            else:
                m = __import__("math").comb(p, j - 1)
                if m == 0:
                    continue
                parts.append(lower[..., :m] + T[j - 1][..., p:p + 1])
        cur = jnp.concatenate(parts, axis=-1)
        lower = cur
        # ok: largest position's feature dense
        oks = jnp.concatenate([jnp.broadcast_to(okf[..., p:p + 1], f.shape[:-1] + (__import__("math").comb(p, j - 1),)) for p in range(W) if __import__("math").comb(p, j - 1)], axis=-1)
        out.append(jnp.where(oks, _dense_offset(nd, j) + cur, -1))
    return jnp.concatenate(out, axis=-1)
run("colex dense", lambda c, p: jax.lax.map(lambda q: colex_dense(c, idx_j[q]).sum(1), p), common, pos)
