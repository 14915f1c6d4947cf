"""Sparse-vector files: LIBSVM / SVM-light lines in, labelled `SparseRows` out, and back.

A line is `label idx:val idx:val ... # comment` (LIBSVM, SVM-light) or an SVM-Light-TK line
`label |BT| tree ... |ET| idx:val ... |EV|`, whose first vector (the one after `|ET|`) is taken.
Lines are parsed by jkern's one SVM-Light-TK reader (`jkern.trees.parse_svmlight_line`), so
both kinds of line give the same errors: a `TreeParseError` naming file, line and column.

Sparse rows and their files are data, not one learner's: online PA-I (`jkern.pa`), the UD
attachment loader and the command line read them here (`jkern.pa` re-exports the readers).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from .._sparse import SparseRows
from ..errors import InputError
from ..trees._errors import TreeParseError, quote
from ..trees._svmlight import parse_svmlight_line
from ..trees._textfile import DEFAULT_ENCODING, read_lines

_MARKER = re.compile(r"\|(?:BT|ET|BV|EV)\|")


class SparseExamples(NamedTuple):
    """Labelled sparse vectors: `features` (a `SparseRows`, columns = the file's feature ids)
    and `labels` (`[n]` int32, ±1)."""

    features: SparseRows
    labels: np.ndarray


def _strip_comment(text: str) -> str:
    """`text` without its `# comment`: from the first `#` after the last marker (a `#` inside
    a tree, the Penn tag of the pound sign, is not a comment)."""
    markers = list(_MARKER.finditer(text))
    start = markers[-1].end() if markers else 0
    cut = text.find("#", start)
    return text if cut < 0 else text[:cut]


def parse_sparse_line(text: str, *, source: str = "<string>", line: int = 1
                      ) -> tuple[int, tuple[tuple[int, float], ...]]:
    """One labelled sparse vector: `(label, ((index, value), ...))`, indices increasing.

    The label must be +1 or -1 (`1`, `+1`, `-1`, `1.0`, ...); indices are positive ints, each
    at most once; values are finite reals (zeros are dropped). Text after `#` (outside trees)
    is a comment.

    Raises:
        TreeParseError: a bad label, feature or marker; `str(err)` is
            `source:line:column: problem`.

    >>> parse_sparse_line("+1 3:1 1:0.5 7:0 # note")
    (1, ((1, 0.5), (3, 1.0)))
    >>> parse_sparse_line("-1 |BT| (S (# #)) |ET| 2:1 |EV|")
    (-1, ((2, 1.0),))
    >>> try:
    ...     parse_sparse_line("2 1:1", source="train.svm", line=4)
    ... except TreeParseError as err:
    ...     print(err)
    train.svm:4:1: label must be +1 or -1, got '2'
    """
    body = _strip_comment(text)
    example = parse_svmlight_line(body, source=source, line=line)
    if example.label not in (1.0, -1.0):
        start = len(body) - len(body.lstrip())
        token = body.split(maxsplit=1)[0]
        raise TreeParseError(source, line, start + 1,
                             f"label must be +1 or -1, got {quote(token)}")
    vector = example.vectors[0] if example.vectors else ()
    return int(example.label), tuple((i, v) for i, v in vector if v != 0)


def parse_sparse_lines(lines: Iterable[str], *, source: str = "<string>",
                       dtype: Any = None) -> SparseExamples:
    """Parse lines (blank lines and lines starting with `#` are skipped) into a
    `SparseExamples`; columns are the file's feature ids (`n_features` = largest id + 1)
    unless the ids are sparse (few of them used, `jkern._sparse.sparse_ids`, or past int32):
    then only the ids in use get columns, named by `features.ids` (ids are labels: memory
    follows the distinct features, and a model maps new data's ids onto its columns).

    >>> data = parse_sparse_lines(["+1 1:1 4:1", "# comment", "-1 2:1"])
    >>> data.labels.tolist(), data.features.indices.tolist(), data.features.n_features
    ([1, -1], [[1, 4], [2, 0]], 5)
    >>> X = parse_sparse_lines(["+1 1:1 4294967297:1"]).features
    >>> X.indices.tolist(), X.ids.array.tolist()
    ([[0, 1]], [1, 4294967297])
    """
    labels: list[int] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for number, text in enumerate(lines, 1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        label, vector = parse_sparse_line(text, source=source, line=number)
        for i, v in vector:
            rows.append(len(labels))
            cols.append(i)
            vals.append(v)
        labels.append(label)
    if not labels:
        raise InputError(f"{source}: no examples (every line is blank or a comment)")
    d = max(cols, default=0) + 1
    X = SparseRows.from_coo(rows, cols, np.asarray(vals, np.float64), (len(labels), d),
                            dtype=dtype, compact=None)
    return SparseExamples(X, np.asarray(labels, np.int32))


def read_sparse(path: str | os.PathLike[str], *, dtype: Any = None,
                encoding: str = DEFAULT_ENCODING) -> SparseExamples:
    """Read a LIBSVM / SVM-light file (or SVM-Light-TK lines: the vector after `|ET|`).

    Args:
        path: the file, one example per line.
        dtype: the values' floating dtype (default JAX's default float).
        encoding: the file's text encoding (default `"utf-8"`), decoded strictly: no
            fallback to another encoding.

    Returns:
        `SparseExamples(features, labels)`.

    Raises:
        TreeParseError: a malformed line, or a byte not valid in `encoding`
            (`path:line:column: problem`).
        InputError: the file holds no examples; an unknown `encoding`.
    """
    return parse_sparse_lines(read_lines(path, encoding=encoding), source=str(path),
                              dtype=dtype)


def write_sparse(path: str | os.PathLike[str], data: SparseExamples, *,
                 offset: int = 1) -> int:
    """Write `data` as LIBSVM lines `label id:value ...` (ids increasing), for opal & co.

    Feature id j (column j, or the id `X.ids` gives it) is written as `j + offset` (LIBSVM
    ids start at 1), so `read_sparse` gives the ids shifted by `offset`; the frequency
    renumbering (`frequency_order`) makes the two numberings give the same model. Values
    print as `repr` floats (`1` for 1.0).

    Returns:
        The number of lines written.

    >>> import pathlib, tempfile
    >>> X = SparseRows.from_rows([{0: 1, 3: 1}, {2: 0.5}])
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.svm"
    >>> write_sparse(p, SparseExamples(X, np.array([1, -1])))
    2
    >>> p.read_text().splitlines()
    ['+1 1:1 4:1', '-1 3:0.5']
    """
    if not isinstance(offset, int) or offset < 1:
        raise InputError(f"offset must be an int >= 1 (LIBSVM ids are positive), got {offset!r}")
    X, labels = data.features, np.asarray(data.labels)
    idx = X.column_ids(np.asarray(X.indices))  # the feature ids (`X.ids` when it names them)
    val = np.asarray(X.values).astype(np.float64)
    if len(labels) != idx.shape[0]:
        raise InputError(f"{len(labels)} labels for {idx.shape[0]} rows")
    top = int(idx[np.asarray(X.values) != 0].max(initial=0))
    if top + offset > 2**63 - 1:
        raise InputError(f"feature id {top} + offset {offset} is past 2^63 - 1: the file "
                         "could not be read back (LIBSVM ids are int64 here)")
    with open(path, "w", encoding="utf-8") as f:
        for row, (i, v) in enumerate(zip(idx, val)):
            nz = v != 0
            order = np.argsort(i[nz], kind="stable")
            items = " ".join(f"{c + offset}:{_number(x)}"
                             for c, x in zip(i[nz][order].tolist(), v[nz][order].tolist()))
            label = "+1" if labels[row] > 0 else "-1"
            f.write(f"{label} {items}\n" if items else f"{label}\n")
    return len(labels)


def _number(x: float) -> str:
    return str(int(x)) if x == int(x) and abs(x) < 2**53 else repr(x)
