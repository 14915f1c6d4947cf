"""`jkern parse`: raw sentences to trees with spaCy (the optional extra `jkern[ds]`), written
so that every other command reads them: Penn trees one per line, or with labels a TSV with
`label` and `tree` columns (see docs/cli.md)."""

from __future__ import annotations

import argparse
import time

from ._common import (
    EXIT_OK,
    CLIError,
    add_encoding_argument,
    add_progress_argument,
    add_quiet_argument,
    check_output_path,
    input_errors,
    output_errors,
    progress_on,
    say,
)

SUMMARY = "parse raw sentences into dependency trees (GRCT, CGRCT, LCT, LOCT) with spaCy"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", metavar="TEXT",
                   help="one sentence (or question) per line; with --labels, 'LABEL<TAB>text' "
                        "lines. Empty lines are skipped")
    p.add_argument("--shape", choices=("grct", "cgrct", "lct", "loct"), default="grct",
                   help="the dependency tree shape (Croce et al. 2011; cgrct: the "
                        "compositional GRCT that CSPTK compares; default grct)")
    p.add_argument("--labels", action="store_true",
                   help="each line starts with a label and a tab; the output is a TSV with "
                        "'label' and 'tree' columns, which `jkern train` reads (default: no "
                        "labels, Penn trees one per line)")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="where parses are cached (default $JKERN_PARSE_CACHE or "
                        "~/.cache/jkern/parses)")
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="the trees file (required)")
    add_encoding_argument(p)
    add_progress_argument(p)
    add_quiet_argument(p)


def _read(path: str, labelled: bool, encoding: str) -> tuple[list[str | None], list[str]]:
    """(labels or Nones, texts) of the non-empty lines, decoded strictly in `encoding`."""
    from jkern.trees import iter_lines

    labels: list[str | None] = []
    texts: list[str] = []
    for number, line in iter_lines(path, encoding=encoding):
        if not line.strip():
            continue
        if labelled:
            label, tab, text = line.partition("\t")
            if not tab or not label.strip() or not text.strip():
                raise CLIError(f"{path}:{number}: expected 'LABEL<TAB>text' (--labels)")
            labels.append(label.strip())
            texts.append(text)
        else:
            labels.append(None)
            texts.append(line)
    return labels, texts


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    # Penn lines or a TSV, whatever the name
    out = check_output_path(args.out, None, inputs=(args.text,))
    with input_errors():
        labels, texts = _read(args.text, args.labels, args.encoding)
    if not texts:
        raise CLIError(f"{args.text}: no sentences in file")
    import jkern
    from jkern.io import write_atomic

    say(args, f"parsing {len(texts)} sentences with spaCy ...")
    with input_errors():
        try:
            trees = jkern.parse(texts, shape=args.shape, cache_dir=args.cache_dir,
                                progress=progress_on(args))
        except ImportError as err:
            raise CLIError(str(err)) from err
    if args.labels:
        lines = ["label\ttree"] + [f"{lab}\t{t.to_penn()}" for lab, t in zip(labels, trees)]
    else:
        lines = [t.to_penn() for t in trees]
    text = "".join(f"{line}\n" for line in lines)
    with output_errors():
        write_atomic(out, lambda f: f.write(text.encode("utf-8")))
    say(args, f"parse {args.shape}: {len(trees)} trees -> {args.out} in "
              f"{time.perf_counter() - t0:.2f} s")
    return EXIT_OK
