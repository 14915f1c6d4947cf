"""The rare part of explicit mode: the conjunctions that hold a rare feature, through the
training examples that share one (opal's split, with the support vectors' index made static).

With features in frequency order and R = {f >= N} the rare ones, the margin of an example x
splits into the conjunctions of its common features (weights, `_table.CommonPart` with
`below = N`) and the rest:

    m(x) = Σ_{U ⊆ x_C} c_|U| w_U  +  Σ_s α_s [(1 + |s∩x|)^d − (1 + |s∩x_C|)^d],

and a term of the second sum is 0 unless s shares a rare feature with x. Support vectors are
training examples, and the training rows are known before the first epoch, so the pairs of
training examples that share a rare feature, with their integer coefficients
(1 + a + b)^d − (1 + a)^d (a common and b rare features shared), are found once on the host:
a static sparse matrix P. A fit keeps every example's rare margin r = P α and adds Δα P[:, t]
to it when x_t updates (a walk over x_t's partners), so the epochs never enumerate a
conjunction that holds a rare feature, and the table, its search and the stored ids hold the
common features' conjunctions only. In exact mode every term is an integer, so the margins
are the whole expansion's, bit for bit.

N is the smallest id (at least the dense features') whose rare features' occurrence counts c_f
give Σ c_f² <= RARE_PAIRS: the pairs stay a few million whatever the data.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Int

from .._executables import stored_filter_jit
from .._validate import to_device
from ._table import CommonPart, KeptIds, binomials, colex_combinations, conjunction_coefficients

RARE_PAIRS = 1 << 22  # at most this many (example, example, rare feature) triples


class RarePart(NamedTuple):
    """The pairs of training examples that share a rare feature, by example (CSR).

    Attributes:
        start: `[n + 1]` where each example's partners start in `partner`.
        partner: `[E + width]` partner ids (padding: n, the sink), self included.
        coef: `[E + width]` (1 + a + b)^d − (1 + a)^d, int64.
        width: the most partners an example has (static: a walk reads this many).
    """

    start: Int[Array, " n1"]
    partner: Int[Array, " E"]
    coef: Int[Array, " E"]
    width: int


def rare_features(indices: np.ndarray, present: np.ndarray, n_features: int, n_dense: int,
                  budget: int = RARE_PAIRS) -> int:
    """N: the smallest feature id >= `n_dense` whose features at or above it (occurring
    c_f times) have Σ c_f² <= `budget`; `n_features` when none qualifies but the last."""
    counts = np.bincount(indices[present], minlength=n_features).astype(np.int64)
    tail = np.cumsum((counts ** 2)[::-1])[::-1]  # tail[f] = Σ_{g >= f} c_g²
    ok = np.flatnonzero(tail <= budget)
    first = int(ok[0]) if len(ok) else n_features
    return min(n_features, max(first, n_dense))


def rare_part(rows: np.ndarray, n_features: int, n_rare_from: int, degree: int,
              own: np.ndarray | None = None) -> RarePart | None:
    """The `RarePart` of sorted feature rows (`rows` `[n, k]`, ascending, padding =
    `n_features`) for the rare features `n_rare_from` <= f < `n_features`, with `own`
    (`[n]`, int64, `private_counts`) added to each example's pair with itself; None
    when there is no pair."""
    n = rows.shape[0]
    a, b, coef = _rare_pairs(rows, n_features, n_rare_from, degree)
    if own is not None and np.any(own):
        # an example's own conjunctions pair it with itself: on its self pair (there where
        # it shares a rare feature with itself, else a new one, in the pairs' order)
        who = np.flatnonzero(own).astype(np.int64)
        key = a * n + b
        at = np.searchsorted(key, who * n + who)
        there = at < len(key)
        there[there] = key[at[there]] == who[there] * n + who[there]
        coef = coef.copy()
        coef[at[there]] += own[who[there]]
        new, at = who[~there], at[~there]
        a, b = np.insert(a, at, new), np.insert(b, at, new)
        coef = np.insert(coef, at, own[new])
    if not len(a):
        return None
    start = np.searchsorted(a, np.arange(n + 1)).astype(np.int32)
    width = int(np.diff(start).max(initial=0))
    pad = max(width, 1)
    partner = np.concatenate([b, np.full(pad, n)]).astype(np.int32)
    coef = np.concatenate([coef, np.zeros(pad, np.int64)])
    return RarePart(to_device(start), to_device(partner), to_device(coef), max(width, 1))


def _rare_pairs(rows: np.ndarray, n_features: int, n_rare_from: int, degree: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, coef): the pairs (a, b) of examples that share a rare feature, sorted by
    (a, b), self included, and their (1 + a + b)^d − (1 + a)^d (int64)."""
    n, k = rows.shape
    if n_rare_from >= n_features:
        none = np.zeros(0, np.int64)
        return none, none, none
    rare = (rows >= n_rare_from) & (rows < n_features)
    ex = np.repeat(np.arange(n, dtype=np.int64), k)[rare.reshape(-1)]
    feat = rows.reshape(-1)[rare.reshape(-1)]
    order = np.argsort(feat, kind="stable")
    ex, feat = ex[order], feat[order]
    # every ordered pair of examples in each feature's group (self included), as one key
    # left * n + right; its temporaries are int32 indices, and the keys are sorted in place
    # (a fit's largest temporaries at d = 2 were these)
    first = np.flatnonzero(np.r_[True, feat[1:] != feat[:-1]])
    size = np.diff(np.r_[first, len(feat)])
    group_of = np.repeat(np.arange(len(first)), size)
    size_of = size[group_of]  # each member's group size: it pairs with that many
    # (32-bit keys where n² fits: sorted about 40% faster than int64 ones)
    kdt = np.dtype(np.uint32) if n * n <= 2**32 else np.dtype(np.int64)
    ex = ex.astype(kdt)
    at = np.repeat(np.arange(len(ex), dtype=np.int32), size_of)  # the left member
    key = ex[at] * kdt.type(n)
    # the right member: its group's start plus its place in the group
    at = np.arange(len(at), dtype=np.int32)
    at -= np.repeat((np.cumsum(size_of) - size_of).astype(np.int32), size_of)
    at += np.repeat(first[group_of].astype(np.int32), size_of)
    key += ex[at]
    del at
    key.sort()
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    shared_rare = np.diff(np.r_[starts, len(key)])
    pair = key[starts].astype(np.int64)
    del key
    a, b = pair // n, pair % n
    shared_common = _shared_common(rows, a, b, n_rare_from)
    coef = (1 + shared_common + shared_rare) ** degree - (1 + shared_common) ** degree
    return a, b, coef.astype(np.int64)


