"""What the C conversion of uSVM+j changes: the kernel SVM at SVM-light's (C, j) and at the C
that uSVM+j solves for when its 1-slack C is taken as n * C (docs/cpa.md, "C").

uSVM+j's planes estimate the importance-weighted mean loss, so the 1-slack C = n * C_light
gives SVM-light's problem at C_light * n / sum(z) (z = j for positives, 1 for negatives);
`jkern.svm.svm_light_C` gives C_light * sum(z), the same problem. This prints the test F1 of
the SMO kernel SVM (normalized SST, λ = 0.4, TREC one-vs-rest) at both C values, and of exact
weighted cutting-plane runs (sample = n) at both conversions, which should track them.

    python experiments/imbalance_c_check.py --cache-dir /tmp/qc_cache --class ENTY
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
    plot_bars,
    predict_cpa,
    trec_data,
    write_result,
)

from jkern.svm import cpa, ksvm, svm_light_C

# --smoke: an evenly spread 60 training / 20 test questions
SMOKE = {"max_train": 60, "max_test": 20}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--class", dest="cls", default="ENTY")
    ap.add_argument("--C", type=float, default=1.0, help="SVM-light's C")
    ap.add_argument("--j", type=float, default=3.0)
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    args = parse_args(ap, argv, "imbalance_c_check", SMOKE)
    train, test, g, g_test = trec_data(args.data_dir, args.cache_dir, args.max_train,
                                       args.max_test)
    y, y_test = one_vs_rest_labels(train, test, args.cls)
    z = np.where(y > 0, args.j, 1.0)  # uSVM+j's importance weights
    cw = {1: args.j, -1: 1.0}
    c_implied = args.C * len(y) / z.sum()
    print(f"{args.cls}: {int((y > 0).sum())} positives of {len(y)}, j = {args.j:g}, "
          f"sum z = {z.sum():g}", flush=True)
    rows = []
    for c in (args.C, c_implied):
        m = ksvm(g, y, C=c, class_weight=cw).model
        f1 = f1_of(y_test, np.asarray(m.predict(g_test)))
        rows.append({"model": "KSVM", "class": args.cls, "C": c, "j": args.j, "f1": f1})
        print(f"KSVM C = {c:.3f}, j = {args.j:g}: test F1 {100 * f1:.1f}", flush=True)
    for name, c1 in (("svm_light_C (C_light * sum z)", svm_light_C(args.C, y, class_weight=cw)),
                     ("n * C_light", args.C * len(y))):
        res = cpa(train.trees, y, kernel=KERNEL, C=c1, sample=len(y), class_weight=cw,
                  epsilon=1e-3, max_iter=1000, gram=g, key=None)  # exact: draws nothing
        f1 = f1_of(y_test, predict_cpa(res, g_test))
        rows.append({"model": "exact weighted CPA", "class": args.cls, "conversion": name,
                     "C": c1, "j": args.j, "f1": f1,
                     "iterations": len(res.stats["history"]),
                     "converged": bool(res.converged)})
        print(f"exact weighted CPA, 1-slack C = {name} = {c1:.1f}: test F1 {100 * f1:.1f} "
              f"({len(res.stats['history'])} iterations, converged {bool(res.converged)})",
              flush=True)
    out = write_result(args.out_dir, "imbalance_c_check", rows, argv)
    plot_bars(out.parent / "imbalance_c_check.png",
              [f"KSVM\nC={r['C']:.3g}" if r["model"] == "KSVM" else
               f"exact CPA\n{r['conversion'].split(' (')[0]}" for r in rows],
              {"test F1": [100 * r["f1"] for r in rows]}, ylabel="test F1 (%)",
              title=f"{args.cls}, j = {args.j:g}: the C conversion of uSVM+j")
    return 0


if __name__ == "__main__":
    sys.exit(main())
