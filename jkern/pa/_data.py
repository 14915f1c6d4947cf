"""Feature renumbering and row identities for PA-I over sparse vectors.

The readers (LIBSVM / SVM-light / SVM-Light-TK lines in, `SparseExamples` out) are data, not
the learner's: they live in `jkern.data` (`jkern/data/_sparse_files.py`); `jkern.pa`
re-exports them.

Kernel-mode PA-I (opal) renumbers features by training frequency: `frequency_order` ranks them
by the number of training examples they occur in, descending, ties to the larger original id,
and `FeatureOrder.apply` renumbers a matrix so that feature 0 is the most frequent and every
row lists its features most-frequent-first. Features a test set has but training had not are
dropped, and counted.
"""

from __future__ import annotations

import equinox as eqx
import numpy as np
from jaxtyping import Array, Int

from .._sparse import FeatureIds, SparseRows
from .._validate import to_device
from ..errors import InputError


def is_binary(X: SparseRows) -> bool:
    """Whether every stored (nonzero) value is 1: the features are sets."""
    v = np.asarray(X.values)
    return bool(np.all((v == 0) | (v == 1)))


class FeatureOrder(eqx.Module):
    """opal's feature renumbering: new id `r` is original feature `original[r]`, ranked by
    training frequency (the number of training examples holding the feature), descending,
    ties to the larger original id. Build one with `frequency_order`.

    Attributes:
        original: `[f]` the original feature id of each new id (the training matrix's
            column; its feature id is `ids.array[original]` when `ids` is set).
        counts: `[f]` the training frequency of each new id (non-increasing).
        ids: the training matrix's `SparseRows.ids` (static): `apply` maps other matrices'
            feature ids onto its columns.
    """

    original: Int[Array, " f"]
    counts: Int[Array, " f"]
    ids: FeatureIds | None = eqx.field(static=True, default=None)

    @property
    def n_features(self) -> int:
        return int(self.original.shape[0])

    def apply(self, X: SparseRows) -> tuple[SparseRows, int]:
        """`X` renumbered (rows sorted most-frequent-first) and how many of its feature
        occurrences were dropped because training never saw the feature.

        >>> train = SparseRows.from_rows([{1: 1, 5: 1}, {5: 1}, {2: 1, 5: 1}, {1: 1}])
        >>> order = frequency_order(train)
        >>> order.original.tolist(), order.counts.tolist()
        ([5, 1, 2], [3, 2, 1])
        >>> test = SparseRows.from_rows([{2: 1, 9: 1, 5: 1}])
        >>> X, dropped = order.apply(test)
        >>> X.indices.tolist(), dropped
        ([[0, 2]], 1)
        """
        original = np.asarray(self.original)
        size = len(self.ids) if self.ids is not None else int(original.max(initial=-1)) + 1
        # X's entries onto the training matrix's columns by feature id (unseen ids dropped)
        X, unseen = X.aligned(self.ids, max(size, 1))
        idx = np.asarray(X.indices)
        val = np.asarray(X.values)
        # int32 ids and temporaries where the columns allow (half the memory of int64)
        idt = np.int32 if len(original) < np.iinfo(np.int32).max else np.int64
        new_of = np.full(max(size, 1), -1, idt)
        new_of[original] = np.arange(len(original), dtype=idt)
        mapped = new_of[idx]
        present = val != 0
        kept = present & (mapped >= 0)
        dropped = unseen + int(np.sum(present & (mapped < 0)))
        n_columns = max(len(original), 1)
        # the renumbering is one-to-one, so where a row's columns are distinct (as rows
        # built by jkern's readers are) each row is only sorted by its new ids, kept entries
        # first: no coordinate list, whose temporaries held ~125 bytes an entry (+280 MB
        # peak on UD's training set). Repeated columns go through `from_coo` (summed).
        none = np.iinfo(idt).max  # sorts last
        mapped = np.where(kept, mapped, none)
        width = max(int(kept.sum(axis=1).max(initial=0)), 1)
        binary = bool(np.all(val[kept] == 1))
        if mapped.shape[1] >= width and binary:
            # every kept value is 1: sorting the ids is the whole job (no argsort, no
            # gather of the values)
            new_idx = np.sort(mapped, axis=1)[:, :width]
            keep = new_idx != none
            if not np.any(keep[:, 1:] & (new_idx[:, 1:] == new_idx[:, :-1])):
                return SparseRows(to_device(np.where(keep, new_idx, 0), np.int32),
                                  to_device(keep, X.dtype), n_columns), dropped
        elif mapped.shape[1] >= width:
            order = np.argsort(mapped, axis=1, kind="stable")[:, :width]
            keep = np.take_along_axis(kept, order, axis=1)
            new_idx = np.take_along_axis(mapped, order, axis=1)
            if not np.any(keep[:, 1:] & (new_idx[:, 1:] == new_idx[:, :-1])):
                new_idx = np.where(keep, new_idx, 0).astype(np.int32)
                new_val = np.where(keep, np.take_along_axis(val, order, axis=1), 0)
                return SparseRows(to_device(new_idx),
                                  to_device(new_val, X.dtype), n_columns), dropped
        rows = np.nonzero(kept)[0]
        out = SparseRows.from_coo(rows, mapped[kept], val[kept].astype(np.float64),
                                  (idx.shape[0], n_columns), dtype=X.dtype)
        return out, dropped


