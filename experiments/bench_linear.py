"""Benchmark: jkern's linear SVM (dual coordinate descent, jit-compiled) vs scikit-learn's
LinearSVC(dual=True) (LIBLINEAR), one fit and an 8-value C grid.

Problems:
  A. synthetic, dense: n x d (default 20,000 x 1,000) standard Gaussian features scaled by
     1/sqrt(d) (rows of norm ~1), labels sign(x.w* + 0.3 noise) of a Gaussian teacher w* with 5%
     of them flipped; a held-out set of 5,000 rows from the same teacher. Seeded.
  B. `--features PATH.npz` with arrays `X`, `y` (and optionally `X_test`, `y_test`): two labels
     train a binary model (the larger label is +1, as LinearSVC), more train one-vs-rest
     (`dcd_ovr` vs LinearSVC's ovr). Skipped with a note when not given.

Per problem and dtype (float64 always; float32 unless --dtypes says otherwise):
  single: dcd at C=1, squared hinge, tol=1e-4, max_iter=1000, bias=1 (the first call, compile
          included, reported separately; then the median of --repeats warm calls) vs LinearSVC
          with the same C, tol, max_iter, intercept_scaling=1 (median of --repeats fits);
  grid8:  C in logspace(-3, 2, 8), jax.vmap over C (one program) vs 8 sequential LinearSVC fits.
Primal objectives (the same function for both sides, on float64 data), their relative
difference, and training / held-out accuracies are printed and written with the timings.

    python experiments/bench_linear.py [--features qc_nystrom.npz] [--out-dir docs/results]
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
from _common import parse_args, parser, pyplot, write_result

from jkern.svm import LinearSVM, dcd, dcd_ovr, primal_objective

C_SINGLE = 1.0
GRID = np.logspace(-3, 2, 8)
TOL = 1e-4
MAX_ITER = 1000
BIAS = 1.0
TARGETS = {"single": 1.0, "grid8": 0.3}  # jkern seconds / LinearSVC seconds
# --smoke: problem A at 1,000 x 50, one timed run of each side
SMOKE = {"n": 1000, "d": 50, "repeats": 1}


def synthetic(n: int, d: int, n_test: int = 5000, seed: int = 0):
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal(d)

    def draw(m):
        X = rng.standard_normal((m, d)) / np.sqrt(d)
        y = np.where(X @ teacher + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
        y[rng.random(m) < 0.05] *= -1
        return X, y

    X, y = draw(n)
    Xt, yt = draw(n_test)
    return X, y, Xt, yt


def load_features(path: Path):
    z = np.load(path, allow_pickle=False)
    X, y = np.asarray(z["X"], np.float64), np.asarray(z["y"])
    Xt = np.asarray(z["X_test"], np.float64) if "X_test" in z else None
    yt = np.asarray(z["y_test"]) if "y_test" in z else None
    classes = np.unique(y)
    if len(classes) == 2:  # binary: the larger label is +1 (LinearSVC's classes_[1])
        y = np.where(y == classes[1], 1.0, -1.0)
        yt = None if yt is None else np.where(yt == classes[1], 1.0, -1.0)
    return X, y, Xt, yt


def median_time(fn, repeats: int):
    runs = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), runs, out


def accuracy(pred, y) -> float:
    return float(np.mean(np.asarray(pred) == np.asarray(y)))


def sk_model(clf, multiclass: bool) -> LinearSVM:
    coef = clf.coef_ if multiclass else clf.coef_[0]
    b = clf.intercept_ if multiclass else clf.intercept_[0]
    classes = tuple(c.item() for c in clf.classes_) if multiclass else None
    return LinearSVM(w=jnp.asarray(coef, jnp.float64), b=jnp.asarray(b, jnp.float64),
                     classes=classes)


def objective(model, X, y, C, multiclass):
    m = LinearSVM(w=jnp.asarray(model.w, jnp.float64), b=jnp.asarray(model.b, jnp.float64),
                  classes=model.classes)
    p = np.asarray(primal_objective(m, X, y, C=C, loss="squared_hinge", bias=BIAS))
    return float(p.sum()) if multiclass else float(p)  # ovr: the sum of the class problems


def fitters(Xj, y, Xt, yt, dtype, multiclass, key, X):
    """jkern's single fit, its vmapped C grid, and the statistics of a model."""
    grid_c = jnp.asarray(GRID, dtype)
    kw = dict(tol=TOL, max_iter=MAX_ITER, bias=BIAS, key=key)
    if multiclass:
        labels = np.asarray(y)

        def fit_one(C):
            return dcd_ovr(Xj, labels, C=C, **kw)

        def fit_grid():
            return jax.vmap(lambda c: dcd_ovr(Xj, labels, C=c, **kw))(grid_c)
    else:
        yj = jnp.asarray(y, dtype)

        def fit_one(C):
            return dcd(Xj, yj, C=C, **kw)

        def fit_grid():
            return jax.vmap(lambda c: dcd(Xj, yj, C=c, **kw))(grid_c)

    def stats(solution, C):  # a jkern.Solution: the model and the solver's record
        model = solution.model
        return {
            "objective": objective(model, X, y, C, multiclass),
            "train_accuracy": accuracy(model.predict(X.astype(dtype)), y),
            "test_accuracy": None if Xt is None else accuracy(model.predict(Xt.astype(dtype)), yt),
            "n_iter": int(np.max(np.asarray(solution.stats["n_iter"]))),
            "converged": bool(np.all(np.asarray(solution.converged))),
        }

    return fit_one, fit_grid, stats


