"""Decision values to labels: the one tie rule of every model (docs/learners.md), which class
of two is the positive one, and a two-class model's one decision value per input."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .errors import InputError, NumericalError


def labels_at(classes: tuple, index: Any) -> Any:
    """`classes[index]`: a jax array for numeric labels (usable under jit), a numpy object
    array otherwise (then not usable under jit)."""
    if all(isinstance(c, numbers.Number) for c in classes):
        return jnp.asarray(classes)[index]
    return np.asarray(classes, dtype=object)[np.asarray(index)]


def sign_labels(f: Array | np.ndarray) -> Array:
    """The binary tie rule: +1 where the decision value is >= 0, else -1 (int32); `f` a JAX
    or NumPy array (compared in its own precision).

    >>> sign_labels(np.array([0.5, 0.0, -1e-300])).tolist()
    [1, 1, -1]
    """
    return jnp.where(f >= 0, 1, -1).astype(jnp.int32)


def predict_labels(f: Array | np.ndarray, classes: tuple | None) -> Any:
    """Labels from decision values `f`: `[m]` (binary: ±1 by `sign_labels`, or `classes[1]` /
    `classes[0]` when two classes are named) or `[m, k]` (the class of the highest score,
    ties to the lowest class)."""
    if f.ndim == 1:
        signs = sign_labels(f)
        return signs if classes is None else labels_at(classes, (signs > 0).astype(jnp.int32))
    if classes is None:
        raise InputError("a model with several scores per input needs its classes")
    return labels_at(classes, jnp.argmax(f, axis=-1))


def score_columns(f: Array) -> Array:
    """`[m, k]` one score per class: `f` itself for several classes, (-f, f) for a binary
    decision value (columns in `classes` order: negative, positive)."""
    return jnp.stack([-f, f], axis=-1) if f.ndim == 1 else f


def positive_class(classes: Sequence[Any]) -> int:
    """The index of the class that is +1 in a binary problem: the larger numeric label (so
    SVM-Light-TK's -1/+1 files keep their sign, also as the strings "+1", "-1"), else the
    last in sorted order.

    >>> positive_class(["+1", "-1"]), positive_class(["no", "yes"])
    (0, 1)
    """
    try:
        values = [float(c) for c in classes]
    except ValueError:
        return len(classes) - 1
    return int(max(range(len(classes)), key=lambda i: values[i]))


def two_class_decision(scores: Any, classes: Sequence[Any] | None, *, logits: bool
                       ) -> tuple[int, np.ndarray]:
    """`(positive class index, one decision value per input)` of a two-class model's `[n, 2]`
    class scores (`class_scores`, `classify`), the values float64 NumPy, positive where the
    positive class (`positive_class`) wins. What the models' `binary_decision` returns:

    - SVM margins (`logits=False`): a binary SVM's scores are (-f, f): its f. Two
      one-vs-rest SVMs solve mirror problems (f_neg = -f_pos): half their difference, f_pos.
    - logits (`logits=True`, KDA): their difference, the log-odds of the positive class.

    `classes` None: a binary model predicting -1/+1, whose scores are (-f, f).

    >>> two_class_decision(np.array([[-2.0, 2.0], [1.0, -1.0]]), None, logits=False)
    (1, array([ 2., -1.]))
    """
    names = (-1, 1) if classes is None else tuple(classes)
    if len(names) != 2 or np.ndim(scores) != 2 or np.shape(scores)[-1] != 2:
        raise InputError(f"a two-class decision needs [n, 2] scores of two classes, got "
                         f"shape {np.shape(scores)} for classes {names!r}")
    pos = positive_class(names)
    diff = np.asarray(scores[:, pos] - scores[:, 1 - pos], np.float64)
    return pos, diff if logits else diff / 2


def finite_values(f: Any, what: str = "decision values") -> np.ndarray:
    """A model's output `f` on the host as float64 NumPy, refused when it holds NaN or inf
    (`NumericalError`: "the model gives NaN or inf <what>"): what a caller checks before
    writing or ranking the values.

    >>> finite_values(jnp.array([0.5, -1.0])).tolist()
    [0.5, -1.0]
    """
    a = np.asarray(f, np.float64)
    if not np.isfinite(a).all():
        raise NumericalError(f"the model gives NaN or inf {what}")
    return a
