"""Issue 34 probe, kept as run: peak RSS along an explicit-mode fit (one process, UD or conj2,
degree d), printed after each part of `_fit_explicit`: the peak before and after the part, and
the resident size after it (which keeps memory the allocators have not returned). As the
bench's worker since the eleventh steps: the training set alone, renumbered, its float32
values as read, `dtype=float64`.

    python experiments/probes/pa_speed/fit_memory.py ud 3
"""
# ruff: noqa
import sys, resource
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
import jkern.pa._fit as F
def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024
def cur():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
def wrap(mod, name):
    f = getattr(mod, name)
    def g(*a, **k):
        before = rss(); out = f(*a, **k)
        try: jax.block_until_ready(out)
        except Exception: pass
        print(f"  {name:20s} peak {before:6.0f} -> {rss():6.0f}  now {cur():6.0f}", flush=True); return out
    setattr(mod, name, g)
for n in ["common_part", "kept_ids", "private_counts", "row_pages", "rare_part", "dense_seen", "_run_conjunctions", "rare_conjunctions", "_model_weights"]:
    if hasattr(F, n): wrap(F, n)
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"),
                "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X,_ = o.apply(tr.features); y = tr.labels; del tr
print("loaded", rss(), cur())
sol = fit(X, y, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
jax.block_until_ready(sol.model); print("fit", rss(), cur())
