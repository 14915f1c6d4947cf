"""Issue 34 probe, kept as run: what an explicit fit's ten epochs cost without their updates:
the chunks' weight ids alone (`CommonPart.ids_from`, all chunks of the visit order), and the
same with the gather of every id's weight (the block margins' work), CPU seconds, one core.

    taskset -c 1 python experiments/probes/pa_speed/epoch_gathers.py 3 conj2
"""
# ruff: noqa
import time, sys, os
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
sys.path.insert(0, "/work/main/experiments")
from _common import pa_dataset
from jkern.pa import frequency_order
from jkern.pa._fit import _stream, visit_orders
from jkern.pa._slice import CHUNK_VISITS, kept_ids
from jkern.pa._split import common_part
from jkern.pa._table import dense_features
from jkern.pa._rare import rare_features
deg = int(sys.argv[1]); ds = sys.argv[2]
train, test = pa_dataset(ds, "/work/shared/data", "/tmp/jkern-pa-poly")
X, _ = frequency_order(train.features).apply(train.features); X = X.astype(jnp.float64).compact(sparse=True)
F = X.n_features; val = np.asarray(X.values)
idx = np.sort(np.where(val != 0, np.asarray(X.indices), F), axis=1)
N = rare_features(idx, idx < F, F, dense_features(F, deg))
common = common_part(X, deg, F, below=N)
idx_j = jnp.asarray(idx, jnp.int32)
kept = kept_ids(common, idx_j, 10)
n = len(val); size = -(-min(CHUNK_VISITS, n * 10) // 32) * 32
visits, mask = _stream(visit_orders(n, 10, False, None), size)
w = jnp.zeros((common.size + 1,), jnp.int64)
@jax.jit
def only_ids(common, idx, order, kept, w):
    def chunk(acc, pos):
        ids = common.ids_from(idx[pos], kept, pos)
        return acc + jnp.sum(ids[:, -1], dtype=jnp.int64), None
    return jax.lax.scan(chunk, jnp.zeros((), jnp.int64), order)[0]
@jax.jit
def ids_gather(common, idx, order, kept, w):
    def chunk(acc, pos):
        ids = common.ids_from(idx[pos], kept, pos)
        return acc + jnp.sum(w[ids]), None
    return jax.lax.scan(chunk, jnp.zeros((), jnp.int64), order)[0]
for f in (only_ids, ids_gather):
    f(common, idx_j, jnp.asarray(visits), kept, w).block_until_ready()
    t = time.process_time(); f(common, idx_j, jnp.asarray(visits), kept, w).block_until_ready(); print(f.__name__, time.process_time() - t)
