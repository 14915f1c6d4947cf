"""Issue 34 probe, kept as run: explicit mode's rare part per data set and degree: N, the widest
example's partners (what `_rare.add_partners` walks per update) against the mean.

    python experiments/probes/pa_speed/rare_width.py
"""
# ruff: noqa
import sys; from pathlib import Path; sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import numpy as np
from _pa_data import pa_dataset
from jkern.pa import frequency_order
from jkern.pa._rare import rare_features, rare_part
from jkern.pa._table import dense_features
for name in ("ud", "conj2"):
    train, _ = pa_dataset(name, "/work/shared/data", "/tmp/jkern-pa-poly")
    X, _ = frequency_order(train.features).apply(train.features)
    F = X.n_features
    val = np.asarray(X.values); idx = np.sort(np.where(val != 0, np.asarray(X.indices), F), axis=1)
    for d in (2, 3):
        N = rare_features(idx, idx < F, F, dense_features(F, d))
        r = rare_part(idx, F, N, d)
        per = np.diff(np.asarray(r.start))
        print(f"{name} d={d}: N={N}, width {r.width}, partners per example mean {per.mean():.1f}, 99th pct {np.percentile(per, 99):.0f}, with any {np.mean(per > 0):.2f}")
