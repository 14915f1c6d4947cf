"""SVM-Light-TK example lines: `label |BT| tree |BT| tree |ET| vector |BV| vector |EV|`."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable

from ._errors import TreeParseError, position, quote
from ._penn import parse_penn
from ._textfile import DEFAULT_ENCODING, parse_uint, read_lines
from ._tree import Tree

_MARKER = re.compile(r"\|(?:BT|ET|BV|EV)\|")
_WORD = re.compile(r"\S+")
# ASCII-only numbers (Python's float() would also take "1_0", "inf" or Arabic digits).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_FEATURE = re.compile(r"([0-9]+):(.*)")

SparseVector = tuple[tuple[int, float], ...]


@dataclasses.dataclass(frozen=True)
class Example:
    """One labelled example: zero or more trees and zero or more sparse vectors.

    Attributes:
        label: The target, e.g. `+1.0` / `-1.0`.
        trees: The trees of the `|BT| ... |ET|` block, in order.
        vectors: The sparse vectors of the `... |BV| ... |EV|` block, each a tuple of
            `(index, value)` pairs sorted by (positive) index.

    >>> Example(1.0, (Tree.from_nested(("A", ["b"])),), (((3, 0.5),),)).vectors
    (((3, 0.5),),)
    """

    label: float
    trees: tuple[Tree, ...]
    vectors: tuple[SparseVector, ...]


def parse_svmlight_line(text: str, *, source: str = "<string>", line: int = 1) -> Example:
    """Parse one SVM-Light-TK line.

    The format is `label |BT| t1 |BT| t2 ... |ET| v1 |BV| v2 ... |EV|`. The tree block
    (from the first `|BT|` to `|ET|`) is optional, and so is the vector block (everything
    after the trees, or after the label when there are none); vectors are separated by
    `|BV|` and the block may end with `|EV|`. A vector is whitespace-separated
    `index:value` tokens with positive integer indices; it may be empty (as in `|ET| |EV|`,
    one empty vector). Whitespace, tabs included, separates the label.

    Args:
        text: The line (without its line ending).
        source: Name used in error messages (usually the file path).
        line: Line number of `text` in `source` (1-based).

    Returns:
        The example.

    Raises:
        TreeParseError: a bad label, a bad or repeated `index:value`, an empty or malformed
            tree, or misplaced markers; columns point into `text`.

    >>> ex = parse_svmlight_line("+1\\t|BT| (A b) |BT| (C d) |ET| 2:1 1:0.5 |BV| 7:2 |EV|")
    >>> ex.label, [t.to_penn() for t in ex.trees], ex.vectors
    (1.0, ['(A b)', '(C d)'], (((1, 0.5), (2, 1.0)), ((7, 2.0),)))
    >>> try:
    ...     parse_svmlight_line("-1 |BT| |ET|", source="x.dat", line=9)
    ... except TreeParseError as err:
    ...     print(err)
    x.dat:9:4: empty tree after |BT|
    """

    def fail(offset: int, problem: str) -> TreeParseError:
        return TreeParseError(source, *position(text, offset, line, 1), problem)

    markers = list(_MARKER.finditer(text))
    head_end = markers[0].start() if markers else len(text)
    words = list(_WORD.finditer(text, 0, head_end))
    if not words:
        if not markers:
            raise fail(len(text) - len(text.lstrip()), "empty line: missing label")
        raise fail(markers[0].start(), f"missing label before {markers[0].group()}")
    label = _number(words[0].group())
    if label is None:
        raise fail(words[0].start(), f"bad label {quote(words[0].group())} (expected a number)")

    trees: list[Tree] = []
    vec_start, rest = words[0].end(), markers
    if markers and markers[0].group() == "|BT|":
        if len(words) > 1:
            raise fail(words[1].start(), f"unexpected text {quote(words[1].group())} before |BT|")
        j = 1
        while j < len(markers) and markers[j].group() == "|BT|":
            j += 1
        if j == len(markers):
            raise fail(markers[0].start(), "|BT| without a closing |ET|")
        if markers[j].group() != "|ET|":
            raise fail(markers[j].start(), f"expected |ET| before {markers[j].group()}")
        for k in range(j):
            start, end = markers[k].end(), markers[k + 1].start()
            segment = text[start:end]
            if not segment.strip():
                raise fail(markers[k].start(), "empty tree after |BT|")
            row, col = position(text, start, line, 1)
            trees.append(parse_penn(segment, source=source, line=row, column=col))
        vec_start, rest = markers[j].end(), markers[j + 1 :]

    vectors: list[SparseVector] = []
    for k, marker in enumerate(rest):
        name = marker.group()
        if name in ("|BT|", "|ET|"):
            problem = ("|BT| must come right after the label" if name == "|BT|"
                       else "|ET| without |BT|")
            raise fail(marker.start(), problem)
        if name == "|EV|" and k != len(rest) - 1:
            raise fail(rest[k + 1].start(), f"{rest[k + 1].group()} after |EV|")
    ends = [m.start() for m in rest]
    if rest and rest[-1].group() == "|EV|":
        tail = _WORD.search(text, rest[-1].end())
        if tail is not None:
            raise fail(tail.start(), f"text after |EV|: {quote(tail.group())}")
    else:
        ends.append(len(text))
    if rest or text[vec_start:].strip():
        starts = [vec_start] + [m.end() for m in rest if m.group() == "|BV|"]
        for start, end in zip(starts, ends):
            vectors.append(_parse_vector(text, start, end, fail))
    return Example(label, tuple(trees), tuple(vectors))


def _parse_vector(
    text: str, start: int, end: int, fail: Callable[[int, str], TreeParseError]
) -> SparseVector:
    pairs: dict[int, float] = {}
    for word in _WORD.finditer(text, start, end):
        tok = word.group()
        match = _FEATURE.fullmatch(tok)
        value = _number(match.group(2)) if match else None
        if match is None or value is None:
            raise fail(word.start(), f"bad feature {quote(tok)} (expected index:value)")
        index = parse_uint(match.group(1))  # None past 2^63 - 1: ids are int64 labels
        if index is None:
            raise fail(word.start(), f"feature index must be at most 2^63 - 1, got "
                       f"{quote(tok)}")
        if index <= 0:
            raise fail(word.start(), f"feature index must be positive, got {quote(tok)}")
        if index in pairs:
            raise fail(word.start(), f"feature index {index} appears twice")
        pairs[index] = value
    return tuple(sorted(pairs.items()))


def _number(tok: str) -> float | None:
    if _NUMBER.fullmatch(tok) is None:
        return None
    value = float(tok)
    return value if math.isfinite(value) else None


def read_examples(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING
                  ) -> list[Example]:
    """Read an SVM-Light-TK file, one example per line (blank and `#` lines skipped).

    The file is decoded strictly in `encoding` (default `"utf-8"`; e.g. `"latin-1"`): a
    byte not valid in it is a `TreeParseError` at `path:line:column`, never guessed around.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "train.dat"
    >>> _ = p.write_text("+1 |BT| (A b) |ET| 3:1 |EV|\\n\\n-1 |BT| (A c) |ET|\\n")
    >>> [(e.label, e.trees[0].to_penn(), e.vectors) for e in read_examples(p)]
    [(1.0, '(A b)', (((3, 1.0),),)), (-1.0, '(A c)', ())]
    """
    source = str(path)
    return [
        parse_svmlight_line(text, source=source, line=number)
        for number, text in enumerate(read_lines(path, encoding=encoding), 1)
        if text.strip() and not text.lstrip().startswith("#")
    ]


def format_svmlight_line(example: Example) -> str:
    """The SVM-Light-TK line of an example (the inverse of `parse_svmlight_line`).

    >>> line = "+1 |BT| (A b) |BT| (C d) |ET| 1:0.5 2:1 |BV| 7:2 |EV|"
    >>> format_svmlight_line(parse_svmlight_line(line))
    '1 |BT| (A b) |BT| (C d) |ET| 1:0.5 2:1.0 |BV| 7:2.0 |EV|'
    """
    parts = [format(example.label, "g")]
    if example.trees:
        parts.extend(f"|BT| {t.to_penn()}" for t in example.trees)
        parts.append("|ET|")
    if example.vectors:
        parts.append(" |BV| ".join(" ".join(f"{i}:{v!r}" for i, v in vector)
                                   for vector in example.vectors))
        parts.append("|EV|")
    return " ".join(parts)
