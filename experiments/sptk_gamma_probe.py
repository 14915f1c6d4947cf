"""Pick SPTK's Gaussian word-similarity γ on the TREC training set (no test data).

A random 2,000 of the 5,401 training parses train one-vs-rest SVMs (jkern's SMO KSVM) and
500 other training parses score them. The kernels are normalized PTK and SPTK with
σ = exp(γ (cos − 1)) on GloVe 6B 50-d vectors (λ = μ = 0.4, words marked by their
preterminal with `pos_leaves(lowercase=True)`, as in experiments/qc_kda.py). For each kernel
the script prints the held-out accuracy per C and the smallest eigenvalue of the 2,000-tree
Gram matrix.

    python experiments/sptk_gamma_probe.py
"""

from __future__ import annotations

import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import parse_args, parser, plot_lines, tree_kernel, write_result

import jkern
from jkern.data import load_trec
from jkern.metrics import accuracy
from jkern.svm import ksvm_ovr
from jkern.trees import pos_leaves

# --smoke: 60 training / 20 held-out parses, one γ, two C values
SMOKE = {"train": 60, "held_out": 20, "gammas": "3", "cs": "10,30"}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--held-out", type=int, default=500)
    ap.add_argument("--gammas", default="2,3,5,10")
    ap.add_argument("--cs", default="3,10,30,100")
    args = parse_args(ap, argv, "sptk_gamma_probe", SMOKE)
    rows = []
    train = load_trec(args.data_dir, "train")
    perm = np.random.default_rng(0).permutation(len(train.trees))
    fit, held = perm[:args.train], perm[args.train:args.train + args.held_out]
    trees = [pos_leaves(train.trees[i], lowercase=True) for i in np.concatenate([fit, held])]
    y = np.asarray(train.coarse)
    y_fit, y_held = y[fit], y[held]
    n = len(fit)
    kernels = {"ptk": tree_kernel("ptk")}
    for g in args.gammas.split(","):
        kernels[f"sptk gamma={g}"] = tree_kernel("sptk", trees=trees, gamma=float(g))
    for name, kernel in kernels.items():
        t0 = time.perf_counter()
        gram = np.asarray(jkern.gram(kernel, trees, dtype="float64"))
        g_fit, g_held = gram[:n, :n], gram[n:, :n]
        accs = [accuracy(y_held, ksvm_ovr(g_fit, y_fit, C=float(c)).model.predict(g_held))
                for c in args.cs.split(",")]
        min_eig = float(np.linalg.eigvalsh(g_fit).min())
        seconds = time.perf_counter() - t0
        rows += [{"model": "KSVM", "kernel": name, "C": float(c), "held_out_accuracy": acc,
                  "min_eigenvalue": min_eig, "seconds": round(seconds, 1)}
                 for c, acc in zip(args.cs.split(","), accs)]
        print(f"{name}: held-out accuracy per C {dict(zip(args.cs.split(','), accs))}, best "
              f"{max(accs):.3f}; min eigenvalue {min_eig:.2e} ({seconds:.0f} s)", flush=True)
    out = write_result(args.out_dir, "sptk_gamma_probe", rows, argv)
    plot_lines(out.parent / "sptk_gamma_probe.png",
               {name: ([r["C"] for r in rows if r["kernel"] == name],
                       [100 * r["held_out_accuracy"] for r in rows if r["kernel"] == name])
                for name in kernels},
               xlabel="C", ylabel="held-out accuracy (%)", xscale="log",
               title=f"PTK vs SPTK's Gaussian γ ({len(fit)} / {len(held)} training parses)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
