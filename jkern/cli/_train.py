"""`jkern train`: a classifier on labelled trees, saved as one model file (`jkern.save`)."""

from __future__ import annotations

import argparse
import time

from ._common import (
    EXIT_OK,
    CLIError,
    add_common_arguments,
    add_kernel_arguments,
    add_seed_argument,
    check_kernel_arguments,
    check_output_path,
    compute_errors,
    gram_options,
    input_errors,
    kernel_from_arguments,
    output_errors,
    positive_float,
    positive_int,
    read_labels_or_exit,
    read_trees_or_exit,
    say,
    setup_jax,
)
from ._nystrom import load_projector

SUMMARY = ("train a classifier on labelled trees: ksvm (kernel SVM), dcd (Nyström + linear "
           "SVM), kda (Nyström + MLP) or cpa (cutting-plane SVM)")

ALGOS = {
    "ksvm": "one-vs-rest C-SVMs by SMO on the full Gram matrix (the exact kernel SVM, "
            "SVM-Light-TK's problem; time and memory grow as the square of the trees)",
    "dcd": "a Nyström embedding + one-vs-rest linear SVMs by dual coordinate descent "
           "(approximate, scales to many trees; needs --landmarks M or --projector FILE)",
    "kda": "a Nyström layer + an MLP, the kernel-based deep architecture (needs --landmarks M "
           "or --projector FILE)",
    "cpa": "cutting-plane SVMs with sampled cuts on the tree forest (uSVM / SDAG+, uSVM+j "
           "with --j; for large, imbalanced binary tasks)",
}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("trees", metavar="TREES", help="labelled training trees: SVM-Light-TK "
                   "lines (label first), or a TSV with a 'tree' column and a label column "
                   "(see --label-column)")
    p.add_argument("--algo", choices=tuple(ALGOS), default=None,
                   help="the learner (required, no default: the four trade accuracy, "
                        "training time and model size so differently that no choice is right "
                        "for most data). " + "; ".join(f"{k}: {v}" for k, v in ALGOS.items()))
    p.add_argument("--projector", metavar="FILE.npz", help="dcd/kda: a projector from "
                   "`jkern nystrom fit` (default: none; one is fitted from TREES with the "
                   "kernel flags and --landmarks)")
    p.add_argument("--landmarks", "-l", type=positive_int, metavar="M",
                   help="dcd/kda without --projector: landmark trees sampled from TREES, "
                        "without replacement (at most the number of trees; no default: "
                        "required then)")
    add_seed_argument(p, "seed of the landmark sampling, cpa's samples and kda's "
                         "initialisation, dropout and development split")
    add_kernel_arguments(p, required=False)
    p.add_argument("--C", type=positive_float, default=1.0, dest="C",
                   help="the SVM's cost C (default 1). ksvm, dcd: the C of the C-SVM, per "
                        "training tree (LIBSVM's and LIBLINEAR's -c). cpa: the 1-slack C, "
                        "which weighs the mean loss over the n trees, so it is n times "
                        "SVM-light's -c (n = 5000 trees: --C 5000 is SVM-light's -c 1); "
                        "--c-light gives SVM-light's value instead")
    p.add_argument("--label-column", metavar="NAME",
                   help="TSV input: the label column (default: the column named 'label'; "
                        "SVM-Light-TK lines carry their labels)")
    kda = p.add_argument_group("kda options")
    kda.add_argument("--hidden", default=None, metavar="W,W",
                     help="hidden-layer widths (default: two layers as wide as the landmarks)")
    kda.add_argument("--dropout", type=float, default=0.2, metavar="P",
                     help="dropout rate (default 0.2)")
    kda.add_argument("--l2", type=float, default=1e-4, metavar="L",
                     help="weight penalty λ (default 1e-4)")
    kda.add_argument("--steps", type=positive_int, default=None, metavar="S",
                     help="without a development split: optimizer steps on every tree "
                          "(default 1000)")
    kda.add_argument("--epochs", type=positive_int, default=None, metavar="E",
                     help="most training epochs, replacing --steps (default: 500 with a "
                          "development split, else the epochs that make --steps)")
    kda.add_argument("--patience", type=positive_int, default=20, metavar="N",
                     help="early stopping: epochs without a better dev accuracy (default 20)")
    kda.add_argument("--dev-fraction", type=float, default=None, metavar="F",
                     help="stratified part of the training trees held out for early stopping "
                          "(default: 0.1 when that is at least 200 trees, else none: "
                          "--steps on every tree)")
    cpa = p.add_argument_group("cpa options")
    cpa.add_argument("--sample", "-r", type=positive_int, default=1000, metavar="R",
                     help="examples drawn per iteration (default 1000; >= the number of trees: "
                          "all of them, the exact cutting-plane algorithm)")
    cpa.add_argument("--epsilon", type=positive_float, default=1e-3, metavar="E",
                     help="stop when no cutting plane is violated by more than this "
                          "(default 0.001)")
    cpa.add_argument("--confirm", type=positive_int, default=1, metavar="K",
                     help="stop only when the --epsilon test passes on K consecutive samples "
                          "(default 1, the paper's rule; sampled tests often pass early)")
    cpa.add_argument("--j", type=positive_float, default=None, metavar="J",
                     help="uSVM+j: draw the sample by cost-proportionate rejection sampling, "
                          "positive examples J times as likely to be kept as negative ones "
                          "(default: none, plain uSVM)")
    cpa.add_argument("--c-light", type=positive_float, default=None, metavar="C",
                     help="SVM-light's C instead of --C: the 1-slack C becomes C times the "
                          "number of trees, or with --j times the sum of the importance "
                          "weights (the same problem as SVM-light's -c C -j J; default: none, "
                          "--C is the 1-slack C)")
    cpa.add_argument("--max-iter", type=positive_int, default=500, metavar="N",
                     help="most cutting-plane iterations (default 500)")
    cpa.add_argument("--cpa-mode", choices=("forest", "sdag+", "sdag", "usvm"),
                     default="forest", help="how margins are computed (same model, different "
                     "work; default forest: everything on one DAG)")
    cpa.add_argument("--devices", type=positive_int, default=None, metavar="N",
                     help="shard the sample's margin blocks over the first N JAX devices "
                          "(e.g. GPUs; default: the default device only)")
    p.add_argument("--out", "-o", required=True, metavar="MODEL.npz",
                   help="the model file, for `jkern predict` and jkern.load (required)")
    add_common_arguments(p)


