"""Distinct values of a host array by sorting.

NumPy 2.3+ answers a bare `np.unique(a)` by hashing, which is many times slower than a sort
on large arrays of widely spread integers; the conjunction tables of PA-I and the forest's
node sets are such arrays. `np.unique` with `return_inverse`/`return_index` still sorts.
"""

from __future__ import annotations

import numpy as np


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """The sorted distinct values of `a` (flattened), as `np.unique(a)`.

    >>> sorted_unique(np.array([5, 1, 5, 3, 1]))
    array([1, 3, 5])
    """
    return _distinct(np.sort(np.asarray(a).reshape(-1)))


def merge_unique(parts: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct values of several sorted arrays: a stable sort of their
    concatenation, which finds the sorted runs and merges them (faster than sorting from
    scratch).

    >>> merge_unique([np.array([1, 4, 9]), np.array([2, 4])])
    array([1, 2, 4, 9])
    """
    return _distinct(np.sort(np.concatenate(parts), kind="stable"))


def value_bounds(s: np.ndarray, parts: int) -> np.ndarray:
    """The distinct values at the `parts`-quantiles of the sorted array `s` (at most
    `parts` − 1, ascending; none for an empty one): bounds that cut its values into about
    equal shares, for work done one value range at a time.

    >>> value_bounds(np.arange(10), 4)
    array([2, 4, 6])
    """
    if not len(s):
        return s[:0]
    at = np.linspace(0, len(s) - 1, parts + 1)[1:-1].astype(np.int64)
    return _distinct(s[at])


def _distinct(s: np.ndarray) -> np.ndarray:
    """A sorted array without its repeats."""
    if s.size < 2:
        return s
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
