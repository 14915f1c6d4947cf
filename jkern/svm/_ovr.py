"""One-vs-rest: any binary learner of the contract, one problem per class, one `Solution`."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._solution import Solution
from .._validate import class_weights, concrete
from ..errors import InputError


def _classes_of(labels: Any, classes: Sequence[Any] | None) -> tuple[tuple, np.ndarray | None]:
    lab = np.asarray(labels) if isinstance(labels, (list, tuple)) else concrete(labels)
    if classes is None:
        if lab is None:
            raise InputError("labels are traced: pass classes= (the sorted class labels)")
        found = np.unique(lab)
    else:
        found = np.asarray(classes)
    classes_t = tuple(c.item() if hasattr(c, "item") else c for c in found)
    if len(classes_t) < 2:
        raise InputError(f"one-vs-rest needs at least 2 classes, got {list(classes_t)}")
    return classes_t, lab


def plus_minus_targets(labels: Any, classes: tuple, n: int, dtype: Any = jnp.float32):
    """`[k, n]` targets: +1 where the label is class k, else -1."""
    lab = np.asarray(labels) if isinstance(labels, (list, tuple)) else concrete(labels)
    if lab is not None:
        if lab.ndim != 1 or lab.shape[0] != n:
            raise InputError(f"labels must be [n] = [{n}], got shape {lab.shape}")
        onehot = lab[None, :] == np.asarray(classes, dtype=lab.dtype)[:, None]
        if not np.all(onehot.any(axis=0)):
            raise InputError("labels hold values that are not in classes")
        return jnp.asarray(np.where(onehot, 1.0, -1.0), dtype)
    labels = jnp.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise InputError(f"labels must be [n] = [{n}], got shape {labels.shape}")
    return jnp.where(labels[None, :] == jnp.asarray(classes)[:, None], 1.0, -1.0).astype(dtype)


def stack_stats(per_class: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The stats of k binary solutions as one dict with a leading class axis, as a vmapped
    one-vs-rest gives them: what has one shape in every class (arrays, numbers) is stacked
    `[k, ...]`; what has not (cpa's per-iteration `history`, its `alpha` of one entry per
    plane, ...) is a list of k entries, entry k the class's own.

    >>> s = stack_stats([{"n": 3, "alpha": np.ones(2)}, {"n": 5, "alpha": np.ones(4)}])
    >>> s["n"].tolist(), [a.shape for a in s["alpha"]]
    ([3, 5], [(2,), (4,)])
    """
    out: dict[str, Any] = {}
    for name in per_class[0]:
        values = [stats[name] for stats in per_class]
        arrays = all(isinstance(v, (jax.Array, np.ndarray, numbers.Number)) for v in values)
        if arrays and len({np.shape(v) for v in values}) == 1:
            device = any(isinstance(v, jax.Array) for v in values)
            out[name] = jnp.stack(values) if device else np.stack(values)
        else:
            out[name] = list(values)
    return out


def one_vs_rest(learner: Callable[..., Solution], data: Any, labels: Any, *,
                classes: Sequence[Any] | None = None,
                class_weight: Mapping[Any, Any] | str | None = None, vmap: bool = True,
                n: int | None = None, **options: Any) -> Solution:
    """Train `learner(data, y_k, class_weight={1: w_k, -1: 1}, **options)` for every class k
    (`y_k = +1` where `labels == classes[k]`, else -1) and return one `Solution`.

    Args:
        learner: a binary learner of the contract (docs/learners.md).
        data: its first argument (features, Gram matrix, trees), shared by every class.
        labels: `[n]` class labels (numbers, or strings when not traced).
        classes: the labels, sorted; required when `labels` is traced. Default: the sorted
            unique labels.
        class_weight: `label -> weight` or "balanced": class k's weight scales the cost of
            the positive side of problem k only (C+ = C w_k, C- = C), as LIBLINEAR.
        vmap: train all classes as one `jax.vmap`ped program (the learner must be
            traceable); False trains them one after the other and merges the models
            (`stack_expansions` for kernel expansions).
        n: the number of examples (default `len(labels)`).
        **options: the learner's keyword arguments (C, key, tol, ...).

    Returns:
        A `Solution` whose model has a leading class axis and `classes` set, and whose
        `result` and array stats are `[k, ...]` (`vmap=False`: `stack_stats`, ragged stats
        a list of k).
    """
    classes_t, lab = _classes_of(labels, classes)
    n = len(labels) if n is None else n
    targets = plus_minus_targets(labels, classes_t, n)
    weights = class_weights(class_weight, classes_t, lab)
    if vmap:
        def one(y, w):
            return learner(data, y, class_weight={1: w, -1: 1.0}, **options)

        sol = jax.vmap(one)(targets, jnp.stack([jnp.asarray(w) for w in weights]))
        return dataclasses.replace(sol, model=dataclasses.replace(sol.model, classes=classes_t))
    sols = [learner(data, np.asarray(targets[k]).astype(np.int64),
                    class_weight={1: weights[k], -1: 1.0}, **options)
            for k in range(len(classes_t))]
    models = [s.model for s in sols]
    stack = getattr(type(models[0]), "stack", None)
    if stack is not None:
        model = stack(models, classes_t)
    else:
        model = dataclasses.replace(
            jax.tree_util.tree_map(lambda *a: jnp.stack(a), *models), classes=classes_t)
    return Solution(model, jnp.stack([s.result for s in sols]),
                    stack_stats([s.stats for s in sols]))
