"""Constituency -> dependency conversion by head rules (`jkern.trees.head_dependencies`).

The expected parses are worked out by hand from the documented rules (Collins' table with
semantic heads for auxiliaries, copulas and subordinate clauses)."""

from __future__ import annotations

import pytest
from helpers import projective_single_root

from jkern.trees import Tree, grct, head_dependencies, lct, loct, parse_penn
from jkern.trees._heads import category, head_child, universal_pos


def arcs(penn: str, **options) -> list[tuple[str, str, str]]:
    """(word, head word or ROOT, relation) of each word."""
    tokens = head_dependencies(parse_penn(penn), **options)
    return [(t.form, tokens[t.head - 1].form if t.head else "ROOT", t.deprel) for t in tokens]


WHAT_DOES = ("(ROOT (SBARQ (WHNP (WP What))(SQ (VBZ does)(NP (DT the)(NN abbreviation)"
             "(NN AIDS))(VP (VB stand)(PP (IN for))))(. ?)))")


def test_question_with_auxiliary_is_headed_by_the_main_verb():
    assert arcs(WHAT_DOES) == [
        ("What", "stand", "WHNP"), ("does", "stand", "VBZ"), ("the", "AIDS", "DT"),
        ("abbreviation", "AIDS", "NN"), ("AIDS", "stand", "NP"), ("stand", "ROOT", "root"),
        ("for", "stand", "PP"), ("?", "stand", "."),
    ]


def test_syntactic_heads_keep_the_auxiliary():
    got = dict((w, h) for w, h, _ in arcs(WHAT_DOES, semantic=False))
    assert got["does"] == "ROOT" and got["stand"] == "does" and got["What"] == "does"


def test_copula_question_is_headed_by_the_predicate():
    penn = ("(ROOT (SBARQ (WHNP (WP What))(SQ (VBZ is)(NP (NP (DT the)(NN capital))"
            "(PP (IN of)(NP (NNP France)))))(. ?)))")
    assert arcs(penn) == [
        ("What", "capital", "WHNP"), ("is", "capital", "VBZ"), ("the", "capital", "DT"),
        ("capital", "ROOT", "root"), ("of", "capital", "PP"), ("France", "of", "NP"),
        ("?", "capital", "."),
    ]
    # `has` + NP is a main verb, not an auxiliary: it stays the head
    penn = "(ROOT (S (NP (NN Who))(VP (VBZ has)(NP (CD four)(NNS legs)))))"
    assert dict((w, h) for w, h, _ in arcs(penn))["has"] == "ROOT"


def test_passive_auxiliary_and_subordinate_clause():
    penn = ("(ROOT (S (NP (PRP It))(VP (VBD was)(VP (VBN used)(SBAR (IN because)"
            "(S (NP (PRP it))(VP (VBD worked))))))))")
    got = {w + str(i): (h, r) for i, (w, h, r) in enumerate(arcs(penn))}
    assert got["used2"] == ("ROOT", "root")
    assert got["was1"] == ("used", "VBD")
    assert got["worked5"] == ("used", "SBAR")  # the clause heads SBAR, not `because`
    assert got["because3"] == ("worked", "IN")


def test_function_tags_possessives_and_multiword_preterminals():
    # heads read the bare category; the relation keeps the function tag, not the index
    penn = "(S (NP-SBJ-1 (NP (NNP John)(POS 's))(NN dog))(VP (VBD saw)(NP (NNP Mary))))"
    assert arcs(penn) == [("John", "'s", "NNP"), ("'s", "dog", "NP"), ("dog", "saw", "NP-SBJ"),
                          ("saw", "ROOT", "root"), ("Mary", "saw", "NP")]
    # a preterminal over two leaves: the first heads the second
    assert arcs("(VP (VB ask a)(NP (NN question)))") == [
        ("ask", "ROOT", "root"), ("a", "ask", "VB"), ("question", "ask", "NP")]


def test_helpers():
    assert category("NP-SBJ-1") == "NP" and category("-LRB-") == "-LRB-"
    assert [universal_pos(t, w) for t, w in (("NNP", "Paris"), ("MD", "can"), ("VBD", "had"),
                                           ("VBD", "ran"), (".", "?"), ("WRB", "how"))] == [
        "PROPN", "AUX", "AUX", "VERB", "PUNCT", "ADV"]
    assert head_child("NP", ["NP", "PP"], [None, None]) == 0
    assert head_child("PP", ["IN", "NP"], ["of", None]) == 0
    assert head_child("FRAG", ["NP", "."], [None, "?"]) == 0  # punctuation never heads


def test_one_node_tree_is_a_one_word_sentence():
    (word,) = head_dependencies(Tree(("hello",), ((),)))
    assert (word.form, word.head, word.upos, word.deprel) == ("hello", 0, "X", "root")


@pytest.mark.parametrize("semantic", [True, False])
def test_every_trec_parse_converts_to_a_projective_tree(shared_data, semantic):
    from jkern.data import load_trec

    trees = load_trec(shared_data, "train").trees + load_trec(shared_data, "test").trees
    for tree in trees:
        tokens = head_dependencies(tree, semantic=semantic)
        n = len(tokens)
        assert n == tree.n_leaves
        assert projective_single_root(tokens), tree.to_penn()
        assert (len(grct(tokens)), len(lct(tokens)), len(loct(tokens))) == (3 * n, 3 * n, n)


def test_boundary_marks_survive_in_relations():
    # SVM-Light-TK's argument-boundary trees mark the candidate node (`-B`)
    penn = "(S (NP-B (NNP Healthcare))(VP (VBZ owes)(NP (NNP HealthVest))))"
    assert arcs(penn)[0] == ("Healthcare", "owes", "NP-B")
