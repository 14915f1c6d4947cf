"""Benchmark: jkern.pa (PA-I with a polynomial kernel) side by side with opal and pecco.

Per data set (`conj2`, `ud`, `boundary`; see `pa_poly.py`) and degree, in fresh processes
(C = 1, 10 epochs, file order, no averaging; --repeats runs each, medians reported):

- opal (a local build, `--opal PATH`; `--opal-polyk PATH` for its pure kernel, which opal
  compiles in with -DUSE_POLYK): linear, pure kernel, kernel splitting (auto N, 32 MiB) and
  kernel slicing (`-k`), on LIBSVM files written from the same data (`write_sparse`, ids
  from 1); accuracy and support vectors from its output, process CPU seconds, wall seconds
  and peak RSS from wait4;
- jkern (`pa_poly.py --worker`, the same data in memory): linear, pure kernel, block,
  splitting, slicing and explicit; the fit's own seconds (compilation included, from a
  persistent cache after the first run) and the process's figures (Python, JAX and
  loading the data included); with --jkern-cpus N each jkern process runs on N CPUs
  (`jkern.limit_cpus`, which `jkern pa train --cpus` calls);
- pecco (`--pecco PATH`): the split model opal saves, classified with PKE (`-t 1`); its
  `classify` time per example beside jkern's `ExpandedModel`'s.

The ratio line per (data set, degree) sets jkern's fastest exact mode against opal's fastest
mode: process CPU over process CPU (both whole programs), and jkern's fit CPU over opal's
process CPU (opal's includes reading its files, well under a second). Without --opal, the
recorded figures of issue 21 (opal on this machine kind, 2026-11-23, under load) stand in.

    python experiments/bench_pa.py [--opal /work/opal-build/bin/opal
        --opal-polyk /work/opal-build/bin/opal-polyk --pecco /work/opal-build/bin/pecco]
        [--datasets conj2,ud,boundary] [--degrees 2,3] [--repeats 3] [--jkern-repeats R]
        [--degree-modes 3:slicing] [--classify-mode slicing]
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

from _common import (
    pa_dataset,
    parse_args,
    parser,
    plot_bars,
    run_measured,
    run_process,
    write_result,
)

JKERN_MODES = ("linear", "pure", "block", "splitting", "slicing", "explicit")
EXACT = ("block", "splitting", "slicing", "explicit")
OPAL_MODES = ("linear", "pure", "splitting", "slicing")

# issue 21's table: (data set, mode, degree) -> (CPU s, RSS MB, accuracy, support vectors)
RECORDED = {
    ("conj2", "linear", None): (0.06, 15, 0.659, None),
    ("conj2", "pure", 2): (62.2, 16, 0.801, 23439),
    ("conj2", "splitting", 2): (11.7, 51, 0.799, 23283),
    ("conj2", "slicing", 2): (7.0, 85, 0.797, 23383),
    ("conj2", "pure", 3): (49.7, 15, 0.805, 20478),
    ("conj2", "splitting", 3): (53.7, 58, 0.805, 20453),
    ("conj2", "slicing", 3): (12.6, 87, 0.804, 20478),
    ("ud", "linear", None): (0.14, 22, 0.863, None),
    ("ud", "pure", 2): (211.5, 28, 0.954, 24219),
    ("ud", "splitting", 2): (4.7, 54, 0.955, 24213),
    ("ud", "slicing", 2): (9.8, 111, 0.956, 24306),
    ("ud", "pure", 3): (159.5, 27, 0.962, 18826),
    ("ud", "splitting", 3): (21.3, 65, 0.962, 18818),  # N = 1023
    ("ud", "slicing", 3): (21.1, 126, 0.963, 18846),
}
PECCO_RECORDED_US = {"ud": 6.7}  # split model, µs per example


def opal_command(args, mode: str, degree: int, train: Path, test: Path,
                 model: str = "-") -> list[str] | None:
    common = ["-c", str(args.C), "-i", str(args.epochs)]
    if mode == "linear":
        return [args.opal, "-t", "0", *common, str(train), model, str(test)]
    if mode == "pure":
        if not args.opal_polyk:
            return None
        return [args.opal_polyk, "-t", "1", "-d", str(degree), *common, str(train), model,
                str(test)]
    extra = ["-k"] if mode == "slicing" else []
    return [args.opal, "-t", "1", "-d", str(degree), *common, *extra, str(train), model,
            str(test)]


def run_jkern(args, poly: str, cache: Path, dataset: str, mode: str, degree: int, *,
              classify_timing: bool = True) -> tuple[dict, dict | None]:
    """One jkern fit in a fresh process (`pa_poly.py --worker`): wait4's figures and the
    worker's row (None when it failed or ran past --timeout). `classify_timing`: also time
    the expanded model's classification of the test set."""
    spec = {"dataset": dataset, "model": mode, "degree": degree, "data_dir": args.data_dir,
            "cache_dir": str(cache), "C": args.C, "epochs": args.epochs, "block": 32,
            "svm_C": 1.0, "max_train": args.max_train, "max_test": args.max_test,
            "classify_timing": classify_timing, "pure_timing": False,
            "cpus": args.jkern_cpus or None}
    return run_measured([sys.executable, poly, "--worker", json.dumps(spec)], args.timeout)