def run_problem(name, X, y, Xt, yt, args, rows):
    from sklearn.svm import LinearSVC

    multiclass = len(np.unique(y)) > 2
    key = jax.random.key(0)
    kind = f"one-vs-rest, {len(np.unique(y))} classes" if multiclass else "binary"
    held = "" if Xt is None else f", held-out {Xt.shape[0]}"
    print(f"\n== {name}: X {X.shape}, {kind}{held}", flush=True)

    def sk_fit(C):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter: recorded below
            return LinearSVC(dual=True, loss="squared_hinge", C=C, tol=TOL, max_iter=MAX_ITER,
                             intercept_scaling=BIAS, random_state=0).fit(X, y)

    def sk_stats(clf, C):
        m = sk_model(clf, multiclass)
        return {
            "objective": objective(m, X, y, C, multiclass),
            "train_accuracy": accuracy(clf.predict(X), y),
            "test_accuracy": None if Xt is None else accuracy(clf.predict(Xt), yt),
            "n_iter": int(np.max(clf.n_iter_)),
        }

    # --- LinearSVC: one fit and the grid --------------------------------------------------------
    sk_single_s, sk_single_runs, clf = median_time(lambda: sk_fit(C_SINGLE), args.repeats)
    sk_single = sk_stats(clf, C_SINGLE)
    rows.append({"model": "LinearSVC", "dataset": name, "task": "single", "dtype": "float64",
                 "C": C_SINGLE, "seconds": round(sk_single_s, 3),
                 "seconds_runs": [round(t, 3) for t in sk_single_runs], **sk_single,
                 "converged": sk_single["n_iter"] < MAX_ITER})
    print(f"LinearSVC single: {sk_single_s:.2f}s (runs {rows[-1]['seconds_runs']}), "
          f"n_iter {sk_single['n_iter']}, objective {sk_single['objective']:.6g}", flush=True)

    def sk_grid():
        return [sk_fit(float(c)) for c in GRID]

    sk_grid_s, sk_grid_runs, clfs = median_time(sk_grid, args.grid_repeats)
    sk_g = [sk_stats(c, float(C)) for c, C in zip(clfs, GRID)]
    rows.append({"model": "LinearSVC", "dataset": name, "task": "grid8", "dtype": "float64",
                 "Cs": [float(c) for c in GRID], "seconds": round(sk_grid_s, 3),
                 "seconds_runs": [round(t, 3) for t in sk_grid_runs],
                 "objectives": [s["objective"] for s in sk_g],
                 "train_accuracy": [s["train_accuracy"] for s in sk_g],
                 "test_accuracy": [s["test_accuracy"] for s in sk_g],
                 "n_iter": [s["n_iter"] for s in sk_g]})
    print(f"LinearSVC grid8 (8 sequential fits): {sk_grid_s:.2f}s "
          f"(runs {rows[-1]['seconds_runs']}), n_iter {rows[-1]['n_iter']}", flush=True)

    # --- jkern, per dtype ----------------------------------------------------------------------
    for dtype in args.dtypes.split(","):
        t0 = time.perf_counter()
        Xj = jax.block_until_ready(jnp.asarray(X, dtype))
        transfer = time.perf_counter() - t0
        fit_one, fit_grid, stats = fitters(Xj, y, Xt, yt, dtype, multiclass, key, X)

        t0 = time.perf_counter()
        jax.block_until_ready(fit_one(C_SINGLE))
        first = time.perf_counter() - t0
        med, runs, model = median_time(lambda f=fit_one: jax.block_until_ready(f(C_SINGLE)),
                                       args.repeats)
        st = stats(model, C_SINGLE)
        rel = (st["objective"] - sk_single["objective"]) / abs(sk_single["objective"])
        rows.append({"model": "DCD", "dataset": name, "task": "single", "dtype": dtype,
                     "C": C_SINGLE, "seconds": round(med, 3),
                     "seconds_runs": [round(t, 3) for t in runs],
                     "seconds_first_run_with_compile": round(first, 3),
                     "seconds_host_to_device": round(transfer, 3),
                     "ratio": round(med / sk_single_s, 3), "target_ratio": TARGETS["single"],
                     "objective_rel_diff": rel, **st})
        print(f"DCD {dtype} single: {med:.2f}s (runs {rows[-1]['seconds_runs']}; first call "
              f"{first:.2f}s incl. compile) ratio {med / sk_single_s:.3f} | n_iter {st['n_iter']}"
              f" | objective rel diff {rel:+.2e}", flush=True)

        t0 = time.perf_counter()
        jax.block_until_ready(fit_grid())
        first = time.perf_counter() - t0
        med, runs, grid = median_time(lambda f=fit_grid: jax.block_until_ready(f()),
                                      args.grid_repeats)
        per_c = [stats(jax.tree_util.tree_map(lambda a, j=j: a[j], grid), float(C))
                 for j, C in enumerate(GRID)]
        rels = [(s["objective"] - k["objective"]) / abs(k["objective"])
                for s, k in zip(per_c, sk_g)]
        rows.append({"model": "DCD", "dataset": name, "task": "grid8", "dtype": dtype,
                     "Cs": [float(c) for c in GRID], "seconds": round(med, 3),
                     "seconds_runs": [round(t, 3) for t in runs],
                     "seconds_first_run_with_compile": round(first, 3),
                     "ratio": round(med / sk_grid_s, 3), "target_ratio": TARGETS["grid8"],
                     "objectives": [s["objective"] for s in per_c],
                     "objective_rel_diff": rels,
                     "objective_rel_diff_max_abs": max(abs(r) for r in rels),
                     "train_accuracy": [s["train_accuracy"] for s in per_c],
                     "test_accuracy": [s["test_accuracy"] for s in per_c],
                     "n_iter": [s["n_iter"] for s in per_c],
                     "converged": [s["converged"] for s in per_c]})
        print(f"DCD {dtype} grid8 (vmap, one program): {med:.2f}s (runs "
              f"{rows[-1]['seconds_runs']}; first call {first:.2f}s incl. compile) ratio "
              f"{med / sk_grid_s:.3f} | n_iter {rows[-1]['n_iter']} | max |objective rel diff| "
              f"{rows[-1]['objective_rel_diff_max_abs']:.2e}", flush=True)


