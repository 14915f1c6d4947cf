"""Issue 34 probe, kept as run: what an epoch of the explicit fit spends on the dense
conjunction ids (`CommonPart.dense_ids_of`, computed at every visit) against the weight
gathers they feed, on conj-2's training rows at d = 2 (N = the dense features), chunks of
4096 rows then blocks of 32, as the epochs run them; CPU ms per pass over the rows, the median
of five. Variants: "current" (colex sums by static slices, rows × positions), "[K,B]" (the
same sums with the rows on the minor axis), "take" (pair ids as C(f_j, 2) + f_i over all
(j, i), then the C(w, 2) colex positions taken).

    taskset -c 1 python experiments/probes/pa_speed/dense_ids_cost.py
"""
# ruff: noqa
import sys, time, math
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import frequency_order
from jkern.pa._split import common_part
from jkern.pa._table import dense_features, combinations, _comb, _dense_offset
import jkern.pa._fit as F
tr = pa_dataset("conj2", str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
X, _ = frequency_order(tr.features).apply(tr.features)
idx, idx_j, _ = F._sorted_rows(X)
common = common_part(X, 2, X.n_features, below=dense_features(X.n_features, 2))
nd, width, size = common.n_dense, common.width, common.size
w = jnp.asarray(np.random.default_rng(0).integers(-5, 5, size + 1))
rows = idx_j[:49152]

def current(r):
    return jnp.concatenate([jnp.where(d >= 0, d, size) for d in common.dense_ids_of(r)], axis=-1)

flat2 = jnp.asarray([j * width + i for i, j in combinations(width, 2)[1]], jnp.int32)
def take(r):
    f = r[..., :width]; ok = f < nd; small = jnp.minimum(f, nd)
    pair = ((small * (small - 1)) >> 1)[..., :, None] + small[..., None, :] + (1 + nd)
    pair = jnp.where(ok[..., :, None], pair, size).reshape(f.shape[:-1] + (-1,))
    return jnp.concatenate([jnp.zeros(f.shape[:-1] + (1,), jnp.int32), jnp.where(ok, 1 + small, size),
                            jnp.take(pair, flat2, axis=-1)], axis=-1)

def colex_T(terms):
    out = []
    for j, term in enumerate(terms, 1):
        out.append(term[:width] if j == 1 else jnp.concatenate(
            [out[-1][:math.comb(p, j - 1)] + term[p:p + 1] for p in range(width) if math.comb(p, j - 1)], axis=0))
    return out
def kb(rT):  # rows [k, B] -> ids [K, B]
    f = rT[:width]; ok = f < nd; small = jnp.minimum(f, nd)
    out = [jnp.zeros((1,) + f.shape[1:], jnp.int32)]
    for j, at in enumerate(colex_T([_comb(small, i + 1) for i in range(2)]), 1):
        okj = jnp.concatenate([jnp.broadcast_to(ok[p:p + 1], (math.comb(p, j - 1),) + ok.shape[1:])
                               for p in range(width) if math.comb(p, j - 1)], axis=0)
        out.append(jnp.where(okj, _dense_offset(nd, j) + at, size).astype(jnp.int32))
    return jnp.concatenate(out, axis=0)

def runner(ids_of, gather, transposed=False):
    @jax.jit
    def run(r):
        def body(c, chunk):
            ids = ids_of(chunk)
            if not gather:
                return c + jnp.sum(ids), None
            if transposed:
                ids = ids.reshape(ids.shape[0], -1, 32)
                return c + jax.lax.scan(lambda c2, t: (c2 + jnp.sum(w[ids[:, t, :]]), None), 0,
                                        jnp.arange(ids.shape[1]))[0], None
            ids = ids.reshape(-1, 32, ids.shape[-1])
            return c + jax.lax.scan(lambda c2, i: (c2 + jnp.sum(w[i]), None), 0, ids)[0], None
        return jax.lax.scan(body, 0, r)[0]
    return run

chunks = rows.reshape(-1, 4096, rows.shape[-1])
chunks_T = jnp.asarray(np.asarray(chunks).transpose(0, 2, 1))
kept = jnp.concatenate([current(c) for c in chunks]).reshape(chunks.shape[0], 4096, -1)
assert bool(jnp.all(jax.jit(take)(rows) == jax.jit(current)(rows)))
def ms(f, a):
    f(a).block_until_ready(); t = []
    for _ in range(5):
        c = time.process_time(); f(a).block_until_ready(); t.append(time.process_time() - c)
    return 1000 * float(np.median(t))
print(f"n_dense {nd}, width {width}, K {common.n_ids}, rows {rows.shape[0]}")
for name, f, a, T in [("current", current, chunks, False), ("take", take, chunks, False), ("[K,B]", kb, chunks_T, True)]:
    print(f"{name:8s} ids only {ms(runner(f, False, T), a):6.1f} ms   ids + gathers {ms(runner(f, True, T), a):6.1f} ms")
print(f"ids read, not computed: gathers {ms(runner(lambda c: c, True), kept):6.1f} ms")
