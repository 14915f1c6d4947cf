"""Probe, kept as run: seconds `jkern._cache.trusted_dir` takes on the default cache folder
(the ownership check of every entry, or the stamp), three fresh processes in a row:

    python experiments/probes/trust/walk.py
"""
# ruff: noqa
import subprocess, sys

CODE = ("import time; import jkern._cache as c; t = time.perf_counter(); "
        "c.trusted_dir(c.default_cache_dir()); print(f'{time.perf_counter() - t:.4f} s')")
for _ in range(3):
    print(subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True).stdout,
          end="")
