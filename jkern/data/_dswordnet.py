"""Loader for ds-wordnet: distant supervision from WordNet 3.0 over the 1913 Webster.

The data set's README (`<data_dir>/ds-wordnet/README.md`) describes the three files read here:
`relations.txt` (NA first, then 10 relations), `pairs.tsv` (one row per entity pair, with its
split and KB relations) and `mentions.tsv.gz` (one space-tokenized sentence per mention, with
the token indexes of the two nouns). Every row is checked; a malformed one raises `InputError`
naming the file and the row's line number.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import pathlib
from collections.abc import Iterator, Sequence
from typing import Literal, NamedTuple

import numpy as np

from ..errors import InputError
from ..trees._textfile import DEFAULT_ENCODING, check_encoding, iter_lines, parse_uint

DS_WORDNET_FILES = ("relations.txt", "pairs.tsv", "mentions.tsv.gz")
_PAIRS_HEADER = ["pair", "e1", "e2", "split", "relations", "mentions"]
_MENTIONS_HEADER = ["pair", "e1", "e2", "split", "e1_token", "e2_token", "sentence"]
_SPLITS = ("train", "test")


class DsMentions(NamedTuple):
    """The mentions of one split, in file order.

    Attributes:
        tokens: each mention's sentence as its list of tokens (split on single spaces).
        e1_token: `[N]` int32, index in `tokens[i]` of the word that names the pair's e1.
        e2_token: `[N]` int32, the same for e2.
        mention_pair: `[N]` int32, the mention's pair as an index into its split's `pairs`.
    """

    tokens: list[list[str]]
    e1_token: np.ndarray
    e2_token: np.ndarray
    mention_pair: np.ndarray


@dataclasses.dataclass(frozen=True, eq=False)
class DsSplit:
    """One split (`train` or `test`): its entity pairs, their KB labels and their mentions.

    Attributes:
        pairs: `(e1, e2)` lemmas of each pair, `e1 < e2`, in file order.
        pair_ids: `[P]` int64, the pair's id in `pairs.tsv` (its `pair` column).
        relations: `[P, K]` bool, `relations[p, k]` when the KB holds relation k + 1 of
            `DsWordnetData.relation_names` (NA, name 0, is not a column: an NA pair is all False).
        mentions: the split's mentions (`DsMentions`).
        dropped_pairs: pairs of this split without any mention, left out of `pairs` (0 in
            the published files: every pair has at least one mention).
    """

    pairs: list[tuple[str, str]]
    pair_ids: np.ndarray
    relations: np.ndarray
    mentions: DsMentions
    dropped_pairs: int

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def n_mentions(self) -> int:
        return len(self.mentions.tokens)

    @property
    def n_facts(self) -> int:
        """Positive (pair, relation) facts: what held-out evaluation ranks against."""
        return int(self.relations.sum())

    def subset(self, pairs: Sequence[int] | np.ndarray) -> DsSplit:
        """The split restricted to some of its pairs, with all their mentions.

        Args:
            pairs: indexes into `self.pairs` (distinct); the subset keeps them in this order
                and renumbers them 0..len(pairs)-1 (`mentions.mention_pair` follows).

        Returns:
            A `DsSplit` of those pairs; their mentions stay in file order; `dropped_pairs`
            is 0 (the subset only holds pairs with mentions).

        Raises:
            InputError: an index is out of range or repeated.
        """
        idx = np.asarray(pairs, np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_pairs):
            raise InputError(f"pair indexes must be in [0, {self.n_pairs}), got "
                             f"{int(idx.min())}..{int(idx.max())}")
        if np.unique(idx).size != idx.size:
            raise InputError("pair indexes must be distinct")
        new = np.full(self.n_pairs, -1, np.int64)
        new[idx] = np.arange(idx.size)
        m = self.mentions
        which = np.flatnonzero(new[m.mention_pair] >= 0)
        mentions = DsMentions([m.tokens[i] for i in which.tolist()], m.e1_token[which],
                              m.e2_token[which], new[m.mention_pair[which]].astype(np.int32))
        return DsSplit([self.pairs[i] for i in idx.tolist()], self.pair_ids[idx],
                       self.relations[idx], mentions, 0)

    def sample(self, max_pairs: int, *, seed: int) -> DsSplit:
        """A random subset of at most `max_pairs` pairs with all their mentions (`subset`).

        The pairs are drawn without replacement by `np.random.default_rng(seed)` and kept in
        file order; with `max_pairs >= n_pairs` the split itself is returned.

        Raises:
            InputError: `max_pairs` is not a positive integer.
        """
        if isinstance(max_pairs, bool) or not isinstance(max_pairs, (int, np.integer)) \
                or max_pairs < 1:
            raise InputError(f"max_pairs must be a positive int, got {max_pairs!r}")
        if max_pairs >= self.n_pairs:
            return self
        rng = np.random.default_rng(seed)
        return self.subset(np.sort(rng.choice(self.n_pairs, max_pairs, replace=False)))


@dataclasses.dataclass(frozen=True, eq=False)
class DsWordnetData:
    """The ds-wordnet data set (see `load_ds_wordnet`).

    Attributes:
        relation_names: the classes, `"NA"` first then the K = 10 relations (relations.txt).
        train: the train split.
        test: the test split (no pair has mentions in both).
    """

    relation_names: tuple[str, ...]
    train: DsSplit
    test: DsSplit

    def split(self, name: Literal["train", "test"]) -> DsSplit:
        if name not in _SPLITS:
            raise InputError(f"split must be 'train' or 'test', got {name!r}")
        return self.train if name == "train" else self.test


def load_ds_wordnet(data_dir: str | os.PathLike[str], *,
                    encoding: str = DEFAULT_ENCODING) -> DsWordnetData:
    """Read `<data_dir>/ds-wordnet/` (or `data_dir` itself if it holds the files).

    Args:
        data_dir: the shared data folder (the one holding `ds-wordnet/`), e.g.
            `../shared/data`, or the `ds-wordnet` folder itself.
        encoding: the files' text encoding (default `"utf-8"`), decoded strictly: a byte
            not valid in it is an error at its `file:line:column`, never decoded another way.

    Returns:
        A `DsWordnetData`: 46,667 train pairs (100,631 mentions) and 19,984 test pairs (42,363
        mentions), 6,776 positive test facts, for the published files.

    Raises:
        InputError: a file is missing, or a row is malformed (a field count, a count or token
            index that is not ASCII digits, a byte not valid in `encoding`) or disagrees with
            another file (the message names the file and the line).
    """
    check_encoding(encoding)
    root = _find_root(pathlib.Path(data_dir))
    names = _read_relations(root / "relations.txt", encoding)
    pairs = _read_pairs(root / "pairs.tsv", names, encoding)
    mentions = _read_mentions(root / "mentions.tsv.gz", pairs, encoding)
    splits = {}
    for split in _SPLITS:
        ids = np.sort(np.array([p for p, row in pairs.items() if row[2] == split], np.int64))
        tokens, e1, e2, pid = mentions[split]
        pid = np.asarray(pid, np.int64)
        with_mentions = np.isin(ids, pid)
        ids = ids[with_mentions]
        # Mention -> row of its pair within the split's (sorted) pair ids.
        mention_pair = np.searchsorted(ids, pid).astype(np.int32)
        rel = np.zeros((len(ids), len(names) - 1), bool)
        for row, p in enumerate(ids):
            rel[row, pairs[int(p)][3]] = True
        splits[split] = DsSplit(
            pairs=[(pairs[int(p)][0], pairs[int(p)][1]) for p in ids],
            pair_ids=ids,
            relations=rel,
            mentions=DsMentions(tokens, np.asarray(e1, np.int32), np.asarray(e2, np.int32),
                                mention_pair),
            dropped_pairs=int((~with_mentions).sum()),
        )
    return DsWordnetData(tuple(names), splits["train"], splits["test"])


def _find_root(path: pathlib.Path) -> pathlib.Path:
    for root in (path / "ds-wordnet", path):
        if all((root / f).is_file() for f in DS_WORDNET_FILES):
            return root
    hint = ("Give the folder that holds ds-wordnet/ (the shared data folder, ../shared/data "
            "by default) or the ds-wordnet folder itself.")
    if not path.is_dir():
        raise InputError(f"ds-wordnet data not found: {path} is not a directory. {hint}")
    # Name the files missing from the folder that looks meant: ds-wordnet/ when it exists,
    # else `path` itself when it holds some of the files.
    root = path / "ds-wordnet"
    if not root.is_dir() and any((path / f).exists() for f in DS_WORDNET_FILES):
        root = path
    missing = [str(root / f) for f in DS_WORDNET_FILES if not (root / f).is_file()]
    raise InputError(f"ds-wordnet data not found: missing {', '.join(missing)}. {hint}")


def _read_relations(path: pathlib.Path, encoding: str) -> list[str]:
    names = [line.strip() for _, line in iter_lines(path, encoding=encoding)]
    names = [n for n in names if n]
    if not names or names[0] != "NA":
        raise InputError(f"{path}:1: the first relation must be 'NA', got "
                         f"{names[0] if names else 'an empty file'!r}")
    if len(set(names)) != len(names):
        raise InputError(f"{path}: a relation is listed twice: {names}")
    return names


def _rows(path: pathlib.Path, header: list[str], encoding: str
          ) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each data row; checks the header and the field count. Lines
    are decoded strictly (`iter_lines`: a bad byte is an error at its file:line:column)."""
    try:
        lines = (text for _, text in iter_lines(path, encoding=encoding))
        reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
        first = next(reader, None)
        if first != header:
            raise InputError(f"{path}:1: expected the header {'<TAB>'.join(header)!r}, "
                             f"got {'<TAB>'.join(first or [])[:80]!r}")
        for fields in reader:
            if len(fields) != len(header):
                raise InputError(f"{path}:{reader.line_num}: expected {len(header)} "
                                 f"tab-separated fields, got {len(fields)}")
            yield reader.line_num, fields
    except (OSError, csv.Error) as err:
        raise InputError(f"{path}: cannot read: {err}") from err


