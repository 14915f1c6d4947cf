"""The kernel part of a split expanded model (`_pke.ExpandedModel.rare`): the support
vectors that hold the features whose conjunctions are not expanded, found through each such
feature's list of holders, an inverted index as pecco's and opal's kernel parts. For binary
x and support vectors s, with x_C the expanded (common) features of x,

    Σ_s α_s (1 + |s ∩ x|)^d = Σ_{U ⊆ x_C} c_|U| w_U + Σ_{s ∋ a rare f ∈ x} α_s [(1 + |s ∩ x|)^d
                                                                       − (1 + |s ∩ x_C|)^d],

the first sum being the expansion's (`_table.table_margins`) and the second this module's.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._validate import host_array, to_device
from ..errors import InputError
from ._packing import packed_slots


class RareSupport(eqx.Module):
    """The kernel part of a split `ExpandedModel`: the support vectors, and for each rare
    feature (a model id at or above `n_common`, whose conjunctions are not expanded) the
    support vectors that hold it, an inverted index as pecco's and opal's kernel parts.

    Attributes:
        features: `[n_sv, w]` each support vector's model ids, ascending, padded with
            `n_model + 1` (no example's id).
        alpha: `[n_sv]` their weights.
        start: `[n_model - n_common + 1]` the holders of rare feature f are
            `holders[start[f - n_common]:start[f - n_common + 1]]`.
        holders: `[E]` support vector numbers, grouped by rare feature, ascending.
        n_common: K (static): features below it have their conjunctions expanded.
        n_model: N (static): the features some support vector holds.
    """

    features: Int[Array, "n_sv w"]
    alpha: Float[Array, " n_sv"]
    start: Int[Array, " R1"]
    holders: Int[Array, " E"]
    n_common: int = eqx.field(static=True)
    n_model: int = eqx.field(static=True)

    def __check_init__(self) -> None:
        # a loaded file's index must stay inside its arrays (a gather out of range reads
        # a clamped, wrong support vector in silence)
        start, holders = host_array(self.start), host_array(self.holders)
        if start is None or holders is None:
            return  # traced or on an accelerator: built by `of`
        n_sv = self.features.shape[0]
        if (self.alpha.shape != (n_sv,) or not 0 <= self.n_common <= self.n_model
                or start.shape != (self.n_model - self.n_common + 1,)
                or start[0] != 0 or start[-1] != len(holders) or np.any(np.diff(start) < 0)
                or np.any((holders < 0) | (holders >= n_sv))):
            raise InputError("RareSupport: its holders index does not fit its support "
                             "vectors (a damaged model)")

    @classmethod
    def of(cls, ranked: np.ndarray, alpha: np.ndarray, n_common: int, n_model: int,
           dtype: Any) -> RareSupport:
        """From the support vectors' model ids `ranked` (`[n_sv, w]`, `n_model` where
        absent; host) and weights `alpha` (host; those of 0 are left out)."""
        ranked = ranked[alpha != 0]
        alpha = alpha[alpha != 0]
        ranked = np.sort(np.where(ranked < n_model, ranked, n_model + 1), axis=1)
        sv, pos = np.nonzero((ranked >= n_common) & (ranked < n_model))
        feature = ranked[sv, pos] - n_common
        order = np.lexsort((sv, feature))
        start = np.searchsorted(feature[order], np.arange(n_model - n_common + 1))
        return cls(to_device(ranked, jnp.int32), to_device(alpha, dtype),
                   to_device(start, jnp.int32), to_device(sv[order], jnp.int32),
                   n_common, n_model)

    def visits_bound(self, rank: np.ndarray, idx: np.ndarray, present: np.ndarray) -> int:
        """The most support vectors `rare_block_margins` visits in one block of `idx`
        (`[blocks, B, k]` column ids, `present` flags; `rank`: the model's ids of the
        columns; host): the holders of each rare feature of each row, rounded up to a
        multiple of 2048 (few distinct programs)."""
        start = np.asarray(self.start)
        known = present & (idx >= 0) & (idx < len(rank))
        r = np.where(known, rank[np.where(known, idx, 0)], self.n_model)
        rare = (r >= self.n_common) & (r < self.n_model)
        f = np.where(rare, r - self.n_common, 0)
        held = np.where(rare, start[f + 1] - start[f], 0)
        most = int(held.reshape(len(idx), -1).sum(axis=1).max(initial=0))
        return max(2048, -(-most // 2048) * 2048)


def rare_block_margins(r: Int[Array, "B k"], rare: RareSupport, degree: int, visits: int
                       ) -> Array:
    """The kernel part of the margins of a block of rows whose model ids are `r` (`n_model`
    where absent, any order): Σ_s α_s [(1 + |s ∩ x|)^d − (1 + |s ∩ x_C|)^d] over the support
    vectors s that hold one of x's rare features, x_C being x's expanded features (s
    without one of x's rare features adds 0). Each row's rare features' holders are packed
    for the block (at most `visits`, `RareSupport.visits_bound`); a support vector is
    counted through the first of x's rare features it holds, once."""
    N, K = rare.n_model, rare.n_common
    B, k = r.shape
    is_rare = (r >= K) & (r < N)
    f = jnp.where(is_rare, r - K, 0)
    first = jnp.where(is_rare, rare.start[f], 0).reshape(-1)
    count = jnp.where(is_rare, rare.start[f + 1], 0).reshape(-1) - first
    slot, at, live = packed_slots(count, visits)  # each visit's (row, position)
    sv = rare.holders[jnp.where(live, first[slot] + at, 0)]
    row = slot // k
    x = r[row]  # [V, k]: the row's ids (N where absent: no support vector's)
    held = jnp.any(x[:, :, None] == rare.features[sv][:, None, :], axis=2)
    shared = jnp.sum(held, axis=1)
    shared_common = jnp.sum(held & (x < K), axis=1)
    first_rare = jnp.min(jnp.where(held & (x >= K), x, N), axis=1)
    mine = live & (first_rare == r.reshape(-1)[slot])
    dt = rare.alpha.dtype
    part = rare.alpha[sv] * ((1 + shared).astype(dt) ** degree
                             - (1 + shared_common).astype(dt) ** degree)
    return jax.ops.segment_sum(jnp.where(mine, part, 0), row, num_segments=B)
