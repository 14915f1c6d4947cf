"""Synthetic hidden conjunctive concepts: sparse Zipf features, labels from conjunctions.

Each example is the set of distinct features among `draws` Zipf-distributed draws over
`n_features` ids (P(f) ∝ (f + 1)^-zipf, so id 0 is the most frequent). The hidden concept is
`n_terms` conjunctions of `degree` features each, drawn among the `n_frequent` most frequent
features, with Gaussian weights; the score of x is the sum of the weights of the conjunctions
x holds, the label +1 when the score is above its `1 - positive` quantile (over train and
test together), and each label is flipped with probability `noise`. A linear model cannot
express the concept; a polynomial kernel of degree >= `degree` can.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .._sparse import SparseRows
from .._validate import positive_int
from ..data._sparse_files import SparseExamples
from ..errors import InputError


def _seed(key: Any) -> int:
    if isinstance(key, (int, np.integer)):
        return int(key)
    try:
        return int(jax.random.randint(key, (), 0, 2**31 - 1))
    except Exception as e:
        raise InputError(f"key must be a jax.random key or an int seed, got {key!r}") from e


def conjunctive_concepts(n_train: int, n_test: int, *, key: Any, n_features: int = 5000,
                         draws: int = 20, zipf: float = 1.1, degree: int = 2,
                         n_terms: int = 40, n_frequent: int = 60, positive: float = 0.5,
                         noise: float = 0.05, dtype: Any = None
                         ) -> tuple[SparseExamples, SparseExamples]:
    """A train and a test set of one hidden conjunctive concept (see the module docstring).

    Args:
        n_train, n_test: the sizes (n_test may be 0).
        key: a `jax.random` key or an int seed (keyword-only); the same key gives the same
            data.
        n_features: feature ids 0..n_features-1 (binary values).
        draws: Zipf draws per example (duplicates merge: examples hold <= draws features).
        zipf: the Zipf exponent (> 0).
        degree: features per conjunction (2 or 3 for the issue's conj-2 / conj-3).
        n_terms: conjunctions in the concept.
        n_frequent: the conjunctions use features among the n_frequent most frequent.
        positive: the fraction of +1 labels before noise, in (0, 1).
        noise: the probability of flipping a label, in [0, 0.5).
        dtype: the values' dtype (default JAX's default float).

    Returns:
        `(train, test)` as `SparseExamples` (columns are the feature ids).

    >>> train, test = conjunctive_concepts(200, 50, key=0, n_features=100, n_frequent=10)
    >>> train.features.shape, test.features.shape, sorted(set(train.labels.tolist()))
    ((200, 100), (50, 100), [-1, 1])
    """
    n_train = positive_int("n_train", n_train)
    if not isinstance(n_test, (int, np.integer)) or n_test < 0:
        raise InputError(f"n_test must be an int >= 0, got {n_test!r}")
    n_features = positive_int("n_features", n_features)
    draws = positive_int("draws", draws)
    degree = positive_int("degree", degree)
    n_terms = positive_int("n_terms", n_terms)
    n_frequent = positive_int("n_frequent", n_frequent)
    if not degree <= n_frequent <= n_features:
        raise InputError(f"need degree <= n_frequent <= n_features, got {degree}, "
                         f"{n_frequent}, {n_features}")
    if not zipf > 0:
        raise InputError(f"zipf must be > 0, got {zipf}")
    if not 0 < positive < 1:
        raise InputError(f"positive must be in (0, 1), got {positive}")
    if not 0 <= noise < 0.5:
        raise InputError(f"noise must be in [0, 0.5), got {noise}")
    rng = np.random.default_rng(_seed(key))
    n = n_train + int(n_test)

    p = (np.arange(1, n_features + 1, dtype=np.float64)) ** -zipf
    draws_ = rng.choice(n_features, size=(n, draws), p=p / p.sum())
    draws_.sort(axis=1)
    distinct = np.ones_like(draws_, bool)
    distinct[:, 1:] = draws_[:, 1:] != draws_[:, :-1]
    rows = np.broadcast_to(np.arange(n)[:, None], draws_.shape)[distinct]
    X = SparseRows.from_coo(rows, draws_[distinct], np.ones(len(rows)), (n, n_features),
                            dtype=dtype)

    terms = np.stack([rng.choice(n_frequent, size=degree, replace=False)
                      for _ in range(n_terms)])  # [n_terms, degree]
    weights = rng.normal(size=n_terms)
    dense = np.zeros((n, n_frequent), bool)
    frequent = distinct & (draws_ < n_frequent)
    dense[np.broadcast_to(np.arange(n)[:, None], draws_.shape)[frequent],
          draws_[frequent]] = True
    holds = np.all(dense[:, terms], axis=2)  # [n, n_terms]
    score = holds.astype(np.float64) @ weights
    threshold = np.quantile(score, 1 - positive)
    labels = np.where(score > threshold, 1, -1)
    flip = rng.random(n) < noise
    labels = np.where(flip, -labels, labels).astype(np.int32)

    train = SparseExamples(X.rows(np.arange(n_train)), labels[:n_train])
    test = SparseExamples(X.rows(np.arange(n_train, n)), labels[n_train:])
    return train, test
