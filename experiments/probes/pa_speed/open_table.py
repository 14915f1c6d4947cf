"""Issue 34 probe, kept as run: an open-addressed table whose slots hold a conjunction's key
and its weight side by side, against the bucketed sorted table, for the expanded model's
classification of UD's test rows (µs per row, blocks of 4,096 rows, keys from `keys_of`).

The open table: slots in linear-probing order by home slot (a hash of the key), so every key
lies within `window` slots of its home; a lookup reads its home's window (one or two cache
lines) and sums the weight whose key matches.

    python experiments/probes/pa_speed/open_table.py 3 [--models /tmp/pke] [--window 8] [--load 0.5]
"""
# ruff: noqa
import argparse, time
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from jkern.pa._pke import expand_support_vectors
from jkern.pa._table import _bucket_of

ap = argparse.ArgumentParser()
ap.add_argument("degree", type=int)
ap.add_argument("--models", default="/tmp/pke")
ap.add_argument("--window", type=int, default=8)
ap.add_argument("--load", type=float, default=0.5)
args = ap.parse_args()
d = args.degree
t = np.load(f"{args.models}/test_ud.npz")
s = np.load(f"{args.models}/sv_ud_d{d}.npz")
# every conjunction in the table (no dense ids), so both structures hold the same keys
em = expand_support_vectors(s["indices"], s["values"], s["alpha"], d, int(s["n_features"]),
                            dense_ids=0)
T = em.table.with_width(16)
keys = np.asarray(T.keys, np.int64)
w = np.asarray(em.weights)[:len(keys)]
D = len(keys)
bits = int(np.ceil(np.log2(D / args.load)))
cap = 1 << bits
home = _bucket_of(keys, bits).astype(np.int64)
order = np.argsort(home, kind="stable")
hs = home[order]
i = np.arange(D)
pos = i + np.maximum.accumulate(hs - i)  # linear probing, inserted in home order
disp = pos - hs
P = args.window
print(f"{D:,} keys, {cap:,} slots (load {D / cap:.2f}), displacement max {disp.max()}, "
      f"mean {disp.mean():.2f}; window {P}")
if disp.max() >= P:
    print("some key lies past the window: raise --window or lower --load")
size = int(pos.max()) + P + 1
slot_key = np.full(size, -1, np.int64)
slot_w = np.zeros(size, np.float64)
slot_key[pos] = keys[order]
slot_w[pos] = w[order]
slots = jnp.asarray(np.stack([slot_key, slot_w.view(np.int64)], axis=1))
print(f"open table {slots.nbytes / 2**20:.0f} MB; sorted keys + buckets + weights "
      f"{(T.keys.nbytes * 2 + T.hashed_pos.nbytes + T.bucket_start.nbytes + w.nbytes) / 2**20:.0f} MB")

B = 4096
n = (len(t["indices"]) // B) * B
idx = jnp.asarray(t["indices"][:n].reshape(-1, B, t["indices"].shape[1]), jnp.int32)
N = T.n_common
r = jax.jit(lambda i: jnp.pad(jnp.sort(em.rank[i], axis=-1), ((0, 0), (0, 0), (0, max(0, 16 - i.shape[-1]))), constant_values=N))(idx)
kk, ok, _ = jax.jit(lambda r: jax.lax.map(lambda x: T.keys_of(x), r))(r)
kk = jnp.where(ok, kk, -2)  # keys of out-of-model features: matched by no slot
wj = jnp.asarray(np.append(w, 0.0))


def sorted_sum(k):
    def one(x):
        p = T.search(x, x >= 0)
        return jnp.sum(wj[p], axis=1)
    return jax.lax.map(one, k)


def open_sum(k):
    def one(x):
        x = x.astype(jnp.int64)
        h = _bucket_of(x, bits).astype(jnp.int32)
        # one gather of P × 2 contiguous words per key (a slice window, not P × 2 indices)
        win = jax.vmap(lambda s: jax.lax.dynamic_slice(slots, (s, jnp.int32(0)), (P, 2)))(
            h.reshape(-1)).reshape(h.shape + (P, 2))
        hit = win[..., 0] == x[..., None]
        wt = jax.lax.bitcast_convert_type(win[..., 1], jnp.float64)
        return jnp.sum(jnp.where(hit, wt, 0.0), axis=(1, 2))
    return jax.lax.map(one, k)


def timeit(name, f, *a):
    f = jax.jit(f)
    out = jax.block_until_ready(f(*a))
    ts = []
    for _ in range(3):
        t0 = time.perf_counter(); jax.block_until_ready(f(*a)); ts.append(time.perf_counter() - t0)
    print(f"{name:14s} {1e6 * sorted(ts)[1] / n:7.2f} us/row", flush=True)
    return np.asarray(out)


a = timeit("sorted table", sorted_sum, kk)
b = timeit("open table", open_sum, kk)
print("same sums:", np.array_equal(a, b), "max diff", float(np.abs(a - b).max()))
