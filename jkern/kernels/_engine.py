"""The forest Gram engine: which Delta entries a Gram block needs, where, and in what order.

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

`GramEngine` runs a block through three sides, each its own module: the layout (column sides,
row slots, the entries' order: `_layout.py`), the pairs to compute (`_pairs.py`) and the
contraction into the block (`_contract.py`); the engine itself holds the forest's device
arrays and the Delta buffer, and calls the recurrences. Every array the compiled programs see
is padded to a few sizes (the forest arrays to at least 2^16 nodes, buffers on a ladder of
powers of 2, one chunk length per arity-class pair), so the programs a kernel setting compiles
are few and shared by every block and every call. `_schedule.py` spreads blocks over threads
and devices; `_timing.py` says where a block's seconds go.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._cache import jit
from .._unique import sorted_unique
from ..errors import InputError
from ..trees._forest import Forest, concat_ranges
from ._budget import BYTES_PER_DIAG_PAIR, Budget, check_block
from ._contract import Contraction
from ._layout import (
    CLASSES,
    FIRST_SLOT,
    MIN_NODES,
    STEP_CELLS,
    Columns,
    Layout,
    arity_class,
    ladder,
    sub_chunk,
    trips,
)
from ._layout import MAX_ARITY as MAX_ARITY
from ._layout import bucket as padded_rows
from ._pairs import PairFinder
from ._recurrences import (
    DeviceForest,
    Params,
    batch_size,
    fill_entries,
    fill_entries_traced,
    new_buffer,
    params_traced,
    to_device,
    zeros,
)
from ._timing import Seconds

# Sorted Delta entries go to the device in pieces of this many entries.
_PIECE = 1 << 19
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
        self._aclass = arity_class(f.arity, plan.family)
        key = plan.key.astype(np.int32)
        vec_index = plan.vec_index if plan.vec_index is not None else np.full_like(key, -1)
        # Device arrays padded to a few lengths: the compiled recurrences depend on their
        # shapes, so forests of similar size share compilations.
        self._n_pad = n_pad = ladder(f.n_nodes + 1, MIN_NODES)
        pad = max(int(CLASSES[self._aclass.max(initial=0)]), 1)
        flat = np.zeros(ladder(len(f.child_flat) + pad, 2 * MIN_NODES), np.int32)
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
        self._composed = None
        if plan.composed is not None:  # padded: one compiled table program per ladder size
            pairs = np.zeros((ladder(len(plan.composed) + 1, 64), 2), np.int32)
            pairs[: len(plan.composed)] = plan.composed
            self._composed = _concrete(pairs)
        self.counts = Counts()
        self.seconds = Seconds()  # host phases and compiled programs (`_timing.py`)
        # Padded sizes only grow over the engine's calls (fewer shapes, fewer programs).
        self._buf_size = self._rows_pad = 0
        self._lock = threading.Lock()  # blocks run on several threads (compute_gram)
        self._dev_on: dict = {}  # per-device copies of `dev` (compute_gram's `devices`)
        self._columns_from: GramEngine | None = None  # `share_columns`
        # the three sides of a block
        self.layout = Layout(f, plan, self._aclass, self._stored, n_pad, self.seconds,
                             self._count)
        self.pair_finder = PairFinder(f, key, plan.n_keys, self._aclass, plan.residual)
        self.contraction = Contraction(plan, self._stored, self.dtype, self.seconds,
                                       self._count)

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

    # -- the three sides (`_layout.py`, `_pairs.py`, `_contract.py`) ------------------------
    def _occurrences(self, trees: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.layout.occurrences(trees)

    def _columns(self, col_trees: np.ndarray) -> Columns:
        return self.layout.columns(col_trees)

    def _make_columns(self, col_trees: np.ndarray) -> Columns:
        return self.layout.make_columns(col_trees)

    def _suffix_columns(self, base: Columns, k: int) -> Columns:
        return self.layout.suffix_columns(base, k)

    def _shared_columns(self, col_trees: np.ndarray) -> Columns | None:
        return self.layout.shared_columns(col_trees)

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
        self.layout.base = base.layout

    def _compute(self, params, dev, rows, ri, members, midx, slots, row_off, pos, n_slots):
        """A fresh buffer with Delta(rows[ri], members[midx]) in `slots`, children first."""
        # One buffer size for the whole run where possible: fewer shapes, fewer compilations.
        size = self._grow("_buf_size", self._buffer_size(FIRST_SLOT + 1 + n_slots))
        with self.seconds.phase("program"):
            buf = new_buffer(params, size=size, dtype=self.dtype, residual=self.plan.residual,
                             batch=batch_size(params))
        entries, bucket, cuts = self.layout.order(rows, ri, members, midx, slots)
        with self.seconds.phase("program"):
            dev_row_off, dev_pos = to_device(row_off), to_device(pos)
        return self._fill_buckets(buf, entries, bucket, cuts, dev_row_off, dev_pos, params, dev)

    def _block(self, row_trees, col_trees, params: Params, dev: DeviceForest,
               budget: Budget | None = None) -> jax.Array:
        phase = self.seconds.phase
        cols = self._columns(col_trees)
        with phase("layout"):
            row = self._occurrences(np.asarray(row_trees, np.int64))
            rows, r_key, r_off, row_off = self.layout.rows(row[0], cols)
            group_start, group_len = cols.group_start, cols.group_len
            r_len = group_len[r_key]
            slots = int(r_len.sum())  # Delta entries at most (all but in residual mode)
            check_block(budget, entries=slots, slots=slots,
                        cells=len(row_trees) * len(col_trees),
                        itemsize=self.dtype.itemsize * (batch_size(params) or 1))
        with phase("pairs"):  # (int32: the block's largest arrays)
            ri, midx = self.pair_finder.pairs(rows, r_key, cols.members, group_start,
                                              group_len)
        self._count(delta_entries=len(ri), constant_entries=int(r_len.sum()) - len(ri))
        with phase("layout"):
            # the buf slot of Delta(rows[ri], v)
            out = np.take((r_off - group_start[r_key]).astype(np.int32), ri)
            out += midx
            buf = self._compute(params, dev, rows, ri, cols.members, midx, out, row_off,
                                cols.pos, int(r_len.sum()))
        with phase("contract"):
            return self.contraction.block(buf, rows, ri, midx, out, row, cols,
                                          len(row_trees), batch_size(params))

    def _diag(self, trees, params: Params, dev: DeviceForest,
              budget: Budget | None = None) -> jax.Array:
        """Self-kernels: K(t, t) = sum over same-key node pairs (q, v) of tree t of
        c_t(q) c_t(v) Delta(q, v). The pairs that share a tree are closed under taking
        children, so only those are computed (in the buffer layout of the square block)."""
        plan, stored, phase = self.plan, self._stored, self.seconds.phase
        trees = np.asarray(trees, np.int64)
        with phase("columns"):
            node, tree, count = self._occurrences(trees)
            cols = self._make_columns(trees)
        with phase("pairs"):
            rows, r_key, r_off, row_off = self.layout.rows(node, cols)
            members, group_len, pos = cols.members, cols.group_len, cols.pos
            rows_pad = self._grow("_rows_pad", padded_rows(len(trees)))
            key = plan.key[node].astype(np.int64)
            # Stored occurrences grouped by (tree, key); every pair within a group.
            st = stored[node]
            s_node, s_tree, s_count = node[st], tree[st], count[st].astype(np.int64)
            s_code = s_tree.astype(np.int64) * plan.n_keys + key[st]
            order = np.argsort(s_code, kind="stable")
            s_node, s_tree, s_count, s_code = (a[order]
                                               for a in (s_node, s_tree, s_count, s_code))
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
            keep = self.pair_finder.share_child_key(rows[ri], members[midx])
        self._count(delta_entries=int(keep.sum()), constant_entries=int((~keep).sum()))
        with phase("layout"):
            slot = r_off[ri] + pos[members[midx]]
            buf = self._compute(params, dev, rows, ri[keep], members, midx[keep], slot[keep],
                                row_off, pos, int(group_len[r_key].sum()))
        with phase("contract"):
            # Items: every pair of every tree whose Delta was computed, weight c_t(q) c_t(v).
            live = keep[inv]
            idx: list[np.ndarray] = [slot[inv][live]]
            seg: list[np.ndarray] = [s_tree[first][live].astype(np.int64)]
            w: list[np.ndarray] = [(s_count[first] * s_count[second])[live]]
            # Node pairs: same-key occurrence pairs of each tree (leaves included).
            t_code, t_inv = np.unique(tree.astype(np.int64) * plan.n_keys + key,
                                      return_inverse=True)
            per_key = np.bincount(t_inv, weights=count).astype(np.int64)
            self._count(node_pairs=int(per_key @ per_key), blocks=1)
            if plan.residual:  # the constant mu lam^2 on every same-key pair of a tree
                idx.append(np.ones(len(t_code), np.int64))
                seg.append(t_code // plan.n_keys)
                w.append(per_key * per_key)
            with phase("program"):
                out = zeros(shape=(rows_pad,) if batch is None else (batch, rows_pad),
                            dtype=self.dtype)
            return self.contraction.scatter(out, buf,
                                           *(np.concatenate(a) for a in (idx, seg, w)))

    def _buffer_size(self, slots: int) -> int:
        """A buffer size for `slots`: one this process already compiled programs for (same
        kernel family and forest padding) if it is at most 4x the size needed, else the
        needed size rounded up to a power of two (remembered for later engines)."""
        need = ladder(slots, _MIN_BUFFER, 2)
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
        with self.seconds.phase("layout"):
            row, _, _ = self._occurrences(np.asarray(row_trees, np.int64))
            rows = sorted_unique(row[self._stored[row]])
            return FIRST_SLOT + 1 + int(group_len[self.plan.key[rows]].astype(np.int64).sum())

    def diag_slots(self, trees: np.ndarray) -> int:
        """Buffer slots `diag_block(trees)` needs (its layout: stored nodes times their match
        group), so callers can size blocks to the buffer already in use."""
        with self.seconds.phase("layout"):
            return self._diag_slots(trees)

    def _diag_slots(self, trees: np.ndarray) -> int:
        node, _, _ = self._occurrences(np.asarray(trees, np.int64))
        nodes = sorted_unique(node[self._stored[node]])
        per_key = np.bincount(self.plan.key[nodes], minlength=self.plan.n_keys).astype(np.int64)
        return FIRST_SLOT + 1 + int(per_key @ per_key)

    def reserve(self, slots: int) -> None:
        """Sizes the Delta buffer for blocks of up to `slots` slots before any runs."""
        self._grow("_buf_size", self._buffer_size(slots))

    def buffer_slots(self) -> int:
        """The Delta buffer size in use (0 before the first block): blocks that fit in it
        reuse the programs compiled for it."""
        return self._buf_size

    def _fill_buckets(self, buf, entries, bucket, cuts, dev_row_off, dev_pos, params, dev):
        """Runs the fill over the sorted entries (q, v, buf slot), bucket by bucket: bucket k
        (code `bucket[k]`, `Layout.order`) is entries `cuts[k]:cuts[k + 1]`, which
        `entries(host, a, b)` writes into `host[:, :b - a]` (`int32[3, ...]`).

        Entries go to the device in a few fixed-size pieces; a bucket (or its part within a
        piece) is one call, which reads its entries out of the piece by offset and computes
        them a sub-chunk at a time. Each arity-class pair has one sub-chunk length (one
        compiled program).
        """
        n_cls = len(CLASSES)
        piece, piece_start = None, 0
        traced = params_traced(params)
        fill = fill_entries_traced if traced else fill_entries
        program = functools.partial(self.seconds.phase, "program")
        n = int(cuts[-1])
        for k, (s0, e0) in enumerate(zip(cuts[:-1].tolist(), cuts[1:].tolist())):
            ac, bc = divmod(int(bucket[k]) % (n_cls * n_cls), n_cls)
            a_pad, b_pad = int(CLASSES[ac]), int(CLASSES[bc])
            if self.plan.family == "aligned":
                b_pad = a_pad
            sub = sub_chunk(a_pad, b_pad)
            s = s0
            while s < e0:
                if piece is None or s >= piece_start + _PIECE:
                    piece_start = s
                    # Past the entries, the piece holds anything: fill masks those slots.
                    host = np.empty((3, _PIECE + STEP_CELLS), np.int32)
                    entries(host, s, min(s + _PIECE, n))
                    with program():
                        piece = to_device(host)
                e = min(e0, piece_start + _PIECE)
                with program():
                    buf = fill(
                        buf, piece, np.int32(s - piece_start), np.int32(e - s), dev,
                        dev_row_off, dev_pos, params, plan_static=self._static, a_pad=a_pad,
                        b_pad=b_pad, sub=sub,
                        trips=trips(-(-(e - s) // sub)) if traced else None,
                    )
                s = e
        return buf



def _concrete(host: np.ndarray) -> jax.Array:
    """A host array as a concrete device array, even while a `jax.jit` is tracing (an
    engine prepared there serves host callbacks, `_traced.py`, which run outside the trace)."""
    with jax.ensure_compile_time_eval():
        return jax.device_put(host)


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
