"""Lexical features of a relation mention, in the style of Mintz et al. (2009) and Riedel et
al. (2010), and the vocabulary that turns them into a `SparseRows` feature matrix.

A mention is a tokenized sentence with two nouns, e1 and e2 (the pair's entities, in the
pair's canonical order). Its features are strings:

- `order=e1_first` / `order=e2_first`: which noun comes first in the sentence.
- `dist=`: the token distance, bucketed: 1, 2, 3, 4-5, 6-10, 11-20, >20.
- `bw=part`: bag of the words between the nouns (at most `max_bag`: see below).
- `bseq=e2_first:is part of the`: the whole between-sequence with the order, when it is at
  most `max_sequence` tokens (`bseq=e1_first:` for adjacent nouns).
- `win=the|e2_first:is part of the|.`: Mintz's conjunction of the word left of the first
  noun, the order, the between-sequence and the word right of the second noun (short
  between-sequences only).
- `e1_left=`, `e1_right=`, `e2_left=`, `e2_right=`: the word on each side of each noun;
  `<s>`/`</s>` at the sentence's ends, `<e1>`/`<e2>` where the neighbour is the other noun.
- `defhead=e1` / `e2` when that noun is the definition's headword (token 0, followed by
  `:`), else `defhead=none`.
- `e1_head=`, `e2_head=`: the nouns themselves, only with `heads=True` (default off).

Words are normalized (`normalize_word`): lowercased, digits replaced by `0`, and a crude
plural suffix stripped (`-ies` -> `-y`, a final `-s` not in `-ss`, `-us`, `-is`).

The nouns themselves are left out by default, as in Mintz et al.: with them a model can
learn the knowledge base's pairs instead of how text expresses a relation, which does not
carry over to the held-out pairs. When more than `max_bag` words lie between the nouns (a
definition's headword and a noun far into the definition), the bag keeps the `max_bag // 2`
words after the first noun and the rest before the second noun, which bounds a row's length
(about 20 features) and so the width of the padded `SparseRows` and of its degree-2
expansion.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._sparse import SparseRows
from ..errors import InputError

_DIGITS = re.compile(r"[0-9]")
_DIST_BUCKETS = ((1, "1"), (2, "2"), (3, "3"), (5, "4-5"), (10, "6-10"), (20, "11-20"))


def normalize_word(word: str) -> str:
    """Lowercase, digits to `0`, and a crude plural suffix stripped.

    >>> [normalize_word(w) for w in ["Fingers", "berries", "glass", "1913", "is"]]
    ['finger', 'berry', 'glass', '0000', 'is']
    """
    w = _DIGITS.sub("0", word.lower())
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _distance_bucket(d: int) -> str:
    for top, name in _DIST_BUCKETS:
        if d <= top:
            return name
    return ">20"


def mention_features(tokens: Sequence[str], e1_token: int, e2_token: int, *,
                     max_sequence: int = 5, max_bag: int = 10,
                     heads: bool = False) -> list[str]:
    """The lexical features of one mention (see the module docstring for the list).

    Args:
        tokens: the sentence's tokens.
        e1_token: index of the token naming e1.
        e2_token: index of the token naming e2 (distinct from `e1_token`).
        max_sequence: the longest between-sequence kept whole (`bseq=`, `win=`).
        max_bag: the most between-words in the bag (`bw=`).
        heads: add the two nouns themselves (`e1_head=`, `e2_head=`).

    Returns:
        The distinct features, in a fixed order.

    >>> toks = "Finger : one of the parts of the hand".split()
    >>> mention_features(toks, 0, 7)[:6]
    ['order=e1_first', 'dist=6-10', 'bw=:', 'bw=one', 'bw=of', 'bw=the']
    >>> mention_features("the finger is part of the hand .".split(), 1, 6)[-7:]
    ['bseq=e1_first:is part of the', 'win=the|e1_first:is part of the|.', 'e1_left=the', \
'e1_right=is', 'e2_left=the', 'e2_right=.', 'defhead=none']
    """
    n = len(tokens)
    if not (0 <= e1_token < n and 0 <= e2_token < n) or e1_token == e2_token:
        raise InputError(f"noun indexes ({e1_token}, {e2_token}) must be distinct and inside "
                         f"the {n}-token sentence")
    words = [normalize_word(t) for t in tokens]
    first, second = sorted((e1_token, e2_token))
    order = "e1_first" if e1_token < e2_token else "e2_first"
    between = words[first + 1:second]
    feats = [f"order={order}", f"dist={_distance_bucket(second - first)}"]
    bag = between if len(between) <= max_bag else (
        between[:max_bag // 2] + between[len(between) - (max_bag - max_bag // 2):])
    feats.extend(f"bw={w}" for w in bag)
    if len(between) <= max_sequence:
        seq = " ".join(between)
        feats.append(f"bseq={order}:{seq}")
        left = words[first - 1] if first > 0 else "<s>"
        right = words[second + 1] if second + 1 < n else "</s>"
        feats.append(f"win={left}|{order}:{seq}|{right}")
    marks = {e1_token: "<e1>", e2_token: "<e2>"}

    def word(i: int) -> str:
        return "<s>" if i < 0 else "</s>" if i >= n else marks.get(i, words[i])

    for role, i in (("e1", e1_token), ("e2", e2_token)):
        feats.append(f"{role}_left={word(i - 1)}")
        feats.append(f"{role}_right={word(i + 1)}")
    definition = n > 1 and tokens[1] == ":" and first == 0
    feats.append("defhead=" + (("e1" if e1_token == 0 else "e2") if definition else "none"))
    if heads:
        feats.append(f"e1_head={words[e1_token]}")
        feats.append(f"e2_head={words[e2_token]}")
    return list(dict.fromkeys(feats))


def lexical_features(tokens: Sequence[Sequence[str]], e1_token: Sequence[int] | np.ndarray,
                     e2_token: Sequence[int] | np.ndarray, **options: Any) -> list[list[str]]:
    """`mention_features` of every mention (options as there).

    Args:
        tokens: each mention's sentence tokens (e.g. `DsSplit.mentions.tokens`).
        e1_token: `[N]` index of e1's token in each sentence.
        e2_token: `[N]` index of e2's token in each sentence.
        **options: `max_sequence`, `max_bag`, `heads` (see `mention_features`).

    Returns:
        One feature list per mention.
    """
    if not len(tokens) == len(e1_token) == len(e2_token):
        raise InputError(f"tokens, e1_token and e2_token must have one length, got "
                         f"{len(tokens)}, {len(e1_token)}, {len(e2_token)}")
    return [mention_features(t, int(a), int(b), **options)
            for t, a, b in zip(tokens, e1_token, e2_token)]


@dataclasses.dataclass(frozen=True, eq=False)
class FeatureVocabulary:
    """Feature names <-> column ids, fit on the training mentions only.

    Ids are the names' positions in sorted order, so they do not depend on the order of the
    mentions. `transform` drops the features it has not seen (a test mention's feature
    that never occurs in train has no weight to learn).

    Attributes:
        names: the feature names, sorted; `names[j]` is column j.

    >>> vocab = FeatureVocabulary.fit([["b", "a"], ["a", "c"]])
    >>> vocab.names
    ('a', 'b', 'c')
    >>> vocab.transform([["c", "a", "unseen"]], normalize=False).todense().tolist()
    [[1.0, 0.0, 1.0]]
    """

    names: tuple[str, ...]
    _index: dict[str, int] = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.names:
            raise InputError("a FeatureVocabulary needs at least one feature")
        index = {name: j for j, name in enumerate(self.names)}
        if len(index) != len(self.names):
            raise InputError("feature names must be distinct")
        object.__setattr__(self, "_index", index)

    @classmethod
    def fit(cls, rows: Iterable[Iterable[str]]) -> FeatureVocabulary:
        """The vocabulary of every feature in `rows` (the training mentions' features)."""
        return cls(tuple(sorted({f for row in rows for f in row})))

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def index(self, name: str) -> int:
        """The column of `name` (KeyError if not in the vocabulary)."""
        return self._index[name]

    def transform(self, rows: Sequence[Iterable[str]], *, normalize: bool = True,
                  dtype: Any = None) -> SparseRows:
        """The `[len(rows), len(self)]` binary feature matrix of `rows`.

        Args:
            rows: one feature list per mention; unknown features are dropped.
            normalize: scale each row to unit L2 norm (default). Binary rows have norm
                sqrt(number of features), so without it long sentences weigh more in
                Q = X X^T + lam I and one long row alone can set sigma_max(X)^2 >= ||x_i||^2,
                which is ||Q|| and so shrinks the solver's step 1 / (3 ||Q||) for every
                mention. Unit rows put 1 on the diagonal of X X^T (a cosine kernel): lam
                means the same whatever the sentence lengths, and ||Q|| <= N + lam.
            dtype: float dtype of the values (JAX's default float if None).

        Returns:
            A `SparseRows` with values 1 (or 1/sqrt(row length) when normalized); a row with
            no known feature is all zero.
        """
        r: list[int] = []
        c: list[int] = []
        v: list[float] = []
        for i, row in enumerate(rows):
            cols = sorted({self._index[f] for f in row if f in self._index})
            value = 1.0 / np.sqrt(len(cols)) if normalize and cols else 1.0
            r.extend([i] * len(cols))
            c.extend(cols)
            v.extend([value] * len(cols))
        return SparseRows.from_coo(r, c, np.asarray(v, np.float64), (len(rows), len(self)),
                                   dtype=dtype)

    def select(self, column_map: np.ndarray) -> FeatureVocabulary:
        """The vocabulary of the kept columns after `prune_features` (its column map)."""
        column_map = np.asarray(column_map)
        if column_map.shape != (len(self),):
            raise InputError(f"column_map must have one entry per feature ({len(self)}), got "
                             f"shape {column_map.shape}")
        kept = np.flatnonzero(column_map >= 0)
        return FeatureVocabulary(tuple(self.names[j] for j in kept[np.argsort(column_map[kept])]))
