"""Issue 34 probe, kept as run: whether the explicit fit's epochs (`_run_conjunctions`) write
their weights in place of the donated zeros (the output's buffer the input's), and the resident
memory (anonymous, and the peak: /proc/self/clear_refs reset just before) around the call, in
MB. One fit in a fresh process, the bench worker's inputs (UD or conj-2 at degree d).

    taskset -c 1 python experiments/probes/pa_speed/epoch_alias.py ud 2
"""
# ruff: noqa
import sys
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
orig = F._run_conjunctions
def wrapped(*a):
    w = a[2].w
    w.block_until_ready(); p = w.unsafe_buffer_pointer()
    rss, anon = status("VmRSS"), status("RssAnon")
    open("/proc/self/clear_refs", "w").write("5")
    out = orig(*a)
    jax.block_until_ready(out)
    q = out[0].w.unsafe_buffer_pointer()
    print(f"weights {w.nbytes / 2**20:.1f} MB at {p:#x} (mod 64: {p % 64}); output in place: {p == q}; "
          f"rss {rss:.0f} -> peak {status('VmHWM'):.0f} -> {status('VmRSS'):.0f}, anonymous {anon:.0f} -> {status('RssAnon'):.0f}", flush=True)
    return out
F._run_conjunctions = wrapped
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels; del tr
sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
jax.block_until_ready(sol.model)
print(f"fit end: peak {status('VmHWM'):.0f}")
