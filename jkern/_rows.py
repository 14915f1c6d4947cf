"""Row access for the coordinate solvers: what a coordinate step needs of a feature matrix.

A dual coordinate step touches one example x_i twice: the dot products w·x_i of the models
being trained, and the update w += δ x_i. `DenseRows` reads x_i as a `[d]` row of an `[n, d]`
array; `SparseRowsAccess` reads the k stored entries of row i of a `jkern.SparseRows`, so the
dot is a gather-sum over k columns and the update a scatter-add to them (O(k) per step,
whatever d is). The solvers (`svm._dcd._solve`, the distant-supervision bcd) are written once
against these; the rows are data that every learner shares, so they live beside `_sparse`.

`as_rows` checks a user's X (either kind) at the boundary; `scores` is X @ wᵀ for a model's
weights of any batch shape.
"""

from __future__ import annotations

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ._sparse import SparseRows, matmul
from ._validate import finite, float_dtype, is_traced, kernel_fits
from .errors import InputError


class AbstractRows(eqx.Module):
    """An `[n, d]` feature matrix as seen by a coordinate solver."""

    X: eqx.AbstractVar[Any]  # the matrix: an `[n, d]` array or a `SparseRows`

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, int]: ...

    @property
    @abc.abstractmethod
    def dtype(self) -> Any: ...

    @abc.abstractmethod
    def sq_norms(self) -> Float[Array, " n"]:
        """‖x_i‖² of every row."""

    @abc.abstractmethod
    def row(self, i: Int[Array, ""]) -> Any:
        """Row i, in whatever form `dot` and `axpy` take."""

    @abc.abstractmethod
    def dot(self, W: Float[Array, "m d"], r: Any) -> Float[Array, " m"]:
        """W @ x_r: one dot product per model."""

    @abc.abstractmethod
    def axpy(self, W: Float[Array, "m d"], coef: Float[Array, " m"], r: Any
             ) -> Float[Array, "m d"]:
        """W + coef[:, None] * x_r[None, :]."""


class DenseRows(AbstractRows):
    X: Float[Array, "n d"]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.X.shape[0], self.X.shape[1])

    @property
    def dtype(self) -> Any:
        return self.X.dtype

    def sq_norms(self) -> Float[Array, " n"]:
        return jnp.einsum("ij,ij->i", self.X, self.X)

    def row(self, i: Int[Array, ""]) -> Float[Array, " d"]:
        return jax.lax.dynamic_index_in_dim(self.X, i, keepdims=False)

    def dot(self, W: Float[Array, "m d"], r: Float[Array, " d"]) -> Float[Array, " m"]:
        return W @ r

    def axpy(self, W: Float[Array, "m d"], coef: Float[Array, " m"], r: Float[Array, " d"]
             ) -> Float[Array, "m d"]:
        return W + coef[:, None] * r[None, :]


class SparseRowsAccess(AbstractRows):
    X: SparseRows

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape

    @property
    def dtype(self) -> Any:
        return self.X.dtype

    def sq_norms(self) -> Float[Array, " n"]:
        # Exact even when a row names a column twice (its entries add up, as in `todense`):
        # sort each row by column, sum each run of equal columns, square the sums.
        idx, val = jax.lax.sort((self.X.indices, self.X.values), dimension=1, num_keys=1)
        n, k = idx.shape
        if k == 0:
            return jnp.zeros((n,), val.dtype)
        new = jnp.concatenate([jnp.ones((n, 1), bool), idx[:, 1:] != idx[:, :-1]], axis=1)
        run = jnp.cumsum(new.astype(jnp.int32), axis=1) - 1
        sums = jnp.zeros((n, k), val.dtype).at[jnp.arange(n)[:, None], run].add(val)
        return jnp.sum(sums * sums, axis=1)

    def row(self, i: Int[Array, ""]) -> tuple[Int[Array, " k"], Float[Array, " k"]]:
        return (jax.lax.dynamic_index_in_dim(self.X.indices, i, keepdims=False),
                jax.lax.dynamic_index_in_dim(self.X.values, i, keepdims=False))

    def dot(self, W: Float[Array, "m d"], r: tuple[Int[Array, " k"], Float[Array, " k"]]
            ) -> Float[Array, " m"]:
        idx, val = r
        return W[:, idx] @ val

    def axpy(self, W: Float[Array, "m d"], coef: Float[Array, " m"],
             r: tuple[Int[Array, " k"], Float[Array, " k"]]) -> Float[Array, "m d"]:
        idx, val = r
        # Padding entries add 0 to column 0.
        return W.at[:, idx].add(coef[:, None] * val[None, :])


