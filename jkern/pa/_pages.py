"""Row pages: each training row's weight ids packed without the padding, for the epochs.

`CommonPart.ids` gives every row K ids: one per position of ≤ d of the common width's
features, whatever the row's own width, so a row of 8 common features in a table of width 20
(d = 3: K = 1,351) gathers 1,351 weights of which 93 at most are its own; the rest are the
sink. Where rows' widths vary (conj-2: a block of 32 rows holds about 13,000 live ids in
43,232 positions, `experiments/probes/pa_speed/live_ids.py`), the epochs' margin gathers are
mostly padding. `row_pages` packs each row's live ids (those not the sink) once per fit into
pages of PAGE ids, all of one conjunction size, so that a page has one margin coefficient
c_|U|; a block of B visits gathers the pages of its rows only (`block_pages`): `per_block`
pages, the most any block of the fit's visits needs.

The margins are the same sums over the same ids (the sink and the padding weigh 0): in exact
mode the same integers; in floating point the same terms summed in another order.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Int

from .._executables import stored_filter_jit
from .._validate import aligned_empty, shared_on_cpu, to_device
from ._table import CommonPart, KeptIds, binomials, chunk_rows

PAGE = 16  # ids per page: few wasted slots per (row, size), rows of whole cache lines
GAIN = 0.75  # pages are used where a block's pages hold at most this share of its K ids each
CHUNK_ROWS = 4096  # rows whose ids are computed in one program (the pages, the row ids)
# every row's ids (dense ones included) are kept when they fit this: a dense id costs a few
# additions to compute again at each visit, not a search, so fewer bytes buy it (conj-2 at
# d = 2: 42 MB, the epochs 0.2 CPU s faster; UD at d = 2 would take 95 MB)
ROW_IDS_BYTES = 64 * 2**20


class RowPages(NamedTuple):
    """Every training row's live weight ids, in pages of one conjunction size each.

    Attributes:
        ids: `[pages + 1, PAGE]` the ids (the sink past each run of live ids; the last page
            all sink: what padding pages read).
        size: `[pages + 1]` int8 the conjunction size of each page's ids.
        start: `[n + 1]` row r's pages are `[start[r], start[r + 1])`.
        per_block: the pages a block of visits gathers (static: the most any block needs).
    """

    ids: Int[Array, "P1 16"]
    size: Int[Array, " P1"]
    start: Int[Array, " n1"]
    per_block: int


def size_bounds(common: CommonPart) -> np.ndarray:
    """`[d + 2]` where each size's positions start in `ids`' last axis (∅ first)."""
    counts = binomials(common.width, common.degree)[common.width].astype(np.int64)
    return np.concatenate([[0], np.cumsum(counts)])


def bound_pages(common: CommonPart, idx: np.ndarray) -> np.ndarray:
    """`[n]` the most pages each row can fill: every one of its conjunctions of common
    features live (`idx` `[n, k]` sorted rows, host)."""
    below = common.below or common.n_common
    a = np.minimum((idx < below).sum(axis=1), common.width)
    per_size = binomials(common.width, common.degree)[a].astype(np.int64)  # [n, d + 1]
    return np.sum(-(-per_size // PAGE), axis=1)  # (∅: C(a, 0) = 1, one page)


def most_per_block(pages: np.ndarray, order: np.ndarray, mask: np.ndarray,
                   block: int) -> int:
    """The most pages a block of `block` visits gathers (`order`, `mask`: `[chunks, size]`,
    the visit stream; padding visits gather none), rounded up to a multiple of 8."""
    per_visit = np.where(mask, pages[order], 0).reshape(-1, block).sum(axis=1)
    return max(8, -(-int(per_visit.max(initial=0)) // 8) * 8)


def worth_paging(common: CommonPart, idx: np.ndarray, order: np.ndarray, mask: np.ndarray,
                 block: int) -> bool:
    """Whether pages save enough of the gathers: a block's pages, bounded from the rows'
    widths alone (no ids computed), at most GAIN of its `block` × K ids."""
    if common.degree < 2 or len(idx) == 0:
        return False
    bound = most_per_block(bound_pages(common, idx), order, mask, block)
    return bound * PAGE <= GAIN * block * common.n_ids


@stored_filter_jit
def _chunk_ids(common: CommonPart, kept: KeptIds, rows, at):
    """`[CHUNK_ROWS, K]` the ids of rows `at`, `at + 1`, … (`rows` those rows)."""
    pos = at + jnp.arange(rows.shape[0], dtype=jnp.int32)
    pos = jnp.minimum(pos, kept.start.shape[0] - 2)  # the padding rows read the last row's
    return common.ids_from(rows, kept, pos)


def _host_chunk_ids(common: CommonPart, kept: KeptIds, idx: np.ndarray, at: int
                    ) -> np.ndarray:
    """`[min(CHUNK_ROWS, n - at), K]` the ids of rows `at`, `at + 1`, … of the `[n, k]`
    sorted host rows `idx` (`_chunk_ids`, one program whatever the chunk)."""
    rows = chunk_rows(idx, at, CHUNK_ROWS, common.n_common)
    ids = np.asarray(_chunk_ids(common, kept, to_device(rows, jnp.int32),
                                to_device(np.int32(at))))
    return ids[: min(CHUNK_ROWS, len(idx) - at)]


def kept_row_ids(common: CommonPart, kept: KeptIds, idx: np.ndarray) -> Array | None:
    """`[n, K]` every row's weight ids (`CommonPart.ids_from`: the dense ones computed, the
    searched ones read from `kept`) of the `[n, k]` sorted host rows `idx`, computed once for
    the epochs (which then gather them instead of computing them at every visit), or None
    where they take more than ROW_IDS_BYTES. A program per CHUNK_ROWS rows; the host array is
    shared with JAX (no second copy)."""
    n = len(idx)
    if n * common.n_ids * 4 > ROW_IDS_BYTES:
        return None
    out = aligned_empty((n, common.n_ids), np.int32)
    for at in range(0, n, CHUNK_ROWS):
        out[at:at + CHUNK_ROWS] = _host_chunk_ids(common, kept, idx, at)
    return shared_on_cpu(out)


def row_pages(common: CommonPart, kept: KeptIds, idx: np.ndarray, order: np.ndarray,
              mask: np.ndarray, block: int, max_bytes: int) -> RowPages | None:
    """The pages of the `[n, k]` sorted training rows `idx` (host) from their kept ids, or
    None where they could take more than `max_bytes`. One pass over the rows, a program per
    CHUNK_ROWS rows computing their ids; the host packs each row's live ids of each size
    into its pages, in a buffer sized by `bound_pages` (every conjunction live)."""
    n = len(idx)
    bounds = size_bounds(common)
    sizes = len(bounds) - 1
    room = int(bound_pages(common, idx).sum()) + 1
    if room * PAGE * 4 > max_bytes:
        return None
    # reserved, not touched: only the pages written become resident (a large np.empty is
    # a fresh mapping), and the JAX array shares them (`shared_on_cpu`)
    out = np.empty((room, PAGE), np.int32)
    flat = out.reshape(-1)
    pages = np.zeros((n, sizes), np.int64)
    used = 0  # pages written so far (the rows before the chunk)
    for at in range(0, n, CHUNK_ROWS):
        ids = _host_chunk_ids(common, kept, idx, at)
        got = ids < common.size
        live = np.stack([got[:, bounds[j]:bounds[j + 1]].sum(axis=1) for j in range(sizes)],
                        axis=1)
        mine = pages[at:at + len(ids)]
        mine[:] = -(-live // PAGE)
        first = used + (np.cumsum(mine.ravel()) - mine.ravel()).reshape(mine.shape)
        out[used:used + int(mine.sum())] = common.size  # the sink past each run
        used += int(mine.sum())
        for j in range(sizes):
            part, ok = ids[:, bounds[j]:bounds[j + 1]], got[:, bounds[j]:bounds[j + 1]]
            values = part[ok]  # row by row, each row's in position order
            count = live[:, j]
            # a row's k-th live id of this size goes to slot k of its pages, flat
            shift = first[:, j] * PAGE - (np.cumsum(count) - count)
            flat[np.arange(len(values)) + np.repeat(shift, count)] = values
    start = np.zeros(n + 1, np.int64)
    np.cumsum(pages.sum(axis=1), out=start[1:])
    size = np.append(np.repeat(np.tile(np.arange(sizes, dtype=np.int8), n), pages.ravel()),
                     np.int8(0))
    out[used] = common.size  # the all-sink page
    per_block = most_per_block(np.diff(start), order, mask, block)
    return RowPages(shared_on_cpu(out[: used + 1]), to_device(size),
                    to_device(start.astype(np.int32)), per_block)


class BlockPages(NamedTuple):
    """A block of visits as the pages of their rows (`block_pages`), for
    `ExplicitPA.block_steps` in place of an `ExpandedInstance` (step coefficients 1).

    Attributes:
        ids: `[P, PAGE]` the weight ids.
        coef: `[P]` each page's margin coefficient c_|U| (0 on padding pages).
        row: `[P]` the block position each page belongs to (sorted).
        sq_norm: `[B]` |x| of each visit's example (the step's divisor).
    """

    ids: Int[Array, "P 16"]
    coef: Array
    row: Int[Array, " P"]
    sq_norm: Array


def block_pages(pages: RowPages, pos: Int[Array, " B"], valid: Array,
                coefficients: Array, sq_norm: Array) -> BlockPages:
    """The pages of the rows `pos` (a block of visits; `valid` False: a padding visit, no
    pages), in block order, padded to `pages.per_block` with the all-sink page;
    `coefficients` `[d + 1]` c_j by size; `sq_norm` `[B]` the visits' |x|."""
    P = pages.per_block
    lo = pages.start[pos]
    count = jnp.where(valid, pages.start[pos + 1] - lo, 0)
    end = jnp.cumsum(count)
    # page j belongs to the first row whose run ends past j
    row = jnp.cumsum(jnp.zeros((P + 1,), jnp.int32).at[end].add(1, mode="drop")[:P])
    row = jnp.minimum(row, pos.shape[0] - 1)
    j = jnp.arange(P, dtype=end.dtype)
    live = j < end[-1]
    page = jnp.where(live, lo[row] + j - (end[row] - count[row]), pages.ids.shape[0] - 1)
    coef = jnp.where(live, coefficients[pages.size[page]], 0)
    return BlockPages(pages.ids[page], coef, row, sq_norm)


def page_margins(w: Array, pages: BlockPages, n_rows: int) -> Array:
    """`[n_rows]` Σ c_|U| w_U over each block row's pages."""
    per_page = pages.coef.astype(w.dtype) * jnp.sum(w[pages.ids], axis=1)
    return jax.ops.segment_sum(per_page, pages.row, n_rows, indices_are_sorted=True)


def page_add(w: Array, pages: BlockPages, step: Array) -> Array:
    """w with `step[r]` added at every id of row r's pages (the sink's slot, the last, reset
    to 0). (The whole block's pages: a loop over the updated rows' own pages measured
    slower on conj-2 at d = 3, 2.31 against 1.01 CPU s of epochs.)"""
    add = jnp.broadcast_to(step[pages.row][:, None], pages.ids.shape)
    return w.at[pages.ids].add(add).at[-1].set(0)
