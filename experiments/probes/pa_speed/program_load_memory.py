"""Issue 34 probe, kept as run: what loading each stored XLA program of an explicit PA-I fit
costs (`_executable_file.decode`: the file's size, milliseconds, and the resident memory it
adds, MB, after the freed pages before it are handed back), then the epochs' first call with
its load (UD or conj-2 at degree d, one fit and the test set's margins, programs stored by an
earlier run).

    taskset -c 1 python experiments/probes/pa_speed/program_load_memory.py conj2 2
"""
# ruff: noqa
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
import jkern._executable_file as EF
from jkern._memory import release_freed_memory
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key): return int(line.split()[1]) / 1024
orig = EF.decode
def dec(data, key, *a, **k):
    release_freed_memory()
    r0, a0 = status("VmRSS"), status("RssAnon")
    c = time.perf_counter(); out = orig(data, key, *a, **k); ms = 1000 * (time.perf_counter() - c)
    release_freed_memory()
    print(f"  load {len(data) / 1e6:.2f} MB file: {ms:.1f} ms, resident +{status('VmRSS') - r0:.1f} MB (anonymous +{status('RssAnon') - a0:.1f})", flush=True)
    return out
EF.decode = dec
import jkern.pa._fit as F
orig_rc = F._run_conjunctions
def rc(*a):
    r0 = status("VmRSS")
    out = orig_rc(*a); jax.block_until_ready(out)
    print(f"  the epochs' first call, its load included: resident +{status('VmRSS') - r0:.1f} MB")
    return out
F._run_conjunctions = rc
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
ds, d = sys.argv[1], int(sys.argv[2])
data = str(Path(__file__).resolve().parents[4] / "shared" / "data")
tr = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features)
print("fit")
sol = fit(X, tr.labels, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
te = pa_dataset(ds, data, "/tmp/jkern-pa-poly", part="test")
Xte, _ = o.apply(te.features)
print("test margins")
np.asarray(sol.model.decision_function(Xte.astype(jnp.float64)))
