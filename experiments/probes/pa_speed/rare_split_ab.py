"""Issue 34 probe, kept as run: explicit mode with and without the rare split
(`jkern/pa/_rare.py`) in one process, twice each (the second pair with compiled programs), on
UD (or conj2): CPU and wall seconds of `pa.fit` and its updates (the same in both).

    python experiments/probes/pa_speed/rare_split_ab.py 3 [ud|conj2]
"""

import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import pa_dataset  # noqa: E402

from jkern.pa import fit, frequency_order  # noqa: E402

degree = int(sys.argv[1])
dataset = sys.argv[2] if len(sys.argv) > 2 else "ud"
train, _ = pa_dataset(dataset, "/work/shared/data", "/tmp/jkern-pa-poly")
X, _ = frequency_order(train.features).apply(train.features)
X = X.astype(jnp.float64)
for rep in range(2):
    # n_common above every feature: no rare part (the whole expansion as weights)
    for label, n_common in (("whole", 10**7), ("rare split", None)):
        cpu, wall = time.process_time(), time.perf_counter()
        sol = fit(X, train.labels, degree=degree, epochs=10, mode="explicit", key=None,
                  n_common=n_common)
        jax.block_until_ready(sol.model.weights)
        print(rep, label, "N", sol.stats.get("n_common"),
              f"CPU {time.process_time() - cpu:.2f} wall {time.perf_counter() - wall:.2f}",
              "updates", int(np.asarray(sol.stats["updates"]).sum()), flush=True)
