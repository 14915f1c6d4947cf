"""The common-conjunction table: sorted keys of conjunctions of features and how to find a
row's conjunctions in it (a hashed bucket index), shared by the explicit, splitting and slicing
modes and the expanded models.

A conjunction U of features f_1 < ... < f_j (ids below N) has the key Σ_i (f_i + 1) base^i,
base = N + 1 (∅ = 0); the margin of x sums c_|U| w_U over its conjunctions, c from
`conjunction_coefficients`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Int

from .._executables import stored_filter_jit
from .._validate import to_device
from ._holders import RareSupport, rare_block_margins
from ._packing import packed_slots

EMPTY_SLOT = -2  # an unused open slot's key (keys are >= 0; an empty table's one key is -1)
DENSE_IDS = 1 << 22  # weights at arithmetic ids at most: N = 2,895 at d = 2, 293 at d = 3


def conjunction_coefficients(degree: int) -> tuple[int, ...]:
    """c_0..c_d with (1 + n)^d = Σ_j c_j C(n, j) for every integer n ≥ 0.

    >>> conjunction_coefficients(2), conjunction_coefficients(3)
    ((1, 3, 2), (1, 7, 12, 6))
    """

    def stirling2(k: int, j: int) -> int:
        return sum((-1) ** i * math.comb(j, i) * (j - i) ** k for i in range(j + 1)) // \
            math.factorial(j)

    return tuple(sum(math.comb(degree, k) * math.factorial(j) * stirling2(k, j)
                     for k in range(j, degree + 1)) for j in range(degree + 1))


def combinations(width: int, degree: int) -> tuple[np.ndarray, ...]:
    """Static position combinations of sizes 1..d over the first `width` positions, each
    size in colex order (by largest position, then the next...): the combinations within
    the first p positions are the first C(p, j), and a combination's rank is
    Σ_i C(p_i, i + 1)."""
    return tuple(np.asarray(sorted(itertools.combinations(range(width), j),
                                   key=lambda c: c[::-1]), np.int32).reshape(-1, j)
                 for j in range(1, degree + 1))


def colex_sums(terms: list[Array], width: int) -> list[Array]:
    """For j = 1..len(terms): `[..., C(width, j)]` Σ_i terms[i][p_i] over the combinations
    p_0 < ... < p_{j-1} of the first `width` positions, in colex order (`combinations`).
    Built size by size with static slices only (no gather): the combinations of size j
    whose largest position is p are those of size j - 1 within the first p positions (the
    first C(p, j - 1) of the previous size) plus p's term."""
    out: list[Array] = []
    for j, term in enumerate(terms, 1):
        if j == 1:
            cur = term[..., :width]
        else:
            lower = out[-1]
            parts = [lower[..., :math.comb(p, j - 1)] + term[..., p:p + 1]
                     for p in range(width) if math.comb(p, j - 1)]
            cur = (jnp.concatenate(parts, axis=-1) if parts
                   else jnp.zeros(term.shape[:-1] + (0,), term.dtype))
        out.append(cur)
    return out


def by_largest(flag: Array, width: int, size: int) -> Array:
    """`[..., C(width, size)]` each combination's value of `flag` at its largest position
    (colex order, static slices: position p's value repeated C(p, size - 1) times)."""
    parts = [jnp.broadcast_to(flag[..., p:p + 1], flag.shape[:-1] + (math.comb(p, size - 1),))
             for p in range(width) if math.comb(p, size - 1)]
    return (jnp.concatenate(parts, axis=-1) if parts
            else jnp.zeros(flag.shape[:-1] + (0,), flag.dtype))


