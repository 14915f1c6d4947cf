"""Issue 34 probe, kept as run: how many of each row's common-conjunction positions hold a
weight id (not the sink), against the padded width K the epochs gather, per row and per
block of 32 visits in file order (the explicit fit's table, private conjunctions left out).

    taskset -c 1 python experiments/probes/pa_speed/live_ids.py conj2 3
"""
# ruff: noqa
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import frequency_order
from jkern.pa._slice import CHUNK_VISITS, kept_ids
from jkern.pa._split import common_part
from jkern.pa._table import dense_features
from jkern.pa._rare import rare_features
ds, deg = sys.argv[1], int(sys.argv[2])
train, test = pa_dataset(ds, "/work/shared/data", "/tmp/jkern-pa-poly")
X, _ = frequency_order(train.features).apply(train.features); X = X.astype(jnp.float64).compact(sparse=True)
F = X.n_features; val = np.asarray(X.values)
idx = np.sort(np.where(val != 0, np.asarray(X.indices), F), axis=1)
N = rare_features(idx, idx < F, F, dense_features(F, deg))
common = common_part(X, deg, F, below=N, shared=True)
idx_j = jnp.asarray(idx, jnp.int32)
kept = kept_ids(common, idx_j, 10)
live = []
f = jax.jit(lambda rows, pos: jnp.sum(common.ids_from(rows, kept, pos) < common.size, axis=1))
for s in range(0, len(idx), CHUNK_VISITS):
    pos = jnp.arange(s, min(s + CHUNK_VISITS, len(idx)))
    live.append(np.asarray(f(idx_j[pos], pos)))
live = np.concatenate(live)
K = common.n_ids
blocks = np.add.reduceat(live, np.arange(0, len(live), 32))
print(f"rows {len(live)}  K {K}  live per row: mean {live.mean():.1f} max {live.max()}  "
      f"per block of 32: mean {blocks.mean():.0f} max {blocks.max()} (padded {32 * K})")
