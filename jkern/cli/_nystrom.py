"""`jkern nystrom fit|embed`: fit a Nyström projector from trees, or embed trees with one."""

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

SUMMARY = "fit a Nyström projector from trees, or embed trees with one"


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    sub.required = True
    fit = sub.add_parser("fit", help="fit a projector (landmarks + H) from trees",
                         description="fit a Nyström projector from trees")
    fit.add_argument("trees", metavar="TREES", help="training trees (landmarks come from them)")
    add_kernel_arguments(fit)
    fit.add_argument("--landmarks", "-l", type=positive_int, required=True, metavar="M",
                     help="landmark trees sampled from TREES, without replacement (required; "
                          "at most the number of trees)")
    fit.add_argument("--ensemble", type=positive_int, default=1, metavar="E",
                     help="E independent projections, concatenated (default 1)")
    fit.add_argument("--stratify", action="store_true",
                     help="sample landmarks stratified by the file's labels (default off: "
                          "uniformly)")
    fit.add_argument("--label-column", metavar="NAME",
                     help="--stratify with TSV input: the label column (default: the column "
                          "named 'label')")
    add_seed_argument(fit, "landmark sampling seed")
    fit.add_argument("--rcond", type=positive_float, default=1e-5,
                     help="drop eigen-components with s_i/s_0 below it (default 1e-5)")
    fit.add_argument("--out", "-o", required=True, metavar="FILE.npz",
                     help="the projector file, for `nystrom embed` and `train --projector` "
                          "(required)")
    add_common_arguments(fit)
    fit.set_defaults(_action=run_fit)
    embed = sub.add_parser("embed", help="embed trees with a saved projector",
                           description="embed trees with a saved Nyström projector")
    embed.add_argument("projector", metavar="PROJECTOR.npz",
                       help="a projector from `jkern nystrom fit`")
    embed.add_argument("trees", metavar="TREES",
                       help="the trees to embed, in any format `jkern gram` reads")
    embed.add_argument("--out", "-o", required=True, metavar="FILE(.npy|.tsv)",
                       help="the [trees, rank] embedding: .npy, or .tsv with one row per line "
                            "(required)")
    add_common_arguments(embed)
    embed.set_defaults(_action=run_embed)


def run(args: argparse.Namespace) -> int:
    return args._action(args)


def run_fit(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    check_kernel_arguments(args)
    out = check_output_path(args.out, (".npz",), inputs=(args.trees, args.vectors))
    setup_jax(args.dtype)
    import jax

    import jkern

    trees = read_trees_or_exit(args.trees, args.encoding)
    labels = (read_labels_or_exit(args.trees, args.label_column, args.encoding)
              if args.stratify else None)
    kernel = kernel_from_arguments(args)
    options = dict(landmarks=args.landmarks, key=jax.random.PRNGKey(args.seed), labels=labels,
                   rcond=args.rcond, **gram_options(args))
    # the library refuses more landmarks than trees, reports the phase with --progress
    with compute_errors():
        if args.ensemble > 1:
            proj = jkern.fit_nystrom_ensemble(kernel, trees, projections=args.ensemble,
                                              **options)
        else:
            proj = jkern.fit_nystrom(kernel, trees, **options)
    with output_errors():
        jkern.save(out, proj)
    say(args, f"nystrom fit: {proj.n_landmarks} landmarks, rank {proj.rank} -> {args.out} in "
              f"{time.perf_counter() - t0:.2f} s")
    return EXIT_OK


def load_projector(path: str):
    """A saved projector (a model file of another kind is an input error)."""
    import jkern

    with input_errors():
        proj = jkern.load(path)
    if not isinstance(proj, (jkern.Nystrom, jkern.NystromEnsemble)):
        raise CLIError(f"{path}: not a Nyström projector (a {type(proj).__name__})")
    return proj


def run_embed(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    out = check_output_path(args.out, inputs=(args.projector, args.trees))
    setup_jax("float64")  # the file's arrays load at their saved precision
    from jkern.io import write_matrix

    proj = load_projector(args.projector)
    trees = read_trees_or_exit(args.trees, args.encoding)
    with compute_errors():
        x = proj.embed(trees, **gram_options(args))
    with output_errors():
        write_matrix(out, x)
    say(args, f"nystrom embed: {x.shape[0]}x{x.shape[1]} -> {args.out} in "
              f"{time.perf_counter() - t0:.2f} s")
    return EXIT_OK
