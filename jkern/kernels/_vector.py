"""Kernels on dense feature vectors: linear, polynomial, RBF.

Inputs are `[n, d]` arrays, or `Example`s whose sparse vector `vectors[vector_index]` is
densified (to the larger dimension of the two sides).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._validate import finite, kernel_fits, nonnegative, positive, positive_int
from ..errors import InputError
from ..trees._svmlight import Example
from ._base import AbstractKernel, check_options, into_out, resolve_dtype
from ._budget import check_matrix, memory_budget


def _dense(x1: Any, x2: Any, vector_index: int, dtype, max_memory: Any = None
           ) -> tuple[jnp.ndarray, jnp.ndarray | None]:
    def is_examples(x):
        return isinstance(x, Sequence) and len(x) > 0 and isinstance(x[0], Example)

    if not is_examples(x1) and (x2 is None or not is_examples(x2)):
        a = jnp.asarray(x1, dtype)
        b = None if x2 is None else jnp.asarray(x2, dtype)
        if a.ndim != 2 or (b is not None and (b.ndim != 2 or b.shape[1] != a.shape[1])):
            raise InputError("vector kernels take [n, d] arrays with the same d on both "
                             f"sides, got shapes {a.shape} and "
                             f"{None if b is None else b.shape}")
        finite("x1", a)
        if b is not None:
            finite("x2", b)
        return a, b
    groups = [x1] if x2 is None else [x1, x2]
    sparse = []
    for g in groups:
        rows = []
        for i, ex in enumerate(g):
            if not isinstance(ex, Example):
                raise InputError(f"item {i}: expected an Example, got {type(ex).__name__}")
            rows.append(ex.vectors[vector_index] if vector_index < len(ex.vectors) else ())
        sparse.append(rows)
    # one column per feature id in use, in id order (a kernel of vectors does not see the
    # ids that are zero everywhere): memory follows the data, not the largest id
    column = {idx: k for k, idx in enumerate(sorted(
        {idx for rows in sparse for r in rows for idx, _ in r}))}
    dim = max(1, len(column))
    budget = memory_budget(max_memory)
    check_matrix(budget, sum(map(len, sparse)), dim, 8,
                 what=f"matrix of the examples' vectors made dense ({dim:,} distinct "
                      "feature ids)", hint="use fewer distinct features")
    dense = []
    for rows in sparse:
        m = np.zeros((len(rows), dim))
        for i, r in enumerate(rows):
            for idx, val in r:
                m[i, column[idx]] += val
        finite("the examples' vectors", m)
        dense.append(jnp.asarray(m, dtype))
    return dense[0], (dense[1] if x2 is not None else None)


class AbstractVectorKernel(AbstractKernel):
    vector_index: eqx.AbstractVar[int]

    def __call__(self, x: Float[Array, " d"], y: Float[Array, " d"]) -> Float[Array, ""]:
        """k(x, y) for two vectors: pure jnp, so it can be jitted and vmapped."""
        return self._gram(x[None, :], y[None, :])[0, 0]

    def _gram(self, a, b):
        raise NotImplementedError

    def _bound(self, sq):
        """A bound on |k(x, y)| (or on the terms computing it) from |x|^2 = |y|^2 = sq."""
        raise NotImplementedError

    def _fits(self, a, b):
        """Rows whose finite values make the kernel overflow are refused (Cauchy-Schwarz:
        every k(x, y) is bounded by the larger row's `_bound`)."""
        what = f"{type(self).__name__}"
        for name, m in (("x1", a), ("x2", b)):
            if m is not None:
                kernel_fits(name, m, self._bound, f"the {what} kernel")

    def gram(self, x1, x2=None, *, dtype=None, **options):
        check_options(self, options)  # tree options pass through algebra; others are errors
        dt = resolve_dtype(dtype)
        a, b = _dense(x1, x2, self.vector_index, dt, options.get("max_memory"))
        self._fits(a, b)
        check_matrix(memory_budget(options.get("max_memory")), a.shape[0],
                     (a if b is None else b).shape[0], dt.itemsize,
                     hint="compute it in parts (rows of x1 at a time)")
        return into_out(self._gram(a, a if b is None else b), options.get("out"))

    def diag(self, x, *, dtype=None, **options):
        check_options(self, options)
        dt = resolve_dtype(dtype)
        a, _ = _dense(x, None, self.vector_index, dt)
        self._fits(a, None)
        return jnp.diagonal(self._gram(a, a)) if a.shape[0] < 2048 else jnp.stack(
            [self._gram(r[None], r[None])[0, 0] for r in a]
        )


class Linear(AbstractVectorKernel):
    """k(x, y) = x . y"""

    vector_index: int = eqx.field(static=True, default=0)

    def _gram(self, a, b):
        return a @ b.T

    def _bound(self, sq):
        return sq


class Polynomial(AbstractVectorKernel):
    """k(x, y) = (gamma x . y + coef0) ** degree (SVM-Light's `-t 1 -d D -s gamma -r coef0`)."""

    gamma: Float[Array, ""]
    coef0: Float[Array, ""]
    degree: int = eqx.field(static=True)
    vector_index: int = eqx.field(static=True)

    def __init__(self, degree: int = 2, gamma: Any = 1.0, coef0: Any = 1.0, *,
                 vector_index: int = 0):
        self.degree = positive_int("degree", degree)
        self.gamma = positive("gamma", gamma, float)
        self.coef0 = nonnegative("coef0", coef0, float)  # >= 0: a positive definite kernel
        self.vector_index = vector_index

    def _gram(self, a, b):
        g = self.gamma.astype(a.dtype) * (a @ b.T) + self.coef0.astype(a.dtype)
        return g**self.degree

    def _bound(self, sq):
        return (self.gamma.astype(sq.dtype) * sq + self.coef0.astype(sq.dtype)) ** self.degree


class RBF(AbstractVectorKernel):
    """k(x, y) = exp(-gamma |x - y|^2)."""

    gamma: Float[Array, ""]
    vector_index: int = eqx.field(static=True)

    def __init__(self, gamma: Any = 1.0, *, vector_index: int = 0):
        self.gamma = positive("gamma", gamma, float)
        self.vector_index = vector_index

    def _gram(self, a, b):
        sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * (a @ b.T)
        return jnp.exp(-self.gamma.astype(a.dtype) * jnp.maximum(sq, 0))

    def _bound(self, sq):
        # |x - y|^2 is computed as |x|^2 + |y|^2 - 2 x·y, each term at most 2 max(|x|^2, |y|^2)
        return 4 * sq
