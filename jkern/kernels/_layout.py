"""Where a Gram block's Delta entries live, and in what order they are computed.

A block's column side (`Columns`) groups its column trees' stored nodes by match key, then
arity class; each stored row node gets a run of buffer slots, one per member of its group
(`Layout.rows`), so the slot of Delta(q, v) is `row_off[q] + pos[v]`, and a child pair's
Delta is one gather. The entries are computed children first, in buckets of one height level
and one pair of padded arity classes (`Layout.order`), each bucket a few calls of one compiled
recurrence (`_recurrences.py`). Everything here depends on the forest and the kernel's plan
only, never on its parameters; column sides are kept for the blocks that share them.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .._unique import sorted_unique
from ..errors import TreeInputError
from ..trees._forest import Forest, concat_ranges
from ._timing import Seconds

if TYPE_CHECKING:
    from ._engine import MatchPlan

# Padded arity classes: a node of arity a is computed with the smallest class >= a.
CLASSES = np.array([0] + [2**i for i in range(15)], np.int64)  # up to 16,384
# The recurrences compile one program per pair of arity classes (q's, v's). Coarser pairs
# (both sides rounded up to 1, 4, 16, 64 or 256 children past 4) halved the programs when each
# cost 60-90 ms to build; with executables loaded from disk (~10 ms each) the padding cost
# more than they saved (UD GRCT PTK: 13.5 CPU-s coarse, 8.5 fine).
# Entries a recurrence call computes at once (its sub-chunk): about this many child-pair
# cells ([E, A, B] working set), at least _MIN_STEP entries. One length per arity-class pair.
STEP_CELLS = 1 << 13
_MIN_STEP = 64
# buf[0] is 0 (the "no match" slot), buf[1] holds residual mode's constant mu lam^2.
FIRST_SLOT = 2
# Smallest padded lengths of the forest arrays: forests up to this size share programs.
MIN_NODES = 1 << 16
# Column sides derived from a kept one (`Layout.columns`) kept apart: as many as blocks in
# flight, each asked for twice (sizing the block, computing it).
_SUFFIXES_KEPT = 4

# The most cells (child pairs) one entry of a recurrence may take at once: a node pair's
# [a, b] child-pair table in the subsequence family (PTK, SPTK) must fit, so those kernels
# take nodes of at most 2,048 children (2,048^2 = 2^22 cells, 32 MiB in float64); the
# aligned family (ST, SST) works on [a] and takes every class.
_MAX_CELLS = 1 << 22
MAX_ARITY = {"aligned": int(CLASSES[-1]), "subseq": 2048}


def arity_class(arity: np.ndarray, family: str) -> np.ndarray:
    """Each node's padded arity class (an index into `CLASSES`); a node past the family's
    limit is refused, named."""
    top = int(arity.max(initial=0))
    limit = MAX_ARITY[family]
    if top > limit:
        what = ("PTK and SPTK compare every pair of children of two nodes (a table of "
                f"a x b cells), and take nodes of at most {limit:,} children"
                if family == "subseq" else
                f"ST and SST take nodes of at most {limit:,} children")
        raise TreeInputError(f"a node has {top:,} children: {what}; split the node (e.g. "
                             "group a flat bag of words under intermediate nodes)",
                             node=int(np.argmax(arity)))
    return np.searchsorted(CLASSES, arity).astype(np.int64)


def ladder(n: int, least: int = 1 << 16, factor: int = 4) -> int:
    """A padded size for n on a coarse ladder (least, least * factor, ...): the compiled
    programs depend on these shapes, so few sizes mean few compilations across calls."""
    size = least
    while size < n:
        size *= factor
    return size


def bucket(n: int, multiple: int = 0) -> int:
    """A padded size for n: a multiple of `multiple`, else the next power of two (>= 64)."""
    if multiple:
        return max(multiple, -(-n // multiple) * multiple)
    return max(64, 1 << max(0, (n - 1).bit_length()))


def sub_chunk(a_pad: int, b_pad: int) -> int:
    """Entries computed at once for an arity-class pair: a power of two, about STEP_CELLS
    cells, at least _MIN_STEP entries."""
    cells = max(1, a_pad * b_pad)
    if cells * _MIN_STEP > _MAX_CELLS:  # past 256 children: bound the working set instead
        return max(1, _MAX_CELLS // cells)
    return max(_MIN_STEP, STEP_CELLS >> max(0, (cells - 1).bit_length()))


def trips(n: int) -> int:
    """A traced fill's static trip count: `n` rounded up to a power of two. The extra trips
    compute masked no-ops; in exchange, fills of other sizes (other blocks, other trees of
    a kernel being learned) reuse the same compiled programs instead of compiling their own."""
    return 1 << max(0, (int(n) - 1).bit_length())


@dataclasses.dataclass(frozen=True, eq=False)
class Columns:
    """The column side of a block (see `Layout.columns`).

    Attributes:
        trees: the column trees.
        node, tree, count: their matchable occurrences (forest node, column, count).
        members: the stored column nodes, sorted by match group then arity class.
        group_start, group_len: each group's run in `members`.
        pos: `int32[n_pad]` a member's position within its group (-1: not a member).
        occ_tree, occ_count, occ_start: the stored occurrences grouped by member
            (member i's run starts at `occ_start[i]`).
        key_sorted, by_key: the occurrences' keys sorted, and the sorting permutation.
    """

    trees: np.ndarray
    node: np.ndarray
    tree: np.ndarray
    count: np.ndarray
    members: np.ndarray
    group_start: np.ndarray
    group_len: np.ndarray
    pos: np.ndarray
    occ_tree: np.ndarray
    occ_count: np.ndarray
    occ_start: np.ndarray
    key_sorted: np.ndarray
    by_key: np.ndarray


class Layout:
    """The layout side of an engine: occurrences, column sides, row slots, entry order.

    Args:
        forest: the engine's forest.
        plan: the kernel's plan of it.
        aclass: each node's arity class (`arity_class`).
        stored: which nodes get Delta rows and columns.
        n_pad: the padded length of the node-indexed arrays.
        seconds: the engine's timer (column sides count as "columns").
        count: the engine's counter (`column_sides` planned).
    """

    def __init__(self, forest: Forest, plan: MatchPlan, aclass: np.ndarray, stored: np.ndarray,
                 n_pad: int, seconds: Seconds, count: Callable[..., None]) -> None:
        self.forest, self.plan, self.aclass, self.stored = forest, plan, aclass, stored
        self.n_pad = n_pad
        self._seconds, self._count = seconds, count
        self._lock = threading.Lock()
        self._cache: list[tuple[tuple, Columns]] = []  # the last two column sides
        self._suffixes: list[tuple[tuple, Columns]] = []  # the last derived ones
        self.base: Layout | None = None  # shared column sides (`GramEngine.share_columns`)

    def occurrences(self, trees: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(forest node, index into `trees`, count) of the matchable nodes of `trees`."""
        f = self.forest
        starts, ends = f.tree_ptr[trees], f.tree_ptr[trees + 1]
        idx = concat_ranges(starts, ends - starts)
        local = np.repeat(np.arange(len(trees)), ends - starts)
        node = f.count_node[idx]
        keep = self.plan.key[node] >= 0
        return node[keep], local[keep], f.count[idx][keep]

    def columns(self, col_trees: np.ndarray) -> Columns:
        """The column side of a block: it depends on the column trees only, so consecutive
        blocks against the same columns (a cross block's row blocks) share one, and a
        symmetric Gram's blocks (rows s:e against s:) derive theirs from the first one's."""
        with self._seconds.phase("columns"):
            return self._columns(col_trees)

    def _columns(self, col_trees: np.ndarray) -> Columns:
        col_trees = np.asarray(col_trees, np.int64)
        ident = (len(col_trees), hash(col_trees.tobytes()))
        with self._lock:
            for known, cols in self._cache + self._suffixes:
                if known == ident and np.array_equal(cols.trees, col_trees):
                    return cols
            # a symmetric Gram's blocks: rows s:e against s:, suffixes of its first columns
            base = next((c for _, c in self._cache if len(c.trees) > len(col_trees)
                         and np.array_equal(c.trees[len(c.trees) - len(col_trees):],
                                            col_trees)), None)
        if base is not None:  # derived, kept apart: it must not push the base out
            cols = self.suffix_columns(base, len(base.trees) - len(col_trees))
            with self._lock:  # (sizing a block and computing it ask for the same one)
                self._suffixes = [(ident, cols)] + self._suffixes[:_SUFFIXES_KEPT - 1]
            return cols
        cols = self.shared_columns(col_trees)
        if cols is None:
            cols = self.make_columns(col_trees)
            self._count(column_sides=1)
        with self._lock:
            self._cache = [(ident, cols)] + self._cache[:1]
        return cols

    def shared_columns(self, col_trees: np.ndarray) -> Columns | None:
        """The column side of `col_trees` from the layout this one shares with (`base`), or
        None. Members, occurrences and their orders are base's (its key order is kept); the
        group runs, the keys and the position table are this plan's."""
        base = self.base
        if base is None or not len(col_trees) or int(col_trees.min()) < 0 \
                or int(col_trees.max()) >= base.forest.n_trees:
            return None
        cols = base.columns(col_trees)
        key = self.plan.key
        group_start = np.searchsorted(key[cols.members].astype(np.int64),
                                      np.arange(self.plan.n_keys + 1))
        pos = cols.pos
        if len(pos) != self.n_pad:
            pos = np.full(self.n_pad, -1, np.int32)
            pos[: len(cols.pos)] = cols.pos
        return dataclasses.replace(
            cols, trees=col_trees, group_start=group_start, group_len=np.diff(group_start),
            pos=pos, key_sorted=key[cols.node[cols.by_key]].astype(np.int64))

    def suffix_columns(self, base: Columns, k: int) -> Columns:
        """`make_columns(base.trees[k:])`, the same arrays, filtered out of `base`'s: every
        order there (occurrences by tree, members by group, occurrences by member, by key) is
        stable, so dropping the first k trees' occurrences keeps it."""
        keep = base.tree >= k
        new_index = np.cumsum(keep) - 1
        # members still present: those with an occurrence in a kept tree (`occ_tree` runs
        # ascend within a member, so the run's last entry decides)
        occ_keep = base.occ_tree >= k
        kept_m = base.occ_tree[base.occ_start[1:] - 1] >= k
        members = base.members[kept_m]
        m_key = self.plan.key[members].astype(np.int64)
        group_start = np.searchsorted(m_key, np.arange(self.plan.n_keys + 1))
        pos = np.full(self.n_pad, -1, np.int32)
        pos[members] = np.arange(len(members)) - group_start[m_key]
        per_member = np.add.reduceat(occ_keep, base.occ_start[:-1])[kept_m] \
            if len(base.members) else np.zeros(0, np.int64)
        occ_start = np.concatenate([[0], np.cumsum(per_member)]).astype(base.occ_start.dtype)
        by_key_keep = keep[base.by_key]
        return Columns(
            trees=base.trees[k:], node=base.node[keep], tree=base.tree[keep] - k,
            count=base.count[keep], members=members, group_start=group_start,
            group_len=np.diff(group_start), pos=pos,
            occ_tree=base.occ_tree[occ_keep] - k, occ_count=base.occ_count[occ_keep],
            occ_start=occ_start, key_sorted=base.key_sorted[by_key_keep],
            by_key=new_index[base.by_key[by_key_keep]],
        )

    def make_columns(self, col_trees: np.ndarray) -> Columns:
        """The column side of `col_trees`, planned from their occurrences."""
        plan, stored = self.plan, self.stored
        c_node, c_tree, c_count = self.occurrences(col_trees)
        members = sorted_unique(c_node[stored[c_node]])
        m_key = plan.key[members].astype(np.int64)
        order = np.lexsort((self.aclass[members], m_key))
        members, m_key = members[order], m_key[order]
        group_start = np.searchsorted(m_key, np.arange(plan.n_keys + 1))
        group_len = np.diff(group_start)
        pos = np.full(self.n_pad, -1, np.int32)
        pos[members] = np.arange(len(members)) - group_start[m_key]
        # Stored occurrences grouped by member: the contraction's items.
        c_st = stored[c_node]
        pos_of = np.full(self.n_pad, -1, np.int64)
        pos_of[members] = np.arange(len(members))
        c_mem = pos_of[c_node[c_st]]
        by_mem = np.argsort(c_mem, kind="stable")
        occ_start = np.searchsorted(c_mem[by_mem], np.arange(len(members) + 1))
        # All matchable occurrences grouped by key (residual mode's constant part).
        ck = plan.key[c_node].astype(np.int64)
        by_key = np.argsort(ck, kind="stable")
        return Columns(
            trees=col_trees, node=c_node, tree=c_tree, count=c_count, members=members,
            group_start=group_start, group_len=group_len, pos=pos,
            occ_tree=c_tree[c_st][by_mem], occ_count=c_count[c_st][by_mem],
            occ_start=occ_start, key_sorted=ck[by_key], by_key=by_key,
        )

    def rows(self, row_nodes: np.ndarray, cols: Columns
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Buffer layout of a block: each stored row node q gets a run of slots, one per
        stored column node of its match group (`cols.members`, sorted by group then arity
        class). Returns (rows, r_key, r_off, row_off); the slot of Delta(q, v) is
        `row_off[q] + cols.pos[v]`."""
        rows = sorted_unique(row_nodes[self.stored[row_nodes]])
        r_key = self.plan.key[rows].astype(np.int64)
        r_len = cols.group_len[r_key]
        r_off = FIRST_SLOT + np.cumsum(r_len) - r_len
        row_off = np.full(self.n_pad, -1, np.int32)
        row_off[rows] = r_off
        return rows, r_key, r_off, row_off

    def order(self, rows: np.ndarray, ri: np.ndarray, members: np.ndarray, midx: np.ndarray,
              slots: np.ndarray
              ) -> tuple[Callable[[np.ndarray, int, int], None], np.ndarray, np.ndarray]:
        """The entries Delta(rows[ri], members[midx]) -> `slots`, children first: entries
        ordered by the row's height, then by arity-class pair, a bucket each (its code:
        (level * n_cls + q's class) * n_cls + v's class). Returns (entries, bucket, cuts):
        bucket k (code `bucket[k]`) is entries `cuts[k]:cuts[k + 1]`, which
        `entries(host, a, b)` writes into `host[:, :b - a]`, `int32[3, ...]` (q, v, slot)."""
        n_cls = len(CLASSES)
        r_height = self.forest.height[rows]
        levels = np.unique(r_height)
        r_code = (np.searchsorted(levels, r_height) * n_cls + self.aclass[rows]) * n_cls
        # 16-bit codes where they fit: numpy sorts them by radix
        ctype = np.uint16 if len(levels) * n_cls * n_cls <= 1 << 16 else np.int32
        code = np.take(r_code.astype(ctype), ri)
        code += np.take(self.aclass[members].astype(ctype), midx)
        order = None  # already in order (ST/SST: `PairFinder.pairs`)
        if self.plan.family != "aligned" or bool(np.any(code[1:] < code[:-1])):
            order = np.argsort(code, kind="stable")
        counts = np.bincount(code)
        buckets = np.flatnonzero(counts)
        cuts = np.concatenate([[0], np.cumsum(counts[buckets])])
        del code, counts
        rows32, members32 = rows.astype(np.int32), members.astype(np.int32)
        slots = slots.astype(np.int32, copy=False)

        def entries(host: np.ndarray, a: int, b: int) -> None:
            """Entries a:b in order, (q, v, buf slot), into host[:, :b - a]."""
            n = b - a  # (mode="clip": the indices are valid, and `out` is then unbuffered)
            if order is None:
                np.take(rows32, ri[a:b], out=host[0, :n], mode="clip")
                np.take(members32, midx[a:b], out=host[1, :n], mode="clip")
                host[2, :n] = slots[a:b]
                return
            pick = order[a:b]
            np.take(rows32, ri[pick], out=host[0, :n], mode="clip")
            np.take(members32, midx[pick], out=host[1, :n], mode="clip")
            np.take(slots, pick, out=host[2, :n], mode="clip")

        return entries, buckets, cuts
