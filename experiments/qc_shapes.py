"""Question classification by tree shape: constituency parses vs the dependency shapes.

Croce, Moschitti & Basili (2011) and the KDA paper run their kernels on dependency trees
(GRCT, LCT); TREC ships constituency parses. This experiment converts each parse by head
rules (`jkern.trees.head_dependencies`, semantic heads) into GRCT / LCT / LOCT and compares,
per kernel and shape:
- KSVM: one-vs-rest C-SVMs on the full Gram (C picked on the stratified 20% held-out part of
  experiments/qc.py, then retrained on all of it), with its support vectors;
- DCD: Nyström + linear SVMs by dual coordinate descent at each --landmarks count, the same
  5 uniform landmark samplings as qc.py, C picked on the same held-out part (mean ± std);
- the gap KSVM − DCD, which issue 3 bounds at 2.5 points for 1,000 landmarks.
Kernels: sst (normalized SST, λ = 0.4), ptk (normalized PTK, λ = μ = 0.4), sptk (normalized
SPTK, λ = μ = 0.4, words by the Gaussian similarity exp(γ (cos − 1)) of their GloVe 6B 50-d
vectors, γ = 3, as in qc_kda.py; on constituency parses the words are marked with their
preterminal). Gram matrices are shared with qc.py / qc_kda.py through --cache-dir.

    python experiments/qc_shapes.py --data-dir ../shared/data --cache-dir /tmp/qc_cache
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import (
    cached_grams,
    padded_projection,
    parse_args,
    parser,
    plot_bars,
    qc_data,
    run_dcd,
    run_ksvm,
    shaped,
    tree_kernel,
    write_result,
)

import jkern
from jkern.metrics import accuracy

GAMMA = 3.0
# --smoke: 60 training / 20 test questions, SPTK on the parses and on LCT, 20 landmarks, one
# sampling
SMOKE = {"max_train": 60, "max_test": 20, "kernels": "sptk", "shapes": "ct,lct",
         "landmarks": "20", "samplings": 1}


def make_kernel(name: str, trees):
    """Normalized SST, PTK, or SPTK with GloVe vectors for the words of `trees` (γ = GAMMA)."""
    return tree_kernel(name, trees=trees, gamma=GAMMA) if name == "sptk" else tree_kernel(name)


def cache_tag(kernel: str, shape: str, semantic: bool = True) -> str:
    """The cache names of qc.py / qc_kda.py for constituency parses, `_<shape>` otherwise
    (`_<shape>_syntactic` with Collins' syntactic heads)."""
    base = f"sptk_g{GAMMA:g}" if kernel == "sptk" else kernel
    if shape == "ct":
        return base
    return f"{base}_{shape}" if semantic else f"{base}_{shape}_syntactic"


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--kernels", default="sst,ptk,sptk")
    ap.add_argument("--shapes", default="ct,grct,lct,loct")
    ap.add_argument("--landmarks", default="1000")
    ap.add_argument("--samplings", type=int, default=5)
    ap.add_argument("--syntactic-heads", action="store_true",
                    help="dependency shapes from Collins' syntactic heads (default: semantic "
                         "heads, auxiliaries and copulas not heading)")
    ap.add_argument("--cache-dir", default=None, help="keep the Gram matrices here (.npy)")
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    args = parse_args(ap, argv, "qc_shapes", SMOKE)
    semantic = not args.syntactic_heads

    train, test, y_train, y_test, fit, held, cache = qc_data(
        args.data_dir, args.cache_dir, max_train=args.max_train, max_test=args.max_test)
    rows = []
    for name in args.kernels.split(","):
        for shape in args.shapes.split(","):
            tr, te = (shaped(t, shape, name, semantic) for t in (train.trees, test.trees))
            kernel = make_kernel(name, tr + te)
            g_train, g_test, gram_seconds = cached_grams(kernel, tr, te, cache,
                                                        cache_tag(name, shape, semantic))
            t0 = time.perf_counter()
            ksvm, best_c, scores = run_ksvm(g_train, g_test, y_train, y_test, fit, held)
            ksvm_acc = accuracy(y_test, ksvm.predict(g_test))
            n_sv = ksvm.n_support
            rows.append({"model": "KSVM", "kernel": name, "shape": shape, "landmarks": None,
                         "heads": "semantic" if semantic else "syntactic",
                         "accuracy": ksvm_acc, "accuracy_std": 0.0, "saving": 0.0,
                         "support_vectors": n_sv, "C": best_c,
                         "held_out_accuracy": scores[best_c], "gram_seconds": gram_seconds,
                         "nodes_per_tree": float(np.mean([len(t) for t in tr])),
                         "train_seconds": round(time.perf_counter() - t0, 2)})
            print(f"{name.upper()} {shape.upper()} KSVM: accuracy {ksvm_acc:.4f} (C={best_c}), "
                  f"{n_sv} support vectors", flush=True)
            for m in [int(s) for s in args.landmarks.split(",")]:
                accs, cs = [], []
                for s in range(args.samplings):
                    key = jax.random.PRNGKey(1000 * m + s)  # the samplings of qc.py
                    idx, h = padded_projection(kernel, tr, g_train, m, key)
                    x_train, x_test = ((g[:, idx] @ h).astype(np.float32)
                                       for g in (g_train, g_test))
                    acc, c = run_dcd(x_train, x_test, y_train, y_test, fit, held,
                                     jax.random.fold_in(key, 1))
                    accs.append(acc)
                    cs.append(c)
                row = {"model": "DCD", "kernel": name, "shape": shape, "landmarks": m,
                       "heads": "semantic" if semantic else "syntactic",
                       "accuracy": statistics.mean(accs),
                       "accuracy_std": statistics.pstdev(accs),
                       "saving": jkern.saving(m, n_sv), "accuracy_runs": accs, "C_runs": cs,
                       "gap_to_ksvm": ksvm_acc - statistics.mean(accs)}
                rows.append(row)
                print(f"{name.upper()} {shape.upper()} DCD {m:5d} landmarks: accuracy "
                      f"{row['accuracy']:.4f} ± {row['accuracy_std']:.4f} (runs "
                      f"{', '.join(f'{a:.3f}' for a in accs)}), gap to KSVM "
                      f"{100 * row['gap_to_ksvm']:.1f} points", flush=True)

    print("\nkernel  shape  KSVM (%)  SVs    landmarks  DCD (%)       gap")
    for r in rows:
        if r["model"] != "DCD":
            continue
        k = next(q for q in rows if q["model"] == "KSVM" and q["kernel"] == r["kernel"]
                 and q["shape"] == r["shape"])
        print(f"{r['kernel']:6s}  {r['shape']:5s}  {100 * k['accuracy']:8.1f}  "
              f"{k['support_vectors']:5d}  {r['landmarks']:9d}  {100 * r['accuracy']:5.1f} ± "
              f"{100 * r['accuracy_std']:3.1f}  {100 * r['gap_to_ksvm']:4.1f}")
    out = write_result(args.out_dir, "qc_shapes", rows, argv,
                       settings={"gamma": GAMMA, "held_out": 0.2, "ksvm_C": [1, 3, 10, 30],
                                 "heads": "semantic" if semantic else "syntactic",
                                 "dcd_C": [10, 30, 100]})
    plot(rows, out.parent / "qc_shapes.png")
    return 0


def plot(rows, path: Path) -> None:
    """Test accuracy per kernel and shape: KSVM and DCD at each landmark count."""
    groups = list(dict.fromkeys((r["kernel"], r["shape"]) for r in rows))
    models = list(dict.fromkeys(("KSVM", None) if r["model"] == "KSVM" else ("DCD", r["landmarks"])
                                for r in rows))
    series = {}
    for model, m in models:
        label = model if m is None else f"{model} {m} landmarks"
        series[label] = [next((100 * r["accuracy"] for r in rows
                               if (r["kernel"], r["shape"]) == g and r["model"] == model
                               and r["landmarks"] == m), float("nan")) for g in groups]
    plot_bars(path, [f"{k.upper()}\n{s.upper()}" for k, s in groups], series,
              ylabel="test accuracy (%)", title="TREC question classification by tree shape")


if __name__ == "__main__":
    sys.exit(main())
