"""Issue 32, text readers: nothing fails silently.

- One stray non-UTF-8 byte no longer turns a whole file into Latin-1 mojibake (`café` ->
  `cafÃ©`): every reader decodes strictly in its `encoding=` (UTF-8 by default) and a bad
  byte is a `TreeParseError` at `file:line:column` naming the byte and the option to pass.
- A TSV row without its label column, and integers written with other digits than ASCII
  (`²`), are located jkern errors, not an `IndexError` / bare `ValueError` (exit 1).
- The command line relays each as one `jkern: error: ...` line, exit 2.
"""

from __future__ import annotations

import gzip
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from data_paths import SHARED_DATA, require

import jkern
from jkern.cli import main
from jkern.data import load_ds_wordnet, load_trec, load_ud_attachment, load_word_vectors
from jkern.errors import InputError
from jkern.pa import read_sparse
from jkern.trees import (
    TreeParseError,
    read_conllu,
    read_examples,
    read_examples_any,
    read_labels,
    read_penn,
    read_trees,
    rewrite_trees,
    tree_file_format,
)
from jkern.trees._textfile import check_encoding, iter_lines, parse_uint, read_lines

CAFE = "(S (NP (NN café)) (VP (VBZ opens)))"
STRAY = b"\xe9"  # 'é' in Latin-1: not UTF-8 on its own


def _mixed(good: str, bad_prefix: str, bad_suffix: str = "") -> bytes:
    """A UTF-8 line `good`, then a line with one stray Latin-1 byte after `bad_prefix`."""
    return (good + "\n").encode() + bad_prefix.encode() + STRAY + (bad_suffix + "\n").encode()


def _check(err: TreeParseError, path: Path, line: int, column: int) -> None:
    assert (err.source, err.line, err.column) == (str(path), line, column), str(err)
    assert "byte 0xE9 is not valid UTF-8" in err.problem
    assert "encoding='latin-1'" in err.problem and "--encoding latin-1" in err.problem


# --- every reader: strict UTF-8 by default, the byte located, `encoding=` reads it -------------

PENN = _mixed(CAFE, "(S (NP (NN caf", ")) (VP (VBZ opens)))")  # the byte at 2:15
TSV = (f"label\ttree\nA\t{CAFE}\n".encode() + b"B\t(S (NP (NN caf" + STRAY
       + b")) (VP (VBZ opens)))\n")  # the byte at 3:17
TK = (f"+1 |BT| {CAFE} |ET|\n".encode() + b"-1 |BT| (S (NP (NN caf" + STRAY
      + b")) (VP (VBZ opens))) |ET|\n")  # the byte at 2:23
CONLLU = ("1\tcafé\tcafé\tNOUN\tNN\t_\t0\troot\t_\t_\n\n".encode()
          + b"1\tcaf" + STRAY + b"\tcafe\tNOUN\tNN\t_\t0\troot\t_\t_\n")  # 3:6
SPARSE = b"# caf\xc3\xa9\n+1 1:1\n-1 2:1 # caf" + STRAY + b"\n"  # 3:13


@pytest.mark.parametrize("read, data, line, column", [
    (read_trees, PENN, 2, 15),
    (read_penn, PENN, 2, 15),
    (read_examples_any, PENN, 2, 15),
    (tree_file_format, PENN, 2, 15),
    (lambda p, **kw: rewrite_trees(p, lambda t: t, **kw), PENN, 2, 15),
    (read_trees, TSV, 3, 17),
    (read_labels, TSV, 3, 17),
    (read_trees, TK, 2, 23),
    (read_examples, TK, 2, 23),
    (read_labels, TK, 2, 23),
    (read_conllu, CONLLU, 3, 6),
    (read_sparse, SPARSE, 3, 13),
    (read_lines, PENN, 2, 15),
], ids=["trees-penn", "penn", "examples_any", "format", "rewrite", "trees-tsv", "labels-tsv",
        "trees-tk", "examples", "labels-tk", "conllu", "sparse", "read_lines"])
def test_a_stray_byte_is_located_and_latin1_must_be_named(tmp_path, read, data, line, column):
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    with pytest.raises(TreeParseError) as info:
        read(path)
    _check(info.value, path, line, column)
    read(path, encoding="latin-1")  # the user says what the file is: it reads