def parse_opal(text: str) -> dict:
    """Accuracy and support vectors from opal's (or pecco's) stderr."""
    out: dict = {}
    acc = re.findall(r"acc\. ([0-9.]+)", text)
    if acc:
        out["accuracy"] = float(acc[-1])
    sv = re.findall(r"#SV=(\d+)", text.replace("\r", "\n"))
    if sv:
        out["support_vectors"] = int(sv[-1])
    cls = re.findall(r"classify\s*:\s*([0-9.]+) ms\./(?:trial|classify)", text)
    if cls:
        out["classify_us"] = 1000 * float(cls[-1])
    return out


def median_of(runs: list[dict], key: str):
    values = [r[key] for r in runs if r.get(key) is not None]
    if not values:
        return None
    if all(isinstance(v, int) for v in values):  # counts: one of the runs' values
        return statistics.median_low(values)
    return statistics.median(values)


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--opal", default=None, help="opal's binary (linear, splitting, slicing)")
    ap.add_argument("--opal-polyk", default=None,
                    help="opal built with -DUSE_POLYK (its pure kernel)")
    ap.add_argument("--pecco", default=None, help="pecco's binary (fast classification)")
    ap.add_argument("--datasets", default="conj2,ud,boundary", help="comma-separated")
    ap.add_argument("--degrees", default="2,3", help="comma-separated degrees")
    ap.add_argument("--jkern-modes", default=",".join(JKERN_MODES),
                    help=f"among {JKERN_MODES}")
    ap.add_argument("--opal-modes", default=",".join(OPAL_MODES), help=f"among {OPAL_MODES}")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each; medians reported")
    ap.add_argument("--jkern-repeats", type=int, default=None,
                    help="runs of each jkern mode (default --repeats)")
    ap.add_argument("--degree-modes", default="",
                    help="jkern modes per degree, overriding --jkern-modes there, e.g. "
                         "'3:slicing' (at d = 3 only the mode known fastest)")
    ap.add_argument("--classify-mode", default="slicing",
                    help="the jkern kernel mode whose model is expanded and timed beside pecco")
    ap.add_argument("--pure-repeats", type=int, default=1,
                    help="runs of the pure kernels (long)")
    ap.add_argument("--C", type=float, default=1.0, help="PA-I's C")
    ap.add_argument("--epochs", type=int, default=10, help="passes over the training data")
    ap.add_argument("--max-train", type=int, default=None, help="first training rows kept")
    ap.add_argument("--max-test", type=int, default=None, help="first test rows kept")
    ap.add_argument("--jkern-cpus", type=int, default=0,
                    help="run each jkern process on this many CPUs (`jkern.limit_cpus`, as "
                         "`jkern pa train --cpus`); 0 (default): all it may use. opal and "
                         "pecco use one")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--cache-dir", default=None,
                    help="data files for opal and the parsed UD task (default "
                         "<tmp>/jkern-pa-poly)")
    args = parse_args(ap, argv, "bench_pa", smoke={
        "datasets": "boundary", "degrees": "2", "repeats": 1, "max_train": 1000,
        "max_test": 300})
    from jkern.pa import write_sparse

    # jkern's and the worker's bytecode compiled before the runs, as a regular install
    # (pip) compiles it: with PYTHONDONTWRITEBYTECODE set (as on this project's machines)
    # an editable checkout otherwise compiles its modules again in every process (up to ~0.15 s)
    here = Path(__file__).resolve().parent
    import compileall

    compileall.compile_dir(here.parent / "jkern", quiet=1)
    for name in ("_pa_worker.py", "_pa_data.py"):
        compileall.compile_file(here / name, quiet=1)
    cache = Path(args.cache_dir or Path(tempfile.gettempdir()) / "jkern-pa-poly")
    files = cache / "opal_files"
    files.mkdir(parents=True, exist_ok=True)
    poly = str(Path(__file__).resolve().parent / "pa_poly.py")
    rows: list[dict] = []
    ratios: list[dict] = []
    degrees = [int(d) for d in args.degrees.split(",") if d]
    jmodes = [m for m in args.jkern_modes.split(",") if m]
    omodes = [m for m in args.opal_modes.split(",") if m] if args.opal else []

    out = Path(args.out_dir)

    def save() -> Path:
        """The result so far (rewritten after every row: a stopped run keeps its rows)."""
        return write_result(out, "bench_pa", rows, argv, ratios=ratios,
                            settings={k: v for k, v in vars(args).items()})

    for ds in [d for d in args.datasets.split(",") if d]:
        train, test = pa_dataset(ds, args.data_dir, cache, max_train=args.max_train,
                                 max_test=args.max_test)
        tag = f"{ds}_{args.max_train or 'all'}_{args.max_test or 'all'}"
        paths = files / f"{tag}_train.svm", files / f"{tag}_test.svm"
        for p, ex in zip(paths, (train, test)):
            if not p.is_file():
                write_sparse(p, ex)
        print(f"\n== {ds}: {len(train.labels):,} train / {len(test.labels):,} test", flush=True)
        for d in [None, *degrees]:
            group: list[dict] = []
            per_degree = dict(item.split(":") for item in args.degree_modes.split(",") if item)
            jmodes_d = per_degree[str(d)].split("+") if str(d) in per_degree else jmodes
            for system, modes in (("opal", omodes), ("jkern", jmodes_d)):
                for mode in modes:
                    if (mode == "linear") != (d is None):
                        continue
                    repeats = (args.pure_repeats if mode == "pure" else
                               args.jkern_repeats or args.repeats if system == "jkern" else
                               args.repeats)
                    runs = []
                    for _ in range(repeats):
                        if system == "opal":
                            cmd = opal_command(args, mode, d or 1, *paths)
                            if cmd is None:
                                break
                            fig, _, err, status = run_process(cmd, args.timeout)
                            run = {**fig, **parse_opal(err), "status": status}
                        else:
                            fig, res = run_jkern(args, poly, cache, ds, mode, d or 1,
                                                 classify_timing=False)
                            run = {**fig, **(res or {}), "status": 0 if res else 1}
                        runs.append(run)
                        if not run["finished"] or run["status"]:
                            break
                    if not runs:
                        continue
                    row = {"system": system, "dataset": ds, "model": mode, "degree": d,
                           "runs": len(runs),
                           "finished": all(r["finished"] and not r["status"] for r in runs)}
                    for key in ("cpu_s", "wall_s", "peak_mb", "seconds", "cpu_seconds",
                                "accuracy", "support_vectors", "updates", "classify_us",
                                "n_common"):
                        row[key] = median_of(runs, key)
                    rows.append(row)
                    group.append(row)
                    _print_row(row)
                    save()
            if d is not None:
                ratios.extend(_ratios(ds, d, group, args.opal is not None))
        if args.pecco and args.opal:
            rows.extend(_pecco(args, ds, degrees, paths, files / tag, poly))

    print("\nratios (jkern's fastest exact mode / opal's fastest mode; < 1: jkern faster)")
    for r in ratios:
        print(f"{r['dataset']} d={r['degree']}: jkern {r['jkern_mode']} fit CPU "
              f"{r['jkern_fit_cpu_s']:.2f} s, process CPU {r['jkern_process_cpu_s']:.2f} s; "
              f"opal {r['opal_mode']} CPU {r['opal_cpu_s']:.2f} s ({r['opal_source']}): "
              f"fit x{r['fit_ratio']:.2f}, process x{r['process_ratio']:.2f}; jkern accuracy "
              f"{r['jkern_accuracy']:.4f}, opal {r['opal_accuracy']:.4f}")
    path = save()
    groups = [f"{r['dataset']} d={r['degree']}" for r in ratios]
    if groups:
        plot_bars(out / "bench_pa.png", groups,
                  {"opal (CPU s)": [r["opal_cpu_s"] for r in ratios],
                   "jkern fit (CPU s)": [r["jkern_fit_cpu_s"] for r in ratios],
                   "jkern process (CPU s)": [r["jkern_process_cpu_s"] for r in ratios]},
                  ylabel="CPU seconds, fastest exact mode", yscale="log",
                  title="PA-I training: jkern vs opal")
    print(f"\nwrote {path}")
    return 0


