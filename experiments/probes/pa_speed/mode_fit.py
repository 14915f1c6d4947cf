"""Issue 34 probe, kept as run: one fit of a mode with a given N (n_common; None: the mode's
own choice) and block size on UD or conj-2 (C = 1, 10 epochs, file order, the bench worker's
inputs): CPU and wall seconds, the process's peak RSS, the updates per epoch.

    taskset -c 1 python experiments/probes/pa_speed/mode_fit.py ud 3 splitting 293
    taskset -c 1 python experiments/probes/pa_speed/mode_fit.py conj2 2 explicit None 64
"""
# ruff: noqa
import sys, time, resource
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
ds, d, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
N = None if sys.argv[4] == "None" else int(sys.argv[4])
block = int(sys.argv[5]) if len(sys.argv) > 5 else 32
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels; del tr
def peak(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("loaded peak", round(peak()))
c0 = time.process_time(); t0 = time.perf_counter()
sol = fit(X, y, degree=d, C=1.0, epochs=10, mode=mode, n_common=N, block_size=block, dtype=jnp.float64, key=None)
jax.block_until_ready(sol.model)
print(f"{ds} d={d} {mode} N={N} B={block}: fit CPU {time.process_time()-c0:.2f} wall {time.perf_counter()-t0:.2f} peak {peak():.0f} MB; updates {np.asarray(sol.stats['updates']).tolist()} stats n_common {sol.stats.get('n_common')}")