def test_mojibake_no_longer_changes_the_kernel(tmp_path):
    """The issue's case: K(identical trees) stays 2.893, never 1.584 from `cafÃ©`."""
    path = tmp_path / "t.txt"
    path.write_bytes(PENN)
    with pytest.raises(TreeParseError, match=r"t.txt:2:15: byte 0xE9"):
        read_trees(path)
    path.write_bytes(f"{CAFE}\n{CAFE}\n".encode())
    a, b = read_trees(path)
    assert a.labels == b.labels and "café" in a.labels
    gram = np.asarray(jkern.gram(jkern.SST(0.4), [a, b]))
    np.testing.assert_allclose(gram, 2.89344, rtol=1e-5)
    path.write_bytes(f"{CAFE}\n{CAFE}\n".encode("latin-1"))
    assert read_trees(path, encoding="latin-1") == [a, b]  # a Latin-1 file, named as such


def test_bom_and_crlf_and_byte_columns(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("\ufeff(A café)\r\n(B x)\r\n".encode())
    assert read_lines(path) == ["(A café)", "(B x)"]
    # the column counts characters, not bytes: 'é' before the stray byte is one column
    path.write_bytes("(A é ".encode() + STRAY + b")\n")
    with pytest.raises(TreeParseError) as info:
        read_trees(path)
    assert (info.value.line, info.value.column) == (1, 6)


def test_iter_lines_streams_and_locates(tmp_path):
    path = tmp_path / "v.txt.gz"
    path.write_bytes(gzip.compress("a é\r\n".encode() + b"b " + STRAY + b"\n"))
    lines = iter_lines(path)
    assert next(lines) == (1, "a é")
    with pytest.raises(TreeParseError, match=r"v.txt.gz:2:3: byte 0xE9"):
        next(lines)
    assert list(iter_lines(path, encoding="latin-1"))[1] == (2, "b é")
    path.write_bytes(gzip.compress(b"a\nb\n" * 1000)[:-12])  # truncated
    with pytest.raises(InputError, match="truncated or corrupt"):
        list(iter_lines(path))


@pytest.mark.parametrize("encoding, problem", [
    ("klingon", "unknown encoding 'klingon'"),
    ("utf-16", "not ASCII-compatible"),
    ("rot13", "not ASCII-compatible"),
    (None, "must be the name of a text encoding"),
])
def test_bad_encoding_names_are_refused(tmp_path, encoding, problem):
    path = tmp_path / "t.txt"
    path.write_text("(A b)\n")
    with pytest.raises(InputError, match=problem):
        check_encoding(encoding)
    with pytest.raises(InputError, match=problem):
        read_trees(path, encoding=encoding)


def test_ascii_integers_only():
    assert parse_uint("0") == 0 and parse_uint("0042") == 42
    for text in ("²", "١", "1_0", "+1", "-1", " 1", "", "1.0"):
        assert parse_uint(text) is None, text


# --- the loaders of jkern.data ------------------------------------------------------------------

def test_word_vectors(tmp_path):
    good = "café 0.1 0.2\n"
    for name in ("v.txt", "v.txt.gz"):
        path = tmp_path / name
        data = good.encode() + b"caf" + STRAY + b" 0.3 0.4\n"
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        with pytest.raises(TreeParseError) as info:
            load_word_vectors(path)
        _check(info.value, path, 2, 4)
        assert load_word_vectors(path, encoding="latin-1").words == ("cafÃ©", "café")
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(b"the\ncaf" + STRAY + b"\n")
    np.save(tmp_path / "m.npy", np.eye(2))
    with pytest.raises(TreeParseError, match=r"vocab.txt:2:4: byte 0xE9"):
        load_word_vectors(tmp_path / "m.npy", vocab_path=vocab)
    wv = load_word_vectors(tmp_path / "m.npy", vocab_path=vocab, encoding="latin-1")
    assert wv.words == ("the", "café")


@pytest.mark.parametrize("header, problem", [
    ("\u00b2 2", "expected the word2vec header"),  # '²'.isdigit() is True
    ("2 \u00b2", "expected the word2vec header"),
])
def test_word2vec_header_takes_ascii_digits_only(tmp_path, header, problem):
    path = tmp_path / "v.txt"
    path.write_text(f"{header}\ncat 0.1 0.2\ndog 0.3 0.4\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"v.txt:1: {problem}"):
        load_word_vectors(path, format="word2vec")
    # "auto" does not take it for a header: read as GloVe, the rows disagree on the length
    with pytest.raises(InputError, match=r"v.txt:[12]: "):
        load_word_vectors(path)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_word_vectors_refuse_non_finite_values(tmp_path, value):
    path = tmp_path / "v.txt"
    path.write_text(f"cat 0.1 0.2\ndog {value} 0.4\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"v.txt:2: '{value}' is not a finite number"):
        load_word_vectors(path)


def _trec(root: Path, row: bytes) -> Path:
    (root / "trec").mkdir()
    (root / "trec" / "qc_train.tsv").write_bytes(
        f"coarse\tfine\ttree\nHUM\tind\t{CAFE}\n".encode() + row)
    return root


def test_load_trec(tmp_path):
    _trec(tmp_path, b"LOC\tcity\t(S (NN caf" + STRAY + b"))\n")
    with pytest.raises(TreeParseError) as info:
        load_trec(tmp_path)
    _check(info.value, tmp_path / "trec" / "qc_train.tsv", 3, 20)
    assert load_trec(tmp_path, encoding="latin-1").trees[1].labels[-1] == "café"


_PAIRS = "pair\te1\te2\tsplit\trelations\tmentions\n0\tdog\tpet\ttrain\tNA\t1\n"
_MENTIONS = "pair\te1\te2\tsplit\te1_token\te2_token\tsentence\n"


def _ds(root: Path, mention: bytes) -> Path:
    d = root / "ds-wordnet"
    d.mkdir()
    (d / "relations.txt").write_text("NA\nhypernym\n")
    (d / "pairs.tsv").write_text(_PAIRS)
    (d / "mentions.tsv.gz").write_bytes(gzip.compress(_MENTIONS.encode() + mention))
    return d


def test_ds_wordnet_mentions(tmp_path):
    d = _ds(tmp_path, b"0\tdog\tpet\ttrain\t0\t2\tdog caf" + STRAY + b" pet\n")
    with pytest.raises(TreeParseError) as info:
        load_ds_wordnet(tmp_path)
    _check(info.value, d / "mentions.tsv.gz", 2, 28)
    assert load_ds_wordnet(tmp_path, encoding="latin-1").train.mentions.tokens[0][1] == "café"


@pytest.mark.parametrize("field, text", [("e1_token", "\u00b2"), ("e2_token", "\u0662"),
                                         ("e1_token", "1_0"), ("e2_token", "+2")])
def test_ds_wordnet_token_indexes_are_ascii_digits(tmp_path, field, text):
    i1, i2 = (text, "2") if field == "e1_token" else ("0", text)
    d = _ds(tmp_path, f"0\tdog\tpet\ttrain\t{i1}\t{i2}\tdog , pet\n".encode())
    with pytest.raises(InputError) as info:
        load_ds_wordnet(tmp_path)
    assert str(info.value) == (f"{d / 'mentions.tsv.gz'}:2: {field} must be a non-negative "
                               f"integer (ASCII digits), got {text!r}")


def test_ud_attachment_takes_an_encoding(tmp_path):
    ud = tmp_path / "ud-english-ewt"
    ud.mkdir()
    two_words = (b"1\tcaf" + STRAY + b"\tcafe\tNOUN\tNN\t_\t2\tnsubj\t_\t_\n"
                 b"2\topens\topen\tVERB\tVBZ\t_\t0\troot\t_\t_\n\n")
    for split in ("dev", "test"):
        (ud / f"en_ewt-ud-{split}.conllu").write_bytes(two_words)
    with pytest.raises(TreeParseError, match=r"en_ewt-ud-dev.conllu:1:6: byte 0xE9"):
        load_ud_attachment(tmp_path)
    load_ud_attachment(tmp_path, encoding="latin-1")


# --- a TSV row without its label column ---------------------------------------------------------

@pytest.mark.parametrize("text, column, where, problem", [
    ("tree\tlabel\n(S (A a))\tHUM\n(S (B b))\n", None, "3:10",
     "row has 1 fields, no 'label' column (field 2)"),
    ("tree\tlabel\tfine\n(S (A a))\tHUM\tx\n(S (B b))\t\tx\n", None, "3:11",
     "empty 'label' field"),
    ("coarse\tfine\ttree\nHUM\tind\t(S (A a))\n", "extra", None, "name the label column"),
])
def test_tsv_label_column_errors_are_located(tmp_path, text, column, where, problem):
    path = tmp_path / "qc.tsv"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_labels(path, column)
    expected = f"{path}:{where}: {problem}" if where else f"{path}: {problem}"
    assert str(info.value).startswith(expected), str(info.value)


# --- the TREC .label files are Latin-1: their one reader names it -------------------------------

def test_trec_label_files_read_as_latin1(monkeypatch):
    trec = require(SHARED_DATA / "trec")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "experiments"))
    monkeypatch.delitem(sys.modules, "_common", raising=False)
    common = importlib.import_module("_common")  # experiments/_common.py: the one reader

    texts, labels = common.read_trec_questions(trec / "train_5500.label",
                                               encoding=common.TREC_LABEL_ENCODING)
    assert len(texts) == 5452 and len(set(labels)) == 6
    assert [t for t in texts if not t.isascii()] == [
        "Which city has the oldest relationship as a sister\u00f0city with Los Angeles ?"]
    texts, labels = common.read_trec_questions(trec / "TREC_10.label",
                                               encoding=common.TREC_LABEL_ENCODING)
    assert len(texts) == 500
    with pytest.raises(TreeParseError, match=r"train_5500.label:66:60: byte 0xF0"):
        common.read_trec_questions(trec / "train_5500.label", encoding="utf-8")


# --- the command line: one line, exit 2, and --encoding -----------------------------------------

def _cli(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    return code, err[-1] if err else ""


@pytest.mark.parametrize("command", [
    ["gram", "-k", "sst", "-o", "{d}/g.tsv", "{f}"],
    ["nystrom", "fit", "{f}", "-k", "sst", "-l", "1", "-o", "{d}/p.npz"],
    ["train", "{f}", "-k", "sst", "--algo", "ksvm", "-o", "{d}/m.npz"],
    ["convert", "{f}", "--shape", "pos-leaves", "-o", "{d}/c.txt"],
    ["parse", "{f}", "-o", "{d}/t.txt"],
    ["pa", "train", "{f}", "-o", "{d}/m.npz"],
], ids=lambda argv: " ".join(a for a in argv[:2] if not a.startswith("{")))
def test_cli_names_the_byte_and_the_flag(tmp_path, capsys, command):
    f = tmp_path / "in.txt"
    f.write_bytes(TK if command[0] in ("train", "pa") else PENN)
    if command[0] == "pa":
        f.write_bytes(SPARSE)
    argv = [a.format(d=tmp_path, f=f) for a in command]
    code, line = _cli(capsys, argv)
    assert code == 2 and line.startswith(f"jkern: error: {f}:"), line
    assert "byte 0xE9 is not valid UTF-8" in line and "--encoding latin-1" in line
    if command[0] in ("gram", "convert"):  # cheap enough to run through
        code, line = _cli(capsys, [*argv, "--encoding", "latin-1", "-q"])
        assert code == 0, line


def test_cli_refuses_an_unknown_encoding(tmp_path, capsys):
    code, line = _cli(capsys, ["gram", "-k", "sst", "-o", str(tmp_path / "g.tsv"),
                               "--encoding", "utf-16", str(tmp_path / "t.txt")])
    assert code == 2 and "--encoding: encoding 'utf-16' is not ASCII-compatible" in line, line


def test_cli_relays_label_and_ds_errors(tmp_path, capsys):
    tsv = tmp_path / "qc.tsv"
    tsv.write_text("tree\tlabel\n(S (A a))\tHUM\n(S (B b))\n")
    code, line = _cli(capsys, ["train", str(tsv), "-k", "sst", "--algo", "ksvm", "-o",
                               str(tmp_path / "m.npz")])
    assert (code, line) == (2, f"jkern: error: {tsv}:3:10: row has 1 fields, no 'label' "
                               "column (field 2)")
    d = _ds(tmp_path, "0\tdog\tpet\ttrain\t\u00b2\t2\tdog , pet\n".encode())
    code, line = _cli(capsys, ["ds", "train", str(tmp_path), "-o", str(tmp_path / "m.npz")])
    assert (code, line) == (2, f"jkern: error: {d / 'mentions.tsv.gz'}:2: e1_token must be a "
                               "non-negative integer (ASCII digits), got '²'")