def _int(path: pathlib.Path, line: int, name: str, text: str) -> int:
    value = parse_uint(text)  # ASCII digits only: str.isdigit also takes '²'
    if value is None:
        raise InputError(f"{path}:{line}: {name} must be a non-negative integer (ASCII "
                         f"digits), got {text!r}")
    return value


# pair id -> (e1, e2, split, relation columns, number of mentions)
_Pairs = dict[int, tuple[str, str, str, list[int], int]]


def _read_pairs(path: pathlib.Path, names: list[str], encoding: str) -> _Pairs:
    column = {name: k - 1 for k, name in enumerate(names) if k > 0}
    pairs: _Pairs = {}
    for line, (pid, e1, e2, split, rels, count) in _rows(path, _PAIRS_HEADER, encoding):
        p = _int(path, line, "pair", pid)
        if p in pairs:
            raise InputError(f"{path}:{line}: pair {p} is listed twice")
        if not e1 or not e2:
            raise InputError(f"{path}:{line}: empty entity name")
        if split not in _SPLITS:
            raise InputError(f"{path}:{line}: split must be 'train' or 'test', got {split!r}")
        cols = []
        if rels != "NA":
            for name in rels.split(","):
                if name not in column:
                    raise InputError(f"{path}:{line}: unknown relation {name!r} (relations.txt "
                                     f"lists {', '.join(names)})")
                cols.append(column[name])
        pairs[p] = (e1, e2, split, cols, _int(path, line, "mentions", count))
    return pairs


