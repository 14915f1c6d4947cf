"""Benchmark: Grave (2014)'s relaxation solved by jkern.ds (dual FISTA) vs cvxpy (CLARABEL, SCS).

Instances (seeded, the issue's shape): N mentions, d = 1,000 sparse features (20 per mention,
values 1/sqrt(20): rows of norm 1), K = 10 relations, N/3 entity pairs (each with at least one
mention), about 30% of the pairs holding one or two KB relations; a relation's mentions draw a
third of their features from a small set that signals it (so the problem is not pure noise).
lam = mu = 1.

Each solve runs in a fresh process, as a user's would: wall, CPU seconds (user + sys) and peak
RSS of the whole process come from wait4 (imports, compilation and building the problem
included); the solve's own seconds are printed beside them. jkern solves to a relative
duality gap of --tol (default 1e-6, float64): its primal objective is within that of the
optimum. A cvxpy objective within 1e-6 (relative) of jkern's "reaches" it: the two solvers
then agree to the accuracy issue 20 asks for, and the line printed per size names the
fastest cvxpy solver that does, with its time over jkern's. cvxpy gets
the primal in its ridge form, min over (Y, W, xi) of (||Y - X W||^2 + lam ||W||^2) / (2 lam) +
mu sum xi (sparse X, no N x N matrix: the cheapest form to give it); `--cvxpy-form quad` gives
it 1/2 ||L^-1 Y||^2 with Q = L L^T instead (the formulation as written, dense N x N). A cvxpy
run past --timeout is stopped and reported unfinished, with its peak memory so far.

Ratios: cvxpy's process wall (and CPU) seconds over jkern's, median of the repeats (jkern
--repeats, cvxpy --cvxpy-repeats: an interior-point solve at N = 10,000 is long).

    python experiments/bench_ds.py [--sizes 500,2000,10000]
        [--solvers jkern,cvxpy-clarabel,cvxpy-scs] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import (
    DS_FEATURES,
    DS_PER_ROW,
    DS_RELATIONS,
    ds_instance,
    parse_args,
    parser,
    pyplot,
    run_measured,
    write_result,
)

SOLVERS = ("jkern", "jkern-hybrid", "jkern-bcd", "cvxpy-clarabel", "cvxpy-scs")
def worker(solver: str, path: str, tol: float, form: str, again: bool) -> None:
    """One measured process: loads the instance, solves it, prints one RESULT line."""
    data = np.load(path)
    n = len(data["mention_pair"])
    rows = np.repeat(np.arange(n), DS_PER_ROW)
    vals = np.full(n * DS_PER_ROW, 1.0 / np.sqrt(DS_PER_ROW))
    out: dict = {}
    if solver.startswith("jkern"):
        import jax

        jax.config.update("jax_enable_x64", True)
        import jkern
        from jkern import ds

        t0 = time.perf_counter()
        x = jkern.SparseRows.from_coo(rows, data["cols"].ravel(), vals, (n, DS_FEATURES))
        method = {"jkern": "fista", "jkern-hybrid": "hybrid", "jkern-bcd": "bcd"}[solver]
        max_iter = 1_000 if method == "hybrid" else 1_000_000  # cycles, or steps / sweeps
        sol = ds.fit(x, data["mention_pair"], data["relations"], lam=1.0, mu=1.0, tol=tol,
                     method=method, max_iter=max_iter, dtype="float64", key=None)
        objective = float(sol.stats["primal"])
        out["solve_s"] = time.perf_counter() - t0
        out.update(objective=objective, dual=float(sol.stats["dual"]),
                   gap=float(sol.stats["gap"]), iterations=int(sol.stats["n_iter"]),
                   status=jkern.RESULTS.message(int(sol.result)))
        if again:  # the same solve in this process: compiled, the iterations alone
            t0 = time.perf_counter()
            again_sol = ds.fit(x, data["mention_pair"], data["relations"], lam=1.0, mu=1.0,
                               tol=tol, method=method, max_iter=max_iter, dtype="float64", key=None)
            float(again_sol.stats["primal"])
            out["again_s"] = time.perf_counter() - t0
    else:
        import cvxpy as cp
        import scipy.sparse as sp

        t0 = time.perf_counter()
        x = sp.csr_matrix((vals, (rows, data["cols"].ravel())), shape=(n, DS_FEATURES))
        mp, rel = data["mention_pair"], data["relations"]
        p, c = rel.shape[0], DS_RELATIONS + 1
        incidence = sp.csr_matrix((np.ones(n), (mp, np.arange(n))), shape=(p, n))
        sign = np.zeros((p, c))
        sign[:, 1:] = np.where(rel, 1.0, -1.0)
        bound = np.zeros((p, c))
        bound[:, 1:] = np.where(rel, 1.0, 0.0)
        y = cp.Variable((n, c))
        xi = cp.Variable((p, c), nonneg=True)
        if form == "ridge":
            w = cp.Variable((DS_FEATURES, c))
            objective = (cp.sum_squares(y - x @ w) + cp.sum_squares(w)) / 2 + cp.sum(xi)
        else:
            q = (x @ x.T).toarray() + np.eye(n)
            l_inv = np.linalg.solve(np.linalg.cholesky(q), np.eye(n))
            objective = 0.5 * cp.sum_squares(l_inv @ y) + cp.sum(xi)
        problem = cp.Problem(cp.Minimize(objective), [
            y >= 0, cp.sum(y, axis=1) == 1, cp.multiply(sign, incidence @ y) >= bound - xi])
        problem.solve(solver=solver.removeprefix("cvxpy-").upper())
        out.update(solve_s=time.perf_counter() - t0, objective=float(problem.value),
                   status=str(problem.status))
    print("RESULT " + json.dumps(out), flush=True)


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--sizes", default="500,2000,10000", help="mention counts N")
    ap.add_argument("--solvers", default="jkern,cvxpy-clarabel,cvxpy-scs",
                    help=f"of {', '.join(SOLVERS)} (jkern: FISTA, jkern-hybrid: the primal "
                         "phase and bcd in cycles, jkern-bcd: block coordinate ascent; the "
                         "ratios are to jkern's)")
    ap.add_argument("--repeats", type=int, default=3, help="jkern runs per size (median)")
    ap.add_argument("--cvxpy-repeats", type=int, default=1, help="cvxpy runs per size")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per cvxpy run")
    ap.add_argument("--tol", type=float, default=1e-6, help="jkern's relative duality gap")
    ap.add_argument("--cvxpy-form", choices=("ridge", "quad"), default="ridge")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one measured solve
    ap.add_argument("--instance", help=argparse.SUPPRESS)
    ap.add_argument("--again", action="store_true", help=argparse.SUPPRESS)
    args = parse_args(ap, argv, "bench_ds", smoke={"sizes": "300", "repeats": 1,
                                                  "solvers": "jkern,cvxpy-scs"})
    if args.worker:
        worker(args.worker, args.instance, args.tol, args.cvxpy_form, args.again)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    solvers = [s for s in args.solvers.split(",") if s]
    unknown = set(solvers) - set(SOLVERS)
    if unknown:
        ap.error(f"unknown solvers {sorted(unknown)}; choose from {SOLVERS}")
    scratch = Path(tempfile.mkdtemp(prefix="jkern-bench-ds-"))
    rows = []
    for n in sizes:
        path = scratch / f"instance_{n}.npz"
        np.savez(path, **ds_instance(n))
        by_solver = {}
        for solver in solvers:
            repeats = args.repeats if solver.startswith("jkern") else args.cvxpy_repeats
            runs = []
            for r in range(repeats):
                cmd = [sys.executable, __file__, "--worker", solver, "--instance", str(path),
                       "--tol", str(args.tol), "--cvxpy-form", args.cvxpy_form,
                       "--out-dir", str(scratch)]
                if solver.startswith("jkern") and r == 0:
                    cmd.append("--again")
                figures, result = run_measured(cmd, args.timeout)
                runs.append({**figures, **(result or {"status": "unfinished"})})
                print(f"  N={n} {solver} run {r + 1}: {json.dumps(runs[-1])}", flush=True)
                if result is None:
                    break  # a stopped run is not repeated
            row = summarize(solver, n, runs)
            by_solver[solver] = row
            rows.append(row)
        compare(by_solver)
        for solver in solvers:
            print_row(by_solver[solver])
        reaching = [r for r in by_solver.values()
                    if r.get("reaches") and r["solver"].startswith("cvxpy")]
        if reaching:
            best = min(reaching, key=lambda r: r["wall_s"])
            print(f"N={n:>6}  fastest cvxpy solver reaching jkern's objective: "
                  f"{best['solver']}, wall x{best['wall_ratio']:.1f}, CPU x{best['cpu_ratio']:.1f}"
                  f", solve x{best['solve_s'] / by_solver['jkern']['solve_s']:.1f}", flush=True)
    out = write_result(args.out_dir, "bench_ds", rows, argv,
                       settings={"features": DS_FEATURES, "per_row": DS_PER_ROW,
                                 "relations": DS_RELATIONS, "lam": 1.0, "mu": 1.0,
                                 "tol": args.tol, "cvxpy_form": args.cvxpy_form,
                                 "timeout_s": args.timeout})
    plot(rows, out.with_suffix(".png"))
    print(f"\nwrote {out}")
    return 0


def summarize(solver: str, n: int, runs: list[dict]) -> dict:
    done = [r for r in runs if "objective" in r]
    row = {"solver": solver, "n_mentions": n, "repeats": len(runs), "runs": runs,
           "finished": bool(done)}
    pick = done or runs
    for key in ("wall_s", "cpu_s", "peak_mb", "solve_s"):
        vals = [r[key] for r in pick if r.get(key) is not None]
        if vals:
            row[key] = statistics.median(vals)
    row["seconds"] = row["wall_s"]
    row["peak_mb"] = row.get("peak_mb")
    if done:
        row["objective"] = done[0]["objective"]
        row["status"] = done[0]["status"]
        for key in ("iterations", "gap", "again_s"):
            if key in done[0]:
                row[key] = done[0][key]
    return row


def compare(by_solver: dict[str, dict]) -> None:
    """Each cvxpy row: its objective relative to jkern's certified one, whether it reached
    the optimum to 1e-6, and the time ratios to jkern."""
    ref = by_solver.get("jkern")
    if not ref or not ref["finished"]:
        return
    for name, row in by_solver.items():
        if name == "jkern":
            continue
        if row["finished"]:
            rel = (row["objective"] - ref["objective"]) / abs(ref["objective"])
            row["rel_objective"] = rel
            row["reaches"] = abs(rel) <= 1e-6
        row["wall_ratio"] = row["wall_s"] / ref["wall_s"]
        row["cpu_ratio"] = row["cpu_s"] / ref["cpu_s"]
        row["ratio"] = row["wall_ratio"]


def print_row(row: dict) -> None:
    obj = f"{row['objective']:.10g}" if "objective" in row else "unfinished"
    extra = ""
    if "rel_objective" in row:
        reached = "reaches" if row["reaches"] else "misses"
        extra += f"  rel obj {row['rel_objective']:+.1e} ({reached})"
    if "wall_ratio" in row:
        extra += f"  wall x{row['wall_ratio']:.1f}  CPU x{row['cpu_ratio']:.1f} jkern's"
    if "iterations" in row:
        extra += (f"  {row['iterations']} iterations, gap {row['gap']:.1e}, "
                  f"again {row['again_s']:.2f} s")
    print(f"N={row['n_mentions']:>6}  {row['solver']:15s} wall {row['wall_s']:8.2f} s  "
          f"CPU {row['cpu_s']:8.2f} s  solve {row.get('solve_s', float('nan')):8.2f} s  "
          f"peak {row['peak_mb']:7.0f} MB  objective {obj}{extra}", flush=True)


def plot(rows: list[dict], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for solver in SOLVERS:
        pts = [r for r in rows if r["solver"] == solver]
        if not pts:
            continue
        line = ax.plot([r["n_mentions"] for r in pts], [r["wall_s"] for r in pts], "o-",
                       label=solver)[0]
        for r in pts:
            if not r["finished"]:
                ax.annotate("stopped", (r["n_mentions"], r["wall_s"]), fontsize=7,
                            color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("mentions N (d = 1,000 sparse features, K = 10)")
    ax.set_ylabel("process wall seconds (median)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
