"""Issue 34 probe, kept as run: ns per element of XLA's gather on the CPU, `[4096, 1351]` ids a
step (conj-2's padded d = 3 rows) from 8.6M int64 weights: all the sink (one hot element),
uniformly random, random within the first 4.2M, and 65% sink (conj-2's padding share).

    taskset -c 1 python experiments/probes/pa_speed/gather_cost.py
"""
# ruff: noqa
import time, jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)
W = jnp.asarray(rng.integers(0, 100, 8_600_000))
def run(name, ids):
    f = jax.jit(lambda w, ids: jax.lax.map(lambda r: jnp.sum(w[r]), ids).sum())
    f(W, ids).block_until_ready()
    t = time.process_time(); f(W, ids).block_until_ready(); dt = time.process_time() - t
    print(f"{name:20s} {1e9 * dt / ids.size:.2f} ns/elem")
n = 30
run("all sink", jnp.full((n, 4096, 1351), 8_599_999, jnp.int32))
run("random", jnp.asarray(rng.integers(0, 8_600_000, (n, 4096, 1351)).astype(np.int32)))
run("random small 4M", jnp.asarray(rng.integers(0, 4_200_000, (n, 4096, 1351)).astype(np.int32)))
mix = rng.integers(0, 8_600_000, (n, 4096, 1351)); mix[rng.random(mix.shape) < 0.65] = 8_599_999
run("65% sink", jnp.asarray(mix.astype(np.int32)))
