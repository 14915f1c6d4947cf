"""Issue 34 probe, kept as run: how many XLA programs one PA-I worker process compiles or
loads (JAX's `compile_or_get_cached` calls, each a trace, a lowering and a compile or a
cache read), and from where in jkern or the experiments' loader.

    python experiments/probes/pa_speed/programs.py ud 2
"""
# ruff: noqa
import collections, sys, traceback
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax
from jax._src import compiler

orig = compiler.compile_or_get_cached
counts = collections.Counter()


def counted(*a, **k):
    stack = [f"{f.filename.split('/')[-1]}:{f.lineno}:{f.name}" for f in traceback.extract_stack()
             if "/jkern/" in f.filename or "_pa_" in f.filename]
    counts[" < ".join(stack[::-1][:3])] += 1
    return orig(*a, **k)


compiler.compile_or_get_cached = counted
import _pa_worker
spec = {"dataset": sys.argv[1], "model": "explicit", "degree": int(sys.argv[2]),
        "data_dir": str(Path(__file__).resolve().parents[4] / "shared" / "data"),
        "cache_dir": "/tmp/jkern-pa-poly", "C": 1.0, "epochs": 10, "block": 32, "svm_C": 1.0,
        "max_train": None, "max_test": None, "classify_timing": False, "pure_timing": False}
row = _pa_worker.worker(spec)
for where, c in counts.most_common():
    print(c, where)
print("programs:", sum(counts.values()), " updates:", row["updates"], " accuracy:", row["accuracy"])