def _print_row(r: dict) -> None:
    def f(v, spec):
        return "-" if v is None else format(v, spec)

    print(f"  {r['system']:5s} {r['model']:9s} d={f(r['degree'], 'd')}  "
          f"CPU {f(r['cpu_s'], '.2f')} s"
          f"  wall {f(r['wall_s'], '.2f')} s  fit {f(r.get('seconds'), '.2f')} s "
          f"(CPU {f(r.get('cpu_seconds'), '.2f')})  peak {f(r['peak_mb'], '.0f')} MB  "
          f"acc {f(r.get('accuracy'), '.4f')}  SVs {f(r.get('support_vectors'), ',d')}"
          + ("" if r["finished"] else "  (unfinished)"), flush=True)


def _ratios(ds: str, d: int, group: list[dict], local: bool) -> list[dict]:
    jk = [r for r in group if r["system"] == "jkern" and r["model"] in EXACT and r["finished"]]
    if not jk:
        return []
    best = min(jk, key=lambda r: r["cpu_seconds"])
    if local:
        op = [r for r in group if r["system"] == "opal" and r["model"] != "linear"
              and r["finished"]]
        if not op:
            return []
        o = min(op, key=lambda r: r["cpu_s"])
        opal = (o["model"], o["cpu_s"], o["accuracy"], "local build")
    else:
        rec = [(m, v) for (rd, m, rdeg), v in RECORDED.items() if rd == ds and rdeg == d]
        if not rec:
            return []
        m, v = min(rec, key=lambda mv: mv[1][0])
        opal = (m, v[0], v[2], "recorded, issue 21")
    return [{"dataset": ds, "degree": d, "jkern_mode": best["model"],
             "jkern_fit_cpu_s": best["cpu_seconds"], "jkern_fit_s": best["seconds"],
             "jkern_process_cpu_s": best["cpu_s"], "jkern_accuracy": best["accuracy"],
             "opal_mode": opal[0], "opal_cpu_s": opal[1], "opal_accuracy": opal[2],
             "opal_source": opal[3], "fit_ratio": best["cpu_seconds"] / opal[1],
             "process_ratio": best["cpu_s"] / opal[1]}]


