"""Raw text in (issue 22): `jkern.parse` and `jkern parse` turn sentences into dependency trees
that the kernels, `jkern gram` and `jkern train` take."""

from __future__ import annotations

import numpy as np
import pytest

import jkern
from jkern.cli import main
from jkern.errors import InputError
from jkern.trees import grct, lct, parse_penn, read_trees

QUESTIONS = ["Who won the Nobel prize (in physics) in 1990?", "Where is the Eiffel Tower?",
             "Who wrote Hamlet?", "Where is Paris?"]


def test_parse_gives_the_dependency_shapes_of_spacys_parse(nlp, tmp_path):
    from jkern.ds import parse_sentences

    trees = jkern.parse(QUESTIONS, nlp=nlp, cache_dir=tmp_path)
    assert len(trees) == len(QUESTIONS)
    # the same trees as the shapes of the dependency parse of spaCy's own tokens
    tokens = [[t.text for t in nlp.tokenizer(q)] for q in QUESTIONS]
    parsed = parse_sentences(tokens, cache_dir=tmp_path, nlp=nlp)
    assert trees == [grct(s) for s in parsed]
    assert jkern.parse(QUESTIONS[:1], shape="lct", nlp=nlp, cache_dir=tmp_path) == \
        [lct(parsed[0])]
    # every tree survives Penn text (brackets in the words are escaped) and is kernel input
    assert [parse_penn(t.to_penn()) for t in trees] == trees
    g = np.asarray(jkern.PTK(0.4, 0.4).gram(trees))
    assert np.all(np.isfinite(g)) and np.all(np.diag(g) > 0)


def test_parse_refuses_bad_texts(nlp, tmp_path):
    with pytest.raises(InputError, match="text 1 is empty"):
        jkern.parse(["Who?", "  "], nlp=nlp, cache_dir=tmp_path)
    with pytest.raises(InputError, match="not a str"):
        jkern.parse("Who won?", nlp=nlp, cache_dir=tmp_path)
    with pytest.raises(InputError, match="shape must be one of"):
        jkern.parse(["Who?"], shape="penn", nlp=nlp, cache_dir=tmp_path)


def test_cli_parse_then_gram_and_train(nlp, tmp_path, capsys):
    text = tmp_path / "q.txt"
    text.write_text("\n".join(QUESTIONS) + "\n\n")
    trees = tmp_path / "q.trees"
    cache = str(tmp_path / "cache")
    assert main(["parse", str(text), "--out", str(trees), "--cache-dir", cache]) == 0
    assert len(read_trees(trees)) == len(QUESTIONS)
    assert main(["gram", str(trees), "--kernel", "sst", "--out", str(tmp_path / "k.npy")]) == 0
    labelled = tmp_path / "ql.txt"
    labelled.write_text("".join(f"{lab}\t{q}\n" for lab, q in
                                zip(["HUM", "LOC", "HUM", "LOC"], QUESTIONS)))
    tsv = tmp_path / "ql.tsv"
    assert main(["parse", str(labelled), "--labels", "--shape", "lct", "--out", str(tsv),
                 "--cache-dir", cache]) == 0
    assert tsv.read_text().splitlines()[0] == "label\ttree"
    model = tmp_path / "m.npz"
    assert main(["train", str(tsv), "--algo", "ksvm", "--kernel", "ptk", "--out",
                 str(model)]) == 0
    assert main(["predict", str(model), str(tsv), "--out", str(tmp_path / "p.tsv")]) == 0
    # a line without its label is an input error naming file and line; no output written
    bad = tmp_path / "bad.txt"
    bad.write_text("HUM\tWho?\nWhere is Rome?\n")
    capsys.readouterr()
    assert main(["parse", str(bad), "--labels", "--out", str(tmp_path / "bad.tsv")]) == 2
    assert f"{bad}:2: expected 'LABEL<TAB>text'" in capsys.readouterr().err
    assert not (tmp_path / "bad.tsv").exists()


def test_parse_progress_counts_the_sentences(nlp, tmp_path, capsys):
    """`progress=True` (the CLI's --progress) counts the sentences parsed, batch by batch;
    parses read back from the cache report nothing."""
    texts = QUESTIONS * 3
    jkern.parse(texts, nlp=nlp, cache_dir=tmp_path, batch_size=5, progress=True)
    err = capsys.readouterr().err  # not a terminal: a line per tenth, then the last
    assert "jkern: parsing: 5/12 sentences" in err and "jkern: parsing: 12/12 sentences" in err
    jkern.parse(texts, nlp=nlp, cache_dir=tmp_path, batch_size=5, progress=True)
    assert capsys.readouterr().err == ""
    text = tmp_path / "q.txt"
    text.write_text("\n".join(QUESTIONS) + "\n")
    assert main(["parse", str(text), "--out", str(tmp_path / "q.trees"), "--progress",
                 "--cache-dir", str(tmp_path / "cli")]) == 0
    assert "jkern: parsing: 4/4 sentences" in capsys.readouterr().err
