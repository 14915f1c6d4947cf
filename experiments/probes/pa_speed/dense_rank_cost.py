"""Issue 34 probe, kept as run: what weights for the occurring dense conjunctions only would
cost the epochs' margins (conj-2 or UD rows at d = 2, chunks of 4096 rows then blocks of 32, as
`dense_ids_cost.py`): the dense ids and the gathers from the whole dense weight array, against
the same ids ranked in a bitmap of the slots the training rows hold (a word and its rank read,
a popcount) and the gathers from the compact array. CPU ms per pass over the rows, the median
of five.

    taskset -c 1 python experiments/probes/pa_speed/dense_rank_cost.py conj2
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
from jkern.pa._slice import dense_seen
from jkern.pa._table import dense_features
import jkern.pa._fit as F
ds = sys.argv[1]
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
X, _ = frequency_order(tr.features).apply(tr.features)
idx, idx_j, _ = F._sorted_rows(X)
common = common_part(X, 2, X.n_features, below=dense_features(X.n_features, 2))
size = common.size
seen = dense_seen(common, idx_j)
n_live = int(seen.sum())
words = -(-len(seen) // 64)
bits = np.zeros(words * 64, bool); bits[:len(seen)] = seen
packed = np.packbits(bits.reshape(-1, 8)[:, ::-1], axis=1).reshape(-1)  # little-endian bit order per byte
bitmap = packed.view(np.uint64)
rank = np.concatenate([[0], np.cumsum(seen[: words * 64].reshape(-1, 64).sum(axis=1) if len(seen) >= words * 64
                       else np.pad(seen, (0, words * 64 - len(seen))).reshape(-1, 64).sum(axis=1))])[:-1].astype(np.int32)
bitmap_j, rank_j = jnp.asarray(bitmap), jnp.asarray(rank)
w_full = jnp.asarray(np.random.default_rng(0).integers(-5, 5, size + 1))
w_compact = jnp.asarray(np.random.default_rng(0).integers(-5, 5, n_live + 1))
def full_ids(r):
    return jnp.concatenate([jnp.where(d >= 0, d, size) for d in common.dense_ids_of(r)], axis=-1)
def ranked(r):
    ids = jnp.concatenate(common.dense_ids_of(r), axis=-1)
    ok = ids >= 0
    i = jnp.where(ok, ids, 0)
    word = bitmap_j[i >> 6]
    bit = (i & 63).astype(jnp.uint64)
    below = word & ((jnp.uint64(1) << bit) - jnp.uint64(1))
    there = ((word >> bit) & jnp.uint64(1)) == 1
    c = rank_j[i >> 6] + jax.lax.population_count(below).astype(jnp.int32)
    return jnp.where(ok & there, c, n_live)
# the ranks name the same conjunctions: compact id -> arithmetic id is the select
sel = np.flatnonzero(seen)
a, b = np.asarray(jax.jit(full_ids)(idx_j[:2000])), np.asarray(jax.jit(ranked)(idx_j[:2000]))
assert np.array_equal(np.where(b < n_live, sel[np.minimum(b, n_live - 1)], size), np.where(a < len(seen), a, size)), "rank mismatch"
def runner(ids_of, w, gather):
    @jax.jit
    def run(r):
        def body(c, chunk):
            ids = ids_of(chunk)
            if not gather:
                return c + jnp.sum(ids), None
            ids = ids.reshape(-1, 32, ids.shape[-1])
            return c + jax.lax.scan(lambda c2, i: (c2 + jnp.sum(w[i]), None), 0, ids)[0], None
        return jax.lax.scan(body, 0, r)[0]
    return run
rows = idx_j[: (len(idx) // 4096) * 4096].reshape(-1, 4096, idx.shape[1])
def ms(f, a):
    f(a).block_until_ready(); t = []
    for _ in range(5):
        c = time.process_time(); f(a).block_until_ready(); t.append(time.process_time() - c)
    return 1000 * float(np.median(t))
print(f"{ds} d=2: {len(seen):,} dense slots, {n_live:,} occur ({n_live * 8 / 2**20:.1f} MB of weights against {len(seen) * 8 / 2**20:.1f}); bitmap {bitmap.nbytes / 2**20:.2f} MB, ranks {rank.nbytes / 2**20:.2f} MB")
print(f"whole array: ids {ms(runner(full_ids, w_full, False), rows):6.1f} ms, ids + gathers {ms(runner(full_ids, w_full, True), rows):6.1f} ms")
print(f"ranked:      ids {ms(runner(ranked, w_compact, False), rows):6.1f} ms, ids + gathers {ms(runner(ranked, w_compact, True), rows):6.1f} ms")
