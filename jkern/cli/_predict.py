"""`jkern predict`: classify trees with a model file from `jkern train`."""

from __future__ import annotations

import argparse
import time

from ._common import (
    EXIT_OK,
    CLIError,
    add_common_arguments,
    check_output_path,
    compute_errors,
    file_labels_or_none,
    gram_options,
    input_errors,
    output_errors,
    read_trees_or_exit,
    say,
    setup_jax,
)

SUMMARY = "classify trees with a model from `jkern train`"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL.npz", help="a model file from `jkern train`")
    p.add_argument("trees", metavar="TREES",
                   help="the trees to classify, in any format `jkern gram` reads; when the "
                        "file has labels (SVM-Light-TK lines, a TSV 'label' column or "
                        "--label-column) the accuracy is reported too")
    p.add_argument("--out", "-o", required=True, metavar="FILE.tsv",
                   help="one line per tree after a header: the predicted label, then for a "
                        "two-class model one decision value (positive: the positive class, "
                        "+1 for -1/+1 labels; SVM-Light-TK's svm_classify output), else one "
                        "score per class (required)")
    p.add_argument("--label-column", metavar="NAME",
                   help="TSV input: the column of true labels to report the accuracy against "
                        "(default: the column named 'label' if there is one, as `jkern train`)")
    add_common_arguments(p)


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    check_output_path(args.out, (".tsv",), inputs=(args.model, args.trees))
    setup_jax("float64")  # the file's arrays load at their saved precision
    import jkern
    from jkern.io import write_atomic

    with input_errors():
        model = jkern.load(args.model)
    if not hasattr(model, "classify") or model.classes is None:
        raise CLIError(f"{args.model}: not a model from `jkern train` (a "
                       f"{type(model).__name__})")
    trees = read_trees_or_exit(args.trees, args.encoding)
    gold = file_labels_or_none(args.trees, args.label_column, args.encoding)
    if gold is not None and len(gold) != len(trees):
        raise CLIError(f"{args.trees}: {len(trees)} trees but {len(gold)} labels")
    with compute_errors():
        predicted, scores = model.classify(trees, **gram_options(args))
    classes = list(model.classes)
    if len(classes) == 2:  # one value, positive: the positive class (the model's own reading)
        pos, decision = model.binary_decision(scores)
        rows = [["label", f"score_{classes[pos]}"]]
        rows += [[str(p), format(float(v), ".17g")]
                 for p, v in zip(predicted.tolist(), decision.tolist())]
    else:
        rows = [["label", *[f"score_{c}" for c in classes]]]
        rows += [[str(p), *[format(float(v), ".17g") for v in row]]
                 for p, row in zip(predicted.tolist(), scores.tolist())]
    text = "".join("\t".join(row) + "\n" for row in rows)
    with output_errors():
        write_atomic(args.out, lambda f: f.write(text.encode("utf-8")))
    summary = f"predict: {len(trees)} trees -> {args.out}"
    if gold is not None:
        summary += f", accuracy {jkern.metrics.accuracy(gold, predicted):.4f}"
        known = {str(c) for c in classes}
        unseen = [g for g in gold if str(g) not in known]
        if unseen:  # counted as errors by the accuracy: say so
            names = sorted({str(g) for g in unseen})
            summary += (f" ({len(unseen)} of {len(gold)} examples have labels the model "
                        f"never saw, counted as errors: {', '.join(names[:5])}"
                        f"{', ...' if len(names) > 5 else ''})")
    say(args, f"{summary} in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK
