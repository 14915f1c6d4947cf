"""Where the Nyström + linear SVM gap to the kernel SVM comes from (question classification).

The Nyström model at m landmarks is a kernel SVM on the approximate kernel
K~ = C W^+ C^T. Its accuracy loss has two possible sources: a different *training* kernel
(the model learned from K~) and a different *test* kernel (K~(x, train) scored instead of
K(x, train)). Crossing them separates the two:

    train on K  / test with K    (the KSVM)
    train on K  / test with K~   (only the test side approximated)
    train on K~ / test with K    (only the training side approximated)
    train on K~ / test with K~   (Nyström + an SVM on the embeddings)
    train on K~ + diag(K - K~)   / test with K~  (training diagonal restored)

All with the one-vs-rest SMO kernel SVM (`jkern.svm.ksvm_ovr`, C as given), on the full
TREC Gram matrices of experiments/qc.py (normalized SST λ = 0.4, PTK λ = μ = 0.4), with
uniform landmark samplings.

    python experiments/nystrom_gap.py --cache-dir /tmp/qc_cache
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import (
    KERNELS,
    cached_grams,
    parse_args,
    parser,
    plot_bars,
    subset_folder,
    trec,
    write_result,
)

from jkern.metrics import accuracy
from jkern.svm import ksvm_ovr

# --smoke: an evenly spread 60 training / 20 test questions, SST, 20 landmarks, one sampling
SMOKE = {"max_train": 60, "max_test": 20, "kernels": "sst", "landmarks": 20, "samplings": 1}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--kernels", default="ptk,sst")
    ap.add_argument("--landmarks", type=int, default=1000)
    ap.add_argument("--samplings", type=int, default=2)
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--rcond", type=float, default=1e-5)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    args = parse_args(ap, argv, "nystrom_gap", SMOKE)
    rows = []
    train, test = trec(args.data_dir, args.max_train, args.max_test)
    y, y_test = np.asarray(train.coarse), np.asarray(test.coarse)
    cache = subset_folder(Path(args.cache_dir) if args.cache_dir else None, args.max_train,
                          args.max_test)
    for name in args.kernels.split(","):
        k, k_test, _ = cached_grams(KERNELS[name](), train.trees, test.trees, cache, name)
        exact = ksvm_ovr(k, y, C=args.C).model
        exact_acc = accuracy(y_test, exact.predict(k_test))
        rows.append({"model": "KSVM", "kernel": name, "landmarks": None, "C": args.C,
                     "train": "K", "test": "K", "accuracy": exact_acc})
        print(f"{name.upper()} C={args.C:g}: train K / test K: {exact_acc:.4f}", flush=True)
        for s in range(args.samplings):
            rng = np.random.default_rng(s)
            land = rng.choice(len(k), args.landmarks, replace=False)
            w, u = np.linalg.eigh(k[np.ix_(land, land)])
            keep = w > w.max() * args.rcond
            h = u[:, keep] / np.sqrt(w[keep])
            x, x_test = k[:, land] @ h, k_test[:, land] @ h
            g, g_test = x @ x.T, x_test @ x.T
            off = g - k - np.diag(np.diag(g - k))
            approx = ksvm_ovr(g, y, C=args.C).model
            resid = np.clip(np.diag(k) - np.diag(g), 0, None)
            restored = ksvm_ovr(g + np.diag(resid), y, C=args.C).model
            cells = {("K", "K~"): accuracy(y_test, exact.predict(g_test)),
                     ("K~", "K"): accuracy(y_test, approx.predict(k_test)),
                     ("K~", "K~"): accuracy(y_test, approx.predict(g_test)),
                     ("K~+diag", "K~"): accuracy(y_test, restored.predict(g_test))}
            errors = {"train_rel_error": float(np.linalg.norm(g - k) / np.linalg.norm(k)),
                      "train_offdiag_rel_error": float(np.linalg.norm(off) / np.linalg.norm(k)),
                      "test_rel_error": float(np.linalg.norm(g_test - k_test)
                                              / np.linalg.norm(k_test))}
            rows += [{"model": "KSVM", "kernel": name, "landmarks": args.landmarks,
                      "sampling": s, "rank": int(keep.sum()), "C": args.C, "train": tr,
                      "test": te, "accuracy": acc, **errors}
                     for (tr, te), acc in cells.items()]
            print(f"  sampling {s} ({args.landmarks} landmarks, rank {int(keep.sum())}): "
                  f"|K~-K|/|K| train {np.linalg.norm(g - k) / np.linalg.norm(k):.4f} "
                  f"(off-diagonal {np.linalg.norm(off) / np.linalg.norm(k):.4f}), test "
                  f"{np.linalg.norm(g_test - k_test) / np.linalg.norm(k_test):.4f}; "
                  f"train K / test K~ {cells['K', 'K~']:.4f}, "
                  f"train K~ / test K {cells['K~', 'K']:.4f}, "
                  f"train K~ / test K~ {cells['K~', 'K~']:.4f}, "
                  f"train K~+diag / test K~ {cells['K~+diag', 'K~']:.4f}",
                  flush=True)
    out = write_result(args.out_dir, "nystrom_gap", rows, argv)
    plot(rows, out.parent / "nystrom_gap.png")
    return 0


def plot(rows, path: Path) -> None:
    """Test accuracy per kernel of each train / test kernel pair (mean over the samplings)."""
    cells = list(dict.fromkeys((r["train"], r["test"]) for r in rows))
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    plot_bars(path, [f"train {tr}\ntest {te}" for tr, te in cells],
              {k.upper(): [100 * float(np.mean([r["accuracy"] for r in rows
                                                if r["kernel"] == k
                                                and (r["train"], r["test"]) == cell]))
                           for cell in cells] for k in kernels},
              ylabel="test accuracy (%)", title="Where the Nyström gap comes from")


if __name__ == "__main__":
    sys.exit(main())
