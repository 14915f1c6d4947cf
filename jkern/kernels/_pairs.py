"""Which node pairs of a Gram block need a Delta entry computed.

Every pair of a row node and a column member of the same match group, except in PTK's
residual mode, where a pair of internal nodes with no child key in common has R = 0 (its
Delta is the constant mu lam^2, contracted per group) and is skipped. The test is a bitset of
child keys per node (exact for the 64 most frequent keys, hashed for the rest: a collision
only costs one DP that yields 0). Nodes with equal bitsets test alike, so a large group's
pairs come from its few distinct bitsets (`PairFinder.pairs`); bitsets and their classes
depend on the forest only, and are made once per engine.
"""

from __future__ import annotations

import numpy as np

from ..trees._forest import Forest, concat_ranges

# Residual-mode pair selection: groups with at least this many (row, member) candidates are
# tested as one dense bitset outer product; candidate arrays are built in chunks of this size.
_DENSE_GROUP = 1 << 16
_PAIR_CHUNK = 1 << 20


def child_key_bits(f: Forest, key: np.ndarray, n_keys: int) -> np.ndarray:
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


def mask_classes(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(`int32[F]` each node's class, `uint64[2, C]` each class's bitset): the distinct
    child-key bitsets of `child_key_bits`."""
    order = np.lexsort((mask[1], mask[0]))
    m = mask[:, order]
    new = np.ones(len(order), bool)
    new[1:] = (m[0, 1:] != m[0, :-1]) | (m[1, 1:] != m[1, :-1])
    cls = np.empty(len(order), np.int32)
    cls[order] = np.cumsum(new) - 1
    return cls, m[:, new]


class PairFinder:
    """The pair-finding side of an engine (see the module docstring).

    Args:
        forest: the engine's forest.
        key: `int32[F]` each node's match group (-1: none), `n_keys` groups.
        aclass: each node's arity class.
        residual: PTK's residual mode (pairs without a common child key skipped).
    """

    def __init__(self, forest: Forest, key: np.ndarray, n_keys: int, aclass: np.ndarray,
                 residual: bool) -> None:
        self.height, self.aclass, self.residual = forest.height, aclass, residual
        if residual:
            self.mask = child_key_bits(forest, key, n_keys)
            # Nodes with the same bitset test alike: pair finding tests the distinct
            # bitsets (a few hundred per group where a group has thousands of nodes).
            self.mask_class, self.class_mask = mask_classes(self.mask)

    def share_child_key(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Residual mode: False where q and v have no child key in common (R(q, v) = 0, Delta
        is the constant); True everywhere otherwise."""
        if not self.residual:
            return np.ones(len(q), bool)
        m = self.mask
        return ((m[0, q] & m[0, v]) != 0) | ((m[1, q] & m[1, v]) != 0)

    def pairs(self, rows: np.ndarray, r_key: np.ndarray, members: np.ndarray,
              group_start: np.ndarray, group_len: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (row index, member index) pairs whose Delta entries must be computed, as two
        int32 arrays (a block's largest): rows `rows` (match groups `r_key`) against the
        column members `members`, group g's run being `group_start[g]` on, `group_len[g]`
        long. Rows come in group order, each with its members in order."""
        r_len = group_len[r_key]
        if not self.residual:
            # rows in the order the recurrences take them (height, then arity class): for
            # ST/SST, whose entries' program depends on the row only, the entries come out
            # in `Layout.order`'s order and need no sorting there
            by_row = np.lexsort((self.aclass[rows], self.height[rows])).astype(np.int32)
            return (np.repeat(by_row, r_len[by_row]),
                    concat_ranges(group_start[r_key[by_row]], r_len[by_row]).astype(np.int32))
        by_key = np.argsort(r_key, kind="stable").astype(np.int32)
        g_ids, g_first, g_rows = np.unique(r_key[by_key], return_index=True, return_counts=True)
        big = g_rows * group_len[g_ids] >= _DENSE_GROUP
        ris, ms = [], []
        cls, cmask = self.mask_class, self.class_mask
        for g, first, nr in zip(g_ids[big], g_first[big], g_rows[big]):
            # A big group: its rows' distinct bitsets against its members (a dense outer
            # product in chunks), then each row takes its bitset's list of members.
            gs, gl = int(group_start[g]), int(group_len[g])
            part = by_key[first:first + nr]
            u, inv = np.unique(cls[rows[part]], return_inverse=True)
            m_cls = cls[members[gs:gs + gl]]
            m0, m1 = cmask[0, m_cls], cmask[1, m_cls]
            step = max(1, _PAIR_CHUNK // gl)
            per_u, hit_j = [], []
            for a in range(0, len(u), step):
                uu = u[a:a + step]
                hit = (cmask[0, uu][:, None] & m0) != 0
                hit |= (cmask[1, uu][:, None] & m1) != 0
                per_u.append(np.count_nonzero(hit, axis=1))
                hit_j.append(np.nonzero(hit)[1].astype(np.int32))
            counts = np.concatenate(per_u)
            lens = counts[inv]
            ris.append(np.repeat(part, lens))
            ms.append(np.concatenate(hit_j)[concat_ranges((np.cumsum(counts) - counts)[inv],
                                                          lens)] + np.int32(gs))
        small = by_key[~np.repeat(big, g_rows)]
        sl = r_len[small]
        ends = np.cumsum(sl)
        s = 0
        while s < len(small):  # the other groups: candidate lists, chunks of ~_PAIR_CHUNK
            e = max(s + 1, int(np.searchsorted(ends, ends[s] - sl[s] + _PAIR_CHUNK)))
            cand_r = np.repeat(small[s:e], sl[s:e])
            cand_m = concat_ranges(group_start[r_key[small[s:e]]], sl[s:e])
            hit = self.share_child_key(rows[cand_r], members[cand_m])
            ris.append(cand_r[hit])
            ms.append(cand_m[hit].astype(np.int32))
            s = e
        if not ris:
            return np.zeros(0, np.int32), np.zeros(0, np.int32)
        return np.concatenate(ris), np.concatenate(ms)
