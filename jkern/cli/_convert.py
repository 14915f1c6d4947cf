"""`jkern convert`: reshape the trees of a file (constituency parses to the dependency shapes
of Croce et al. 2011, or words marked with their PoS), keeping the file's format and its other
columns, so every other command runs on the result (see docs/cli.md)."""

from __future__ import annotations

import argparse
import time

from ._common import (
    EXIT_OK,
    CLIError,
    add_encoding_argument,
    add_quiet_argument,
    check_output_path,
    input_errors,
    output_errors,
    say,
)

SHAPES = ("grct", "cgrct", "lct", "loct", "pos-leaves")


def _dependency_shape(shape: str):
    from jkern.trees import cgrct, grct, lct, loct

    return {"grct": grct, "cgrct": cgrct, "lct": lct, "loct": loct}[shape]


SUMMARY = ("convert the trees of a file to another shape (GRCT, CGRCT, LCT, LOCT, PoS-marked "
           "words)")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("trees", metavar="TREES",
                   help="constituency parses: Penn lines, a TSV with a 'tree' column, or "
                        "SVM-Light-TK lines (every tree of each example is converted); or a "
                        "CoNLL-U file (*.conllu: its dependency parses, for grct/cgrct/lct/loct)")
    p.add_argument("--shape", required=True, choices=SHAPES,
                   help="grct / lct / loct: the dependency tree shapes of the parses' head-rule "
                        "dependency parses; cgrct: the compositional GRCT (CSPTK's input); "
                        "pos-leaves: words relabelled word::TAG "
                        "(lowercased), for SPTK on constituency parses (required; no default)")
    p.add_argument("--syntactic-heads", action="store_true",
                   help="Collins' syntactic heads (auxiliaries and copulas head their "
                        "phrase); default: semantic heads, as in Universal Dependencies")
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="the converted file (same format as TREES) (required)")
    add_encoding_argument(p)
    add_quiet_argument(p)


def _transform(shape: str, semantic: bool):
    from jkern.trees import head_dependencies, pos_leaves

    if shape == "pos-leaves":
        return lambda tree: pos_leaves(tree, lowercase=True)
    build = _dependency_shape(shape)
    return lambda tree: build(head_dependencies(tree, semantic=semantic))


def _conllu_shapes(path: str, shape: str, encoding: str) -> tuple[str, int]:
    """The GRCT / CGRCT / LCT / LOCT of each sentence of a CoNLL-U file, one Penn tree per line, and
    how many there are."""
    from jkern.trees import read_conllu

    if shape == "pos-leaves":
        raise CLIError(f"{path}: --shape pos-leaves needs constituency parses, not CoNLL-U")
    build = _dependency_shape(shape)
    lines = [build(sentence).to_penn() for sentence in read_conllu(path, encoding=encoding)]
    return "".join(f"{line}\n" for line in lines), len(lines)


def run(args) -> int:
    t0 = time.perf_counter()
    from jkern.io import write_atomic
    from jkern.trees import rewrite_trees

    # any file name: the format is the input's
    out = check_output_path(args.out, None, inputs=(args.trees,))
    transform = _transform(args.shape, not args.syntactic_heads)
    converted = []

    def counted(tree):
        converted.append(None)
        return transform(tree)

    with input_errors():
        if args.trees.endswith(".conllu"):
            text, n_trees = _conllu_shapes(args.trees, args.shape, args.encoding)
        else:
            text = rewrite_trees(args.trees, counted, encoding=args.encoding)
            n_trees = len(converted)
    if not n_trees:
        raise CLIError(f"{args.trees}: no trees in file")
    with output_errors():
        write_atomic(out, lambda f: f.write(text.encode("utf-8")))
    say(args, f"convert {args.shape}: {n_trees} trees -> {args.out} in "
              f"{time.perf_counter() - t0:.2f} s")
    return EXIT_OK

