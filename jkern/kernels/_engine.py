"""The forest Gram engine's host side: planning which Delta entries to compute, and where.

For a block of row trees and a set of column trees, every distinct subtree q of the row trees
gets a *row* of Delta(q, v) over the column subtrees v that can match it (same match key:
production for ST/SST, label for PTK, PoS class for SPTK's lexical nodes). Rows are filled
level by level (a node's height), each level as a few calls of the compiled recurrences
(`_recurrences.py`), bucketed by the padded arities of q and v. A child pair's Delta is one
gather from the rows of the level below. The block of the Gram matrix is then
    G[block, cols] = A_rows  (Delta rows . A_cols^T),
the second factor a segment sum over the column trees' occurrences. Only matchable pairs are
ever touched; symmetric Grams compute each block against the trees at or after it only, and
a block of self-kernels (`GramEngine.diag_block`) only the pairs that share a tree.

Every array the compiled programs see is padded to a few sizes (the forest arrays to at
least 2^16 nodes, buffers on a ladder of powers of 4, one chunk length per arity-class pair),
so the programs a kernel setting compiles are few and shared by every block and every call.
`_schedule.py` spreads blocks over threads and devices.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._cache import jit
from .._unique import sorted_unique
from .._validate import is_traced
from ..errors import InputError, TreeInputError
from ..trees._forest import Forest, concat_ranges
from ._budget import BYTES_PER_DIAG_PAIR, Budget, check_block
from ._recurrences import (
    DeviceForest,
    Params,
    accumulate,
    accumulate_traced,
    batch_size,
    fill_entries,
    fill_entries_traced,
    new_buffer,
    params_traced,
    zeros,
)

# Padded arity classes: a node of arity a is computed with the smallest class >= a.
_CLASSES = np.array([0] + [2**i for i in range(15)], np.int64)  # up to 16,384
# The recurrences compile one program per pair of arity classes (q's, v's). Coarser pairs
# (both sides rounded up to 1, 4, 16, 64 or 256 children past 4) halved the programs when each
# cost 60-90 ms to build; with executables loaded from disk (~10 ms each) the padding cost
# more than they saved (UD GRCT PTK: 13.5 CPU-s coarse, 8.5 fine).
# Entries a recurrence call computes at once (its sub-chunk): about this many child-pair
# cells ([E, A, B] working set), at least _MIN_STEP entries. One length per arity-class pair.
_STEP_CELLS = 1 << 13
_MIN_STEP = 64
# Contraction items per scatter call.
_SCATTER_CHUNK = 1 << 18
# buf[0] is 0 (the "no match" slot), buf[1] holds residual mode's constant mu lam^2.
_FIRST_SLOT = 2
# Residual-mode pair selection: groups with at least this many (row, member) candidates are
# tested as one dense bitset outer product; candidate arrays are built in chunks of this size.
_DENSE_GROUP = 1 << 16
_PAIR_CHUNK = 1 << 20
# Sorted Delta entries go to the device in pieces of this many entries.
_PIECE = 1 << 19
# Smallest padded lengths of the forest arrays: forests up to this size share programs.
_MIN_NODES = 1 << 16
# Smallest Delta buffer (slots): zeroing it per block costs well under a millisecond, and
# every small and medium block then shares one size, so one set of programs.
_MIN_BUFFER = 1 << 20
# Largest buffer a row block may need: bigger blocks are split by rows (`block_slots`), so
# a block's working set stays bounded whatever the corpus (a single row may exceed it).
MAX_BUFFER = 1 << 22
# Buffer sizes used so far in this process, per (kernel family, forest padding, dtype): a
# later engine reuses one (and its compiled programs) rather than compile for a new size.
_BUFFER_SIZES: dict[tuple, set[int]] = {}
_SIZES_LOCK = threading.Lock()


# The most cells (child pairs) one entry of a recurrence may take at once: a node pair's
# [a, b] child-pair table in the subsequence family (PTK, SPTK) must fit, so those kernels
# take nodes of at most 2,048 children (2,048^2 = 2^22 cells, 32 MiB in float64); the
# aligned family (ST, SST) works on [a] and takes every class.
_MAX_CELLS = 1 << 22
MAX_ARITY = {"aligned": int(_CLASSES[-1]), "subseq": 2048}


def _arity_class(arity: np.ndarray, family: str) -> np.ndarray:
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
    return np.searchsorted(_CLASSES, arity).astype(np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class MatchPlan:
    """What a kernel family needs to know about a forest (host side, parameter free).

    Attributes:
        family: "aligned" (ST/SST: children matched position by position) or "subseq"
            (PTK/SPTK: child subsequences).
        key: `int32[F]` match group of each node, -1 where the node takes no part.
        n_keys: number of groups.
        plus_one: SST's (1 + Delta(child)) factors; False gives ST's plain product.
        max_subseq: PTK's limit on child-subsequence length (None: no limit).
        vec_index: `int32[F]` row of a node in the similarity table (SPTK), -1 if none.
        composed: (CSPTK) `int32[P, 2]`: the word rows (head, modifier) of the head-modifier
            pairs whose composed vectors are rows V..V+P-1 of the similarity table (V the
            word vectors' rows); `vec_index` points there for compositional nodes.
        residual: (PTK) every same-group pair has Delta = mu lam^2 + R with R = 0 unless both
            nodes are internal and share a child key. Only R is stored and computed, only
            where it can be non-zero; the constant part is contracted per group.
    """

    family: str
    key: np.ndarray
    n_keys: int
    plus_one: bool = True
    max_subseq: int | None = None
    vec_index: np.ndarray | None = None
    residual: bool = False
    composed: np.ndarray | None = None


def _child_key_bits(f: Forest, key: np.ndarray, n_keys: int) -> np.ndarray:
    """`uint64[2, F]`: a bitset of each node's child keys (word 0: the 64 most frequent
    child keys, one bit each; word 1: the others, hashed)."""
    parent = np.repeat(np.arange(f.n_nodes), f.arity)
    ck = key[f.child_flat].astype(np.int64)
    parent, ck = parent[ck >= 0], ck[ck >= 0]
    top = np.argsort(-np.bincount(ck, minlength=n_keys), kind="stable")[:64]
    bit = np.full(n_keys, -1, np.int64)
    bit[top] = np.arange(len(top))
    b = bit[ck]
    word = (b < 0).astype(np.int64)
    b = np.where(b < 0, (ck * 2654435761) % 64, b)
    mask = np.zeros((2, f.n_nodes), np.uint64)
    np.bitwise_or.at(mask, (word, parent), np.left_shift(np.uint64(1), b.astype(np.uint64)))
    return mask


def _ladder(n: int, least: int = 1 << 16, factor: int = 4) -> int:
    """A padded size for n on a coarse ladder (least, least * factor, ...): the compiled
    programs depend on these shapes, so few sizes mean few compilations across calls."""
    size = least
    while size < n:
        size *= factor
    return size


def _bucket(n: int, multiple: int = 0) -> int:
    """A padded size for n: a multiple of `multiple`, else the next power of two (>= 64)."""
    if multiple:
        return max(multiple, -(-n // multiple) * multiple)
    return max(64, 1 << max(0, (n - 1).bit_length()))


@dataclasses.dataclass(frozen=True, eq=False)
class _Columns:
    """The column side of a block (see `GramEngine._columns`).

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


