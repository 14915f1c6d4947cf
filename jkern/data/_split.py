"""One stratified split of labelled examples (held-out parts for model selection, KDA's
development set)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError


def stratified_split(labels: Sequence[Any] | np.ndarray, fraction: float, *, seed: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """`(kept, held)`: sorted indices, with `fraction` of each class held out.

    Classes in sorted order; each class's indices are shuffled by `rng.permutation` from
    `np.random.default_rng(seed)` and the first `round(fraction * n_c)` are held out, but at
    least one example of every class is kept.

    >>> kept, held = stratified_split(["a", "a", "a", "b", "b"], 0.4, seed=0)
    >>> len(kept), len(held), sorted(set(kept.tolist()) | set(held.tolist()))
    (3, 2, [0, 1, 2, 3, 4])
    """
    if not 0 <= fraction < 1:
        raise InputError(f"fraction must be in [0, 1), got {fraction}")
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise InputError(f"labels must be 1-D, got shape {lab.shape}")
    rng = np.random.default_rng(seed)
    kept, held = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for c in np.unique(lab):
        idx = rng.permutation(np.flatnonzero(lab == c))
        k = min(int(round(fraction * len(idx))), len(idx) - 1)
        held.append(idx[:k])
        kept.append(idx[k:])
    return np.sort(np.concatenate(kept)), np.sort(np.concatenate(held))