def _check(args: argparse.Namespace) -> None:
    """Usage checks, before any work."""
    if args.algo is None:
        raise CLIError("choose the learner, --algo ksvm|dcd|kda|cpa (no default): ksvm the "
                       "exact kernel SVM; dcd Nyström + linear SVMs (with --landmarks M); kda "
                       "Nyström + MLP (with --landmarks M); cpa cutting-plane SVMs (see "
                       "'jkern train --help')")
    nystrom = args.algo in ("dcd", "kda")
    if nystrom and args.projector is None and args.landmarks is None:
        raise CLIError(f"--algo {args.algo} needs --projector FILE or --landmarks M")
    if args.projector is None:
        if args.kernel is None:
            raise CLIError("give --kernel (or --projector FILE for --algo dcd/kda)")
        check_kernel_arguments(args)
    if args.algo == "kda":
        if args.hidden is not None:
            try:
                args.hidden = [int(w) for w in args.hidden.split(",")]
            except ValueError:
                raise CLIError(f"--hidden {args.hidden}: use comma-separated widths") from None


def _devices(n: int | None):
    if n is None:
        return None
    import jax

    devices = jax.devices()[:n]
    if len(devices) < n:
        raise CLIError(f"--devices {n}: JAX sees {len(devices)} device(s) "
                       f"({', '.join(str(d) for d in devices)})")
    return devices


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    _check(args)
    out = check_output_path(args.out, (".npz",),
                            inputs=(args.trees, args.projector, args.vectors))
    setup_jax(args.dtype)
    import jax

    import jkern

    if args.algo == "kda":  # the library's checks, before any work
        with input_errors():
            jkern.check_kda_options(dropout=args.dropout, dev_fraction=args.dev_fraction,
                                    names=("--dropout", "--dev-fraction"))

    trees = read_trees_or_exit(args.trees, args.encoding)
    labels = read_labels_or_exit(args.trees, args.label_column, args.encoding)
    try:
        jkern.check_labels(labels, len(trees))
    except jkern.errors.InputError as err:
        raise CLIError(f"{args.trees}: {err}") from err
    key = jax.random.PRNGKey(args.seed)
    options = gram_options(args)
    note = ""
    if args.algo in ("dcd", "kda"):
        # a key per consumer (docs/learners.md): the landmark sampling and the learner
        k_landmarks, k_learner = jax.random.split(key)
        if args.projector is not None:
            proj = load_projector(args.projector)
        else:
            kernel = kernel_from_arguments(args)
            # the library refuses more landmarks than trees, reports the phase with --progress
            with compute_errors():
                proj = jkern.fit_nystrom(kernel, trees, landmarks=args.landmarks,
                                         key=k_landmarks, **options)
        with compute_errors():
            if args.algo == "dcd":
                sol = jkern.train_nystrom_svm(proj, trees, labels, C=args.C, key=k_learner,
                                              **options)
            else:
                if not isinstance(proj, jkern.Nystrom):
                    raise CLIError("--algo kda needs a single projector (not an ensemble)")
                sol = jkern.train_kda(proj, trees, labels, key=k_learner, hidden=args.hidden,
                                      dropout=args.dropout, l2=args.l2, steps=args.steps,
                                      epochs=args.epochs, patience=args.patience,
                                      dev_fraction=args.dev_fraction, split_seed=args.seed,
                                      **options)
                best, dev = int(sol.stats["best_epoch"]), int(sol.stats["dev_size"])
                note = (f"best dev accuracy {float(sol.stats['dev_accuracy'][best]):.4f} "
                        f"({dev} dev trees) at epoch {best + 1} of "
                        f"{int(sol.stats['n_epochs'])}" if dev else
                        f"{int(sol.stats['steps'])} optimizer steps on every tree (no "
                        "development split: fewer than 200 trees would be held out)")
        costs, what = sol.model.n_landmarks, "landmarks"
    else:
        kernel = kernel_from_arguments(args)
        with compute_errors():
            if args.algo == "ksvm":
                sol = jkern.train_kernel_svm(kernel, trees, labels, C=args.C, **options)
            else:
                sol = jkern.train_cutting_plane(
                    kernel, trees, labels, key=key, C=args.C, c_light=args.c_light, j=args.j,
                    sample=args.sample, epsilon=args.epsilon, confirm=args.confirm,
                    max_iter=args.max_iter, mode=args.cpa_mode, dtype=args.dtype,
                    threads=args.threads, devices=_devices(args.devices),
                    progress=options["progress"])
                converged = sol.converged.tolist()  # one flag, or one per class
                per_class = isinstance(converged, list)
                runs = sol.stats["history"] if per_class else [sol.stats["history"]]
                note = f"{sum(len(h) for h in runs)} cutting-plane iterations"
                converged = converged if per_class else [converged]
                classes = tuple(sol.model.classes or ())
                names = classes if len(converged) > 1 else classes[-1:]
                for c, ok in zip(names, converged):
                    if not ok:
                        say(args, f"warning: class {c}: not converged in {args.max_iter} "
                                  "iterations (raise --max-iter or --epsilon)")
        costs, what = sol.model.n_support, "support vectors"
    with output_errors():
        jkern.save(out, sol.model)
    n_classes = len(set(labels))
    say(args, f"train {args.algo}: {len(trees)} trees, {n_classes} classes, {costs} {what} "
              f"(kernel evaluations per prediction){', ' + note if note else ''} -> "
              f"{args.out} in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK
