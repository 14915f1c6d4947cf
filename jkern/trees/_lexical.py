"""Lexical labels for constituency trees: each word marked with its preterminal."""

from __future__ import annotations

from ._tree import Tree


def pos_leaves(tree: Tree, *, lowercase: bool = False) -> Tree:
    """`tree` with every word leaf `w` under a preterminal `P` relabelled `w::P`.

    SPTK smooths lexical nodes (`lemma::pos` labels) only against lexical nodes of the same
    PoS; on a plain constituency tree every word is one group, so "book" (NN) would be
    compared with "read" (VB). With this relabelling words are compared by their vectors only
    under equal preterminals, as the smoothed kernels of Croce et al. (2011) do on lexicalized
    trees. (PTK on the relabelled trees no longer matches one word under two different tags.)
    A preterminal is a node whose only child is a leaf; other leaves are left as they are.

    >>> from jkern.trees import parse_penn
    >>> pos_leaves(parse_penn("(S (NP (NN Dogs)) (VP (VBP bark)))"), lowercase=True).to_penn()
    '(S (NP (NN dogs::NN))(VP (VBP bark::VBP)))'
    """
    labels = list(tree.labels)
    for i, kids in enumerate(tree.children):
        if len(kids) == 1 and tree.is_leaf(kids[0]):
            word = labels[kids[0]].lower() if lowercase else labels[kids[0]]
            labels[kids[0]] = f"{word}::{labels[i]}"
    return Tree(tuple(labels), tree.children)
