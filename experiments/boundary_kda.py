"""KDA on argument-boundary detection (the SRL task of Croce, Moschitti & Basili, ACL 2017).

`../shared/data/srl/boundary_5000.dat`: 5,000 PropBank parse subtrees, 246 of them argument
boundaries (1:19). A stratified 80/20 train/test split (seed 0); a stratified 20% of the
training part is the development set (C selection, early stopping). Kernel: normalized PTK
(λ = μ = 0.4) on the trees. Rows (F1, precision, recall of the boundary class):
- KSVM: binary C-SVM on the Gram matrix, C from {1, 3, 10, 30} on the development set;
- DCD: Nyström + linear SVM by dual coordinate descent, C from {1, 10, 100};
- KDA: Nyström layer + two hidden layers of width m (`jkern.kda`), the dropout x λ grid of
  experiments/qc_kda.py as one vmapped program, early stopping on development accuracy (the
  fit's criterion); of the grid's members the one of the best development F1 is kept;
for 100…1,000 landmarks, --samplings uniform landmark samplings each (mean ± std).

    python experiments/boundary_kda.py --data-dir ../shared/data
"""

from __future__ import annotations

import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
from _common import (
    DROPOUTS,
    L2S,
    boundary_examples,
    padded_projection,
    parse_args,
    parser,
    plot_lines,
    tree_kernel,
    write_result,
)

import jkern
from jkern import kda
from jkern.data import stratified_split
from jkern.metrics import binary_prf
from jkern.svm import dcd, ksvm

KSVM_C = (1.0, 3.0, 10.0, 30.0)
DCD_C = (1.0, 10.0, 100.0)
# --smoke: an evenly spread 300 of the examples, 20 landmarks, one sampling, the grid for a
# few epochs
SMOKE = {"max_examples": 300, "landmarks": "20", "samplings": 1, "epochs": 3, "patience": 2}


