"""Read trees from any supported file, detecting its format."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from ._errors import TreeParseError
from ._penn import iter_penn, parse_penn
from ._svmlight import Example, format_svmlight_line, parse_svmlight_line
from ._textfile import DEFAULT_ENCODING, read_lines
from ._tree import Tree

_SVMLIGHT_MARKERS = ("|BT|", "|ET|", "|BV|", "|EV|")


def _format(lines: Sequence[str]) -> str:
    if any(m in text for text in lines for m in _SVMLIGHT_MARKERS):
        return "svmlight"
    if lines and "(" not in lines[0] and "tree" in lines[0].split("\t"):
        return "tsv"
    return "penn"


def _svmlight_examples(lines: Sequence[str], source: str) -> Iterator[tuple[int, Example]]:
    for number, text in enumerate(lines, 1):
        if text.strip() and not text.lstrip().startswith("#"):
            yield number, parse_svmlight_line(text, source=source, line=number)


def _tsv_trees(lines: Sequence[str], source: str) -> Iterator[tuple[int, Tree]]:
    column = lines[0].split("\t").index("tree")
    for number, field, start in _tsv_fields(lines, column, "tree", source):
        yield number, parse_penn(field, source=source, line=number, column=start)


def _tsv_fields(lines: Sequence[str], at: int, name: str,
                source: str) -> Iterator[tuple[int, str, int]]:
    """(line number, field `at` (column `name`), its 1-based character column) of every
    non-blank row after the header; a row without the field is an error at its line."""
    for number, text in enumerate(lines[1:], 2):
        if not text.strip():
            continue
        fields = text.split("\t")
        if len(fields) <= at:
            problem = f"row has {len(fields)} fields, no {name!r} column (field {at + 1})"
            raise TreeParseError(source, number, len(text) + 1, problem)
        yield number, fields[at], 1 + sum(len(f) + 1 for f in fields[:at])


def _tsv_column(lines: Sequence[str], at: int, name: str, source: str) -> list[str]:
    """Field `at` (column `name`) of every non-blank row after the header; a row without it,
    or with it empty, is an error at its line."""
    out = []
    for number, field, start in _tsv_fields(lines, at, name, source):
        if not field.strip():
            raise TreeParseError(source, number, start, f"empty {name!r} field")
        out.append(field)
    return out


def read_trees(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING) -> list[Tree]:
    """Read the trees of a file in any supported format, detected from its content.

    - SVM-Light-TK (some line contains `|BT|`, `|ET|`, `|BV|` or `|EV|`): each example's
      first tree; an example without a tree is an error.
    - TSV whose first line is a header with a column named `tree` (such as TREC's
      `qc_train.tsv`): that column of every row.
    - Otherwise Penn brackets, one tree per line or trees over several lines.

    Files are decoded strictly in `encoding`, UTF-8 by default (a leading byte-order mark
    is dropped). There is no automatic fallback: a byte that is not valid in `encoding` is
    a `TreeParseError` at `path:line:column` naming the byte; pass the file's encoding
    (`encoding="latin-1"`, on the command line `--encoding latin-1`).

    Args:
        path: The file.
        encoding: Its text encoding (default `"utf-8"`).

    Returns:
        The trees, in file order.

    Raises:
        TreeParseError: malformed input, or a byte not valid in `encoding`, located as
            `path:line:column`.
        InputError: an unknown or not ASCII-compatible `encoding`.

    Examples:
        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "qc.tsv"
        >>> _ = p.write_text("coarse\\ttree\\nHUM\\t(S (WP Who))\\n")
        >>> [t.to_penn() for t in read_trees(p)]
        ['(S (WP Who))']
    """
    return [tree for _, tree in located_trees(path, encoding=encoding)]


def located_trees(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING
                  ) -> list[tuple[int, Tree]]:
    """`read_trees`' trees, each with the line of the file where it starts (1-based), so that
    a problem found later in a tree (a node too wide for a kernel) can be located."""
    source = str(path)
    lines = read_lines(path, encoding=encoding)
    kind = _format(lines)
    if kind == "tsv":
        return list(_tsv_trees(lines, source))
    if kind == "penn":
        return list(iter_penn(lines, source=source))
    trees = []
    for number, example in _svmlight_examples(lines, source):
        if not example.trees:
            raise TreeParseError(source, number, 1, "example has no tree (no |BT| ... |ET|)")
        trees.append((number, example.trees[0]))
    return trees


def read_examples_any(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING
                      ) -> list[Example]:
    """Read examples from a file in any format `read_trees` accepts.

    SVM-Light-TK lines give their examples (with or without trees); a TSV or Penn tree `t`
    becomes `Example(label=0.0, trees=(t,), vectors=())`.

    Args:
        path: The file.
        encoding: Its text encoding (default `"utf-8"`; decoded strictly, as `read_trees`).

    Returns:
        The examples, in file order.

    Raises:
        TreeParseError: malformed input, located as `path:line:column`.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "tb.txt"
    >>> _ = p.write_text("(A b)\\n")
    >>> read_examples_any(p)[0].label, read_examples_any(p)[0].trees[0].to_penn()
    (0.0, '(A b)')
    """
    source = str(path)
    lines = read_lines(path, encoding=encoding)
    kind = _format(lines)
    if kind == "svmlight":
        return [example for _, example in _svmlight_examples(lines, source)]
    pairs = _tsv_trees(lines, source) if kind == "tsv" else iter_penn(lines, source=source)
    return [Example(0.0, (tree,), ()) for _, tree in pairs]


def rewrite_trees(path: str | os.PathLike[str], transform: Callable[[Tree], Tree], *,
                  encoding: str = DEFAULT_ENCODING) -> str:
    """The text of a tree file with every tree replaced by `transform(tree)`, same format.

    - TSV (header with a `tree` column): every other column and the header are kept;
    - SVM-Light-TK: every tree of every example, labels and vectors kept (comment lines are
      dropped; numbers are rewritten in Python's shortest form);
    - Penn brackets: one tree per line (trees written over several lines become one line).

    Args:
        path: The file (any format `read_trees` accepts).
        transform: Called on each tree; its result must be a `Tree`.
        encoding: The file's text encoding (default `"utf-8"`; decoded strictly, as
            `read_trees`).

    Returns:
        The new file's text, ending in a newline.

    Raises:
        TreeParseError: malformed input, located as `path:line:column`.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "qc.tsv"
    >>> _ = p.write_text("coarse\\ttree\\nHUM\\t(S (WP Who)(VP (VBD won)))\\n")
    >>> from jkern.trees import head_dependencies, loct
    >>> rewrite_trees(p, lambda t: loct(head_dependencies(t))).splitlines()[1]
    'HUM\\t(won::v who::pron)'
    """
    source = str(path)
    lines = read_lines(path, encoding=encoding)
    kind = _format(lines)
    if kind == "tsv":
        out = [lines[0]]
        column = lines[0].split("\t").index("tree")
        rows = (text for text in lines[1:] if text.strip())
        for text, (_, tree) in zip(rows, _tsv_trees(lines, source)):
            fields = text.split("\t")
            fields[column] = transform(tree).to_penn()
            out.append("\t".join(fields))
    elif kind == "penn":
        out = [transform(tree).to_penn() for _, tree in iter_penn(lines, source=source)]
    else:
        out = [format_svmlight_line(Example(e.label, tuple(transform(t) for t in e.trees),
                                            e.vectors))
               for _, e in _svmlight_examples(lines, source)]
    return "".join(f"{text}\n" for text in out)


def tree_file_format(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING) -> str:
    """The format `read_trees` detects for a file: "svmlight", "tsv" or "penn"."""
    return _format(read_lines(path, encoding=encoding))


def read_labels(path: str | os.PathLike[str], column: str | None = None, *,
                encoding: str = DEFAULT_ENCODING) -> list[str]:
    """The labels of a tree file, as text: an SVM-Light-TK file's example labels (formatted
    with `g`: `+1` reads as `1`), or a TSV column (`column`, default `label`).

    The file is decoded strictly in `encoding` (default `"utf-8"`), as `read_trees`.

    Raises:
        InputError: the file has no labels (Penn trees, a TSV without the column).
        TreeParseError: malformed input: a byte not valid in `encoding`, a TSV row without
            the label column or with an empty label; located as `path:line:column`.
    """
    from ..errors import InputError

    lines = read_lines(path, encoding=encoding)
    kind = _format(lines)
    if kind == "tsv":
        header = lines[0].split("\t")
        name = column or ("label" if "label" in header else None)
        if name is None or name not in header:
            raise InputError(f"{path}: name the label column (columns: {', '.join(header)})")
        return _tsv_column(lines, header.index(name), name, str(path))
    if kind != "svmlight":
        raise InputError(f"{path}: no labels (use SVM-Light-TK lines or a TSV with a label "
                         "column)")
    examples = list(_svmlight_examples(lines, str(path)))
    labels = [format(e.label, "g") for _, e in examples]
    if "0" in labels and "-1" in labels:
        # SVM-light's convention: +1 / -1 examples, 0 an unlabelled one (transductive
        # training), not a third class
        at = next(i for (i, _), lab in zip(examples, labels) if lab == "0")
        raise InputError(f"{path}:{at}: label 0 beside -1 and +1 marks an unlabelled example "
                         "(SVM-light's transductive mode), which jkern does not train on: "
                         "remove these lines or give them a class")
    return labels
