"""The contraction of a Gram block: its Delta entries summed into the block.

    G[i, j] = sum over (q, v) of A[i, q] Delta(q, v) A[j, v],

as *items* (a buffer slot, a target cell, a weight) scatter-added by a compiled program
(`_recurrences.accumulate`) in fixed-size chunks. The index arrays are made on the host from
the block's pairs and its column side (`_layout.Columns`); a row occurring in several row
trees is summed once into a row of Z, spread into G on the host (`spread`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from .._validate import is_traced
from ..errors import InputError
from ..trees._forest import concat_ranges
from ._layout import Columns, ladder
from ._recurrences import accumulate, accumulate_traced, to_device, zeros
from ._timing import Seconds

if TYPE_CHECKING:
    from ._engine import MatchPlan

# Contraction items per scatter call.
SCATTER_CHUNK = 1 << 18


class Contraction:
    """The contraction side of an engine.

    Args:
        plan: the kernel's plan of the forest.
        stored: which nodes get Delta rows and columns.
        dtype: the Gram's dtype.
        seconds: the engine's timer (the compiled programs count as "program").
        count: the engine's counter (`node_pairs`, `blocks`).
    """

    def __init__(self, plan: MatchPlan, stored: np.ndarray, dtype: Any, seconds: Seconds,
                 count: Callable[..., None]) -> None:
        self.plan, self._stored, self.dtype = plan, stored, dtype
        self._seconds, self._count = seconds, count

    def block(self, buf, rows, ri, midx, out, row, cols: Columns, n_rows, batch=None):
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
        size = ladder(cells + 1, 1 << 18, 2)
        with self._seconds.phase("program"):
            gz = zeros(shape=(size,) if batch is None else (batch, size), dtype=self.dtype)
        single = np.take(m_len == 1, midx)
        m_first = occ_start[:-1]
        r_seg, r_w = target * n_cols, weight
        # A pair's item, read straight into int32 where no weight can pass 2^31 (a bound:
        # the largest row weight times the largest column count)
        top_w = int(r_w[: len(rows)].max(initial=0)) * int(occ_count.max(initial=0))
        tables = None if top_w >= 1 << 31 else (
            r_seg[: len(rows)].astype(np.int32), r_w[: len(rows)].astype(np.int32),
            occ_tree[m_first].astype(np.int32), occ_count[m_first].astype(np.int32))
        for a, b in chunks(len(ri), SCATTER_CHUNK):
            e_ri, e_m, lone = ri[a:b], midx[a:b], single[a:b]
            if lone.all():
                if tables is not None:
                    gz = self.scatter_pairs(gz, buf, out[a:b], e_ri, e_m, tables)
                    continue
                gz = self.scatter(gz, buf, out[a:b], r_seg[e_ri] + occ_tree[m_first[e_m]],
                                   r_w[e_ri] * occ_count[m_first[e_m]])
                continue
            s_ri, s_m = e_ri[lone], e_m[lone]
            if tables is not None:
                gz = self.scatter_pairs(gz, buf, out[a:b][lone], s_ri, s_m, tables)
            else:
                gz = self.scatter(gz, buf, out[a:b][lone],
                                   r_seg[s_ri] + occ_tree[m_first[s_m]],
                                   r_w[s_ri] * occ_count[m_first[s_m]])
            many = ~lone
            m_ri, m_m, m_out = e_ri[many], e_m[many], out[a:b][many]
            lens = m_len[m_m]
            item = concat_ranges(m_first[m_m], lens)
            gz = self.scatter(gz, buf, np.repeat(m_out, lens),
                               np.repeat(r_seg[m_ri], lens) + occ_tree[item],
                               np.repeat(r_w[m_ri], lens) * occ_count[item])
        if plan.residual:
            # Items of the group rows: every column occurrence of the group, times buf[1].
            k_start = np.searchsorted(cols.key_sorted, groups)
            k_len = np.searchsorted(cols.key_sorted, groups, side="right") - k_start
            kitem = cols.by_key[concat_ranges(k_start, k_len)]
            vr = len(rows) + np.repeat(np.arange(len(groups)), k_len)
            gz = self.scatter(gz, buf, np.ones(len(kitem), np.int64),
                               target[vr] * n_cols + c_tree[kitem],
                               weight[vr] * c_count[kitem])
        z_of = np.full(n_vr, -1, np.int64)
        z_of[shared] = np.arange(len(shared))
        spreading = (vr_tree[~one], z_of[vr_row[~one]], vr_w[~one])
        self._count(blocks=1)
        if not is_traced(gz):
            with self._seconds.phase("program"):  # the block's programs end here
                gz = np.asarray(gz)
        return spread(gz, spreading, n_rows, len(shared), n_cols)

    def scatter_pairs(self, out, buf, idx, ri, midx, tables):
        """`scatter(out, buf, idx, r_seg[ri] + m_tree[midx], r_w[ri] * m_count[midx])` for
        at most `SCATTER_CHUNK` items, whose weights fit int32 (`tables`: the int32 arrays
        (r_seg, r_w, m_tree, m_count)): one call, its int32 arrays written in place."""
        r_seg, r_w, m_tree, m_count = tables
        n = len(idx)
        if n == 0:
            return out
        packed = np.empty((3, SCATTER_CHUNK), np.int32)
        packed[:, n:] = 0  # padding: adds buf[0] = 0 to out[0]
        packed[0, :n] = idx
        np.add(np.take(r_seg, ri, mode="clip"), np.take(m_tree, midx, mode="clip"),
               out=packed[1, :n])
        np.multiply(np.take(r_w, ri, mode="clip"), np.take(m_count, midx, mode="clip"),
                    out=packed[2, :n])
        add = accumulate_traced if is_traced(out) or is_traced(buf) else accumulate
        with self._seconds.phase("program"):
            return add(out, buf, to_device(packed))

    def scatter(self, out, buf, idx, seg, weight):
        """out[seg[k]] += buf[idx[k]] * weight[k], in fixed-size chunks, each one int32
        array (idx, seg, weight) to the device; padding adds buf[0] = 0 to out[0]."""
        add = accumulate_traced if is_traced(out) or is_traced(buf) else accumulate
        step = SCATTER_CHUNK
        if len(weight) and int(weight.max()) >= 1 << 31:  # counts times counts
            raise InputError("a node occurs too often in one tree for the Gram contraction "
                             "(occurrence weight past 2^31)")
        for s in range(0, len(idx), step):
            e = min(s + step, len(idx))
            packed = np.zeros((3, step), np.int32)
            packed[0, : e - s] = idx[s:e]
            packed[1, : e - s] = seg[s:e]
            packed[2, : e - s] = weight[s:e]
            with self._seconds.phase("program"):
                out = add(out, buf, to_device(packed))
        return out


# `spread` multiplies by a dense spreading matrix when at least 1 in this many of its
# entries is nonzero (the corpora here: 2-10%), else gathers Z's rows pair by pair.
_DENSE_SPREAD = 256


def spread(gz: jax.Array | np.ndarray, spreading: tuple[np.ndarray, np.ndarray, np.ndarray],
           n_rows: int, n_shared: int, n_cols: int) -> Any:
    """The block `G [n_rows, n_cols]` out of the flat scatter target `gz` (G's rows, then
    Z's `n_shared` rows): G plus, for every (tree t, Z row z, weight w) in `spreading`,
    w * Z[z] in G's row t. A NumPy array when `gz` is concrete (the spreading is a few
    vectorized sums on the host: Z's occurrences are few, and a padded dense product on the
    device cost more than the whole block); a JAX array under a transformation. A `[P, ...]`
    target (a batch of parameter values) gives `[P, n_rows, n_cols]`."""
    tree, z, w = spreading
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


def chunks(n: int, step: int) -> list[tuple[int, int]]:
    """(start, stop) of consecutive pieces of range(n), `step` long (the last one shorter)."""
    return [(a, min(a + step, n)) for a in range(0, n, step)]
