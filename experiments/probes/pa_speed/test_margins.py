"""Issue 34 probe, kept as run: explicit mode's model (`ConjunctionModel`) classifying UD's
test set, CPU seconds of three calls after phases.py's own (the fit, then the first call).
Run on one CPU as the bench does:

    taskset -c 1 python experiments/probes/pa_speed/test_margins.py 2
"""
# ruff: noqa
import runpy, sys, time, resource
from pathlib import Path

degree = sys.argv[1] if len(sys.argv) > 1 else "2"
sys.argv = ["phases.py", "--degree", degree]
g = runpy.run_path(str(Path(__file__).resolve().parent / "phases.py"), run_name="__main__")
import numpy as np

model, Xte = g["model"], g["Xte"]
for i in range(3):
    c = time.process_time()
    m = np.asarray(model.decision_function(Xte))
    print(f"again {time.process_time() - c:.3f} CPU s, peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB", flush=True)
