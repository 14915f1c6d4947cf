"""DAG-compacted cutting-plane training (Tables 1-2 of Severyn & Moschitti, MLJ 2012).

For each corpus, kernel and sample size r, one cutting-plane SVM is trained; the modes
differ only in how the margins are computed (`jkern.svm.cpa`, mode=):
- uSVM: kernel expansion, tree by tree;
- SDAG: each cutting plane compacted into a DAG;
- SDAG+: all cutting planes compacted into one DAG;
- forest: jkern's default, SDAG+ with the sample's trees compacted too.
They train the same model (checked: the coefficients agree to 1e-9 relative). The Delta
evaluations of every mode are counted from the run's samples and planes
(`jkern.svm.delta_counts`, equal to what a run of that mode counts, which the tests check);
the modes are also *run* and timed when their Delta count is at most --run-budget (uSVM on
the larger samples would take hours on a CPU; those rows have `seconds: null`).

Corpora (binary tasks):
- srl: the PropBank boundary sample ../shared/data/srl/boundary_5000.dat (1:19);
- srl-unlex: the same trees with the words removed (`jkern.trees.without_leaves`);
- python-ast: ASTs of standard-library functions (`jkern.data.load_stdlib_functions`,
  the packages every CPython >= 3.11 install has, identifiers dropped: labels are AST class
  and constant type names), class "asyncio" vs the rest; few labels, much repetition
  (stands in for the paper's INEX XML trees of tags).
Kernels: normalized SST ("STK", λ = 0.4) and PTK (λ = μ = 0.4). C is 1-slack C = n (SVM-light's
C = 1 per example, as the paper's "C fixed at 1"), epsilon = 0.001, at most --max-iter
iterations; sample sizes at or above n use every example (the exact CPA).

    python experiments/dag_speedup.py --out-dir docs/results
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import (
    KERNELS,
    boundary_examples,
    carry_over,
    parse_args,
    parser,
    pyplot,
    spread,
    write_result,
)

from jkern.data import load_stdlib_functions
from jkern.svm import cpa, delta_counts
from jkern.trees import Forest, without_leaves

MODELS = {"usvm": "uSVM", "sdag": "SDAG", "sdag+": "SDAG+", "forest": "forest"}
# Standard-library packages of every CPython >= 3.11 build (no tkinter/idlelib/lib2to3).
AST_PACKAGES = ("asyncio", "email", "http", "logging", "unittest", "xml", "multiprocessing",
                "importlib", "urllib", "concurrent", "xmlrpc", "wsgiref", "ctypes", "json",
                "html", "zoneinfo", "tomllib", "curses", "dbm", "sqlite3", "venv",
                "ensurepip")
# --smoke: an evenly spread 200 trees of srl and of python-ast, SST, samples of 50, at most 20
# iterations (every mode runs)
SMOKE = {"max_examples": 200, "datasets": "srl,python-ast", "kernels": "sst", "samples": "50",
         "ast_samples": "50", "max_iter": 20}


def load(name: str, data_dir: Path, max_examples: int | None = None):
    """A corpus's trees and ±1 labels (an evenly spread `max_examples` of them when given)."""
    if name in ("srl", "srl-unlex"):
        trees, y = boundary_examples(data_dir, max_examples)
        if name == "srl-unlex":
            trees = [without_leaves(t) for t in trees]
        return trees, y
    if name == "python-ast":
        data = load_stdlib_functions(AST_PACKAGES, max_per_package=None, identifiers=False)
        idx = spread(len(data.trees), max_examples)
        return ([data.trees[i] for i in idx.tolist()],
                np.where(np.asarray(data.labels)[idx] == "asyncio", 1, -1))
    raise ValueError(f"unknown dataset {name!r}")