class CommonPart(eqx.Module):
    """The explicit part: keys of the common conjunctions and how to find an example's.

    A key is found in a two-choice cuckoo table (`cuckooed()`, what `of` builds): each key
    sits in one of two slots, given by two hashes of the key, so a lookup reads two slots
    (single elements: XLA gathers rows of several elements many times slower) and knows
    whether the key is there. A slot holds the key, and beside it the key's position in
    `keys` or, for a model's fixed weights (`by_slot`), nothing: the weights are then laid
    out by slot and the slot is the id. Tables saved before it have an open-addressed table
    instead (`opened()`: a window of slots from one home slot), buckets (a binary search in
    the bucket of a hash of the key, `bucketed()`: `hashed_keys`, `hashed_pos`; or, older
    still, buckets of the keys' high bits) or none (a binary search in the whole table);
    they still load and search as they did.

    Attributes:
        keys: `[D]` sorted keys Σ_i (f_i + 1) base^i of the common conjunctions (∅ = 0).
        bucket_start: `[n_buckets + 1]` where the keys of each bucket start (in
            `hashed_keys`; in `keys` for high-bit buckets), or None (search the whole table).
        n_common: N (static); base = N + 1.
        width: positions of a row that can hold common features (static).
        degree: d (static).
        shift: hashed: the bits of the bucket number; else the bits below it (static).
        probes: binary-search steps that find a key in its bucket (static).
        hashed_keys: `[D]` the keys ordered by (bucket, key), or None (high-bit buckets).
        hashed_pos: `[D]` the position in `keys` of each of `hashed_keys`.
        n_dense: (static) the conjunctions of the `n_dense` most frequent features (ids
            below it) are not in the table: each has a weight of its own at its dense id,
            arithmetic (∅ 0, then size by size, Σ_i C(f_i, i + 1) over its features
            f_0 < f_1 < ..., the combinatorial number system), as opal's arrays for its
            most frequent features; the table's keys follow at `offset` + their position.
            0: every conjunction is in the table.
        below: (static) conjunctions that hold a feature at or above it have no weight
            here (the sink): explicit mode's rare features (`_rare`); 0: `n_common`.
        slots: `[2^slot_bits + window, 2]` (key, position in `keys`) in linear-probing
            order by home slot (`EMPTY_SLOT` keys where none), or None.
        window: (static) slots a lookup reads from its home: the longest displacement + 1.
        slot_bits: (static) the bits of the home slot.
        cuckoo_keys: `[S + 1]` the key in each of the S cuckoo slots (`EMPTY_SLOT` where
            none; the last is always empty: where absent keys land), or None. A key's two
            slots are `_slot_of` it with seeds 0 and `cuckoo_seed`.
        cuckoo_pos: `[S + 1]` the position in `keys` of each slot's key (D where
            none), or None (`by_slot` tables need none once their weights are laid out).
        cuckoo_seed: (static) the second hash's seed.
        by_slot: (static) the table's ids are `offset` + the slot, not the position in
            `keys` (a model's weights, laid out by slot: one read fewer a lookup).
        dense_bits: `[W]` uint32, or None: bit s set where dense slot s (its arithmetic
            id) has a weight (`compacted`: a fit's, the slots its training rows hold);
            a dense id is then its slot's rank among those (`dense_rank[s // 32]` + the
            set bits below it in its word), and a slot without a weight has none (-1).
        dense_rank: `[W]` int32 the set bits before each word of `dense_bits`.
        n_live: (static) the dense slots with a weight, where `dense_bits` is set.
    """

    keys: Int[Array, " D"]
    n_common: int = eqx.field(static=True)
    width: int = eqx.field(static=True)
    degree: int = eqx.field(static=True)
    bucket_start: Int[Array, " nb1"] | None = None
    shift: int = eqx.field(static=True, default=0)
    probes: int = eqx.field(static=True, default=0)
    hashed_keys: Int[Array, " D"] | None = None
    hashed_pos: Int[Array, " D"] | None = None
    n_dense: int = eqx.field(static=True, default=0)
    below: int = eqx.field(static=True, default=0)
    slots: Int[Array, "S 2"] | None = None
    window: int = eqx.field(static=True, default=0)
    slot_bits: int = eqx.field(static=True, default=0)
    cuckoo_keys: Int[Array, " S1"] | None = None
    cuckoo_pos: Int[Array, " S1"] | None = None
    cuckoo_seed: int = eqx.field(static=True, default=0)
    by_slot: bool = eqx.field(static=True, default=False)
    dense_bits: Int[Array, " W"] | None = None
    dense_rank: Int[Array, " W"] | None = None
    n_live: int = eqx.field(static=True, default=0)

    @property
    def offset(self) -> int:
        """The weights of the dense conjunctions (0 without them): the table's first id."""
        if self.dense_bits is not None:
            return self.n_live
        return n_conjunctions(self.n_dense, self.degree) if self.n_dense else 0

    def compacted(self, held: np.ndarray) -> CommonPart:
        """This part with weights for the dense slots flagged in `held` only (`[S]` bool, S
        = `n_conjunctions(n_dense, d)`, by arithmetic id: a fit's, `_slice.dense_seen` of
        its training rows, every conjunction they hold), at their rank among them: on UD at
        d = 2, 0.41M of the 4.19M slots. Host."""
        held = np.asarray(held, bool)
        assert self.dense_bits is None and len(held) == n_conjunctions(self.n_dense,
                                                                           self.degree)
        words = -(-len(held) // 32)
        padded = np.zeros(words * 32, bool)
        padded[:len(held)] = held
        bits = np.packbits(padded, bitorder="little").view("<u4").astype(np.uint32)
        rank = np.zeros(words, np.int32)
        np.cumsum(padded.reshape(words, 32).sum(axis=1)[:-1], out=rank[1:])
        return dataclasses.replace(self, dense_bits=to_device(bits), dense_rank=to_device(rank),
                                   n_live=int(held.sum()))

    def dense_slots(self) -> np.ndarray:
        """`[offset]` the arithmetic id of each dense weight (host): the held slots where
        `compacted`, else every slot."""
        S = n_conjunctions(self.n_dense, self.degree) if self.n_dense else 0
        if self.dense_bits is None:
            return np.arange(S, dtype=np.int64)
        bits = np.unpackbits(np.asarray(self.dense_bits).astype("<u4").view(np.uint8),
                             bitorder="little")[:S]
        return np.flatnonzero(bits)

    def _ranked(self, ids: Array) -> Array:
        """Dense ids (arithmetic, -1: none) as weights' ids: unchanged, or where
        `compacted`, the slot's rank among the held ones (-1 where not held)."""
        if self.dense_bits is None:
            return ids
        assert self.dense_rank is not None
        ok = ids >= 0
        at = jnp.where(ok, ids, 0)
        word = self.dense_bits[at >> 5]
        bit = (at & 31).astype(jnp.uint32)
        held = ((word >> bit) & jnp.uint32(1)) == 1
        below = jax.lax.population_count(word & ((jnp.uint32(1) << bit) - jnp.uint32(1)))
        return jnp.where(ok & held, self.dense_rank[at >> 5] + below.astype(jnp.int32), -1)

    @property
    def size(self) -> int:
        """The weights (dense ones, then the table's); the sink id (conjunctions that have
        none) is this."""
        return self.offset + self.n_table

    @property
    def n_table(self) -> int:
        """The table's ids: its keys, or its slots (`by_slot`)."""
        if self.by_slot:
            assert self.cuckoo_keys is not None
            return self.cuckoo_keys.shape[0] - 1
        return self.keys.shape[0]

    @property
    def n_ids(self) -> int:
        """K: the conjunctions of ≤ d of `width` positions (∅ included), `ids`' last axis."""
        return n_conjunctions(self.width, self.degree)

    @classmethod
    def of(cls, keys: np.ndarray, n_common: int, width: int, degree: int,
           n_dense: int = 0, below: int = 0, by_slot: bool = False) -> CommonPart:
        """The cuckoo table of sorted host `keys` in base `n_common + 1`: int64 keys where
        they can pass int32 (the caller enables x64 for those), else int32. `n_dense`: the
        keys leave out the conjunctions of features below it (they have dense ids); a table
        left empty holds one key that matches none (-1). `by_slot`: ids by slot (a model's
        weights, `dense_layout`)."""
        big = (n_common + 1) ** degree >= 2 ** 31
        keys = np.asarray(keys)
        if len(keys) == 0:
            keys = np.full(1, -1, np.int64)
        return cls(to_device(keys, jnp.int64 if big else jnp.int32), n_common, width,
                   degree, n_dense=n_dense, below=below).cuckooed(by_slot=by_slot)

    def cuckooed(self, load: float = 0.48, by_slot: bool = False) -> CommonPart:
        """This table with its two-choice cuckoo slots (host): at most `load` of them used
        (under 1/2, where two choices place every key with high probability; `_cuckoo_size`:
        any count for 64-bit keys, a power of two for 32-bit ones).
        Placed in rounds, all waiting keys at once: each goes to its current choice,
        evicting the key there, which then waits for its other choice (of keys sent to one
        slot in a round, one wins and the others try their other choice). Where placement
        does not end (a cycle), another seed, then twice the slots."""
        keys = np.asarray(self.keys)
        D = len(keys)
        wide = keys.dtype.itemsize == 8
        S = _cuckoo_size(D, load, wide)
        owner, seed = None, 0
        for attempt in range(6):
            seed = _SEEDS[attempt % len(_SEEDS)]
            owner = _cuckoo_owners(keys, S, seed)
            if owner is not None:
                break
            if attempt % 2:  # (a new seed, then more slots too)
                S = _cuckoo_size(S, 0.5, wide)
        if owner is None:
            raise RuntimeError(f"no cuckoo placement of {D:,} keys in {S:,} slots")
        # each slot's key read a part at a time (NumPy's index temporaries a part's)
        empty = owner < 0
        host_keys = np.empty(S + 1, keys.dtype)
        for at in range(0, S, SLOTS_AT_ONCE):
            end = min(S, at + SLOTS_AT_ONCE)
            np.take(keys, owner[at:end], out=host_keys[at:end], mode="clip")
        host_keys[:S][empty] = EMPTY_SLOT
        host_keys[S] = EMPTY_SLOT
        host_pos = np.empty(S + 1, np.int32)
        host_pos[:S] = owner
        del owner
        host_pos[:S][empty] = D
        host_pos[S] = D
        del empty
        slot_keys, pos = to_device(host_keys), to_device(host_pos)
        return dataclasses.replace(self, cuckoo_keys=slot_keys,
                                   cuckoo_pos=pos, cuckoo_seed=seed,
                                   by_slot=by_slot, slots=None, window=0, slot_bits=0,
                                   bucket_start=None, hashed_keys=None, hashed_pos=None,
                                   shift=0, probes=0)

    def unsearched(self) -> CommonPart:
        """This table without what searches it (its slots): a fit whose every id is kept
        (`_slice.kept_ids`) reads its keys and layout only, and holds no slots meanwhile."""
        assert not self.by_slot  # (a by-slot table's ids are its slots)
        return dataclasses.replace(self, cuckoo_keys=None, cuckoo_pos=None, slots=None,
                                   window=0, slot_bits=0, bucket_start=None,
                                   hashed_keys=None, hashed_pos=None, shift=0, probes=0)

    def opened(self, load: float = 0.5, longest: int = 16) -> CommonPart:
        """This table with its open-addressed slots (host): at most `load` of the slots
        used, more slots (halving the load) until every key lies within `longest` slots of
        its home. Keys are placed in order of home slot, each at the first free slot from
        its home (linear probing), so a key's slot is i + max_{j ≤ i}(home_j − j)."""
        keys = np.asarray(self.keys)
        D = len(keys)
        bits = max(1, int(np.ceil(np.log2(max(D, 1) / load))))
        while True:
            # by home slot, ties in key order: one in-place sort of (home, position) pairs
            # (a stable argsort is several times slower)
            home = _bucket_of(keys, bits).astype(np.int64)
            home <<= 32
            home |= np.arange(D, dtype=np.int64)
            home.sort()
            order = home & 0xFFFFFFFF
            home >>= 32  # the homes, in that order
            at = np.arange(D, dtype=np.int64)
            placed = at + np.maximum.accumulate(home - at) if D else at
            window = int((placed - home).max(initial=0)) + 1
            if window <= longest or bits >= 30:
                break
            bits += 1
        slots = np.full(((1 << bits) + window, 2), EMPTY_SLOT, keys.dtype)
        slots[placed, 0] = keys[order]
        slots[placed, 1] = order
        return dataclasses.replace(self, slots=to_device(slots), window=window,
                                   slot_bits=bits, cuckoo_keys=None, cuckoo_pos=None,
                                   cuckoo_seed=0, by_slot=False)

    def bucketed(self) -> CommonPart:
        """This table with buckets of a hash of its keys (host): between one and two keys
        per bucket, so a bucket's binary search takes about four probes."""
        keys = np.asarray(self.keys)
        D = len(keys)
        bits = max(1, D.bit_length() - 1)  # 2^bits buckets, D/2 < 2^bits <= D
        bucket = _bucket_of(keys, bits).astype(np.int64)
        start = np.zeros((1 << bits) + 1, np.int32)
        np.cumsum(np.bincount(bucket, minlength=1 << bits), out=start[1:])
        # by bucket, then by key (keys sorted): one in-place sort of (bucket, position)
        # pairs, many times faster than a stable argsort (and no second D-sized copy)
        bucket <<= 32
        bucket |= np.arange(D, dtype=np.int64)
        bucket.sort()
        order = (bucket & 0xFFFFFFFF).astype(np.int32)
        del bucket
        probes = int(np.diff(start).max(initial=0)).bit_length()
        return dataclasses.replace(self, bucket_start=to_device(start), shift=bits,
                                   probes=probes,
                                   hashed_keys=to_device(keys[order], self.keys.dtype),
                                   hashed_pos=to_device(order), slots=None, window=0,
                                   slot_bits=0, cuckoo_keys=None, cuckoo_pos=None,
                                   cuckoo_seed=0, by_slot=False)

    def with_width(self, width: int) -> CommonPart:
        """The same table searched over `width` positions of a row."""
        return dataclasses.replace(self, width=width)

    def locate(self, key: Array) -> tuple[Array, Array]:
        """(the id of each key in the table, whether it is there): its position in `keys`
        (its slot where `by_slot`; `n_table` where absent, for cuckoo tables), from the
        cuckoo slots (two slots read per key) or the open slots (one window of `window`
        slots)."""
        if self.cuckoo_keys is not None:
            return self._cuckoo_locate(key)
        slots = self.slots
        assert slots is not None
        flat = key.reshape(-1).astype(slots.dtype)
        home = _bucket_of(flat, self.slot_bits).astype(jnp.int32)
        zero = jnp.zeros((), jnp.int32)
        win = jax.vmap(lambda h: jax.lax.dynamic_slice(slots, (h, zero),
                                                       (self.window, 2)))(home)
        hit = win[:, :, 0] == flat[:, None]
        pos = jnp.sum(jnp.where(hit, win[:, :, 1], 0), axis=1)  # at most one hit
        return (pos.astype(jnp.int32).reshape(key.shape),
                jnp.any(hit, axis=1).reshape(key.shape))

    def _cuckoo_locate(self, key: Array) -> tuple[Array, Array]:
        ck = self.cuckoo_keys
        assert ck is not None
        S = ck.shape[0] - 1
        flat = key.reshape(-1).astype(ck.dtype)
        first = _slot_of(flat, S)
        second = _slot_of(flat, S, self.cuckoo_seed)
        # element gathers only (a row of several slots per key is a slower gather in XLA)
        slot = jnp.where(ck[first] == flat, first,
                         jnp.where(ck[second] == flat, second, S)).astype(jnp.int32)
        if self.by_slot:
            pos = slot
        else:
            assert self.cuckoo_pos is not None
            pos = self.cuckoo_pos[slot]
        return pos.reshape(key.shape), (slot < S).reshape(key.shape)

    def find(self, key: Array) -> Array:
        """The position of each key in the table (of some other key where absent:
        compare). Not for `by_slot` tables (their ids are slots)."""
        D = self.keys.shape[0]
        if self.cuckoo_keys is not None:
            assert not self.by_slot
            return jnp.minimum(self.locate(key)[0], D - 1)
        if self.slots is not None:
            return self.locate(key)[0]
        if self.bucket_start is None:
            return jnp.minimum(jnp.searchsorted(self.keys, key), D - 1)
        n_buckets = self.bucket_start.shape[0] - 1
        if self.hashed_keys is not None:
            table = self.hashed_keys
            b = _bucket_of(key, self.shift)
        else:
            table = self.keys
            b = jnp.clip(key >> self.shift, 0, n_buckets - 1)  # beyond the table: absent
        lo, hi = self.bucket_start[b], self.bucket_start[b + 1]
        for _ in range(self.probes):  # lower bound of key in table[lo:hi]
            mid = (lo + hi) >> 1
            below = table[jnp.minimum(mid, D - 1)] < key
            open_ = lo < hi
            lo = jnp.where(open_ & below, mid + 1, lo)
            hi = jnp.where(open_ & ~below, mid, hi)
        lo = jnp.minimum(lo, D - 1)
        return lo if self.hashed_pos is None else self.hashed_pos[lo]

    def keys_of(self, indices: Int[Array, "*batch k"]) -> tuple[Array, Array, Array]:
        """x's conjunctions over its first `width` positions (∅ first, then by size over the
        static position combinations): (their keys, whether all their features are common,
        their dense ids where all are among the `n_dense` first, else -1). Rows ascending
        (absent positions last, as ids ≥ `n_common`)."""
        base = self.n_common + 1
        f = indices[..., :self.width]
        kdt = self.keys.dtype
        # every term is a function of one position: computed once per position, then
        # summed per combination by static slices (`colex_sums`; no gather, and no
        # per-combination multiplication or division)
        common = f < (self.below or self.n_common)
        digit = f.astype(kdt) + 1
        zero = jnp.zeros(f.shape[:-1] + (1,), jnp.int32)
        keys = colex_sums([digit * kdt.type(base ** i) for i in range(self.degree)],
                          self.width)
        oks = [by_largest(common, self.width, j) for j in range(1, self.degree + 1)]
        return (jnp.concatenate([zero.astype(kdt), *keys], axis=-1),
                jnp.concatenate([zero == 0, *oks], axis=-1),
                jnp.concatenate(self.dense_ids_of(f), axis=-1))

    def searched_counts(self, rows: np.ndarray) -> np.ndarray:
        """`[n]` how many of each row's conjunctions are searched (host; rows ascending):
        those whose largest feature is common (below `below`) but not dense, C(a, j) −
        C(b, j) of each size j over a row of a common features, b of them dense."""
        return np.sum(self.searched_per_size(rows), axis=1)

    def searched_per_size(self, rows: np.ndarray) -> np.ndarray:
        """`[n, d]` `searched_counts` size by size: C(a, j) − C(b, j) for j = 1..d."""
        f = np.asarray(rows)[:, :self.width]
        a = np.sum(f < (self.below or self.n_common), axis=1)
        b = np.minimum(np.sum(f < self.n_dense, axis=1), a)
        binom = binomials(self.width, self.degree).astype(np.int64)
        return binom[a, 1:] - binom[b, 1:]

    def searched_keys(self, rows: Int[Array, "R k"], size: int) -> tuple[Array, Array]:
        """The keys of the rows' searched conjunctions (`searched_counts`), packed: row by
        row, and within a row size by size, each size's colex ranks [C(b, j), C(a, j)) in
        order (the order of `KeptIds`), in `[size]` slots (at least the rows' total);
        returns (keys, live), live False in the slots past the total. Rows ascending. Only
        the searched conjunctions are enumerated (no padding, no dense one), each slot's
        row found by `packed_slots` (no search)."""
        f = rows[:, :self.width]
        W, d = self.width, self.degree
        a = jnp.sum(f < (self.below or self.n_common), axis=1)
        b = jnp.minimum(jnp.sum(f < self.n_dense, axis=1), a)
        binom = jnp.asarray(binomials(W, d))
        lo = [binom[b, j] for j in range(1, d + 1)]
        count = [binom[a, j] - lo[j - 1] for j in range(1, d + 1)]
        per_row = sum(count[1:], count[0])
        row, at, live = packed_slots(per_row, size)  # (at: the slot's place in its row's)
        # its size j: the first whose running count passes `at`; its colex rank within j
        size_of = jnp.ones((size,), jnp.int32)
        rank = lo[0][row] + at
        before = count[0][row]
        for j in range(2, d + 1):
            past = at >= before
            size_of = jnp.where(past, j, size_of)
            rank = jnp.where(past, lo[j - 1][row] + at - before, rank)
            before = before + count[j - 1][row]
        rank = jnp.where(live, rank, 0)
        colex = jnp.asarray(colex_combinations(W, d))
        pos = colex[size_of - 1, rank]  # [size, d] positions (past the size: 0)
        feat = f[row[:, None], pos].astype(self.keys.dtype)
        base = self.n_common + 1
        scale = jnp.asarray([base ** i for i in range(d)], self.keys.dtype)
        used = jnp.arange(d)[None, :] < size_of[:, None]
        key = jnp.sum(jnp.where(used, (feat + 1) * scale[None, :], 0), axis=1,
                      dtype=self.keys.dtype)
        return jnp.where(live, key, 0), live

    def dense_ids_of(self, f: Int[Array, "*batch w"]) -> list[Array]:
        """The dense ids of x's conjunctions over its first `width` positions (rows
        ascending), one array per size j = 0..d (∅, then the static position combinations
        of `combinations`): Σ_i C(f_i, i + 1) past the ids of the smaller sizes, -1 where a
        feature is not among the `n_dense` first (∅: 0, or -1 without dense features). A
        term per position, summed per combination by static slices (`colex_sums`)."""
        f = f[..., :self.width]
        d_ok = f < self.n_dense
        small = jnp.minimum(f, self.n_dense)  # no overflow where not dense
        ranks = [_comb(small, i + 1) for i in range(self.degree)]  # C(f, i + 1) at place i
        zero = jnp.zeros(f.shape[:-1] + (1,), jnp.int32)
        dense = [zero if self.n_dense else zero - 1]
        for j, at in enumerate(colex_sums(ranks, self.width), 1):
            ok = by_largest(d_ok, self.width, j)
            dense.append(jnp.where(ok, _dense_offset(self.n_dense, j) + at, -1)
                         .astype(jnp.int32))
        return [self._ranked(d) for d in dense]

    def ids_from(self, indices: Int[Array, "*batch k"], kept: KeptIds, rows: Int[Array, "*batch"]
                 ) -> Int[Array, "*batch K"]:
        """`ids(indices)`, the rows being rows `rows` of the data whose searched ids `kept`
        holds (`_slice.kept_ids`): the dense ids computed, the searched ones read (no
        search). Rows ascending, as for `ids`."""
        f = indices[..., :self.width]
        dense = self.dense_ids_of(f)
        if 0 < self.n_dense >= (self.below or self.n_common):  # every common one is dense
            return jnp.concatenate([jnp.where(d >= 0, d, self.size) for d in dense],
                                   axis=-1).astype(jnp.int32)
        a = jnp.sum(f < (self.below or self.n_common), axis=-1, keepdims=True)
        b = jnp.minimum(jnp.sum(f < self.n_dense, axis=-1, keepdims=True), a)
        binom = jnp.asarray(binomials(self.width, self.degree))
        if not self.n_dense:  # ∅ is the table's first key (0) where it is there
            dense[0] = jnp.broadcast_to(jnp.where(self.keys[0] == 0, 0, -1), dense[0].shape)
        at = kept.start[rows][..., None]  # where the row's searched ids of this size start
        out = [dense[0]]
        for j in range(1, self.degree + 1):
            # size j's positions are its colex ranks r; the searched are C(b, j) <= r < C(a, j)
            lo, hi = binom[b, j], binom[a, j]
            r = jax.lax.broadcasted_iota(jnp.int32, dense[j].shape, dense[j].ndim - 1)
            searched = (r >= lo) & (r < hi)
            got = kept.flat.at[jnp.where(searched, at + r - lo, 0)].get(mode="promise_in_bounds")
            out.append(jnp.where(dense[j] >= 0, dense[j],
                                 jnp.where(searched, got, self.size)))
            at = at + hi - lo
        return jnp.concatenate(out, axis=-1).astype(jnp.int32)

    def ids(self, indices: Int[Array, "*batch k"]) -> Int[Array, "*batch K"]:
        """The weight ids of x's common conjunctions (∅ first, then by size over the static
        position combinations): dense ids, else `offset` + the position in the table;
        conjunctions that have no weight get the sink id `size`. A batch of rows is one
        vectorized search (done ahead of the sequential scan)."""
        key, ok, dense = self.keys_of(indices)
        # keys that need no search (dense ids, padding, rare features) are searched as ∅:
        # the same few cache lines every time, where a real key costs a miss per read
        key = jnp.where(ok & (dense < 0), key, 0)
        # one search for all sizes, on keys computed once (not re-fused into every probe)
        pos = self.search(jax.lax.optimization_barrier(key), ok)
        return jnp.where(dense >= 0, dense, self.offset + pos).astype(jnp.int32)

    def search(self, key: Array, ok: Array) -> Array:
        """The id of each key in the table (`locate`) where `ok`, else the sink
        `n_table`."""
        D = self.n_table
        if self.slots is not None or self.cuckoo_keys is not None:
            pos, there = self.locate(key)
            return jnp.where(ok & there, pos, D).astype(jnp.int32)
        pos = self.find(key)
        return jnp.where(ok & (self.keys[pos] == key), pos, D).astype(jnp.int32)

    def coefficients(self, ids: Int[Array, " K"], dtype: Any) -> Array:
        """c_|U| for each id from `ids` (0 for the sink)."""
        c = conjunction_coefficients(self.degree)
        sizes = [0] + [j for j, combo in enumerate(combinations(self.width, self.degree), 1)
                       for _ in range(combo.shape[0])]
        col = jnp.asarray(np.asarray(c)[np.asarray(sizes, np.int64)], dtype)
        return jnp.where(ids < self.size, col, 0)


class KeptIds(NamedTuple):
    """The table ids of the searched conjunctions of every training row, row by row: those
    whose largest feature is common but not dense, which over a row sorted ascending (a
    common, b dense features) are the colex ranks [C(b, j), C(a, j)) of each size j, in
    that order (`CommonPart.ids_from` reads them; the dense ids are computed).

    Attributes:
        flat: `[E]` the ids (offset + table position, or the sink), padded.
        start: `[n + 1]` where each row's start in `flat`.
    """

    flat: Int[Array, " E"]
    start: Int[Array, " n1"]


@functools.cache
def binomials(width: int, degree: int) -> np.ndarray:
    """`[width + 1, degree + 1]` C(w, j)."""
    return np.asarray([[math.comb(w, j) for j in range(degree + 1)]
                       for w in range(width + 1)], np.int32)


PACKED_SLOTS = 1 << 16  # `searched_keys`' slots are a multiple of this (few programs)


def packed_chunks(counts: np.ndarray, chunk: int) -> tuple[np.ndarray, int]:
    """(`[chunks]` the searched conjunctions of each chunk of `chunk` rows, from each row's
    `counts` (`CommonPart.searched_counts`); the slots `searched_keys` takes for any chunk:
    the largest total rounded up to a multiple of PACKED_SLOTS)."""
    counts = np.asarray(counts, np.int64)
    totals = (np.add.reduceat(counts, np.arange(0, len(counts), chunk)) if len(counts)
              else np.zeros(0, np.int64))
    most = max(1, int(totals.max(initial=0)))
    return totals, -(-most // PACKED_SLOTS) * PACKED_SLOTS


def chunk_rows(rows: np.ndarray, at: int, chunk: int, absent: int) -> np.ndarray:
    """`rows[at:at + chunk]` (host), a last short chunk padded with rows of `absent` only (no
    feature, nothing to enumerate): every chunk one shape, one program."""
    part = rows[at:at + chunk]
    if len(part) < chunk:
        part = np.pad(part, ((0, chunk - len(part)), (0, 0)), constant_values=absent)
    return part


def dense_features(n_common: int, degree: int, budget: int = DENSE_IDS) -> int:
    """The most frequent features whose conjunctions get arithmetic ids: the largest
    N ≤ n_common with `n_conjunctions(N, degree)` ≤ budget (the conjunctions of ≤ d of
    its features, ∅ included).

    >>> dense_features(10**6, 2), dense_features(10**6, 3), dense_features(100, 3)
    (2895, 293, 100)
    """
    lo, hi = 0, n_common
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if n_conjunctions(mid, degree) <= budget else (lo, mid - 1)
    return lo


def dense_runs(keys: np.ndarray, n_dense: int, base: int, degree: int
               ) -> list[tuple[int, slice]]:
    """(size j, run) of the sorted `keys` (in `base`) that are conjunctions of features below
    `n_dense`, the ones with dense ids: a conjunction of j features has its largest one
    (f + 1) in digit j - 1, so those of each size form one run (∅ = 0, size 0, included).
    None when `n_dense` is 0: then every conjunction, ∅ too, is in the table."""
    runs = []
    for j in range(degree + 1 if n_dense else 0):
        lo = base ** (j - 1) if j else 0
        hi = min((n_dense + 1) * base ** (j - 1) if j else 1, np.iinfo(np.int64).max)
        runs.append((j, slice(int(np.searchsorted(keys, lo)), int(np.searchsorted(keys, hi)))))
    return runs


def dense_layout(keys: np.ndarray, n_common: int, width: int, degree: int,
                 budget: int = DENSE_IDS, weights: np.ndarray | None = None
                 ) -> tuple[CommonPart, np.ndarray]:
    """How a model whose conjunctions have the sorted host `keys` (base `n_common + 1`) is
    searched: the conjunctions of its `dense_features(n_common, degree, budget)` most
    frequent features (ids below it) at their arithmetic ids, the others in a cuckoo
    table with ids by slot, searched over `width` positions. Returns (the table, `src`):
    the model's weights `w` (`[D + 1]`, the last 0) laid out as the table's ids are
    `w[src]` (`[size + 1]`: dense ids the model lacks, empty slots and the sink read the
    0). Given the host `weights` (`w`), returns them laid out in place of `src`: written
    where each weight goes, no `[size + 1]` index array (at d = 3 on conj-2 that is 49 MB
    not touched)."""
    keys = np.asarray(keys, np.int64)
    D = len(keys)
    n_dense = dense_features(n_common, degree, budget)
    base = n_common + 1
    runs = dense_runs(keys, n_dense, base, degree)
    dense = np.zeros(D, bool)
    for _, run in runs:
        dense[run] = True
    rest = np.flatnonzero(~dense)
    table = CommonPart.of(keys[rest], n_common, width, degree, n_dense=n_dense, by_slot=True)
    offset = table.offset
    if weights is None:
        out = np.full(table.size + 1, D, np.int32)
    else:
        out = np.zeros(table.size + 1, weights.dtype)
    for j, run in runs:  # a dense id from the key's digits: Σ_i C(f_i, i + 1) past its size's
        at = np.full(run.stop - run.start, _dense_offset(n_dense, j) if j else 0, np.int64)
        for i in range(j):
            at += _comb(keys[run] // base ** i % base - 1, i + 1)
        out[at] = (np.arange(run.start, run.stop, dtype=np.int32) if weights is None
                   else weights[run])
    # the table's weights by slot: a filled slot's key is the table's key at its position
    # (an empty table's one key, -1, and empty slots read the 0); the positions are not
    # kept (a lookup's id is its slot)
    assert table.cuckoo_pos is not None
    held = np.asarray(table.cuckoo_pos)[:-1]
    filled = np.flatnonzero(held < len(rest))
    at = rest[held[filled]]
    out[offset + filled] = at if weights is None else weights[at]
    return dataclasses.replace(table, cuckoo_pos=None), out


def _dense_offset(n: int, size: int) -> int:
    """Where the conjunctions of `size` features start in the dense ids."""
    return n_conjunctions(n, size - 1)


def _comb(x: Any, r: int) -> Any:
    """C(x, r) of integer arrays."""
    if r == 1:
        return x
    if r == 2:
        return x * (x - 1) // 2
    if r == 3:
        return x * (x - 1) * (x - 2) // 6
    return math.prod(x - i for i in range(r)) // math.factorial(r)


def dense_keys(n: int, degree: int, base: int) -> np.ndarray:
    """`[n_conjunctions(n, degree)]` the key (in `base`) of every conjunction of ≤ d of the
    features 0..n-1, in dense-id order, which is also the keys' order (both sort by size,
    then by the largest feature, then the next...).

    >>> dense_keys(3, 2, 10).tolist()
    [0, 1, 2, 3, 21, 31, 32]
    """
    parts = [np.zeros(1, np.int64)]
    smaller = parts[0]  # the keys of size j - 1, sorted (∅ for j = 1)
    for j in range(1, degree + 1):
        # largest feature f on top of each of the C(f, j - 1) smaller conjunctions below f,
        # which are the first C(f, j - 1) of them: f by f, the keys come out sorted
        f = np.arange(n, dtype=np.int64)
        count = np.asarray([math.comb(int(v), j - 1) for v in f], np.int64)
        top = np.repeat(f, count)
        within = np.arange(len(top)) - np.repeat(np.cumsum(count) - count, count)
        smaller = smaller[within] + (top + 1) * base ** (j - 1)
        parts.append(smaller)
    return np.concatenate(parts)


def dense_keys_of(ids: np.ndarray, n: int, degree: int, base: int) -> np.ndarray:
    """The keys (in `base`) of the conjunctions with dense ids `ids` (of `n` dense features,
    ≤ d of them): `dense_keys(n, degree, base)[ids]` without building every key. An id of
    size j is its size's offset plus Σ_i C(f_i, i + 1) (the combinatorial number system),
    decoded from the largest feature down: f_i is the largest f with C(f, i + 1) ≤ what
    is left.

    >>> dense_keys_of(np.array([0, 3, 6]), 3, 2, 10).tolist()
    [0, 3, 32]
    """
    ids = np.asarray(ids, np.int64)
    keys = np.zeros(len(ids), np.int64)
    f = np.arange(n + 1, dtype=np.int64)
    for j in range(1, degree + 1):
        lo, hi = _dense_offset(n, j), n_conjunctions(n, j)
        at = np.flatnonzero((ids >= lo) & (ids < hi))
        rest = ids[at] - lo
        key = np.zeros(len(at), np.int64)
        for i in range(j - 1, -1, -1):
            table = _comb(f, i + 1)  # ascending in f (0 below i + 1)
            fi = np.searchsorted(table, rest, side="right") - 1
            rest = rest - table[fi]
            key += (fi + 1) * base ** i
        keys[at] = key
    return keys


def _mix(key: Any, seed: int = 0) -> Any:
    """A 64-bit (or, for int32 keys, 32-bit) unsigned mix of `key` xor `seed` (MurmurHash3's
    finalizer), the same on the host (NumPy) and in JAX."""
    xp = jnp if isinstance(key, jax.Array) else np
    wide = key.dtype.itemsize == 8
    u = xp.uint64 if wide else xp.uint32
    x = key.astype(u)
    if seed:
        x = x ^ u(seed & (0xFFFFFFFFFFFFFFFF if wide else 0xFFFFFFFF))
    consts = ((33, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53) if wide
              else (16, 0x85EBCA6B, 0xC2B2AE35))
    r, m1, m2 = consts
    if xp is np:  # the same steps in place: one temporary of the keys' size, not five
        with np.errstate(over="ignore"):
            x ^= x >> u(r)
            x *= u(m1)
            x ^= x >> u(r if wide else 13)
            x *= u(m2)
            x ^= x >> u(r)
        return x
    with np.errstate(over="ignore"):
        x = x ^ (x >> u(r))
        x = x * u(m1)
        x = x ^ (x >> u(r if wide else 13))
        x = x * u(m2)
        x = x ^ (x >> u(r))
    return x


def _bucket_of(key: Any, bits: int, seed: int = 0) -> Any:
    """The top `bits` bits of `_mix(key, seed)`."""
    xp = jnp if isinstance(key, jax.Array) else np
    u = xp.uint64 if key.dtype.itemsize == 8 else xp.uint32
    x = _mix(key, seed)
    return (x >> u(8 * key.dtype.itemsize - bits)).astype(xp.int32 if bits < 31 else xp.int64)


SLOTS_AT_ONCE = 1 << 20  # host keys hashed at a time (`_slot_of`)


def _slot_of(key: Any, n_slots: int, seed: int = 0) -> Any:
    """A slot in [0, n_slots) from `_mix(key, seed)`: for 64-bit keys the top 32 bits of the
    mix times `n_slots`, shifted down 32 (any `n_slots` below 2^31, no division); for 32-bit
    keys (no 64-bit product where x64 is off) `n_slots` is a power of two and the slot is
    the mix's top bits. int32."""
    xp = jnp if isinstance(key, jax.Array) else np
    if xp is np and len(key) > SLOTS_AT_ONCE:  # (the mix's temporaries a part's, not all's)
        out = np.empty(key.shape, np.int32)
        for at in range(0, len(key), SLOTS_AT_ONCE):
            out[at:at + SLOTS_AT_ONCE] = _slot_of(key[at:at + SLOTS_AT_ONCE], n_slots, seed)
        return out
    if key.dtype.itemsize == 8:
        if xp is np:  # (in place, as `_mix`)
            x = _mix(key, seed)
            x >>= np.uint64(32)
            x *= np.uint64(n_slots)
            x >>= np.uint64(32)
            return x.astype(np.int32)
        x = _mix(key, seed) >> xp.uint64(32)
        with np.errstate(over="ignore"):
            return ((x * xp.uint64(n_slots)) >> xp.uint64(32)).astype(xp.int32)
    bits = n_slots.bit_length() - 1
    assert n_slots == 1 << bits, "32-bit keys take a power of two of slots"
    return _bucket_of(key, bits, seed).astype(xp.int32)


def _cuckoo_size(n: int, load: float, wide: bool) -> int:
    """Slots for `n` keys at most `load` of them used: ceil(n / load) for 64-bit keys (any
    count, `_slot_of`), the next power of two for 32-bit keys; at least 2."""
    need = max(2, int(np.ceil(max(n, 1) / load)))
    return need if wide else 1 << (need - 1).bit_length()


# the cuckoo tables' second-hash seeds, tried in turn (odd 64-bit constants; any would do)
_SEEDS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)


def _cuckoo_owners(keys: np.ndarray, n_slots: int, seed: int, rounds: int = 4096
                   ) -> np.ndarray | None:
    """`[n_slots]` the index in `keys` of the key each slot holds (-1: none), each key in
    one of its two slots (`_slot_of` with seeds 0 and `seed`); None where the rounds run
    out (a cycle of evictions, or too slow to settle). First every key goes to its first
    slot (nothing to evict yet); then, round by round, every waiting key moves at once:
    writes to one slot keep one (NumPy keeps the last), the others try their other slot
    next, and each key evicted tries its other slot (the one it did not sit in)."""
    D = len(keys)
    first = _slot_of(keys, n_slots)
    second = _slot_of(keys, n_slots, seed)
    owner = np.full(n_slots, -1, np.int32)
    everyone = np.arange(D, dtype=np.int32)
    owner[first] = everyone
    waiting = np.flatnonzero(owner[first] != everyone).astype(np.int32)
    del everyone
    to_second = np.ones(len(waiting), bool)  # the slot each waiting key tries next
    for _ in range(rounds):
        if not len(waiting):
            return owner
        target = np.where(to_second, second[waiting], first[waiting])
        before = owner[target]
        owner[target] = waiting
        won = owner[target] == waiting
        evicted = before[won]
        sat = target[won]
        out = evicted >= 0
        evicted, sat = evicted[out], sat[out]
        waiting = np.concatenate([waiting[~won], evicted])
        to_second = np.concatenate([~to_second[~won], first[evicted] == sat])
    return None


def n_conjunctions(width: int, degree: int) -> int:
    """Σ_{j ≤ d} C(width, j): the conjunctions of ≤ d of `width` positions, ∅ included."""
    return sum(math.comb(width, j) for j in range(degree + 1))


def colex_combinations(width: int, degree: int) -> np.ndarray:
    """`[d, max_j C(width, j), d]`: for each size j (row j - 1), the position combinations
    of j of the first `width` positions in colex order (by largest position, then the
    next...), padded with 0. A combination's colex rank is Σ_i C(p_i, i + 1), so the combinations
    within the first b positions are the first C(b, j): over a row sorted by rank, those
    whose features are all dense, then those up to its last in-model feature."""
    # (a narrow row has more combinations of some smaller size than of d: C(4, 2) > C(4, 3))
    most = max(1, *(math.comb(width, j) for j in range(1, degree + 1)))
    out = np.zeros((degree, most, degree), np.int32)
    for j, combos in enumerate(combinations(width, degree), 1):
        out[j - 1, :len(combos), :j] = combos
    return out


def searched_bound(rank: np.ndarray, table: CommonPart, n_features: int, idx: np.ndarray,
                   present: np.ndarray) -> tuple[int, ...]:
    """Bounds, one per size j = 1..d, on the conjunctions of that size `table_margins`
    searches in one block of `idx` (`[blocks, B, k]` column ids, `present` flags; host): a
    row of a in-model features, b of them dense, searches C(a, j) − C(b, j) (the others
    have dense ids or no weight); the most a block needs, rounded up to a multiple of 512
    (few distinct programs)."""
    known = present & (idx >= 0) & (idx < n_features)
    r = np.where(known, np.asarray(rank)[np.where(known, idx, 0)], table.n_common)
    a = np.minimum(np.sum(r < table.n_common, axis=-1), table.width)
    b = np.minimum(np.sum(r < table.n_dense, axis=-1), a)
    out = []
    for j in range(1, table.degree + 1):
        count = binomials(table.width, table.degree)[:, j].astype(np.int64)
        most = int(np.sum(count[a] - count[b], axis=-1).max(initial=0))
        out.append(max(512, -(-most // 512) * 512))
    return tuple(out)


@stored_filter_jit
def table_margins(rank, weights, table: CommonPart, n_features: int, idx, present,
                  searched: tuple[int, ...], rare: RareSupport | None = None, visits: int = 0):
    """Σ c_|U| w_U over each row's conjunctions, block by block (`idx`, `present`:
    `[blocks, B, k]` column ids and nonzero flags). The columns are mapped to the table's
    features by `rank` (`table.n_common` for none) and each row sorted, so its b dense
    features come first, then its other in-model features up to position a. The dense
    conjunctions' weights are read at their arithmetic ids; the others, C(a, j) − C(b, j)
    of each size j (a contiguous range of colex ranks, `colex_combinations`), are packed
    for the block (at most `searched[j - 1]` of size j, `searched_bound`), keyed, searched
    in the table and added to their rows. No search runs for a dense conjunction or for
    padding. With `rare` (a split model's support vectors holding the features at or above
    `table.n_common`), each row's kernel part is added (`_holders.rare_block_margins`, at
    most `visits` support vectors a block)."""
    N, nd, W, d = table.n_common, table.n_dense, table.width, table.degree
    c = conjunction_coefficients(d)
    colex = jnp.asarray(colex_combinations(W, d))
    binom = jnp.asarray(binomials(W, d))
    base = N + 1
    kdt = table.keys.dtype
    scale = jnp.asarray([base ** i for i in range(d)], kdt)
    # ∅: dense id 0, or (no dense features) found in the table like any key
    if nd:
        empty = weights[0]
    else:
        empty = weights[jnp.minimum(table.offset + table.search(jnp.zeros((1,), kdt),
                                                               jnp.ones((1,), bool)),
                                    table.size)][0]

    def one(args):
        i, p = args
        known = p & (i >= 0) & (i < n_features)
        r = jnp.where(known, rank[jnp.where(known, i, 0)], N)
        kernel_part = (0 if rare is None
                       else rare_block_margins(jnp.where(known, r, rare.n_model), rare,
                                               d, visits))
        r = jnp.sort(jnp.minimum(r, N), axis=1)[:, :W]  # in-table features first, most
        B = r.shape[0]                                 # frequent first
        a = jnp.sum(r < N, axis=1)
        b = jnp.minimum(jnp.sum(r < nd, axis=1), a)
        # dense: every combination whose last (largest) feature is dense
        total = jnp.full((B,), c[0], weights.dtype) * empty + kernel_part
        for j, at in enumerate(table.dense_ids_of(r)[1:], 1):
            ok = at >= 0
            total = total + c[j] * jnp.sum(
                jnp.where(ok, weights[jnp.where(ok, at, 0)], 0), axis=1)
        # searched: per row and size j the colex ranks [C(b, j), C(a, j)), packed size by
        # size (at most `searched[j - 1]` a block)
        for j in range(1, d + 1):
            lo = binom[b, j]
            row, at, live = packed_slots(binom[a, j] - lo, searched[j - 1])
            rank_in = jnp.where(live, lo[row] + at, 0)
            pos = colex[j - 1, rank_in][:, :j]  # [S, j] positions
            f = r[row[:, None], pos].astype(kdt)  # [S, j] features, ascending
            key = jnp.sum((f + 1) * scale[None, :j], axis=1, dtype=kdt)
            found = table.search(jnp.where(live, key, 0), live)
            w = weights[jnp.minimum(table.offset + found, table.size)]
            total = total + jax.ops.segment_sum(jnp.where(live, c[j] * w, 0), row,
                                                num_segments=B)
        return total

    return jax.lax.map(one, (idx, present))
