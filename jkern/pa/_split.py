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

How it is laid out for JAX (fixed shapes; `step_block` handles B examples, `step` is a block
of one; `fit` scans blocks):

- the explicit part: the table of common conjunctions (`conjunction_table(..., n_common=N)`,
  sorted int64 keys) is built on the host; an example's conjunctions over its first `width`
  positions (static combinations) find their weights by `searchsorted` — for 4,096 visits
  at a time in one batch, ahead of the sequential part (`CommonPart.ids`); an update
  scatter-adds Δα to them;
- the index from rare feature to support vectors: one CSR array whose segment for feature f
  has room for every distinct training vector holding f (support vectors are training
  vectors, so it never overflows); a new support vector appends its slot to its rare
  features' segments. A block walks the segments of all its examples' rare features in
  fixed chunks of `GROUP` entries (a `fori_loop` over ceil(entries / GROUP) chunks; an
  entry's overlap with its example by comparing their k feature ids pairwise) and
  counts a support vector once, at the first of x's rare features it holds;
- a block's margins are computed against the model at the block start; a loop then jumps
  from each example that updates to the next (the examples between do not), adding
  Δα_t (1 + |x_t ∩ x_s|)^d to the margins of the examples after it, so the in-block work
  follows the updates, not the B² pairs; the updates are written at the block's end.

N: given (`n_common`), or the largest 2^i − 1 whose conjunction table fits a memory budget
(`choose_n_common`, opal's halving rule: 16 bytes a conjunction, key and weight).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._sparse import SparseRows
from ..errors import InputError
from ._explicit import (
    BITMAP_KEYS,
    _base,
    distinct_keys,
    largest_feature,
    rebase,
)
from ._kernel import claim_slot, decide, kernel_int
from ._table import CommonPart, dense_features, dense_runs

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
    return choose_table(X, degree, budget)[0]


def choose_table(X: SparseRows, degree: int, budget: int) -> tuple[int, np.ndarray]:
    """`choose_n_common`'s N and its table. As opal: every feature first, then halving N
    to 2^i − 1 while the table is too big.

    Every enumeration (of a sample of the rows first, a cheap test, then of all; a too-big
    table stops being enumerated as soon as it passes the budget) keys the conjunctions in
    the base of all features, so the keys it found bound the table of every smaller N from
    below (the keys whose largest feature is below N): a candidate already known to be too
    big is skipped without enumerating anything."""
    limit = budget // TABLE_BYTES
    F = X.n_features
    full_base = _base(F, degree)
    candidates = [F] + [(1 << i) - 1 for i in range(F.bit_length(), 0, -1) if (1 << i) - 1 < F]
    sizes = np.asarray(candidates, np.int64)
    known = np.zeros(len(candidates), np.int64)  # lower bounds of the table sizes

    def learn(keys: np.ndarray, base: int) -> None:
        # ∅ (largest feature −1) is in every table
        below = np.searchsorted(np.sort(largest_feature(keys, base)), sizes, side="left")
        np.maximum(known, below, out=known)

    def enumerate_(rows: SparseRows, n: int) -> tuple[np.ndarray, int, bool]:
        # in N's own base when its keys fit a byte map, else in the base of all features
        b = _base(n, degree) if _base(n, degree) ** degree <= BITMAP_KEYS else full_base
        keys, fits = distinct_keys(rows, degree, b, n, limit=limit)
        learn(keys, b)
        return keys, b, fits

    sample = X.rows(np.arange(0, len(X), 8))
    for i, n in enumerate(candidates):
        if known[i] > limit:
            continue
        if len(X) >= 64 and not enumerate_(sample, n)[2]:
            continue
        keys, b, fits = enumerate_(X, n)
        if fits:
            return n, rebase(keys, b, _base(n, degree))
    return 0, np.zeros(1, np.int64)


def posting_starts(X: SparseRows, first_rows: np.ndarray, n_common: int, *,
                   per_row: int = 1) -> np.ndarray:
    """`[n_features]` segment starts (the total as a last entry) of a CSR index of the rare
    features: room for `per_row` entries for each row of `first_rows` holding a feature."""
    idx = np.asarray(X.indices)[first_rows]
    val = np.asarray(X.values)[first_rows]
    rare = (val != 0) & (idx >= n_common)
    counts = np.bincount(idx[rare], minlength=X.n_features) * per_row
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def common_part(Xf: SparseRows, degree: int, n_common: int,
                keys: np.ndarray | None = None, n_dense: int | None = None,
                below: int | None = None, shared: bool = False) -> CommonPart:
    """The `CommonPart` of frequency-ordered rows `Xf` for N = `n_common` (`keys`: its
    whole table when already built, sorted): the conjunctions of the `n_dense` most frequent
    features (default `dense_features`) by arithmetic ids, the others in a table (a fit
    finds every example's ids once, `_slice.kept_ids`: only those are searched). `below`:
    only the conjunctions of features below it (explicit mode's rare split, `_rare`); the
    keys stay in base `n_common + 1`. `shared`: only the conjunctions of two rows or more
    (explicit mode's private split, `_rare.private_counts`)."""
    n_dense = dense_features(n_common, degree) if n_dense is None else min(n_dense, n_common)
    limit = n_common if below is None else min(below, n_common)
    n_dense = min(n_dense, limit)
    if keys is None and 0 < n_dense >= limit:  # every conjunction (∅ too) is dense: no table
        keys = np.zeros(0, np.int64)
    elif keys is None:
        keys, _ = distinct_keys(Xf, degree, _base(n_common, degree), limit, n_dense=n_dense,
                                shared=shared)
    else:  # the table leaves out the dense conjunctions (∅ among them, where any)
        keep = np.ones(len(keys), bool)
        for _, run in dense_runs(keys, n_dense, n_common + 1, degree):
            keep[run] = False
        keys = keys[keep]
    assert keys is not None
    idx, val = np.asarray(Xf.indices), np.asarray(Xf.values)
    width = int(np.sum((val != 0) & (idx < limit), axis=1).max(initial=0))
    big = (n_common + 1) ** degree >= 2 ** 31
    if big and not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        raise InputError(f"n_common={n_common} at degree {degree} needs 64-bit keys: enable "
                         "x64 (jax.config.update('jax_enable_x64', True)) or pass a smaller "
                         "n_common")
    return CommonPart.of(keys, n_common, width, degree, n_dense,
                         0 if limit == n_common else limit)


def positions_in(rows: Int[Array, "G k"], xs: Int[Array, "G k"], n_features: int
                 ) -> Int[Array, "G k"]:
    """1 + the position in `xs[g]` of each feature of `rows[g]` (0: absent or padding),
    by comparing the k × k pairs: no per-feature scratch, whatever the number of
    features."""
    k = xs.shape[1]
    eq = (rows[:, :, None] == xs[:, None, :]) & (rows < n_features)[:, :, None]
    at = jnp.arange(1, k + 1, dtype=jnp.int32)
    return jnp.max(jnp.where(eq, at, 0), axis=2)


def walk(lengths: Int[Array, " k"], body, init, group: int = GROUP):
    """Visit the entries of consecutive segments (segment p has `lengths[p]` entries) in
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
            w=jnp.zeros((self.common.size + 1,), adt),
            post=jnp.zeros((1 << max(int(post_start[-1]) - 1, 0).bit_length(),), jnp.int32),
            post_start=jnp.asarray(post_start, jnp.int32),
            post_count=jnp.zeros((F,), jnp.int32),
            node_margin=jnp.zeros((max(n_nodes, 1),), adt),
            node_seen=jnp.zeros((max(n_nodes, 1),), jnp.int32),
            events=jnp.zeros((max(n_events, 1),), jnp.int32),
            event_alpha=jnp.zeros((max(n_events, 1),), adt),
            n_events=jnp.zeros((), jnp.int32),
            walked=jnp.zeros((), jnp.int64 if jax.config.jax_enable_x64  # pyright: ignore
                             else jnp.int32),
        )

    def _rare(self, x: SplitInstance) -> tuple[Array, Array]:
        """(is each position a rare feature, its id or 0)."""
        rare = (x.indices >= self.common.n_common) & (x.indices < self.n_features)
        return rare, jnp.where(rare, x.indices, 0)

    def _splitting_part(self, state: SplitState, xs: SplitInstance
                        ) -> tuple[Array, Array]:
        """For each example of the block: Σ over support vectors sharing a rare feature
        with x of α_s [k(s, x) − k(s, x_C)], each counted at the first of x's rare features
        it holds. One walk over the block's segments. Returns (`[B]` sums, entries)."""
        N, d, dt = self.common.n_common, self.degree, state.alpha.dtype
        B, k = xs.indices.shape
        rare, f = self._rare(xs)
        lengths = jnp.where(rare, state.post_count[f], 0).reshape(-1)
        f = f.reshape(-1)

        def body(acc, bp, i, valid):
            b, p = bp // k, bp % k
            s = state.post[state.post_start[f[bp]] + i]
            rows = state.sv_indices[s]  # [G, k], padding F
            q = positions_in(rows, xs.indices[b], self.n_features)
            hit = q > 0
            dot = jnp.sum(hit, axis=1)
            dot_c = jnp.sum(hit & (rows < N), axis=1)
            first = jnp.min(jnp.where(hit & (rows >= N), q - 1, k), axis=1)
            term = state.alpha[s] * (kernel_int(dot, d, dt) - kernel_int(dot_c, d, dt))
            return acc.at[b].add(jnp.where(valid & (first == p), term, 0))

        return walk(lengths, body, jnp.zeros((B,), dt)), jnp.sum(lengths)

    def _slicing_part(self, state: SplitState, xs: SplitInstance
                      ) -> tuple[Array, Array, Array, Array, Array]:
        """For each example of the block: Σ over x's rare positions j of the partial margin
        of the prefix x^j, its trie node's cached value plus the updates logged since its
        last visit. Returns (`[B]` sums, entries walked, and the node writes: `[B, k]`
        nodes, their new margins, their new stamps)."""
        d, dt = self.degree, state.alpha.dtype
        B, k = xs.indices.shape
        rare, f = self._rare(xs)
        n_nodes = state.node_margin.shape[0]
        node = jnp.where(rare, xs.nodes, n_nodes)
        nodec = jnp.minimum(node, n_nodes - 1)
        seen = state.node_seen[nodec].reshape(-1)
        count = state.post_count[f]
        lengths = jnp.where(rare, count, 0).reshape(-1) - jnp.where(rare.reshape(-1), seen, 0)
        f = f.reshape(-1)

        def body(acc, bp, i, valid):
            b, p = bp // k, bp % k
            entry = state.post[state.post_start[f[bp]] + seen[bp] + i]
            q = positions_in(state.sv_indices[state.events[entry]], xs.indices[b],
                             self.n_features)  # [G, k]
            # |s ∩ x^p|: s's features among x's first p + 1 (it holds feature p itself)
            a = jnp.sum((q > 0) & (q <= p[:, None] + 1), axis=1)
            term = state.event_alpha[entry] * (kernel_int(a, d, dt) - kernel_int(a - 1, d, dt))
            return acc.at[bp].add(jnp.where(valid, term, 0))

        fresh = walk(lengths, body, jnp.zeros((B * k,), dt)).reshape(B, k)
        partial = state.node_margin[nodec] + fresh
        return (jnp.sum(jnp.where(rare, partial, 0), axis=1), jnp.sum(lengths), node, partial,
                count)

    def _append(self, state: SplitState, xs: SplitInstance, entries: Array, add: Array
                ) -> SplitState:
        """Append `entries[b]` to the index segments of example b's rare features where
        `add[b]`, in block order (one scatter: a feature's earlier entries in the block
        push later ones down its segment); a full segment sets `overflow` (the host sizes
        them so that this never happens)."""
        F = self.n_features
        rare, f = self._rare(xs)
        put = (rare & add[:, None]).reshape(-1)
        f = f.reshape(-1)
        same = (f[:, None] == f[None, :]) & put[None, :]
        before = jnp.sum(jnp.tril(same, -1), axis=1)  # earlier entries of the same feature
        at = state.post_start[f] + state.post_count[f] + before
        full = jnp.any(put & (at >= state.post_start[f + 1]))
        at = jnp.where(put, at, state.post.shape[0])
        value = jnp.broadcast_to(entries[:, None], rare.shape).reshape(-1)
        return state._replace(post=state.post.at[at].set(value, mode="drop"),
                              post_count=state.post_count.at[jnp.where(put, f, F)].add(
                                  1, mode="drop"),
                              overflow=state.overflow | full)

    def step_block(self, state: SplitState, xs: SplitInstance, ys: Any, ids: Any = None,
                   mask: Any = None
                   ) -> tuple[SplitState, Float[Array, " b"], Bool[Array, " b"]]:
        """B examples in order: (new state, margins, updated flags).

        Their margins against the model at the block start in one batched computation
        (explicit part and split or sliced kernel part), then, while some example not yet
        visited would update, a jump to the first one, whose update adds Δα k(x_t, x_s) to
        the margins of the examples after it (work per update, not per pair); the updates
        are written at the end. `ids`: the examples' `CommonPart.ids`
        when computed ahead; `mask[t] = False` skips position t (padding)."""
        B = xs.indices.shape[0]
        F, d, dt = self.n_features, self.degree, state.alpha.dtype
        mask = jnp.ones((B,), bool) if mask is None else jnp.asarray(mask, bool)
        ids = self.common.ids(xs.indices) if ids is None else ids
        coef = self.common.coefficients(ids, dt)
        m0 = jnp.sum(coef * state.w[ids], axis=1)
        if self.slicing:
            rare_m, walked, node, partial, count = self._slicing_part(state, xs)
            # examples sharing a node computed the same value from the same state
            state = state._replace(
                node_margin=state.node_margin.at[node].set(partial, mode="drop"),
                node_seen=state.node_seen.at[node].set(count, mode="drop"))
        else:
            rare_m, walked = self._splitting_part(state, xs)
        m0 = m0 + rare_m
        n_x = jnp.sum(xs.indices < F, axis=1).astype(jnp.result_type(self.C))
        cap = state.alpha.shape[0]
        same_uid = xs.uid[:, None] == xs.uid[None, :]
        at = jnp.arange(B)
        present = xs.indices < F
        ys = jnp.asarray(ys, jnp.result_type(self.C))

        def would_update(m, start):
            upd, _, _ = decide(m, ys, n_x, self.C, d, self.textbook)
            return upd & mask & (at >= start)

        def pending(carry):
            return jnp.any(would_update(carry[0], carry[-1]))

        def update(carry):
            # jump to the next example that updates: those before it do not (work per
            # update, not per pair); `slot`: the current slot of each position's vector
            m, dalpha, slot, n_sv, n_upd, overflow, upds, oks, targets, news, start = carry
            t = jnp.argmax(would_update(m, start))
            _, da, _ = decide(m[t], ys[t], n_x[t], self.C, d, self.textbook)
            ok, new, target, full = claim_slot(jnp.asarray(True), slot[t], n_sv, cap)
            da = jnp.where(ok, da, 0)
            shared = jnp.sum((xs.indices[t][None, :, None] == xs.indices[:, None, :])
                             & present[t][None, :, None], axis=(1, 2))
            m = m + jnp.where(at > t, da * kernel_int(shared, d, dt), 0)
            return (m, dalpha.at[t].set(da), jnp.where(same_uid[t] & ok, target, slot),
                    n_sv + new.astype(jnp.int32), n_upd + ok.astype(jnp.int32),
                    overflow | full, upds.at[t].set(True), oks.at[t].set(ok),
                    targets.at[t].set(target), news.at[t].set(new), t + 1)

        carry0 = (m0, jnp.zeros((B,), dt), state.slot[xs.uid], state.n_sv, state.n_updates,
                  state.overflow, jnp.zeros((B,), bool), jnp.zeros((B,), bool),
                  jnp.full((B,), cap, jnp.int32), jnp.zeros((B,), bool),
                  jnp.zeros((), at.dtype))
        (m, dalpha, slot_b, n_sv, n_upd, overflow, upds, oks, targets, news, _) = \
            jax.lax.while_loop(pending, update, carry0)
        _, _, ms = decide(m, ys, n_x, self.C, d, self.textbook)
        slot = state.slot.at[xs.uid].set(slot_b)  # equal vectors, equal final slots
        found = coef != 0
        state = state._replace(
            sv_indices=state.sv_indices.at[jnp.where(news, targets, cap)].set(
                xs.indices.astype(jnp.int32), mode="drop"),
            alpha=state.alpha.at[targets].add(dalpha, mode="drop"),
            w=state.w.at[ids].add(jnp.where(found, dalpha[:, None], 0)),
            slot=slot, n_sv=n_sv, n_updates=n_upd, overflow=overflow,
            walked=state.walked + jnp.sum(walked).astype(state.walked.dtype))
        if self.slicing:  # log the updates (events) in their rare features' segments
            E = state.events.shape[0]
            ev = jnp.where(oks, state.n_events + jnp.cumsum(oks) - 1, E)
            state = state._replace(
                events=state.events.at[ev].set(targets, mode="drop"),
                event_alpha=state.event_alpha.at[ev].set(dalpha, mode="drop"),
                n_events=state.n_events + jnp.sum(oks, dtype=jnp.int32),
                overflow=state.overflow | jnp.any(oks & (ev >= E)))
            entries, add = ev.astype(jnp.int32), oks
        else:  # a new support vector joins its rare features' segments
            entries, add = targets.astype(jnp.int32), news

        return self._append(state, xs, entries, add), ms, upds

    def step(self, state: SplitState, x: SplitInstance, y: Any
             ) -> tuple[SplitState, Float[Array, ""], Bool[Array, ""]]:
        """One example: (new state, the margin before the step, updated?)."""
        xs = jax.tree.map(lambda a: a[None], x)
        state, m, upd = self.step_block(state, xs, jnp.asarray(y)[None])
        return state, m[0], upd[0]

    def update(self, state: SplitState, x: SplitInstance, y: Any) -> SplitState:
        """One example: the state after PA-I's step on (x, y)."""
        return self.step(state, x, y)[0]


def first_rows(uids: np.ndarray, n_vectors: int) -> np.ndarray:
    """The row of each vector id's first occurrence."""
    _, first = np.unique(uids, return_index=True)
    assert len(first) == n_vectors
    return first
