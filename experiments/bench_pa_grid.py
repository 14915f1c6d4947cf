"""Benchmark: a grid of C values in one `jax.vmap`ped PA-I fit against the same grid as
separate opal runs (issue 34, "what opal cannot do").

Per data set and degree: opal (`--opal PATH`, a local build; kernel splitting, its default and
fastest mode on UD at d = 2) trains once per C, each in its own process; jkern trains every
C in one process, one call of `jax.vmap(lambda c: jkern.pa.fit(X, y, C=c, ...))` (explicit
mode by default). Reported: the summed CPU seconds of opal's runs against the jkern process's
(start-up, loading and compilation included) and its fit's own, peak RSS, and each C's test
accuracy on both sides (the first `--max-test` test rows for jkern's batched margins; opal
scores the whole test file). Each side's figures are medians over --repeats runs.

    python experiments/bench_pa_grid.py --opal /tmp/opal-build/bin/opal [--datasets ud]
        [--degree 2] [--grid 0.0625,0.125,0.25,0.5,1,2,4,8] [--mode explicit] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    pa_dataset,
    parse_args,
    parser,
    run_measured,
    run_process,
    write_result,
)
from bench_pa import parse_opal


def worker(spec: dict) -> dict:
    """One vmapped grid fit (run in its own process): its figures and each C's accuracy."""
    import resource

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    from jkern.pa import fit, frequency_order

    train, test = pa_dataset(spec["dataset"], spec["data_dir"], spec["cache_dir"],
                             max_train=spec.get("max_train"), max_test=spec.get("max_test"))
    order = frequency_order(train.features)
    Xtr, _ = order.apply(train.features)
    Xte, _ = order.apply(test.features)
    Xtr, Xte = Xtr.astype(jnp.float64), Xte.astype(jnp.float64)
    grid = jnp.asarray(spec["grid"], jnp.float64)
    t0, c0 = time.perf_counter(), time.process_time()
    sols = jax.vmap(lambda c: fit(Xtr, train.labels, C=c, degree=spec["degree"],
                                  epochs=spec["epochs"], mode=spec["mode"], key=None))(grid)
    jax.block_until_ready(sols.model)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    margins = np.asarray(sols.model.decision_function(Xte))  # [m, grid]
    y = np.asarray(test.labels)[:, None]
    accuracy = np.mean(np.where(margins >= 0, 1, -1) == y, axis=0)
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_mb": peak,
            "accuracy": [float(a) for a in accuracy],
            "updates": [int(u) for u in np.asarray(sols.stats["updates"]).sum(axis=-1)],
            "results": [int(r) for r in np.asarray(sols.result).reshape(-1)],
            "n_train": len(train.labels), "n_test": len(test.labels)}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--opal", default=None, help="opal's binary")
    ap.add_argument("--datasets", default="ud", help="comma-separated (pa_poly.py's names)")
    ap.add_argument("--degree", type=int, default=2)
    ap.add_argument("--grid", default="0.0625,0.125,0.25,0.5,1,2,4,8", help="the C values")
    ap.add_argument("--mode", default="explicit", help="jkern's mode (vmappable over C)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-train", type=int, default=None)
    ap.add_argument("--max-test", type=int, default=20_000,
                    help="test rows jkern scores per C (its margins are batched over the grid)")
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--cache-dir", default=None, help="data files (default <tmp>/jkern-pa-poly)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parse_args(ap, argv, "bench_pa_grid", smoke={
        "datasets": "boundary", "repeats": 1, "max_train": 1000, "max_test": 300,
        "grid": "0.5,1,2"})
    if args.worker:
        print("RESULT " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return 0
    from jkern.pa import write_sparse

    cache = Path(args.cache_dir or Path(tempfile.gettempdir()) / "jkern-pa-poly")
    files = cache / "opal_files"
    files.mkdir(parents=True, exist_ok=True)
    grid = [float(c) for c in args.grid.split(",")]
    rows: list[dict] = []
    for ds in [d for d in args.datasets.split(",") if d]:
        train, test = pa_dataset(ds, args.data_dir, cache, max_train=args.max_train)
        tag = f"{ds}_{args.max_train or 'all'}_all"
        paths = files / f"{tag}_train.svm", files / f"{tag}_test.svm"
        for p, ex in zip(paths, (train, test)):
            if not p.is_file():
                write_sparse(p, ex)
        print(f"\n== {ds}: {len(train.labels):,} train, d = {args.degree}, C in {grid}",
              flush=True)
        if args.opal:
            runs = []
            for _ in range(args.repeats):
                total = {"cpu_s": 0.0, "wall_s": 0.0, "peak_mb": 0.0}
                accuracy = []
                for c in grid:
                    cmd = [args.opal, "-t", "1", "-d", str(args.degree), "-c", str(c), "-i",
                           str(args.epochs), str(paths[0]), "-", str(paths[1])]
                    fig, _, err, status = run_process(cmd, args.timeout)
                    if status:
                        raise SystemExit(f"opal failed (status {status}): {err[-500:]}")
                    total["cpu_s"] += fig["cpu_s"]
                    total["wall_s"] += fig["wall_s"]
                    total["peak_mb"] = max(total["peak_mb"], fig["peak_mb"])
                    accuracy.append(parse_opal(err).get("accuracy"))
                runs.append({**total, "accuracy": accuracy})
            row = {"system": "opal", "dataset": ds, "degree": args.degree, "grid": grid,
                   "runs": len(runs), "accuracy": runs[0]["accuracy"],
                   **{k: statistics.median(r[k] for r in runs)
                      for k in ("cpu_s", "wall_s", "peak_mb")}}
            rows.append(row)
            print(f"  opal  {len(grid)} processes: CPU {row['cpu_s']:.2f} s, wall "
                  f"{row['wall_s']:.2f} s, peak {row['peak_mb']:.0f} MB; accuracy "
                  + " ".join(f"{a:.4f}" for a in row["accuracy"]), flush=True)
        spec = {"dataset": ds, "degree": args.degree, "grid": grid, "mode": args.mode,
                "epochs": args.epochs, "data_dir": args.data_dir, "cache_dir": str(cache),
                "max_train": args.max_train, "max_test": args.max_test}
        runs = []
        for _ in range(args.repeats):
            fig, res = run_measured([sys.executable, str(Path(__file__).resolve()),
                                     "--worker", json.dumps(spec)], args.timeout)
            if res is None:
                raise SystemExit("the jkern worker failed (see above)")
            runs.append({**fig, **res})
        row = {"system": "jkern", "dataset": ds, "degree": args.degree, "grid": grid,
               "mode": args.mode, "runs": len(runs), "accuracy": runs[0]["accuracy"],
               "updates": runs[0]["updates"], "results": runs[0]["results"],
               **{k: statistics.median(r[k] for r in runs)
                  for k in ("cpu_s", "wall_s", "peak_mb", "seconds", "cpu_seconds")}}
        rows.append(row)
        print(f"  jkern one vmapped fit ({args.mode}): process CPU {row['cpu_s']:.2f} s, wall "
              f"{row['wall_s']:.2f} s, fit CPU {row['cpu_seconds']:.2f} s, peak "
              f"{row['peak_mb']:.0f} MB; accuracy (first {res['n_test']:,} test rows) "
              + " ".join(f"{a:.4f}" for a in row["accuracy"]), flush=True)
        opal = [r for r in rows if r["system"] == "opal" and r["dataset"] == ds]
        if opal:
            print(f"  ratio (jkern process CPU / opal's {len(grid)} runs' CPU): "
                  f"x{row['cpu_s'] / opal[0]['cpu_s']:.2f}; fit only x"
                  f"{row['cpu_seconds'] / opal[0]['cpu_s']:.2f}", flush=True)
    path = write_result(args.out_dir, "bench_pa_grid", rows, argv,
                        settings={k: v for k, v in vars(args).items() if k != "worker"})
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
