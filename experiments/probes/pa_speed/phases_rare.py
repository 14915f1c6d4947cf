"""Issue 34 probe, kept as run: where an explicit-mode fit with the rare split
(`jkern/pa/_rare.py`) spends its time, phase by phase (CPU seconds and peak RSS after each):
choosing N, the table, the rare pairs, the id search, the epochs twice, the model.

    python experiments/probes/pa_speed/phases_rare.py 3 [ud|conj2]
"""
# ruff: noqa
import time, sys, resource
T0, C0 = time.perf_counter(), time.process_time()
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
from _common import pa_dataset
from jkern.pa import frequency_order
from jkern.pa._explicit import ExplicitPA
from jkern.pa._fit import _model_weights, _run_conjunctions, _stream, visit_orders
from jkern.pa._slice import CHUNK_VISITS, dense_seen, kept_ids
from jkern.pa._split import common_part
from jkern.pa._table import dense_features
from jkern.pa._rare import rare_features, rare_part, rare_conjunctions
def mark(what, since):
    c = time.process_time(); rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{what:40s} CPU {c - since[0]:6.2f} s  wall {time.perf_counter()-T0:6.1f}  peak {rss:5.0f} MB", flush=True); since[0] = c
deg = int(sys.argv[1]); ds = sys.argv[2] if len(sys.argv) > 2 else "ud"
since=[C0]
train, test = pa_dataset(ds, "/work/shared/data", "/tmp/jkern-pa-poly")
order = frequency_order(train.features)
X, _ = order.apply(train.features); X = X.astype(jnp.float64).compact(sparse=True)
mark("load+renumber", since)
F = X.n_features; val = np.asarray(X.values)
idx = np.sort(np.where(val != 0, np.asarray(X.indices), F), axis=1)
N = rare_features(idx, idx < F, F, dense_features(F, deg))
mark(f"choose N={N} (F={F})", since)
common = common_part(X, deg, F, below=N)
mark(f"table {common.keys.shape[0]:,} keys width {common.width}", since)
rare = rare_part(idx, F, N, deg) if N < F else None
mark(f"rare part {0 if rare is None else rare.partner.shape[0]:,} pairs width {0 if rare is None else rare.width}", since)
idx_j = jnp.asarray(idx, jnp.int32)
kept = kept_ids(common, idx_j, 10)
jax.block_until_ready(kept)
mark("id search", since)
learner = ExplicitPA(jnp.float64(1.0), degree=deg, exact=True)
n = len(val); size = -(-min(CHUNK_VISITS, n * 10) // 32) * 32
visits, mask = _stream(visit_orders(n, 10, False, None), size)
sq = jnp.asarray(np.sum(val != 0, axis=1), jnp.float64); y = jnp.asarray(train.labels, jnp.float64)
for again in range(2):
    state = learner.init(common.size, dtype=jnp.float64)
    out = _run_conjunctions(learner, common, state, idx_j, sq, y, jnp.asarray(visits), jnp.asarray(mask), False, kept, 32, rare)
    print("updates", int(np.asarray(out[2]).sum()))
    mark("epochs" + (" again" if again else " (+compile)"), since)
more = None if rare is None else rare_conjunctions(idx, np.asarray(out[3]), F, N, deg)
keys, w = _model_weights(common, lambda: dense_seen(common, idx_j), [out[0].w], more)
mark(f"model {len(keys):,} keys", since)
