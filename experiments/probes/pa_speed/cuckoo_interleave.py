"""Issue 34 probe, kept as run: cuckoo lookups in a table of 2^24 slots (int64 keys, half the
queried keys present), µs per 455 lookups (a UD test row's triples at d = 3), one core: the
weights in their own array (A), interleaved with the keys in one array (B), and the two key
reads alone (C).

    taskset -c 1 python experiments/probes/pa_speed/cuckoo_interleave.py
"""
# ruff: noqa
import time, jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)
S = 1 << 24
ck = rng.integers(0, 1 << 60, S + 1)
w = rng.standard_normal(S + 1)
kw = np.empty(2 * (S + 1), np.int64); kw[0::2] = ck; kw[1::2] = w.view(np.int64)
n = 4096 * 455
q1 = rng.integers(0, S, n).astype(np.int32); q2 = rng.integers(0, S, n).astype(np.int32)
keys = np.where(rng.random(n) < 0.5, ck[q1], rng.integers(0, 1 << 60, n))
ck, w, kw = map(jnp.asarray, (ck, w, kw)); q1, q2, keys = map(jnp.asarray, (q1, q2, keys))
@jax.jit
def A(ck, w, q1, q2, keys):
    slot = jnp.where(ck[q1] == keys, q1, jnp.where(ck[q2] == keys, q2, S))
    return jnp.sum(w[slot])
@jax.jit
def B(kw, q1, q2, keys):
    slot = jnp.where(kw[2 * q1] == keys, q1, jnp.where(kw[2 * q2] == keys, q2, S))
    return jnp.sum(jax.lax.bitcast_convert_type(kw[2 * slot + 1], jnp.float64))
@jax.jit
def C(ck, q1, q2, keys):
    slot = jnp.where(ck[q1] == keys, q1, jnp.where(ck[q2] == keys, q2, S))
    return jnp.sum(slot)
for name, f, a in (("A sep", A, (ck, w, q1, q2, keys)), ("B inter", B, (kw, q1, q2, keys)), ("C keys only", C, (ck, q1, q2, keys))):
    f(*a).block_until_ready()
    ts = []
    for _ in range(3):
        t = time.process_time(); f(*a).block_until_ready(); ts.append(time.process_time() - t)
    print(name, round(min(ts) / 4096 * 1e6, 2), "us per 455 lookups")
