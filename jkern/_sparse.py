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

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ._validate import float_dtype, host_array, to_device
from .errors import InputError

INT32_MAX = 2**31 - 1  # column indices are int32 inside
INT64_MAX = 2**63 - 1  # feature ids (labels) are int64
SLACK = 4096  # unused columns worth keeping (ids as columns) before compacting


def sparse_ids(n_features: int, used: int) -> bool:
    """Whether `used` of `n_features` columns is few enough to store only those: fewer than
    half, past a slack of `SLACK` unused columns (small matrices keep ids as columns)."""
    return n_features > 2 * used + SLACK


class FeatureIds:
    """The feature id (a label, int64) of each column of a `SparseRows`: distinct and
    increasing, so column order is id order. Immutable and hashed by content once, so it can
    sit in a static field (a matrix's, a model's) without retracing.

    >>> ids = FeatureIds([3, 10, 2**40])
    >>> ids.columns([10, 7, 2**40]).tolist()
    [1, -1, 2]
    """

    __slots__ = ("array", "_hash")

    def __init__(self, ids: Any):
        a = np.array(ids, dtype=np.int64).reshape(-1)
        if a.size > 1 and not np.all(a[1:] > a[:-1]):
            raise InputError("feature ids must be distinct and increasing")
        a.setflags(write=False)
        self.array = a
        self._hash = hash((a.size, hashlib.blake2b(a.tobytes(), digest_size=16).digest()))

    def __len__(self) -> int:
        return int(self.array.size)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, FeatureIds) and self._hash == other._hash
                                 and np.array_equal(self.array, other.array))

    def __repr__(self) -> str:
        head = ", ".join(str(i) for i in self.array[:4].tolist())
        return f"FeatureIds([{head}{', ...' if self.array.size > 4 else ''}], n={self.array.size})"

    def columns(self, ids: Any) -> np.ndarray:
        """The column of each id in `ids` (int64), -1 for an id not among these."""
        ids = np.asarray(ids, np.int64)
        if self.array.size == 0:
            return np.full(ids.shape, -1, np.int64)
        pos = np.minimum(np.searchsorted(self.array, ids), self.array.size - 1)
        return np.where(self.array[pos] == ids, pos, -1)


def feature_ids(name: str, values: Any) -> np.ndarray:
    """`values` as exact int64 ids (1-D), or an `InputError` saying which is not one: a
    non-integer, or an integer past int64 (2^63 - 1). Signs are the caller's to check."""
    try:
        a = np.asarray(values)
    except OverflowError:
        a = np.asarray(values, object)
    if a.dtype == object:  # Python ints past int64 (or not ints at all)
        items = a.ravel().tolist()
        bad = next((v for v in items if isinstance(v, int) and not -2**63 <= v <= INT64_MAX),
                   None)
        if bad is not None:
            raise InputError(f"{name} must fit int64 (at most 2^63 - 1 = {INT64_MAX}), got "
                             f"{bad}")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
            raise InputError(f"{name} must be integers")
        a = np.asarray(items, np.int64)
    a = a.ravel()
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype.kind == "u" and int(a.max()) > INT64_MAX:
        raise InputError(f"{name} must fit int64 (at most 2^63 - 1 = {INT64_MAX}), got "
                         f"{int(a.max())}")
    if a.dtype.kind == "f":
        whole = np.isfinite(a) & (a == np.floor(a)) & (np.abs(a) < 2.0**63)
        if not np.all(whole):
            raise InputError(f"{name} must be integers, got {a[~whole][0]!r}")
    elif a.dtype.kind not in "iu":
        raise InputError(f"{name} must be integers, got an array of {a.dtype}")
    return a.astype(np.int64)


