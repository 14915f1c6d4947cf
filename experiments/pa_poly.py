"""PA-I with polynomial kernels (issue 21): the kernel-slicing deck's tables and plots.

For each data set (`ud`: UD English EWT head attachment, dev as train, test as test; `conj2`,
`conj3`: synthetic hidden conjunctions, 50,000 / 10,000; `boundary`: the SRL boundary
vectors, first 4,000 / last 1,000) and degree d, every model trains in a fresh process
(C = 1, 10 epochs, file order, opal's step rule and exact arithmetic):

- `pure`: the pure kernel, one example at a time (`jkern.pa.fit(mode="kernel")`);
- `block`: exact blocks of 32 examples (`mode="block"`);
- `splitting`: kernel splitting, N by opal's 32 MiB rule (`mode="splitting"`);
- `slicing`: kernel slicing (`mode="slicing"`);
- `explicit`: linear PA-I on the degree-d conjunction expansion (`mode="explicit"`);
- `linear`: opal's linear mode on the primitive features (degree column "-"; another model);
- `svm`: the batch reference, jkern's DCD (hinge loss, C = --svm-C) on the explicit
  degree-d feature map (sqrt(c_|U|) per conjunction, so its kernel is (1 + s.x)^d).

A row records the fit's wall and CPU seconds (compilation included, from a persistent
cache after the first run), the process's peak RSS (`peak_mb`: data and runtime included)
and its rise during the fit (`fit_mb`), the test accuracy, the support vectors, the
updates, and `same_model`: whether its sequence of updates equals the pure kernel's of the
same run and its test margins equal the pure kernel's to 1e-9 (relative). Kernel models
classify the test set through their expansion (`SupportVectorModel.expanded()`, pecco's
PKE; `expand_seconds` builds it): `classify_us` is its time per example (median of 3, after
a warm-up call); `classify_pure_us` the support-vector sum's on the first 2,000 test rows.

Two sweeps on the synthetic conj-2 set (d = 2), like the deck's plots:

- time vs N (`--n-sweep`, the common features of splitting and slicing);
- time vs the number of training examples (`--size-sweep`, generated sets of that size).

Outputs: `pa_poly.json` (rows with `part` = `table`, `n_sweep`, `size_sweep`), a printed
table, `pa_poly.png` (training seconds per model), `pa_poly_n.png` and `pa_poly_size.png`.

    python experiments/pa_poly.py [--datasets ud,conj2,conj3,boundary] [--degrees 2,3]
        [--models pure,block,splitting,slicing,explicit,linear,svm]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

if __name__ == "__main__" and "--worker" in sys.argv[1:-1]:
    # a worker imports what a user's PA-I script would, and limits its CPUs before JAX
    # starts (`_common` would load every experiment's helpers and build a kernel)
    from _pa_worker import run_worker

    raise SystemExit(run_worker(sys.argv[sys.argv.index("--worker") + 1]))

from _common import (
    PA_DATASETS,
    parse_args,
    parser,
    plot_bars,
    plot_lines,
    run_measured,
    write_result,
)
from _pa_worker import run_worker

MODELS = ("pure", "block", "splitting", "slicing", "explicit", "linear", "svm")
def _same(trace: Path, reference: Path | None) -> bool | None:
    if reference is None or not reference.is_file() or not trace.is_file():
        return None
    a, b = np.load(trace), np.load(reference)
    if "updated" not in a.files:
        return None
    if not np.array_equal(a["updated"], b["updated"]):
        return False
    scale = max(1.0, float(np.abs(b["margins"]).max(initial=0)))
    return bool(np.abs(a["margins"] - b["margins"]).max(initial=0) <= 1e-9 * scale)


def _run(spec: dict, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    figures, result = run_measured(cmd, timeout)
    row = {"dataset": spec["dataset"], "model": spec["model"],
           "degree": None if spec["model"] == "linear" else spec["degree"],
           "process_wall_s": figures["wall_s"], "process_cpu_s": figures["cpu_s"],
           "process_peak_mb": figures["peak_mb"]}
    if result is None:
        row["finished"] = False
        return row
    row.update(result, finished=True)
    return row


def _fmt(v, spec: str) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def print_table(rows: list[dict]) -> None:
    print(f"\n{'data':8s} {'model':9s} {'d':>2s} {'seconds':>8s} {'CPU s':>8s} {'peak MB':>8s} "
          f"{'fit MB':>7s} {'accuracy':>8s} {'SVs':>7s} {'updates':>9s} {'N':>6s} "
          f"{'us/ex':>6s} {'same':>5s}")
    for r in rows:
        same = {True: "yes", False: "NO", None: "-"}[r.get("same_model")]
        if not r.get("finished", True):
            print(f"{r['dataset']:8s} {r['model']:9s} {_fmt(r['degree'], 'd'):>2s}   stopped "
                  f"at {r['process_wall_s']:.0f} s")
            continue
        print(f"{r['dataset']:8s} {r['model']:9s} {_fmt(r['degree'], 'd'):>2s} "
              f"{r['seconds']:8.2f} {r['cpu_seconds']:8.2f} {r['peak_mb']:8.0f} "
              f"{r['fit_mb']:7.0f} {r['accuracy']:8.4f} {_fmt(r.get('support_vectors'), ',d'):>7s} "
              f"{_fmt(r.get('updates'), ',d'):>9s} {_fmt(r.get('n_common'), 'd'):>6s} "
              f"{_fmt(r.get('classify_us'), '.1f'):>6s} {same:>5s}")


def speedups(rows: list[dict]) -> list[dict]:
    """Per (data set, degree): the fastest exact kernel-equivalent mode (same model as the
    pure kernel) and its speed-up over the pure kernel (fit seconds)."""
    out = []
    for (ds, d) in sorted({(r["dataset"], r["degree"]) for r in rows if r["degree"]}):
        group = {r["model"]: r for r in rows if r["dataset"] == ds and r["degree"] == d
                 and r.get("finished", True)}
        pure = group.get("pure")
        exact = [r for m, r in group.items() if m in ("block", "splitting", "slicing",
                                                      "explicit") and r.get("same_model")]
        if pure is None or not exact:
            continue
        best = min(exact, key=lambda r: r["seconds"])
        out.append({"dataset": ds, "degree": d, "fastest": best["model"],
                    "seconds": best["seconds"], "pure_seconds": pure["seconds"],
                    "speedup": pure["seconds"] / best["seconds"],
                    "accuracy": best["accuracy"], "pure_accuracy": pure["accuracy"]})
    return out


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--worker", default=None, help="(internal) run one row: a JSON spec")
    ap.add_argument("--datasets", default=",".join(PA_DATASETS),
                    help=f"comma-separated, among {PA_DATASETS}")
    ap.add_argument("--degrees", default="2,3", help="comma-separated degrees")
    ap.add_argument("--models", default=",".join(MODELS), help=f"among {MODELS}")
    ap.add_argument("--C", type=float, default=1.0, help="PA-I's C")
    ap.add_argument("--epochs", type=int, default=10, help="passes over the training data")
    ap.add_argument("--block", type=int, default=32, help="block size of the block modes")
    ap.add_argument("--svm-C", type=float, default=1.0, help="C of the batch SVM reference")
    ap.add_argument("--svm-degrees", default="2",
                    help="degrees the batch SVM reference runs at (its explicit map holds "
                         "every conjunction of each example: 1,351 per UD row at d = 3)")
    ap.add_argument("--max-train", type=int, default=None,
                    help="keep the first rows of each training set (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="keep the first rows of each test set (default all)")
    ap.add_argument("--n-sweep", default="0,15,63,255,1023,4095",
                    help="N values of the time-vs-N sweep ('' to skip)")
    ap.add_argument("--size-sweep", default="10000,50000,100000,200000,500000",
                    help="training sizes of the time-vs-examples sweep ('' to skip)")
    ap.add_argument("--size-sweep-models", default="pure,block,splitting,slicing",
                    help="models of the time-vs-examples sweep")
    ap.add_argument("--pure-max", type=int, default=100_000,
                    help="the largest size-sweep training set the pure kernel runs on")
    ap.add_argument("--timeout", type=float, default=3600.0,
                    help="seconds a row may run before it is stopped (recorded unfinished)")
    ap.add_argument("--merge", default=None, metavar="JSON[,JSON...]",
                    help="earlier pa_poly.json files whose finished rows this run does not "
                         "produce are kept, the first file's where two have one (run the "
                         "table and the sweeps, or data sets, separately)")
    ap.add_argument("--cache-dir", default=None,
                    help="data cache (the parsed UD task) and the runs' traces (default "
                         "<tmp>/jkern-pa-poly)")
    args = parse_args(ap, argv, "pa_poly", smoke={
        "datasets": "boundary,conj2", "degrees": "2", "max_train": 2000, "max_test": 500,
        "epochs": 2, "n_sweep": "0,15", "size_sweep": "1000,2000"})
    if args.worker is not None:
        return run_worker(args.worker)
    import tempfile

    cache = Path(args.cache_dir or Path(tempfile.gettempdir()) / "jkern-pa-poly")
    traces = cache / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    base = {"data_dir": args.data_dir, "cache_dir": str(cache), "C": args.C,
            "epochs": args.epochs, "block": args.block, "svm_C": args.svm_C,
            "max_train": args.max_train, "max_test": args.max_test}
    models = [m for m in args.models.split(",") if m]
    degrees = [int(d) for d in args.degrees.split(",") if d]
    rows: list[dict] = []
    out = Path(args.out_dir)
    # read now: the result file is rewritten after every row
    earlier = [json.loads(Path(f).read_text()) for f in (args.merge or "").split(",") if f]

    def save() -> Path:
        """The result so far (rewritten after every row: a stopped run keeps its rows)."""
        kept: list[dict] = []
        merged = []
        seen = {_row_key(r) for r in rows}
        for e in earlier:
            mine = [r for r in e["rows"]
                    if _row_key(r) not in seen and r.get("finished", True)]
            seen |= {_row_key(r) for r in mine}
            kept += mine
            merged.append({"command": e["environment"]["command"],
                           "date": e["environment"]["date"], "rows_kept": len(mine),
                           "merged_from": e.get("merged_from")})
        every = kept + rows
        table = [r for r in every if r["part"] == "table"]
        return write_result(out, "pa_poly", every, argv,
                            settings=vars(args) | {"worker": None},
                            merged_from=merged or None,
                            speedups=speedups(table))

    def record(row: dict, part: str) -> None:
        row["part"] = part
        rows.append(row)
        print_table([row])
        save()

    for ds in [d for d in args.datasets.split(",") if d]:
        ran_linear = False
        for d in degrees:
            reference = None
            for m in sorted(models, key=lambda m: m != "pure"):  # the pure kernel first
                if m == "linear":
                    if ran_linear:
                        continue
                    ran_linear = True
                if m == "svm" and str(d) not in args.svm_degrees.split(","):
                    continue
                tag = f"n{args.max_train}-t{args.max_test}-e{args.epochs}-C{args.C:g}"
                trace = traces / f"{ds}-d{d}-{m}-{tag}.npz"
                trace.unlink(missing_ok=True)
                row = _run({**base, "dataset": ds, "model": m, "degree": d,
                            "trace": str(trace)}, args.timeout)
                if m == "pure" and row["finished"]:
                    reference = trace
                if reference is None:  # the pure kernel's trace from an earlier run
                    earlier_pure = traces / f"{ds}-d{d}-pure-{tag}.npz"
                    reference = earlier_pure if earlier_pure.is_file() else None
                if row["finished"] and m not in ("linear", "svm"):
                    row["same_model"] = _same(trace, reference)
                record(row, "table")

    n_values = [int(v) for v in args.n_sweep.split(",") if v]
    for n_common in n_values:
        for m in ("splitting", "slicing"):
            row = _run({**base, "dataset": "conj2", "model": m, "degree": 2,
                        "n_common": n_common}, args.timeout)
            row["n_common_asked"] = n_common
            record(row, "n_sweep")
    sizes = [int(v) for v in args.size_sweep.split(",") if v]
    for size in sizes:
        for m in [m for m in args.size_sweep_models.split(",") if m]:
            if m == "pure" and size > args.pure_max:
                continue
            spec = {**base, "dataset": "conj2", "model": m, "degree": 2, "n_train": size,
                    "n_test": 10_000, "max_train": None}
            row = _run(spec, args.timeout)
            record(row, "size_sweep")

    path = save()
    every = json.loads(path.read_text())["rows"]  # with the merged rows
    table = [r for r in every if r["part"] == "table"]
    print("\nthe table")
    print_table(table)
    for g in speedups(table):
        print(f"{g['dataset']} d={g['degree']}: fastest exact mode {g['fastest']} "
              f"{g['seconds']:.2f} s, pure kernel {g['pure_seconds']:.2f} s: "
              f"x{g['speedup']:.1f} (accuracy {g['accuracy']:.4f} vs {g['pure_accuracy']:.4f})")
    _plots(out, every)
    print(f"\nwrote {path}")
    return 0


def _row_key(r: dict) -> tuple:
    return (r["part"], r["dataset"], r["model"], r["degree"], r.get("n_common_asked"),
            r.get("n_train"))


def _plots(out: Path, rows: list[dict]) -> None:
    done = [r for r in rows if r.get("finished")]
    table = [r for r in done if r["part"] == "table"]
    groups = sorted({(r["dataset"], r["degree"]) for r in table if r["degree"]},
                    key=lambda g: (g[0], g[1]))
    names = [m for m in MODELS if any(r["model"] == m for r in table)]
    series = {m: [next((r["seconds"] for r in table if r["model"] == m
                        and r["dataset"] == ds and (r["degree"] == d or m == "linear")),
                       float("nan")) for ds, d in groups] for m in names}
    if groups:
        plot_bars(out / "pa_poly.png", [f"{ds} d={d}" for ds, d in groups], series,
                  ylabel="training seconds (fit, 10 epochs)", yscale="log",
                  title="PA-I with a polynomial kernel: training time")
    sweep = [r for r in done if r["part"] == "n_sweep"]
    if sweep:
        plot_lines(out / "pa_poly_n.png",
                   {m: ([r["n_common"] for r in sweep if r["model"] == m],
                        [r["seconds"] for r in sweep if r["model"] == m])
                    for m in ("splitting", "slicing")},
                   xlabel="N (common features with explicit conjunction weights)",
                   ylabel="training seconds", xscale="symlog",
                   title="conj-2, d = 2: time vs N")
    size = [r for r in done if r["part"] == "size_sweep"]
    if size:
        plot_lines(out / "pa_poly_size.png",
                   {m: ([r["n_train"] for r in size if r["model"] == m],
                        [r["seconds"] for r in size if r["model"] == m])
                    for m in sorted({r["model"] for r in size})},
                   xlabel="training examples", ylabel="training seconds",
                   title="conj-2, d = 2: time vs examples")


if __name__ == "__main__":
    raise SystemExit(main())
