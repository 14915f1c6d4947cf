"""Issue 34 probe, kept as run: the peak resident memory of each part of an explicit-mode fit,
each measured alone (the kernel's high-water mark reset before it: /proc/self/clear_refs), with
the resident size before and after, in MB (and how much of the change is file-backed: the
shared libraries' pages the part touched). The bench worker's inputs: the training set alone,
renumbered, float32 values, dtype=float64.

    taskset -c 1 python experiments/probes/pa_speed/phase_peaks.py ud 2
    TRIM_ALL=1 taskset -c 1 python experiments/probes/pa_speed/phase_peaks.py ud 2

(TRIM_ALL=1: freed pages handed back after every part, so the resident size after it is
what stays live, not what the allocator keeps.)
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
def reset(): open("/proc/self/clear_refs", "w").write("5")
import os
from jkern._memory import release_freed_memory as release
TRIM_ALL = os.environ.get("TRIM_ALL") == "1"  # trim after every part: what stays is live
def wrap(mod, name):
    f = getattr(mod, name)
    def g(*a, **k):
        between = status("VmHWM"); before = status("VmRSS"); file0 = status("RssFile"); reset()
        out = f(*a, **k)
        try: jax.block_until_ready(out)
        except Exception: pass
        trimmed = ""
        if TRIM_ALL and name != "release_freed_memory":
            peak_now = status("VmHWM"); release(); trimmed = f" -> trimmed {status('VmRSS'):5.0f}"
        print(f"  (before it: peak {between:5.0f})  {name:18s} rss {before:5.0f} -> peak {status('VmHWM'):5.0f} -> rss {status('VmRSS'):5.0f}{trimmed}  (file-backed {status('RssFile') - file0:+.0f})", flush=True)
        reset()
        return out
    setattr(mod, name, g)
for n in ["common_part", "kept_ids", "private_counts", "worth_paging", "row_pages", "rare_part", "dense_seen", "_run_conjunctions", "rare_conjunctions", "_model_weights", "release_freed_memory"]:
    if hasattr(F, n): wrap(F, n)
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"),
                "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels; del tr
print(f"loaded: peak {status('VmHWM'):.0f} rss {status('VmRSS'):.0f}"); reset()
sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
jax.block_until_ready(sol.model)
print(f"fit end: peak since the last part {status('VmHWM'):.0f} rss {status('VmRSS'):.0f}")
