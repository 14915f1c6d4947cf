"""Fast classification of a trained kernel model by polynomial kernel expansion (pecco's PKE).

For binary vectors, (1 + |s ∩ x|)^d = Σ_{U ⊆ s ∩ x, |U| ≤ d} c_|U| (`conjunction_coefficients`),
so the margin of a support-vector model is

    m(x) = Σ_s α_s (1 + |s ∩ x|)^d = Σ_{U ⊆ x, |U| ≤ d} c_|U| w_U,   w_U = Σ_{s ⊇ U} α_s,

a sum over x's own conjunctions of weights computed once from the model. Classifying x then
costs the search of its O(|x|^d) conjunctions in the sorted table of the model's conjunctions,
independent of the number of support vectors (the pure kernel costs O(|S| |x|)).

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
from .._validate import finite_model, host_array, to_device
from ..errors import InputError
from ._explicit import _base, _conjunction_keys
from ._table import DENSE_IDS, CommonPart, dense_layout, searched_bound, table_margins


class ExpandedModel(eqx.Module):
    """The expanded form of a `SupportVectorModel`: weights of every conjunction of ≤ d
    features that some support vector holds (`SupportVectorModel.expanded()` builds it).

    Attributes:
        rank: `[n_features]` the model's id of each input feature (most frequent among the
            support vectors first), `n_model` for features no support vector holds.
        weights: `[table.size + 1]` w_U of the dense conjunctions (those of the
            `table.n_dense` most frequent features, at arithmetic ids), of the table's, then 0
            (conjunctions not in the model).
        table: the sorted keys of the other conjunctions and how to find a row's
            conjunctions (`CommonPart`, base `n_model + 1`).
        n_features: the training matrix's columns (static; other features are ignored).
        ids: the feature id of each column (the training matrix's `SparseRows.ids`; None:
            column j is id j), static: new rows are mapped onto the columns by id.
    """

    rank: Int[Array, " n_features"]
    weights: Float[Array, " D1"]
    table: CommonPart
    n_features: int = eqx.field(static=True)
    ids: FeatureIds | None = eqx.field(static=True, default=None)

    @property
    def n_model(self) -> int:
        """Features held by some support vector."""
        return self.table.n_common

    def width_of(self, X: SparseRows) -> int:
        """The most in-model features a row of `X` holds (host), rounded up to a multiple
        of 4 so that batches share compiled programs."""
        X, _ = X.aligned(self.ids, self.n_features)
        idx, val = np.asarray(X.indices), np.asarray(X.values)
        known = (val != 0) & (idx >= 0) & (idx < self.n_features)
        rank = np.asarray(self.rank)
        inside = known & (rank[np.where(known, idx, 0)] < self.n_model)
        width = int(inside.sum(axis=1).max(initial=0))
        return -(-width // 4) * 4

    def decision_function(self, X: SparseRows, *, block: int = 4096) -> Float[Array, " m"]:
        """The margins of `X`'s rows (binary features; values other than 0 and 1 raise),
        `block` rows per step of one jitted call."""
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
        rank = host_array(self.rank)
        searched = (searched_bound(rank, table, self.n_features, idx, present)
                    if rank is not None  # (traced rank: room for every combination)
                    else tuple(B * math.comb(table.width, j)
                               for j in range(1, table.degree + 1)))
        out = table_margins(self.rank, self.weights, table, self.n_features,
                            to_device(idx, jnp.int32), to_device(present), searched)
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
                           ids: FeatureIds | None = None,
                           dense_ids: int = DENSE_IDS) -> ExpandedModel:
    """The `ExpandedModel` of support vectors `indices`/`values` (binary) with weights
    `alpha` (host arrays; `chunk`: conjunction keys enumerated at a time; `dense_ids`: the
    most weights at arithmetic ids, `_table.dense_features`)."""
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
    base = _base(N, degree)
    big = base ** degree >= 2 ** 31
    if big and not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        raise InputError(f"{N} features at degree {degree} need 64-bit conjunction keys: "
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
    table, src = dense_layout(keys, N, width, degree, dense_ids)
    weights = np.append(w, 0.0)[src]
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32  # pyright: ignore
    return ExpandedModel(jnp.asarray(np.minimum(rank, N), jnp.int32),
                         jnp.asarray(weights, dtype), table, n_features, ids)
