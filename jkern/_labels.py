"""Decision values to labels: the one tie rule of every model (docs/learners.md)."""

from __future__ import annotations

import numbers
from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .errors import InputError


def labels_at(classes: tuple, index: Any) -> Any:
    """`classes[index]`: a jax array for numeric labels (usable under jit), a numpy object
    array otherwise (then not usable under jit)."""
    if all(isinstance(c, numbers.Number) for c in classes):
        return jnp.asarray(classes)[index]
    return np.asarray(classes, dtype=object)[np.asarray(index)]


def sign_labels(f: Array) -> Array:
    """The binary tie rule: +1 where the decision value is >= 0, else -1 (int32)."""
    return jnp.where(f >= 0, 1, -1).astype(jnp.int32)


def predict_labels(f: Array, classes: tuple | None) -> Any:
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
