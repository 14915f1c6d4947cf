"""Issue 34 probe, kept as run: UD d = 3 classification (`table_margins` of the expanded
slicing model that classify.py keeps in /tmp/pke) with parts left out, µs per test row on one
core: the whole; without the per-row sums (segment_sum); without the table search; without
the keys' positions and features; without the dense part. Also a variant that builds each
key from its prefix's key (slower, not used).

    taskset -c 1 python experiments/probes/pa_speed/classify_ablation.py 3
"""
# ruff: noqa
import sys, time, math
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from jkern._validate import to_device
from jkern.pa._pke import expand_support_vectors
from jkern.pa import _table as T
from jkern.pa._table import searched_bound, conjunction_coefficients, colex_combinations, binomials, colex_sums, combinations
d = int(sys.argv[1])
t = np.load("/tmp/pke/test_ud.npz"); s = np.load(f"/tmp/pke/sv_ud_d{d}.npz")
em = expand_support_vectors(s["indices"], s["values"], s["alpha"], d, int(s["n_features"]))
rank = np.asarray(em.rank); F = em.n_model
idx = np.asarray(t["indices"]); val = np.asarray(t["values"])
B = 4096; m = (len(idx) // B) * B; idx = idx[:m]; val = val[:m]
table = em.table
W = table.width
ids = idx.reshape(-1, B, idx.shape[1]); pres = (val != 0).reshape(ids.shape)
bound = searched_bound(rank, table, len(rank), ids, pres)
args = (to_device(rank), em.weights, table, len(rank), to_device(ids, jnp.int32), to_device(pres), bound)

def variant(rank, weights, table, n_features, idx, present, searched):
    N, nd, W, d = table.n_common, table.n_dense, table.width, table.degree
    c = conjunction_coefficients(d)
    binom = jnp.asarray(binomials(W, d))
    base = N + 1
    kdt = table.keys.dtype
    combos = combinations(W, d)
    largest = [jnp.asarray(cb[:, -1]) for cb in combos]
    sub = [jnp.asarray(np.arange(len(cb)) - np.asarray([math.comb(int(p), j) for p in cb[:, -1]]), jnp.int32) for j, cb in enumerate(combos, 1)]
    empty = weights[0]
    def one(args):
        i, p = args
        known = p & (i >= 0) & (i < n_features)
        r = jnp.where(known, rank[jnp.where(known, i, 0)], N)
        r = jnp.sort(r, axis=1)[:, :W]
        Bn = r.shape[0]
        a = jnp.sum(r < N, axis=1)
        b = jnp.minimum(jnp.sum(r < nd, axis=1), a)
        total = jnp.full((Bn,), c[0], weights.dtype) * empty
        for j, at in enumerate(table.dense_ids_of(r)[1:], 1):
            ok = at >= 0
            total = total + c[j] * jnp.sum(jnp.where(ok, weights[jnp.where(ok, at, 0)], 0), axis=1)
        digits = [(r.astype(kdt) + 1) * kdt.type(base ** i) for i in range(d)]
        prev = colex_sums(digits[:d - 1], W)
        for j in range(1, d + 1):
            lo = binom[b, j]
            count = binom[a, j] - lo
            ends = jnp.cumsum(count)
            S = searched[j - 1]
            q = jnp.arange(S, dtype=ends.dtype)
            ended = jnp.zeros((S + 1,), jnp.int32).at[jnp.minimum(ends, S)].add(1)
            row = jnp.minimum(jnp.cumsum(ended[:S]), Bn - 1)
            live = q < ends[-1]
            rank_in = jnp.where(live, lo[row] + q - (ends[row] - count[row]), 0)
            pl = largest[j - 1][rank_in]
            key = digits[j - 1].reshape(-1)[row * W + pl]
            if j > 1:
                width_prev = math.comb(W, j - 1)
                key = key + prev[j - 2].reshape(-1)[row * width_prev + sub[j - 1][rank_in]]
            found = table.search(jnp.where(live, key, 0), live)
            w = weights[jnp.minimum(table.offset + found, table.size)]
            total = total + jax.ops.segment_sum(jnp.where(live, c[j] * w, 0), row, num_segments=Bn)
        return total
    return jax.lax.map(one, (idx, present))


def make(mode):
    def variant2(rank, weights, table, n_features, idx, present, searched):
        N, nd, W, d = table.n_common, table.n_dense, table.width, table.degree
        c = conjunction_coefficients(d)
        colex = jnp.asarray(colex_combinations(W, d))
        binom = jnp.asarray(binomials(W, d))
        base = N + 1
        kdt = table.keys.dtype
        scale = jnp.asarray([base ** i for i in range(d)], kdt)
        empty = weights[0]
        def one(args):
            i, p = args
            known = p & (i >= 0) & (i < n_features)
            r = jnp.where(known, rank[jnp.where(known, i, 0)], N)
            r = jnp.sort(r, axis=1)[:, :W]
            Bn = r.shape[0]
            a = jnp.sum(r < N, axis=1)
            b = jnp.minimum(jnp.sum(r < nd, axis=1), a)
            total = jnp.full((Bn,), c[0], weights.dtype) * empty
            if "nodense" not in mode:
                for j, at in enumerate(table.dense_ids_of(r)[1:], 1):
                    ok = at >= 0
                    total = total + c[j] * jnp.sum(jnp.where(ok, weights[jnp.where(ok, at, 0)], 0), axis=1)
            for j in range(1, d + 1):
                lo = binom[b, j]
                count = binom[a, j] - lo
                ends = jnp.cumsum(count)
                S = searched[j - 1]
                q = jnp.arange(S, dtype=ends.dtype)
                ended = jnp.zeros((S + 1,), jnp.int32).at[jnp.minimum(ends, S)].add(1)
                row = jnp.minimum(jnp.cumsum(ended[:S]), Bn - 1)
                live = q < ends[-1]
                rank_in = jnp.where(live, lo[row] + q - (ends[row] - count[row]), 0)
                if "norank" in mode:
                    key = rank_in.astype(kdt) * 7919 + row
                else:
                    pos = colex[j - 1, rank_in][:, :j]
                    f = r[row[:, None], pos].astype(kdt)
                    key = jnp.sum((f + 1) * scale[None, :j], axis=1, dtype=kdt)
                if "nosearch" in mode:
                    w = (key & 1).astype(weights.dtype)
                else:
                    found = table.search(jnp.where(live, key, 0), live)
                    w = weights[jnp.minimum(table.offset + found, table.size)]
                if "noseg" in mode:
                    total = total + jnp.sum(jnp.where(live, c[j] * w, 0))
                else:
                    total = total + jax.ops.segment_sum(jnp.where(live, c[j] * w, 0), row, num_segments=Bn)
            return total
        return jax.lax.map(one, (idx, present))
    return variant2
def timeit(name, fn):
    g = jax.jit(fn, static_argnums=(3, 6))
    out = np.asarray(g(*args)); ts = []
    for _ in range(3):
        t0 = time.process_time(); np.asarray(g(*args)); ts.append(time.process_time() - t0)
    print(f"{name:10s} {1e6 * sorted(ts)[1] / m:7.2f} us/row", flush=True)
    return out
a0 = timeit("current", T.table_margins._plain)
a1 = timeit("prefix", variant)
print("prefix same margins", np.array_equal(a0, a1))
for mode in ["full", "noseg", "nosearch", "nosearch-noseg", "norank-nosearch-noseg", "nodense-norank-nosearch-noseg"]:
    timeit(mode, make(mode))