def print_table(rows):
    print("\n" + "-" * 118)
    print(f"{'dataset':<24}{'task':<8}{'model':<11}{'dtype':<9}{'seconds':>9}{'first':>9}"
          f"{'ratio':>8}{'obj rel diff':>14}{'train acc':>12}{'test acc':>12}")
    for r in rows:
        def acc(v):
            if v is None:
                return "-"
            if isinstance(v, list):
                v = [a for a in v if a is not None]
                return f"{min(v):.3f}-{max(v):.3f}" if v else "-"
            return f"{v:.4f}"

        rel = r.get("objective_rel_diff")
        if isinstance(rel, list):
            rel = r["objective_rel_diff_max_abs"]
            rel_s = f"|max| {rel:.1e}"
        else:
            rel_s = "-" if rel is None else f"{rel:+.1e}"
        first = r.get("seconds_first_run_with_compile")
        print(f"{r['dataset']:<24}{r['task']:<8}{r['model']:<11}{r['dtype']:<9}"
              f"{r['seconds']:>9.2f}{'-' if first is None else f'{first:.2f}':>9}"
              f"{'-' if 'ratio' not in r else format(r['ratio'], '.3f'):>8}{rel_s:>14}"
              f"{acc(r['train_accuracy']):>12}{acc(r['test_accuracy']):>12}")
    print("-" * 118)
    print("ratio = DCD median seconds / LinearSVC median seconds (targets: single <= "
          f"{TARGETS['single']}, grid8 <= {TARGETS['grid8']}); grid accuracies are min-max over C")


