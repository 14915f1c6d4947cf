"""KDA on question classification (Table 1 / Fig. 3 of Croce, Moschitti & Basili, ACL 2017).

TREC/UIUC coarse classes (6), 5,401 training parses, 500 test parses. Kernels:
- ptk:  normalized PTK (λ = μ = 0.4) on the constituency parses;
- sptk: normalized SPTK (λ = μ = 0.4) on the same parses with every word marked by its
  preterminal (`jkern.trees.pos_leaves`, lowercased), words compared by the cosine of their
  GloVe 6B 50-d vectors (`jkern.data.glove_6b_50d`, extra `vectors`) when the preterminals are
  equal: by default the Gaussian similarity exp(γ (cos − 1)) with γ = --gamma (positive
  definite, so the Gram matrix is PSD; γ = 3 was picked on a 2,000 / 500 split of the
  training set, see docs/results.md), or with --sptk-similarity cosine the papers' cosine
  thresholded at --threshold (indefinite on these trees: the SVMs suffer).
With --shape grct|lct|loct both kernels run on that dependency shape of the parses' head-rule
dependency parses instead (`jkern.trees.head_dependencies`; see experiments/qc_shapes.py).
Rows:
- KSVM: one-vs-rest C-SVMs on the full Gram (C picked on a stratified 20% held-out part).
- DCD: Nyström + linear SVMs by dual coordinate descent (as experiments/qc.py).
- KDA: Nyström layer + two hidden layers of width m + softmax (`jkern.kda`), Adam 1e-3,
  batches of 256, up to --epochs epochs, early stopping on the held-out part (the paper's
  development set) with --patience; dropout {0, 0.2, 0.4, 0.6} x λ {0, 1e-4} trained as one
  vmapped grid per landmark set, the configuration of the best held-out accuracy kept. With
  --grid-samplings N only the first N samplings run the grid; later ones train the
  configuration picked most often (CPU time: the grid costs 8 fits). --train-nystrom trains
  the Nyström layer with the rest (the paper keeps it frozen, the default); --standardize
  rescales it to unit-variance embedding dimensions (probes, see docs/results.md).
For 100…1,000 landmarks, 5 uniform landmark samplings each (the same samplings as qc.py):
accuracy mean ± std and saving = 1 − landmarks / KSVM support vectors.

    python experiments/qc_kda.py --data-dir ../shared/data --cache-dir /tmp/qc_cache
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
    DROPOUTS,
    L2S,
    SHAPES,
    cached_grams,
    carry_over,
    padded_projection,
    parse_args,
    parser,
    print_accuracy_table,
    pyplot,
    qc_data,
    run_dcd,
    run_ksvm,
    shaped,
    tree_kernel,
    write_result,
)

import jkern
from jkern import kda
from jkern.metrics import accuracy

# --smoke: 60 training / 20 test questions, SPTK, 20 landmarks, one sampling, the whole
# grid for a few epochs
SMOKE = {"max_train": 60, "max_test": 20, "kernels": "sptk", "landmarks": "20",
         "samplings": 1, "epochs": 3, "patience": 2}


def kernel_and_trees(name: str, train, test, args):
    """The kernel and the (possibly relabelled or reshaped) train/test trees it runs on."""
    train, test = shaped(train, args.shape, name), shaped(test, args.shape, name)
    if name == "ptk":
        return tree_kernel("ptk"), train, test
    if name == "sptk":
        if args.sptk_similarity == "gaussian":
            return tree_kernel("sptk", trees=train + test, gamma=args.gamma), train, test
        return tree_kernel("sptk", trees=train + test, threshold=args.threshold), train, test
    raise ValueError(f"unknown kernel {name!r}")


def grid_configs(choice: int | None = None):
    """(dropout, λ) arrays of the grid, or of its configuration `choice` alone."""
    dropout = [d for d in DROPOUTS for _ in L2S]
    l2 = [v for _ in DROPOUTS for v in L2S]
    if choice is not None:
        dropout, l2 = [dropout[choice]], [l2[choice]]
    return jnp.asarray(dropout, jnp.float32), jnp.asarray(l2, jnp.float32)


def run_kda(c_train, c_test, h, y_train, y_test, fit, held, key, args, choice=None):
    """The dropout x λ grid (or configuration `choice` of it) as one vmapped fit; the best
    held-out configuration's test accuracy, that configuration, and the epochs run."""
    classes = tuple(sorted(set(y_train.tolist())))
    dropout, l2 = grid_configs(choice)
    k_init, k_fit, k_data = jax.random.split(key, 3)
    models = kda.init_grid(h, classes, key=k_init, dropout=dropout,
                           train_nystrom=args.train_nystrom)
    grid = kda.fit_grid(c_train[fit], y_train[fit], models=models, c_dev=c_train[held],
                        y_dev=y_train[held], keys=jax.random.split(k_fit, len(dropout)), l2=l2,
                        data_key=k_data, epochs=args.epochs, patience=args.patience)
    best_dev = np.nanmax(np.asarray(grid.stats["dev_accuracy"]), axis=1)
    g = int(np.argmax(best_dev))
    model = kda.grid_member(grid, g).model
    acc = accuracy(y_test, np.asarray(model.predict(c_test)))
    config = {"choice": g if choice is None else choice,
              "dropout": float(dropout[g]), "l2": float(l2[g]),
              "best_epoch": int(grid.stats["best_epoch"][g]),
              "held_out_accuracy": float(best_dev[g])}
    return acc, config, int(np.max(np.asarray(grid.stats["n_epochs"])))


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--kernels", default="ptk,sptk")
    ap.add_argument("--landmarks", default="100,200,400,600,800,1000")
    ap.add_argument("--samplings", type=int, default=5)
    ap.add_argument("--sptk-similarity", choices=("gaussian", "cosine"), default="gaussian")
    ap.add_argument("--gamma", type=float, default=3.0, help="SPTK Gaussian similarity's γ")
    ap.add_argument("--threshold", type=float, default=0.3, help="SPTK cosine threshold")
    ap.add_argument("--shape", choices=("ct", *SHAPES), default="ct",
                    help="tree shape: the constituency parses (ct, the default), or the GRCT / "
                         "LCT / LOCT of their head-rule dependency parses "
                         "(`jkern.trees.head_dependencies`)")
    ap.add_argument("--epochs", type=int, default=500)
    ap.add_argument("--patience", type=int, default=20)
    ap.add_argument("--models", default="DCD,KDA", help="Nyström rows to run")
    ap.add_argument("--standardize", action="store_true",
                    help="scale the KDA's Nyström layer so every embedding dimension has unit "
                         "variance on the fit part (default: H = U S^-1/2, the paper's)")
    ap.add_argument("--train-nystrom", action="store_true",
                    help="train the KDA's Nyström layer with the rest (default frozen)")
    ap.add_argument("--grid-samplings", type=int, default=None,
                    help="run the KDA grid on the first N samplings of each landmark count "
                         "only; later samplings train the configuration those picked most "
                         "often (default: the grid on every sampling)")
    ap.add_argument("--cache-dir", default=None, help="keep the Gram matrices here (.npy)")
    ap.add_argument("--merge", default=None, metavar="JSON",
                    help="carry over from an earlier qc_kda.json the rows this run does not "
                         "produce (other kernels, other landmark counts; its command and "
                         "any earlier merges are kept in the new file's `merged_from`)")
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    args = parse_args(ap, argv, "qc_kda", SMOKE)

    train, test, y_train, y_test, fit, held, cache = qc_data(
        args.data_dir, args.cache_dir, max_train=args.max_train, max_test=args.max_test)
    models = args.models.split(",")
    rows = []
    for name in args.kernels.split(","):
        kern, tr_trees, te_trees = kernel_and_trees(name, train.trees, test.trees, args)
        tag = (name if name == "ptk" else f"{name}_g{args.gamma:g}"
               if args.sptk_similarity == "gaussian" else f"{name}_t{args.threshold:g}")
        if args.shape != "ct":
            tag = f"{tag}_{args.shape}"
        g_train, g_test, gram_seconds = cached_grams(kern, tr_trees, te_trees, cache, tag)
        if gram_seconds is not None:
            print(f"{name.upper()} Gram matrices: {gram_seconds:.1f} s", flush=True)
        t0 = time.perf_counter()
        ksvm, best_c, scores = run_ksvm(g_train, g_test, y_train, y_test, fit, held)
        acc = accuracy(y_test, ksvm.predict(g_test))
        n_sv = ksvm.n_support
        rows.append({"model": "KSVM", "kernel": name, "landmarks": None, "accuracy": acc,
                     "accuracy_std": 0.0, "saving": 0.0, "support_vectors": n_sv, "C": best_c,
                     "held_out_accuracy": scores[best_c], "gram_seconds": gram_seconds,
                     "train_seconds": round(time.perf_counter() - t0, 2)})
        print(f"{name.upper()} KSVM: accuracy {acc:.4f} (C={best_c}), {n_sv} support vectors",
              flush=True)
        for m in [int(s) for s in args.landmarks.split(",")]:
            runs = {model: [] for model in models}
            details = {model: [] for model in models}
            seconds = {model: 0.0 for model in models}
            for s in range(args.samplings):
                key = jax.random.PRNGKey(1000 * m + s)  # the samplings of qc.py
                idx, h = padded_projection(kern, tr_trees, g_train, m, key)
                c_train = g_train[:, idx].astype(np.float32)
                c_test = g_test[:, idx].astype(np.float32)
                if "DCD" in runs:
                    t0 = time.perf_counter()
                    x_train, x_test = (c @ h.astype(np.float32) for c in (c_train, c_test))
                    acc, c_best = run_dcd(x_train, x_test, y_train, y_test, fit, held,
                                          jax.random.fold_in(key, 1))
                    runs["DCD"].append(acc)
                    details["DCD"].append({"C": c_best})
                    seconds["DCD"] += time.perf_counter() - t0
                if "KDA" in runs:
                    t0 = time.perf_counter()
                    choice = None
                    if args.grid_samplings is not None and s >= args.grid_samplings:
                        picked = [d["choice"] for d in details["KDA"]]
                        choice = max(set(picked), key=lambda g: (picked.count(g), -g))
                    h_kda = h.astype(np.float32)
                    if args.standardize:  # unit variance per embedding dimension (fit part)
                        h_kda = h_kda / np.maximum((c_train[fit] @ h_kda).std(axis=0), 1e-12)
                    acc, config, n_epochs = run_kda(c_train, c_test, h_kda,
                                                    y_train, y_test, fit, held,
                                                    jax.random.fold_in(key, 2), args, choice)
                    runs["KDA"].append(acc)
                    details["KDA"].append({**config, "epochs_run": n_epochs})
                    seconds["KDA"] += time.perf_counter() - t0
            for model in models:
                row = {"model": model, "kernel": name, "landmarks": m,
                       "accuracy": statistics.mean(runs[model]),
                       "accuracy_std": statistics.pstdev(runs[model]),
                       "saving": jkern.saving(m, n_sv), "accuracy_runs": runs[model],
                       "runs": details[model], "seconds": round(seconds[model], 2)}
                rows.append(row)
                print(f"{name.upper()} {model} {m:5d} landmarks: accuracy "
                      f"{row['accuracy']:.4f} ± {row['accuracy_std']:.4f}, saving "
                      f"{row['saving']:.1%} ({row['seconds']:.0f} s)", flush=True)

    merged = None
    if args.merge:
        kept, merged, _ = carry_over(args.merge, rows,
                                     lambda r: (r["model"], r["kernel"], r["landmarks"]))
        order = {(m, k): i for i, (m, k) in enumerate(
            [("KSVM", "ptk"), ("DCD", "ptk"), ("KDA", "ptk"),
             ("KSVM", "sptk"), ("DCD", "sptk"), ("KDA", "sptk")])}
        rows = sorted(kept + rows, key=lambda r: (r["kernel"] != "ptk", r["landmarks"] or 0,
                                                  order.get((r["model"], r["kernel"]), 9)))
        merged["rows_kept"] = sorted({f"{r['model']} {r['kernel']} {r['landmarks']}"
                                      for r in kept})
    print_accuracy_table(rows)
    out_dir = write_result(args.out_dir, "qc_kda", rows, argv, merged_from=merged,
                           settings={"dropouts": DROPOUTS, "l2": L2S, "epochs": args.epochs,
                                     "patience": args.patience, "batch_size": 256,
                                     "train_nystrom": args.train_nystrom,
                                     "standardize": args.standardize,
                                     "grid_samplings": args.grid_samplings,
                                     "sptk_similarity": args.sptk_similarity,
                                     "sptk_gamma": args.gamma,
                                     "sptk_threshold": args.threshold,
                                     "shape": args.shape}).parent
    plot(rows, out_dir / "qc_kda.png")
    return 0


def plot(rows, path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    styles = {"DCD": "--", "KDA": "-"}
    for kernel, color in (("ptk", "tab:red"), ("sptk", "tab:green")):
        for model, style in styles.items():
            part = [r for r in rows if r["model"] == model and r["kernel"] == kernel]
            if part:
                ax.errorbar([r["landmarks"] for r in part], [100 * r["accuracy"] for r in part],
                            yerr=[100 * r["accuracy_std"] for r in part], marker="o",
                            linestyle=style, color=color, label=f"{model} {kernel.upper()}")
        for r in rows:
            if r["model"] == "KSVM" and r["kernel"] == kernel:
                ax.axhline(100 * r["accuracy"], color=color, linestyle=":",
                           label=f"KSVM {kernel.upper()}")
    ax.set_xlabel("landmarks")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("TREC question classification: KDA vs Nyström + DCD")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