PAIRS_AT_ONCE = 1 << 16  # pairs compared in one call (one program whatever the data)


BITSET_BYTES = 32 << 20  # rows as bitsets of their common features when these fit


def _shared_common(rows: np.ndarray, a: np.ndarray, b: np.ndarray, below: int) -> np.ndarray:
    """`[len(a)]` how many features below `below` rows a[i] and b[i] share, in one compiled
    program a batch of pairs at a time: the popcount of the AND of the two rows' bitsets
    (`below` / 64 words a row) where those are fewer words than the k × k comparisons of
    their feature ids and fit BITSET_BYTES, else those comparisons."""
    n, k = rows.shape
    words = -(-below // 64)
    if 4 * words < k * k and n * words * 8 <= BITSET_BYTES:
        table = to_device(_bitsets(rows, below, words))
        count = _count_shared_bits
    else:
        table = to_device(rows, jnp.int32)
        count = _count_shared
    out = np.zeros(len(a), np.int64)
    for s in range(0, len(a), PAIRS_AT_ONCE):
        part = slice(s, s + PAIRS_AT_ONCE)
        m = len(a[part])
        ia = np.zeros(PAIRS_AT_ONCE, np.int32)
        ib = np.zeros(PAIRS_AT_ONCE, np.int32)
        ia[:m], ib[:m] = a[part], b[part]
        out[part] = np.asarray(count(table, to_device(ia), to_device(ib),
                                     to_device(np.int32(below))))[:m]
    return out


def _bitsets(rows: np.ndarray, below: int, words: int) -> np.ndarray:
    """`[n, words]` uint64: bit f of row r set where r holds feature f < `below`."""
    n = rows.shape[0]
    r, c = np.nonzero(rows < below)
    f = rows[r, c].astype(np.int64)
    bits = np.zeros(n * words, np.uint64)
    # a row holds each feature once: the bits of one word add without carries
    np.add.at(bits, r * words + f // 64, np.left_shift(np.uint64(1), (f % 64).astype(np.uint64)))
    return bits.reshape(n, words)


@stored_filter_jit
def _count_shared(rows, ia, ib, below):
    ra, rb = rows[ia], rows[ib]
    eq = (ra[:, :, None] == rb[:, None, :]) & (ra < below)[:, :, None]
    return jnp.sum(eq, axis=(1, 2), dtype=jnp.int32)


@stored_filter_jit
def _count_shared_bits(bits, ia, ib, below):
    del below  # (the bitsets hold the features below it only)
    both = jax.lax.population_count(bits[ia] & bits[ib])
    return jnp.sum(both, axis=1, dtype=jnp.int32)


def add_partners(r: Array, rare: RarePart, pos: Array, dalpha: Array, updated: Array) -> Array:
    """r + Σ_t Δα_t P[:, pos_t] over the updated examples of a block (`r` `[n + 1]`, the
    last slot a sink): one walk of `rare.width` entries per update."""
    at = jnp.arange(rare.width)
    todo = jnp.nonzero(updated, size=updated.shape[0], fill_value=0)[0]

    def one(i, r):
        t = todo[i]
        s, e = rare.start[pos[t]], rare.start[pos[t] + 1]
        j = jax.lax.dynamic_slice(rare.partner, (s,), (rare.width,))
        c = jax.lax.dynamic_slice(rare.coef, (s,), (rare.width,))
        live = at < e - s
        return r.at[jnp.where(live, j, r.shape[0] - 1)].add(
            jnp.where(live, dalpha[t] * c.astype(r.dtype), 0))

    return jax.lax.fori_loop(0, jnp.sum(updated, dtype=jnp.int32), one, r)


def rare_conjunctions(rows: np.ndarray, alpha: np.ndarray, n_features: int, n_rare_from: int,
                      degree: int, skip: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(sorted keys, weights): w_U = Σ_s α_s [U ⊆ s] of every conjunction U that holds a rare
    feature, over the examples with α_s != 0 (`alpha` `[n]`, int64 counts or floats), keyed
    as `_explicit._conjunction_keys` in base `n_features + 1`. `rows`: `[n, k]` feature ids
    ascending, `n_features` or more where absent. `skip`: sorted keys left out (with
    `n_rare_from` the dense features' count and `skip` a table of shared conjunctions,
    the rare and the private ones, `private_counts`).

    Only those conjunctions are enumerated: over a row of a common and t features (rows
    ascending: the common first), the ones of size j whose largest position is rare are
    the colex ranks [C(a, j), C(t, j)) (`_table.combinations`), a chunk of rows at a time."""
    sv = np.flatnonzero(alpha != 0)
    base = n_features + 1
    keys_out, w_out = [np.zeros(0, np.int64)], [np.zeros(0, alpha.dtype)]
    sv_rows = np.asarray(rows)[sv]
    t_all = np.sum(sv_rows < n_features, axis=1)
    width = int(t_all.max(initial=0))
    a_all = np.minimum(np.sum(sv_rows < n_rare_from, axis=1), t_all)
    binom = binomials(width, degree).astype(np.int64)
    per_row = np.sum(binom[t_all, 1:] - binom[a_all, 1:], axis=1)
    # chunks of about RARE_KEYS_AT_ONCE keys (a row's own count at least)
    ends = np.cumsum(per_row)
    cuts = np.searchsorted(ends, np.arange(RARE_KEYS_AT_ONCE, int(ends[-1]) if len(ends) else 0,
                                           RARE_KEYS_AT_ONCE), side="right")
    colex = colex_combinations(width, degree) if width else None
    for part in np.split(np.arange(len(sv)), np.unique(cuts)):
        if not len(part) or colex is None:
            continue
        r = sv_rows[part, :width].astype(np.int64)
        a, t = a_all[part], t_all[part]
        for j in range(1, degree + 1):
            lo = binom[a, j]
            count = binom[t, j] - lo
            total = int(count.sum())
            if not total:
                continue
            owner = np.repeat(np.arange(len(part)), count)
            rank = lo[owner] + np.arange(total) - np.repeat(np.cumsum(count) - count, count)
            pos = colex[j - 1, rank, :j]  # [total, j] positions, ascending
            f = r[owner[:, None], pos]
            key = np.zeros(total, np.int64)
            for i in range(j):
                key += (f[:, i] + 1) * base ** i
            w = alpha[sv[part]][owner]
            if skip is not None and len(skip):
                at = np.minimum(np.searchsorted(skip, key), len(skip) - 1)
                out = skip[at] != key
                key, w = key[out], w[out]
            keys_out.append(key)
            w_out.append(w)
    keys, w = np.concatenate(keys_out), np.concatenate(w_out)
    order = np.argsort(keys, kind="stable")
    keys, w = keys[order], w[order]
    first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.zeros(
        0, np.int64)
    return keys[first], np.add.reduceat(w, first) if len(keys) else w


RARE_KEYS_AT_ONCE = 1 << 20  # rare conjunctions enumerated at a time (memory)


def private_counts(common: CommonPart, kept: KeptIds, rows: np.ndarray) -> np.ndarray:
    """`[n]` own_t = Σ c_|U| over example t's private conjunctions U: those of one training
    example only, which a table of the shared ones (`common_part(shared=True)`) lacks, so
    that t's kept ids name the sink there.

    A private conjunction U of t has the weight w_U = α_t (t's updates, no other's) and
    moves t's margin only, by c_|U| α_t: t's pair with itself in the rare part carries
    own_t (`rare_part(own=...)`), and U needs no weight, no table key and no lookup in the
    epochs (the sink's weight stays 0); `rare_conjunctions(skip=...)` gives the model its
    w_U back. In exact mode the margins are the same integers. `rows`: the fit's sorted
    feature rows (`[n, k]`, the kept ids' rows)."""
    start = np.asarray(kept.start).astype(np.int64)
    E = int(start[-1])
    sinks = np.flatnonzero(np.asarray(kept.flat)[:E] == common.size)
    # an example's kept ids hold C(a, j) − C(b, j) of size j in turn (a common, b dense
    # features: `KeptIds`): each sink's run (the last that starts at or before it: an
    # empty run shares its start with the next), counted
    per_size = common.searched_per_size(rows)  # [n, d]
    seg = (start[:-1, None] + np.cumsum(per_size, axis=1) - per_size).reshape(-1)
    got = np.bincount(np.searchsorted(seg, sinks, side="right") - 1, minlength=seg.size)
    return got.reshape(per_size.shape) @ np.asarray(
        conjunction_coefficients(common.degree)[1:], np.int64)
