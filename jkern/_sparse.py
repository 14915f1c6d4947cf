"""Feature matrices for linear algebra without an explicit N x N or dense N x D matrix.

A learner over explicit features needs two products only, X @ V and X.T @ U. `SparseRows`
stores a sparse N x D matrix row by row, padded to the longest row (index/value arrays, the
padding has value 0), so both products are fixed-shape gathers and scatter-adds that jit,
vmap and run on any device. A feature matrix may also be a dense `[N, D]` array, or a tuple
of blocks (dense and sparse) standing for their column concatenation [X1 X2 ...], e.g.
sparse lexical features beside a dense Nystrom embedding; `matmul`/`rmatmul` accept all three,
and a weight matrix for a tuple of blocks is the tuple of the blocks' weights.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ._validate import float_dtype
from .errors import InputError


class SparseRows(eqx.Module):
    """An N x D sparse matrix stored by rows: row i holds `values[i, j]` at column
    `indices[i, j]`; padding entries have value 0 (and column 0).

    Build one with `SparseRows.from_rows`, `from_dense` or `from_coo`; `todense()` for checks.
    """

    indices: Int[Array, "n k"]
    values: Float[Array, "n k"]
    n_features: int = eqx.field(static=True)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.indices.shape[0], self.n_features)

    @property
    def dtype(self) -> Any:
        return self.values.dtype

    def __len__(self) -> int:
        return self.indices.shape[0]

    @classmethod
    def from_coo(cls, rows: Any, cols: Any, vals: Any, shape: tuple[int, int], *,
                 dtype: Any = None) -> SparseRows:
        """From coordinate triplets (repeated (row, col) entries are summed)."""
        rows = np.asarray(rows, np.int64).ravel()
        cols = np.asarray(cols, np.int64).ravel()
        vals = np.asarray(vals).ravel()
        n, d = int(shape[0]), int(shape[1])
        if not (len(rows) == len(cols) == len(vals)):
            raise InputError(f"rows, cols and vals must have one length, got {len(rows)}, "
                             f"{len(cols)}, {len(vals)}")
        if n < 0 or d < 1:
            raise InputError(f"shape must be (n >= 0, d >= 1), got {shape}")
        if len(rows) and (rows.min() < 0 or rows.max() >= n):
            raise InputError(f"row indexes must be in [0, {n}), got {rows.min()}..{rows.max()}")
        if len(cols) and (cols.min() < 0 or cols.max() >= d):
            raise InputError(f"column indexes must be in [0, {d}), got {cols.min()}..{cols.max()}")
        if not np.all(np.isfinite(vals.astype(np.float64))):
            raise InputError("feature values must be finite")
        dt = float_dtype(dtype)  # the requested dtype, else JAX's default float
        # Merge repeated coordinates, drop zeros, then lay the rows out padded.
        key = rows * d + cols
        uniq, inv = np.unique(key, return_inverse=True)
        summed = np.bincount(inv.ravel(), weights=vals.astype(np.float64), minlength=len(uniq))
        keep = summed != 0
        uniq, summed = uniq[keep], summed[keep]
        r, c = uniq // d, uniq % d
        counts = np.bincount(r, minlength=n)
        width = max(int(counts.max(initial=0)), 1)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(len(r)) - start[r]
        idx = np.zeros((n, width), np.int32)
        val = np.zeros((n, width), dt)
        idx[r, slot] = c
        val[r, slot] = summed
        return cls(jnp.asarray(idx), jnp.asarray(val), d)

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[int, float] | Iterable[tuple[int, float]]], *,
                  n_features: int | None = None, dtype: Any = None) -> SparseRows:
        """From one `{column: value}` mapping (or (column, value) pairs) per row."""
        r, c, v = [], [], []
        for i, row in enumerate(rows):
            items = row.items() if isinstance(row, Mapping) else row
            for col, val in items:
                r.append(i)
                c.append(col)
                v.append(val)
        if any(not isinstance(x, (int, np.integer)) for x in c):
            raise InputError("column indexes must be integers")
        d = (max(c) + 1 if c else 1) if n_features is None else n_features
        return cls.from_coo(r, c, np.asarray(v, np.float64), (len(rows), d), dtype=dtype)

    @classmethod
    def from_dense(cls, x: Any, *, dtype: Any = None) -> SparseRows:
        if dtype is None and isinstance(x, jax.Array):
            dtype = x.dtype
        x = np.asarray(x)
        if x.ndim != 2:
            raise InputError(f"a dense feature matrix must be 2-D, got shape {x.shape}")
        r, c = np.nonzero(x)
        return cls.from_coo(r, c, x[r, c], x.shape, dtype=dtype)

    def todense(self) -> Float[Array, "n d"]:
        n = self.indices.shape[0]
        out = jnp.zeros((n, self.n_features), self.values.dtype)
        return out.at[jnp.arange(n)[:, None], self.indices].add(self.values)

    def astype(self, dtype: Any) -> SparseRows:
        return SparseRows(self.indices, self.values.astype(dtype), self.n_features)

    def rows(self, idx: Any) -> SparseRows:
        """The rows `idx` (an index array or a boolean mask), as a new matrix."""
        idx = np.asarray(idx)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        return SparseRows(self.indices[idx], self.values[idx], self.n_features)

    def column_counts(self) -> np.ndarray:
        """How many rows have a nonzero in each column (document frequency), `[D]` int64."""
        idx = np.asarray(self.indices)
        nz = np.asarray(self.values) != 0
        return np.bincount(idx[nz], minlength=self.n_features).astype(np.int64)


Features = Float[Array, "n d"] | SparseRows | tuple


def n_rows(x: Features) -> int:
    if isinstance(x, tuple):
        sizes = {n_rows(b) for b in x}
        if len(sizes) != 1:
            raise InputError("the feature blocks must have one number of rows, got "
                             f"{sorted(sizes)}")
        return sizes.pop()
    return int(x.shape[0])


def matmul(x: Features, v: Any) -> Float[Array, "n m"]:
    """X @ V: V is `[D, m]` (a tuple of per-block weights when X is a tuple of blocks)."""
    if isinstance(x, tuple):
        return sum((matmul(b, w) for b, w in zip(x, v, strict=True)),
                   start=jnp.zeros((n_rows(x), v[0].shape[1]), v[0].dtype))
    if isinstance(x, SparseRows):
        # One column slot at a time: the working set stays [N, m], not [N, k, m].
        def step(k, acc):
            return acc + x.values[:, k, None] * v[x.indices[:, k]]
        return jax.lax.fori_loop(0, x.indices.shape[1], step,
                                 jnp.zeros((x.indices.shape[0], v.shape[1]),
                                           jnp.result_type(x.values, v)))
    return x @ v


def rmatmul(x: Features, u: Float[Array, "n m"]) -> Any:
    """X.T @ U: `[D, m]` (a tuple of per-block results when X is a tuple of blocks)."""
    if isinstance(x, tuple):
        return tuple(rmatmul(b, u) for b in x)
    if isinstance(x, SparseRows):
        def step(k, acc):
            return acc.at[x.indices[:, k]].add(x.values[:, k, None] * u)
        return jax.lax.fori_loop(0, x.indices.shape[1], step,
                                 jnp.zeros((x.n_features, u.shape[1]),
                                           jnp.result_type(x.values, u)))
    return x.T @ u


def weights_sq_norm(w: Any) -> Float[Array, ""]:
    """Squared Frobenius norm of a weight matrix or a tuple of them."""
    if isinstance(w, tuple):
        return sum((weights_sq_norm(b) for b in w), start=jnp.zeros((), w[0].dtype))
    return jnp.sum(w * w)

