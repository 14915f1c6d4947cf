"""Benchmark: PA-I training time against the number of examples, jkern beside opal (issue 34).

The synthetic conjunctive-concept task (`conj2` / `conj3`: `jkern.pa.conjunctive_concepts`,
key 0, the same data for both tools) at each of --sizes training examples (default up to
500,000), degree --degree, C = 1, 10 epochs, file order. Each point is a fresh process per
tool, --repeats runs, medians:

- opal (`--opal PATH`, a local build; its fastest mode on this task, --opal-mode, default
  kernel splitting with its automatic N) on LIBSVM files written from the same data;
- jkern (`pa_poly.py --worker`, --jkern-mode, default `explicit`): the fit's CPU seconds
  (compilation included; a persistent cache after the first size) and the whole process's
  (Python, JAX and making the data included), and peak RSS.

Prints a table with the ratios (jkern / opal, < 1: jkern faster), writes JSON and a PNG of
CPU seconds against examples (log-log) with one line per tool.

    python experiments/bench_pa_scaling.py --opal /tmp/opal-build/bin/opal
        [--sizes 10000,30000,100000,300000,500000] [--degree 2] [--repeats 3]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from _common import (
    pa_dataset,
    parse_args,
    parser,
    plot_lines,
    run_measured,
    run_process,
    write_result,
)

N_TEST = 5_000  # test examples at every size (accuracy is reported, not timed)


def _median(runs: list[dict], key: str):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def _opal(args, train: Path, test: Path) -> dict:
    from bench_pa import opal_command, parse_opal

    cmd = opal_command(args, args.opal_mode, args.degree, train, test)
    runs = []
    for _ in range(args.repeats):
        fig, _, err, status = run_process(cmd or [], args.timeout)
        runs.append({**fig, **parse_opal(err), "status": status})
        if status or not fig["finished"]:
            break
    ok = all(r["finished"] and not r["status"] for r in runs)
    return {"system": "opal", "model": args.opal_mode, "finished": ok,
            **{k: _median(runs, k) for k in ("cpu_s", "wall_s", "peak_mb", "accuracy")}}


def _jkern(args, poly: str, cache: Path, size: int) -> dict:
    spec = {"dataset": args.dataset, "model": args.jkern_mode, "degree": args.degree,
            "data_dir": args.data_dir, "cache_dir": str(cache), "C": 1.0, "epochs": args.epochs,
            "block": 32, "svm_C": 1.0, "n_train": size, "n_test": N_TEST,
            "classify_timing": False, "pure_timing": False}
    runs = []
    for _ in range(args.repeats):
        fig, res = run_measured([sys.executable, poly, "--worker", json.dumps(spec)],
                                args.timeout)
        runs.append({**fig, **(res or {}), "status": 0 if res else 1})
        if not res:
            break
    ok = all(r["finished"] and not r["status"] for r in runs)
    return {"system": "jkern", "model": args.jkern_mode, "finished": ok,
            **{k: _median(runs, k) for k in ("cpu_s", "wall_s", "peak_mb", "accuracy",
                                             "seconds", "cpu_seconds", "updates")}}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--opal", default=None, help="opal's binary (required but in --smoke)")
    ap.add_argument("--dataset", default="conj2", choices=("conj2", "conj3"))
    ap.add_argument("--sizes", default="10000,30000,100000,300000,500000")
    ap.add_argument("--degree", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--opal-mode", default="splitting", choices=("splitting", "slicing"))
    ap.add_argument("--jkern-mode", default="explicit",
                    choices=("explicit", "splitting", "slicing", "block"))
    ap.add_argument("--repeats", type=int, default=3, help="runs of each point; medians")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--cache-dir", default=None,
                    help="the data files written for opal (default <tmp>/jkern-pa-scaling)")
    args = parse_args(ap, argv, "bench_pa_scaling",
                      smoke={"sizes": "2000,4000", "repeats": 1, "epochs": 2})
    args.C = 1.0  # opal_command reads it
    from jkern.pa import write_sparse

    cache = Path(args.cache_dir or Path(tempfile.gettempdir()) / "jkern-pa-scaling")
    cache.mkdir(parents=True, exist_ok=True)
    poly = str(Path(__file__).resolve().parent / "pa_poly.py")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows: list[dict] = []
    out = Path(args.out_dir)

    def save() -> Path:
        return write_result(out, "bench_pa_scaling", rows, argv,
                            settings={k: v for k, v in vars(args).items()})

    print("examples  system  mode        process CPU s  fit CPU s  peak MB  accuracy",
          flush=True)
    for size in sizes:
        point: dict[str, dict] = {}
        if args.opal:
            train, test = pa_dataset(args.dataset, args.data_dir, None, n_train=size,
                                     n_test=N_TEST)
            paths = (cache / f"{args.dataset}_{size}_train.svm",
                     cache / f"{args.dataset}_{size}_test.svm")
            for p, ex in zip(paths, (train, test), strict=True):
                if not p.is_file():
                    write_sparse(p, ex)
            point["opal"] = _opal(args, *paths)
        point["jkern"] = _jkern(args, poly, cache, size)
        for system, r in point.items():
            r.update(examples=size, degree=args.degree, dataset=args.dataset)
            rows.append(r)

            def f(v, spec):
                return "-" if v is None else format(v, spec)

            print(f"{size:8d}  {system:6s}  {r['model']:10s}  {f(r['cpu_s'], '12.2f')}  "
                  f"{f(r.get('cpu_seconds'), '9.2f')}  {f(r['peak_mb'], '7.0f')}  "
                  f"{f(r.get('accuracy'), '.4f')}" + ("" if r["finished"] else "  (unfinished)"),
                  flush=True)
        if "opal" in point and point["opal"]["cpu_s"] and point["jkern"]["cpu_s"]:
            o, j = point["opal"], point["jkern"]
            ratio = {"process": j["cpu_s"] / o["cpu_s"],
                     "fit": (j["cpu_seconds"] or j["cpu_s"]) / o["cpu_s"],
                     "peak_mb_over_opal": (j["peak_mb"] or 0) - (o["peak_mb"] or 0)}
            j["ratio_to_opal"] = ratio
            print(f"          ratio: process x{ratio['process']:.2f}, fit x{ratio['fit']:.2f}, "
                  f"peak RSS {ratio['peak_mb_over_opal']:+.0f} MB", flush=True)
        save()

    series = {}
    for system, key, label in (("opal", "cpu_s", "opal (process CPU s)"),
                               ("jkern", "cpu_s", "jkern (process CPU s)"),
                               ("jkern", "cpu_seconds", "jkern fit (CPU s)")):
        pts = [(r["examples"], r[key]) for r in rows
               if r["system"] == system and r.get(key) is not None]
        if pts:
            series[label] = ([p[0] for p in pts], [p[1] for p in pts])
    plot_lines(out / "bench_pa_scaling.png", series, xlabel="training examples",
               ylabel="CPU seconds (10 epochs)", xscale="log",
               title=f"PA-I training, {args.dataset}, d = {args.degree}")
    print(f"\nwrote {save()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
