"""Issue 34 probe, kept as run: explicit-mode fits (C = 1, 10 epochs, file order) with every
row's weight ids computed once and gathered by the epochs (`_pages.kept_row_ids`, the default
where they fit ROW_IDS_BYTES) or, with NOROWIDS=1, computed at every visit (the budget set to
0); CPU seconds of three fits in one process (the first loads the programs), the updates, and
a checksum of the test margins (the same in both).

    taskset -c 1 python experiments/probes/pa_speed/row_ids_ab.py conj2 2
    NOROWIDS=1 taskset -c 1 python experiments/probes/pa_speed/row_ids_ab.py conj2 2
"""
# ruff: noqa
import os, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
import jkern.pa._pages as S
if os.environ.get("NOROWIDS") == "1":
    S.ROW_IDS_BYTES = 0
ds, d = sys.argv[1], int(sys.argv[2])
data = str(Path(__file__).resolve().parents[4] / "shared" / "data")
tr = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels
te = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="test")
Xt, _ = o.apply(te.features); Xt = Xt.astype(jnp.float64)
for rep in range(3):
    c0 = time.process_time()
    sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
    jax.block_until_ready(sol.model); np.asarray(sol.stats["updated"])
    cpu = time.process_time() - c0
    m = np.asarray(sol.model.decision_function(Xt))
    print(f"fit {rep}: {cpu:.3f} CPU s, updates {int(np.asarray(sol.stats['updates']).sum())}, "
          f"margins checksum {int(m.view(np.uint64).sum(dtype=np.uint64))}")