def _read_mentions(path: pathlib.Path, pairs: _Pairs, encoding: str
                   ) -> dict[str, tuple[list, list, list, list]]:
    out: dict[str, tuple[list, list, list, list]] = {s: ([], [], [], []) for s in _SPLITS}
    seen: dict[int, int] = {}
    for line, (pid, e1, e2, split, i1, i2, sentence) in _rows(path, _MENTIONS_HEADER,
                                                               encoding):
        p = _int(path, line, "pair", pid)
        if p not in pairs:
            raise InputError(f"{path}:{line}: pair {p} is not in pairs.tsv")
        if (e1, e2, split) != pairs[p][:3]:
            raise InputError(f"{path}:{line}: pair {p} is ({e1}, {e2}, {split}) here but "
                             f"{pairs[p][:3]} in pairs.tsv")
        tokens = sentence.split(" ")
        a, b = _int(path, line, "e1_token", i1), _int(path, line, "e2_token", i2)
        if "" in tokens:
            raise InputError(f"{path}:{line}: empty token (the sentence must be tokens "
                             "separated by single spaces)")
        if a >= len(tokens) or b >= len(tokens) or a == b:
            raise InputError(f"{path}:{line}: token indexes ({a}, {b}) must be distinct and "
                             f"inside the {len(tokens)}-token sentence")
        for column, value in zip(out[split], (tokens, a, b, p)):
            column.append(value)
        seen[p] = seen.get(p, 0) + 1
    for p, row in pairs.items():
        if seen.get(p, 0) != row[4]:
            raise InputError(f"{path}: pair {p} has {seen.get(p, 0)} mentions, but pairs.tsv "
                             f"says {row[4]}")
    return out
