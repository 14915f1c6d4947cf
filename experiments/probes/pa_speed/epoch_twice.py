"""Issue 34 probe, kept as run: the explicit fit's epochs program (`_run_conjunctions`) run
three times in one process on the same inputs, each time on fresh zero weights: the anonymous
memory before and after each call and the peak during it (/proc/self/clear_refs reset before),
in MB. What the first call leaves beyond its outputs and the later calls do not is the
program's one-time cost in this process. UD or conj-2 at degree d, the bench worker's inputs.

    taskset -c 1 python experiments/probes/pa_speed/epoch_twice.py ud 2
"""
# ruff: noqa
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
from jkern._memory import release_freed_memory
import jkern.pa._fit as F
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key): return int(line.split()[1]) / 1024
orig = F._run_conjunctions
def wrapped(*a):
    learner, common, state = a[0], a[1], a[2]
    for i in range(3):
        st = learner.init(common.size, dtype=jnp.float64) if i else state
        st.w.block_until_ready()
        anon, rss = status("RssAnon"), status("VmRSS")
        open("/proc/self/clear_refs", "w").write("5")
        out = orig(learner, common, st, *a[3:]); jax.block_until_ready(out)
        print(f"call {i + 1}: anonymous {anon:.0f} -> {status('RssAnon'):.0f}, rss {rss:.0f} -> peak {status('VmHWM'):.0f}", flush=True)
        if i < 2:
            del out; release_freed_memory()
            print(f"  outputs dropped, freed pages returned: anonymous {status('RssAnon'):.0f}")
    return out
F._run_conjunctions = wrapped
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"), "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features); y = tr.labels; del tr
sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
