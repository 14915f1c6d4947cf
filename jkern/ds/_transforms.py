"""Feature-matrix transforms fit on the training mentions and applied alike to test ones.

- `prune_features` drops rare and ubiquitous columns, `polynomial_expansion` adds the pairwise
  products of a row's features: together Algorithm 1 of the convex distant-supervision report
  (an explicit degree-2 polynomial kernel, kept narrow by pruning first; Goldberg & Elhadad
  2008).
- `randomized_svd_projection` is its Algorithm 2 (a rank-F projection from the top right
  singular vectors), computed by a randomized range finder (Halko, Martinsson & Tropp 2011)
  from products X @ V and X^T @ U only, so X stays sparse.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._cache import filter_jit
from .._sparse import Features, SparseRows, matmul, rmatmul
from .._validate import positive_int
from ..errors import InputError


def _coo(x: SparseRows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, values) of the nonzeros of `x`, sorted by row then column."""
    if not isinstance(x, SparseRows):
        raise InputError(f"expected a jkern.SparseRows, got {type(x).__name__} (dense "
                         "features: SparseRows.from_dense)")
    val = np.asarray(x.values)
    r, s = np.nonzero(val)
    # Sorted by (row, column), repeated columns of a row summed, as SparseRows.from_coo does.
    key = r.astype(np.int64) * x.n_features + np.asarray(x.indices)[r, s]
    uniq, inv = np.unique(key, return_inverse=True)
    summed = np.bincount(inv.ravel(), weights=val[r, s].astype(np.float64), minlength=len(uniq))
    keep = summed != 0
    uniq = uniq[keep]
    return uniq // x.n_features, uniq % x.n_features, summed[keep].astype(val.dtype)


def normalize_rows(x: SparseRows) -> SparseRows:
    """Each row scaled to unit L2 norm (all-zero rows stay zero).

    >>> x = SparseRows.from_rows([{0: 2.0, 1: 2.0, 2: 2.0, 3: 2.0}, {}], n_features=4)
    >>> normalize_rows(x).todense().tolist()
    [[0.5, 0.5, 0.5, 0.5], [0.0, 0.0, 0.0, 0.0]]
    """
    r, c, v = _coo(x)
    norm = np.sqrt(np.bincount(r, weights=v.astype(np.float64) ** 2, minlength=len(x)))
    return SparseRows.from_coo(r, c, v / norm[r], x.shape, dtype=x.dtype)


def remap_columns(x: SparseRows, column_map: Any) -> SparseRows:
    """`x` with column j moved to `column_map[j]`, and dropped where that is -1.

    Args:
        x: the feature matrix (e.g. test mentions, with the train vocabulary's columns).
        column_map: `[D]` ints, as returned by `prune_features`.

    Returns:
        A `SparseRows` with `column_map.max() + 1` columns (at least 1).
    """
    column_map = np.asarray(column_map, np.int64)
    if column_map.shape != (x.n_features,):
        raise InputError(f"column_map must have one entry per column of x ({x.n_features}), "
                         f"got shape {column_map.shape}")
    r, c, v = _coo(x)
    new = column_map[c]
    keep = new >= 0
    d = max(int(column_map.max(initial=-1)) + 1, 1)
    return SparseRows.from_coo(r[keep], new[keep], v[keep], (len(x), d), dtype=x.dtype)


def prune_features(x: SparseRows, min_count: int = 1,
                   max_count: int | None = None) -> tuple[SparseRows, np.ndarray]:
    """Keep the columns whose document frequency (rows with a nonzero) is in [min, max].

    Fit on the training rows; apply the same pruning to test rows with
    `remap_columns(x_test, column_map)` (and to the names with `FeatureVocabulary.select`).
    Values are kept as they are: a row normalized before pruning is not renormalized
    (`normalize_rows` does it).

    Args:
        x: the training feature matrix.
        min_count: drop columns in fewer rows than this.
        max_count: drop columns in more rows than this (None: no upper bound).

    Returns:
        `(pruned x, column_map)`: `column_map[j]` is old column j's new index, or -1 if
        dropped; kept columns stay in their order.

    Raises:
        InputError: no column is left.

    >>> x = SparseRows.from_rows([{0: 1.0, 1: 1.0}, {0: 1.0, 2: 1.0}, {0: 1.0, 1: 1.0}])
    >>> pruned, column_map = prune_features(x, 2, 2)
    >>> column_map.tolist(), pruned.todense().tolist()
    ([-1, 0, -1], [[1.0], [0.0], [1.0]])
    """
    if max_count is not None and max_count < min_count:
        raise InputError(f"max_count ({max_count}) must be >= min_count ({min_count})")
    counts = x.column_counts()
    keep = counts >= min_count
    if max_count is not None:
        keep &= counts <= max_count
    if not keep.any():
        raise InputError(f"no feature occurs in [{min_count}, {max_count}] rows (document "
                         f"frequencies range over {counts.min()}..{counts.max()})")
    column_map = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)
    return remap_columns(x, column_map), column_map


