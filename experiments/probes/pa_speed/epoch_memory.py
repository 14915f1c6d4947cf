"""Issue 34 probe, kept as run: what the explicit fit's epochs (`_run_conjunctions`) hold, UD
or conj-2 at degree d: XLA's own accounting of the program (`memory_analysis` of the same
function compiled without donation: arguments, outputs, temporaries, MB) and the process's
resident memory (anonymous and file-backed) just before and after the stored program's call,
whose state argument is donated, in two fits of one process (the second with its programs
loaded).

    taskset -c 1 python experiments/probes/pa_speed/epoch_memory.py ud 2
    MALLOC_ARENA_MAX=1 taskset -c 1 python experiments/probes/pa_speed/phase_peaks.py ud 2
"""
# ruff: noqa
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np, equinox as eqx
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
from jkern._memory import release_freed_memory
import jkern.pa._fit as F
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key): return int(line.split()[1]) / 1024
orig = F._run_conjunctions
analysed = []
def wrapped(*a):
    if not analysed:
        dyn, stat = eqx.partition(a, eqx.is_array)
        ma = jax.jit(lambda dyn: orig._fn(*eqx.combine(dyn, stat))).lower(dyn).compile().memory_analysis()
        print("XLA (no donation), MB:", {k.replace("_size_in_bytes", ""): round(getattr(ma, k) / 2**20, 1)
                                         for k in ("argument_size_in_bytes", "output_size_in_bytes",
                                                   "temp_size_in_bytes")})
        analysed.append(True)
    state = a[2]
    rss, anon, file = status("VmRSS"), status("RssAnon"), status("RssFile")
    out = orig(*a)
    jax.block_until_ready(out)
    print(f"  call: rss {rss:.0f} -> {status('VmRSS'):.0f}, anonymous {anon:.0f} -> {status('RssAnon'):.0f}, "
          f"file-backed {file:.0f} -> {status('RssFile'):.0f}; the state donated: {state.w.is_deleted()}")
    return out
F._run_conjunctions = wrapped
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels; del tr
for i in range(2):
    print(f"fit {i + 1}")
    sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
    del sol
    release_freed_memory()
