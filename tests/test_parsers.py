"""Readers: Penn brackets, SVM-Light-TK lines, TSV, CoNLL-U and the dependency shapes."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import pytest
from data_paths import require
from hypothesis import given, settings
from hypothesis import strategies as st

from jkern.trees import (
    Example,
    Token,
    Tree,
    TreeParseError,
    grct,
    iter_penn,
    lct,
    loct,
    parse_penn,
    parse_svmlight_line,
    read_conllu,
    read_examples,
    read_examples_any,
    read_penn,
    read_trees,
)
from jkern.trees._conllu import _parse_conllu_lines


def _data_file(shared_data: Path, relative: str) -> Path:
    return require(shared_data / relative)


def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(TreeParseError) as info:
        fn(*args, **kwargs)
    return str(info.value)


# --- Penn brackets ------------------------------------------------------------------------

ROUND_TRIP = [
    "(A b)",
    "(X)",
    "(S (NP (DT the)(NN dog))(VP (VBZ barks)))",
    "(NP (DT the) dog)",
    "(S (S (S (S (S (NP (NN x)))))))",
    "(ROOT (S (NP (PRP$ my)(NN $))(VP (VBZ ``)(NP (-NONE- *T*-1)))(: --)('' '')))",
    "(NP (-LRB- -LRB-)(CD 1)(-RRB- -RRB-)(, ,)(. .)(: :)(# #)(#^QP #)(CD +5943))",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip(text):
    tree = parse_penn(text)
    assert tree.to_penn() == text
    assert parse_penn(tree.to_penn()) == tree


_LABEL = st.text(st.characters(blacklist_characters="()", blacklist_categories=("Z", "C")), min_size=1, max_size=4)
_NESTED = st.recursive(_LABEL, lambda kids: st.tuples(_LABEL, st.lists(kids, max_size=4)), max_leaves=25)


@settings(max_examples=150, deadline=None)
@given(_NESTED)
def test_round_trip_random_trees(nested):
    tree = Tree.from_nested(nested)
    assert parse_penn(tree.to_penn()) == tree
    assert parse_penn("\n  " + tree.to_penn().replace("(", " ( ") + "\n") == tree


def test_word_and_bracketed_leaf():
    assert parse_penn("(S (nsubj)(VBZ runs))") == Tree.from_nested(("S", ["nsubj", ("VBZ", ["runs"])]))
    assert parse_penn("(X)") == Tree(("X",), ((),))
    assert parse_penn("\t( A\n b )\n") == Tree(("A", "b"), ((1,), ()))


def test_root_wrapper():
    assert parse_penn("( (S (NP x)))") == parse_penn("(S (NP x))")
    assert parse_penn("(\n  (S x)\n)") == parse_penn("(S x)")
    assert parse_penn("(ROOT (S x))").labels == ("ROOT", "S", "x")
    assert _error(parse_penn, "( (A x) (B y))") == "<string>:1:1: a root without a label must wrap exactly one tree"
    assert _error(parse_penn, "( (A x) y)") == "<string>:1:1: a root without a label must wrap exactly one tree"


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("", "1:1", "empty tree: no brackets found"),
        ("  \n\t ", "1:1", "empty tree: no brackets found"),
        ("()", "1:1", "empty tree '()'"),
        (" ( ) ", "1:2", "empty tree '()'"),
        ("(S (NP x)", "1:1", "unclosed '(' (missing ')')"),
        ("(S (NP x", "1:4", "unclosed '(' (missing ')')"),
        ("(S x))", "1:6", "unmatched ')'"),
        (")", "1:1", "unmatched ')'"),
        ("(S ( (NN x)))", "1:4", "bracket without a label"),
        ("( ( (S x)))", "1:3", "bracket without a label"),
        ("(S (NP () ))", "1:8", "empty brackets '()' inside a tree"),
        ("(S x) y", "1:7", "text after the tree: 'y'"),
        ("junk (S x)", "1:1", "text outside brackets: 'junk'"),
        ("word", "1:1", "text outside brackets: 'word'"),
        ("(S x) (S y)", "1:7", "a second tree starts after the first one"),
        ("(S x)\n(S y)", "2:1", "a second tree starts after the first one"),
        ("(S\n  (NP x)\n  (VP y)))", "3:10", "unmatched ')'"),
        ("(S\n  (NP\n", "2:3", "unclosed '(' (missing ')')"),
    ],
)
def test_penn_errors(text, where, problem):
    assert _error(parse_penn, text) == f"<string>:{where}: {problem}"


def test_penn_error_positions_are_offset():
    # Only the first line is shifted by `column`; later lines start at column 1.
    assert _error(parse_penn, "x (S y)", source="f.txt", line=3, column=5) == (
        "f.txt:3:5: text outside brackets: 'x'"
    )
    assert _error(parse_penn, "(S\n  (NP x)\n  (VP y)))", source="f", line=10, column=5) == (
        "f:12:10: unmatched ')'"
    )
    assert _error(parse_penn, "(S (NP x) z", source="f", line=2, column=4) == (
        "f:2:4: unclosed '(' (missing ')')"
    )


def test_error_value():
    err = TreeParseError("a.txt", 2, 3, "bad\nthing")
    assert str(err) == "a.txt:2:3: bad thing"
    assert (err.source, err.line, err.column, err.problem) == ("a.txt", 2, 3, "bad thing")
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.line == 2


def test_huge_trees_parse_fast():
    n = 10_000
    wide = "(S " + " ".join(f"(NN w{i})" for i in range(n // 2 - 1)) + " x)"
    chain = "(A " * 5000 + "x" + ")" * 5000
    flat = "(S " + " ".join(f"(X{i} w)" for i in range(200)) + ")"
    start = time.perf_counter()
    t_wide, t_chain, t_flat = parse_penn(wide), parse_penn(chain), parse_penn(flat)
    assert time.perf_counter() - start < 2.0
    assert len(t_wide) == n and len(t_wide.children[0]) == n // 2
    assert len(t_chain) == 5001 and max(t_chain.heights()) == 5000
    assert len(t_flat.children[0]) == 200 and len(t_flat) == 401
    for tree in (t_wide, t_chain, t_flat):
        assert parse_penn(tree.to_penn()) == tree
    # An unclosed 5,000-deep chain reports its innermost "(".
    assert _error(parse_penn, "(A " * 5000) == "<string>:1:14998: unclosed '(' (missing ')')"


def test_iter_penn_multiline(tmp_path):
    text = "( (S (NP (DT the)\n         (NN dog))\n     (VP barks)))\n\n\n(A b)\n(C (D e)\n)\n"
    path = tmp_path / "tb.mrg"
    path.write_text(text)
    trees = read_penn(path)
    assert [t.to_penn() for t in trees] == ["(S (NP (DT the)(NN dog))(VP barks))", "(A b)", "(C (D e))"]
    assert [n for n, _ in iter_penn(text.splitlines(), source="x")] == [1, 6, 7]
    assert read_trees(path) == trees
    assert [e.trees[0] for e in read_examples_any(path)] == trees
    assert all(e.label == 0.0 and e.vectors == () for e in read_examples_any(path))


def test_iter_penn_error_lines(tmp_path):
    path = tmp_path / "bad.mrg"
    path.write_text("(A b)\n\n(S (NP x)\n   (VP y)) z\n(A b)\n")
    assert _error(read_penn, path) == f"{path}:4:12: text after the tree: 'z'"
    path.write_text("(A b)\n(S (NP x)\n   (VP y)\n(A b)\n")
    assert _error(read_penn, path) == f"{path}:2:1: unclosed '(' (missing ')')"
    path.write_text("(A b)\n(A b))\n")
    assert _error(read_trees, path) == f"{path}:2:6: unmatched ')'"
    path.write_text("(A b)\r\n  junk\r\n")
    assert _error(read_trees, path) == f"{path}:2:3: text outside brackets: 'junk'"


# --- SVM-Light-TK ---------------------------------------------------------------------------


def test_svmlight_trees_and_vectors():
    ex = parse_svmlight_line("+1 |BT| (A b) |BT| (C (D e)) |ET| 3:1 1:0.25 |BV| |BV| 7:-2e1 |EV|")
    assert ex.label == 1.0
    assert [t.to_penn() for t in ex.trees] == ["(A b)", "(C (D e))"]
    assert ex.vectors == (((1, 0.25), (3, 1.0)), (), ((7, -20.0),))
    assert parse_svmlight_line("-1\t|BT| (A b) |ET|") == Example(-1.0, (parse_penn("(A b)"),), ())
    assert parse_svmlight_line("-1 |BT|(A b)|ET|1:1|EV|").vectors == (((1, 1.0),),)
    assert parse_svmlight_line("0.5 |BT| (A b) |ET| |EV|").vectors == ((),)
    assert parse_svmlight_line("2 1:1 2:0.5") == Example(2.0, (), (((1, 1.0), (2, 0.5)),))
    assert parse_svmlight_line("-1 1:1 |BV| 4:1 |EV|").vectors == (((1, 1.0),), ((4, 1.0),))
    assert parse_svmlight_line("+1") == Example(1.0, (), ())
    assert parse_svmlight_line("+1 |BT| ( (S (: :)(# #))) |ET|").trees[0].to_penn() == "(S (: :)(# #))"


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("", "1", "empty line: missing label"),
        ("  |BT| (A b) |ET|", "3", "missing label before |BT|"),
        ("x |BT| (A b) |ET|", "1", "bad label 'x' (expected a number)"),
        ("1e999 |BT| (A b) |ET|", "1", "bad label '1e999' (expected a number)"),
        ("+1 |BT| (A b) |ET| 1:1 x:2 |EV|", "24", "bad feature 'x:2' (expected index:value)"),
        ("+1 |BT| (A b) |ET| 1:1 2:y |EV|", "24", "bad feature '2:y' (expected index:value)"),
        ("+1 |BT| (A b) |ET| 1:nan", "20", "bad feature '1:nan' (expected index:value)"),
        ("+1 |BT| (A b) |ET| 0:1", "20", "feature index must be positive, got '0:1'"),
        ("+1 |BT| (A b) |ET| 2:1 2:3", "24", "feature index 2 appears twice"),
        ("+1 |BT| (A b) |BT| |ET|", "15", "empty tree after |BT|"),
        ("+1 |BT|   |BT| (A b) |ET|", "4", "empty tree after |BT|"),
        ("+1 |BT| (A b)) |ET|", "14", "unmatched ')'"),
        ("+1\t|BT| (A b) |BT| (C d |ET|", "20", "unclosed '(' (missing ')')"),
        ("+1 |BT| (A b)", "4", "|BT| without a closing |ET|"),
        ("+1 |BT| (A b) |EV|", "15", "expected |ET| before |EV|"),
        ("+1 |ET|", "4", "|ET| without |BT|"),
        ("+1 1:1 |BT| (A b) |ET|", "4", "unexpected text '1:1' before |BT|"),
        ("+1 |BT| (A b) |ET| 1:1 |EV| 2:1", "29", "text after |EV|: '2:1'"),
        ("+1 |BT| (A b) |ET| |EV| |BV|", "25", "|BV| after |EV|"),
        ("+1 |BT| (A b) |ET| |BT| (C d) |ET|", "20", "|BT| must come right after the label"),
    ],
)
def test_svmlight_errors(text, where, problem):
    assert _error(parse_svmlight_line, text, source="d.dat", line=7) == f"d.dat:7:{where}: {problem}"


def test_svmlight_files(tmp_path):
    path = tmp_path / "train.dat"
    path.write_text("# a comment\n+1 |BT| (A b) |ET| 1:1 |EV|\n\n-1 |BT| (C d) |BT| (E f) |ET|\n")
    examples = read_examples(path)
    assert [e.label for e in examples] == [1.0, -1.0]
    assert read_examples_any(path) == examples
    assert [t.to_penn() for t in read_trees(path)] == ["(A b)", "(C d)"]
    path.write_text("+1 |BT| (A b) |ET|\n-1 1:1 |EV|\n")
    assert _error(read_trees, path) == f"{path}:2:1: example has no tree (no |BT| ... |ET|)"
    assert len(read_examples_any(path)) == 2
    path.write_text("+1 |BT| (A b) |ET|\n-1 |BT| (A (b) |ET|\n")
    assert _error(read_examples, path) == f"{path}:2:9: unclosed '(' (missing ')')"


def test_tsv_and_encodings(tmp_path):
    path = tmp_path / "qc.tsv"
    path.write_text("coarse\tfine\ttree\nHUM\tind\t(S (WP Who))\n\nLOC\tcity\t(S (WP Where)) ?\n")
    assert _error(read_trees, path) == f"{path}:4:25: text after the tree: '?'"
    path.write_text("coarse\ttree\nHUM\t(S (WP Who))\nLOC\n")
    assert _error(read_trees, path) == f"{path}:3:4: row has 1 fields, no 'tree' column (field 2)"
    path.write_text("coarse\ttree\nHUM\t(S (WP Who))\n")
    assert read_examples_any(path) == [Example(0.0, (parse_penn("(S (WP Who))"),), ())]
    path.write_bytes("(NP (NNP Mu\xf1oz))\n".encode("latin-1"))
    # strict UTF-8 by default (issue 32: no silent Latin-1 fallback); the encoding is named
    assert _error(read_trees, path).startswith(f"{path}:1:12: byte 0xF1 is not valid UTF-8")
    assert read_trees(path, encoding="latin-1")[0].labels[-1] == "Mu\xf1oz"
    path.write_bytes("\ufeff(NP (NNP Mu\xf1oz))\n".encode())
    assert read_trees(path)[0].labels[-1] == "Mu\xf1oz"


# --- CoNLL-U and the dependency shapes --------------------------------------------------------

SENTENCE = """# sent_id = demo-1
# text = The dog was chased (again) by a cat.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t4\tnsubj:pass\t_\t_
3\twas\tbe\tAUX\tVBD\t_\t4\taux:pass\t_\t_
3.1\tgot\tget\tVERB\tVBD\t_\t_\t_\t4:conj\t_
4\tchased\tchase\tVERB\tVBN\t_\t0\troot\t_\t_
5\t(\t(\tPUNCT\t-LRB-\t_\t6\tpunct\t_\t_
6\tagain\t_\tADV\tRB\t_\t4\tadvmod\t_\t_
7-8\tbya\t_\t_\t_\t_\t_\t_\t_\t_
7\tby\tby\tADP\tIN\t_\t9\tcase\t_\t_
8\ta\ta\tDET\tDT\t_\t9\tdet\t_\t_
9\tcat\tcat\tNOUN\tNN\t_\t4\tobl\t_\t_
"""


@pytest.fixture
def sentence(tmp_path):
    path = tmp_path / "demo.conllu"
    path.write_text(SENTENCE + "\n" + SENTENCE.replace("demo-1", "demo-2"))
    sentences = read_conllu(path)
    assert len(sentences) == 2 and sentences[0] == sentences[1]
    return sentences[0]


def test_read_conllu(sentence):
    assert [t.id for t in sentence] == list(range(1, 10))
    assert sentence[1] == Token(2, "dog", "dog", "NOUN", "NN", 4, "nsubj:pass")


def test_grct(sentence):
    expected = (
        "(root (nsubj:pass (det (DET the::det))(NOUN dog::n))(aux:pass (AUX be::v))(VERB chase::v)"
        "(advmod (punct (PUNCT -LRB-::punct))(ADV again::r))(obl (case (ADP by::adp))(det (DET a::det))"
        "(NOUN cat::n)))"
    )
    assert grct(sentence) == parse_penn(expected)
    assert len(grct(sentence)) == 3 * len(sentence)


def test_lct(sentence):
    expected = (
        "(chase::v (root) (VERB) (dog::n nsubj:pass NOUN (the::det det DET)) (be::v aux:pass AUX)"
        " (again::r advmod ADV (-LRB-::punct punct PUNCT))"
        " (cat::n obl NOUN (by::adp case ADP) (a::det det DET)))"
    )
    assert lct(sentence) == parse_penn(expected)
    assert len(lct(sentence)) == 3 * len(sentence)


def test_loct(sentence):
    expected = "(chase::v (dog::n the::det) be::v (again::r -LRB-::punct) (cat::n by::adp a::det))"
    assert loct(sentence) == parse_penn(expected)
    assert len(loct(sentence)) == len(sentence)


def _row(i, head, rel="dep", tid=None):
    return f"{tid or i}\tw{i}\tw{i}\tNOUN\tNN\t_\t{head}\t{rel}\t_\t_"


@pytest.mark.parametrize(
    ("rows", "where", "problem"),
    [
        ([_row(1, 2), _row(2, 1)], "2:1", "no root (no token has head 0)"),
        ([_row(1, 0, "root"), _row(2, 3), _row(3, 2)], "2:1", "cycle of heads through token 2"),
        ([_row(1, 0, "root"), _row(2, 5)], "4:19", "head 5 is not a token of this 2-word sentence"),
        ([_row(1, 0, "root"), _row(2, 2)], "4:19", "token 2 is its own head"),
        ([_row(1, 0, "root"), _row(2, 0)], "4:19", "more than one root (tokens 1 and 2)"),
        ([_row(1, 0, "root"), _row(3, 1)], "4:1", "token id 3 out of order (expected 2)"),
        ([_row(1, 0, "root"), _row(2, "x")], "4:19", "bad HEAD 'x' (expected a token id or 0)"),
        ([_row(1, 0, "root"), _row(2, 1, "_")], "4:21", "missing DEPREL '_'"),
        ([_row(1, 0, "root"), _row(2, 1, "")], "4:21", "empty DEPREL field"),
        ([_row(1, 0, "root"), _row(2, 1, tid="two")], "4:1", "bad ID 'two' (expected 1, 2, ..., 1-2 or 1.1)"),
        ([_row(1, 0, "root"), "2\tw2\tw2"], "4:8", "expected 10 tab-separated fields, found 3"),
        ([_row(1, 0, "root"), _row(2, 1) + "\textra"], "4:29", "expected 10 tab-separated fields, found 11"),
        ([_row(1, 0, "root").replace("NOUN", "_")], "3:9", "missing UPOS '_'"),
    ],
)
def test_conllu_errors(rows, where, problem):
    lines = ["", "# sent_id = bad", *rows, ""]
    assert _error(_parse_conllu_lines, lines, source="x.conllu") == f"x.conllu:{where}: {problem}"


def test_conllu_error_in_file(tmp_path):
    path = tmp_path / "bad.conllu"
    good = "\n".join([_row(1, 0, "root"), _row(2, 1)])
    path.write_text(f"{good}\n\n# sent_id = 2\n{_row(1, 2)}\n{_row(2, 1)}\n")
    assert _error(read_conllu, path) == f"{path}:4:1: no root (no token has head 0)"


def test_converters_validate():
    root = Token(1, "a", "a", "NOUN", "NN", 0, "root")
    loop = [root, Token(2, "b", "b", "NOUN", "NN", 3, "dep"), Token(3, "c", "c", "NOUN", "NN", 2, "dep")]
    for convert in (grct, lct, loct):
        assert _error(convert, loop) == "<sentence>:1:1: cycle of heads through token 2"
        assert _error(convert, []) == "<sentence>:1:1: empty sentence"
        assert _error(convert, [root, Token(2, "b", "b", "X", "X", 1, "")]) == (
            "<sentence>:2:1: token 2 has no DEPREL"
        )
    # Labels never contain brackets or whitespace; `_` lemmas fall back to the form.
    odd = [Token(1, "New York", "_", "PROPN", "NNP", 0, "whatever")]
    assert grct(odd).labels == ("root", "PROPN", "new_york::n")
    assert parse_penn(grct(odd).to_penn()) == grct(odd)


def test_deep_dependency_chain():
    n = 5000
    chain = [Token(i, f"w{i}", "_", "VERB", "VB", i - 1, "dep" if i > 1 else "root") for i in range(1, n + 1)]
    assert len(grct(chain)) == 3 * n and len(lct(chain)) == 3 * n and len(loct(chain)) == n
    assert max(loct(chain).heights()) == n - 1


# --- real data --------------------------------------------------------------------------------


def test_trec_trees(shared_data):
    train = read_trees(_data_file(shared_data, "trec/qc_train.tsv"))
    test = read_trees(_data_file(shared_data, "trec/qc_test.tsv"))
    assert (len(train), len(test)) == (5401, 500)
    assert all(t.labels[0] == "ROOT" for t in train)
    assert all(parse_penn(t.to_penn()) == t for t in train)


def test_srl_boundary_examples(shared_data):
    examples = read_examples(_data_file(shared_data, "srl/boundary_5000.dat"))
    assert len(examples) == 5000
    assert sum(e.label == 1.0 for e in examples) == 246
    assert all(e.label in (1.0, -1.0) for e in examples)
    assert all(len(e.trees) == 1 and len(e.vectors) == 1 for e in examples)
    assert all(v == 1.0 for e in examples for _, v in e.vectors[0])
    assert read_trees(shared_data / "srl/boundary_5000.dat") == [e.trees[0] for e in examples]


def test_reference_trees_agree(shared_data):
    ref = shared_data.parent / "ref"
    if not (ref / "trees50.tsv").is_file():
        pytest.skip(f"{ref} is missing")
    trees = read_trees(ref / "trees50.tsv")
    assert trees == read_trees(ref / "trees50.dat")
    rows = [line.split("\t") for line in (ref / "trees50.tsv").read_text().splitlines()[1:]]
    assert [len(t) for t in trees] == [int(row[3]) for row in rows]


def test_ud_dev_shapes(shared_data):
    sentences = read_conllu(_data_file(shared_data, "ud-english-ewt/en_ewt-ud-dev.conllu"))
    assert len(sentences) == 2001
    for sentence in sentences:
        n = len(sentence)
        assert (len(grct(sentence)), len(lct(sentence)), len(loct(sentence))) == (3 * n, 3 * n, n)
    first = sentences[0]  # "From the AP comes this story :"
    assert loct(first) == parse_penn("(come::v (ap::n from::adp the::det) (story::n this::det) :::punct)")


# --- fuzzing: a TreeParseError or a result, never anything else -------------------------------

_PENN_PIECES = st.sampled_from(["(", ")", " ", "\n", "\t", "a", "NP", "(S", "x)", "()", "( (", "$", "''"])
_PENN_TEXT = st.one_of(st.text(max_size=40), st.lists(_PENN_PIECES, max_size=30).map("".join))
_SVM_PIECES = st.sampled_from(
    ["+1", "-1", "0.5", " ", "\t", "|BT|", "|ET|", "|BV|", "|EV|", "(S x)", "(", ")", "1:1", "0:2", "3:x",
     "2:1e999", "nan", ":", "a", "|", "BT"]
)
_SVM_TEXT = st.one_of(st.text(max_size=40), st.lists(_SVM_PIECES, max_size=25).map("".join))


@settings(max_examples=300, deadline=None)
@given(_PENN_TEXT)
def test_fuzz_parse_penn(text):
    try:
        tree = parse_penn(text)
    except TreeParseError as err:
        assert "\n" not in str(err) and err.line >= 1 and err.column >= 1
        return
    assert isinstance(tree, Tree)
    assert parse_penn(tree.to_penn()) == tree


@settings(max_examples=300, deadline=None)
@given(_SVM_TEXT)
def test_fuzz_parse_svmlight_line(text):
    try:
        example = parse_svmlight_line(text)
    except TreeParseError as err:
        assert "\n" not in str(err) and err.line >= 1 and err.column >= 1
        return
    assert isinstance(example, Example)
    assert all(i > 0 for v in example.vectors for i, _ in v)
    assert all([i for i, _ in v] == sorted({i for i, _ in v}) for v in example.vectors)


def test_without_leaves_and_expanded_forests():
    from jkern.trees import Forest, without_leaves

    t = parse_penn("(S (NP (DT the)(NN dog))(VP (VBZ barks)(NP (DT the)(NN dog))))")
    bare = without_leaves(t)
    assert bare.to_penn() == "(S (NP DT NN)(VP VBZ(NP DT NN)))"
    assert without_leaves(parse_penn("(A b)")).labels == ("A",)
    assert without_leaves(Tree(("x",), ((),))) == Tree(("x",), ((),))
    # (NP (DT the)(NN dog)) occurs twice: shared in a plain forest, not in an expanded one
    assert Forest.build([t]).n_nodes == 9
    assert Forest.build([t], expand=[True]).n_nodes == len(t) == 14
    both = Forest.build([t, t], expand=[False, True])
    assert both.n_nodes == 9 + 14 and both.total_nodes() == 28
    with pytest.raises(ValueError, match="expand"):
        Forest.build([t], expand=[True, False])