def run_mode(kernel, trees, y, mode, args, r):
    return cpa(trees, y, kernel=kernel, C=args.c_per_example * len(trees), sample=r,
               epsilon=args.epsilon, mode=mode, max_iter=args.max_iter,
               key=jax.random.PRNGKey(args.seed), threads=args.threads)


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--datasets", default="srl,srl-unlex,python-ast")
    ap.add_argument("--kernels", default="sst,ptk")
    ap.add_argument("--samples", default="250,500,1000",
                    help="SST's sample sizes on srl and srl-unlex (the paper: 250...5,000)")
    ap.add_argument("--ast-samples", default="100,250,1000",
                    help="SST's sample sizes on python-ast (uSVM's Delta grows fast there: "
                         "r = 100 is the one it runs at within the default budget)")
    ap.add_argument("--ptk-samples", default="250",
                    help="PTK's sample sizes (it costs several times SST's)")
    ap.add_argument("--ptk-datasets", default="srl,srl-unlex",
                    help="datasets PTK runs on (on python-ast, with few labels, PTK's label "
                         "groups are huge)")
    ap.add_argument("--c-per-example", type=float, default=1.0,
                    help="SVM-light's C; the 1-slack C is n times it (default 1)")
    ap.add_argument("--epsilon", type=float, default=1e-3)
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--run-budget", type=float, default=6e8,
                    help="run (and time) uSVM/SDAG when their counted Delta evaluations are "
                         "at most this; always run SDAG+ and forest")
    ap.add_argument("--merge", default=None, metavar="JSON",
                    help="carry over from an earlier dag_speedup.json the rows (and corpora) "
                         "this run does not produce; its command is kept in `merged_from`")
    ap.add_argument("--max-examples", type=int, default=None,
                    help="an evenly spread N of each corpus's trees (default all)")
    args = parse_args(ap, argv, "dag_speedup", SMOKE)
    data_dir = Path(args.data_dir)

    rows, corpora = [], []
    for dataset in args.datasets.split(","):
        trees, y = load(dataset, data_dir, args.max_examples)
        forest = Forest.build(trees)
        corpus = {"dataset": dataset, "trees": len(trees), "positive": int((y > 0).sum()),
                  "nodes": forest.total_nodes(), "forest_nodes": forest.n_nodes,
                  "compression": forest.total_nodes() / forest.n_nodes,
                  "labels": len(forest.vocab)}
        corpora.append(corpus)
        print(f"{dataset}: {len(trees)} trees ({corpus['positive']} positive), "
              f"{corpus['nodes']} nodes -> {corpus['forest_nodes']} forest nodes "
              f"({corpus['compression']:.1f}x), {corpus['labels']} labels", flush=True)
        for kname in args.kernels.split(","):
            if kname == "ptk" and dataset not in args.ptk_datasets.split(","):
                continue
            kernel = KERNELS[kname]()
            sizes = (args.ptk_samples if kname == "ptk" else args.ast_samples
                     if dataset == "python-ast" else args.samples)
            for r in [int(s) for s in sizes.split(",")]:
                ref = run_mode(kernel, trees, y, "sdag+", args, r)
                counted = delta_counts(kernel, trees, ref, block_size=256)
                assert counted["sdag+"] == ref.stats["delta_evals"], (counted,
                                                                       ref.stats["delta_evals"])
                coef_ref = np.asarray(ref.model.coef)
                for mode, model in MODELS.items():
                    ran, seconds, agree, same_planes = False, None, None, None
                    delta = counted[mode]
                    if mode == "sdag+":
                        res, ran = ref, True
                    elif mode == "forest" or counted[mode] <= args.run_budget:
                        res, ran = run_mode(kernel, trees, y, mode, args, r), True
                        # A run's own work, recounted from its own samples and planes: a
                        # margin within rounding of 1 (duplicate trees) can put an example
                        # in one mode's plane and not in another's, and the runs part ways.
                        delta = res.stats["delta_evals"]
                        own = delta_counts(kernel, trees, res, block_size=256)[mode]
                        assert delta == own, (mode, delta, own)
                    if ran:
                        seconds = round(res.stats["seconds"], 3)
                        planes, ref_planes = res.stats["planes"], ref.stats["planes"]
                        same_planes = (len(planes) == len(ref_planes) and all(
                            np.array_equal(a, b) for a, b in zip(planes, ref_planes)))
                        same = res.model.support == ref.model.support
                        agree = float(np.max(np.abs(np.asarray(res.model.coef) - coef_ref))
                                      / np.max(np.abs(coef_ref))) if same else float("inf")
                        if not same_planes:
                            print(f"  {model}: planes differ from SDAG+'s ({len(planes)} "
                                  f"vs {len(ref_planes)})", flush=True)
                    rows.append({"model": model, "kernel": kname, "dataset": dataset,
                                 "sample": min(r, len(trees)), "sample_asked": r,
                                 "same_planes_as_sdag+": same_planes,
                                 "delta_evals": delta, "seconds": seconds, "ran": ran,
                                 "iterations": len(ref.stats["history"]),
                                 "planes": len(ref.stats["planes"]),
                                 "support_vectors": ref.model.n_support,
                                 "converged": bool(ref.converged),
                                 "coef_max_rel_diff_vs_sdag+": agree,
                                 "preprocessing_deltas": ref.stats["preprocessing_deltas"]})
                base = next(x for x in rows[-4:] if x["model"] == "uSVM")
                parts = []
                for x in rows[-4:]:
                    ratio = base["delta_evals"] / x["delta_evals"]
                    t = (f", {base['seconds'] / x['seconds']:.1f}x time"
                         if base["seconds"] and x["seconds"] else "")
                    secs = f"{x['seconds']:.1f} s" if x["seconds"] is not None else "not run"
                    parts.append(f"{x['model']} {x['delta_evals']:.3g} Δ ({ratio:.1f}x{t}; {secs})")
                print(f"{dataset} {kname.upper()} r={min(r, len(trees))}: "
                      f"{len(ref.stats['history'])} iterations, {ref.model.n_support} SVs | "
                      + " | ".join(parts), flush=True)

    merged = None
    if args.merge:
        kept, merged, earlier = carry_over(
            args.merge, rows, lambda r: (r["dataset"], r["kernel"], r["sample"], r["model"]))
        loaded = {c["dataset"] for c in corpora}
        corpora = [c for c in earlier.get("corpora", []) if c["dataset"] not in loaded] + corpora
        order = {name: i for i, name in enumerate(MODELS.values())}
        rows = sorted(kept + rows, key=lambda r: (r["dataset"], r["kernel"], r["sample"],
                                                  order[r["model"]]))
        merged["rows_kept"] = len(kept)
    print_table(rows)
    out = write_result(args.out_dir, "dag_speedup", rows, argv, corpora=corpora,
                       merged_from=merged,
                       settings={"c_per_example": args.c_per_example, "epsilon": args.epsilon,
                                 "max_iter": args.max_iter, "seed": args.seed,
                                 "run_budget": args.run_budget, "lam": 0.4, "mu": 0.4})
    plot(rows, out.parent / "dag_speedup.png")
    return 0


