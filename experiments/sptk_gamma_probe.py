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

import argparse
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import write_result

import jkern
from jkern.data import glove_6b_50d, load_trec, tree_words
from jkern.metrics import accuracy
from jkern.svm import ksvm_ovr
from jkern.trees import pos_leaves

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--held-out", type=int, default=500)
    ap.add_argument("--gammas", default="2,3,5,10")
    ap.add_argument("--cs", default="3,10,30,100")
    ap.add_argument("--out-dir", default=str(REPO / "docs" / "results"))
    args = ap.parse_args(argv)
    rows = []
    train = load_trec(args.data_dir, "train")
    perm = np.random.default_rng(0).permutation(len(train.trees))
    fit, held = perm[:args.train], perm[args.train:args.train + args.held_out]
    trees = [pos_leaves(train.trees[i], lowercase=True) for i in np.concatenate([fit, held])]
    y = np.asarray(train.coarse)
    y_fit, y_held = y[fit], y[held]
    n = len(fit)
    vocab, vectors = glove_6b_50d().for_words(tree_words(trees))
    kernels = {"ptk": jkern.Normalized(jkern.PTK(0.4, 0.4))}
    for g in args.gammas.split(","):
        kernels[f"sptk gamma={g}"] = jkern.Normalized(
            jkern.SPTK(vocab, vectors, 0.4, 0.4, gamma=float(g)))
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
    write_result(args.out_dir, "sptk_gamma_probe", rows, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
