"""Issue 34 probe, kept as run: a synthetic check of the epochs' margin gather, CPU seconds
for 2,000 blocks of 32 rows on one core: the padded [32, 1,351] ids of conj-2 d = 3 against
about 540 pages of 16 ids (rows of 10–21 pages, the block's pages found by a scatter and a
running sum, page sums added per row by a segment sum), weights int64 over 3M slots.

    taskset -c 1 python experiments/probes/pa_speed/page_gather.py
"""
# ruff: noqa
import time, jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)
D, B, K, nblk, PG, P = 3_000_000, 32, 1351, 2000, 16, 1080
w = jnp.asarray(rng.integers(0, 1000, D + 1))
ids2 = jnp.asarray(rng.integers(0, D, (nblk, B, K)).astype(np.int32))
rowpages = rng.integers(10, 22, (nblk, B)) * 2  # pages of 16: twice as many as of 32
cum = np.cumsum(rowpages, 1)
pages = jnp.asarray(rng.integers(0, D, (int(rowpages.sum()), PG)).astype(np.int32))
pstart = jnp.asarray(np.concatenate([[0], np.cumsum(rowpages.ravel())])[:-1].reshape(nblk, B).astype(np.int32))
cumj, rpj = jnp.asarray(cum.astype(np.int32)), jnp.asarray(rowpages.astype(np.int32))

@jax.jit
def padded(w, ids2):
    def body(acc, t):
        return acc + jnp.sum(w[ids2[t]], axis=1), None
    return jax.lax.scan(body, jnp.zeros(B, w.dtype), jnp.arange(nblk))[0]

@jax.jit
def paged(w, pages, cumj, rpj, pstart):
    def body(acc, t):
        c = cumj[t]; j = jnp.arange(P)
        r = jnp.minimum(jnp.zeros(P + 1, jnp.int32).at[c].add(1, mode="drop")[:P].cumsum(), B - 1)
        live = j < c[-1]
        e = pages[jnp.where(live, pstart[t][r] + j - (c[r] - rpj[t][r]), 0)]
        s = jnp.where(live, jnp.sum(w[e], axis=1), 0)
        return acc + jax.ops.segment_sum(s, r, B, indices_are_sorted=True), None
    return jax.lax.scan(body, jnp.zeros(B, w.dtype), jnp.arange(nblk))[0]

for name, f, a in (("padded", padded, (w, ids2)), ("paged", paged, (w, pages, cumj, rpj, pstart))):
    f(*a).block_until_ready()
    ts = []
    for _ in range(3):
        t = time.process_time(); f(*a).block_until_ready(); ts.append(time.process_time() - t)
    print(name, round(min(ts), 3), "CPU s")
