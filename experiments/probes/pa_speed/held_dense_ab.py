"""Issue 34 probe, kept as run: `fit_phases.py` (UD or conj-2 at degree d, the parts' CPU
seconds of the second of two fits) with the dense weights for the held slots only (the
default at d <= DENSE_HELD_DEGREE) or, with NOHELD=1, for every slot (the held slots still
counted), and with HELD3=1 also at d = 3; then the CPU seconds `_held_dense` took over both
fits.

    taskset -c 1 python experiments/probes/pa_speed/held_dense_ab.py conj2 2
    NOHELD=1 taskset -c 1 python experiments/probes/pa_speed/held_dense_ab.py conj2 2
    HELD3=1 taskset -c 1 python experiments/probes/pa_speed/held_dense_ab.py ud 3
"""
# ruff: noqa
import os, runpy, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax
import jkern.pa._fit as F
if os.environ.get("NOHELD"):
    F.DENSE_HELD_SHARE = -1.0
if os.environ.get("HELD3"):
    F.DENSE_HELD_DEGREE = 3
T = [0.0]
orig = F._held_dense
def timed(*a):
    c = time.process_time(); out = orig(*a)
    if out.dense_bits is not None: jax.block_until_ready(out.dense_bits)
    T[0] += time.process_time() - c
    return out
F._held_dense = timed
sys.argv = ["fit_phases.py"] + sys.argv[1:]
runpy.run_path(str(Path(__file__).resolve().parent / "fit_phases.py"), run_name="__main__")
print(f"_held_dense: {T[0]:.3f} CPU s over both fits")
