"""Kernel slicing (Yoshinaga & Kitsuregawa), and the driver of the splitting and slicing modes.

With x's features in frequency order f_1, f_2, ... and prefixes x^j = {f_1..f_j}, the margin
telescopes into partial margins

    m(x) = Σ_s α_s k(s, x^0) + Σ_j m^j,   m^j = Σ_s α_s [k(s, x^j) − k(s, x^{j−1})],

and a term of m^j is 0 unless f_j ∈ s, where it is α_s [(1 + a)^d − a^d] with a = |s ∩ x^j|.
m^j depends only on the prefix x^j, which many examples share (the common features come
first). So each prefix is a node of a trie holding its last partial margin and a time stamp;
on a revisit only the updates logged since (each update is an event (slot, Δα), in the index
segment of every rare feature its vector holds) are added.

Prefixes of common features (ids < N) are not cached: their m^j together are the explicit
part w_C φ_d(x_C) of kernel splitting (`_split`), computed from the conjunction weights; the
trie caches the prefixes that end in a rare feature.

Host and device: the trie is static — the training rows are known, so every prefix gets a
node id once, on the host (`prefix_nodes`: one `np.unique` per position), and a row carries
the node of each of its rare positions. The caches (node margins and stamps, the event log,
the index) are device arrays updated inside the jitted `lax.scan` step. Only the index's
size is decided on the host: before each epoch, every rare feature's segment must have room
for one more event per occurrence of the feature (`ensure_room`, which doubles full segments;
a grown index recompiles the step).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._executables import stored_filter_jit
from .._sparse import SparseRows
from .._validate import to_device
from ._data import frequency_order
from ._split import (
    SplitInstance,
    SplitPA,
    SplitState,
    choose_table,
    common_part,
    first_rows,
    posting_starts,
)
from ._table import CommonPart, KeptIds, chunk_rows, packed_chunks

CHUNK_VISITS = 4096  # visits whose conjunction ids are searched in one batch
IDS_BYTES = 2**30  # keep every example's searched conjunction ids when they fit


def prefix_nodes(indices: np.ndarray, n_common: int, n_features: int
                 ) -> tuple[np.ndarray, int]:
    """The trie node of each rare position of frequency-ordered rows (`indices` `[n, k]`,
    ascending, padding = n_features): equal prefixes (up to and including the position),
    equal nodes. Other positions get the sentinel n_nodes.

    >>> rows = np.array([[0, 2, 3], [0, 2, 4], [0, 2, 3], [1, 2, 5]])
    >>> prefix_nodes(rows, 2, 6)
    (array([[5, 0, 2],
           [5, 0, 3],
           [5, 0, 2],
           [5, 1, 4]], dtype=int32), 5)
    """
    n, k = indices.shape
    parent = np.zeros(n, np.int64)
    ids = np.empty((n, k), np.int64)
    offset = 0
    for j in range(k):
        key = parent * (n_features + 2) + indices[:, j].astype(np.int64) + 1
        _, inv = np.unique(key, return_inverse=True)
        parent = inv.reshape(-1)
        ids[:, j] = offset + parent
        offset += int(parent.max(initial=-1)) + 1
    rare = (indices >= n_common) & (indices < n_features)
    used, inv = np.unique(ids[rare], return_inverse=True)
    nodes = np.full((n, k), len(used), np.int64)
    nodes[rare] = inv.reshape(-1)
    return nodes.astype(np.int32), len(used)


def ensure_room(state: SplitState, need: np.ndarray, events: int) -> SplitState:
    """`state` with room for `need[f]` more entries in every segment of the index and
    `events` more events: full segments double (to at least what they need), the index and
    the event log are re-laid out on the host (sizes rounded up to powers of two, so a run
    recompiles a few times at most)."""
    start = np.asarray(state.post_start).astype(np.int64)
    count = np.asarray(state.post_count).astype(np.int64)
    room = start[1:] - start[:-1]
    if np.all(count + need <= room):
        new_start = None
    else:
        grown = np.where(count + need > room, np.maximum(2 * room, count + need), room)
        new_start = np.concatenate([[0], np.cumsum(grown)])
        size = max(1 << int(new_start[-1] - 1).bit_length(), len(state.post))
        post = np.zeros(size, np.int32)
        old = np.asarray(state.post)
        f = np.repeat(np.arange(len(count)), count)
        within = np.arange(len(f)) - np.repeat(np.cumsum(count) - count, count)
        post[new_start[f] + within] = old[start[f] + within]
        state = state._replace(post=to_device(post),
                               post_start=to_device(new_start, jnp.int32))
    E = state.events.shape[0]
    used = int(state.n_events)
    if used + events > E:
        size = 1 << int(used + events - 1).bit_length()
        state = state._replace(
            events=jnp.zeros((size,), state.events.dtype).at[:E].set(state.events),
            event_alpha=jnp.zeros((size,), state.event_alpha.dtype).at[:E].set(
                state.event_alpha))
    return state


def kept_ids(common: CommonPart, indices: Array, epochs: int) -> KeptIds | None:
    """The table ids of every row's searched conjunctions (`KeptIds`: the rows of
    `indices`, ascending), searched once, CHUNK_VISITS rows at a time, to serve every epoch
    (`CommonPart.ids_from` computes the dense ids), when there are several epochs, more
    rows than one chunk and the ids fit IDS_BYTES; else None, and each chunk of visits
    searches its own (a single chunk costs less to search again than to compile a second
    search). Where every common conjunction is dense (no table) nothing is searched or
    kept. Each chunk is one program on the device: its searched conjunctions enumerated
    packed (`CommonPart.searched_keys`), searched, and written into the kept ids."""
    n = indices.shape[0]
    if not keeps_ids(n, epochs):
        return None
    host = np.asarray(indices)  # (chunks cut on the host: no slicing program)
    count = common.searched_counts(host)
    start = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=start[1:])
    E = int(start[-1])
    if E * 4 > IDS_BYTES or E >= 2**31:
        return None
    if E == 0:
        return KeptIds(to_device(np.zeros((1,), np.int32)), to_device(start.astype(np.int32)))
    _, size = packed_chunks(count, CHUNK_VISITS)
    # each chunk writes `size` ids from its start: the next overwrites what lies past
    # its own (the sink), and the last's spill lands in the padding
    flat = jnp.zeros((E + size,), jnp.int32)
    for at in range(0, n, CHUNK_VISITS):
        rows = chunk_rows(host, at, CHUNK_VISITS, common.n_common)
        flat = _put_piece(flat, _searched_ids(common, to_device(rows), size), int(start[at]))
    return KeptIds(flat, to_device(start.astype(np.int32)))


def keeps_ids(n: int, epochs: int) -> bool:
    """Whether `kept_ids` keeps the ids of `n` rows for `epochs` epochs (when they fit)."""
    return epochs >= 2 and n > CHUNK_VISITS


@stored_filter_jit
def _searched_ids(common: CommonPart, rows, size: int):
    """`[size]` the table ids of `rows`' searched conjunctions, packed
    (`CommonPart.searched_keys`; the sink past them)."""
    key, live = common.searched_keys(rows, size)
    return (common.offset + common.search(key, live)).astype(jnp.int32)


def dense_seen(common: CommonPart, indices: Array) -> np.ndarray:
    """`[offset]` which dense conjunctions occur in the rows of `indices`, computed a chunk
    at a time."""
    seen = to_device(np.zeros((common.offset + 1,), bool))  # the last: every other id
    rows = np.asarray(indices)
    n = rows.shape[0]
    step = CHUNK_VISITS
    for start in range(0, n, step):
        start = max(0, min(start, n - step))  # marking twice is harmless: one shape
        seen = _mark_rows(seen, common, to_device(rows[start:start + step]))
    return np.asarray(seen)[:-1]


@stored_filter_jit(donate=(0,))  # (marked in place: not a copy of the flags per chunk)
def _mark_rows(seen, common: CommonPart, rows):
    dense = jnp.concatenate(common.dense_ids_of(rows), axis=-1)  # (no keys: none searched)
    return seen.at[jnp.where(dense >= 0, dense, seen.shape[0] - 1)].set(True)


@functools.partial(jax.jit, donate_argnums=0)
def _put_piece(out, piece, start):
    return jax.lax.dynamic_update_slice(out, piece, (start,))


@stored_filter_jit
def _run(learner: SplitPA, state: SplitState, data: SplitInstance, y, order, mask, kept,
         record: bool, block: int):
    """Visit `order` (`[chunks, CHUNK_VISITS]`, `mask` False on padding): per chunk, the
    common-conjunction ids of its examples (the searched ones from `kept`, `KeptIds`, when
    every example's were searched once; else one batched search), then blocks of `block` examples
    (`SplitPA.step_block`)."""
    size = order.shape[1]

    def chunk(state, args):
        pos, valid = args
        rows = data.indices[pos]
        ids = (learner.common.ids(rows) if kept is None
               else learner.common.ids_from(rows, kept, pos))
        pos, valid = pos.reshape(-1, block), valid.reshape(-1, block)
        ids = ids.reshape(pos.shape + ids.shape[1:])

        def visit(state, t):
            xs = jax.tree.map(lambda a: a[pos[t]], data)
            state, m, upd = learner.step_block(state, xs, y[pos[t]], ids[t], valid[t])
            return state, (m if record else None, upd)

        return jax.lax.scan(visit, state, jnp.arange(size // block))

    state, (ms, upds) = jax.lax.scan(chunk, state, (order, mask))
    return state, (None if ms is None else ms.reshape(-1), upds.reshape(-1))


def fit_split(X: SparseRows, y: Any, uids: np.ndarray, n_vectors: int, *, C: Any,
              degree: int, epochs: int, textbook: bool, exact: bool, capacity: int,
              slicing: bool, n_common: int | None, memory_budget: int, record: bool,
              dtype: Any, block: int = 32, orders: np.ndarray | None = None
              ) -> tuple[SplitState, Any, Any, np.ndarray, int]:
    """Run PA-I by splitting or slicing over `epochs` passes (binary X), visiting the
    examples in `orders[e]` in epoch e (`[epochs, n]`; None: file order).

    Returns (final state, margins `[epochs, n]` or None, updated `[epochs, n]`, both in
    visiting order, the original id of each frequency-ordered feature, N)."""
    order = frequency_order(X)
    Xf, _ = order.apply(X)
    F = Xf.n_features
    keys = None
    if n_common is None:
        n_common, keys = choose_table(Xf, degree, memory_budget)
    n_common = max(0, min(int(n_common), F))
    idx = np.where(np.asarray(Xf.values) != 0, np.asarray(Xf.indices), F).astype(np.int32)
    common = common_part(Xf, degree, n_common, keys)
    learner = SplitPA(C, common, degree=degree, textbook=textbook, exact=exact, n_features=F,
                      slicing=slicing)
    n = idx.shape[0]
    if slicing:
        nodes, n_nodes = prefix_nodes(idx, n_common, F)
        starts = posting_starts(Xf, np.arange(n), n_common, per_row=2)
    else:
        nodes, n_nodes = np.zeros((n, 1), np.int32), 0
        starts = posting_starts(Xf, first_rows(uids, n_vectors), n_common)
    state = learner.init(capacity=capacity, width=idx.shape[1], n_vectors=n_vectors,
                         post_start=starts, n_nodes=n_nodes,
                         n_events=1 << (2 * n - 1).bit_length() if slicing else 0,
                         dtype=dtype)
    data = SplitInstance(jnp.asarray(idx), jnp.asarray(uids), jnp.asarray(nodes))
    need = np.bincount(idx[(idx >= n_common) & (idx < F)], minlength=F) if slicing else None
    yj = jnp.asarray(y)
    size = -(-min(CHUNK_VISITS, n) // block) * block
    pad = -n % size
    def chunked(order: np.ndarray):
        return jnp.asarray(np.concatenate([order, np.zeros(pad, np.int64)])
                           .astype(np.int32).reshape(-1, size))

    in_file_order = chunked(np.arange(n))
    mask = jnp.asarray(np.arange(n + pad).reshape(-1, size) < n)
    kept = kept_ids(common, data.indices, epochs)
    ms, upds = [], []
    for epoch in range(epochs):
        if need is not None:
            state = ensure_room(state, need, n)
        visits = in_file_order if orders is None else chunked(orders[epoch])
        state, (m, u) = _run(learner, state, data, yj, visits, mask, kept, record, block)
        ms.append(None if m is None else m[:n])
        upds.append(u[:n])
    margins = jnp.stack(ms) if record else None
    return state, margins, jnp.stack(upds), np.asarray(order.original), n_common
