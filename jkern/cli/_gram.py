"""`jkern gram`: a tree-kernel Gram matrix (or a block between two files)."""

from __future__ import annotations

import argparse
import time

from ._common import (
    EXIT_OK,
    add_dtype_argument,
    add_encoding_argument,
    add_kernel_arguments,
    add_progress_argument,
    add_quiet_argument,
    add_threads_argument,
    check_kernel_arguments,
    check_output_path,
    compute_errors,
    kernel_from_arguments,
    kernel_name,
    output_errors,
    progress_on,
    read_trees_or_exit,
    say,
    setup_jax,
)

SUMMARY = "compute a tree-kernel Gram matrix"


def configure(p: argparse.ArgumentParser) -> None:
    add_kernel_arguments(p)
    add_dtype_argument(p, "compute precision (default float64, for exact values; float32 is "
                          "faster but has ~7 digits and overflows on big trees or lam/mu near "
                          "1, which is reported as an error)")
    add_progress_argument(p)
    add_threads_argument(p)
    add_encoding_argument(p)
    add_quiet_argument(p)
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="output matrix: FILE.npy (NumPy) or FILE.tsv (one row per line, "
                        "tab-separated, exact decimal) (required)")
    p.add_argument("trees", metavar="TREES",
                   help="trees, one per line: Penn brackets, SVM-Light-TK |BT| ... |ET| lines, "
                        "or a TSV with a 'tree' column (auto-detected)")
    p.add_argument("trees2", metavar="TREES2", nargs="?",
                   help="second tree file: output the |TREES| x |TREES2| block instead of "
                        "the square Gram of TREES (default: none, the square Gram)")


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    check_kernel_arguments(args)
    out = check_output_path(args.out, inputs=(args.trees, args.trees2, args.vectors))
    setup_jax(args.dtype)
    trees1 = read_trees_or_exit(args.trees, args.encoding)
    trees2 = None if args.trees2 is None else read_trees_or_exit(args.trees2, args.encoding)
    kernel = kernel_from_arguments(args)

    import jkern
    from jkern.io import write_matrix

    with compute_errors():  # the kernels raise on inf/NaN (overflow)
        matrix = jkern.gram(kernel, trees1, trees2, dtype=args.dtype,
                            progress=progress_on(args), threads=args.threads)
    with output_errors():
        write_matrix(out, matrix)
    n, m = matrix.shape
    say(args, f"gram {n}x{m} {kernel_name(args)} {args.dtype} -> {args.out} "
              f"in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK
