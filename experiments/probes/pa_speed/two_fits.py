"""Issue 34 probe, kept as run: two explicit fits (C = 1, 10 epochs, file order) in one
process, each with its CPU, user and system seconds and minor page faults: what the first fit
of a process pays over the second (first-touched memory, programs loaded).

    taskset -c 1 python experiments/probes/pa_speed/two_fits.py conj2 3
"""
# ruff: noqa
import sys, time, resource
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
ds, d = sys.argv[1], int(sys.argv[2])
train, test = pa_dataset(ds, "/work/shared/data", "/tmp/jkern-pa-poly")
X, _ = frequency_order(train.features).apply(train.features); X = X.astype(jnp.float64)
for i in range(2):
    r0 = resource.getrusage(resource.RUSAGE_SELF); c = time.process_time()
    sol = fit(X, train.labels, degree=d, C=1.0, epochs=10, mode="explicit", block_size=32, key=None)
    jax.block_until_ready(sol.model)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"fit {i}: cpu {time.process_time()-c:.2f} user {r1.ru_utime-r0.ru_utime:.2f} sys {r1.ru_stime-r0.ru_stime:.2f} minflt {r1.ru_minflt-r0.ru_minflt}")
