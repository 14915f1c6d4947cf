"""The `Tree` value type: an ordered, labelled tree stored flat in preorder."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InputError


@dataclasses.dataclass(frozen=True)
class Tree:
    """An ordered labelled tree, stored flat in preorder (node 0 is the root).

    A node without children is a *leaf* (in a constituency parse: a word). Trees are
    immutable values; two trees are equal when labels and shape are equal.

    Attributes:
        labels: `labels[i]` is the label of node `i` (preorder numbering).
        children: `children[i]` are the indices of node `i`'s children, left to right.

    >>> t = Tree.from_nested(("NP", [("DT", ["the"]), ("NN", ["dog"])]))
    >>> t.to_penn()
    '(NP (DT the)(NN dog))'
    >>> len(t), t.n_leaves
    (5, 2)
    """

    labels: tuple[str, ...]
    children: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if len(self.labels) == 0:
            raise InputError("a Tree needs at least one node")
        if len(self.labels) != len(self.children):
            raise InputError("labels and children must have the same length")
        # Preorder: every node but the root has exactly one parent, numbered before it.
        has_parent = [False] * len(self.labels)
        for i, kids in enumerate(self.children):
            for c in kids:
                if not i < c < len(self.labels) or has_parent[c]:
                    raise InputError(f"child {c} of node {i} breaks preorder numbering")
                has_parent[c] = True
        if not all(has_parent[1:]):
            raise InputError("every node but the root needs exactly one parent")

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def n_leaves(self) -> int:
        return sum(1 for c in self.children if not c)

    def is_leaf(self, i: int) -> bool:
        return not self.children[i]

    def postorder(self) -> Iterator[int]:
        """Node indices, children before parents (iterative: no recursion limit)."""
        stack = [(0, False)]
        while stack:
            i, expanded = stack.pop()
            if expanded:
                yield i
            else:
                stack.append((i, True))
                stack.extend((c, False) for c in reversed(self.children[i]))

    def heights(self) -> list[int]:
        """Height of every node: 0 for a leaf, 1 + max child height otherwise."""
        h = [0] * len(self)
        for i in self.postorder():
            if self.children[i]:
                h[i] = 1 + max(h[c] for c in self.children[i])
        return h

    @classmethod
    def from_nested(cls, nested: str | tuple[str, Sequence]) -> Tree:
        """Build from `(label, [child, ...])` tuples; a bare string is a leaf."""
        labels: list[str] = []
        children: list[list[int]] = []
        stack: list[tuple[Any, int]] = [(nested, -1)]
        while stack:
            node, parent = stack.pop()
            i = len(labels)
            if isinstance(node, str):
                label, kids = node, ()
            else:
                label, kids = node[0], node[1]
            labels.append(label)
            children.append([])
            if parent >= 0:
                children[parent].append(i)
            stack.extend((k, i) for k in reversed(list(kids)))
        return cls(tuple(labels), tuple(tuple(c) for c in children))

    def to_penn(self) -> str:
        """Penn bracket text, in SVM-Light-TK's spacing: `(S (NP (DT the))(VP ...))`."""
        out: list[str] = []
        # (node, prefix, closing): the first child of a node follows a space, later
        # internal children follow the previous ")" directly, leaves always a space.
        stack: list[tuple[int, str, bool]] = [(0, "", False)]
        while stack:
            i, prefix, closing = stack.pop()
            if closing:
                out.append(")")
                continue
            kids = self.children[i]
            if not kids and i != 0:
                out.append(" " + self.labels[i])
                continue
            out.append(prefix + "(" + self.labels[i])
            stack.append((i, "", True))
            stack.extend(
                (c, " " if k == 0 else "", False) for k, c in reversed(list(enumerate(kids)))
            )
        return "".join(out)

    def __str__(self) -> str:
        return self.to_penn()
