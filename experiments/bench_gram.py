"""Benchmark: the full Gram matrix of the 5,401 TREC training trees, SST and PTK, float64.

Competitor: SVM-Light-TK 1.5, single-threaded, on this kind of 2-core machine (recorded
anchor figures, measured 2026-11-22: 18.1 s SST lam=0.4, 60.0 s PTK lam=mu=0.4 for the same
14.58 M pairs). It is not installed here, so the anchors are printed beside jkern's times and
the ratio is anchor / jkern median.

Prints, per kernel: median of `--repeats` warm runs (the first, compiling run is reported
separately), peak resident memory, and the work counts: nodes vs forest nodes, Delta values
computed (and, for PTK, the distinct same-label pairs whose Delta is known to be the constant
mu lam^2 and is not evaluated) vs the matched node pairs a pairwise loop visits.

    python experiments/bench_gram.py --data-dir ../shared/data
"""

from __future__ import annotations

import resource
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import parse_args, parser, pyplot, tree_kernel, write_result

import jkern
from jkern.data import load_trec
from jkern.trees._forest import Forest

ANCHORS = {"sst": 18.1, "ptk": 60.0}  # SVM-Light-TK seconds (see module docstring)
TARGETS = {"sst": 9.0, "ptk": 30.0}
# --smoke: the first 100 trees, one timed run per kernel
SMOKE = {"n": 100, "repeats": 1}


def pairwise_matched_pairs(forest: Forest, key: np.ndarray, n: int) -> int:
    """Matched node pairs over all tree pairs i <= j (what a per-pair loop finds)."""
    keep = key[forest.count_node] >= 0
    k = key[forest.count_node][keep].astype(np.int64)
    t = forest.count_tree[keep].astype(np.int64)
    c = forest.count[keep].astype(np.int64)
    hist: dict[tuple[int, int], int] = {}
    for ti, ki, ci in zip(t.tolist(), k.tolist(), c.tolist()):
        hist[(ti, ki)] = hist.get((ti, ki), 0) + ci
    per_key_total: dict[int, int] = {}
    per_key_sq: dict[int, int] = {}
    for (_, ki), ci in hist.items():
        per_key_total[ki] = per_key_total.get(ki, 0) + ci
        per_key_sq[ki] = per_key_sq.get(ki, 0) + ci * ci
    total = sum(v * v for v in per_key_total.values())
    return (total + sum(per_key_sq.values())) // 2


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--kernels", default="sst,ptk")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=None, help="use the first N trees only")
    ap.add_argument("--block-size", type=int, default=256)
    args = parse_args(ap, argv, "bench_gram", SMOKE)

    trees = load_trec(args.data_dir, "train").trees[: args.n]
    n = len(trees)
    rows = []
    for name in args.kernels.split(","):
        kernel = tree_kernel(name, normalize=False)  # SST λ = 0.4, PTK λ = μ = 0.4
        times, stats = [], {}
        t0 = time.perf_counter()
        g = jkern.gram(kernel, trees, dtype="float64", stats=stats, block_size=args.block_size)
        g.block_until_ready()
        first = time.perf_counter() - t0
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            g = jkern.gram(kernel, trees, dtype="float64", block_size=args.block_size)
            g.block_until_ready()
            times.append(time.perf_counter() - t0)
        forest = Forest.build(trees)
        plan = kernel.match_plan(forest)
        loop_pairs = pairwise_matched_pairs(forest, plan.key, n)
        med = statistics.median(times)
        row = {
            "model": "gram",
            "kernel": name,
            "dataset": "trec-train",
            "trees": n,
            "tree_pairs": n * (n + 1) // 2,
            "seconds": round(med, 3),
            "seconds_runs": [round(t, 3) for t in times],
            "seconds_first_run_with_compile": round(first, 3),
            "anchor_svmlight_tk_seconds": ANCHORS[name] if n == 5401 else None,
            "ratio": round(ANCHORS[name] / med, 3) if n == 5401 else None,
            "target_seconds": TARGETS[name],
            "peak_rss_mb": round(peak_rss_mb(), 1),
            "total_nodes": stats["total_nodes"],
            "forest_nodes": stats["forest_nodes"],
            "delta_evals": stats["delta_entries"],
            # PTK: distinct internal same-label pairs with no child key in common, whose
            # Delta is the constant mu lam^2: contracted per label, never evaluated
            "constant_pairs_not_evaluated": stats.get("constant_entries", 0),
            "matched_node_pairs_pairwise_loop": loop_pairs,
            "node_pairs_accumulated": stats["node_pairs"],
            "gram_checksum": float(np.asarray(g).sum()),
        }
        rows.append(row)
        print(
            f"{name}: n={n} median {med:.2f}s runs {row['seconds_runs']} (first {first:.1f}s "
            f"incl. compile) | SVM-Light-TK anchor {row['anchor_svmlight_tk_seconds']}s "
            f"ratio {row['ratio']} | peak RSS {row['peak_rss_mb']:.0f} MB | nodes "
            f"{row['total_nodes']} -> forest {row['forest_nodes']} | Delta evals "
            f"{row['delta_evals']:,} (+{row['constant_pairs_not_evaluated']:,} constant pairs "
            f"not evaluated) vs matched node pairs (pairwise loop, i<=j) {loop_pairs:,}",
            flush=True,
        )

    out_dir = write_result(args.out_dir, "bench_gram", rows, argv).parent
    plt = pyplot()
    if plt is None:
        return 0
    fig, ax = plt.subplots(figsize=(5, 3))
    names = [r["kernel"].upper() for r in rows]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [ANCHORS[r["kernel"]] for r in rows], 0.4, label="SVM-Light-TK (anchor)")
    ax.bar(x + 0.2, [r["seconds"] for r in rows], 0.4, label="jkern (median)")
    ax.set_xticks(x, names)
    ax.set_ylabel("seconds, full Gram 5,401 trees")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "bench_gram.png", dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
