"""Head/dependent attachment classification from gold UD trees (issue 21's real PA-I task).

For each token (the dependent) of a sentence, every other token within distance `window` is
a candidate head: label +1 for the gold head, -1 for the others. A gold head farther than
`window`, and the root (head 0, no token), are not candidates, so such a token gives only
negative examples. Candidates are listed dependent by dependent in sentence order, each
dependent's candidates left to right.

Primitive binary features of a (dependent d, candidate head h) pair, as strings:

- `d.form=`, `d.lemma=`, `d.upos=`, `d.xpos=` and the same four for `h.` (form and lemma as
  written);
- `dist=` the distance bucket (1, 2, 3, 4, 5, 6-10, 11+) and `dir=L` (the head is left of
  the dependent) or `dir=R`;
- `d-1.upos=`, `d+1.upos=`, `h-1.upos=`, `h+1.upos=`: the neighbours' UPOS (`<s>`, `</s>`
  past the sentence's ends);
- `punct=yes` or `punct=no`: a PUNCT token strictly between the two.

Features are numbered in order of first occurrence in the training sentences (the vocabulary
comes from training only); a test feature training never saw is dropped, and counted.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .._sparse import SparseRows
from ..errors import InputError
from ..trees import Token, read_conllu
from ._sparse_files import SparseExamples

UD_EWT_FILES = {"train": "en_ewt-ud-train.conllu", "dev": "en_ewt-ud-dev.conllu",
                "test": "en_ewt-ud-test.conllu"}


class AttachmentSet(NamedTuple):
    """One split of the attachment task.

    Attributes:
        examples: the labelled vectors (`SparseExamples`; columns = vocabulary ids).
        tokens: dependents (tokens) the examples came from.
        gold_in_window: dependents whose gold head is a candidate (inside the window).
        dropped: feature occurrences dropped as unknown to the vocabulary (test sets).
    """

    examples: SparseExamples
    tokens: int
    gold_in_window: int
    dropped: int


class AttachmentData(NamedTuple):
    """`train` and `test` sets and the feature strings (`vocab[i]` names column i)."""

    train: AttachmentSet
    test: AttachmentSet
    vocab: tuple[str, ...]


def _bucket(dist: int) -> str:
    return str(dist) if dist <= 5 else ("6-10" if dist <= 10 else "11+")


def attachment_features(sentence: Sequence[Token], dep: int, head: int) -> list[str]:
    """The primitive features of candidate head `head` for dependent `dep` (0-based
    positions in `sentence`), in a fixed order (see the module docstring).

    >>> from jkern.trees import Token
    >>> s = [Token(1, "Dogs", "dog", "NOUN", "NNS", 2, "nsubj"),
    ...      Token(2, "bark", "bark", "VERB", "VBP", 0, "root")]
    >>> attachment_features(s, 0, 1)[8:12]
    ['dist=1', 'dir=R', 'd-1.upos=<s>', 'd+1.upos=VERB']
    >>> attachment_features(s, 0, 1)[12:]
    ['h-1.upos=NOUN', 'h+1.upos=</s>', 'punct=no']
    """
    n = len(sentence)

    def upos(i: int) -> str:
        return "<s>" if i < 0 else ("</s>" if i >= n else sentence[i].upos)

    d, h = sentence[dep], sentence[head]
    lo, hi = min(dep, head), max(dep, head)
    punct = any(sentence[i].upos == "PUNCT" for i in range(lo + 1, hi))
    return [f"d.form={d.form}", f"d.lemma={d.lemma}", f"d.upos={d.upos}", f"d.xpos={d.xpos}",
            f"h.form={h.form}", f"h.lemma={h.lemma}", f"h.upos={h.upos}", f"h.xpos={h.xpos}",
            f"dist={_bucket(hi - lo)}", "dir=L" if head < dep else "dir=R",
            f"d-1.upos={upos(dep - 1)}", f"d+1.upos={upos(dep + 1)}",
            f"h-1.upos={upos(head - 1)}", f"h+1.upos={upos(head + 1)}",
            f"punct={'yes' if punct else 'no'}"]


def attachment_examples(sentences: Sequence[Sequence[Token]], vocab: dict[str, int], *,
                        window: int = 5, grow: bool = True, dtype: Any = None) -> AttachmentSet:
    """The candidate (dependent, head) pairs of `sentences` as labelled binary vectors.

    Args:
        sentences: CoNLL-U sentences (`jkern.trees.read_conllu`).
        vocab: feature string -> column; new strings are added when `grow` (training),
            else dropped and counted (test).
        window: the largest |dependent - head| distance of a candidate (>= 1).
        grow: add unseen feature strings to `vocab`.
        dtype: the values' dtype (default JAX's default float).
    """
    if not isinstance(window, int) or window < 1:
        raise InputError(f"window must be an int >= 1, got {window!r}")
    rows: list[int] = []
    cols: list[int] = []
    labels: list[int] = []
    tokens = inside = dropped = 0
    for sentence in sentences:
        n = len(sentence)
        for dep in range(n):
            tokens += 1
            gold = sentence[dep].head - 1  # -1: the root
            inside += int(gold >= 0 and 0 < abs(gold - dep) <= window)
            for head in range(max(0, dep - window), min(n, dep + window + 1)):
                if head == dep:
                    continue
                row = len(labels)
                for name in attachment_features(sentence, dep, head):
                    col = vocab.get(name)
                    if col is None:
                        if not grow:
                            dropped += 1
                            continue
                        col = vocab[name] = len(vocab)
                    rows.append(row)
                    cols.append(col)
                labels.append(1 if head == gold else -1)
    if not labels:
        raise InputError("no candidate pairs: every sentence has a single token")
    X = SparseRows.from_coo(rows, cols, np.ones(len(rows)), (len(labels), max(len(vocab), 1)),
                            dtype=dtype)
    return AttachmentSet(SparseExamples(X, np.asarray(labels, np.int32)), tokens, inside,
                         dropped)


def load_ud_attachment(data_dir: str | os.PathLike[str], *, train: str = "dev",
                       test: str = "test", window: int = 5, dtype: Any = None,
                       encoding: str = "utf-8") -> AttachmentData:
    """The attachment task from `<data_dir>/ud-english-ewt/en_ewt-ud-{split}.conllu`.

    Args:
        data_dir: the shared data folder (the one holding `ud-english-ewt/`).
        train, test: the splits to train and test on (`"train"`, `"dev"`, `"test"`;
            issue 21: dev as training, test as test).
        window: the largest dependent-head distance of a candidate.
        dtype: the values' dtype.
        encoding: the files' text encoding (default `"utf-8"`, which CoNLL-U requires),
            decoded strictly (`jkern.trees.read_conllu`).

    Returns:
        `AttachmentData(train, test, vocab)`; the test set's columns are the training
        vocabulary's (unknown features dropped, counted in `test.dropped`).

    Raises:
        FileNotFoundError: a split's file is missing (the message names the path).
    """
    paths = {}
    for split in (train, test):
        if split not in UD_EWT_FILES:
            raise InputError(f"split must be one of {sorted(UD_EWT_FILES)}, got {split!r}")
        path = pathlib.Path(data_dir) / "ud-english-ewt" / UD_EWT_FILES[split]
        if not path.is_file():
            raise FileNotFoundError(f"UD English EWT not found: expected {path}; point "
                                    "data_dir (--data-dir) at the shared data folder")
        paths[split] = path
    vocab: dict[str, int] = {}
    tr = attachment_examples(read_conllu(paths[train], encoding=encoding), vocab,
                             window=window, dtype=dtype)
    te = attachment_examples(read_conllu(paths[test], encoding=encoding), vocab,
                             window=window, grow=False, dtype=dtype)
    return AttachmentData(tr, te, tuple(vocab))
