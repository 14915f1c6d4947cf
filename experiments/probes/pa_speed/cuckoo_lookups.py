"""Issue 34 probe, kept as run: ns per key of hashed lookups in XLA on the CPU (2^20 random
present keys of a 3.4M-key table, one core): a plain random gather, the open table
(`CommonPart.opened`: a window of slots, one row gather) and its element-wise and unrolled
forms, and two-choice cuckoo tables (random stand-in slots: the cost does not depend on the
placement) with the position or the weight in the slot, buckets of two, interleaved keys and
weights, and four independent gathers.

    taskset -c 1 python experiments/probes/pa_speed/cuckoo_lookups.py
"""
# ruff: noqa
import time, numpy as np, jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
from jkern.pa._table import CommonPart, _bucket_of
rng = np.random.default_rng(0)
D = 3_400_000
keys = np.unique(rng.integers(0, 2**40, D * 11 // 10))[:D]
T = CommonPart(jnp.asarray(keys), 2**13, 15, 3).opened()
W = T.window; bits = T.slot_bits
print("window", W, "slots", T.slots.shape)
w = jnp.asarray(rng.random(D + 1))
q = jnp.asarray(keys[rng.integers(0, D, 1 << 20)])
sk = T.slots[:, 0]; sp = T.slots[:, 1].astype(jnp.int32)
def bench(name, f, *a):
    g = jax.jit(f); jax.block_until_ready(g(*a)); ts = []
    for _ in range(7):
        t = time.perf_counter(); jax.block_until_ready(g(*a)); ts.append(time.perf_counter() - t)
    print(f"{name:28s} {1e9 * min(ts) / q.size:6.1f} ns/key")
bench("random gather", lambda w, q: w[(q % D).astype(jnp.int32)].sum(), w, q)
bench("hash only", lambda q: _bucket_of(q, bits).sum(), q)
bench("hash+1 slot key", lambda sk, q: sk[_bucket_of(q, bits)].sum(), sk, q)
bench("locate", lambda T, q: T.locate(q)[0].sum(), T, q)
bench("locate+weight", lambda T, w, q: w[T.locate(q)[0]].sum(), T, w, q)
def loc2(sk, sp, q):
    h = _bucket_of(q, bits).astype(jnp.int32)
    at = h[:, None] + jnp.arange(W, dtype=jnp.int32)
    hit = sk[at] == q[:, None]
    i = jnp.argmax(hit, axis=1)
    return sp[h + i]
bench("elementwise window", lambda sk, sp, q: loc2(sk, sp, q).sum(), sk, sp, q)
bench("elementwise+weight", lambda sk, sp, w, q: w[loc2(sk, sp, q)].sum(), sk, sp, w, q)
def loc3(sk, sp, q):
    # scan the window one slot at a time: stop early is impossible, but a fori of W where-updates
    h = _bucket_of(q, bits).astype(jnp.int32)
    pos = jnp.full(q.shape, D, jnp.int32)
    for i in range(W):
        pos = jnp.where(sk[h + i] == q, sp[h + i], pos)
    return pos
bench("unrolled window+weight", lambda sk, sp, w, q: w[loc3(sk, sp, q)].sum(), sk, sp, w, q)
# slot holds weight directly (key, weight as two arrays)
sw = jnp.where(sp >= 0, w[jnp.clip(sp, 0, D)], 0)
def loc4(sk, sw, q):
    h = _bucket_of(q, bits).astype(jnp.int32)
    at = h[:, None] + jnp.arange(W, dtype=jnp.int32)
    return jnp.sum(jnp.where(sk[at] == q[:, None], sw[at], 0), axis=1)
bench("elementwise slot weight", lambda sk, sw, q: loc4(sk, sw, q).sum(), sk, sw, q)
S = 1 << 23
def h2f(q):
    return _bucket_of(q ^ jnp.int64(0x5851F42D4C957F2D), 23)
def cuckoo(sk, sp, q):
    a = _bucket_of(q, 23); b = h2f(q)
    i = jnp.where(sk[a] == q, a, jnp.where(sk[b] == q, b, S))
    return sp[i]
sk2 = jnp.asarray(rng.integers(0, 2**40, S + 1)); sp2 = jnp.asarray(rng.integers(0, D, S + 1).astype(np.int32))
bench("cuckoo pos", lambda sk, sp, q: cuckoo(sk, sp, q).sum(), sk2, sp2, q)
bench("cuckoo+weight", lambda sk, sp, w, q: w[cuckoo(sk, sp, q)].sum(), sk2, sp2, w, q)
sw2 = jnp.asarray(rng.random(S + 1))
bench("cuckoo slot weight", lambda sk, sw, q: cuckoo(sk, sw, q).sum(), sk2, sw2, q)
S2 = 1 << 22
ck2 = jnp.asarray(rng.integers(0, 2**40, (S2 + 1, 2))); cw2 = jnp.asarray(rng.random((S2 + 1, 2)))
def cuckoo22(ck, cw, q):
    a = _bucket_of(q, 22); b = _bucket_of(q ^ jnp.int64(0x5851F42D4C957F2D), 22)
    ka = ck[a]; kb = ck[b]   # [n, 2]
    wa = cw[a]; wb = cw[b]
    return jnp.sum(jnp.where(ka == q[:, None], wa, 0), 1) + jnp.sum(jnp.where(kb == q[:, None], wb, 0), 1)
bench("cuckoo 2x2 slot weight", lambda ck, cw, q: cuckoo22(ck, cw, q).sum(), ck2, cw2, q)
def cuckoo22b(ck, cw, q):
    a = _bucket_of(q, 22); b = _bucket_of(q ^ jnp.int64(0x5851F42D4C957F2D), 22)
    ka = ck[a]; kb = ck[b]
    i = jnp.where(ka[:, 0] == q, 2*a, jnp.where(ka[:, 1] == q, 2*a+1, jnp.where(kb[:, 0] == q, 2*b, jnp.where(kb[:, 1] == q, 2*b+1, 2*S2))))
    return cw.reshape(-1)[i]
bench("cuckoo 2x2 then weight", lambda ck, cw, q: cuckoo22b(ck, cw, q).sum(), ck2, cw2, q)
inter = jnp.stack([sk2, jax.lax.bitcast_convert_type(sw2, jnp.int64)], axis=1).reshape(-1)
def cuckoo_inter(fl, q):
    a = _bucket_of(q, 23); b = h2f(q)
    i = jnp.where(fl[2 * a] == q, a, jnp.where(fl[2 * b] == q, b, S))
    return jax.lax.bitcast_convert_type(fl[2 * i + 1], jnp.float64)
bench("cuckoo interleaved", lambda fl, q: cuckoo_inter(fl, q).sum(), inter, q)
bench("cuckoo slot weight", lambda sk, sw, q: cuckoo(sk, sw, q).sum(), sk2, sw2, q)
def cuckoo4(sk, sw, q):
    a = _bucket_of(q, 23); b = h2f(q)
    return jnp.where(sk[a] == q, sw[a], jnp.where(sk[b] == q, sw[b], 0.0))
bench("cuckoo 4 independent", lambda sk, sw, q: cuckoo4(sk, sw, q).sum(), sk2, sw2, q)
bench("cuckoo slot weight", lambda sk, sw, q: cuckoo(sk, sw, q).sum(), sk2, sw2, q)
