"""Kernel splitting (Goldberg & Elhadad 2008; opal's online variant): the PA-I margin as an
explicit part over the N most frequent features and a kernel part over the rest.

Features are renumbered by training frequency (`frequency_order`), so the common features are
the ids below N and every row lists them first. With x_C = x ∩ {f < N}, for binary vectors

    m(x) = Σ_s α_s (1 + |s∩x|)^d
         = Σ_{U ⊆ x_C, |U| ≤ d} c_|U| w_U  +  Σ_{s ∈ S_R(x)} α_s [(1 + |s∩x|)^d − (1 + |s∩x_C|)^d]

with w_U = Σ_s α_s [U ⊆ s] (the conjunction weights of `_explicit`, w_∅ = Σ_s α_s the implicit
bias) and S_R(x) the support vectors sharing a rare feature (id >= N) with x: the others have
s∩x = s∩x_C and add 0. This is opal's sum of (k+2)^d − (k+1)^d terms, telescoped per support
vector. Both parts are integer sums in exact mode, so the margin is the pure kernel's bit for
bit.

How it is laid out for JAX (fixed shapes, one `lax.scan` step per example):

- the explicit part: the table of common conjunctions (`conjunction_table(..., n_common=N)`,
  sorted int64 keys) is built on the host; a step enumerates its example's conjunctions over
  the first `width` positions (static combinations), finds their weights by `searchsorted`,
  and an update scatter-adds Δα to them;
- the index from rare feature to support vectors: one CSR array whose segment for feature f
  has room for every distinct training vector holding f (support vectors are training
  vectors, so it never overflows); a new support vector appends its slot to its rare
  features' segments. A step walks the segments of its rare features in fixed chunks of
  `GROUP` entries (a `fori_loop` over ceil(entries / GROUP) chunks) and counts a support
  vector once, at the first of x's rare features it holds.

N: given (`n_common`), or the largest 2^i − 1 whose conjunction table fits a memory budget
(`choose_n_common`, opal's halving rule: 16 bytes a conjunction, key and weight).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._sparse import SparseRows
from ..errors import InputError
from ._explicit import conjunction_coefficients, conjunction_table
from ._kernel import decide

GROUP = 64  # index entries per chunk of the rare-feature walk
TABLE_BYTES = 16  # one common conjunction: its int64 key and its weight


class SplitInstance(NamedTuple):
    """One example for the splitting and slicing learners (or a batch of them).

    Attributes:
        indices: `[k]` frequency-ordered feature ids, ascending; padding = n_features.
        uid: id of the distinct feature vector (`unique_rows`).
        nodes: `[k]` (slicing) the prefix-trie node of each rare position, n_nodes
            elsewhere; unused by splitting.
    """

    indices: Int[Array, "*block k"]
    uid: Int[Array, "*block"]
    nodes: Int[Array, "*block k"]


class SplitState(NamedTuple):
    """Support vectors, common-conjunction weights and the rare-feature index.

    Attributes:
        sv_indices: `[cap, k]` support vectors' feature ids (padding n_features).
        alpha: `[cap]` their weights (int64 counts of 2^-32 in exact mode).
        slot: `[n_vectors]` slot of each vector id, -1 if not a support vector.
        n_sv, n_updates, overflow: as `KernelState`.
        w: `[D + 1]` weights of the common conjunctions (last: a sink, margin coefficient 0).
        post: the CSR index of rare features: support-vector slots (splitting) or event
            ids (slicing).
        post_start: `[n_features + 1]` where each feature's segment starts (and the end).
        post_count: `[n_features]` entries in each segment.
        pos_of: `[n_features + 1]` scratch (zeros between steps): 1 + the position of each
            of the current example's features.
        node_margin: (slicing) `[n_nodes]` the cached partial margin of each trie node.
        node_seen: (slicing) `[n_nodes]` how many of its feature's events the node's
            margin includes (its time stamp).
        events: (slicing) `[E]` the slot each update (event) went to.
        event_alpha: (slicing) `[E]` its Δα.
        n_events: (slicing) events logged.
        walked: index entries visited so far (the kernel part's work).
    """

    sv_indices: Int[Array, "cap k"]
    alpha: Array
    slot: Int[Array, " u"]
    n_sv: Int[Array, ""]
    n_updates: Int[Array, ""]
    overflow: Bool[Array, ""]
    w: Array
    post: Int[Array, " P"]
    post_start: Int[Array, " f1"]
    post_count: Int[Array, " f"]
    pos_of: Int[Array, " f1"]
    node_margin: Array
    node_seen: Int[Array, " nodes"]
    events: Int[Array, " E"]
    event_alpha: Array
    n_events: Int[Array, ""]
    walked: Int[Array, ""]


def choose_n_common(X: SparseRows, degree: int, budget: int) -> int:
    """opal's N: the largest 2^i − 1 (or every feature) whose table of common conjunctions
    over `X`'s rows (frequency-ordered) takes at most `budget` bytes (`TABLE_BYTES` each).

    >>> X = SparseRows.from_rows([{0: 1, 1: 1, 2: 1}, {0: 1, 3: 1}])
    >>> choose_n_common(X, 2, 1 << 20), choose_n_common(X, 2, 5 * TABLE_BYTES)
    (4, 1)
    """
    limit = budget // TABLE_BYTES
    best, i = 0, 1
    while True:
        n = min(2 ** i - 1, X.n_features)
        if conjunction_table(X, degree, n_common=n, limit=limit) is None:
            return best
        best = n
        if n == X.n_features:
            return best
        i += 1


def posting_starts(X: SparseRows, first_rows: np.ndarray, n_common: int, *,
                   per_row: int = 1) -> np.ndarray:
    """`[n_features]` segment starts (the total as a last entry) of a CSR index of the rare
    features: room for `per_row` entries for each row of `first_rows` holding a feature."""
    idx = np.asarray(X.indices)[first_rows]
    val = np.asarray(X.values)[first_rows]
    rare = (val != 0) & (idx >= n_common)
    counts = np.bincount(idx[rare], minlength=X.n_features) * per_row
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def combinations(width: int, degree: int) -> tuple[np.ndarray, ...]:
    """Static position combinations of sizes 1..d over the first `width` positions."""
    return tuple(np.asarray(list(itertools.combinations(range(width), j)), np.int32)
                 .reshape(-1, j) for j in range(1, degree + 1))


class CommonPart(eqx.Module):
    """The explicit part: keys of the common conjunctions and how to find an example's.

    Attributes:
        keys: `[D]` sorted keys Σ_i (f_i + 1) base^i of the common conjunctions (∅ = 0).
        n_common: N (static); base = N + 1.
        width: positions of a row that can hold common features (static).
        degree: d (static).
    """

    keys: Int[Array, " D"]
    n_common: int = eqx.field(static=True)
    width: int = eqx.field(static=True)
    degree: int = eqx.field(static=True)

    def ids(self, indices: Int[Array, "*batch k"]) -> Int[Array, "*batch K"]:
        """The weight ids of x's common conjunctions (∅ first, then by size over the static
        position combinations); conjunctions not in the table get the sink id D. A batch
        of rows is one vectorized search (done ahead of the sequential scan)."""
        D = self.keys.shape[0]
        base = self.n_common + 1
        f = indices[..., :self.width]
        common = f < self.n_common
        ids = [jnp.zeros(f.shape[:-1] + (1,), jnp.int32)]
        for j, combo in enumerate(combinations(self.width, self.degree), 1):
            if combo.size == 0:
                break
            fs = f[..., combo].astype(self.keys.dtype)  # [..., nc, j], ascending
            ok = jnp.all(common[..., combo], axis=-1)
            key = sum((fs[..., i] + 1) * base ** i for i in range(j))
            pos = jnp.minimum(jnp.searchsorted(self.keys, key), D - 1)
            found = ok & (self.keys[pos] == key)
            ids.append(jnp.where(found, pos, D).astype(jnp.int32))
        return jnp.concatenate(ids, axis=-1)

    def coefficients(self, ids: Int[Array, " K"], dtype: Any) -> Array:
        """c_|U| for each id from `ids` (0 for the sink)."""
        c = conjunction_coefficients(self.degree)
        sizes = [0] + [j for j, combo in enumerate(combinations(self.width, self.degree), 1)
                       for _ in range(combo.shape[0])]
        col = jnp.asarray(np.asarray(c)[np.asarray(sizes, np.int64)], dtype)
        return jnp.where(ids < self.keys.shape[0], col, 0)


def common_part(Xf: SparseRows, degree: int, n_common: int) -> CommonPart:
    """The `CommonPart` of frequency-ordered rows `Xf` for N = `n_common`."""
    keys = conjunction_table(Xf, degree, n_common=n_common)
    assert keys is not None
    idx, val = np.asarray(Xf.indices), np.asarray(Xf.values)
    width = int(np.sum((val != 0) & (idx < n_common), axis=1).max(initial=0))
    big = (n_common + 1) ** degree >= 2 ** 31
    if big and not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        raise InputError(f"n_common={n_common} at degree {degree} needs 64-bit keys: enable "
                         "x64 (jax.config.update('jax_enable_x64', True)) or pass a smaller "
                         "n_common")
    return CommonPart(jnp.asarray(keys, jnp.int64 if big else jnp.int32), n_common, width,
                      degree)


def kernel_int(dots: Array, degree: int, dtype: Any) -> Array:
    """(1 + dots)^d for integer counts `dots`, in `dtype`."""
    return (1 + dots.astype(dtype)) ** degree


def walk(lengths: Int[Array, " k"], body, init, group: int = GROUP):
    """Visit the entries of k consecutive segments (segment p has `lengths[p]` entries) in
    chunks of `group`: `body(acc, p, i, valid)` with `[group]` arrays of segment positions
    p, offsets i within them and validity, returning the new acc."""
    cum = jnp.cumsum(lengths)
    total = cum[-1]
    k = lengths.shape[0]

    def chunk(g, acc):
        e = g * group + jnp.arange(group, dtype=cum.dtype)
        valid = e < total
        p = jnp.minimum(jnp.searchsorted(cum, e, side="right"), k - 1)
        i = e - (cum[p] - lengths[p])
        return body(acc, p, jnp.where(valid, i, 0), valid)

    return jax.lax.fori_loop(0, (total + group - 1) // group, chunk, init)


class SplitPA(eqx.Module):
    """Kernel PA-I by kernel splitting, or by kernel slicing (`slicing=True`, see `_slice`):
    the same updates as `KernelPA`.

    Binary features only, frequency-ordered (`SplitInstance`).

    Attributes:
        C: the aggressiveness bound (> 0), an array leaf.
        common: the explicit part (`CommonPart`).
        degree, textbook, exact: as `KernelPA` (static).
        n_features: feature ids are below this (static).
        slicing: kernel slicing instead of splitting (static).
    """

    C: Float[Array, ""]
    common: CommonPart
    degree: int = eqx.field(static=True, default=2)
    textbook: bool = eqx.field(static=True, default=False)
    exact: bool = eqx.field(static=True, default=False)
    n_features: int = eqx.field(static=True, default=0)
    slicing: bool = eqx.field(static=True, default=False)

    def init(self, *, capacity: int, width: int, n_vectors: int, post_start: np.ndarray,
             n_nodes: int = 0, n_events: int = 0, dtype: Any = None) -> SplitState:
        """An empty model; `post_start`: the index's segment starts and total
        (`posting_starts`, n_features + 1 entries; the index's size is rounded up to a power
        of two); slicing: `n_nodes` prefix-trie nodes and room for `n_events` updates."""
        dtype = jnp.result_type(self.C) if dtype is None else dtype
        adt = jnp.int64 if self.exact else dtype
        F = self.n_features
        return SplitState(
            sv_indices=jnp.full((max(capacity, 1), width), F, jnp.int32),
            alpha=jnp.zeros((max(capacity, 1),), adt),
            slot=jnp.full((n_vectors,), -1, jnp.int32),
            n_sv=jnp.zeros((), jnp.int32), n_updates=jnp.zeros((), jnp.int32),
            overflow=jnp.zeros((), bool),
            w=jnp.zeros((self.common.keys.shape[0] + 1,), adt),
            post=jnp.zeros((1 << max(int(post_start[-1]) - 1, 0).bit_length(),), jnp.int32),
            post_start=jnp.asarray(post_start, jnp.int32),
            post_count=jnp.zeros((F,), jnp.int32),
            pos_of=jnp.zeros((F + 1,), jnp.int32),
            node_margin=jnp.zeros((max(n_nodes, 1),), adt),
            node_seen=jnp.zeros((max(n_nodes, 1),), jnp.int32),
            events=jnp.zeros((max(n_events, 1),), jnp.int32),
            event_alpha=jnp.zeros((max(n_events, 1),), adt),
            n_events=jnp.zeros((), jnp.int32),
            walked=jnp.zeros((), jnp.int64 if jax.config.jax_enable_x64  # pyright: ignore
                             else jnp.int32),
        )

    def _mark(self, pos_of: Array, indices: Array, on: bool) -> Array:
        """Set (or clear) 1 + the position of each of x's features; padding untouched."""
        F = self.n_features
        at = jnp.where(indices < F, indices, F + 1)
        k = indices.shape[0]
        return pos_of.at[at].set(jnp.arange(1, k + 1, dtype=jnp.int32) if on else 0,
                                 mode="drop")

    def _rare(self, x: SplitInstance) -> tuple[Array, Array]:
        """(is each position a rare feature, its id or 0)."""
        rare = (x.indices >= self.common.n_common) & (x.indices < self.n_features)
        return rare, jnp.where(rare, x.indices, 0)

    def _splitting_part(self, state: SplitState, x: SplitInstance, pos_of: Array
                        ) -> tuple[SplitState, Array]:
        """Σ over support vectors sharing a rare feature with x of α_s [k(s, x) − k(s, x_C)],
        each counted at the first of x's rare features it holds."""
        N, d, dt = self.common.n_common, self.degree, state.alpha.dtype
        rare, f = self._rare(x)
        lengths = jnp.where(rare, state.post_count[f], 0)

        def body(acc, p, i, valid):
            s = state.post[state.post_start[f[p]] + i]
            rows = state.sv_indices[s]  # [G, k], padding F
            q = pos_of[rows]
            hit = q > 0
            dot = jnp.sum(hit, axis=1)
            dot_c = jnp.sum(hit & (rows < N), axis=1)
            first = jnp.min(jnp.where(hit & (rows >= N), q - 1, rows.shape[1]), axis=1)
            term = state.alpha[s] * (kernel_int(dot, d, dt) - kernel_int(dot_c, d, dt))
            return acc + jnp.sum(jnp.where(valid & (first == p), term, 0))

        state = state._replace(walked=state.walked + jnp.sum(lengths))
        return state, walk(lengths, body, jnp.zeros((), dt))

    def _slicing_part(self, state: SplitState, x: SplitInstance, pos_of: Array
                      ) -> tuple[SplitState, Array]:
        """Σ over x's rare positions j of the partial margin of the prefix x^j (its trie
        node's cached value plus the updates logged since the node's last visit)."""
        d, dt = self.degree, state.alpha.dtype
        rare, f = self._rare(x)
        n_nodes = state.node_margin.shape[0]
        node = jnp.where(rare, x.nodes, n_nodes)
        nodec = jnp.minimum(node, n_nodes - 1)
        seen = state.node_seen[nodec]
        count = state.post_count[f]
        lengths = jnp.where(rare, count - seen, 0)

        def body(acc, p, i, valid):
            ev = state.events[state.post[state.post_start[f[p]] + seen[p] + i]]
            q = pos_of[state.sv_indices[ev]]  # [G, k]
            # |s ∩ x^p|: s's features among x's first p + 1 (it holds feature p itself)
            a = jnp.sum((q > 0) & (q <= p[:, None] + 1), axis=1)
            da = state.event_alpha[state.post[state.post_start[f[p]] + seen[p] + i]]
            term = da * (kernel_int(a, d, dt) - kernel_int(a - 1, d, dt))
            return acc.at[p].add(jnp.where(valid, term, 0))

        partial = state.node_margin[nodec] + walk(lengths, body, jnp.zeros(rare.shape, dt))
        state = state._replace(
            walked=state.walked + jnp.sum(lengths),
            node_margin=state.node_margin.at[node].set(partial, mode="drop"),
            node_seen=state.node_seen.at[node].set(count, mode="drop"))
        return state, jnp.sum(jnp.where(rare, partial, 0))

    def _apply(self, state: SplitState, x: SplitInstance, upd, dalpha, ids, coef
               ) -> tuple[SplitState, Array, Array, Array]:
        """Write an update: α, the common-conjunction weights, a new slot and its row.
        Returns (state, the slot written or capacity, applied?, a new support vector?)."""
        cap = state.alpha.shape[0]
        s = state.slot[x.uid]
        new = upd & (s < 0)
        full = new & (state.n_sv >= cap)
        ok = upd & ~full
        target = jnp.where(ok, jnp.where(new, state.n_sv, s), cap)
        new &= ok
        w = state.w.at[ids].add(jnp.where(ok & (coef != 0), dalpha, 0).astype(state.w.dtype))
        state = state._replace(
            sv_indices=state.sv_indices.at[jnp.where(new, target, cap)].set(
                x.indices.astype(jnp.int32), mode="drop"),
            alpha=state.alpha.at[target].add(dalpha, mode="drop"),
            slot=state.slot.at[x.uid].set(jnp.where(ok, target, s)),
            n_sv=state.n_sv + new.astype(jnp.int32),
            n_updates=state.n_updates + ok.astype(jnp.int32),
            overflow=state.overflow | full, w=w)
        return state, target, ok, new

    def _append(self, state: SplitState, x: SplitInstance, entry: Array, add: Array
                ) -> SplitState:
        """Append `entry` to the index segments of x's rare features when `add`; a full
        segment sets `overflow` (the host sizes them so that this never happens)."""
        F = self.n_features
        rare, f = self._rare(x)
        at = state.post_start[f] + state.post_count[f]
        put = rare & add
        full = jnp.any(put & (at >= state.post_start[f + 1]))
        at = jnp.where(put, at, state.post.shape[0])
        return state._replace(post=state.post.at[at].set(entry, mode="drop"),
                              post_count=state.post_count.at[jnp.where(put, f, F)].add(
                                  1, mode="drop"),
                              overflow=state.overflow | full)

    def step(self, state: SplitState, x: SplitInstance, y: Any, ids: Any = None,
             valid: Any = True) -> tuple[SplitState, Float[Array, ""], Bool[Array, ""]]:
        """One example: (new state, the margin before the step, updated?). `ids`: the
        example's `CommonPart.ids` when computed ahead; `valid=False`: a padding visit
        (computes, never updates)."""
        F = self.n_features
        ids = self.common.ids(x.indices) if ids is None else ids
        coef = self.common.coefficients(ids, state.w.dtype)
        pos_of = self._mark(state.pos_of, x.indices, True)
        part = self._slicing_part if self.slicing else self._splitting_part
        state, rare_m = part(state, x, pos_of)
        m = jnp.sum(coef * state.w[ids]) + rare_m
        state = state._replace(pos_of=self._mark(pos_of, x.indices, False))
        n_x = jnp.sum(x.indices < F).astype(jnp.result_type(self.C))
        upd, dalpha, mf = decide(m, y, n_x, self.C, self.degree, self.textbook)
        upd = upd & valid
        state, target, ok, new = self._apply(state, x, upd, dalpha, ids, coef)
        if not self.slicing:  # a new support vector joins its rare features' segments
            return self._append(state, x, target, new), mf, upd
        # slicing: log the update (an event) in its rare features' segments
        E = state.events.shape[0]
        e = jnp.where(ok, state.n_events, E)
        state = state._replace(
            events=state.events.at[e].set(target, mode="drop"),
            event_alpha=state.event_alpha.at[e].set(dalpha, mode="drop"),
            n_events=state.n_events + ok.astype(jnp.int32),
            overflow=state.overflow | (ok & (state.n_events >= E)))
        return self._append(state, x, e, ok), mf, upd

    def update(self, state: SplitState, x: SplitInstance, y: Any) -> SplitState:
        return self.step(state, x, y)[0]


def first_rows(uids: np.ndarray, n_vectors: int) -> np.ndarray:
    """The row of each vector id's first occurrence."""
    _, first = np.unique(uids, return_index=True)
    assert len(first) == n_vectors
    return first


def n_conjunctions(width: int, degree: int) -> int:
    return sum(math.comb(width, j) for j in range(degree + 1))
