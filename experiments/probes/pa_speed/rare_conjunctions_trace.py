"""Issue 34 probe, kept as run: the model's rare and private conjunctions (`rare_conjunctions`)
in an explicit UD fit at degree d: the resident size before it and its high-water mark
(reset before it), NumPy's own traced peak and what it still holds after (tracemalloc), and
the size of its output, in MB.

    taskset -c 1 python experiments/probes/pa_speed/rare_conjunctions_trace.py 3
"""
# ruff: noqa
import sys, tracemalloc
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
import jkern.pa._fit as F
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key): return int(line.split()[1]) / 1024
orig = F.rare_conjunctions
def g(*a):
    open("/proc/self/clear_refs", "w").write("5")
    r0 = status("VmRSS")
    tracemalloc.start()
    out = orig(*a)
    cur, peak = tracemalloc.get_traced_memory()
    snap = tracemalloc.take_snapshot()
    tracemalloc.stop()
    print(f"rss {r0:.0f} -> hwm {status('VmHWM'):.0f}; traced peak {peak/2**20:.1f} MB, held after {cur/2**20:.1f} MB; out {sum(x.nbytes for x in out)/2**20:.1f} MB")
    print("args:", [(type(x).__name__, getattr(x, 'shape', None), getattr(x, 'dtype', None)) for x in a])
    return out
F.rare_conjunctions = g
tr = pa_dataset("ud", str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels; del tr
sol = fit(X, y, degree=int(sys.argv[1]), C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
