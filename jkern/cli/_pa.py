"""`jkern pa train|predict`: online PA-I with a polynomial kernel (opal's semantics,
`jkern.pa.fit`) on sparse-vector files: LIBSVM / SVM-light lines, or SVM-Light-TK lines (the
vector after `|ET|`)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ._common import (
    EXIT_COMPUTE,
    EXIT_OK,
    CLIError,
    add_dtype_argument,
    add_encoding_argument,
    add_quiet_argument,
    add_seed_argument,
    check_output_path,
    compute_errors,
    input_errors,
    output_errors,
    positive_float,
    positive_int,
    say,
    setup_jax,
)

SUMMARY = "online passive-aggressive learning (PA-I, polynomial kernel; opal) on sparse vectors"

# `jkern.pa.MODES`, written out so that `--help` does not import the library; an unknown
# mode is not refused here but by `jkern.pa.fit`, whose one-line error the CLI relays.
MODES = ("kernel", "block", "splitting", "slicing", "explicit", "linear")

FILE_HELP = ("LIBSVM / SVM-light lines 'label idx:val ...' (label +1 or -1, ids >= 1, text "
             "after '#' a comment), or SVM-Light-TK lines (the vector after |ET|)")


def add_cpus_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cpus", type=positive_int, default=None, metavar="N",
                   help="run on N of the CPUs this process may use (`jkern.limit_cpus`; "
                        "XLA's thread pool follows). PA-I's epochs are a chain of small "
                        "steps that more threads only slow: 1 takes the least CPU time "
                        "(docs/pa.md) (default: all)")


def _limit_cpus(args: argparse.Namespace) -> None:
    """--cpus, before JAX starts (a bad value is the library's input error, exit 2)."""
    if args.cpus is not None:
        import jkern

        with input_errors():
            jkern.limit_cpus(args.cpus)


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    sub.required = True

    train = sub.add_parser("train", help="train PA-I on a sparse-vector file",
                           description="train PA-I (opal's rule) with the polynomial kernel "
                                       "(1 + s.x)^d on a file of labelled sparse vectors, "
                                       "in file order")
    train.add_argument("data", metavar="FILE", help=f"the training examples: {FILE_HELP}")
    train.add_argument("--out", "-o", required=True, metavar="MODEL.npz",
                       help="the model, for `jkern pa predict` and `jkern.load` (required)")
    train.add_argument("--degree", "-d", type=int, choices=(1, 2, 3), default=2,
                       help="d of the kernel (1 + s.x)^d (default 2)")
    train.add_argument("--C", type=positive_float, default=1.0, metavar="C",
                       help="PA-I aggressiveness bound, the largest step (default 1.0)")
    train.add_argument("--epochs", "-e", type=positive_int, default=10, metavar="E",
                       help="passes over the file, in file order (default 10)")
    train.add_argument("--mode", "-m", default="block", metavar="MODE",
                       help="how margins are computed, one of " + ", ".join(MODES) + ": "
                            "the first five give the same model, linear is opal's linear PA-I "
                            "on the primitive features (no kernel, no bias); splitting, "
                            "slicing and explicit need binary features (default block; "
                            "docs/pa.md)")
    train.add_argument("--textbook", action="store_true",
                       help="textbook PA-I step (1 - y m) / K(x, x) instead of opal's "
                            "(1 - y m) / |x| (default off: opal's)")
    train.add_argument("--block-size", type=positive_int, default=32, metavar="B",
                       help="block, splitting, slicing: examples whose margins are computed "
                            "in one batch (default 32; the model does not depend on it)")
    train.add_argument("--n-common", type=positive_int, default=None, metavar="N",
                       help="splitting, slicing: the N most frequent features get explicit "
                            "conjunction weights (default: opal's rule, the largest 2^i - 1 "
                            "whose table fits --memory-budget; the model does not depend "
                            "on it)")
    train.add_argument("--memory-budget", type=positive_float, default=32.0, metavar="MIB",
                       help="splitting, slicing: MiB for the conjunction table when "
                            "--n-common is unset (default 32, opal's)")
    train.add_argument("--exact", action=argparse.BooleanOptionalAction, default=None,
                       help="fixed-point arithmetic (weights in units of 2^-32, integer "
                            "kernel values: every mode makes the same updates); --no-exact: "
                            "floats (default: exact when every feature value is 1 and "
                            "--dtype is float64)")
    add_dtype_argument(train, "precision of the values, weights and margins (default float64)")
    train.add_argument("--average", action="store_true",
                       help="averaged PA-I: save the mean of the models after every visit "
                            "(the updates are plain PA-I's) (default off, as in opal)")
    train.add_argument("--shuffle", action="store_true",
                       help="visit a new random permutation of the examples each epoch "
                            "(default off: file order, as in opal)")
    add_seed_argument(train, "--shuffle: the seed of the permutations", metavar="S")
    train.add_argument("--expand", action="store_true",
                       help="kernel modes: save the model expanded into weights of its "
                            "support vectors' conjunctions (pecco's PKE; the same decision "
                            "values, classified without the support-vector sum; binary "
                            "features) (default off: the support vectors)")
    add_cpus_argument(train)
    add_quiet_argument(train)
    add_encoding_argument(train)
    train.set_defaults(_action=run_train)

    predict = sub.add_parser("predict", help="decision values of a model on a sparse-vector "
                                             "file",
                             description="write the decision value of every example of FILE "
                                         "under a model from `jkern pa train`, one per line, "
                                         "and report the accuracy against the file's labels "
                                         "on stderr")
    predict.add_argument("model", metavar="MODEL.npz", help="a model from `jkern pa train`")
    predict.add_argument("data", metavar="FILE", help=f"the examples to classify: {FILE_HELP}")
    predict.add_argument("--out", "-o", default=None, metavar="FILE.tsv",
                         help="one decision value per line, in file order (positive: +1; "
                              "svm_classify's output) (default: stdout)")
    add_cpus_argument(predict)
    add_quiet_argument(predict, "no summary line (with the accuracy) on stderr (default off)")
    add_encoding_argument(predict)
    predict.set_defaults(_action=run_predict)


def run(args: argparse.Namespace) -> int:
    return args._action(args)


def _read(path: str, dtype: str, encoding: str) -> Any:
    """The labelled vectors of a file; a malformed line (`file:line:column: problem`, a byte
    not valid in `encoding` included), an empty file or an unreadable one is an input error
    (exit 2)."""
    from jkern.data import read_sparse

    with input_errors():
        return read_sparse(path, dtype=dtype, encoding=encoding)


# --------------------------------------------------------------------------- train


def run_train(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    out = check_output_path(args.out, (".npz",), inputs=(args.data,))
    _limit_cpus(args)
    setup_jax(args.dtype)
    import jax

    import jkern
    from jkern import RESULTS

    data = _read(args.data, args.dtype, args.encoding)
    X, y = data.features, data.labels
    with compute_errors(), input_errors():  # the library refuses a mode, flag or data: exit 2
        sol = jkern.pa.fit(X, y, degree=args.degree, C=args.C, epochs=args.epochs,
                           mode=args.mode, textbook=args.textbook, block_size=args.block_size,
                           n_common=args.n_common, exact=args.exact, dtype=args.dtype,
                           memory_budget=max(1, int(args.memory_budget * 2**20)),
                           average=args.average, shuffle=args.shuffle,
                           key=jax.random.key(args.seed))  # it draws with --shuffle only
    result = int(sol.result)
    if result != RESULTS.successful:
        raise CLIError(f"training failed: {RESULTS.message(result)}; no model written",
                       EXIT_COMPUTE)
    model = sol.model
    if args.expand:
        if not isinstance(model, jkern.pa.SupportVectorModel):
            raise CLIError(f"--expand applies to the kernel modes, not --mode {args.mode}")
        with compute_errors(), input_errors():
            model = model.expanded()
    with output_errors():
        jkern.save(out, model)
    updates = sol.stats["updates"].tolist()
    what = (f"{int(sol.stats['support_vectors'])} support vectors"
            if args.mode not in ("explicit", "linear")
            else f"{int(sol.model.weights.shape[-1]) - 1} weights")
    common = f", N = {sol.stats['n_common']}" if "n_common" in sol.stats else ""
    degree = "" if args.mode == "linear" else f", d = {args.degree}"
    n_feat = X.n_used_features()
    how = "".join([", shuffled" if args.shuffle else "", ", averaged" if args.average else ""])
    say(args, f"pa train: {len(y)} examples, {n_feat} features, mode "
              f"{args.mode}{degree}, C = {args.C:g}, {args.epochs} epochs{how}{common}; "
              f"updates {updates[0]} (epoch 1) .. {updates[-1]} (epoch {len(updates)}), "
              f"{what} -> {args.out} in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK


# --------------------------------------------------------------------------- predict


def run_predict(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if args.out is not None:
        check_output_path(args.out, (".tsv",), inputs=(args.model, args.data))
    _limit_cpus(args)
    setup_jax("float64")  # the file's arrays load at their saved precision
    import jkern
    from jkern.io import write_atomic

    with input_errors():
        model = jkern.load(args.model)
    if not isinstance(model, (jkern.pa.SupportVectorModel, jkern.pa.ConjunctionModel,
                              jkern.pa.ExpandedModel)):
        raise CLIError(f"{args.model}: not a model from `jkern pa train` (a "
                       f"{type(model).__name__})")
    dtype = str((model.alpha if isinstance(model, jkern.pa.SupportVectorModel)
                 else model.weights).dtype)
    data = _read(args.data, dtype, args.encoding)
    with compute_errors(), input_errors():
        if isinstance(model, jkern.pa.SupportVectorModel) and jkern.pa.is_binary(data.features):
            model = model.classifier()  # (the expanded model where it is exact and fits)
        raw = model.decision_function(data.features)
        if raw.ndim != 1:
            raise CLIError(f"{args.model}: a stacked model (a vmapped grid of "
                           f"{raw.shape[1]}); predict with one of its members in Python",
                           EXIT_COMPUTE)
        try:
            values = jkern.finite_values(raw, "decision values")
        except jkern.errors.NumericalError as err:
            raise CLIError(f"{err}; no output written", EXIT_COMPUTE) from err
    digits = ".17g" if dtype == "float64" else ".9g"
    text = "".join(format(v, digits) + "\n" for v in values.tolist())
    if args.out is not None:
        with output_errors():
            write_atomic(args.out, lambda f: f.write(text.encode("utf-8")))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    # the one tie rule (+1 where the decision value is >= 0), against the file's labels
    accuracy = jkern.metrics.accuracy(data.labels, jkern.sign_labels(values))
    where = args.out if args.out is not None else "stdout"
    say(args, f"pa predict: {len(values)} examples -> {where}, accuracy {accuracy:.4f} in "
              f"{time.perf_counter() - t0:.2f} s")
    return EXIT_OK
