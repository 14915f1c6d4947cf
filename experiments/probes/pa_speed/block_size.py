"""Issue 34 probe, kept as run: explicit-mode fit CPU on UD by block size, twice each in one
process (the first run of each pays tracing and cache loading).

    python experiments/probes/pa_speed/block_size.py 2 32 64 128 16
"""
# ruff: noqa
import sys, time
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
from _common import pa_dataset
from jkern.pa import fit, frequency_order
train, test = pa_dataset("ud", "/work/shared/data", "/tmp/jkern-pa-poly")
order = frequency_order(train.features)
X, _ = order.apply(train.features); X = X.astype(jnp.float64)
d = int(sys.argv[1])
for B in [int(b) for b in sys.argv[2:]]:
    for rep in range(2):
        c0 = time.process_time(); t0 = time.perf_counter()
        sol = fit(X, train.labels, degree=d, C=1.0, epochs=10, mode="explicit", block_size=B, key=None)
        jax.block_until_ready(sol.model)
        print(f"d={d} B={B} rep {rep}: CPU {time.process_time()-c0:.2f} wall {time.perf_counter()-t0:.2f} updates {int(np.asarray(sol.stats['updated']).sum())}", flush=True)