def as_rows(X: Any, dtype: Any) -> tuple[AbstractRows, Any]:
    """Check a feature matrix (`[n, d]` array or `SparseRows`) and cast it to the computation
    dtype (`dtype`, else X's floating dtype, else JAX's default float)."""
    if isinstance(X, SparseRows):
        X = _check_sparse(X, dtype)
        return SparseRowsAccess(X), X.dtype
    X = jnp.asarray(X)
    if X.ndim != 2:
        raise InputError(f"X must be 2-D [n, d] or a jkern.SparseRows, got shape {X.shape}")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise InputError(f"X must have at least one row and one column, got shape {X.shape}")
    dt = float_dtype(dtype, X)
    X = X.astype(dt)
    finite("X", X)
    # finite values whose squares overflow: Q_ii = |x|^2 is inf, every step 0 or NaN
    kernel_fits("X", X, lambda sq: sq, "the linear kernel x·y")
    return DenseRows(X), dt


def _check_sparse(X: SparseRows, dtype: Any) -> SparseRows:
    idx, val = X.indices, X.values
    if idx.ndim != 2 or val.shape != idx.shape:
        raise InputError(f"SparseRows X must have indices and values of one 2-D shape [n, k], "
                         f"got {tuple(idx.shape)} and {tuple(val.shape)}")
    if idx.shape[0] < 1:
        raise InputError("X must have at least one row, got a SparseRows of 0 rows")
    if not jnp.issubdtype(idx.dtype, jnp.integer):
        raise InputError(f"SparseRows X must have integer indices, got {idx.dtype}")
    if not is_traced(idx) and idx.size:
        lo, hi = int(jnp.min(idx)), int(jnp.max(idx))
        if lo < 0 or hi >= X.n_features:
            raise InputError(f"SparseRows X has column indices {lo}..{hi}, outside "
                             f"[0, n_features = {X.n_features})")
    dt = float_dtype(dtype, val)
    X = X.astype(dt)
    finite("X", X.values)
    kernel_fits("X", X.values, lambda sq: sq, "the linear kernel x·y",
                label=lambda i, j: int(X.column_ids(np.asarray(X.indices)[i, j])))
    return X


def scores(X: Any, w: Float[Array, "*batch d"]) -> Float[Array, " m *batch"]:
    """X @ wᵀ for weights `w` `[*batch, d]`: `[m]` for `[d]`, `[m, k]` for `[k, d]`,
    `[*lead, m, k]` for `[*lead, k, d]` (as `X @ swapaxes(w, -1, -2)`). X is an `[m, d]`
    array or a `SparseRows` of d features, cast to w's dtype."""
    d = w.shape[-1]
    if isinstance(X, SparseRows):
        if X.n_features != d:
            raise InputError(f"X has {X.n_features} features (a SparseRows of shape "
                             f"{X.shape}); the model has {d}")
        X = X.astype(w.dtype)
        s = matmul(X, w.reshape(-1, d).T)  # [m, prod(batch)]
        if w.ndim == 1:
            return s[:, 0]
        s = s.reshape((s.shape[0], *w.shape[:-1]))
        return jnp.moveaxis(s, 0, -2)
    X = jnp.asarray(X, w.dtype)
    if X.ndim != 2 or X.shape[1] != d:
        raise InputError(f"X has shape {tuple(X.shape)}; the model has {d} features: pass "
                         f"[m, {d}] or a jkern.SparseRows")
    return X @ jnp.swapaxes(w, -1, -2) if w.ndim > 1 else X @ w

