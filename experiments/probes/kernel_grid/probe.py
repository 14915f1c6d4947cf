"""What a grid over a kernel parameter costs (issue 35, acceptance line 3), kept as run.

On the first N TREC training trees (default 200), PTK (mu = 0.4), float64, one fresh
process per measurement, each printing the first call's seconds and the median of the later
calls, the XLA programs built during the first call, and any warning raised:

    one    jkern.gram(PTK(lam=0.4), trees)
    loop   [jkern.gram(PTK(lam=l), trees) for l in LAMS]      (a Python loop over 4)
    vmap   jax.vmap(lambda l: jkern.gram(PTK(lam=l), trees))(LAMS)
    jit    jax.jit(jax.vmap(...))(LAMS)

cold: every process gets a fresh, empty compilation cache (JKERN_CACHE_DIR);
warm: one shared cache, filled by an unmeasured run of the same mode first.

    python experiments/probes/kernel_grid/probe.py --data-dir ../shared/data [--trees 200]
        [--modes one,loop,vmap,jit] [--caches cold,warm] [--kernel ptk]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

LAMS = (0.2, 0.4, 0.6, 0.8)


def worker(mode: str, data_dir: str, n: int, kernel_name: str, again: int) -> None:
    import warnings

    warnings.simplefilter("always")
    caught: list[str] = []
    shown = warnings.showwarning
    warnings.showwarning = lambda m, c, *a, **k: caught.append(f"{c.__name__}: {m}")
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import jkern
    from jkern.data import load_trec

    trees = load_trec(data_dir, "train").trees[:n]

    def kernel(lam):
        if kernel_name == "ptk":
            return jkern.PTK(lam=lam, mu=0.4)
        if kernel_name == "sst":
            return jkern.SST(lam=lam)
        raise ValueError(kernel_name)

    lams = jnp.asarray(LAMS)
    grid = jax.vmap(lambda lam: jkern.gram(kernel(lam), trees, dtype="float64"))
    jitted = jax.jit(grid)
    call = {
        "one": lambda: jkern.gram(kernel(0.4), trees, dtype="float64"),
        "loop": lambda: [jkern.gram(kernel(float(lam)), trees, dtype="float64")
                         for lam in LAMS],
        "vmap": lambda: grid(lams),
        "jit": lambda: jitted(lams),
    }[mode]
    before = jkern.program_stats()["programs"]
    t0 = time.perf_counter()
    out = jax.block_until_ready(call())
    first = time.perf_counter() - t0
    programs = jkern.program_stats()["programs"] - before
    times = []
    for _ in range(again):
        t0 = time.perf_counter()
        out = jax.block_until_ready(call())
        times.append(time.perf_counter() - t0)
    warnings.showwarning = shown
    value = np.stack([np.asarray(g) for g in out]) if isinstance(out, list) else np.asarray(out)
    print("RESULT " + json.dumps({
        "first_s": first, "later_s": statistics.median(times) if times else None,
        "programs": programs, "warnings": sorted(set(caught)), "sum": float(value.sum()),
    }), flush=True)


def run(mode: str, args, cache: str, again: int) -> dict:
    env = dict(os.environ, JKERN_CACHE_DIR=cache)
    env.pop("JKERN_NO_CACHE", None)
    cmd = [sys.executable, __file__, "--worker", mode, "--data-dir", args.data_dir,
           "--trees", str(args.trees), "--kernel", args.kernel, "--again", str(again)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode or not line:
        raise SystemExit(f"{mode} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(line[-1][len("RESULT "):])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--trees", type=int, default=200)
    p.add_argument("--kernel", default="ptk", choices=("ptk", "sst"))
    p.add_argument("--modes", default="one,loop,vmap,jit")
    p.add_argument("--caches", default="cold,warm")
    p.add_argument("--again", type=int, default=3, help="later calls timed (median)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.data_dir, args.trees, args.kernel, args.again)
        return
    print(f"{args.kernel.upper()} on {args.trees} TREC trees, lam grid {LAMS}, float64")
    print(f"{'cache':5s} {'mode':5s} {'first s':>8s} {'later s':>8s} {'programs':>8s}  warnings")
    sums = {}
    for cache in args.caches.split(","):
        for mode in args.modes.split(","):
            with tempfile.TemporaryDirectory(prefix="jkern-grid-") as tmp:
                where = os.path.join(tmp, "xla")
                if cache == "warm":
                    run(mode, args, where, 0)  # fills the cache, unmeasured
                r = run(mode, args, where, args.again)
            sums[mode] = r["sum"]
            print(f"{cache:5s} {mode:5s} {r['first_s']:8.2f} {r['later_s']:8.3f} "
                  f"{r['programs']:8d}  {'; '.join(r['warnings'])[:200] or '-'}", flush=True)
    if "loop" in sums:
        print("grid sums relative to the loop's: "
              + ", ".join(f"{m} {abs(s - sums['loop']) / abs(sums['loop']):.1e}"
                          for m, s in sums.items() if m != "loop"))


if __name__ == "__main__":
    main()
