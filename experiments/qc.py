"""Question classification (Table 1 of Croce, Moschitti & Basili, ACL 2017): KSVM vs Nyström + DCD.

TREC/UIUC coarse classes (6), 5,401 training parses, 500 test parses, normalized SST (λ=0.4)
and PTK (λ=μ=0.4). Rows:
- KSVM: one-vs-rest C-SVMs on the full Gram matrix (SMO, `jkern.svm.ksvm_ovr`), C picked on a
  stratified 20% held-out part of the training set, then retrained on all of it. Its support
  vectors (union over the classes) are the kernel evaluations a test question costs.
- DCD: Nyström embeddings with 100…1,000 uniformly sampled landmarks (5 samplings each,
  mean ± std), one-vs-rest linear SVMs by dual coordinate descent (`jkern.svm.dcd_ovr`), C
  picked the same way (the C grid trains as one vmapped program). Saving = 1 − landmarks /
  KSVM support vectors.
The Gram matrices are computed once per kernel (through the forest engine); every landmark
set is a column subset of them, so C = K(X, L) and W = K(L, L) are read off, not recomputed.

    python experiments/qc.py --data-dir ../shared/data
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
from _common import (
    KERNELS,
    cached_grams,
    parse_args,
    parser,
    print_accuracy_table,
    pyplot,
    qc_data,
    run_dcd,
    run_ksvm,
    write_result,
)

import jkern
from jkern.metrics import accuracy

# --smoke: 60 training / 20 test questions, SST, 20 landmarks, two samplings
SMOKE = {"max_train": 60, "max_test": 20, "kernels": "sst", "landmarks": "20",
         "samplings": 2}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--kernels", default="sst,ptk")
    ap.add_argument("--landmarks", default="100,200,400,600,800,1000")
    ap.add_argument("--samplings", type=int, default=5)
    ap.add_argument("--cache-dir", default=None, help="keep the Gram matrices here (.npy)")
    ap.add_argument("--save-features", default=None, metavar="DIR",
                    help="write the first sampling's embeddings per (kernel, landmarks) as "
                         "DIR/qc_<kernel>_<landmarks>.npz (X, y, X_test, y_test: the input of "
                         "bench_linear.py --features)")
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    args = parse_args(ap, argv, "qc", SMOKE)

    train, test, y_train, y_test, fit, held, cache = qc_data(
        args.data_dir, args.cache_dir, max_train=args.max_train, max_test=args.max_test)
    rows = []
    for name in args.kernels.split(","):
        g_train, g_test, gram_seconds = cached_grams(KERNELS[name](), train.trees, test.trees,
                                                    cache, name)
        t0 = time.perf_counter()
        model, best_c, scores = run_ksvm(g_train, g_test, y_train, y_test, fit, held)
        acc = accuracy(y_test, model.predict(g_test))
        n_sv = model.n_support
        rows.append({"model": "KSVM", "kernel": name, "landmarks": None, "accuracy": acc,
                     "accuracy_std": 0.0, "saving": 0.0, "support_vectors": n_sv, "C": best_c,
                     "held_out_accuracy": scores[best_c], "gram_seconds": gram_seconds,
                     "train_seconds": round(time.perf_counter() - t0, 2)})
        print(f"{name.upper()} KSVM: accuracy {acc:.4f} (C={best_c}, held-out "
              f"{scores[best_c]:.4f}), support vectors {n_sv}", flush=True)
        for m in [int(s) for s in args.landmarks.split(",")]:
            accs, errs, cs = [], [], []
            t0 = time.perf_counter()
            for s in range(args.samplings):
                key = jax.random.PRNGKey(1000 * m + s)
                idx = jkern.select_landmarks(len(y_train), m, key=key)
                proj = jkern.projector_from_gram(KERNELS[name](), [train.trees[i] for i in idx],
                                                 g_train[np.ix_(idx, idx)])
                x_train = np.asarray(proj.embed_columns(jnp.asarray(g_train[:, idx])))
                x_test = np.asarray(proj.embed_columns(jnp.asarray(g_test[:, idx])))
                # the rank (components kept) varies between samplings: zero columns up to m
                # keep one feature shape per landmark count (one compiled DCD program); they
                # change neither the dual nor w on the real components
                x_train, x_test = (np.pad(a, ((0, 0), (0, m - a.shape[1])))
                                   for a in (x_train, x_test))
                # the linear SVMs train in float32 (the embedding is float64): same accuracy
                # in our checks, about 1.6x faster on a CPU
                x_train, x_test = x_train.astype(np.float32), x_test.astype(np.float32)
                if args.save_features and s == 0:
                    feature_dir = Path(args.save_features)
                    feature_dir.mkdir(parents=True, exist_ok=True)
                    np.savez(feature_dir / f"qc_{name}_{m}.npz", X=x_train, y=y_train,
                             X_test=x_test, y_test=y_test)
                acc, c = run_dcd(x_train, x_test, y_train, y_test, fit, held,
                                 jax.random.fold_in(key, 1))
                accs.append(acc)
                cs.append(c)
                sample = np.random.default_rng(s).choice(len(y_train), min(500, len(y_train)),
                                                         replace=False)
                errs.append(jkern.approximation_error(
                    g_train[np.ix_(sample, sample)], x_train[sample].astype(np.float64)))
            row = {"model": "DCD", "kernel": name, "landmarks": m,
                   "accuracy": statistics.mean(accs), "accuracy_std": statistics.pstdev(accs),
                   "saving": jkern.saving(m, n_sv), "accuracy_runs": accs, "C_runs": cs,
                   "gram_rel_error": statistics.mean(errs),
                   "seconds": round(time.perf_counter() - t0, 2)}
            rows.append(row)
            print(f"{name.upper()} DCD {m:5d} landmarks: accuracy {row['accuracy']:.4f} ± "
                  f"{row['accuracy_std']:.4f}, saving {row['saving']:.1%}, ‖G−G̃‖/‖G‖ "
                  f"{row['gram_rel_error']:.3f}", flush=True)

    print_accuracy_table(rows)
    out_dir = write_result(args.out_dir, "qc", rows, argv).parent
    plot(rows, out_dir / "qc.png")
    return 0


def plot(rows, path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for kernel, color in (("sst", "tab:blue"), ("ptk", "tab:red")):
        dcd = [r for r in rows if r["model"] == "DCD" and r["kernel"] == kernel]
        if dcd:
            ax.errorbar([r["landmarks"] for r in dcd], [100 * r["accuracy"] for r in dcd],
                        yerr=[100 * r["accuracy_std"] for r in dcd], marker="o", color=color,
                        label=f"Nyström+DCD {kernel.upper()}")
        for r in rows:
            if r["model"] == "KSVM" and r["kernel"] == kernel:
                ax.axhline(100 * r["accuracy"], color=color, linestyle="--",
                           label=f"KSVM {kernel.upper()}")
    ax.set_xlabel("landmarks")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("TREC question classification (6 classes)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
