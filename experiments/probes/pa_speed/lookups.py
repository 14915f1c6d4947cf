"""Issue 34 probe, kept as run: the cost of one hashed lookup in XLA on the CPU, ns per key
over 2^20 random present keys of a 3.4M-key open table (`CommonPart.of`, int64 keys and
float64 weights, one core): a plain random gather of a weight, `locate` and the weight at
the found position, and the same with tables at lower loads (smaller windows, more slots).

    taskset -c 0 python experiments/probes/pa_speed/lookups.py
"""
# ruff: noqa
import time, numpy as np, jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
from jkern.pa._table import CommonPart
rng = np.random.default_rng(0)
D = 3_400_000
keys = np.unique(rng.integers(0, 2**40, D * 11 // 10))[:D]
T = CommonPart.of(keys, 2**13, 15, 3)
print("window", T.window, "slots", T.slots.shape)
w = jnp.asarray(rng.random(D + 1))
q = jnp.asarray(keys[rng.integers(0, D, 1 << 20)])
slot_keys = T.slots[:, 0]; held = T.slots[:, 1]
slot_w = jnp.where(held >= 0, w[jnp.maximum(held, 0)], 0)
def bench(name, f, *a):
    g = jax.jit(f); jax.block_until_ready(g(*a)); ts = []
    for _ in range(5):
        t = time.perf_counter(); jax.block_until_ready(g(*a)); ts.append(time.perf_counter() - t)
    print(f"{name:22s} {1e9 * min(ts) / q.size:6.1f} ns/key")
bench("random gather", lambda w, q: w[(q % D).astype(jnp.int32)].sum(), w, q)
bench("locate+weight", lambda T, w, q: w[T.locate(q)[0]].sum(), T, w, q)
qs = jnp.sort(q)
for load in (0.25, 0.125):
    T2 = T.opened(load=load)
    print("load", load, "window", T2.window, "slots", T2.slots.shape)
    bench(f"locate+weight {load}", lambda T, w, q: w[T.locate(q)[0]].sum(), T2, w, q)
