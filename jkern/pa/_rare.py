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
from .._memory import release_freed_memory
from .._unique import value_bounds
from .._validate import aligned_empty, shared_on_cpu, to_device
from ._table import CommonPart, KeptIds, binomials, colex_combinations, conjunction_coefficients

RARE_PAIRS = 1 << 22  # at most this many (example, example, rare feature) triples


class RarePart(NamedTuple):
    """The pairs of training examples that share a rare feature, by example (CSR).

    Attributes:
        start: `[n + 1]` where each example's partners start in `partner`.
        partner: `[E + width]` partner ids (padding: n, the sink), self included.
        coef: `[E + width]` (1 + a + b)^d − (1 + a)^d (int16, else int32, else int64:
            the narrowest that holds every one).
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


PAIR_KEYS_AT_ONCE = 1 << 18  # (example, example) sharings sorted at a time (memory)


def rare_part(rows: np.ndarray, n_features: int, n_rare_from: int, degree: int,
              own: np.ndarray | None = None) -> RarePart | None:
    """The `RarePart` of sorted feature rows (`rows` `[n, k]`, ascending, padding =
    `n_features`) for the rare features `n_rare_from` <= f < `n_features`, with `own`
    (`[n]`, int64, `private_counts`) added to each example's pair with itself; None
    when there is no pair. Coefficients are the narrowest of int16, int32 and int64 that
    holds every one (the whole kernel value of the widest row bounds them)."""
    n, k = rows.shape
    bound = (1 + k) ** degree + (0 if own is None else int(np.max(own, initial=0)))
    cdt = np.dtype(next(t for t in (np.int16, np.int32, np.int64) if bound < np.iinfo(t).max))
    bs, coefs, per_row = _rare_pairs(rows, n_features, n_rare_from, degree, own, cdt)
    E = sum(len(b) for b in bs)
    if not E:
        return None
    start = np.zeros(n + 1, np.int32)
    np.cumsum(per_row, out=start[1:])
    width = max(int(per_row.max(initial=0)), 1)
    # the ranges' pairs copied once into buffers that JAX shares (each range's freed as it
    # is copied), then the padding: a walk of `width` from the last example reads the sink
    partner = aligned_empty((E + width,), np.int32)
    coef = aligned_empty((E + width,), cdt)
    at = 0
    while bs:
        b, c = bs.pop(0), coefs.pop(0)
        partner[at:at + len(b)] = b
        coef[at:at + len(b)] = c
        at += len(b)
        del b, c
    partner[E:] = n
    coef[E:] = 0
    return RarePart(to_device(start), shared_on_cpu(partner), shared_on_cpu(coef), width)


def _rare_pairs(rows: np.ndarray, n_features: int, n_rare_from: int, degree: int,
                own: np.ndarray | None, cdt: np.dtype
                ) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """(b, coef, per_row): the partners b (int32) of every example a that shares a rare
    feature with it, by (a, b), self included, their (1 + c + r)^d − (1 + c)^d (c common and
    r rare features shared; `own[a]` added to a's pair with itself, a new one where a shares
    no rare feature), each a list of the ranges' parts in order, and `[n]` the partners of
    each example.

    Built for a range of examples at a time (about PAIR_KEYS_AT_ONCE sharings, as many as
    the range's rare occurrences' groups hold): each occurrence of a rare feature pairs its
    example with every member of the feature's group, as one key (a − first) · n + b, and
    the range's keys are sorted and counted. The temporaries follow the range, not the
    Σ c_f² sharings of the whole data."""
    n, k = rows.shape
    per_row = np.zeros(n, np.int64)
    none: tuple[list[np.ndarray], list[np.ndarray], np.ndarray] = ([], [], per_row)
    own_counts = own if own is not None and np.any(own) else None
    if n == 0 or (n_rare_from >= n_features and own_counts is None):
        return none
    # the rare occurrences grouped by feature (CSR): members[group_start[f]:...] ascending
    occ = (rows >= n_rare_from) & (rows < n_features)
    ex = np.nonzero(occ)[0].astype(np.int32)  # (row-major: each row's in turn)
    feat = rows[occ]
    by_feat = np.argsort(feat, kind="stable")
    members = ex[by_feat]
    counts = np.bincount(feat - n_rare_from, minlength=max(n_features - n_rare_from, 0)) \
        if len(feat) else np.zeros(max(n_features - n_rare_from, 0), np.int64)
    group_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    del by_feat
    # each occurrence's group, and the sharings of each example (its groups' sizes summed)
    g = (feat - n_rare_from).astype(np.int64)
    size = counts[g]
    load = np.bincount(ex, weights=size, minlength=n).astype(np.int64)
    ends = np.cumsum(load)
    cuts = [0]
    while cuts[-1] < n:  # examples [cuts[i], cuts[i + 1]): about PAIR_KEYS_AT_ONCE sharings
        at = cuts[-1]
        base = int(ends[at - 1]) if at else 0
        nxt = int(np.searchsorted(ends, base + PAIR_KEYS_AT_ONCE, side="right"))
        cuts.append(min(n, max(nxt, at + 1)))
    occ_start = np.searchsorted(ex, np.asarray(cuts))
    bs, coefs = [], []
    counter = None
    for lo, hi, o0, o1 in zip(cuts[:-1], cuts[1:], occ_start[:-1], occ_start[1:]):
        span = hi - lo
        kdt = np.uint32 if span * n <= 2**32 else np.int64
        left = (ex[o0:o1] - lo).astype(kdt)
        gs, sz = group_start[g[o0:o1]], size[o0:o1]
        total = int(sz.sum())
        # each occurrence paired with each member of its group: (left, member) keys
        owner = np.repeat(np.arange(o1 - o0, dtype=np.int64), sz)
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(sz) - sz, sz)
        key = left[owner] * kdt(n)
        key += members[gs[owner] + within].astype(kdt)
        del owner, within
        if own_counts is not None:  # one with private conjunctions pairs with itself
            who = np.flatnonzero(own_counts[lo:hi])
            key = np.concatenate([key, (who.astype(kdt) * kdt(n) + (who + lo).astype(kdt))])
        key.sort()
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else \
            np.zeros(0, np.int64)
        shared_rare = np.diff(np.r_[first, len(key)]).astype(np.int64)
        key = key[first]
        a = (key // kdt(n)).astype(np.int32) + np.int32(lo)
        b = (key % kdt(n)).astype(np.int32)
        del key, first
        if counter is None:  # (built once for every range)
            counter = SharedCounter(rows, n_rare_from)
        shared_common = counter(a, b)
        c = (1 + shared_common + shared_rare) ** degree - (1 + shared_common) ** degree
        if own_counts is not None:
            self_pair = np.flatnonzero(a == b)
            extra = own_counts[a[self_pair]]
            # the marks counted one shared rare feature too many on those self pairs
            marked = self_pair[extra != 0]
            r = shared_rare[marked] - 1
            sc = shared_common[marked]
            c[marked] = (1 + sc + r) ** degree - (1 + sc) ** degree
            c[self_pair] += extra
        per_row[lo:hi] = np.bincount(a - lo, minlength=span)
        bs.append(b)
        coefs.append(c.astype(cdt))
        release_freed_memory()  # (the range's temporaries, XLA's among them)
    return bs, coefs, per_row


PAIRS_AT_ONCE = 1 << 16  # pairs compared in one call (one program whatever the data)


BITSET_BYTES = 32 << 20  # rows as bitsets of their common features when these fit


def _shared_common(rows: np.ndarray, a: np.ndarray, b: np.ndarray, below: int) -> np.ndarray:
    """`[len(a)]` how many features below `below` rows a[i] and b[i] share
    (`SharedCounter`, built for these pairs alone)."""
    return SharedCounter(rows, below)(a, b)


class SharedCounter:
    """How many features below `below` two rows of `rows` (`[n, k]` feature ids) share, in
    one compiled program a batch of pairs at a time: the popcount of the AND of the two
    rows' bitsets (`below` / 64 words a row) where those are fewer words than the k × k
    comparisons of their feature ids and fit BITSET_BYTES, else those comparisons. The
    bitsets (or the rows) are built once, for every batch of pairs asked after."""

    def __init__(self, rows: np.ndarray, below: int) -> None:
        n, k = rows.shape
        words = -(-below // 64)
        self._below = to_device(np.int32(below))
        if 4 * words < k * k and n * words * 8 <= BITSET_BYTES:
            bits = aligned_empty((n, words), np.uint64)
            bits[...] = _bitsets(rows, below, words)
            self._table, self._count = shared_on_cpu(bits), _count_shared_bits
        else:
            rows32 = rows if rows.dtype == np.int32 else rows.astype(np.int32)
            self._table, self._count = shared_on_cpu(np.ascontiguousarray(rows32)), _count_shared

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.zeros(len(a), np.int64)
        for s in range(0, len(a), PAIRS_AT_ONCE):
            part = slice(s, s + PAIRS_AT_ONCE)
            m = len(a[part])
            ia = np.zeros(PAIRS_AT_ONCE, np.int32)
            ib = np.zeros(PAIRS_AT_ONCE, np.int32)
            ia[:m], ib[:m] = a[part], b[part]
            out[part] = np.asarray(self._count(self._table, to_device(ia), to_device(ib),
                                               self._below))[:m]
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
    feature and whose weight is not 0 (no other moves a margin), over the examples with
    α_s != 0 (`alpha` `[n]`, int64 counts or floats), keyed
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
            key, w = _summed(key, w)  # (each chunk's repeats merged now: memory)
            keys_out.append(key)
            w_out.append(w)
    return _summed_runs(keys_out, w_out)


SUM_RANGES = 16  # `_summed_runs`' value ranges


def _summed_runs(keys: list[np.ndarray], w: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """`_summed` of the runs `keys[i]` (each sorted and distinct), weights `w[i]`, the weight
    0 sums left out: a range of key values at a time (quantiles of the longest run), each
    range's sums written into the result in turn (reserved for every key, touched as
    written), so the temporaries are a range's, not the whole's."""
    total = sum(len(k) for k in keys)
    dtype = np.result_type(*w) if w else np.int64
    if not total:
        return np.zeros(0, np.int64), np.zeros(0, dtype)
    bounds = value_bounds(max(keys, key=len), SUM_RANGES)
    cuts = [np.concatenate([[0], np.searchsorted(k, bounds), [len(k)]]) for k in keys]
    out_keys = np.empty(total, np.int64)
    out_w = np.empty(total, dtype)
    used = 0
    for r in range(len(bounds) + 1):
        part_keys, part_w = _summed(
            np.concatenate([k[c[r]:c[r + 1]] for k, c in zip(keys, cuts)]),
            np.concatenate([v[c[r]:c[r + 1]] for v, c in zip(w, cuts)]))
        live = part_w != 0
        m = int(live.sum())
        out_keys[used:used + m] = part_keys[live]
        out_w[used:used + m] = part_w[live]
        used += m
    return out_keys[:used], out_w[:used]


def _summed(keys: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys sorted, the sum of the weights of each)."""
    if not len(keys):
        return keys, w
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    w = w[order]
    del order
    first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[first], np.add.reduceat(w, first)


