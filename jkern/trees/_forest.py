"""The forest: a DAG of the unique subtrees of a whole collection of trees.

Every convolution tree kernel is K(T1, T2) = sum over node pairs of Delta(n1, n2), and Delta
depends only on the subtrees rooted at n1 and n2. Hash-consing a collection into unique
subtrees u with a count matrix A[tree, u] turns a Gram matrix into A Delta A^T, with Delta
computed once per distinct pair of subtrees (see DESIGN.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

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
            raise ValueError(f"expand has {len(expand)} flags for {len(trees)} trees")
        vocab_ids: dict[str, int] = {}
        node_ids: dict[tuple, int] = {}
        label: list[int] = []
        arity: list[int] = []
        child_flat: list[int] = []
        child_start: list[int] = []
        height: list[int] = []
        count_tree: list[int] = []
        count_node: list[int] = []
        count: list[int] = []
        for ti, tree in enumerate(trees):
            labels, kids_of = tree.labels, tree.children
            ids = [0] * len(labels)
            occurrences: dict[int, int] = {}
            own = expand is not None and bool(expand[ti])
            # Preorder numbering puts children after parents: reversed order is children-first.
            for i in range(len(labels) - 1, -1, -1):
                lab = vocab_ids.get(labels[i])
                if lab is None:
                    lab = vocab_ids[labels[i]] = len(vocab_ids)
                kids = tuple([ids[c] for c in kids_of[i]])
                key = (lab, kids, ti, i) if own else (lab, kids)
                u = node_ids.get(key)
                if u is None:
                    u = node_ids[key] = len(label)
                    label.append(lab)
                    arity.append(len(kids))
                    child_start.append(len(child_flat))
                    child_flat.extend(kids)
                    height.append(1 + max([height[k] for k in kids]) if kids else 0)
                ids[i] = u
                occurrences[u] = occurrences.get(u, 0) + 1
            for u in sorted(occurrences):
                count_tree.append(ti)
                count_node.append(u)
                count.append(occurrences[u])
        label_a = np.asarray(label, np.int32)
        arity_a = np.asarray(arity, np.int32)
        start_a = np.asarray(child_start, np.int32)
        flat_a = np.asarray(child_flat, np.int32)
        ctree = np.asarray(count_tree, np.int32)
        tree_ptr = np.zeros(len(trees) + 1, np.int64)
        np.add.at(tree_ptr, ctree.astype(np.int64) + 1, 1)
        return cls(
            vocab=tuple(vocab_ids),
            label=label_a,
            arity=arity_a,
            child_start=start_a,
            child_flat=flat_a,
            height=np.asarray(height, np.int32),
            production=_productions(label_a, arity_a, start_a, flat_a),
            count_tree=ctree,
            count_node=np.asarray(count_node, np.int32),
            count=np.asarray(count, np.int32),
            n_trees=len(trees),
            tree_ptr=np.cumsum(tree_ptr),
        )


def _productions(
    label: np.ndarray, arity: np.ndarray, child_start: np.ndarray, child_flat: np.ndarray
) -> np.ndarray:
    """Production ids: equal iff label, child labels and child leafness are all equal.

    Leaf children are told apart from internal children with the same label: `(A (B b))`'s
    root production differs from `(A B)`'s (the word B); see ../shared/ref/README.md.
    """
    ids: dict[tuple[int, ...], int] = {}
    out = np.empty(label.shape[0], np.int32)
    leaf = arity == 0
    for u in range(label.shape[0]):
        kids = child_flat[child_start[u] : child_start[u] + arity[u]]
        if len(kids) == 0:
            key: tuple[int, ...] = (int(label[u]),)
        else:
            # Encode a child as 2*label + is_leaf so leafness is part of the production.
            key = (int(label[u]), -1, *(2 * int(label[k]) + int(leaf[k]) for k in kids))
        out[u] = ids.setdefault(key, len(ids))
    return out
