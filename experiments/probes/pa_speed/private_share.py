"""Issue 34 probe, kept as run: how many of an explicit fit's table keys are private (held by
one training example only, `_rare.private_counts`): the table of every common conjunction
against the table of the shared ones (`common_part(shared=True)`), with N chosen as `fit`
chooses it, and the CPU seconds of each build.

    taskset -c 0 python experiments/probes/pa_speed/private_share.py ud 3
"""
# ruff: noqa
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import frequency_order
from jkern.pa._rare import rare_features
from jkern.pa._split import common_part
from jkern.pa._table import dense_features
ds, d = sys.argv[1], int(sys.argv[2])
tr, _ = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly")
X, _ = frequency_order(tr.features).apply(tr.features)
X = X.astype(jnp.float64)
F = X.n_features
val = np.asarray(X.values)
idx = np.sort(np.where(val != 0, np.asarray(X.indices), F), axis=1)
N = rare_features(idx, idx < F, F, dense_features(F, d))
for shared in (False, True, False, True):
    c = time.process_time()
    common = common_part(X, d, F, below=N, shared=shared)
    print(f"{ds} d={d} N={N} shared={shared}: {common.n_table:,} keys, "
          f"{time.process_time() - c:.2f} CPU s", flush=True)