PRIVATE_IDS_AT_ONCE = 1 << 22  # kept ids read at a time by `private_counts` (memory)
RARE_KEYS_AT_ONCE = 1 << 16  # rare conjunctions enumerated at a time (memory: ~80 bytes each)


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
    flat = np.asarray(kept.flat)
    # an example's kept ids hold C(a, j) − C(b, j) of size j in turn (a common, b dense
    # features: `KeptIds`): each sink's run (the last that starts at or before it: an
    # empty run shares its start with the next), counted; the ids read a range of rows
    # at a time (their sinks' positions are a temporary the size of the range's ids)
    per_size = common.searched_per_size(rows)  # [n, d]
    seg = (start[:-1, None] + np.cumsum(per_size, axis=1) - per_size).reshape(-1)
    got = np.zeros(seg.size, np.int64)
    n = len(start) - 1
    step = max(1, int(PRIVATE_IDS_AT_ONCE * n // max(int(start[-1]), 1)))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        a, b = int(start[lo]), int(start[hi])
        sinks = a + np.flatnonzero(flat[a:b] == common.size)
        got += np.bincount(np.searchsorted(seg, sinks, side="right") - 1, minlength=seg.size)
    return got.reshape(per_size.shape) @ np.asarray(
        conjunction_coefficients(common.degree)[1:], np.int64)
