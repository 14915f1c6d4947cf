"""Issue 34 probe, kept as run: the bench's PA-I worker (`_pa_worker.worker`, explicit mode,
C = 1, 10 epochs, one CPU) under cProfile: its row's fit CPU seconds and peak RSS, the
process's CPU seconds, and the top entries by cumulative time.

    taskset -c 0 python experiments/probes/pa_speed/worker_profile.py ud 2
    MALLOC_MMAP_THRESHOLD_=131072 taskset -c 0 python experiments/probes/pa_speed/worker_profile.py ud 2
"""
# ruff: noqa
import cProfile, pstats, sys, json, time
T0 = time.process_time()
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from jkern import limit_cpus
limit_cpus(1)
import _pa_worker
spec = {"dataset": sys.argv[1], "data_dir": str(Path(__file__).resolve().parents[4] / "shared" / "data"), "cache_dir": "/tmp/jkern-pa-poly", "model": "explicit", "degree": int(sys.argv[2]), "C": 1.0, "epochs": 10, "block": 32, "cpus": 1}
pr = cProfile.Profile(); pr.enable()
row = _pa_worker.worker(spec)
pr.disable()
print({k: row[k] for k in ("cpu_seconds", "peak_mb", "accuracy")}, "process", time.process_time() - T0)
pstats.Stats(pr).sort_stats("cumulative").print_stats(30)
