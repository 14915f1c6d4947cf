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

import dataclasses
import functools
import sys
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..trees._forest import Forest

# Padded arity classes: a node of arity a is computed with the smallest class >= a.
_CLASSES = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 256], np.int64)
# Entry batches are padded to one of these sizes (few shapes -> few compilations).
_CHUNKS = (1 << 12, 1 << 18)


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
    """

    family: str
    key: np.ndarray
    n_keys: int
    plus_one: bool = True
    max_subseq: int | None = None
    vec_index: np.ndarray | None = None


class Params(NamedTuple):
    lam: Any
    mu: Any
    vectors: Any = None  # unit-norm word vectors [V, d] (SPTK)
    threshold: Any = None  # similarities below it count as 0 (SPTK)


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
    decay_b = jnp.where(jj[:, None] <= jj[None, :], lam ** jnp.maximum(jj[None, :] - jj[:, None], 0), 0)
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
    decay_a = jnp.where(ii[:, None] >= ii[None, :], lam ** jnp.maximum(ii[:, None] - ii[None, :], 0), 0)
    d = s
    total = d.sum(axis=(1, 2))
    for _ in range(1, max_subseq):
        p = jnp.einsum("ik,ekl,lj->eij", decay_a, d, decay_b)
        shifted = jnp.pad(p, ((0, 0), (1, 0), (1, 0)))[:, :a, :b]
        d = s * shifted
        total = total + d.sum(axis=(1, 2))
    return total


def _entry_values(buf, q, v, dev, row_off, pos, params: Params, *, plan_static, a_pad, b_pad):
    family, plus_one, max_subseq, smoothed = plan_static
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
    if smoothed:
        iq, iv = dev.vec_index[q], dev.vec_index[v]
        have = (iq >= 0) & (iv >= 0)
        vecs = params.vectors
        cos = jnp.sum(vecs[jnp.maximum(iq, 0)] * vecs[jnp.maximum(iv, 0)], axis=-1).astype(dtype)
        thr = jnp.asarray(params.threshold, dtype)
        sim = jnp.where(have & (cos >= thr), jnp.clip(cos, 0, 1), 0)
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
    jax.jit, static_argnames=("plan_static", "a_pad", "b_pad"), donate_argnums=(0,)
)
def _fill(buf, q, v, out, dev, row_off, pos, params, *, plan_static, a_pad, b_pad):
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
    node_pairs: int = 0  # matched node pairs these stand for (sum over tree pairs)
    blocks: int = 0


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
        self._static = (plan.family, plan.plus_one, plan.max_subseq, plan.vec_index is not None)
        self.counts = Counts()
        self._buf_size = 0
        self._cols_pad = 0

    # -- host-side planning -------------------------------------------------------------
    def _occurrences(self, trees: np.ndarray):
        f = self.forest
        starts, ends = f.tree_ptr[trees], f.tree_ptr[trees + 1]
        idx = _ranges(starts, ends - starts)
        local = np.repeat(np.arange(len(trees)), ends - starts)
        node = f.count_node[idx]
        keep = self.plan.key[node] >= 0
        return node[keep], local[keep], f.count[idx][keep]

    def block(self, row_trees: np.ndarray, col_trees: np.ndarray, params: Params) -> jax.Array:
        """`G[row_trees, col_trees]` as a `[len(row_trees), len(col_trees)]` array."""
        f, plan = self.forest, self.plan
        n_keys = plan.n_keys
        # Columns: the members of every match group, sorted by (group, arity class).
        c_node, c_tree, c_count = self._occurrences(np.asarray(col_trees, np.int64))
        members = np.unique(c_node)
        m_key = plan.key[members].astype(np.int64)
        order = np.lexsort((self._aclass[members], m_key))
        members, m_key = members[order], m_key[order]
        group_start = np.searchsorted(m_key, np.arange(n_keys + 1))
        group_len = np.diff(group_start)
        pos = np.full(self._n_pad, -1, np.int32)
        pos[members] = np.arange(len(members)) - group_start[m_key]
        n_cls = len(_CLASSES)
        seg_code = m_key * n_cls + self._aclass[members]
        # Rows: the distinct subtrees of the row trees, each a row over its group.
        r_node, r_tree, r_count = self._occurrences(np.asarray(row_trees, np.int64))
        rows = np.unique(r_node)
        r_len = group_len[plan.key[rows]]
        row_off = np.full(self._n_pad, -1, np.int32)
        offsets = 1 + np.cumsum(r_len) - r_len  # buf[0] stays 0: the "no match" slot
        row_off[rows] = offsets
        # One buffer size for the whole run where possible: fewer shapes, fewer compilations.
        size = self._buf_size = max(self._buf_size, _ladder(2 + int(r_len.sum())))
        dump = size - 1  # the last slot takes padded writes
        buf = jnp.zeros(size, self.dtype)
        dev_row_off, dev_pos = jnp.asarray(row_off), jnp.asarray(pos)
        height = f.height[rows]
        for h in np.unique(height):
            level = rows[height == h]
            for ac in np.unique(self._aclass[level]):
                rq = level[self._aclass[level] == ac]
                keys = plan.key[rq].astype(np.int64)
                for bc in range(n_cls):
                    lo = np.searchsorted(seg_code, keys * n_cls + bc)
                    hi = np.searchsorted(seg_code, keys * n_cls + bc, side="right")
                    lens = hi - lo
                    if plan.family == "aligned" and bc != ac:
                        continue
                    if lens.sum() == 0:
                        continue
                    q = np.repeat(rq, lens)
                    member_idx = _ranges(lo, lens)
                    v = members[member_idx]
                    out = row_off[q].astype(np.int64) + (member_idx - group_start[m_key[member_idx]])
                    buf = self._run_fill(buf, q, v, out, dump, dev_row_off, dev_pos, params, ac, bc)
        return self._contract(buf, rows, row_off, pos, r_node, r_tree, r_count,
                              c_node, c_tree, c_count, len(row_trees), len(col_trees))

    def _contract(self, buf, rows, row_off, pos, r_node, r_tree, r_count,
                  c_node, c_tree, c_count, n_rows, n_cols):
        """G[i, j] = sum_q A[i, q] sum_v Delta(q, v) A[j, v] over the block's rows q.

        A row q that occurs in one row tree only (most phrase nodes) is added straight into
        that tree's Gram row; rows shared by several row trees (leaves, preterminals, small
        phrases) are summed once into Z[q, :] and spread by a small dense product.
        """
        plan = self.plan
        n_keys = plan.n_keys
        c_key = plan.key[c_node].astype(np.int64)
        order = np.argsort(c_key, kind="stable")
        c_node, c_tree, c_count, c_key = c_node[order], c_tree[order], c_count[order], c_key[order]
        nnz_start = np.searchsorted(c_key, np.arange(n_keys + 1))
        nnz_len = np.diff(nnz_start)
        row_index = np.searchsorted(rows, r_node)
        n_occ = np.bincount(row_index, minlength=len(rows))
        single = n_occ[row_index] == 1  # occurrence records of rows found in one tree only
        shared_rows = np.flatnonzero(n_occ > 1)
        rows_pad = _bucket(n_rows)
        cols_pad = self._cols_pad = max(self._cols_pad, _bucket(n_cols, 512))
        g = jnp.zeros(rows_pad * cols_pad, self.dtype)
        # rows in one tree: items go to G[tree, j]
        q1 = rows[row_index[single]]
        g = self._items(g, buf, q1, r_tree[single], r_count[single], row_off, pos,
                        c_node, c_tree, c_count, nnz_start, nnz_len, cols_pad)
        if len(shared_rows):
            qs = rows[shared_rows]
            zs_pad = _bucket(len(qs))
            z = jnp.zeros(zs_pad * cols_pad, self.dtype)
            occ = np.bincount(row_index, weights=r_count, minlength=len(rows))[shared_rows]
            z = self._items(z, buf, qs, np.arange(len(qs)), np.ones(len(qs), np.int64), row_off,
                            pos, c_node, c_tree, c_count, nnz_start, nnz_len, cols_pad,
                            occurrences=occ)
            a_shared = np.zeros((rows_pad, zs_pad), np.float64)
            local = np.searchsorted(shared_rows, row_index[~single])
            np.add.at(a_shared, (r_tree[~single], local), r_count[~single])
            g = _spread(g, jnp.asarray(a_shared, self.dtype), z, cols=cols_pad)
        self.counts.blocks += 1
        return g.reshape(rows_pad, cols_pad)[:n_rows, :n_cols]

    def _items(self, out, buf, q, target, weight_q, row_off, pos, c_node, c_tree, c_count,
               nnz_start, nnz_len, cols_pad, occurrences=None):
        """out[target_k * cols_pad + j] += weight_q[k] * sum over q_k's column matches."""
        keys = self.plan.key[q].astype(np.int64)
        lens = nnz_len[keys]
        item = _ranges(nnz_start[keys], lens)
        rep = np.repeat(np.arange(len(q)), lens)
        idx = row_off[q].astype(np.int64)[rep] + pos[c_node[item]]
        seg = target.astype(np.int64)[rep] * cols_pad + c_tree[item]
        weight = weight_q.astype(np.int64)[rep] * c_count[item]
        occ = weight_q if occurrences is None else occurrences
        self.counts.node_pairs += int((occ.astype(np.int64)[rep] * c_count[item]).sum())
        n_out = out.shape[0]
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
                n_out=n_out,
            )
        return out

    def _run_fill(self, buf, q, v, out, dump, dev_row_off, dev_pos, params, ac, bc):
        a_pad, b_pad = int(_CLASSES[ac]), int(_CLASSES[bc])
        if self.plan.family == "aligned":
            b_pad = a_pad
        self.counts.delta_entries += len(q)
        # One entry-batch size per (a_pad, b_pad): a single compilation each, and a working
        # set [E, A, B] of about the same size for every bucket.
        step = max(_CHUNKS[0], _CHUNKS[-1] // max(1, a_pad * b_pad))
        for s in range(0, len(q), step):
            e = min(s + step, len(q))
            pad = step - (e - s)
            buf = _fill(
                buf,
                jnp.asarray(np.pad(q[s:e], (0, pad)).astype(np.int32)),
                jnp.asarray(np.pad(v[s:e], (0, pad)).astype(np.int32)),
                jnp.asarray(np.pad(out[s:e], (0, pad), constant_values=dump).astype(np.int32)),
                self.dev,
                dev_row_off,
                dev_pos,
                params,
                plan_static=self._static,
                a_pad=a_pad,
                b_pad=b_pad,
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
) -> jax.Array:
    """The Gram matrix of trees `rows` against `cols` (None: `rows` against itself, symmetric)."""
    n = len(rows)
    symmetric = cols is None
    m = n if symmetric else len(cols)
    blocks = []
    t0 = time.perf_counter()
    starts = list(range(0, n, block_size))
    for b, s in enumerate(starts):
        e = min(s + block_size, n)
        if symmetric:
            part = engine.block(rows[s:e], rows[s:], params)  # [e - s, n - s]
            blocks.append(part)
        else:
            blocks.append(engine.block(rows[s:e], cols, params))
        if progress:
            _progress(b + 1, len(starts), time.perf_counter() - t0)
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