@dataclasses.dataclass(frozen=True, eq=False)
class ProductIndex:
    """The pairwise products seen in training, as columns after the `n_base` original ones.

    Product (a, b), a < b (a == b for squares), has the key a * n_base + b; `keys` are the
    seen keys sorted, and key `keys[j]` is column `n_base + j`. Lookups are exact (a binary
    search): no hashing, so no collisions.

    Attributes:
        n_base: the number of original columns.
        keys: `[M]` int64, sorted.
        squares: whether squares x_a^2 are products too.
    """

    n_base: int
    keys: np.ndarray
    squares: bool

    @property
    def n_features(self) -> int:
        return self.n_base + len(self.keys)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """`(a, b)`: the original columns of each product column."""
        return self.keys // self.n_base, self.keys % self.n_base

    def feature_names(self, base_names: Any) -> list[str]:
        """Names of all columns: the originals, then `"<name a>&<name b>"` per product."""
        if len(base_names) != self.n_base:
            raise InputError(f"expected {self.n_base} base names, got {len(base_names)}")
        a, b = self.pairs()
        return list(base_names) + [f"{base_names[i]}&{base_names[j]}" for i, j in zip(a, b)]


def polynomial_expansion(x: SparseRows, degree: int = 2, *, products: ProductIndex | None = None,
                         squares: bool | None = None, max_row_features: int = 10_000,
                         chunk_entries: int = 1 << 22) -> tuple[SparseRows, ProductIndex]:
    """Explicit degree-2 features: each row's original entries plus x_a x_b for a < b.

    Fit on the training rows (`products=None`); pass the returned `ProductIndex` to expand
    test rows the same way: a product never seen in training is dropped. With binary x the
    products are conjunctions of two features; the linear kernel of the result is
    x.y + sum_{a<b} x_a y_a x_b y_b, i.e. ((1 + x.y)^2 - 1) / 2 up to the weights of the
    degree-1 and square terms.

    Args:
        x: the (pruned) feature matrix; degree 2 only.
        degree: must be 2.
        products: a fit `ProductIndex` (expanding test rows) or None (fit one on `x`).
        squares: also add x_a^2 (default False; taken from `products` when given).
        max_row_features: refuse a row whose expansion m + m (m - 1) / 2 (+ m with squares)
            for m nonzeros exceeds this, rather than truncate it: prune first.
        chunk_entries: products formed at a time (bounds the working memory).

    Returns:
        `(expanded x, products)`: columns `[0, n_base)` are x's, then one per product.

    Raises:
        InputError: degree is not 2, a row's expansion is over `max_row_features`, or
            `products` was fit on a different number of columns.

    >>> x = SparseRows.from_rows([{0: 1.0, 1: 2.0, 2: 3.0}, {0: 1.0, 2: 1.0}])
    >>> big, index = polynomial_expansion(x)
    >>> index.feature_names(["a", "b", "c"])
    ['a', 'b', 'c', 'a&b', 'a&c', 'b&c']
    >>> big.todense().tolist()
    [[1.0, 2.0, 3.0, 2.0, 3.0, 6.0], [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]]
    >>> polynomial_expansion(SparseRows.from_rows([{1: 1.0, 2: 1.0}, {0: 1.0, 1: 1.0}],
    ...     n_features=3), products=index)[0].todense().tolist()
    [[0.0, 1.0, 1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]]
    """
    if degree != 2:
        raise InputError(f"only degree=2 is implemented, got {degree}")
    positive_int("max_row_features", max_row_features)
    if products is not None:
        if products.n_base != x.n_features:
            raise InputError(f"products were fit on {products.n_base} columns, x has "
                             f"{x.n_features}")
        if squares is not None and squares != products.squares:
            raise InputError(f"squares={squares} disagrees with the fit products "
                             f"(squares={products.squares})")
        squares = products.squares
    squares = bool(squares)
    n, d = x.shape
    r, c, v = _coo(x)
    nnz = np.bincount(r, minlength=n)
    size = nnz + nnz * (nnz - 1) // 2 + (nnz if squares else 0)
    if n and size.max() > max_row_features:
        i = int(np.argmax(size))
        raise InputError(f"row {i} has {nnz[i]} features: its degree-2 expansion has "
                         f"{size[i]} > max_row_features={max_row_features} columns; prune "
                         "features first (prune_features) or raise max_row_features")
    # Canonical rows (columns sorted within a row, no padding gaps) as [n, width] arrays.
    width = max(int(nnz.max(initial=0)), 1)
    slot = np.arange(len(r)) - np.concatenate([[0], np.cumsum(nnz)[:-1]])[r]
    idx = np.zeros((n, width), np.int64)
    val = np.zeros((n, width), v.dtype)
    idx[r, slot], val[r, slot] = c, v
    s, t = np.triu_indices(width, 0 if squares else 1)
    step = max(chunk_entries // max(len(s), 1), 1)
    rows, keys, prods = [], [], []
    for lo in range(0, n, step):
        ii, vv = idx[lo:lo + step], val[lo:lo + step]
        ok = (vv[:, s] != 0) & (vv[:, t] != 0)
        rr, pp = np.nonzero(ok)
        rows.append(rr + lo)
        keys.append(ii[rr, s[pp]] * d + ii[rr, t[pp]])
        prods.append(vv[rr, s[pp]] * vv[rr, t[pp]])
    pr = np.concatenate(rows + [np.zeros(0, np.int64)])
    pk = np.concatenate(keys + [np.zeros(0, np.int64)])
    pv = np.concatenate(prods + [np.zeros(0, v.dtype)])
    if products is None:
        products = ProductIndex(d, np.unique(pk), squares)
    pos = np.searchsorted(products.keys, pk)
    found = pos < len(products.keys)
    found[found] = products.keys[pos[found]] == pk[found]
    out_r = np.concatenate([r, pr[found]])
    out_c = np.concatenate([c, d + pos[found]])
    out_v = np.concatenate([v, pv[found]])
    return SparseRows.from_coo(out_r, out_c, out_v, (n, products.n_features),
                               dtype=x.dtype), products


@filter_jit
def _range_svd(x: Features, omega: Array, power_iters: int) -> Array:
    q, _ = jnp.linalg.qr(matmul(x, omega))
    for _ in range(power_iters):  # subspace iteration, re-orthonormalized each half step
        z, _ = jnp.linalg.qr(rmatmul(x, q))
        q, _ = jnp.linalg.qr(matmul(x, z))
    # X ~ Q B with B = Q^T X; B^T = X^T Q = U S W^T (thin SVD of a [D, l] matrix), so the
    # right singular vectors of B, which approximate X's, are the columns of U.
    u, _, _ = jnp.linalg.svd(rmatmul(x, q), full_matrices=False)
    return u


def randomized_svd_projection(x: Features, rank: int, *, key: Array, oversample: int = 10,
                              power_iters: int = 2) -> Float[Array, "d rank"]:
    """The top-`rank` right singular vectors V of X, by a randomized range finder.

    Project train and test alike with `X @ V` (`jkern._sparse.matmul(x, v)` for a
    `SparseRows`): a dense `[N, rank]` matrix whose column norms are X's top singular values.
    Only products with X and X^T are formed, plus QR/SVD of `[N, l]` and `[D, l]` matrices,
    l = rank + oversample. The error shrinks like (sigma_{l+1} / sigma_rank)^(2 power_iters
    + 1): on a decaying spectrum the top values agree with an exact SVD to ~1e-6 and better.

    Args:
        x: `[N, D]` features (a `SparseRows` or a dense array).
        rank: how many directions to keep (at most min(N, D)).
        key: a `jax.random` key for the Gaussian test matrix.
        oversample: extra directions sampled beyond `rank` (capped at min(N, D)).
        power_iters: subspace iterations (each costs one X and one X^T product).

    Returns:
        `[D, rank]` V with orthonormal columns, ordered by decreasing singular value.
    """
    positive_int("rank", rank)
    if isinstance(x, SparseRows):
        dtype = x.dtype
    else:
        x = jnp.asarray(x)
        if x.ndim != 2:
            raise InputError(f"x must be 2-D, got shape {x.shape}")
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        dtype = x.dtype
    n, d = x.shape
    if rank > min(n, d):
        raise InputError(f"rank ({rank}) must be at most min(N, D) = {min(n, d)}")
    if oversample < 0 or power_iters < 0:
        raise InputError("oversample and power_iters must be >= 0")
    width = min(rank + oversample, n, d)
    omega = jax.random.normal(key, (d, width), dtype)
    return _range_svd(x, omega, int(power_iters))[:, :rank]