def main(argv=None) -> int:
    ap = parser(__doc__, data_help="shared data folder (unused by problem A; kept for the "
                                   "common CLI)")
    ap.add_argument("--repeats", type=int, default=3, help="warm runs per single fit")
    ap.add_argument("--grid-repeats", type=int, default=None,
                    help="runs of each C grid (default: --repeats)")
    ap.add_argument("--features", default=None, help="problem B: an .npz with X, y")
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=1_000)
    ap.add_argument("--dtypes", default="float64,float32")
    args = parse_args(ap, argv, "bench_linear", SMOKE)
    if args.grid_repeats is None:
        args.grid_repeats = args.repeats
    from sklearn import __version__ as sklearn_version

    rows: list[dict] = []
    X, y, Xt, yt = synthetic(args.n, args.d)
    run_problem(f"synthetic-{args.n}x{args.d}", X, y, Xt, yt, args, rows)
    if args.features:
        X, y, Xt, yt = load_features(Path(args.features))
        run_problem(Path(args.features).stem, X, y, Xt, yt, args, rows)
    else:
        print("\n(problem B skipped: no --features PATH.npz given)")
    print_table(rows)

    out_dir = write_result(
        args.out_dir, "bench_linear", rows, argv,
        environment_extra={"sklearn": sklearn_version},
        settings={"C_single": C_SINGLE, "Cs": [float(c) for c in GRID], "tol": TOL,
                  "max_iter": MAX_ITER, "bias": BIAS, "loss": "squared_hinge"},
    ).parent
    print(f"wrote {out_dir / 'bench_linear.json'}")
    plt = pyplot()
    if plt is None:
        return 0
    groups = sorted({(r["dataset"], r["task"]) for r in rows}, key=lambda g: (g[0], g[1]))
    series = [("LinearSVC", "float64")] + [("DCD", dt) for dt in args.dtypes.split(",")]
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(groups), 3.2))
    x = np.arange(len(groups))
    width = 0.8 / len(series)
    for k, (model, dt) in enumerate(series):
        vals = [next((r["seconds"] for r in rows if (r["dataset"], r["task"]) == g
                      and r["model"] == model and r["dtype"] == dt), np.nan) for g in groups]
        label = "LinearSVC (LIBLINEAR)" if model == "LinearSVC" else f"jkern DCD {dt}"
        ax.bar(x + (k - (len(series) - 1) / 2) * width, vals, width, label=label)
    ax.set_xticks(x, [f"{d}\n{t}" for d, t in groups], fontsize=7)
    ax.set_ylabel("seconds (median)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "bench_linear.png", dpi=120)
    print(f"wrote {out_dir / 'bench_linear.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
