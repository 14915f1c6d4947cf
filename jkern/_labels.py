"""Class indices to labels, shared by the multiclass models."""

from __future__ import annotations

import numbers
from typing import Any

import jax.numpy as jnp
import numpy as np


def labels_at(classes: tuple, index: Any) -> Any:
    """`classes[index]`: a jax array for numeric labels (usable under jit), a numpy object
    array otherwise (then not usable under jit)."""
    if all(isinstance(c, numbers.Number) for c in classes):
        return jnp.asarray(classes)[index]
    return np.asarray(classes, dtype=object)[np.asarray(index)]