@dataclasses.dataclass
class Counts:
    """Work counters: they do not drift with the machine."""

    delta_entries: int = 0  # Delta(q, v) values computed (distinct subtree pairs)
    constant_entries: int = 0  # residual mode: same-group pairs skipped (Delta = mu lam^2)
    node_pairs: int = 0  # matched node pairs these stand for (sum over tree pairs)
    blocks: int = 0
    column_sides: int = 0  # column sides planned (`GramEngine._columns`; not the shared ones)

    @property
    def delta_evals(self) -> int:
        """Delta evaluations: the distinct pairs computed plus the constant ones."""
        return self.delta_entries + self.constant_entries


class GramEngine:
    """Computes Gram blocks of one forest for one kernel family.

    Args:
        forest: the forest of all trees involved (rows and columns).
        plan: the kernel family's view of the forest.
        dtype: float32 or float64.
    """

    def __init__(self, forest: Forest, plan: MatchPlan, dtype: Any) -> None:
        self.forest = forest
        self.plan = plan
        self.dtype = jnp.dtype(dtype)
        f = forest
        self._aclass = _arity_class(f.arity, plan.family)
        key = plan.key.astype(np.int32)
        vec_index = plan.vec_index if plan.vec_index is not None else np.full_like(key, -1)
        # Device arrays padded to a few lengths: the compiled recurrences depend on their
        # shapes, so forests of similar size share compilations.
        self._n_pad = n_pad = _ladder(f.n_nodes + 1, _MIN_NODES)
        pad = max(int(_CLASSES[self._aclass.max(initial=0)]), 1)
        flat = np.zeros(_ladder(len(f.child_flat) + pad, 2 * _MIN_NODES), np.int32)
        flat[: len(f.child_flat)] = f.child_flat

        def padded(a, fill):
            out = np.full(n_pad, fill, np.int32)
            out[: len(a)] = a
            return _concrete(out)

        self.dev = DeviceForest(
            arity=padded(f.arity, 0),
            child_start=padded(f.child_start, 0),
            child_flat=_concrete(flat),
            key=padded(key, -1),
            label=padded(f.label, -1),
            vec_index=padded(vec_index.astype(np.int32), -1),
        )
        self._static = (plan.family, plan.plus_one, plan.max_subseq, plan.vec_index is not None,
                        plan.residual)
        # Nodes that get Delta rows/columns: all matchable ones, or (residual) internal ones.
        self._stored = key >= 0
        if plan.residual:
            self._stored &= f.arity > 0
            self._mask = _child_key_bits(f, key, plan.n_keys)
        self._composed = None
        if plan.composed is not None:  # padded: one compiled table program per ladder size
            pairs = np.zeros((_ladder(len(plan.composed) + 1, 64), 2), np.int32)
            pairs[: len(plan.composed)] = plan.composed
            self._composed = _concrete(pairs)
        self.counts = Counts()
        # Padded sizes only grow over the engine's calls (fewer shapes, fewer programs).
        self._buf_size = self._rows_pad = 0
        self._lock = threading.Lock()  # blocks run on several threads (compute_gram)
        self._dev_on: dict = {}  # per-device copies of `dev` (compute_gram's `devices`)
        self._col_cache: list[tuple[tuple, _Columns]] = []  # the last two column sides
        self._columns_from: GramEngine | None = None  # `share_columns`

    def _count(self, **added: int) -> None:
        with self._lock:
            for name, value in added.items():
                setattr(self.counts, name, getattr(self.counts, name) + int(value))

    def _grow(self, attr: str, size: int) -> int:
        """Keeps a padded size monotone over calls (fewer shapes, fewer compilations)."""
        with self._lock:
            setattr(self, attr, max(getattr(self, attr), size))
            return getattr(self, attr)

    def resolve_params(self, params: Params) -> Params:
        """The parameters the recurrences read: CSPTK's composition matrices turned into the
        composed vectors of this forest's head-modifier pairs, appended to the word vectors
        (computed once per prepared collection; differentiable in A, B and the vectors)."""
        if params.composition is None:
            return params
        if self._composed is None:
            raise AssertionError("composition parameters without a composed-pair plan")
        a, b = params.composition
        table = composed_table(params.vectors, a, b, self._composed)
        return params._replace(vectors=table, composition=None)

    # -- host-side planning -------------------------------------------------------------
    def _occurrences(self, trees: np.ndarray):
        f = self.forest
        starts, ends = f.tree_ptr[trees], f.tree_ptr[trees + 1]
        idx = concat_ranges(starts, ends - starts)
        local = np.repeat(np.arange(len(trees)), ends - starts)
        node = f.count_node[idx]
        keep = self.plan.key[node] >= 0
        return node[keep], local[keep], f.count[idx][keep]

    def _forest_on(self, device) -> DeviceForest:
        with self._lock:
            dev = self._dev_on.get(device)
            if dev is None:
                dev = self._dev_on[device] = jax.device_put(self.dev, device)
            return dev

    def _on(self, device: Any, params: Params, run):
        """`run(params, dev)` with the recurrences on `device` (None: the default device)."""
        if device is None:
            return run(params, self.dev)
        dev = self._forest_on(device)
        # The default device is thread-local: buffers and index arrays made here land on
        # `device`, so every call of the block runs there. (Parameters already there are not
        # copied again.)
        with jax.default_device(device):
            return run(jax.device_put(params, device), dev)

    def block(self, row_trees: np.ndarray, col_trees: np.ndarray, params: Params,
              device: Any = None, budget: Budget | None = None) -> Any:
        """`G[row_trees, col_trees]`: a `[len(row_trees), len(col_trees)]` NumPy array (a JAX
        array under a transformation; `[P, ...]` for a batch of P parameter values, whose
        scalar parameters are then `[P]` arrays: `_traced.py`).

        With `device`, the block's recurrences run there (on a copy of the forest arrays kept
        on that device); the finished block comes back to the host. With `budget`, a block
        whose working set would pass it is refused (`MemoryBudgetError`) before its pairs
        are listed.
        """
        return self._on(device, params,
                        lambda p, dev: self._block(row_trees, col_trees, p, dev, budget))

    def diag_block(self, trees: np.ndarray, params: Params, device: Any = None,
                   budget: Budget | None = None) -> jax.Array:
        """The self-kernels `K(t, t)` of `trees`, padded: the first `len(trees)` entries of a
        `[rows_pad]` array (`[P, rows_pad]` for a batch of P parameter values). Only the node
        pairs that share a tree are computed. `budget` as `block`."""
        return self._on(device, params, lambda p, dev: self._diag(trees, p, dev, budget))

    def self_pairs(self, trees: np.ndarray) -> np.ndarray:
        """`int64[len(trees)]`: the Delta entries of each tree alone against itself (its
        stored nodes times those of their match group in it): the least any block holding
        the tree on both sides computes. Cheap (linear in the trees' distinct nodes)."""
        trees = np.asarray(trees, np.int64)
        node, tree, _ = self._occurrences(trees)
        st = self._stored[node]
        code = tree[st].astype(np.int64) * self.plan.n_keys + self.plan.key[node[st]]
        groups, per_group = np.unique(code, return_counts=True)
        return np.bincount(groups // self.plan.n_keys, weights=per_group.astype(np.float64) ** 2,
                           minlength=len(trees)).astype(np.int64)

    def _columns(self, col_trees: np.ndarray) -> _Columns:
        """The column side of a block: it depends on the column trees only, so consecutive
        blocks against the same columns (a cross block's row blocks) share one."""
        col_trees = np.asarray(col_trees, np.int64)
        ident = (len(col_trees), hash(col_trees.tobytes()))
        with self._lock:
            for known, cols in self._col_cache:
                if known == ident and np.array_equal(cols.trees, col_trees):
                    return cols
            # a symmetric Gram's blocks: rows s:e against s:, suffixes of its first columns
            base = next((c for _, c in self._col_cache if len(c.trees) > len(col_trees)
                         and np.array_equal(c.trees[len(c.trees) - len(col_trees):],
                                            col_trees)), None)
        if base is not None:  # derived, not cached: it would push the base out
            return self._suffix_columns(base, len(base.trees) - len(col_trees))
        cols = self._shared_columns(col_trees)
        if cols is None:
            cols = self._make_columns(col_trees)
            self._count(column_sides=1)
        with self._lock:
            self._col_cache = [(ident, cols)] + self._col_cache[:1]
        return cols

    def share_columns(self, base: GramEngine) -> None:
        """Blocks whose columns are all trees of `base`'s forest take their column side from
        `base` (planned there once and kept in its cache, then renumbered for this plan)
        instead of planning it here. This engine's forest must extend `base`'s
        (`Forest.extend`: base's trees and nodes keep their ids). If this plan groups base's
        nodes otherwise (SPTK, when new words join the words' group), nothing is shared."""
        f, old = self.forest, base.forest
        n = old.n_nodes
        if not (f.n_trees >= old.n_trees and f.n_nodes >= n
                and np.array_equal(f.tree_ptr[: old.n_trees + 1], old.tree_ptr)
                and np.array_equal(f.count_node[: len(old.count_node)], old.count_node)
                and np.array_equal(f.child_flat[: len(old.child_flat)], old.child_flat)
                and np.array_equal(f.label[:n], old.label)):
            raise InputError("share_columns: this engine's forest does not extend base's")
        if self.dtype != base.dtype:
            raise InputError(f"share_columns: base computes in {base.dtype}, this in {self.dtype}")
        old_key, new_key = base.plan.key.astype(np.int64), self.plan.key[:n].astype(np.int64)
        if not (np.array_equal(base._stored, self._stored[:n])
                and np.array_equal(old_key < 0, new_key < 0)):
            return
        if not np.array_equal(old_key, new_key):
            # keys renumbered: fine when old -> new is one-to-one and keeps their order
            live = old_key >= 0
            pairs = np.unique(np.stack([old_key[live], new_key[live]]), axis=1)
            if not ((np.diff(pairs[0]) > 0).all() and (np.diff(pairs[1]) > 0).all()):
                return
        self._columns_from = base

    def _shared_columns(self, col_trees: np.ndarray) -> _Columns | None:
        """The column side of `col_trees` from the engine this one shares with
        (`share_columns`), or None. Members, occurrences and their orders are base's (its
        key order is kept); the group runs, the keys and the position table are this
        plan's."""
        base = self._columns_from
        if base is None or not len(col_trees) or int(col_trees.min()) < 0 \
                or int(col_trees.max()) >= base.forest.n_trees:
            return None
        cols = base._columns(col_trees)
        key = self.plan.key
        group_start = np.searchsorted(key[cols.members].astype(np.int64),
                                      np.arange(self.plan.n_keys + 1))
        pos = cols.pos
        if len(pos) != self._n_pad:
            pos = np.full(self._n_pad, -1, np.int32)
            pos[: len(cols.pos)] = cols.pos
        return dataclasses.replace(
            cols, trees=col_trees, group_start=group_start, group_len=np.diff(group_start),
            pos=pos, key_sorted=key[cols.node[cols.by_key]].astype(np.int64))

    def _suffix_columns(self, base: _Columns, k: int) -> _Columns:
        """`_make_columns(base.trees[k:])`, the same arrays, filtered out of `base`'s: every
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
        pos = np.full(self._n_pad, -1, np.int32)
        pos[members] = np.arange(len(members)) - group_start[m_key]
        per_member = np.add.reduceat(occ_keep, base.occ_start[:-1])[kept_m] \
            if len(base.members) else np.zeros(0, np.int64)
        occ_start = np.concatenate([[0], np.cumsum(per_member)]).astype(base.occ_start.dtype)
        by_key_keep = keep[base.by_key]
        return _Columns(
            trees=base.trees[k:], node=base.node[keep], tree=base.tree[keep] - k,
            count=base.count[keep], members=members, group_start=group_start,
            group_len=np.diff(group_start), pos=pos,
            occ_tree=base.occ_tree[occ_keep] - k, occ_count=base.occ_count[occ_keep],
            occ_start=occ_start, key_sorted=base.key_sorted[by_key_keep],
            by_key=new_index[base.by_key[by_key_keep]],
        )

    def _make_columns(self, col_trees: np.ndarray) -> _Columns:
        plan, stored = self.plan, self._stored
        c_node, c_tree, c_count = self._occurrences(col_trees)
        members = sorted_unique(c_node[stored[c_node]])
        m_key = plan.key[members].astype(np.int64)
        order = np.lexsort((self._aclass[members], m_key))
        members, m_key = members[order], m_key[order]
        group_start = np.searchsorted(m_key, np.arange(plan.n_keys + 1))
        group_len = np.diff(group_start)
        pos = np.full(self._n_pad, -1, np.int32)
        pos[members] = np.arange(len(members)) - group_start[m_key]
        # Stored occurrences grouped by member: the contraction's items.
        c_st = stored[c_node]
        pos_of = np.full(self._n_pad, -1, np.int64)
        pos_of[members] = np.arange(len(members))
        c_mem = pos_of[c_node[c_st]]
        by_mem = np.argsort(c_mem, kind="stable")
        occ_start = np.searchsorted(c_mem[by_mem], np.arange(len(members) + 1))
        # All matchable occurrences grouped by key (residual mode's constant part).
        ck = plan.key[c_node].astype(np.int64)
        by_key = np.argsort(ck, kind="stable")
        return _Columns(
            trees=col_trees, node=c_node, tree=c_tree, count=c_count, members=members,
            group_start=group_start, group_len=group_len, pos=pos,
            occ_tree=c_tree[c_st][by_mem], occ_count=c_count[c_st][by_mem],
            occ_start=occ_start, key_sorted=ck[by_key], by_key=by_key,
        )

    def _layout(self, row_nodes: np.ndarray, cols: _Columns):
        """Buffer layout of a block: each stored row node q gets a run of slots, one per
        stored column node of its match group (`cols.members`, sorted by group then arity
        class). Returns (rows, r_key, r_off, row_off); the slot of Delta(q, v) is
        `row_off[q] + cols.pos[v]`."""
        rows = sorted_unique(row_nodes[self._stored[row_nodes]])
        r_key = self.plan.key[rows].astype(np.int64)
        r_len = cols.group_len[r_key]
        r_off = _FIRST_SLOT + np.cumsum(r_len) - r_len
        row_off = np.full(self._n_pad, -1, np.int32)
        row_off[rows] = r_off
        return rows, r_key, r_off, row_off

    def _compute(self, params, dev, rows, ri, members, midx, slots, row_off, pos, n_slots):
        """A fresh buffer with Delta(rows[ri], members[midx]) in `slots`, children first."""
        f = self.forest
        n_cls = len(_CLASSES)
        # One buffer size for the whole run where possible: fewer shapes, fewer compilations.
        size = self._grow("_buf_size", self._buffer_size(_FIRST_SLOT + 1 + n_slots))
        buf = new_buffer(params, size=size, dtype=self.dtype, residual=self.plan.residual,
                         batch=batch_size(params))
        # Children first: entries ordered by the row's height, then by arity-class pair.
        r_height = f.height[rows]
        levels = np.unique(r_height)
        r_code = (np.searchsorted(levels, r_height) * n_cls + self._aclass[rows]) * n_cls
        code = r_code.astype(np.int32)[ri] + self._aclass[members].astype(np.int32)[midx]
        step = np.diff(code)
        entries = np.empty((3, len(code)), np.int32)  # (q, v, slot), int32 throughout
        if (step < 0).any():
            order = np.argsort(code.astype(np.uint16) if code.max(initial=0) < 1 << 16
                               else code, kind="stable")  # 16-bit keys: numpy's radix sort
            code = code[order]
            step = np.diff(code)
            np.take(rows.astype(np.int32), np.take(ri, order), out=entries[0])
            np.take(members.astype(np.int32), np.take(midx, order), out=entries[1])
            np.take(slots.astype(np.int32), order, out=entries[2])
            del order
        else:  # already in order (ST/SST: `_pairs`)
            np.take(rows.astype(np.int32), ri, out=entries[0])
            np.take(members.astype(np.int32), midx, out=entries[1])
            entries[2] = slots
        cuts = np.concatenate([[0], np.flatnonzero(step) + 1, [len(code)]])
        if len(code) == 0:
            cuts = cuts[:1]
        return self._fill_buckets(buf, entries, code, cuts, _to_device(row_off),
                                  _to_device(pos), params, dev)

    def _block(self, row_trees, col_trees, params: Params, dev: DeviceForest,
               budget: Budget | None = None) -> jax.Array:
        cols = self._columns(col_trees)
        row = self._occurrences(np.asarray(row_trees, np.int64))
        rows, r_key, r_off, row_off = self._layout(row[0], cols)
        group_start, group_len = cols.group_start, cols.group_len
        r_len = group_len[r_key]
        slots = int(r_len.sum())  # Delta entries at most (all of them but in residual mode)
        check_block(budget, entries=slots, slots=slots, cells=len(row_trees) * len(col_trees),
                    itemsize=self.dtype.itemsize * (batch_size(params) or 1))
        ri, midx = self._pairs(rows, r_key, cols.members, group_start, group_len)
        ri, midx = ri.astype(np.int32), midx.astype(np.int32)  # the block's largest arrays
        self._count(delta_entries=len(ri), constant_entries=int(r_len.sum()) - len(ri))
        # the buf slot of Delta(rows[ri], v)
        out = (r_off - group_start[r_key]).astype(np.int32)[ri] + midx
        buf = self._compute(params, dev, rows, ri, cols.members, midx, out, row_off, cols.pos,
                            int(r_len.sum()))
        return self._contract(buf, rows, ri, midx, out, row, cols, len(row_trees),
                              batch_size(params))

    def _diag(self, trees, params: Params, dev: DeviceForest,
              budget: Budget | None = None) -> jax.Array:
        """Self-kernels: K(t, t) = sum over same-key node pairs (q, v) of tree t of
        c_t(q) c_t(v) Delta(q, v). The pairs that share a tree are closed under taking
        children, so only those are computed (in the buffer layout of the square block)."""
        plan, stored = self.plan, self._stored
        trees = np.asarray(trees, np.int64)
        node, tree, count = self._occurrences(trees)
        cols = self._make_columns(trees)
        rows, r_key, r_off, row_off = self._layout(node, cols)
        members, group_len, pos = cols.members, cols.group_len, cols.pos
        rows_pad = self._grow("_rows_pad", _bucket(len(trees)))
        key = plan.key[node].astype(np.int64)
        # Stored occurrences grouped by (tree, key); every pair within a group.
        st = stored[node]
        s_node, s_tree, s_count = node[st], tree[st], count[st].astype(np.int64)
        s_code = s_tree.astype(np.int64) * plan.n_keys + key[st]
        order = np.argsort(s_code, kind="stable")
        s_node, s_tree, s_count, s_code = (a[order] for a in (s_node, s_tree, s_count, s_code))
        g_first = np.searchsorted(s_code, s_code)  # first occurrence of each one's group
        g_size = np.searchsorted(s_code, s_code, side="right") - g_first
        batch = batch_size(params)
        check_block(budget, entries=int(g_size.sum()), slots=int(group_len[r_key].sum()),
                    cells=0, itemsize=self.dtype.itemsize * (batch or 1),
                    per_entry=BYTES_PER_DIAG_PAIR)
        first = np.repeat(np.arange(len(s_node)), g_size)
        second = concat_ranges(g_first, g_size)
        q, v = s_node[first], s_node[second]
        # The distinct (q, v) pairs, as (row index, member index).
        m_index = np.full(self._n_pad, -1, np.int64)
        m_index[members] = np.arange(len(members))
        pair = np.searchsorted(rows, q) * len(members) + m_index[v]
        uniq, inv = np.unique(pair, return_inverse=True)
        ri, midx = uniq // max(len(members), 1), uniq % max(len(members), 1)
        keep = self._share_child_key(rows[ri], members[midx])
        self._count(delta_entries=int(keep.sum()), constant_entries=int((~keep).sum()))
        slot = r_off[ri] + pos[members[midx]]
        buf = self._compute(params, dev, rows, ri[keep], members, midx[keep], slot[keep],
                            row_off, pos, int(group_len[r_key].sum()))
        # Items: every pair of every tree whose Delta was computed, weight c_t(q) c_t(v).
        live = keep[inv]
        idx: list[np.ndarray] = [slot[inv][live]]
        seg: list[np.ndarray] = [s_tree[first][live].astype(np.int64)]
        w: list[np.ndarray] = [(s_count[first] * s_count[second])[live]]
        # Node pairs: same-key occurrence pairs of each tree (leaves included).
        t_code, t_inv = np.unique(tree.astype(np.int64) * plan.n_keys + key, return_inverse=True)
        per_key = np.bincount(t_inv, weights=count).astype(np.int64)
        self._count(node_pairs=int(per_key @ per_key), blocks=1)
        if plan.residual:  # the constant mu lam^2 on every same-key pair of a tree
            idx.append(np.ones(len(t_code), np.int64))
            seg.append(t_code // plan.n_keys)
            w.append(per_key * per_key)
        out = zeros(shape=(rows_pad,) if batch is None else (batch, rows_pad), dtype=self.dtype)
        return self._scatter(out, buf, *(np.concatenate(a) for a in (idx, seg, w)))

    def _buffer_size(self, slots: int) -> int:
        """A buffer size for `slots`: one this process already compiled programs for (same
        kernel family and forest padding) if it is at most 4x the size needed, else the
        needed size rounded up to a power of two (remembered for later engines)."""
        need = _ladder(slots, _MIN_BUFFER, 2)
        shape_key = (self._static, self._n_pad, int(self.dev.child_flat.shape[0]), self.dtype)
        with _SIZES_LOCK:
            used = _BUFFER_SIZES.setdefault(shape_key, set())
            fits = [size for size in used if need <= size <= 4 * need]
            size = min(fits) if fits else need
            used.add(size)
        return size

    def block_slots(self, row_trees: np.ndarray, col_trees: np.ndarray) -> int:
        """Buffer slots `block(row_trees, col_trees)` needs: its layout, each stored row
        node times the stored column nodes of its match group."""
        group_len = self._columns(col_trees).group_len
        row, _, _ = self._occurrences(np.asarray(row_trees, np.int64))
        rows = sorted_unique(row[self._stored[row]])
        return _FIRST_SLOT + 1 + int(group_len[self.plan.key[rows]].astype(np.int64).sum())

    def diag_slots(self, trees: np.ndarray) -> int:
        """Buffer slots `diag_block(trees)` needs (its layout: stored nodes times their match
        group), so callers can size blocks to the buffer already in use."""
        node, _, _ = self._occurrences(np.asarray(trees, np.int64))
        nodes = sorted_unique(node[self._stored[node]])
        per_key = np.bincount(self.plan.key[nodes], minlength=self.plan.n_keys).astype(np.int64)
        return _FIRST_SLOT + 1 + int(per_key @ per_key)

    def reserve(self, slots: int) -> None:
        """Sizes the Delta buffer for blocks of up to `slots` slots before any runs."""
        self._grow("_buf_size", self._buffer_size(slots))

    def buffer_slots(self) -> int:
        """The Delta buffer size in use (0 before the first block): blocks that fit in it
        reuse the programs compiled for it."""
        return self._buf_size

    def _share_child_key(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Residual mode: False where q and v have no child key in common (R(q, v) = 0, Delta
        is the constant); True everywhere otherwise."""
        if not self.plan.residual:
            return np.ones(len(q), bool)
        m = self._mask
        return ((m[0, q] & m[0, v]) != 0) | ((m[1, q] & m[1, v]) != 0)

    def _pairs(self, rows, r_key, members, group_start, group_len):
        """The (row index, member index) pairs whose Delta entries must be computed.

        Every same-group pair, except in residual mode, where a pair of internal nodes with
        no child key in common has R = 0 (Delta is the constant mu lam^2) and is skipped. The
        test is a bitset of child keys (exact for the 64 most frequent keys, hashed for the
        rest: a collision only costs one DP that yields 0).
        """
        r_len = group_len[r_key]
        if not self.plan.residual:
            # rows in the order the recurrences take them (height, then arity class): for
            # ST/SST, whose entries' program depends on the row only, the entries come out
            # in `_compute`'s order and need no sorting there
            by_row = np.lexsort((self._aclass[rows], self.forest.height[rows]))
            return (np.repeat(by_row, r_len[by_row]),
                    concat_ranges(group_start[r_key[by_row]], r_len[by_row]))
        mask_r, mask_m = self._mask[:, rows], self._mask[:, members]
        by_key = np.argsort(r_key, kind="stable")
        g_ids, g_first, g_rows = np.unique(r_key[by_key], return_index=True, return_counts=True)
        big = g_rows * group_len[g_ids] >= _DENSE_GROUP
        ris, ms = [], []
        for g, first, nr in zip(g_ids[big], g_first[big], g_rows[big]):
            # A big group: one dense bitset outer product (in row chunks).
            gs, gl = int(group_start[g]), int(group_len[g])
            step = max(1, _PAIR_CHUNK // gl)
            for s in range(first, first + nr, step):
                part = by_key[s: min(s + step, first + nr)]
                hit = (mask_r[0, part][:, None] & mask_m[0, None, gs:gs + gl]) != 0
                hit |= (mask_r[1, part][:, None] & mask_m[1, None, gs:gs + gl]) != 0
                i, j = np.nonzero(hit)
                ris.append(part[i])
                ms.append(gs + j)
        small = by_key[~np.repeat(big, g_rows)]
        sl = r_len[small]
        ends = np.cumsum(sl)
        s = 0
        while s < len(small):  # the other groups: candidate lists, chunks of ~_PAIR_CHUNK
            e = max(s + 1, int(np.searchsorted(ends, ends[s] - sl[s] + _PAIR_CHUNK)))
            cand_r = np.repeat(small[s:e], sl[s:e])
            cand_m = concat_ranges(group_start[r_key[small[s:e]]], sl[s:e])
            hit = self._share_child_key(rows[cand_r], members[cand_m])
            ris.append(cand_r[hit])
            ms.append(cand_m[hit])
            s = e
        if not ris:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(ris).astype(np.int64), np.concatenate(ms).astype(np.int64)

    def _contract(self, buf, rows, ri, midx, out, row, cols: _Columns, n_rows, batch=None):
        """G[i, j] = sum over (q, v) of A[i, q] Delta(q, v) A[j, v] for the block.

        Terms come as *virtual rows*, each with its occurrences in the row trees and its
        items (a buf slot times an occurrence in a column tree): one per stored row q
        (items: the computed pairs (q, v)), and in residual mode one per match group with
        the constant mu lam^2 (buf slot 1) on every same-group pair. A virtual row found in
        one row tree only is added straight into that tree's Gram row; shared ones are summed
        once into a row of Z, and Z is spread into G (`_spread`). G and Z are one flat
        scatter target, rows of `n_cols` cells: G's n_rows rows first, then Z's (for a batch
        of P parameter values, `[P, ...]`: one target per value).
        """
        plan = self.plan
        r_node, r_tree, r_count = row
        c_node, c_tree, c_count = cols.node, cols.tree, cols.count
        n_cols = len(cols.trees)
        # Node pairs these terms stand for: same-key occurrence pairs.
        rk_hist = np.bincount(plan.key[r_node], weights=r_count, minlength=plan.n_keys)
        ck_hist = np.bincount(plan.key[c_node], weights=c_count, minlength=plan.n_keys)
        self._count(node_pairs=int(rk_hist @ ck_hist))
        # Occurrences of the virtual rows in the row trees: (virtual row, tree, count).
        r_st = self._stored[r_node]
        vr_row = [np.searchsorted(rows, r_node[r_st])]
        vr_tree, vr_w = [r_tree[r_st]], [r_count[r_st]]
        n_vr = len(rows)
        if plan.residual:
            rk = plan.key[r_node].astype(np.int64)
            code, inv = np.unique(r_tree.astype(np.int64) * plan.n_keys + rk, return_inverse=True)
            groups, g_vr = np.unique(code % plan.n_keys, return_inverse=True)
            vr_row.append(n_vr + g_vr)
            vr_tree.append(code // plan.n_keys)
            vr_w.append(np.bincount(inv, weights=r_count).astype(np.int64))
            n_vr += len(groups)
        vr_row, vr_tree, vr_w = (np.concatenate(a) for a in (vr_row, vr_tree, vr_w))
        # Where each virtual row's items go: its tree's G row (single), or its Z row (shared).
        n_occ = np.bincount(vr_row, minlength=n_vr)
        shared = np.flatnonzero(n_occ > 1)
        target = np.empty(n_vr, np.int64)
        weight = np.ones(n_vr, np.int64)
        one = n_occ[vr_row] == 1
        target[vr_row[one]] = vr_tree[one]
        weight[vr_row[one]] = vr_w[one]
        target[shared] = n_rows + np.arange(len(shared))
        cells = (n_rows + len(shared)) * n_cols
        if cells >= 1 << 31:
            raise InputError("Gram block too large for int32 indexing: use a smaller block_size")
        # Items of the stored rows: each computed pair (q, v) times v's column occurrences.
        # Most column nodes occur once in the block's columns (TREC SST: 36.5 M items for
        # 32.5 M pairs): their pairs are one item each, gathered without expanding.
        occ_tree, occ_count, occ_start = cols.occ_tree, cols.occ_count, cols.occ_start
        m_len = np.diff(occ_start)
        size = _ladder(cells + 1, 1 << 18, 2)
        gz = zeros(shape=(size,) if batch is None else (batch, size), dtype=self.dtype)
        single = (m_len == 1)[midx]
        m_first = occ_start[:-1]
        r_seg, r_w = target * n_cols, weight
        for a, b in _chunks(len(ri), _SCATTER_CHUNK):
            e_ri, e_m, lone = ri[a:b], midx[a:b], single[a:b]
            if lone.all():
                gz = self._scatter(gz, buf, out[a:b], r_seg[e_ri] + occ_tree[m_first[e_m]],
                                   r_w[e_ri] * occ_count[m_first[e_m]])
                continue
            s_ri, s_m = e_ri[lone], e_m[lone]
            gz = self._scatter(gz, buf, out[a:b][lone], r_seg[s_ri] + occ_tree[m_first[s_m]],
                               r_w[s_ri] * occ_count[m_first[s_m]])
            many = ~lone
            m_ri, m_m, m_out = e_ri[many], e_m[many], out[a:b][many]
            lens = m_len[m_m]
            item = concat_ranges(m_first[m_m], lens)
            gz = self._scatter(gz, buf, np.repeat(m_out, lens),
                               np.repeat(r_seg[m_ri], lens) + occ_tree[item],
                               np.repeat(r_w[m_ri], lens) * occ_count[item])
        if plan.residual:
            # Items of the group rows: every column occurrence of the group, times buf[1].
            k_start = np.searchsorted(cols.key_sorted, groups)
            k_len = np.searchsorted(cols.key_sorted, groups, side="right") - k_start
            kitem = cols.by_key[concat_ranges(k_start, k_len)]
            vr = len(rows) + np.repeat(np.arange(len(groups)), k_len)
            gz = self._scatter(gz, buf, np.ones(len(kitem), np.int64),
                               target[vr] * n_cols + c_tree[kitem],
                               weight[vr] * c_count[kitem])
        z_of = np.full(n_vr, -1, np.int64)
        z_of[shared] = np.arange(len(shared))
        spread = (vr_tree[~one], z_of[vr_row[~one]], vr_w[~one])
        self._count(blocks=1)
        return _spread(gz, spread, n_rows, len(shared), n_cols)

    def _scatter(self, out, buf, idx, seg, weight):
        """out[seg[k]] += buf[idx[k]] * weight[k], in fixed-size chunks, each one int32
        array (idx, seg, weight) to the device; padding adds buf[0] = 0 to out[0]."""
        add = accumulate_traced if is_traced(out) or is_traced(buf) else accumulate
        step = _SCATTER_CHUNK
        if len(weight) and int(weight.max()) >= 1 << 31:  # counts times counts
            raise InputError("a node occurs too often in one tree for the Gram contraction "
                             "(occurrence weight past 2^31)")
        for s in range(0, len(idx), step):
            e = min(s + step, len(idx))
            packed = np.zeros((3, step), np.int32)
            packed[0, : e - s] = idx[s:e]
            packed[1, : e - s] = seg[s:e]
            packed[2, : e - s] = weight[s:e]
            out = add(out, buf, _to_device(packed))
        return out

    def _fill_buckets(self, buf, entries, code, cuts, dev_row_off, dev_pos, params, dev):
        """Runs the fill over the sorted entries `int32[3, E]` (q, v, buf slot), bucket by bucket.

        Entries go to the device in a few fixed-size pieces; a bucket (or its part within a
        piece) is one call, which reads its entries out of the piece by offset and computes
        them a sub-chunk at a time. Each arity-class pair has one sub-chunk length (one
        compiled program).
        """
        n_cls = len(_CLASSES)
        piece, piece_start = None, 0
        traced = params_traced(params)
        fill = fill_entries_traced if traced else fill_entries
        for s0, e0 in zip(cuts[:-1], cuts[1:]):
            ac, bc = divmod(int(code[s0]) % (n_cls * n_cls), n_cls)
            a_pad, b_pad = int(_CLASSES[ac]), int(_CLASSES[bc])
            if self.plan.family == "aligned":
                b_pad = a_pad
            sub = _sub_chunk(a_pad, b_pad)
            s = s0
            while s < e0:
                if piece is None or s >= piece_start + _PIECE:
                    piece_start = s
                    # Past the entries, the piece holds anything: fill masks those slots.
                    host = np.empty((3, _PIECE + _STEP_CELLS), np.int32)
                    chunk = entries[:, s: s + _PIECE]
                    host[:, : chunk.shape[1]] = chunk
                    piece = _to_device(host)
                e = min(e0, piece_start + _PIECE)
                buf = fill(
                    buf, piece, np.int32(s - piece_start), np.int32(e - s), dev, dev_row_off,
                    dev_pos, params, plan_static=self._static, a_pad=a_pad, b_pad=b_pad,
                    sub=sub, trips=_trips(-(-(e - s) // sub)) if traced else None,
                )
                s = e
        return buf


def _trips(n: int) -> int:
    """A traced fill's static trip count: `n` rounded up to a power of two. The extra trips
    compute masked no-ops; in exchange, fills of other sizes (other blocks, other trees of
    a kernel being learned) reuse the same compiled programs instead of compiling their own."""
    return 1 << max(0, (int(n) - 1).bit_length())


# `_spread` multiplies by a dense spreading matrix when at least 1 in this many of its
# entries is nonzero (the corpora here: 2-10%), else gathers Z's rows pair by pair.
_DENSE_SPREAD = 256


def _spread(gz: jax.Array, spread: tuple[np.ndarray, np.ndarray, np.ndarray], n_rows: int,
            n_shared: int, n_cols: int) -> Any:
    """The block `G [n_rows, n_cols]` out of the flat scatter target `gz` (G's rows, then
    Z's `n_shared` rows): G plus, for every (tree t, Z row z, weight w) in `spread`,
    w * Z[z] in G's row t. A NumPy array when `gz` is concrete (the spreading is a few
    vectorized sums on the host: Z's occurrences are few, and a padded dense product on the
    device cost more than the whole block); a JAX array under a transformation. A `[P, ...]`
    target (a batch of parameter values) gives `[P, n_rows, n_cols]`."""
    tree, z, w = spread
    size = n_rows * n_cols
    lead = gz.shape[:-1]
    if is_traced(gz):
        g = gz[..., :size].reshape(*lead, n_rows, n_cols)
        if n_shared == 0:
            return g
        zrows = gz[..., size: size + n_shared * n_cols].reshape(*lead, n_shared, n_cols)
        weight = jnp.asarray(w, gz.dtype).reshape((-1,) + (1,) * (len(lead) + 1))
        add = jnp.moveaxis(jax.ops.segment_sum(jnp.moveaxis(zrows[..., z, :], -2, 0) * weight,
                                               jnp.asarray(tree), num_segments=n_rows), 0, -2)
        return g + add
    flat = np.asarray(gz)
    g = flat[..., :size].reshape(*lead, n_rows, n_cols)
    if n_shared == 0:
        return g
    zrows = flat[..., size: size + n_shared * n_cols].reshape(*lead, n_shared, n_cols)
    if len(tree) * _DENSE_SPREAD >= n_rows * n_shared:
        # G += S Z with S[t, z] = w: a dense product, although S is only a few percent full,
        # because a BLAS product is a hundred times faster per term than gathering and
        # summing Z's rows one pair at a time (boundary-unlex SST: 0.1 s against 0.5 s)
        spread_matrix = np.zeros((n_rows, n_shared), g.dtype)
        np.add.at(spread_matrix, (tree, z), w.astype(g.dtype))
        return g + spread_matrix @ zrows
    g = g.copy()
    order = np.argsort(tree, kind="stable")
    tree, z, w = tree[order], z[order], w[order].astype(g.dtype)
    step = max(1, (1 << 20) // max(n_cols * int(np.prod(lead)), 1))  # a bounded temporary
    for a in range(0, len(tree), step):
        t, zz, ww = tree[a:a + step], z[a:a + step], w[a:a + step]
        starts = np.flatnonzero(np.concatenate([[True], t[1:] != t[:-1]]))
        g[..., t[starts], :] += np.add.reduceat(zrows[..., zz, :] * ww[:, None], starts,
                                                axis=-2)
    return g


def _chunks(n: int, step: int) -> list[tuple[int, int]]:
    """(start, stop) of consecutive pieces of range(n), `step` long (the last one shorter)."""
    return [(a, min(a + step, n)) for a in range(0, n, step)]


def _concrete(host: np.ndarray) -> jax.Array:
    """A host array as a concrete device array, even while a `jax.jit` is tracing (an
    engine prepared there serves host callbacks, `_traced.py`, which run outside the trace)."""
    with jax.ensure_compile_time_eval():
        return jax.device_put(host)


def _to_device(host: np.ndarray) -> jax.Array:
    """A host array on the default device (the thread's, see `GramEngine._on`): a plain
    transfer, several times cheaper than `jnp.asarray`'s conversion for large arrays."""
    return jax.device_put(host)


def _sub_chunk(a_pad: int, b_pad: int) -> int:
    """Entries computed at once for an arity-class pair: a power of two, about _STEP_CELLS
    cells, at least _MIN_STEP entries."""
    cells = max(1, a_pad * b_pad)
    if cells * _MIN_STEP > _MAX_CELLS:  # past 256 children: bound the working set instead
        return max(1, _MAX_CELLS // cells)
    return max(_MIN_STEP, _STEP_CELLS >> max(0, (cells - 1).bit_length()))


@jit
def composed_table(vectors: jax.Array, a: jax.Array, b: jax.Array,
                   pairs: jax.Array) -> jax.Array:
    """`[V + P, d]`: the word vectors (unit or 0), then per head-modifier pair the unit
    composition A h + B m of its words' vectors (0 where a word has none, or the composition
    vanishes: such a pair is compared by its label only)."""
    h, m = vectors[pairs[:, 0]], vectors[pairs[:, 1]]
    have = (jnp.sum(h * h, axis=1) > 0.5) & (jnp.sum(m * m, axis=1) > 0.5)
    c = h @ a.T + m @ b.T
    sq = jnp.sum(c * c, axis=1)
    ok = have & (sq > 0)
    # the norm only where it is positive: its gradient is finite everywhere
    c = c * jnp.where(ok, jax.lax.rsqrt(jnp.where(ok, sq, 1.0)), 0.0)[:, None]
    return jnp.concatenate([vectors, c.astype(vectors.dtype)], axis=0)
