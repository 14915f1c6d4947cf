"""How much of imbalance.py's uSVM+j figure is the choice of j: held-out and test F1 at every j
of the grid, for the sampled cutting-plane models and for the kernel SVM.

imbalance.py picks uSVM+j's j on a held-out part of the training set (mean F1 over the
sampling seeds) and reports the test F1 of that j only. This prints, per TREC class
(one-vs-rest, normalized SST λ = 0.4, margins read off the cached Gram) and per j in
{1, 2, 3, 4, 5, 10}:
- uSVM+j (j = 1 is uSVM): held-out F1 exactly as imbalance.py computes it (fit on 80%, mean
  over the seeds) and the test F1 of the models retrained on all training questions (mean
  and the seeds' runs);
- KSVM (SMO, the same SVM-light (C, j) problem, no sampling): held-out and test F1.
KSVM at j = 1 against KSVM at the held-out j is the comparison line 3 of issue 5 makes,
without the noise of the samples.

    python experiments/imbalance_j_sweep.py --cache-dir /tmp/qc_cache --classes ENTY
"""

from __future__ import annotations

import sys

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import (
    J_GRID,
    f1_of,
    fit_cpa,
    held_out_f1,
    one_vs_rest_labels,
    parse_args,
    parser,
    plot_lines,
    predict_cpa,
    seeds_of,
    trec_data,
    write_result,
)

from jkern.data import stratified_split
from jkern.svm import ksvm

# --smoke: an evenly spread 60 training / 20 test questions, class ENTY, one seed, samples
# of 20, at most 30 iterations
SMOKE = {"max_train": 60, "max_test": 20, "classes": "ENTY", "seeds": 1, "sample": 20,
         "max_iter": 30}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--classes", default="ABBR,DESC,ENTY,HUM,LOC,NUM")
    ap.add_argument("--C", type=float, default=1.0, help="SVM-light's C")
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=1e-3)
    ap.add_argument("--confirm", type=int, default=1)
    ap.add_argument("--max-iter", type=int, default=500)
    ap.add_argument("--qp-tol", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    args = parse_args(ap, argv, "imbalance_j_sweep", SMOKE)
    rows = []
    train, test, g, g_test = trec_data(args.data_dir, args.cache_dir, args.max_train,
                                       args.max_test)
    seeds = seeds_of(args.seed, args.seeds)
    options = dict(sample=args.sample, epsilon=args.epsilon, confirm=args.confirm,
                   max_iter=args.max_iter, qp_tol=args.qp_tol)
    for cls in args.classes.split(","):
        y, y_test = one_vs_rest_labels(train, test, cls)
        fit, held = stratified_split(y, 0.2, seed=0)
        fit_trees = [train.trees[i] for i in fit]
        g_fit, g_held = g[np.ix_(fit, fit)], g[np.ix_(held, fit)]
        print(f"{cls}: {int((y > 0).sum())} positives of {len(y)} (test {int((y_test > 0).sum())})",
              flush=True)
        for j in J_GRID:
            jj = None if j == 1.0 else j  # j = 1: uniform sampling, uSVM itself
            held_cpa = held_out_f1(fit_trees, y[fit], g_fit, g_held, y[held], args.C, jj,
                                   seeds=seeds, **options)
            runs = [f1_of(y_test, predict_cpa(fit_cpa(train.trees, y, g, args.C, jj, seed=s,
                                                      **options), g_test)) for s in seeds]
            m = ksvm(g_fit, y[fit], C=args.C, class_weight={1: j, -1: 1.0}).model
            held_k = f1_of(y[held], np.asarray(m.predict(g_held)))
            m = ksvm(g, y, C=args.C, class_weight={1: j, -1: 1.0}).model
            test_k = f1_of(y_test, np.asarray(m.predict(g_test)))
            rows.append({"class": cls, "j": j, "model": "uSVM+j" if jj else "uSVM",
                         "held_out_f1": held_cpa, "f1": float(np.mean(runs)), "f1_runs": runs,
                         "sample": args.sample, "C": args.C})
            rows.append({"class": cls, "j": j, "model": "KSVM", "held_out_f1": held_k,
                         "f1": test_k, "C": args.C})
            print(f"  j = {j:>4g}: uSVM+j held-out {100 * held_cpa:.1f}, test "
                  f"{100 * np.mean(runs):.1f} ({', '.join(f'{100 * f:.1f}' for f in runs)}) | "
                  f"KSVM held-out {100 * held_k:.1f}, test {100 * test_k:.1f}", flush=True)
    out = write_result(args.out_dir, "imbalance_j_sweep", rows, argv)
    plot_lines(out.parent / "imbalance_j_sweep.png",
               {f"{cls} {label} ({part})": (J_GRID, [100 * r[key] for r in rows
                                                      if r["class"] == cls
                                                      and (r["model"] == "KSVM") == ksvm_row])
                for cls in args.classes.split(",")
                for label, ksvm_row in (("uSVM+j", False), ("KSVM", True))
                for part, key in (("held-out", "held_out_f1"), ("test", "f1"))},
               xlabel="j (positive-class weight)", ylabel="F1 (%)",
               title="uSVM+j and KSVM at every j of the grid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
