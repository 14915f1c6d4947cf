"""`jkern convert`: trees reshaped in place of the originals, every other part of the file kept,
checked against the library functions it applies."""

from __future__ import annotations

import pytest
from data_paths import REF_DIR, require

from jkern.cli import main
from jkern.trees import (
    grct,
    head_dependencies,
    lct,
    parse_penn,
    parse_svmlight_line,
    pos_leaves,
    read_examples,
    read_trees,
)

Q1 = "(ROOT (SBARQ (WHNP (WP Who))(SQ (VP (VBD wrote)(NP (NNP Hamlet))))(. ?)))"
Q2 = "(ROOT (SBARQ (WHNP (WP What))(SQ (VBZ is)(NP (DT the)(NN capital)))(. ?)))"


def test_tsv_keeps_its_columns(tmp_path, capsys):
    src = tmp_path / "qc.tsv"
    src.write_text(f"coarse\tfine\ttree\nHUM\tind\t{Q1}\nLOC\tcity\t{Q2}\n")
    out = tmp_path / "lct.tsv"
    assert main(["convert", "--shape", "lct", str(src), "-o", str(out)]) == 0
    assert "convert lct: 2 trees" in capsys.readouterr().err
    lines = out.read_text().splitlines()
    assert lines[0] == "coarse\tfine\ttree"
    assert [line.split("\t")[:2] for line in lines[1:]] == [["HUM", "ind"], ["LOC", "city"]]
    assert read_trees(out) == [lct(head_dependencies(parse_penn(q))) for q in (Q1, Q2)]
    assert read_trees(out)[1].labels[0] == "capital::n"  # semantic heads by default


def test_syntactic_heads_and_pos_leaves(tmp_path):
    src = tmp_path / "q.txt"
    src.write_text(f"{Q2}\n")
    out = tmp_path / "g.txt"
    assert main(["convert", "--shape", "grct", "--syntactic-heads", str(src), "-o", str(out),
                 "-q"]) == 0
    tree = parse_penn(Q2)
    assert read_trees(out) == [grct(head_dependencies(tree, semantic=False))]
    assert main(["convert", "--shape", "pos-leaves", str(src), "-o", str(out), "-q"]) == 0
    assert read_trees(out) == [pos_leaves(tree, lowercase=True)]


def test_svmlight_keeps_labels_and_vectors(tmp_path):
    dat = require(REF_DIR / "trees50.dat")
    out = tmp_path / "loct.dat"
    assert main(["convert", "--shape", "loct", str(dat), "-o", str(out), "-q"]) == 0
    before, after = read_examples(dat), read_examples(out)
    assert len(before) == len(after) == 50
    for b, a in zip(before, after):
        assert (a.label, a.vectors) == (b.label, b.vectors)
        assert len(a.trees) == len(b.trees)
        assert all(len(t) == s.n_leaves for t, s in zip(a.trees, b.trees))


def test_svmlight_vectors_round_trip(tmp_path):
    src = tmp_path / "v.dat"
    src.write_text("-1 |BT| (S (NN a)(VB b)) |ET| 1:0.25 3:2 |BV| 7:1e-05 |EV|\n")
    out = tmp_path / "o.dat"
    assert main(["convert", "--shape", "loct", str(src), "-o", str(out), "-q"]) == 0
    ex = parse_svmlight_line(out.read_text().strip())
    assert ex.label == -1.0 and ex.vectors == (((1, 0.25), (3, 2.0)), ((7, 1e-05),))
    assert ex.trees[0].to_penn() == "(a::n b::v)"  # no S head rule matches: the first word


@pytest.mark.parametrize("text, needle", [("(S (NP a)\n", "q.txt:1"),
                                          ("", "no trees")])
def test_bad_input_is_a_usage_error(tmp_path, capsys, text, needle):
    src = tmp_path / "q.txt"
    src.write_text(text)
    out = tmp_path / "o.txt"
    code = main(["convert", "--shape", "lct", str(src), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("jkern: error:") and needle in err
    assert not out.exists()


def test_missing_output_folder(tmp_path, capsys):
    src = tmp_path / "q.txt"
    src.write_text(f"{Q1}\n")
    assert main(["convert", "--shape", "lct", str(src), "-o", str(tmp_path / "no" / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_conllu_input_gives_its_dependency_shapes(tmp_path, capsys):
    from jkern.trees import read_conllu

    src = tmp_path / "s.conllu"
    src.write_text("# text = Dogs bark\n1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n"
                   "2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n")
    out = tmp_path / "lct.txt"
    assert main(["convert", "--shape", "lct", str(src), "-o", str(out), "-q"]) == 0
    assert read_trees(out) == [lct(s) for s in read_conllu(src)]
    assert main(["convert", "--shape", "pos-leaves", str(src), "-o", str(out)]) == 2
    assert "needs constituency parses" in capsys.readouterr().err
