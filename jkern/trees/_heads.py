"""Constituency parses to dependency parses by head rules (for the GRCT / LCT / LOCT shapes).

The dependency tree shapes of Croce, Moschitti & Basili (2011) need dependency parses; most
tree-kernel corpora (TREC questions, PropBank) ship constituency parses. Head rules recover
the dependencies: every phrase picks one child as its head, the lexical head of each other
child depends on the phrase's lexical head. The table is Collins' (1999, appendix A), with
the semantic heads of de Marneffe et al. (2006): an auxiliary or copula is not the head when
a verb phrase or a predicate follows it, so `What does AIDS stand for ?` is headed by
`stand` and `What is the capital ?` by `capital`, as in Universal Dependencies. Relations are
not recovered: each dependency is labelled with the label of the dependent's maximal
projection (`NP`, `PP`, `WHNP`, or its PoS tag for a single word; function tags such as
`NP-SBJ` kept, indices dropped), a stand-in for the grammatical relation that carries the
same kind of information for the kernels. Head rules read the bare category (`NP`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ._conllu import Token
from ._tree import Tree

# (direction, categories): scan the children left-to-right ("left") or right-to-left
# ("right") for the first category of the list, in list order; if none occurs, the first
# child in that direction. Collins (1999), table A.1.
_RULES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    label: (direction, tuple(cats.split()))
    for label, direction, cats in (
        ("ADJP", "left", "NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR RBS SBAR RB"),
        ("ADVP", "right", "RB RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN"),
        ("CONJP", "right", "CC RB IN"),
        ("FRAG", "right", ""),
        ("INTJ", "left", ""),
        ("LST", "right", "LS :"),
        ("NAC", "left", "NN NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP FW"),
        ("PP", "right", "IN TO VBG VBN RP FW"),
        ("PRN", "left", ""),
        ("PRT", "right", "RP"),
        ("QP", "left", "$ IN NNS NN JJ RB DT CD NCD QP JJR JJS"),
        ("RRC", "right", "VP NP ADVP ADJP PP"),
        ("S", "left", "TO IN VP S SBAR ADJP UCP NP"),
        ("SBAR", "left", "WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG"),
        ("SBARQ", "left", "SQ S SINV SBARQ FRAG"),
        ("SINV", "left", "VBZ VBD VBP VB MD VP S SINV ADJP NP"),
        ("SQ", "left", "VBZ VBD VBP VB MD VP SQ"),
        ("UCP", "right", ""),
        ("VP", "left", "TO VBD VBN MD VBZ VB VBG VBP VP ADJP NN NNS NP"),
        ("WHADJP", "left", "CC WRB JJ ADJP"),
        ("WHADVP", "right", "CC WRB"),
        ("WHNP", "left", "WDT WP WP$ WHADJP WHPP WHNP"),
        ("WHPP", "right", "IN TO FW"),
    )
}
# NP (and NX) heads follow Collins' special rule: a final possessive, else the rightmost
# noun, else the leftmost NP, else the rightmost of each later group in turn.
_NP_NOUNS = ("NN", "NNP", "NNPS", "NNS", "NX", "POS", "JJR")
_NP_LATER = (("$", "ADJP", "PRN"), ("CD",), ("JJ", "JJS", "RB", "QP"))
# Forms of be / do / have and the modals: auxiliaries (and the copula) under semantic heads.
_BE = frozenset("be is are was were am been being 's 're 'm ai".split())
_AUXILIARIES = _BE | frozenset(
    "do does did have has had having 've 'd will would 'll can could may might shall should "
    "must wo ca".split())
# Where a semantic head passes from an auxiliary: the verb phrase that follows it; from a
# form of be also a predicate adjective or noun phrase (`What is the capital ?`: `capital`).
_AUX_PHRASES = ("VP", "SQ", "SINV")
_COPULA_COMPLEMENTS = ("VP", "ADJP", "NP")
# Semantic heads of subordinate clauses: the clause, not the complementizer or wh-phrase.
_SEMANTIC_RULES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "SBAR": ("left", tuple("S SQ SINV SBAR FRAG WHNP WHPP WHADVP WHADJP IN DT".split())),
}
_PUNCTUATION = frozenset((".", ",", ":", "``", "''", "-LRB-", "-RRB-", "#", "$"))
_INDEX = re.compile(r"(?:[-=][0-9]+)+$")
_UPOS = {
    "NN": "NOUN", "NNS": "NOUN", "NNP": "PROPN", "NNPS": "PROPN", "MD": "AUX",
    "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ", "RB": "ADV", "RBR": "ADV", "RBS": "ADV",
    "WRB": "ADV", "DT": "DET", "PDT": "DET", "WDT": "DET", "PRP": "PRON", "PRP$": "PRON",
    "WP": "PRON", "WP$": "PRON", "EX": "PRON", "IN": "ADP", "RP": "ADP", "TO": "PART",
    "POS": "PART", "CC": "CCONJ", "CD": "NUM", "UH": "INTJ", "SYM": "SYM", "$": "SYM",
    "#": "SYM", "FW": "X", "LS": "X", "X": "X",
}


def category(label: str) -> str:
    """A constituent label without its function tags and indices (`NP-SBJ-1` -> `NP`).

    Bracket labels such as `-LRB-` and `-NONE-` are kept whole.

    >>> category("NP-SBJ-1"), category("PP-LOC=2"), category("-LRB-")
    ('NP', 'PP', '-LRB-')
    """
    if label.startswith("-"):
        return label
    return label.split("-")[0].split("=")[0] or label


def relation(label: str) -> str:
    """The relation label a dependent gets from its maximal projection's label: function tags
    and marks kept (`NP-SBJ`, SVM-Light-TK's boundary mark `S-B`), indices dropped.

    >>> relation("NP-SBJ-1"), relation("PP-LOC=2"), relation("S-B"), relation("-LRB-")
    ('NP-SBJ', 'PP-LOC', 'S-B', '-LRB-')
    """
    if label.startswith("-"):
        return label
    return _INDEX.sub("", label) or label


def universal_pos(tag: str, word: str) -> str:
    """The Universal Dependencies PoS of a Penn Treebank tag (`VB*` of an auxiliary: AUX).

    >>> universal_pos("NNS", "dogs"), universal_pos("VBZ", "does"), universal_pos("VBZ", "barks")
    ('NOUN', 'AUX', 'VERB')
    """
    if tag.startswith("VB"):
        return "AUX" if word.lower() in _AUXILIARIES else "VERB"
    if tag in _UPOS:
        return _UPOS[tag]
    return "PUNCT" if tag in _PUNCTUATION or not tag[:1].isalpha() else "X"


def head_child(label: str, children: Sequence[str], words: Sequence[str | None],
               *, semantic: bool = True) -> int:
    """Index of the head among a constituent's children.

    Args:
        label: The constituent's category (function tags already stripped).
        children: The children's categories.
        words: For each child that is a preterminal, its word (else None): auxiliaries are
            recognised by their form.
        semantic: Skip auxiliaries and copulas followed by their complement.

    >>> head_child("VP", ["VBZ", "VP"], ["is", None]), head_child("VP", ["VBZ", "VP"], ["is", None],
    ...                                                          semantic=False)
    (1, 0)
    >>> head_child("NP", ["DT", "JJ", "NN"], ["the", "big", "dog"])
    2
    """
    n = len(children)
    if semantic and label in _AUX_PHRASES:
        for j, word in enumerate(words):
            if word is not None and word.lower() in _AUXILIARIES:
                later = children[j + 1:]
                for target in _COPULA_COMPLEMENTS if word.lower() in _BE else ("VP",):
                    if target in later:
                        return j + 1 + later.index(target)
                break
    if label in ("NP", "NX"):
        if children[-1] == "POS":
            return n - 1
        for j in reversed(range(n)):
            if children[j] in _NP_NOUNS:
                return j
        for j in range(n):
            if children[j] == "NP":
                return j
        for group in _NP_LATER:
            for j in reversed(range(n)):
                if children[j] in group:
                    return j
        return n - 1
    rules = _SEMANTIC_RULES if semantic and label in _SEMANTIC_RULES else _RULES
    direction, cats = rules.get(label, ("left", ()))
    order = list(range(n)) if direction == "left" else list(reversed(range(n)))
    for cat in cats:
        for j in order:
            if children[j] == cat:
                return j
    # No listed category: the first child that is not punctuation (Collins takes the first
    # child; a question's final `?` would otherwise head a FRAG).
    for j in order:
        if children[j] not in _PUNCTUATION:
            return j
    return order[0]


def head_dependencies(tree: Tree, *, semantic: bool = True) -> list[Token]:
    """The dependency parse of a constituency parse, by head rules (see the module doc).

    Words are the leaves, in order; a leaf's PoS tag is its parent's label when the parent
    is a preterminal (all its children are leaves), else `X` (so a one-node tree is a
    one-word sentence). When a preterminal has several
    leaves (`(VB ask a)`) the first heads the others. Lemmas are unknown (`_`), so the
    GRCT / LCT / LOCT lexical nodes use the lowercased form.

    Args:
        tree: A constituency parse (e.g. from `read_trees` / `parse_penn`), with words as
            leaves. A `ROOT` or empty top node over one phrase is handled like any unary node.
        semantic: Semantic heads (the default): auxiliaries and copulas depend on the verb or
            predicate that follows them. False: Collins' syntactic heads.

    Returns:
        One `Token` per word (ids 1..n, `head` 0 for the root word), ready for `grct`,
        `lct` and `loct`; `deprel` is the label of the dependent's maximal projection
        (see `relation`), `xpos` the word's PoS tag as written, `upos` its UD PoS.

    >>> from jkern.trees import parse_penn, lct
    >>> t = parse_penn("(ROOT (S (NP (NNS Dogs))(VP (VBP do)(VP (VB bark)))))")
    >>> [(w.form, w.head, w.deprel) for w in head_dependencies(t)]
    [('Dogs', 3, 'NP'), ('do', 3, 'VBP'), ('bark', 0, 'root')]
    >>> lct(head_dependencies(t)).to_penn()
    '(bark::v root VERB(dogs::n NP NOUN)(do::v VBP AUX))'
    """
    n_nodes = len(tree)
    parent = [-1] * n_nodes
    for i, kids in enumerate(tree.children):
        for c in kids:
            parent[c] = i
    leaves = [i for i in range(n_nodes) if tree.is_leaf(i)]  # preorder = word order
    word_of = {leaf: k for k, leaf in enumerate(leaves)}

    def preterminal(i: int) -> bool:
        kids = tree.children[i]
        return bool(kids) and all(tree.is_leaf(c) for c in kids)

    tags = [tree.labels[parent[leaf]] if parent[leaf] >= 0 and preterminal(parent[leaf])
            else "X" for leaf in leaves]
    forms = [tree.labels[leaf] for leaf in leaves]
    head_word = [-1] * n_nodes  # lexical head (word index) of each node
    attach: dict[int, tuple[int, str]] = {}  # word -> (head word, relation)
    for i in tree.postorder():
        kids = tree.children[i]
        if not kids:
            head_word[i] = word_of[i]
            continue
        if preterminal(i):
            first = word_of[kids[0]]
            for c in kids[1:]:
                attach[word_of[c]] = (first, relation(tree.labels[i]))
            head_word[i] = first
            continue
        cats = [category(tree.labels[c]) if tree.children[c] else "X" for c in kids]
        words = [forms[word_of[tree.children[c][0]]] if preterminal(c) else None for c in kids]
        h = head_child(category(tree.labels[i]), cats, words, semantic=semantic)
        head_word[i] = head_word[kids[h]]
        for j, c in enumerate(kids):
            if j != h:
                label = relation(tree.labels[c]) if tree.children[c] else "X"
                attach[head_word[c]] = (head_word[i], label)
    tokens = []
    for k, (form, tag) in enumerate(zip(forms, tags)):
        head, rel = attach.get(k, (-1, "root"))
        upos = universal_pos(category(tag), form)
        tokens.append(Token(k + 1, form, "_", upos, tag, head + 1, rel))
    return tokens
