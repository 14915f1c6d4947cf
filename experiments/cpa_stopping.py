"""How far the sampled cutting-plane algorithm stops from the optimum, with Algorithm 2's
stopping rule (`confirm=1`) and with k consecutive passing samples (`confirm=k`).

The stopping test compares the new sample's violation (an unbiased estimate of the loss of w)
with the slack xi of the current planes, a maximum over planes that are each a sample mean:
xi overestimates the loss, so the test passes early. This trains uSVM+j (rejection sampling,
r examples per iteration) on one TREC class, one-vs-rest (normalized SST, λ = 0.4, margins
read off the cached Gram), at SVM-light's (C, j) converted by `svm_light_C`, and prints per
seed the iterations, the primal objective 1/2 |w|^2 + C * (importance-weighted mean hinge
loss over all training examples) and its excess over the exact weighted cutting-plane run
(sample = n: epsilon-optimal), and the test F1.

    python experiments/cpa_stopping.py --cache-dir /tmp/qc_cache --class ENTY
"""

from __future__ import annotations

import sys

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import (
    KERNEL,
    f1_of,
    one_vs_rest_labels,
    parse_args,
    parser,
    plot_lines,
    predict_cpa,
    trec_data,
    write_result,
)

from jkern.svm import cpa, svm_light_C

# --smoke: an evenly spread 60 training / 20 test questions, samples of 20, two seeds
SMOKE = {"max_train": 60, "max_test": 20, "sample": 20, "seeds": 2, "max_iter": 100}


def primal(res, gram, y, z, c) -> float:
    """1/2 |w|^2 + C * sum_i z_i hinge_i / sum z, over every training example."""
    support = np.asarray(res.model.support, np.int64)
    coef = np.asarray(res.model.coef, np.float64)
    f = gram[:, support] @ coef
    hinge = np.maximum(0.0, 1.0 - y * f)
    return float(0.5 * coef @ gram[np.ix_(support, support)] @ coef + c * (z @ hinge) / z.sum())


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--class", dest="cls", default="ENTY")
    ap.add_argument("--C", type=float, default=1.0, help="SVM-light's C")
    ap.add_argument("--j", type=float, default=3.0)
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--confirm", default="1,3")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=1e-3)
    ap.add_argument("--max-iter", type=int, default=2000)
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    args = parse_args(ap, argv, "cpa_stopping", SMOKE)
    train, test, g, g_test = trec_data(args.data_dir, args.cache_dir, args.max_train,
                                       args.max_test)
    y, y_test = one_vs_rest_labels(train, test, args.cls)
    z = np.where(y > 0, args.j, 1.0)  # uSVM+j's importance weights
    cw = {1: args.j, -1: 1.0}
    c = svm_light_C(args.C, y, class_weight=cw)
    common = dict(kernel=KERNEL, C=c, class_weight=cw, epsilon=args.epsilon,
                  max_iter=args.max_iter, gram=g, qp_tol=1e-6)
    exact = cpa(train.trees, y, sample=len(y), key=None, **common)  # draws nothing
    p_exact = primal(exact, g, y, z, c)
    f1_exact = 100 * f1_of(y_test, predict_cpa(exact, g_test))
    rows = [{"model": "exact weighted CPA", "class": args.cls, "j": args.j, "C": c,
             "sample": len(y), "confirm": 1, "seed": None,
             "iterations": len(exact.stats["history"]), "primal": p_exact,
             "primal_excess": 0.0, "f1": f1_exact, "converged": bool(exact.converged)}]
    print(f"{args.cls}, j = {args.j:g}, 1-slack C = {c:g}: exact weighted CPA "
          f"{len(exact.stats['history'])} iterations, primal {p_exact:.1f}, test F1 "
          f"{f1_exact:.1f}", flush=True)
    for k in (int(v) for v in args.confirm.split(",")):
        iters, excess, f1s = [], [], []
        for seed in range(args.seeds):
            res = cpa(train.trees, y, sample=args.sample, confirm=k,
                      key=jax.random.PRNGKey(seed), **common)
            iters.append(len(res.stats["history"]))
            excess.append(primal(res, g, y, z, c) / p_exact - 1)
            f1s.append(100 * f1_of(y_test, predict_cpa(res, g_test)))
            rows.append({"model": "uSVM+j", "class": args.cls, "j": args.j, "C": c,
                         "sample": args.sample, "confirm": k, "seed": seed,
                         "iterations": iters[-1], "primal": primal(res, g, y, z, c),
                         "primal_excess": excess[-1], "f1": f1s[-1],
                         "converged": bool(res.converged)})
            print(f"  r = {args.sample}, confirm = {k}, seed {seed}: {iters[-1]} iterations "
                  f"(converged {bool(res.converged)}), primal +{100 * excess[-1]:.1f}% over "
                  f"exact, test F1 {f1s[-1]:.1f}", flush=True)
        print(f"r = {args.sample}, confirm = {k}: mean {np.mean(iters):.0f} iterations, primal "
              f"+{100 * np.mean(excess):.1f}% over exact, test F1 {np.mean(f1s):.1f} ± "
              f"{np.std(f1s):.1f}", flush=True)
    out = write_result(args.out_dir, "cpa_stopping", rows, argv)
    runs = [r for r in rows if r["seed"] is not None]
    plot_lines(out.parent / "cpa_stopping.png",
               {f"confirm = {k}": ([r["iterations"] for r in runs if r["confirm"] == k],
                                   [100 * r["primal_excess"] for r in runs if r["confirm"] == k])
                for k in dict.fromkeys(r["confirm"] for r in runs)},
               xlabel="iterations", ylabel="primal objective over the exact run's (%)",
               title=f"uSVM+j on {args.cls}, r = {args.sample}: where the stopping rule stops",
               markers_only=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
