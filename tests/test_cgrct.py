"""The compositional GRCT (issue 33): the GRCT with every dependent's relation node labelled
`rel<head lemma::pos,own lemma::pos>`, from CoNLL-U, head rules, raw text and the CLI."""

from __future__ import annotations

import pytest
from data_paths import SHARED_DATA, require

import jkern
from jkern.cli import main
from jkern.errors import InputError
from jkern.trees import (
    Composed,
    Token,
    Tree,
    TreeParseError,
    cgrct,
    composed_label,
    grct,
    head_dependencies,
    parse_composed,
    parse_penn,
    parse_sentences,
    read_conllu,
    read_trees,
)


def _check_composed_grct(c: Tree, g: Tree) -> None:
    """`c` is the GRCT `g` with each non-root relation node relabelled `rel<head,mod>`, where
    rel is the GRCT's label, mod the node's own lexical leaf and head its parent's."""
    assert c.children == g.children
    assert c.labels[0] == g.labels[0] == "root"
    parent = {k: i for i, kids in enumerate(g.children) for k in kids}

    def lexical(i: int) -> str:  # the leaf under the relation node's PoS child
        (pos,) = [k for k in g.children[i] if len(g.children[k]) == 1
                  and not g.children[g.children[k][0]]]
        return g.labels[g.children[pos][0]]

    changed = [i for i in range(len(g)) if c.labels[i] != g.labels[i]]
    n_words = sum(1 for kids in g.children if not kids)
    assert len(changed) == n_words - 1  # every word but the root
    for i in changed:
        assert parse_composed(c.labels[i]) == Composed(g.labels[i], lexical(parent[i]),
                                                       lexical(i)), c.labels[i]
    assert all(parse_composed(c.labels[i]) is None for i in range(len(g)) if i not in changed)


def test_dogs_bark():
    s = [Token(1, "Dogs", "dog", "NOUN", "NNS", 2, "nsubj"),
         Token(2, "bark", "bark", "VERB", "VBP", 0, "root")]
    assert grct(s).to_penn() == "(root (nsubj (NOUN dog::n))(VERB bark::v))"
    assert cgrct(s).to_penn() == "(root (nsubj<bark::v,dog::n> (NOUN dog::n))(VERB bark::v))"
    _check_composed_grct(cgrct(s), grct(s))


# Lemmas with commas, `::`, parentheses, spaces and angle brackets; heads on both sides, and a
# relation (the root's) that spaCy spells ROOT.
_ODD = [
    Token(1, "Smith, Jr.", "Smith, Jr.", "PROPN", "NNP", 3, "nsubj"),
    Token(2, "(", "(", "PUNCT", "-LRB-", 3, "punct"),
    Token(3, "said", "say", "VERB", "VBD", 0, "ROOT"),
    Token(4, "1,000", "1,000", "NUM", "CD", 7, "nummod"),
    Token(5, "+", "+", "SYM", "SYM", 6, "cc"),
    Token(6, "2,000", "2,000", "NUM", "CD", 4, "conj"),
    Token(7, "dogs", "dog", "NOUN", "NNS", 3, "obj"),
    Token(8, "::", "::", "PUNCT", ":", 7, "punct"),
    Token(9, "New York", "New  York", "PROPN", "NNP", 7, "nmod:poss"),
    Token(10, "a::b", "a::b", "X", "FW", 3, "dep"),
    Token(11, "<c>", "<c>", "X", "FW", 10, "dep"),
    Token(12, ")", ")", "PUNCT", "-RRB-", 3, "punct"),
]
_ODD_RELATIONS = {  # token id -> (rel, head, mod) of its relation node
    1: ("nsubj", "say::v", "smith,_jr.::n"),
    2: ("punct", "say::v", "-LRB-::punct"),
    4: ("nummod", "dog::n", "1,000::num"),
    5: ("cc", "2,000::num", "+::sym"),
    6: ("conj", "1,000::num", "2,000::num"),
    7: ("obj", "say::v", "dog::n"),
    8: ("punct", "dog::n", "::::punct"),
    9: ("nmod:poss", "dog::n", "new_york::n"),
    10: ("dep", "say::v", "a::b::x"),
    11: ("dep", "a::b::x", "<c>::x"),
    12: ("punct", "say::v", "-RRB-::punct"),
}


def test_odd_lemmas_compose_parse_back_and_survive_penn():
    c, g = cgrct(_ODD), grct(_ODD)
    _check_composed_grct(c, g)
    composed = [label for label in c.labels if parse_composed(label) is not None]
    assert sorted(composed) == sorted(composed_label(*t) for t in _ODD_RELATIONS.values())
    for rel, head, mod in _ODD_RELATIONS.values():
        parts = parse_composed(composed_label(rel, head, mod))
        assert parts == Composed(rel, head, mod)
        assert parts is not None
        assert (parts.head_lemma, parts.head_pos) == tuple(head.rsplit("::", 1))
        assert (parts.mod_lemma, parts.mod_pos) == tuple(mod.rsplit("::", 1))
    assert parse_composed("conj<1,000::num,2,000::num>") == Composed("conj", "1,000::num",
                                                                     "2,000::num")
    # no whitespace or parenthesis in any label: the tree prints as Penn and reads back
    assert parse_penn(c.to_penn()) == c
    assert [parse_composed(x) for x in parse_penn(c.to_penn()).labels] == \
        [parse_composed(x) for x in c.labels]


