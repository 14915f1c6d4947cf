"""Lexical labels for constituency trees: each word marked with its preterminal."""

from __future__ import annotations

from collections.abc import Collection

from ._tree import Tree

# Penn Treebank tags of the open word classes: nouns, verbs, adjectives, adverbs.
OPEN_CLASS_TAGS = ("NN", "VB", "JJ", "RB")


def pos_leaves(tree: Tree, *, lowercase: bool = False,
               tags: Collection[str] | None = None) -> Tree:
    """`tree` with every word leaf `w` under a preterminal `P` relabelled `w::P`.

    SPTK smooths lexical nodes (`lemma::pos` labels) only against lexical nodes of the same
    PoS; on a plain constituency tree every word is one group, so "book" (NN) would be
    compared with "read" (VB). With this relabelling words are compared by their vectors only
    under equal preterminals, as the smoothed kernels of Croce et al. (2011) do on lexicalized
    trees. (PTK on the relabelled trees no longer matches one word under two different tags.)
    A preterminal is a node whose only child is a leaf; other leaves are left as they are.

    `tags`: relabel only words whose preterminal starts with one of these prefixes (e.g.
    `OPEN_CLASS_TAGS`: nouns, verbs, adjectives, adverbs, the words SPTK should smooth); the
    other words (wh-words, determiners, prepositions: closed classes, where a similar vector
    does not mean a similar role) keep their plain label and, with vectors looked up through
    `jkern.data.tree_words`, match exactly.

    >>> from jkern.trees import parse_penn
    >>> pos_leaves(parse_penn("(S (NP (NN Dogs)) (VP (VBP bark)))"), lowercase=True).to_penn()
    '(S (NP (NN dogs::NN))(VP (VBP bark::VBP)))'
    """
    labels = list(tree.labels)
    for i, kids in enumerate(tree.children):
        if len(kids) == 1 and tree.is_leaf(kids[0]) and (
                tags is None or labels[i].startswith(tuple(tags))):
            word = labels[kids[0]].lower() if lowercase else labels[kids[0]]
            labels[kids[0]] = f"{word}::{labels[i]}"
    return Tree(tuple(labels), tree.children)


def without_leaves(tree: Tree) -> Tree:
    """`tree` with its leaves removed (an unlexicalized parse: preterminals become leaves).

    The unlexicalized trees of Severyn & Moschitti (2012, Sect. 7.2): words make most
    subtrees distinct; without them far more subtrees repeat. A tree that is a single leaf is
    returned unchanged (a tree needs a node).

    >>> from jkern.trees import parse_penn
    >>> without_leaves(parse_penn("(S (NP (DT the)(NN dog))(VP (VBZ barks)))")).to_penn()
    '(S (NP DT NN)(VP VBZ))'
    """
    keep = [bool(kids) for kids in tree.children]
    if not any(keep):
        return tree
    new_id = {}
    for i, k in enumerate(keep):
        if k:
            new_id[i] = len(new_id)
    labels = tuple(tree.labels[i] for i in range(len(keep)) if keep[i])
    children = tuple(tuple(new_id[c] for c in tree.children[i] if keep[c])
                     for i in range(len(keep)) if keep[i])
    return Tree(labels, children)
