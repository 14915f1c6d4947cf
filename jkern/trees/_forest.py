"""The forest: a DAG of the unique subtrees of a whole collection of trees.

Every convolution tree kernel is K(T1, T2) = sum over node pairs of Delta(n1, n2), and Delta
depends only on the subtrees rooted at n1 and n2. Hash-consing a collection into unique
subtrees u with a count matrix A[tree, u] turns a Gram matrix into A Delta A^T, with Delta
computed once per distinct pair of subtrees (see DESIGN.md).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from .._unique import sorted_unique
from ..errors import InputError
from ._tree import Tree


@dataclasses.dataclass(frozen=True, eq=False)
class Forest:
    """Unique subtrees of a tree collection, children before parents.

    Attributes:
        vocab: label strings; `label[u]` indexes into it.
        label: `int32[F]` label id of forest node u.
        arity: `int32[F]` number of children of u (0 for a leaf).
        child_start: `int32[F]` offset of u's children in `child_flat`.
        child_flat: `int32[sum(arity)]` children of all nodes, concatenated, left to right.
        height: `int32[F]` 0 for leaves, 1 + max child height otherwise.
        production: `int32[F]` id of u's production (label, child labels, child leafness);
            leaves get their own ids (a leaf's production is its label).
        count_tree, count_node, count: COO entries of the count matrix A (`int32`, sorted
            by tree): tree `count_tree[k]` contains `count[k]` occurrences of node
            `count_node[k]`.
        n_trees: number of trees.
        tree_ptr: `int64[n_trees + 1]` CSR row pointer of A over the COO entries.

    >>> f = Forest.build([Tree.from_nested(("NP", [("DT", ["the"]), ("NN", ["dog"])])),
    ...                   Tree.from_nested(("NP", [("DT", ["the"]), ("NN", ["cat"])]))])
    >>> f.n_nodes, f.n_trees    # the, (DT the) are shared
    (8, 2)
    """

    vocab: tuple[str, ...]
    label: np.ndarray
    arity: np.ndarray
    child_start: np.ndarray
    child_flat: np.ndarray
    height: np.ndarray
    production: np.ndarray
    count_tree: np.ndarray
    count_node: np.ndarray
    count: np.ndarray
    n_trees: int
    tree_ptr: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.label.shape[0])

    @property
    def is_leaf(self) -> np.ndarray:
        return self.arity == 0

    @property
    def max_arity(self) -> int:
        return int(self.arity.max(initial=0))

    def children(self, u: int) -> np.ndarray:
        s = self.child_start[u]
        return self.child_flat[s : s + self.arity[u]]

    def tree_nodes(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Forest nodes of tree `i` and how often each occurs in it."""
        a, b = self.tree_ptr[i], self.tree_ptr[i + 1]
        return self.count_node[a:b], self.count[a:b]

    def total_nodes(self) -> int:
        """Nodes over all trees before compression (sum of A)."""
        return int(self.count.sum())

    @classmethod
    def build(cls, trees: Sequence[Tree], expand: Sequence[bool] | None = None) -> Forest:
        """Hash-cons `trees` into unique subtrees (iterative; no size limits).

        Args:
            trees: the collection.
            expand: optional flag per tree: an expanded tree shares no node with any other
                tree or with itself (every one of its nodes is a forest node of its own, as
                in a plain tree-by-tree kernel). Used to count and time kernel computations
                done without the DAG (the cutting-plane baselines).
        """
        if expand is not None and len(expand) != len(trees):
            raise InputError(f"expand has {len(expand)} flags for {len(trees)} trees")
        n_trees = len(trees)
        sizes = np.fromiter((len(t.labels) for t in trees), np.int64, n_trees)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n = int(offsets[-1])
        tree_of = np.repeat(np.arange(n_trees, dtype=np.int64), sizes)
        # Nodes are numbered globally in preorder (tree by tree). The forest numbers a subtree
        # by its first occurrence in the order trees are read: tree by tree, each from its
        # last preorder node to its root (children before parents). Label ids likewise.
        read_labels = list(itertools.chain.from_iterable(reversed(t.labels) for t in trees))
        vocab_ids = {x: i for i, x in enumerate(dict.fromkeys(read_labels))}
        lab_read = np.fromiter(map(vocab_ids.__getitem__, read_labels), np.int64, n)
        del read_labels
        read_pos = 2 * offsets[tree_of] + sizes[tree_of] - 1 - np.arange(n)  # preorder -> read
        lab = lab_read[read_pos]
        arity = np.fromiter(map(len, itertools.chain.from_iterable(t.children for t in trees)),
                            np.int64, n)
        start = np.cumsum(arity) - arity  # children are listed in preorder node order: CSR
        kids = np.fromiter(itertools.chain.from_iterable(
            itertools.chain.from_iterable(t.children) for t in trees), np.int64, n - n_trees)
        kids += np.repeat(offsets[:-1], sizes - 1)
        # Unique subtrees, one height level at a time: a node's key is its label and its
        # children's subtree ids, all known once the level below is done.
        sub = np.full(n, -1, np.int64)  # subtree id of every node (level order)
        rep: list[np.ndarray] = []  # a node standing for each subtree id
        own = None
        if expand is not None:
            flags = np.fromiter((bool(x) for x in expand), bool, n_trees)
            own = np.where(flags[tree_of], np.arange(n), -1)
        n_sub = 0
        levels = list(_levels(arity, kids))
        for level in levels:
            if len(level) == 1:  # alone at its height: a subtree of its own (deep chains)
                sub[level] = n_sub
                rep.append(level)
                n_sub += 1
                continue
            for a in np.unique(arity[level]):
                nodes = level[arity[level] == a]
                cols = [lab[nodes]]
                if a:
                    cols.extend(sub[kids[start[nodes] + k]] for k in range(a))
                if own is not None:
                    cols.append(own[nodes] + 1)
                first, inverse = _distinct_rows(cols)
                sub[nodes] = n_sub + inverse
                rep.append(nodes[first])
                n_sub += len(first)
        reps = np.concatenate(rep) if rep else np.zeros(0, np.int64)
        first_read = np.full(n_sub, n, np.int64)
        np.minimum.at(first_read, sub, read_pos)
        order = np.argsort(first_read, kind="stable")
        final = np.empty(n_sub, np.int64)
        final[order] = np.arange(n_sub)
        node_of = final[sub]  # forest node of every node
        reps = reps[order]
        arity_f = arity[reps]
        height = np.zeros(n, np.int64)
        for h, level in enumerate(levels):
            height[level] = h
        child_flat = node_of[kids[concat_ranges(start[reps], arity_f)]]
        # The count matrix A, sorted by tree then forest node.
        code, count = np.unique(tree_of * max(n_sub, 1) + node_of, return_counts=True)
        count_tree = code // max(n_sub, 1)
        tree_ptr = np.zeros(n_trees + 1, np.int64)
        tree_ptr[1:] = np.cumsum(np.bincount(count_tree, minlength=n_trees))
        label_a = lab[reps].astype(np.int32)
        arity_a = arity_f.astype(np.int32)
        start_a = (np.cumsum(arity_f) - arity_f).astype(np.int32)
        flat_a = child_flat.astype(np.int32)
        return cls(
            vocab=tuple(vocab_ids),
            label=label_a,
            arity=arity_a,
            child_start=start_a,
            child_flat=flat_a,
            height=height[reps].astype(np.int32),
            production=_productions(label_a, arity_a, start_a, flat_a),
            count_tree=count_tree.astype(np.int32),
            count_node=(code % max(n_sub, 1)).astype(np.int32),
            count=count.astype(np.int32),
            n_trees=n_trees,
            tree_ptr=tree_ptr,
        )

    def extend(self, trees: Sequence[Tree]) -> Forest:
        """This forest with `trees` added after its own: the forest `Forest.build` makes of
        this forest's trees followed by `trees` (the same arrays), made by hash-consing only
        the new trees into this one. Its first `n_nodes` nodes and `n_trees` trees are this
        forest's, with the same ids (labels and productions too), so whatever was planned on
        them holds in the extended forest. Not for a forest built with `expand` flags (its
        expanded nodes must not be shared).

        >>> a = Tree.from_nested(("NP", [("DT", ["the"]), ("NN", ["dog"])]))
        >>> b = Tree.from_nested(("NP", [("DT", ["the"]), ("NN", ["cat"])]))
        >>> f = Forest.build([a]).extend([b])
        >>> f.n_nodes, f.n_trees, f.vocab    # the, (DT the) are this forest's nodes 0 and 1
        (8, 2, ('dog', 'NN', 'the', 'DT', 'NP', 'cat'))
        """
        new = Forest.build(trees)
        vocab, nodes, productions = self._lookup
        # the new trees' labels in this forest's vocabulary, unseen ones appended in order
        added = [x for x in new.vocab if x not in vocab]
        ext_vocab = {**vocab, **{x: len(vocab) + i for i, x in enumerate(added)}}
        lab = np.fromiter(map(ext_vocab.__getitem__, new.vocab), np.int64, len(new.vocab))
        lab = lab[new.label].tolist()
        # nodes in the new forest's order (children first): found here, or appended
        n_old = self.n_nodes
        start, arity, flat = new.child_start.tolist(), new.arity.tolist(), new.child_flat.tolist()
        mapped: list[int] = []
        fresh: list[int] = []
        for u in range(new.n_nodes):
            key = (lab[u], *(mapped[c] for c in flat[start[u]: start[u] + arity[u]]))
            v = nodes.get(key)
            if v is None:
                v = n_old + len(fresh)
                fresh.append(u)
            mapped.append(v)
        node_of = np.asarray(mapped, np.int64)
        fresh_a = np.asarray(fresh, np.int64)
        f_arity = new.arity[fresh_a]
        label = np.concatenate([self.label, np.asarray(lab, np.int32)[fresh_a]])
        arity = np.concatenate([self.arity, f_arity])
        child_flat = np.concatenate([
            self.child_flat,
            node_of[new.child_flat[concat_ranges(new.child_start[fresh_a], f_arity)]]
        ]).astype(np.int32)
        child_start = np.concatenate([
            self.child_start, len(self.child_flat) + np.cumsum(f_arity) - f_arity
        ]).astype(np.int32)
        # productions: this forest's ids, unseen ones numbered in order of first use
        prod = self.production.tolist()
        known = int(self.production.max(initial=-1)) + 1
        ext_prod: dict[tuple[int, ...], int] = {}
        lab_l, arity_l, start_l, flat_l = (a.tolist() for a in (label, arity, child_start,
                                                                child_flat))
        for v in range(n_old, n_old + len(fresh)):
            kids = flat_l[start_l[v]: start_l[v] + arity_l[v]]
            key = (lab_l[v], *(2 * lab_l[c] + (arity_l[c] == 0) for c in kids))
            p = productions.get(key)
            if p is None:
                p = ext_prod.setdefault(key, known + len(ext_prod))
            prod.append(p)
        # the count matrix: the new trees' rows, by tree then (extended) forest node
        count_tree = new.count_tree.astype(np.int64) + self.n_trees
        count_node = node_of[new.count_node]
        order = np.lexsort((count_node, count_tree))
        return Forest(
            vocab=tuple(ext_vocab),
            label=label,
            arity=arity,
            child_start=child_start,
            child_flat=child_flat,
            height=np.concatenate([self.height, new.height[fresh_a]]),
            production=np.asarray(prod, np.int32),
            count_tree=np.concatenate([self.count_tree, count_tree[order].astype(np.int32)]),
            count_node=np.concatenate([self.count_node, count_node[order].astype(np.int32)]),
            count=np.concatenate([self.count, new.count[order]]),
            n_trees=self.n_trees + new.n_trees,
            tree_ptr=np.concatenate([self.tree_ptr, self.tree_ptr[-1] + new.tree_ptr[1:]]),
        )

    @functools.cached_property
    def _lookup(self) -> tuple[dict[str, int], dict[tuple[int, ...], int],
                               dict[tuple[int, ...], int]]:
        """(label ids, node ids, production ids) by content, for `extend`: a node is its label
        and its children's ids, a production its label and its children's 2 * label + leaf.
        Built once per forest (a second thread may build it again: the same dicts)."""
        lab, arity = self.label.tolist(), self.arity.tolist()
        start, flat = self.child_start.tolist(), self.child_flat.tolist()
        nodes: dict[tuple[int, ...], int] = {}
        productions: dict[tuple[int, ...], int] = {}
        for u, p in enumerate(self.production.tolist()):
            kids = flat[start[u]: start[u] + arity[u]]
            nodes[(lab[u], *kids)] = u
            productions.setdefault((lab[u], *(2 * lab[c] + (arity[c] == 0) for c in kids)), p)
        return {x: i for i, x in enumerate(self.vocab)}, nodes, productions


def concat_ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + n) for every (s, n) (int64)."""
    lens = lens.astype(np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.cumsum(lens) - lens
    return np.repeat(starts.astype(np.int64) - offsets, lens) + np.arange(total, dtype=np.int64)


# Row groups smaller than this are made distinct with a dict rather than sorts.
_SMALL_GROUP = 256


def _distinct_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of the matrix with columns `cols` (non-negative int64, all of one
    length): (an index of each distinct row, the distinct row of every row). Columns are
    folded in one at a time, each pair (row code so far, column) renumbered densely, so codes
    never overflow whatever the width."""
    if len(cols[0]) < _SMALL_GROUP:  # a few rows: one dict beats a sort per column
        seen: dict[tuple[int, ...], int] = {}
        inverse = np.fromiter(
            (seen.setdefault(row, len(seen)) for row in zip(*(c.tolist() for c in cols))),
            np.int64, len(cols[0]))
        first = np.full(len(seen), len(inverse), np.int64)
        np.minimum.at(first, inverse, np.arange(len(inverse)))
        return first, inverse
    code = cols[0]
    for col in cols[1:]:
        _, code = np.unique(code * (int(col.max(initial=0)) + 1) + col, return_inverse=True)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _levels(arity: np.ndarray, kids: np.ndarray) -> Iterator[np.ndarray]:
    """The nodes of each height (0: leaves, then 1 + the highest child), as index arrays.

    A node joins the level after the one where its last child was placed; the work is linear
    in the number of nodes however deep the trees are."""
    parent = np.full(len(arity), -1, np.int64)
    parent[kids] = np.repeat(np.arange(len(arity)), arity)
    waiting = arity.copy()
    level = np.flatnonzero(arity == 0)
    while len(level):
        yield level
        if len(level) == 1:  # one node (a deep chain): its parent, without array calls
            up1 = int(parent[level[0]])
            if up1 < 0:
                break
            waiting[up1] -= 1
            level = np.array([up1] if waiting[up1] == 0 else [], np.int64)
            continue
        up = parent[level]
        up = up[up >= 0]
        np.subtract.at(waiting, up, 1)
        up = sorted_unique(up)
        level = up[waiting[up] == 0]


def _productions(
    label: np.ndarray, arity: np.ndarray, child_start: np.ndarray, child_flat: np.ndarray
) -> np.ndarray:
    """Production ids: equal iff label, child labels and child leafness are all equal.

    Leaf children are told apart from internal children with the same label: `(A (B b))`'s
    root production differs from `(A B)`'s (the word B); see ../shared/ref/README.md.
    """
    n = label.shape[0]
    leaf = (arity == 0).astype(np.int64)
    group = np.full(n, -1, np.int64)
    n_groups = 0
    for a in np.unique(arity):
        nodes = np.flatnonzero(arity == a)
        # A child as 2 * label + is_leaf: leafness is part of the production.
        cols = [label[nodes].astype(np.int64)]
        for k in range(a):
            kid = child_flat[child_start[nodes] + k]
            cols.append(2 * label[kid].astype(np.int64) + leaf[kid])
        first, inverse = _distinct_rows(cols)
        group[nodes] = n_groups + inverse
        n_groups += len(first)
    # Ids in order of first use (forest node order).
    first = np.full(n_groups, n, np.int64)
    np.minimum.at(first, group, np.arange(n))
    rank = np.empty(n_groups, np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(n_groups)
    return rank[group].astype(np.int32)
