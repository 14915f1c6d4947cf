"""Issue 34 probe, kept as run: what a process pays after its script's last line (Python's
finalization: the collector's passes over every object and their teardown), in CPU seconds:
getrusage's user + system at the script's end (`before exit`) and the whole process's
(`total`, from the parent's getrusage of its children). `what`: numpy alone; JAX imported and one computation;
then also `jkern.pa` imported; `freeze`: as `jkern`, with `gc.freeze()` as the script's last
line (the objects then never collected: what it saves, not something jkern does).

    for w in numpy jax jkern freeze; do
        python experiments/probes/pa_speed/exit_cost.py $w; done
"""
# ruff: noqa
import os, resource, subprocess, sys

if len(sys.argv) > 2 and sys.argv[2] == "--child":
    what = sys.argv[1]
    import gc
    import numpy as np
    if what != "numpy":
        import jax, jax.numpy as jnp
        jnp.zeros(3).block_until_ready()
    if what in ("jkern", "freeze"):
        from jkern.pa import fit
    r = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{r.ru_utime + r.ru_stime:.3f} {len(gc.get_objects())}", flush=True)
    if what == "freeze":
        gc.freeze()
    sys.exit(0)

what = sys.argv[1]
env = dict(os.environ, PYTHONPATH=str(__import__("pathlib").Path(__file__).resolve().parents[3]))
proc = subprocess.Popen(["taskset", "-c", "1", sys.executable, __file__, what, "--child"],
                        stdout=subprocess.PIPE, text=True, env=env)
out, _ = proc.communicate()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
end, objects = out.split()
total = r.ru_utime + r.ru_stime
print(f"{what:6s} objects {objects:>7s}  before exit {float(end):.3f}  total {total:.3f}  "
      f"exit {total - float(end):.3f} CPU s")
