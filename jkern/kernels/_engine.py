"""The forest Gram engine: Gram = A Delta A^T, Delta computed children-first, row block by block.

For a block of row trees and a set of column trees, every distinct subtree q of the row trees
gets a *row* of Delta(q, v) over the column subtrees v that can match it (same match key:
production for ST/SST, label for PTK, PoS class for SPTK's lexical nodes). Rows are filled
level by level (a node's height), each level as a few jitted, fixed-shape batched recurrences
(bucketed by the padded arities of q and v). A child pair's Delta is one gather from the rows
of the level below. The block of the Gram matrix is then
    G[block, cols] = A_rows  (Delta rows . A_cols^T),
the second factor a segment sum over the column trees' occurrences. Only matchable pairs are
ever touched; symmetric Grams compute each block against the trees at or after it only.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._validate import is_traced
from ..trees._forest import Forest

# Padded arity classes: a node of arity a is computed with the smallest class >= a.
_CLASSES = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 256], np.int64)
# Child-pair grids up to this many cells get the unrolled subsequence DP.
_UNROLL = 64
# Entry batches are padded to one of these sizes (few shapes -> few compilations).
_CHUNKS = (1 << 12, 1 << 18)
# buf[0] is 0 (the "no match" slot), buf[1] holds residual mode's constant mu lam^2.
_FIRST_SLOT = 2
# Residual-mode pair selection: groups with at least this many (row, member) candidates are
# tested as one dense bitset outer product; candidate arrays are built in chunks of this size.
_DENSE_GROUP = 1 << 16
_PAIR_CHUNK = 1 << 23
# Sorted Delta entries go to the device in pieces of this many entries.
_PIECE = 1 << 21


def _arity_class(arity: np.ndarray) -> np.ndarray:
    top = int(arity.max(initial=0))
    if top > _CLASSES[-1]:
        raise ValueError(f"nodes with more than {_CLASSES[-1]} children are not supported yet")
    return np.searchsorted(_CLASSES, arity).astype(np.int64)


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + n) for every (s, n)."""
    lens = lens.astype(np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.cumsum(lens) - lens
    return np.repeat(starts.astype(np.int64) - offsets, lens) + np.arange(total, dtype=np.int64)


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


class Params(NamedTuple):
    lam: Any
    mu: Any
    vectors: Any = None  # unit-norm word vectors [V, d] (SPTK)
    threshold: Any = None  # similarities below it count as 0 (SPTK)
    gamma: Any = None  # SPTK's Gaussian similarity exp(gamma (cos - 1)); None: thresholded cosine


class _DeviceForest(NamedTuple):
    arity: jax.Array
    child_start: jax.Array
    child_flat: jax.Array
    key: jax.Array
    label: jax.Array
    vec_index: jax.Array


def _children(dev: _DeviceForest, nodes: jax.Array, width: int) -> tuple[jax.Array, jax.Array]:
    k = jnp.arange(width, dtype=jnp.int32)
    valid = k[None, :] < dev.arity[nodes][:, None]
    kids = dev.child_flat[dev.child_start[nodes][:, None] + k[None, :]]
    return jnp.where(valid, kids, 0), valid


def _subseq_sum(s: jax.Array, lam: jax.Array, max_subseq: int | None) -> jax.Array:
    """Sum over equal-length child subsequence pairs of lam^gaps * prod s[i_k, j_k].

    `s` is `[E, A, B]` (child-pair Deltas). No subtraction anywhere, so a float32 overflow
    shows up as inf, never as inf - inf = NaN.
    """
    _, a, b = s.shape
    jj = jnp.arange(b)
    # decay[j', j] = lam^(j - j') for j' <= j: a row-wise decayed cumulative sum as a matmul.
    decay_b = jnp.where(jj[:, None] <= jj[None, :],
                        lam ** jnp.maximum(jj[None, :] - jj[:, None], 0), 0)
    if (max_subseq is None or max_subseq >= min(a, b)) and a * b <= _UNROLL:
        # Small nodes: the same recurrence unrolled into one fused elementwise program
        # (a scan costs ~10x more per entry at these sizes on a CPU).
        p_prev, total = None, jnp.zeros(s.shape[:1], s.dtype)
        for i in range(a):
            p_row, run = [], None
            for j in range(b):
                x = s[:, i, j] if p_prev is None or j == 0 else s[:, i, j] * (1 + p_prev[j - 1])
                total = total + x
                run = x if run is None else x + lam * run
                p_row.append(run if p_prev is None else run + lam * p_prev[j])
            p_prev = p_row
        return total
    if max_subseq is None or max_subseq >= min(a, b):
        # X = S * (1 + shift(P)), P the 2-D decayed prefix sum of X, built row by row.
        def row(carry, s_row):
            p_prev, total = carry
            shifted = jnp.concatenate([jnp.zeros_like(p_prev[:, :1]), p_prev[:, :-1]], axis=1)
            x_row = s_row * (1 + shifted)
            p_row = x_row @ decay_b + lam * p_prev
            return (p_row, total + x_row.sum(axis=1)), None

        init = (jnp.zeros_like(s[:, 0, :]), jnp.zeros_like(s[:, 0, 0]))
        (_, total), _ = jax.lax.scan(row, init, jnp.swapaxes(s, 0, 1))
        return total
    ii = jnp.arange(a)
    decay_a = jnp.where(ii[:, None] >= ii[None, :],
                        lam ** jnp.maximum(ii[:, None] - ii[None, :], 0), 0)
    d = s
    total = d.sum(axis=(1, 2))
    for _ in range(1, max_subseq):
        p = jnp.einsum("ik,ekl,lj->eij", decay_a, d, decay_b)
        shifted = jnp.pad(p, ((0, 0), (1, 0), (1, 0)))[:, :a, :b]
        d = s * shifted
        total = total + d.sum(axis=(1, 2))
    return total


def _entry_values(buf, q, v, dev, row_off, pos, params: Params, *, plan_static, a_pad, b_pad):
    family, plus_one, max_subseq, smoothed, residual = plan_static
    dtype = buf.dtype
    lam = jnp.asarray(params.lam, dtype)
    if family == "aligned":
        if a_pad == 0:
            return jnp.broadcast_to(lam, q.shape)
        cq, valid = _children(dev, q, a_pad)
        cv, _ = _children(dev, v, a_pad)
        internal = valid & (dev.arity[cq] > 0)
        off, p = row_off[cq], pos[cv]
        ok = internal & (off >= 0) & (p >= 0) & (dev.key[cq] == dev.key[cv])
        s = jnp.where(ok, buf[jnp.where(ok, off + p, 0)], 0)
        factors = jnp.where(internal, (1 + s) if plus_one else s, 1)
        return lam * jnp.prod(factors, axis=1)
    mu = jnp.asarray(params.mu, dtype)
    if residual:
        # R(q, v) = mu * DP over child pairs, a child pair's Delta being mu lam^2 + its R
        # (R = 0 where it has no row: leaves, pairs never computed).
        cq, vq = _children(dev, q, a_pad)
        cv, vv = _children(dev, v, b_pad)
        off, p = row_off[cq], pos[cv]
        same = (vq[:, :, None] & vv[:, None, :]
                & (dev.key[cq][:, :, None] == dev.key[cv][:, None, :]))
        stored = same & (off >= 0)[:, :, None] & (p >= 0)[:, None, :]
        r = jnp.where(stored, buf[jnp.where(stored, off[:, :, None] + p[:, None, :], 0)], 0)
        s = jnp.where(same, buf[1] + r, 0)
        return mu * _subseq_sum(s, lam, max_subseq)
    if smoothed:
        iq, iv = dev.vec_index[q], dev.vec_index[v]
        have = (iq >= 0) & (iv >= 0)
        vecs = params.vectors
        cos = jnp.sum(vecs[jnp.maximum(iq, 0)] * vecs[jnp.maximum(iv, 0)], axis=-1).astype(dtype)
        if params.gamma is None:
            thr = jnp.asarray(params.threshold, dtype)
            sim = jnp.where(have & (cos >= thr), jnp.clip(cos, 0, 1), 0)
        else:  # None or not is pytree structure, so each variant compiles on its own
            gamma = jnp.asarray(params.gamma, dtype)
            sim = jnp.where(have, jnp.exp(gamma * (jnp.minimum(cos, 1) - 1)), 0)
        sigma = jnp.where(dev.label[q] == dev.label[v], 1, sim)
    else:
        sigma = jnp.ones(q.shape, dtype)
    if a_pad == 0 or b_pad == 0:
        return mu * sigma * lam**2
    cq, vq = _children(dev, q, a_pad)
    cv, vv = _children(dev, v, b_pad)
    off, p = row_off[cq], pos[cv]
    ok = (
        (vq & (off >= 0))[:, :, None]
        & (vv & (p >= 0))[:, None, :]
        & (dev.key[cq][:, :, None] == dev.key[cv][:, None, :])
    )
    s = jnp.where(ok, buf[jnp.where(ok, off[:, :, None] + p[:, None, :], 0)], 0)
    return mu * sigma * (lam**2 + _subseq_sum(s, lam, max_subseq))


@functools.partial(
    jax.jit, static_argnames=("plan_static", "a_pad", "b_pad", "step"), donate_argnums=(0,)
)
def _fill(buf, piece, start, count, dev, row_off, pos, params, *, plan_static, a_pad, b_pad, step):
    """Delta entries piece[:, start:start+count] (rows q, columns v, buf slots) into buf."""
    part = jax.lax.dynamic_slice_in_dim(piece, start, step, axis=1)
    live = jnp.arange(step) < count
    q = jnp.where(live, part[0], 0)
    v = jnp.where(live, part[1], 0)
    out = jnp.where(live, part[2], buf.shape[0] - 1)  # the last slot takes padded writes
    vals = _entry_values(
        buf, q, v, dev, row_off, pos, params, plan_static=plan_static, a_pad=a_pad, b_pad=b_pad
    )
    return buf.at[out].set(vals.astype(buf.dtype))


@functools.partial(jax.jit, static_argnames=("n_out",), donate_argnums=(0,))
def _accumulate(out, buf, idx, seg, weight, *, n_out):
    return out.at[seg].add(buf[idx] * weight)


@functools.partial(jax.jit, static_argnames=("cols",), donate_argnums=(0,))
def _spread(g, a_shared, z, *, cols):
    prec = jax.lax.Precision.HIGHEST  # no TF32 on GPUs: these values feed exact results
    return g + jnp.matmul(a_shared, z.reshape(-1, cols), precision=prec).reshape(-1)


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


@functools.partial(jax.jit, static_argnames=("size", "dtype", "residual"))
def _new_buffer(params, *, size, dtype, residual):
    buf = jnp.zeros(size, dtype)
    if residual:
        buf = buf.at[1].set(jnp.asarray(params.mu, dtype) * jnp.asarray(params.lam, dtype) ** 2)
    return buf


def _pow2(n: int, least: int = 1024) -> int:
    return max(least, 1 << max(0, (n - 1).bit_length()))


def _ladder(n: int) -> int:
    """Buffer sizes on a coarse ladder (powers of 4 from 2^16): the compiled recurrences
    depend on the buffer's shape, so few sizes mean few compilations across calls."""
    size = 1 << 16
    while size < n:
        size <<= 2
    return size


def _bucket(n: int, multiple: int = 0) -> int:
    """A padded size for n: a multiple of `multiple`, else the next power of two (>= 64)."""
    if multiple:
        return max(multiple, -(-n // multiple) * multiple)
    return max(64, 1 << max(0, (n - 1).bit_length()))



@dataclasses.dataclass
class Counts:
    """Work counters: they do not drift with the machine."""

    delta_entries: int = 0  # Delta(q, v) values computed (distinct subtree pairs)
    constant_entries: int = 0  # residual mode: same-group pairs skipped (Delta = mu lam^2)
    node_pairs: int = 0  # matched node pairs these stand for (sum over tree pairs)
    blocks: int = 0

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
        self._aclass = _arity_class(f.arity)
        key = plan.key.astype(np.int32)
        vec_index = plan.vec_index if plan.vec_index is not None else np.full_like(key, -1)
        # Device arrays padded to power-of-two lengths: the compiled recurrences depend on
        # their shapes, so forests of similar size share compilations.
        self._n_pad = n_pad = _pow2(f.n_nodes + 1)
        pad = max(int(_CLASSES[self._aclass.max(initial=0)]), 1)
        flat = np.zeros(_pow2(len(f.child_flat) + pad), np.int32)
        flat[: len(f.child_flat)] = f.child_flat

        def padded(a, fill):
            out = np.full(n_pad, fill, np.int32)
            out[: len(a)] = a
            return jnp.asarray(out)

        self.dev = _DeviceForest(
            arity=padded(f.arity, 0),
            child_start=padded(f.child_start, 0),
            child_flat=jnp.asarray(flat),
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
        self.counts = Counts()
        self._buf_size = 0
        self._cols_pad = 0
        self._lock = threading.Lock()  # blocks run on several threads (compute_gram)
        self._dev_on: dict = {}  # per-device copies of `dev` (compute_gram's `devices`)

    def _count(self, **added: int) -> None:
        with self._lock:
            for name, value in added.items():
                setattr(self.counts, name, getattr(self.counts, name) + int(value))

    def _grow(self, attr: str, size: int) -> int:
        """Keeps a padded size monotone over calls (fewer shapes, fewer compilations)."""
        with self._lock:
            setattr(self, attr, max(getattr(self, attr), size))
            return getattr(self, attr)

    # -- host-side planning -------------------------------------------------------------
    def _occurrences(self, trees: np.ndarray):
        f = self.forest
        starts, ends = f.tree_ptr[trees], f.tree_ptr[trees + 1]
        idx = _ranges(starts, ends - starts)
        local = np.repeat(np.arange(len(trees)), ends - starts)
        node = f.count_node[idx]
        keep = self.plan.key[node] >= 0
        return node[keep], local[keep], f.count[idx][keep]

    def _forest_on(self, device) -> _DeviceForest:
        with self._lock:
            dev = self._dev_on.get(device)
            if dev is None:
                dev = self._dev_on[device] = jax.device_put(self.dev, device)
            return dev

    def block(self, row_trees: np.ndarray, col_trees: np.ndarray, params: Params,
              device: Any = None) -> jax.Array:
        """`G[row_trees, col_trees]` as a `[len(row_trees), len(col_trees)]` array.

        With `device`, the block's recurrences run there (on a copy of the forest arrays kept
        on that device); its result stays there.
        """
        if device is None:
            return self._block(row_trees, col_trees, params, self.dev)
        dev = self._forest_on(device)
        # The default device is thread-local: buffers and index arrays made here land on
        # `device`, so every call of the block runs there. (Parameters already there are not
        # copied again.)
        with jax.default_device(device):
            return self._block(row_trees, col_trees, jax.device_put(params, device), dev)

    def _block(self, row_trees, col_trees, params: Params, dev: _DeviceForest) -> jax.Array:
        f, plan = self.forest, self.plan
        n_keys, n_cls = plan.n_keys, len(_CLASSES)
        col = self._occurrences(np.asarray(col_trees, np.int64))
        row = self._occurrences(np.asarray(row_trees, np.int64))
        stored = self._stored
        # Columns: the stored nodes of each match group, sorted by (group, arity class).
        members = np.unique(col[0][stored[col[0]]])
        m_key = plan.key[members].astype(np.int64)
        order = np.lexsort((self._aclass[members], m_key))
        members, m_key = members[order], m_key[order]
        group_start = np.searchsorted(m_key, np.arange(n_keys + 1))
        group_len = np.diff(group_start)
        pos = np.full(self._n_pad, -1, np.int32)
        pos[members] = np.arange(len(members)) - group_start[m_key]
        # Rows: the distinct stored subtrees of the row trees, each a row over its group.
        rows = np.unique(row[0][stored[row[0]]])
        r_key = plan.key[rows].astype(np.int64)
        r_len = group_len[r_key]
        r_off = _FIRST_SLOT + np.cumsum(r_len) - r_len
        row_off = np.full(self._n_pad, -1, np.int32)
        row_off[rows] = r_off
        # One buffer size for the whole run where possible: fewer shapes, fewer compilations.
        size = self._grow("_buf_size", _ladder(_FIRST_SLOT + 1 + int(r_len.sum())))
        buf = _new_buffer(params, size=size, dtype=self.dtype, residual=plan.residual)
        ri, midx = self._pairs(rows, r_key, members, group_start, group_len)
        self._count(delta_entries=len(ri), constant_entries=int(r_len.sum()) - len(ri))
        out = (r_off - group_start[r_key])[ri] + midx  # the buf slot of Delta(rows[ri], v)
        # Children first: buckets ordered by the row's height, then by arity classes.
        r_height = f.height[rows]
        levels = np.unique(r_height)
        r_code = (np.searchsorted(levels, r_height) * n_cls + self._aclass[rows]) * n_cls
        code = r_code[ri] + self._aclass[members][midx]
        order = np.argsort(code.astype(np.uint16) if code.max(initial=0) < 1 << 16 else code,
                           kind="stable")  # 16-bit keys: numpy's radix sort
        code = code[order]
        cuts = np.concatenate([[0], np.flatnonzero(np.diff(code)) + 1, [len(code)]])
        if len(code) == 0:
            cuts = cuts[:1]
        entries = np.stack([rows[ri[order]], members[midx[order]], out[order]]).astype(np.int32)
        buf = self._fill_buckets(buf, entries, code, cuts, jnp.asarray(row_off), jnp.asarray(pos),
                                 params, dev)
        return self._contract(buf, rows, ri, midx, out, members, row, col,
                              len(row_trees), len(col_trees))

    def _pairs(self, rows, r_key, members, group_start, group_len):
        """The (row index, member index) pairs whose Delta entries must be computed.

        Every same-group pair, except in residual mode, where a pair of internal nodes with
        no child key in common has R = 0 (Delta is the constant mu lam^2) and is skipped. The
        test is a bitset of child keys (exact for the 64 most frequent keys, hashed for the
        rest: a collision only costs one DP that yields 0).
        """
        r_len = group_len[r_key]
        if not self.plan.residual:
            return np.repeat(np.arange(len(rows)), r_len), _ranges(group_start[r_key], r_len)
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
            cand_m = _ranges(group_start[r_key[small[s:e]]], sl[s:e])
            hit = ((mask_r[0, cand_r] & mask_m[0, cand_m]) != 0) | (
                (mask_r[1, cand_r] & mask_m[1, cand_m]) != 0)
            ris.append(cand_r[hit])
            ms.append(cand_m[hit])
            s = e
        if not ris:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(ris).astype(np.int64), np.concatenate(ms).astype(np.int64)

    def _contract(self, buf, rows, ri, midx, out, members, row, col, n_rows, n_cols):
        """G[i, j] = sum over (q, v) of A[i, q] Delta(q, v) A[j, v] for the block.

        Terms come as *virtual rows*, each with its occurrences in the row trees and its
        items (a buf slot times an occurrence in a column tree): one per stored row q
        (items: the computed pairs (q, v)), and in residual mode one per match group with
        the constant mu lam^2 (buf slot 1) on every same-group pair. A virtual row found in
        one row tree only is added straight into that tree's Gram row; shared ones are summed
        once into a row of Z, and Z is spread by a small dense product. G and Z are one
        scatter target: rows [0, rows_pad) are G's, the rest Z's.
        """
        plan = self.plan
        r_node, r_tree, r_count = row
        c_node, c_tree, c_count = col
        cols_pad = self._grow("_cols_pad", _bucket(n_cols, 512))
        rows_pad = _bucket(n_rows)
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
        target[shared] = rows_pad + np.arange(len(shared))
        zs_pad = _bucket(len(shared)) if len(shared) else 0
        if (rows_pad + zs_pad) * cols_pad >= 1 << 31:
            raise ValueError("Gram block too large for int32 indexing: use a smaller block_size")
        # Items of the stored rows: each computed pair (q, v) times v's column occurrences.
        c_st = self._stored[c_node]
        pos_of = np.full(self._n_pad, -1, np.int64)
        pos_of[members] = np.arange(len(members))
        c_mem = pos_of[c_node[c_st]]
        by_mem = np.argsort(c_mem, kind="stable")
        occ_tree, occ_count = c_tree[c_st][by_mem], c_count[c_st][by_mem]
        occ_start = np.searchsorted(c_mem[by_mem], np.arange(len(members) + 1))
        occ_len = np.diff(occ_start)[midx]
        item = _ranges(occ_start[midx], occ_len)
        it_idx = [np.repeat(out, occ_len)]
        it_seg = [np.repeat(target[ri] * cols_pad, occ_len) + occ_tree[item]]
        it_w = [np.repeat(weight[ri], occ_len) * occ_count[item]]
        if plan.residual:
            # Items of the group rows: every column occurrence of the group, times buf[1].
            ck = plan.key[c_node].astype(np.int64)
            by_key = np.argsort(ck, kind="stable")
            k_start = np.searchsorted(ck[by_key], groups)
            k_len = np.searchsorted(ck[by_key], groups, side="right") - k_start
            kitem = by_key[_ranges(k_start, k_len)]
            vr = len(rows) + np.repeat(np.arange(len(groups)), k_len)
            it_idx.append(np.ones(len(kitem), np.int64))
            it_seg.append(target[vr] * cols_pad + c_tree[kitem])
            it_w.append(weight[vr] * c_count[kitem])
        gz = jnp.zeros((rows_pad + zs_pad) * cols_pad, self.dtype)
        gz = self._scatter(gz, buf, *(np.concatenate(a) for a in (it_idx, it_seg, it_w)))
        g = gz[: rows_pad * cols_pad]
        if len(shared):
            z_of = np.full(n_vr, -1, np.int64)
            z_of[shared] = np.arange(len(shared))
            a_shared = np.zeros((rows_pad, zs_pad), np.float64)
            np.add.at(a_shared, (vr_tree[~one], z_of[vr_row[~one]]), vr_w[~one])
            g = _spread(g, jnp.asarray(a_shared, self.dtype), gz[rows_pad * cols_pad:],
                        cols=cols_pad)
        self._count(blocks=1)
        return g.reshape(rows_pad, cols_pad)[:n_rows, :n_cols]

    def _scatter(self, out, buf, idx, seg, weight):
        """out[seg[k]] += buf[idx[k]] * weight[k], in fixed-size chunks."""
        step = _CHUNKS[-1]
        for s in range(0, len(idx), step):
            e = min(s + step, len(idx))
            pad = step - (e - s)
            out = _accumulate(
                out,
                buf,
                jnp.asarray(np.pad(idx[s:e], (0, pad)).astype(np.int32)),
                jnp.asarray(np.pad(seg[s:e], (0, pad)).astype(np.int32)),
                jnp.asarray(np.pad(weight[s:e], (0, pad)).astype(self.dtype)),
                n_out=out.shape[0],
            )
        return out

    def _fill_buckets(self, buf, entries, code, cuts, dev_row_off, dev_pos, params, dev):
        """Runs the fill over the sorted entries `int32[3, E]` (q, v, buf slot), bucket by bucket.

        Entries go to the device in a few fixed-size pieces; each call reads its chunk out of a
        piece by offset, so a call costs one dispatch and no transfer.
        """
        n_cls = len(_CLASSES)
        piece, piece_start = None, 0
        for s0, e0 in zip(cuts[:-1], cuts[1:]):
            ac, bc = divmod(int(code[s0]) % (n_cls * n_cls), n_cls)
            a_pad, b_pad = int(_CLASSES[ac]), int(_CLASSES[bc])
            if self.plan.family == "aligned":
                b_pad = a_pad
            # Chunks of at most `full` entries (a working set [E, A, B] of about the same size
            # for every bucket); a short remainder is padded to full/8 or full/64 only: three
            # compilations per (a_pad, b_pad), little padded work on small levels.
            full = max(_CHUNKS[0], _CHUNKS[-1] // max(1, a_pad * b_pad))
            for s in range(s0, e0, full):
                e = min(s + full, e0)
                step = next(c for c in (full >> 6, full >> 3, full) if c >= e - s)
                if piece is None or e > piece_start + _PIECE:
                    piece_start = s
                    host = np.zeros((3, _PIECE + _CHUNKS[-1]), np.int32)
                    chunk = entries[:, s: s + _PIECE]
                    host[:, : chunk.shape[1]] = chunk
                    piece = jnp.asarray(host)
                buf = _fill(
                    buf, piece, np.int32(s - piece_start), np.int32(e - s), dev, dev_row_off,
                    dev_pos, params, plan_static=self._static, a_pad=a_pad, b_pad=b_pad,
                    step=step,
                )
        return buf


def compute_gram(
    engine: GramEngine,
    params: Params,
    rows: np.ndarray,
    cols: np.ndarray | None,
    *,
    block_size: int = 128,
    progress: bool = False,
    threads: int = 2,
    devices: Sequence[Any] | None = None,
) -> jax.Array:
    """The Gram matrix of trees `rows` against `cols` (None: `rows` against itself, symmetric).

    Row blocks run on `threads` host threads: one block's numpy planning overlaps another's
    compiled recurrences (both release the GIL). Each block's result does not depend on the
    threads, so neither does the Gram matrix. Under a JAX transformation (traced parameters:
    grad, vmap, jit) blocks run in the calling thread, where the trace lives.

    With `devices` (JAX devices, e.g. `jax.devices()`), the row blocks are sharded over them:
    block b runs on `devices[b % len(devices)]`, at least one host thread per device, and the
    blocks are gathered on `devices[0]`. A block's values do not depend on where it ran.
    """
    n = len(rows)
    symmetric = cols is None
    m = n if symmetric else len(cols)
    t0 = time.perf_counter()
    starts = list(range(0, n, block_size))

    traced = any(is_traced(x) for x in jax.tree_util.tree_leaves(params))
    if devices is not None:
        devices = list(devices)
        if not devices:
            raise ValueError("devices must name at least one JAX device")
        if traced:
            raise ValueError("devices= shards concrete Gram blocks; under jit/grad/vmap the "
                             "blocks run in the tracing thread: leave devices unset there")
        threads = max(threads, len(devices))
        # The parameters (SPTK's word vectors among them) go to each device once, not per block.
        params_on = {d: jax.device_put(params, d) for d in devices}

    def run(b: int, s: int) -> jax.Array:
        e = min(s + block_size, n)
        if devices is None:
            part = engine.block(rows[s:e], rows[s:] if cols is None else cols, params, None)
        else:
            device = devices[b % len(devices)]
            part = engine.block(rows[s:e], rows[s:] if cols is None else cols,
                                params_on[device], device)
            part = jax.device_put(part, devices[0])
        return part if traced else part.block_until_ready()  # [e - s, n - s] or [e - s, m]

    blocks: list[jax.Array] = [jnp.zeros(0)] * len(starts)
    if traced or threads <= 1:
        for b, s in enumerate(starts):
            blocks[b] = run(b, s)
            if progress:
                _progress(b + 1, len(starts), time.perf_counter() - t0)
    else:
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            futures = {pool.submit(run, b, s): b for b, s in enumerate(starts)}
            for done, fut in enumerate(concurrent.futures.as_completed(futures)):
                blocks[futures[fut]] = fut.result()
                if progress:
                    _progress(done + 1, len(starts), time.perf_counter() - t0)
    if not symmetric:
        return jnp.concatenate(blocks, axis=0) if blocks else jnp.zeros((0, m), engine.dtype)
    upper = jnp.concatenate(
        [jnp.pad(part, ((0, 0), (s, 0))) for s, part in zip(starts, blocks)], axis=0
    ) if blocks else jnp.zeros((0, 0), engine.dtype)
    return jnp.triu(upper) + jnp.triu(upper, 1).T


def _progress(done: int, total: int, elapsed: float) -> None:
    width = 30
    fill = width * done // total
    eta = elapsed / done * (total - done)
    sys.stderr.write(
        f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} blocks "
        f"{elapsed:6.1f}s elapsed, ~{eta:5.1f}s left"
    )
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()