class SparseRows(eqx.Module):
    """An N x D sparse matrix stored by rows: row i holds `values[i, j]` at column
    `indices[i, j]`; padding entries have value 0 (and column 0).

    Column j stands for feature id `ids.array[j]` when `ids` is set (a `FeatureIds`: ids
    are labels, int64, the columns dense int32), else for id j. `compact()` keeps only the
    columns in use, `aligned(...)` maps rows onto another matrix's (a model's) columns by id.

    Build one with `SparseRows.from_rows`, `from_dense` or `from_coo`; `todense()` for checks.
    """

    indices: Int[Array, "n k"]
    values: Float[Array, "n k"]
    n_features: int = eqx.field(static=True)
    ids: FeatureIds | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if self.ids is not None and len(self.ids) != self.n_features:
            raise InputError(f"{len(self.ids)} feature ids for {self.n_features} columns")

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
                 dtype: Any = None, compact: bool | None = False) -> SparseRows:
        """From coordinate triplets (repeated (row, col) entries are summed).

        Columns are feature ids in [0, d), exact int64. `compact=True` stores only the
        columns that hold a nonzero (in id order, named by `ids`), so memory follows the
        distinct features, not the largest id; `None`: when few of the ids below d are
        used (`sparse_ids`). Ids past int32 are always compacted (columns are int32).
        """
        rows = feature_ids("row indexes", rows)
        cols = feature_ids("column indexes", cols)
        vals = np.asarray(vals).ravel()
        n, d = int(shape[0]), int(shape[1])
        if not (len(rows) == len(cols) == len(vals)):
            raise InputError(f"rows, cols and vals must have one length, got {len(rows)}, "
                             f"{len(cols)}, {len(vals)}")
        if n < 0 or d < 1:
            raise InputError(f"shape must be (n >= 0, d >= 1), got {shape}")
        if len(rows) and (rows.min() < 0 or int(rows.max()) >= n):
            raise InputError(f"row indexes must be in [0, {n}), got {rows.min()}..{rows.max()}")
        if len(cols) and (cols.min() < 0 or int(cols.max()) >= d):
            raise InputError(f"column indexes must be in [0, {d}), got {cols.min()}..{cols.max()}")
        if not np.all(np.isfinite(vals.astype(np.float64))):
            raise InputError("feature values must be finite")
        dt = float_dtype(dtype)  # the requested dtype, else JAX's default float
        # Merge repeated coordinates (sorted by row, then column), drop zeros, then lay the
        # rows out padded. One sort of row * d + col where that fits int64 (a lexsort is
        # several times slower); large ids sort by both keys.
        if n * d < 2**62:
            order = np.argsort(rows * np.int64(d) + cols, kind="stable")
        else:
            order = np.lexsort((cols, rows))
        r, c, v = rows[order], cols[order], vals.astype(np.float64)[order]
        first = np.ones(len(r), bool)
        first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
        starts = np.flatnonzero(first)
        summed = np.add.reduceat(v, starts) if len(v) else v
        r, c = r[starts], c[starts]
        keep = summed != 0
        r, c, summed = r[keep], c[keep], summed[keep]
        ids = None
        used = np.unique(c) if compact is not False or d > INT32_MAX else None
        if used is not None and (compact or d > INT32_MAX or sparse_ids(d, len(used))):
            c = np.searchsorted(used, c)
            ids, d = (FeatureIds(used), len(used)) if len(used) else (None, 1)
        counts = np.bincount(r, minlength=n)
        width = max(int(counts.max(initial=0)), 1)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(len(r)) - start[r]
        idx = np.zeros((n, width), np.int32)
        val = np.zeros((n, width), dt)
        idx[r, slot] = c
        val[r, slot] = summed
        return cls(to_device(idx), to_device(val), d, ids)

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
        if any(not isinstance(x, (int, np.integer)) or isinstance(x, bool) for x in c):
            raise InputError("column indexes must be integers")
        cols = feature_ids("column indexes", np.asarray([int(x) for x in c], object))
        d = max(int(cols.max(initial=0)) + 1, 1) if n_features is None else n_features
        return cls.from_coo(r, cols, np.asarray(v, np.float64), (len(rows), d), dtype=dtype)

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
        """The same rows with values of `dtype` (converted on the host where they live
        there: no program to compile); these rows where their values are of `dtype` (no
        copy: the arrays are immutable)."""
        if np.dtype(dtype) == np.dtype(self.values.dtype):
            return self
        host = host_array(self.values)
        if host is not None and not isinstance(self.values, np.ndarray):
            return SparseRows(self.indices, to_device(host, dtype), self.n_features, self.ids)
        return SparseRows(self.indices, self.values.astype(dtype), self.n_features, self.ids)

    def rows(self, idx: Any) -> SparseRows:
        """The rows `idx` (an index array or a boolean mask), as a new matrix."""
        idx = np.asarray(idx)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        return SparseRows(self.indices[idx], self.values[idx], self.n_features, self.ids)

    def column_ids(self, cols: Any) -> np.ndarray:
        """The feature id (int64) of each column in `cols`."""
        cols = np.asarray(cols, np.int64)
        return cols if self.ids is None else self.ids.array[cols]

    def compact(self, *, sparse: bool = False) -> SparseRows:
        """The same rows over only the columns that hold a nonzero, in id order (`ids`
        names them; a matrix whose columns are all in use is returned as it is). `sparse`:
        only when few of the columns are in use (`sparse_ids`; else `self`).

        >>> X = SparseRows.from_rows([{7: 1.0}, {2**40: 2.0, 7: 1.0}]).compact()
        >>> X.n_features, X.ids.array.tolist(), X.indices.tolist()
        (2, [7, 1099511627776], [[0, 0], [0, 1]])
        """
        idx, val = np.asarray(self.indices), np.asarray(self.values)
        present = val != 0
        if self.n_features <= 4 * idx.size + 1024:  # a count per column is cheap
            used = np.flatnonzero(np.bincount(idx[present], minlength=self.n_features))
        else:
            used = np.unique(idx[present])
        if len(used) == self.n_features or len(used) == 0 or (
                sparse and not sparse_ids(self.n_features, len(used))):
            return self
        if self.ids is None and used[-1] == len(used) - 1:  # ids 0..k-1: fewer columns
            return SparseRows(self.indices, self.values, len(used))
        new = np.where(present, np.searchsorted(used, idx), 0).astype(np.int32)
        return SparseRows(to_device(new), self.values, len(used),
                          FeatureIds(self.column_ids(used)))

    def aligned(self, ids: FeatureIds | None, n_features: int) -> tuple[SparseRows, int]:
        """These rows over the columns of another matrix (a trained model's): `n_features`
        columns named by `ids` (None: column j is id j). Each entry moves to the column of
        its feature id; ids not among those are dropped. Returns the rows and how many
        nonzero entries were dropped.

        >>> train = SparseRows.from_rows([{2**40: 1.0}, {3: 1.0}]).compact()
        >>> X, dropped = SparseRows.from_rows([{3: 1.0, 5: 1.0}]).aligned(train.ids, 2)
        >>> X.indices.tolist(), X.values.tolist(), dropped
        ([[0, 0]], [[1.0, 0.0]], 1)
        """
        if self.ids == ids and (ids is not None or self.n_features <= n_features):
            return self, 0
        try:
            idx, val = np.asarray(self.indices), np.asarray(self.values)
        except jax.errors.TracerArrayConversionError:
            raise InputError("X's feature ids differ from the model's: X must be concrete "
                             "(not traced) to be mapped onto the model's columns") from None
        present = val != 0
        cols = np.unique(idx[present])
        labels = self.column_ids(cols)
        if ids is None:
            target = np.where(labels < n_features, labels, -1)
        else:
            target = ids.columns(labels)
        where = np.minimum(np.searchsorted(cols, idx), max(len(cols) - 1, 0))
        new = np.where(present, target[where], -1) if len(cols) else np.full(idx.shape, -1)
        keep = new >= 0
        X = SparseRows(to_device(np.where(keep, new, 0), np.int32),
                       to_device(np.where(keep, val, 0), val.dtype), n_features, ids)
        return X, int(np.sum(present & ~keep))

    def column_counts(self) -> np.ndarray:
        """How many rows have a nonzero in each column (document frequency), `[D]` int64."""
        idx = np.asarray(self.indices)
        nz = np.asarray(self.values) != 0
        return np.bincount(idx[nz], minlength=self.n_features).astype(np.int64)

    def n_used_features(self) -> int:
        """How many columns hold a nonzero in some row (the features the data uses).

        >>> SparseRows.from_rows([{0: 1.0, 3: 2.0}, {3: 1.0}], n_features=5).n_used_features()
        2
        """
        return int(np.count_nonzero(self.column_counts()))


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

