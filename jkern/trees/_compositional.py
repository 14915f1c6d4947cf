"""Compositionally labelled dependency trees (Annesi, Croce & Basili 2014), for CSPTK.

The compositional GRCT (CGRCT) is the GRCT of `grct` with the relation node of every word m
that has a head h labelled by the head-modifier pair it stands for:

    rel<h_lemma::h_pos,m_lemma::m_pos>

(`lemma::pos` exactly as the lexical leaves). CSPTK compares two such nodes by the
composition of their words' vectors (`jkern.CSPTK`). The root word's relation node keeps the
plain label `root`: it has no head to compose with. PoS nodes and lexical leaves are those of
the GRCT, so a CGRCT has the GRCT's shape and differs only in labels.

A relation node's label names its head, which lies outside the node's subtree: two subtrees
with equal words but different heads get different labels, so the forest never merges nodes
whose composed vectors differ.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from ._conllu import Token, _lexical, _relation, grct_labelled
from ._tree import Tree

# rel<head,mod>: rel has no angle brackets; head and mod are `lemma::pos` with a PoS free of
# ':', ',' and angle brackets (the lemma may hold anything, commas included).
_COMPOSED = re.compile(r"^([^<>]+)<(.+::[^:,<>]+),(.+::[^:,<>]+)>$")


class Composed(NamedTuple):
    """The parts of a compositional label `rel<head,mod>`."""

    rel: str
    head: str  # lemma::pos
    mod: str  # lemma::pos

    @property
    def head_lemma(self) -> str:
        return self.head.rpartition("::")[0]

    @property
    def head_pos(self) -> str:
        return self.head.rpartition("::")[2]

    @property
    def mod_lemma(self) -> str:
        return self.mod.rpartition("::")[0]

    @property
    def mod_pos(self) -> str:
        return self.mod.rpartition("::")[2]


def composed_label(rel: str, head: str, mod: str) -> str:
    """The label of a head-modifier node: `rel<head,mod>` (`head`, `mod`: `lemma::pos`).

    >>> composed_label("nsubj", "bark::v", "dog::n")
    'nsubj<bark::v,dog::n>'
    """
    return f"{rel}<{head},{mod}>"


def parse_composed(label: str) -> Composed | None:
    """The parts of a compositional label, or None for any other label.

    >>> parse_composed("nsubj<bark::v,dog::n>")
    Composed(rel='nsubj', head='bark::v', mod='dog::n')
    >>> parse_composed("dog::n") is None
    True
    """
    m = _COMPOSED.match(label)
    return None if m is None else Composed(*m.groups())


def cgrct(sentence: Sequence[Token]) -> Tree:
    """Compositional GRCT: the GRCT with each dependent's relation node labelled
    `rel<head lemma::pos,own lemma::pos>` (see the module docstring).

    Raises:
        TreeParseError: the heads do not form a tree (as `grct`).

    >>> s = [Token(1, "Dogs", "dog", "NOUN", "NNS", 2, "nsubj"),
    ...      Token(2, "bark", "bark", "VERB", "VBP", 0, "root")]
    >>> cgrct(s).to_penn()
    '(root (nsubj<bark::v,dog::n> (NOUN dog::n))(VERB bark::v))'
    """
    def relation_label(tok: Token) -> str:
        if tok.head == 0:
            return _relation(tok)
        return composed_label(_relation(tok), _lexical(sentence[tok.head - 1]), _lexical(tok))

    return grct_labelled(sentence, relation_label)
