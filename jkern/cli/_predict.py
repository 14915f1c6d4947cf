"""`jkern predict`: classify trees with a model file from `jkern train`."""

from __future__ import annotations

import argparse
import time

from ._common import (
    EXIT_OK,
    CLIError,
    add_common_arguments,
    compute_errors,
    gram_options,
    input_errors,
    output_errors,
    read_labels_or_exit,
    read_trees_or_exit,
    say,
    setup_jax,
)

SUMMARY = "classify trees with a model from `jkern train`"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL.npz")
    p.add_argument("trees", metavar="TREES")
    p.add_argument("--out", "-o", required=True, metavar="FILE.tsv",
                   help="one line per tree: predicted label, then the decision values")
    p.add_argument("--label-column", metavar="NAME",
                   help="TSV input with labels: also report accuracy")
    add_common_arguments(p)


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if not args.out.lower().endswith(".tsv"):
        raise CLIError(f"--out {args.out}: use a .tsv file name")
    setup_jax("float64")  # the file's arrays load at their saved precision
    import jkern
    from jkern._io import write_atomic
    from jkern.trees import tree_file_format

    with input_errors():
        model = jkern.load(args.model)
    if not hasattr(model, "classify") or model.classes is None:
        raise CLIError(f"{args.model}: not a model from `jkern train` (a "
                       f"{type(model).__name__})")
    trees = read_trees_or_exit(args.trees)
    with compute_errors():
        predicted, scores = model.classify(trees, **gram_options(args))
    rows = [["label", *[f"score_{c}" for c in model.classes]]]
    rows += [[str(p), *[format(float(v), ".17g") for v in row]]
             for p, row in zip(predicted.tolist(), scores.tolist())]
    text = "".join("\t".join(row) + "\n" for row in rows)
    with output_errors():
        write_atomic(args.out, lambda f: f.write(text.encode("utf-8")))
    summary = f"predict: {len(trees)} trees -> {args.out}"
    with input_errors():
        labelled = args.label_column is not None or tree_file_format(args.trees) == "svmlight"
    if labelled:
        gold = read_labels_or_exit(args.trees, args.label_column)
        summary += f", accuracy {jkern.metrics.accuracy(gold, predicted):.4f}"
    say(args, f"{summary} in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK
