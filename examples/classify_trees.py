"""Classify real trees with a tree kernel: k-NN and nearest class mean in kernel space.

Two corpora of real trees:
  stdlib  the abstract syntax trees of ~900 Python standard-library functions, labelled by
          the package they come from (asyncio, email, http, logging, unittest, xml). Needs
          nothing but Python itself. Seeded, stratified 80/20 split.
  trec    constituency parses of the UIUC/TREC questions, 6 coarse classes, official
          5,401/500 split, read from --data-dir (default ../shared/data).

Both build a normalized Gram matrix with the library API (`jkern.gram`) and classify each test
tree by its most similar training trees (1-NN, 5-NN) and by its nearest class mean. With a
normalized kernel K(x,x) = 1, so the kernel distance d²(x,y) = 2 - 2K(x,y) ranks neighbours
exactly as the similarity K does.

The default run (stdlib, 720 train + 180 test trees) is meant to finish in well under two
minutes on a 2-core CPU. Usage:

    python examples/classify_trees.py                      # stdlib corpus, PTK
    python examples/classify_trees.py --kernel sst --lam 0.4
    python examples/classify_trees.py --corpus trec --n-train 2000
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

import numpy as np

import jkern
from jkern.data import load_stdlib_functions, load_trec, stratified_split

REPO = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"


def make_kernel(name: str, lam: float, mu: float):
    """The normalized tree kernel named on the command line."""
    return jkern.Normalized(jkern.kernels.kernel_by_name(name, lam=lam, mu=mu))


def cap(indices: list[int], n: int | None, rng: np.random.Generator) -> list[int]:
    """A seeded random subset of at most `n` indices (all of them when `n` is None)."""
    if n is None or n >= len(indices):
        return indices
    return sorted(rng.choice(indices, size=n, replace=False).tolist())


def load(args: argparse.Namespace, rng: np.random.Generator):
    """(train_trees, train_labels, test_trees, test_labels) of the chosen corpus."""
    if args.corpus == "stdlib":
        data = load_stdlib_functions()
        trees, labels = data.trees, data.labels
        tr, te = (ix.tolist() for ix in stratified_split(labels, 0.2, seed=args.seed))
        tr, te = cap(tr, args.n_train, rng), cap(te, args.n_test, rng)
        return (
            [trees[i] for i in tr],
            [labels[i] for i in tr],
            [trees[i] for i in te],
            [labels[i] for i in te],
        )
    train = load_trec(args.data_dir, "train")
    test = load_trec(args.data_dir, "test")
    tr = cap(list(range(len(train.trees))), args.n_train, rng)
    te = cap(list(range(len(test.trees))), args.n_test, rng)
    return (
        [train.trees[i] for i in tr],
        [train.coarse[i] for i in tr],
        [test.trees[i] for i in te],
        [test.coarse[i] for i in te],
    )


def knn_predict(sim: np.ndarray, y_train: np.ndarray, classes: np.ndarray, k: int) -> np.ndarray:
    """Majority vote of the `k` most similar training items; ties go to the larger summed
    similarity (then to the first class in sorted order)."""
    k = min(k, sim.shape[1])
    nearest = np.argsort(-sim, axis=1, kind="stable")[:, :k]  # [n_test, k]
    onehot = y_train[nearest][..., None] == classes[None, None, :]  # [n_test, k, C]
    votes = onehot.sum(axis=1)  # [n_test, C]
    weight = (onehot * sim[np.arange(sim.shape[0])[:, None], nearest][..., None]).sum(axis=1)
    score = votes + weight / (k + 1.0)  # the weight term is < 1: it only breaks ties
    return classes[np.argmax(score, axis=1)]


def class_mean_predict(
    sim: np.ndarray,
    y_train: np.ndarray,
    classes: np.ndarray,
    g_train: np.ndarray | None = None,
) -> np.ndarray:
    """Nearest class mean in kernel space.

    Without `g_train`: the class whose training items have the highest mean similarity to the
    test item. With it: the class mean m_c nearest in feature space, where
    ‖φ(x) − m_c‖² = K(x,x) − 2·mean_j K(x, y_j) + mean_{j,l} K(y_j, y_l), and K(x,x) = 1 for a
    normalized kernel (so it drops out of the argmin).
    """
    member = (y_train[:, None] == classes[None, :]).astype(sim.dtype)  # [n_train, C]
    size = member.sum(axis=0)  # [C]
    mean_sim = (sim @ member) / size[None, :]  # [n_test, C]
    if g_train is None:
        return classes[np.argmax(mean_sim, axis=1)]
    mean_norm2 = np.einsum("jc,jl,lc->c", member, g_train, member) / size**2  # ‖m_c‖²
    return classes[np.argmin(mean_norm2[None, :] - 2.0 * mean_sim, axis=1)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=["stdlib", "trec"], default="stdlib")
    p.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=DEFAULT_DATA_DIR,
        help="shared data folder holding trec/ (for --corpus trec; default ../shared/data)",
    )
    p.add_argument("--kernel", choices=["st", "sst", "ptk"], default="ptk")
    p.add_argument("--lam", type=float, default=0.4, help="decay λ (default 0.4)")
    p.add_argument("--mu", type=float, default=0.4, help="PTK vertical decay μ (default 0.4)")
    p.add_argument("--n-train", type=int, default=None, help="cap on training trees")
    p.add_argument("--n-test", type=int, default=None, help="cap on test trees")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    try:
        train_trees, y_train_list, test_trees, y_test_list = load(args, rng)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    y_train, y_test = np.array(y_train_list), np.array(y_test_list)
    classes = np.array(sorted(set(y_train_list)))

    nodes_train = sum(len(t) for t in train_trees)
    nodes_test = sum(len(t) for t in test_trees)
    print(
        f"corpus {args.corpus}: {len(train_trees)} train trees ({nodes_train} nodes), "
        f"{len(test_trees)} test trees ({nodes_test} nodes), "
        f"mean {(nodes_train + nodes_test) / (len(train_trees) + len(test_trees)):.1f} nodes"
    )
    n_tr, n_te = collections.Counter(y_train_list), collections.Counter(y_test_list)
    print(f"\n{'class':<12}{'train':>7}{'test':>7}")
    for c in sorted(set(n_tr) | set(n_te)):
        print(f"{c:<12}{n_tr[c]:>7}{n_te[c]:>7}")

    kernel = make_kernel(args.kernel, args.lam, args.mu)
    t0 = time.perf_counter()
    train_stats: dict = {}
    g_train = np.asarray(jkern.gram(kernel, train_trees, stats=train_stats))
    t1 = time.perf_counter()
    test_stats: dict = {}
    g_test = np.asarray(jkern.gram(kernel, test_trees, train_trees, stats=test_stats))
    t2 = time.perf_counter()
    print(
        f"\nkernel {args.kernel} (λ={args.lam}"
        + (f", μ={args.mu}" if args.kernel == "ptk" else "")
        + ", normalized)"
    )
    print(
        f"gram train {g_train.shape[0]}x{g_train.shape[1]}: {t1 - t0:.2f} s;  "
        f"test x train {g_test.shape[0]}x{g_test.shape[1]}: {t2 - t1:.2f} s "
        f"(XLA programs compiled or loaded from the cache: {train_stats['programs']} + "
        f"{test_stats['programs']})"
    )
    if not (np.all(np.isfinite(g_train)) and np.all(np.isfinite(g_test))):
        print("error: the Gram matrix has non-finite entries", file=sys.stderr)
        return 1
    # Leave-one-out on the training Gram (self-similarity masked) as a sanity figure.
    g_loo = g_train.copy()
    np.fill_diagonal(g_loo, -np.inf)

    majority = classes[np.argmax([n_tr[c] for c in classes])]
    rows = [
        ("majority class", np.full(len(y_test), majority)),
        ("1-NN", knn_predict(g_test, y_train, classes, 1)),
        ("5-NN", knn_predict(g_test, y_train, classes, 5)),
        ("class mean similarity", class_mean_predict(g_test, y_train, classes)),
        ("nearest class mean", class_mean_predict(g_test, y_train, classes, g_train)),
    ]
    loo_1nn = float(np.mean(knn_predict(g_loo, y_train, classes, 1) == y_train))
    print(f"\n{'method':<22}{'test accuracy':>14}")
    for name, pred in rows:
        print(f"{name:<22}{np.mean(pred == y_test):>14.3f}")
    print(f"{'1-NN (train, LOO)':<22}{loo_1nn:>14.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