def frequency_order(X: SparseRows) -> FeatureOrder:
    """The frequency ranking of `X`'s features (opal's renumbering; see `FeatureOrder`).

    Only features that occur (with a nonzero value) are ranked.
    """
    counts = X.column_counts()
    seen = np.flatnonzero(counts)
    if seen.size == 0:
        raise InputError("the training set has no features (every vector is empty)")
    # descending count, ties to the larger original id: sort by (-count, -id)
    order = np.lexsort((-seen, -counts[seen]))
    ranked = seen[order]
    return FeatureOrder(to_device(ranked, np.int32),
                        to_device(counts[ranked], np.int32), X.ids)


def unique_rows(X: SparseRows) -> tuple[np.ndarray, int]:
    """An id per row that is equal exactly for equal feature vectors (`[n]` int32, ids in
    order of first occurrence) and the number of distinct vectors.

    >>> X = SparseRows.from_rows([{1: 1}, {2: 1}, {1: 1}, {}])
    >>> ids, n = unique_rows(X)
    >>> ids.tolist(), n
    ([0, 1, 0, 2], 3)
    """
    return unique_host_rows(np.asarray(X.indices), np.asarray(X.values))


def unique_host_rows(idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, int]:
    """`unique_rows` of the rows given as host arrays (`[n, k]` column ids and values)."""
    # canonical rows: padding (value 0) as index -1, entries sorted by column
    idx = np.where(val != 0, idx, -1)
    order = np.argsort(idx, axis=1, kind="stable")
    idx = np.take_along_axis(idx, order, axis=1)
    val = np.take_along_axis(val, order, axis=1)
    key = np.concatenate([idx.astype(np.float64), val.astype(np.float64)], axis=1)
    first, inverse = _distinct_rows(key)
    # renumber by first occurrence
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse].astype(np.int32), len(first)


def _distinct_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the first row of each distinct row of `key`, each row's distinct-row number), as
    `np.unique(key, axis=0, return_index=True, return_inverse=True)` up to the numbering.

    Rows are hashed to 64 bits and the hashes sorted (a lexicographic sort of whole rows is
    many times slower); rows with equal hashes are then compared in full, and a collision
    between different rows falls back to `np.unique`, so the answer is exact."""
    n = key.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    words = np.ascontiguousarray(key + 0.0).view(np.uint64)  # + 0.0: -0.0 is 0.0
    h = _row_hashes(words)
    order = np.argsort(h, kind="stable")  # equal hashes in row order: the first is first
    hs = h[order]
    starts = np.ones(n, bool)
    starts[1:] = hs[1:] != hs[:-1]
    group = np.cumsum(starts) - 1
    lead = order[np.flatnonzero(starts)][group]  # the first row of each row's hash group
    if not np.array_equal(words[order], words[lead]):  # a collision: exact fallback
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        return first, inverse.reshape(-1)
    inverse = np.empty(n, np.int64)
    inverse[order] = group
    return order[np.flatnonzero(starts)], inverse


def _row_hashes(words: np.ndarray) -> np.ndarray:
    """`[n]` 64-bit hashes of `[n, w]` uint64 rows: splitmix64 of each word, salted per
    column, summed."""
    salt = np.random.default_rng(0x6A6B).integers(0, 2**63, size=words.shape[1],
                                                  dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (words ^ salt) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return np.asarray(np.sum(z ^ (z >> np.uint64(31)), axis=1, dtype=np.uint64))