def _pecco(args, ds: str, degrees: list[int], paths, stem: Path, poly: str) -> list[dict]:
    """opal's split model saved, then classified by pecco (PKE, -t 1); beside it jkern's
    `ExpandedModel` of a --classify-mode model."""
    rows = []
    for d in degrees:
        model = f"{stem}.d{d}.opal"
        fig, _, err, status = run_process(opal_command(args, "splitting", d, paths[0], paths[1],
                                                       model) or [], args.timeout)
        if status:
            print(f"  opal could not save a model: {err[-500:]}")
            continue
        runs = []
        for _ in range(args.repeats):
            fig, _, err, status = run_process([args.pecco, "-t", "1", model, str(paths[1])],
                                              args.timeout)
            runs.append({**fig, **parse_opal(err)})
        _, res = run_jkern(args, poly, stem.parent.parent, ds, args.classify_mode, d)
        if res is not None:
            rows.append({"system": "jkern", "dataset": ds, "model": "expanded", "degree": d,
                         "runs": 1, "finished": True, "classify_us": res["classify_us"],
                         "accuracy": res["accuracy"]})
            print(f"  jkern ExpandedModel d={d}: {res['classify_us']:.2f} us/example, accuracy "
                  f"{res['accuracy']:.4f}", flush=True)
        row = {"system": "pecco", "dataset": ds, "model": "pke", "degree": d,
               "runs": len(runs), "finished": True,
               "classify_us": median_of(runs, "classify_us"),
               "accuracy": median_of(runs, "accuracy"), "cpu_s": median_of(runs, "cpu_s"),
               "wall_s": median_of(runs, "wall_s"), "peak_mb": median_of(runs, "peak_mb")}
        print(f"  pecco PKE d={d}: {row['classify_us']} us/example, accuracy {row['accuracy']}",
              flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