def print_table(rows) -> None:
    print("\ndataset     kernel sample | uSVM Δ     t(s)   | SDAG Δ/ΔS t/tS | SDAG+ Δ/ΔS+ t/tS+"
          " | forest Δ/ΔF t/tF")
    keys = sorted({(r["dataset"], r["kernel"], r["sample"]) for r in rows},
                  key=lambda k: (k[0], k[1], k[2]))
    for k in keys:
        part = {r["model"]: r for r in rows if (r["dataset"], r["kernel"], r["sample"]) == k}
        u = part["uSVM"]

        def ratio(m, u=u, part=part):
            d = u["delta_evals"] / part[m]["delta_evals"]
            t = (u["seconds"] / part[m]["seconds"]) if u["seconds"] and part[m]["seconds"] \
                else None
            return f"{d:6.1f} {t:5.1f}" if t else f"{d:6.1f}     -"

        ut = f"{u['seconds']:7.1f}" if u["seconds"] else "      -"
        print(f"{k[0]:<11} {k[1]:<6} {k[2]:6d} | {u['delta_evals']:9.3g} {ut} | "
              f"{ratio('SDAG')} | {ratio('SDAG+')} | {ratio('forest')}")


def plot(rows, path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    panels = sorted({(r["dataset"], r["kernel"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6), squeeze=False)
    for ax, (dataset, kernel) in zip(axes[0], panels):
        for model, style in (("uSVM", "o-"), ("SDAG", "s--"), ("SDAG+", "^-"),
                             ("forest", "d:")):
            part = sorted((r for r in rows if (r["dataset"], r["kernel"], r["model"])
                           == (dataset, kernel, model)), key=lambda r: r["sample"])
            ax.plot([r["sample"] for r in part], [r["delta_evals"] for r in part], style,
                    label=model)
        ax.set_yscale("log")
        ax.set_title(f"{dataset}, {kernel.upper()}")
        ax.set_xlabel("sample size r")
    axes[0][0].set_ylabel("Δ evaluations (training)")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
