"""Issue 34 probe, kept as run: where the expanded model's classification time goes, per
part, µs per row (UD's test rows in blocks of 4,096 over 16 positions; the models
`classify.py` keeps in `--models`): the enumeration (`keys_of`, its three outputs), the ids
(`CommonPart.ids`: enumeration and search), and `locate` on real keys and on the empty
conjunction's (cache-hot) only.

    python experiments/probes/pa_speed/classify_parts.py 3 [--models /tmp/pke]
"""
# ruff: noqa
import sys, time
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from jkern.pa._pke import expand_support_vectors
d = int(sys.argv[1])
models = sys.argv[sys.argv.index("--models") + 1] if "--models" in sys.argv else "/tmp/pke"
t = np.load(f"{models}/test_ud.npz")
s = np.load(f"{models}/sv_ud_d{d}.npz")
em = expand_support_vectors(s["indices"], s["values"], s["alpha"], d, int(s["n_features"]))
T = em.table.with_width(16)
B = 4096
n = (len(t["indices"]) // B) * B
idx = jnp.asarray(t["indices"][:n].reshape(-1, B, t["indices"].shape[1]), jnp.int32)
N = T.n_common
def timeit(name, f, *a):
    f = jax.jit(f); jax.block_until_ready(f(*a))
    ts = []
    for _ in range(3):
        t0 = time.perf_counter(); jax.block_until_ready(f(*a)); ts.append(time.perf_counter() - t0)
    print(f"{name:14s} {1e6*sorted(ts)[1]/n:7.2f} us/row", flush=True)
r = jax.jit(lambda i: jnp.pad(jnp.sort(em.rank[i], axis=-1), ((0,0),(0,0),(0,max(0, 16 - i.shape[-1]))), constant_values=N))(idx)
k = jax.jit(lambda r: jax.lax.map(lambda x: T.keys_of(x)[0], r))(r)
print(f"{T.n_ids} conjunctions a row, {int(T.keys.shape[0]):,} table keys, {T.n_dense} dense features")
timeit("keys_of", lambda r: jax.lax.map(lambda x: sum(a.astype(jnp.int64).sum(1) for a in T.keys_of(x)), r), r)
timeit("ids", lambda r: jax.lax.map(lambda x: T.ids(x).sum(1), r), r)
timeit("locate real", lambda k: jax.lax.map(lambda x: T.find(x).sum(1), k), k)
timeit("locate empty", lambda k: jax.lax.map(lambda x: T.find(x).sum(1), k), jnp.zeros_like(k))