@pytest.mark.parametrize("label", ["root", "dog::n", "NOUN", "nsubj", "nsubj<bark::v>",
                                   "nsubj<bark,dog::n>", "<bark::v,dog::n>",
                                   "nsubj<bark::v,dog::n>x", "nsubj<bark::v,dog::>"])
def test_other_labels_are_not_compositional(label):
    assert parse_composed(label) is None


def test_cgrct_refuses_what_grct_refuses():
    cycle = [Token(1, "a", "a", "X", "X", 2, "dep"), Token(2, "b", "b", "X", "X", 1, "dep")]
    with pytest.raises(TreeParseError, match="root"):
        grct(cycle)
    with pytest.raises(TreeParseError, match="root"):
        cgrct(cycle)


def test_ud_english_ewt_dev_sentences_have_the_grct_shape():
    sentences = read_conllu(require(SHARED_DATA / "ud-english-ewt" / "en_ewt-ud-dev.conllu"))
    for sentence in sentences[:300]:
        c = cgrct(sentence)
        _check_composed_grct(c, grct(sentence))
        assert parse_penn(c.to_penn()) == c
    # "From the AP comes this story :" is rooted at `come`
    assert cgrct(sentences[0]).to_penn() == (
        "(root (obl<come::v,ap::n> (case<ap::n,from::adp> (ADP from::adp))"
        "(det<ap::n,the::det> (DET the::det))(PROPN ap::n))(VERB come::v)"
        "(nsubj<come::v,story::n> (det<story::n,this::det> (DET this::det))(NOUN story::n))"
        "(punct<come::v,:::punct> (PUNCT :::punct)))")


def test_head_rule_parses_compose():
    t = parse_penn("(ROOT (SBARQ (WHNP (WP Who))(SQ (VP (VBD wrote)(NP (NNP Hamlet))))(. ?)))")
    deps = head_dependencies(t)
    c = cgrct(deps)
    _check_composed_grct(c, grct(deps))
    # lemmas are unknown: lexical nodes hold the lowercased form
    assert c.to_penn() == ("(root (WHNP<wrote::v,who::pron> (PRON who::pron))(VERB wrote::v)"
                           "(NP<wrote::v,hamlet::n> (PROPN hamlet::n))"
                           "(.<wrote::v,?::punct> (PUNCT ?::punct)))")


def test_the_spacy_parser_moved_to_trees():
    assert jkern.ds.parse_sentences is parse_sentences
    from jkern.trees import _spacy

    assert parse_sentences.__module__ == _spacy.__name__


QUESTIONS = ["How far is it from Denver to Aspen ?", "What county is Modesto , California in ?",
             "Who was Galileo ?", "What is an atom ?"]  # TREC_10's first questions


def test_parse_gives_the_cgrct_of_spacys_parse(nlp, tmp_path):
    trees = jkern.parse(QUESTIONS, shape="cgrct", nlp=nlp, cache_dir=tmp_path)
    tokens = [[t.text for t in nlp.tokenizer(q)] for q in QUESTIONS]
    parsed = parse_sentences(tokens, cache_dir=tmp_path, nlp=nlp)
    assert trees == [cgrct(s) for s in parsed]
    assert jkern.parse(QUESTIONS, nlp=nlp, cache_dir=tmp_path) == [grct(s) for s in parsed]
    for c, s in zip(trees, parsed):
        _check_composed_grct(c, grct(s))
        assert parse_penn(c.to_penn()) == c
    # "Who was Galileo ?": Galileo's relation node composes `be` (head) with `galileo`
    assert [(x.head, x.mod) for x in map(parse_composed, trees[2].labels)
            if x is not None and x.mod == "galileo::n"] == [("be::v", "galileo::n")]
    with pytest.raises(InputError, match="shape must be one of"):
        jkern.parse(QUESTIONS, shape="cgrct2", nlp=nlp, cache_dir=tmp_path)


def test_cli_parse_gives_cgrct(nlp, tmp_path):
    text = tmp_path / "q.txt"
    text.write_text("\n".join(QUESTIONS) + "\n")
    out = tmp_path / "q.trees"
    cache = tmp_path / "cache"
    assert main(["parse", str(text), "--shape", "cgrct", "--out", str(out),
                 "--cache-dir", str(cache)]) == 0
    assert read_trees(out) == jkern.parse(QUESTIONS, shape="cgrct", nlp=nlp, cache_dir=cache)


def test_cli_convert_gives_cgrct(tmp_path, capsys):
    conllu = tmp_path / "s.conllu"
    conllu.write_text("# text = Dogs bark\n1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n"
                      "2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n")
    out = tmp_path / "c.trees"
    assert main(["convert", "--shape", "cgrct", str(conllu), "-o", str(out)]) == 0
    assert out.read_text() == "(root (nsubj<bark::v,dog::n> (NOUN dog::n))(VERB bark::v))\n"
    q = "(ROOT (SBARQ (WHNP (WP Who))(SQ (VP (VBD wrote)(NP (NNP Hamlet))))(. ?)))"
    penn = tmp_path / "q.txt"
    penn.write_text(q + "\n")
    assert main(["convert", "--shape", "cgrct", str(penn), "-o", str(out)]) == 0
    assert read_trees(out) == [cgrct(head_dependencies(parse_penn(q)))]
    assert "convert cgrct: 1 trees" in capsys.readouterr().err
