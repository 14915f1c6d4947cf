"""Fast classification of a trained kernel model by polynomial kernel expansion (pecco's PKE).

For binary vectors, (1 + |s ∩ x|)^d = Σ_{U ⊆ s ∩ x, |U| ≤ d} c_|U| (`conjunction_coefficients`),
so the margin of a support-vector model is

    m(x) = Σ_s α_s (1 + |s ∩ x|)^d = Σ_{U ⊆ x, |U| ≤ d} c_|U| w_U,   w_U = Σ_{s ⊇ U} α_s,

a sum over x's own conjunctions of weights computed once from the model. Classifying x then
costs the search of its O(|x|^d) conjunctions in the sorted table of the model's conjunctions,
independent of the number of support vectors (the pure kernel costs O(|S| |x|)).

Only the conjunctions of the most frequent features are expanded (by default those that get
arithmetic ids, `_table.dense_features`: no table search at all). The rest of the margin,
Σ_s α_s [(1 + |s ∩ x|)^d − (1 + |s ∩ x_C|)^d] over the support vectors s that hold one of x's
rare features (x_C: x's expanded features), is the kernel's, found through each rare
feature's list of holders (`_holders.RareSupport`): pecco's split of a model into an
expanded part and a kernel part. On UD at d = 3 a test row holds about 14 model features,
two or three of them rare: it reads its other conjunctions at arithmetic ids and visits
about 37 support vectors, where the whole expansion searched most of its conjunctions in a
table of 11.35M weights (docs/pa.md has the timings).

The table is keyed on the model's features renumbered by how many support vectors hold them
(most frequent first), so keys stay small; a batch is classified in jitted blocks: renumber,
sort each row, enumerate its conjunctions over the first `width` positions (the most
in-model features any row of the batch holds), search, sum. Exact: with the exact PA-I
arithmetic (α a multiple of 2^-32) the weights and margins are exact sums in float64.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._labels import sign_labels
from .._sparse import FeatureIds, SparseRows
from .._validate import finite_model, host_array, is_traced, to_device
from ..errors import InputError
from ._explicit import _base, _conjunction_keys
from ._holders import RareSupport
from ._table import (
    DENSE_IDS,
    CommonPart,
    dense_features,
    dense_layout,
    searched_bound,
    table_margins,
)


class ExpandedModel(eqx.Module):
    """The expanded form of a `SupportVectorModel`: weights of every conjunction of ≤ d
    of the most frequent features that some support vector holds, and the support vectors
    that hold the others (`rare`) (`SupportVectorModel.expanded()` builds it).

    Attributes:
        rank: `[n_features]` the model's id of each input feature (most frequent among the
            support vectors first), `n_model` for features no support vector holds.
        weights: `[table.size + 1]` w_U of the dense conjunctions (those of the
            `table.n_dense` most frequent features, at arithmetic ids), of the table's, then 0
            (conjunctions not in the model).
        table: the sorted keys of the other expanded conjunctions and how to find a row's
            conjunctions (`CommonPart` over the `table.n_common` most frequent features,
            base `table.n_common + 1`).
        n_features: the training matrix's columns (static; other features are ignored).
        ids: the feature id of each column (the training matrix's `SparseRows.ids`; None:
            column j is id j), static: new rows are mapped onto the columns by id.
        rare: the support vectors holding the features at or above `table.n_common`
            (`RareSupport`), or None: every feature's conjunctions are expanded.
    """

    rank: Int[Array, " n_features"]
    weights: Float[Array, " D1"]
    table: CommonPart
    n_features: int = eqx.field(static=True)
    ids: FeatureIds | None = eqx.field(static=True, default=None)
    rare: RareSupport | None = None

    @property
    def n_model(self) -> int:
        """Features held by some support vector."""
        return self.table.n_common if self.rare is None else self.rare.n_model

    def width_of(self, X: SparseRows) -> int:
        """The most expanded features a row of `X` holds (host), rounded up to a multiple
        of 4 (at least 4) so that batches share compiled programs."""
        X, _ = X.aligned(self.ids, self.n_features)
        idx, val = np.asarray(X.indices), np.asarray(X.values)
        known = (val != 0) & (idx >= 0) & (idx < self.n_features)
        rank = np.asarray(self.rank)
        inside = known & (rank[np.where(known, idx, 0)] < self.table.n_common)
        width = int(inside.sum(axis=1).max(initial=0))
        return max(4, -(-width // 4) * 4)  # (a batch without one still enumerates ∅)

    def decision_function(self, X: SparseRows, *, block: int = 4096) -> Float[Array, " m"]:
        """The margins of `X`'s rows (binary features; values other than 0 and 1 raise),
        `block` rows per step of one jitted call. Outside jit and vmap: the blocks' sizes
        come from the model's and the rows' ids on the host."""
        if any(is_traced(leaf) for leaf in jax.tree_util.tree_leaves(self)):
            raise InputError("ExpandedModel.decision_function sizes its work from the model "
                             "on the host: call it outside jit/vmap (the model is traced)")
        self = finite_model(self)
        if not isinstance(X, SparseRows):
            raise InputError(f"X must be a jkern.SparseRows, got {type(X).__name__}")
        X, _ = X.aligned(self.ids, self.n_features)
        val = np.asarray(X.values)
        if not np.all((val == 0) | (val == 1)):
            raise InputError("the expanded model classifies binary features (every value 0 "
                             "or 1); use SupportVectorModel.decision_function for real values")
        m = len(X)
        if m == 0:
            return jnp.zeros((0,), self.weights.dtype)
        width = self.width_of(X)
        table = self.table.with_width(width)
        B = max(1, min(block, m))
        pad = -m % B
        # rows padded to whole blocks and to at least `width` columns (the conjunctions
        # are enumerated over `width` positions)
        cols = max(0, width - val.shape[1])
        idx = np.pad(np.asarray(X.indices), ((0, pad), (0, cols)))
        val = np.pad(val, ((0, pad), (0, cols)))
        idx = idx.reshape(-1, B, idx.shape[1])
        present = val.reshape(-1, B, val.shape[1]) != 0
        rank = np.asarray(self.rank)  # (a copy from an accelerator: [n_features] ids)
        searched = searched_bound(rank, table, self.n_features, idx, present)
        visits = 0 if self.rare is None else self.rare.visits_bound(rank, idx, present)
        out = table_margins(self.rank, self.weights, table, self.n_features,
                            to_device(idx, jnp.int32), to_device(present), searched,
                            self.rare, visits)
        host = host_array(out)
        return to_device(host.reshape(-1)[:m]) if host is not None else out.reshape(-1)[:m]

    @property
    def classes(self) -> tuple[int, int]:
        """PA-I is binary: (-1, +1); `predict` gives +1 where the margin is >= 0."""
        return (-1, 1)

    def predict(self, X: SparseRows) -> Int[Array, " m"]:
        """+1 where the margin is >= 0, else -1."""
        return sign_labels(self.decision_function(X))


def expand_support_vectors(indices: np.ndarray, values: np.ndarray, alpha: np.ndarray,
                           degree: int, n_features: int, *, chunk: int = 1 << 22,
                           ids: FeatureIds | None = None, dense_ids: int = DENSE_IDS,
                           common: int | None = None) -> ExpandedModel:
    """The `ExpandedModel` of support vectors `indices`/`values` (binary) with weights
    `alpha` (host arrays; `chunk`: conjunction keys enumerated at a time; `dense_ids`: the
    most weights at arithmetic ids, `_table.dense_features`; `common`: the most frequent
    features whose conjunctions are expanded, the others' support vectors kept (None: as
    many as have arithmetic ids, so no conjunction is searched in a table))."""
    indices, values = np.asarray(indices), np.asarray(values)
    alpha = np.asarray(alpha, np.float64)
    if not np.all((values == 0) | (values == 1)):
        raise InputError("the polynomial kernel expansion needs binary support vectors (every "
                         "value 0 or 1)")
    present = values != 0
    counts = np.bincount(indices[present].astype(np.int64), minlength=n_features)
    held = np.flatnonzero(counts)
    order = held[np.lexsort((held, -counts[held]))]  # most frequent first, ties by id
    N = len(order)
    rank = np.full(n_features, N, np.int64)
    rank[order] = np.arange(N)
    ranked = np.where(present, rank[np.where(present, indices, 0)], N)
    if common is not None and common < 0:
        raise InputError(f"common must be >= 0, got {common}")
    # by default the features whose conjunctions all have arithmetic ids (none: all)
    K = min(N, (dense_features(N, degree, dense_ids) or N) if common is None else common)
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32  # pyright: ignore
    rare = RareSupport.of(ranked, alpha, K, N, dtype) if K < N else None
    # the expanded part: the conjunctions of the K most frequent features
    present = present & (ranked < K)
    ranked = np.where(present, ranked, K)
    base = _base(K, degree)
    big = base ** degree >= 2 ** 31
    if big and not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        raise InputError(f"{K} features at degree {degree} need 64-bit conjunction keys: "
                         "enable x64 (jax.config.update('jax_enable_x64', True))")
    width = int(present.sum(axis=1).max(initial=0))
    per_row = sum(math.comb(width, j) for j in range(degree + 1))
    step = max(1, chunk // max(per_row, 1))
    keys_parts, weight_parts = [], []
    for start in range(0, len(ranked), step):
        keys, _ = _conjunction_keys((ranked[start:start + step], present[start:start + step]),
                                    degree, base)
        a = np.broadcast_to(alpha[start:start + step, None], keys.shape)
        ok = keys >= 0
        u, inv = np.unique(keys[ok], return_inverse=True)
        keys_parts.append(u)
        weight_parts.append(np.bincount(inv, weights=a[ok], minlength=len(u)))
    all_keys = np.concatenate(keys_parts) if keys_parts else np.zeros(1, np.int64)
    all_w = np.concatenate(weight_parts) if weight_parts else np.zeros(1)
    keys, inv = np.unique(all_keys, return_inverse=True)
    w = np.bincount(inv, weights=all_w, minlength=len(keys))
    # the conjunctions of the most frequent features have their weights at arithmetic ids
    # (no search: one read where a table lookup takes several), the others a table
    table, weights = dense_layout(keys, K, width, degree, dense_ids, weights=np.append(w, 0.0))
    return ExpandedModel(jnp.asarray(np.minimum(rank, N), jnp.int32),
                         jnp.asarray(weights, dtype), table, n_features, ids, rare)