def prf(y_true, y_pred) -> dict:
    p, r, f = binary_prf(np.asarray(y_true), np.asarray(y_pred), positive=1)
    return {"f1": float(f), "precision": float(p), "recall": float(r)}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--landmarks", default="100,200,400,600,800,1000")
    ap.add_argument("--samplings", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=500)
    ap.add_argument("--patience", type=int, default=20)
    ap.add_argument("--max-examples", type=int, default=None,
                    help="an evenly spread N of the examples (default all 5,000)")
    args = parse_args(ap, argv, "boundary_kda", SMOKE)

    trees, y_all = boundary_examples(args.data_dir, args.max_examples)
    train_idx, test_idx = stratified_split(y_all, 0.2, seed=0)
    y, y_test = y_all[train_idx], y_all[test_idx]
    fit, dev = stratified_split(y, 0.2, seed=0)
    kernel = tree_kernel("ptk")
    t0 = time.perf_counter()
    train = [trees[i] for i in train_idx]
    g_train = np.asarray(jkern.gram(kernel, train, dtype="float64", block_size=256))
    g_test = np.asarray(jkern.gram(kernel, [trees[i] for i in test_idx], train,
                                   dtype="float64", block_size=256))
    print(f"PTK Gram matrices: {time.perf_counter() - t0:.1f} s", flush=True)
    rows = []

    scores = {}
    for c in KSVM_C:
        model = ksvm(g_train[np.ix_(fit, fit)], y[fit], C=c).model
        scores[c] = prf(y[dev], model.predict(g_train[np.ix_(dev, fit)]))["f1"]
    best_c = max(KSVM_C, key=lambda c: (scores[c], -c))
    model = ksvm(g_train, y, C=best_c).model
    n_sv = int(model.n_support)
    row = {"model": "KSVM", "kernel": "ptk", "landmarks": None, **prf(y_test, model.predict(
        g_test)), "f1_std": 0.0, "saving": 0.0, "support_vectors": n_sv, "C": best_c}
    rows.append(row)
    print(f"KSVM: F1 {row['f1']:.4f} (P {row['precision']:.3f}, R {row['recall']:.3f}), "
          f"C={best_c}, {n_sv} support vectors", flush=True)

    for m in [int(s) for s in args.landmarks.split(",")]:
        runs = {"DCD": [], "KDA": []}
        for s in range(args.samplings):
            key = jax.random.PRNGKey(1000 * m + s)
            idx, h = padded_projection(kernel, train, g_train, m, key)
            h = h.astype(np.float32)
            c_train = g_train[:, idx].astype(np.float32)
            c_test = g_test[:, idx].astype(np.float32)
            x_train, x_test = c_train @ h, c_test @ h
            # DCD: the C grid as one vmapped program, C by development F1
            x_fit, k_dcd = x_train[fit], jax.random.fold_in(key, 1)
            models = jax.vmap(lambda c, x=x_fit, k=k_dcd: dcd(x, y[fit], C=c, key=k).model)(
                jnp.asarray(DCD_C))
            dev_f1 = [prf(y[dev], jax.tree_util.tree_map(lambda a, i=i: a[i], models)
                          .predict(x_train[dev]))["f1"] for i in range(len(DCD_C))]
            c_best = DCD_C[int(np.argmax(dev_f1))]
            linear = dcd(x_train, y, C=c_best, key=k_dcd).model
            runs["DCD"].append({**prf(y_test, linear.predict(x_test)), "C": c_best})
            # KDA: the grid, configuration by development F1 of each member's kept model
            dropout = jnp.asarray([d for d in DROPOUTS for _ in L2S], jnp.float32)
            l2 = jnp.asarray([v for _ in DROPOUTS for v in L2S], jnp.float32)
            k_init, k_fit, k_data = jax.random.split(jax.random.fold_in(key, 2), 3)
            grid = kda.fit_grid(c_train[fit], y[fit],
                                models=kda.init_grid(h, (-1, 1), key=k_init, dropout=dropout),
                                c_dev=c_train[dev], y_dev=y[dev],
                                keys=jax.random.split(k_fit, len(dropout)), l2=l2,
                                data_key=k_data, epochs=args.epochs, patience=args.patience)
            dev_f1 = [prf(y[dev], kda.grid_member(grid, g).model.predict(c_train[dev]))["f1"]
                      for g in range(len(dropout))]
            g = int(np.argmax(dev_f1))
            net = kda.grid_member(grid, g).model
            runs["KDA"].append({**prf(y_test, net.predict(c_test)), "dropout": float(dropout[g]),
                                "l2": float(l2[g]),
                                "best_epoch": int(grid.stats["best_epoch"][g])})
        for name, part in runs.items():
            f1s = [r["f1"] for r in part]
            row = {"model": name, "kernel": "ptk", "landmarks": m,
                   "f1": statistics.mean(f1s), "f1_std": statistics.pstdev(f1s),
                   "precision": statistics.mean(r["precision"] for r in part),
                   "recall": statistics.mean(r["recall"] for r in part),
                   "saving": jkern.saving(m, n_sv), "runs": part}
            rows.append(row)
            print(f"{name} {m:5d} landmarks: F1 {row['f1']:.4f} ± {row['f1_std']:.4f} "
                  f"(P {row['precision']:.3f}, R {row['recall']:.3f}), saving "
                  f"{row['saving']:.1%}", flush=True)
    out = write_result(args.out_dir, "boundary_kda", rows, argv,
                       settings={"dropouts": DROPOUTS, "l2": L2S, "epochs": args.epochs,
                                 "patience": args.patience,
                                 "split": "stratified 80/20, seed 0"})
    plot_lines(out.parent / "boundary_kda.png",
               {model: ([r["landmarks"] for r in rows if r["model"] == model],
                        [100 * r["f1"] for r in rows if r["model"] == model])
                for model in ("DCD", "KDA")},
               xlabel="landmarks", ylabel="test F1 of the boundary class (%)",
               title="Argument-boundary detection, normalized PTK",
               hlines={f"KSVM ({n_sv} support vectors)": 100 * rows[0]["f1"]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
