"""Loader for the UIUC/TREC question-classification parses (Li & Roth 2002)."""

from __future__ import annotations

import os
import pathlib
from typing import Literal, NamedTuple

from ..errors import InputError
from ..trees._textfile import DEFAULT_ENCODING, iter_lines
from ..trees._tree import Tree

TREC_FILES = {"train": "qc_train.tsv", "test": "qc_test.tsv"}
TREC_COARSE = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
_HEADER = ["coarse", "fine", "tree"]


class TrecData(NamedTuple):
    """Parsed questions with their labels.

    Attributes:
        trees: constituency parse of each question.
        coarse: coarse class of each question (one of `TREC_COARSE`).
        fine: fine class (e.g. `"exp"`, `"abb"`; 50 in all, named within their coarse class).
    """

    trees: list[Tree]
    coarse: list[str]
    fine: list[str]


def load_trec(
    data_dir: str | os.PathLike[str], split: Literal["train", "test"] = "train", *,
    encoding: str = DEFAULT_ENCODING,
) -> TrecData:
    """Read `<data_dir>/trec/qc_train.tsv` (5,401 questions) or `qc_test.tsv` (500).

    Each row is `coarse<TAB>fine<TAB>tree` with the tree in Penn brackets; a parse error
    names the file, line and column of the offending tree.

    Args:
        data_dir: the shared data folder (the one holding `trec/`), e.g. `../shared/data`.
        split: `"train"` or `"test"` (the official split).
        encoding: the file's text encoding (default `"utf-8"`: the shipped `qc_*.tsv` are
            ASCII), decoded strictly; a byte not valid in it is a located error.

    Returns:
        A `TrecData` in file order.

    Raises:
        FileNotFoundError: the file is missing (the message names the path it expected).
        ValueError: a malformed row or tree, or a byte not valid in `encoding`
            (`InputError`, `TreeParseError`: file and line).
    """
    from ..trees import parse_penn

    if split not in TREC_FILES:
        raise InputError(f"split must be 'train' or 'test', got {split!r}")
    path = pathlib.Path(data_dir) / "trec" / TREC_FILES[split]
    if not path.is_file():
        raise FileNotFoundError(
            f"TREC question-classification data not found: expected {path}. "
            "Point --data-dir (or the data_dir argument) at the shared data folder "
            "that holds trec/qc_train.tsv and trec/qc_test.tsv (default ../shared/data)."
        )
    source = str(path)
    out = TrecData([], [], [])
    for lineno, line in iter_lines(path, encoding=encoding):
        fields = line.split("\t", 2)
        if lineno == 1:
            if fields != _HEADER:
                raise InputError(
                    f"{source}:1: expected the header 'coarse<TAB>fine<TAB>tree', "
                    f"got {line[:60]!r}"
                )
            continue
        if not line.strip():
            continue
        if len(fields) != 3 or not fields[0] or not fields[1]:
            raise InputError(
                f"{source}:{lineno}: expected 3 tab-separated fields "
                f"(coarse, fine, tree), got {len(fields)}"
            )
        coarse, fine, text = fields
        column = len(coarse) + len(fine) + 3  # 1-based column where the tree starts
        out.trees.append(parse_penn(text, source=source, line=lineno, column=column))
        out.coarse.append(coarse)
        out.fine.append(fine)
    return out
