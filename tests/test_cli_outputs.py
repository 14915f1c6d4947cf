"""Issue 32: no command writes over one of its inputs. For every command with an output
path, an `--out` that is one of the files it reads (the same path, a symbolic link to it or a
hard link) is a usage error: exit 2, one `jkern: error:` line, nothing written, the input's
bytes untouched. Each case uses real inputs, so that without the check the command would run
and replace the file."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest
from test_cli_ds import write_dataset

from jkern.cli import main

TREES = ("+1 |BT| (S (NP (DT the)(NN dog))(VP (VBZ barks))) |ET|\n"
         "-1 |BT| (S (NP (DT a)(NN cat))(VP (VBZ sleeps))) |ET|\n"
         "+1 |BT| (S (NP (DT the)(NN cat))(VP (VBZ barks))) |ET|\n"
         "-1 |BT| (S (NP (DT a)(NN dog))(VP (VBZ sleeps))) |ET|\n")
WORDS = ("the", "a", "dog", "cat", "barks", "sleeps")
VECTORS = f"{len(WORDS)} 2\n" + "".join(f"{w} {i % 2} {1 - i % 2}\n" for i, w in enumerate(WORDS))
SPARSE = "+1 1:1 2:1\n-1 2:1 3:1\n+1 1:1 3:1\n-1 3:1 4:1\n"


def _quiet(*argv: object) -> int:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    assert code == 0, err.getvalue()
    return code


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """Inputs every case copies: trees, word vectors, sentences, sparse vectors, a ds-wordnet
    folder, and a model of each kind (trained by the commands themselves)."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "trees.txt").write_text(TREES)
    (d / "vectors.txt").write_text(VECTORS)
    (d / "text.txt").write_text("The dog barks.\n")
    (d / "sparse.txt").write_text(SPARSE)
    write_dataset(d / "data")
    _quiet("train", "--algo", "ksvm", "-k", "sst", "-q", d / "trees.txt", "--out", d / "ksvm.npz")
    _quiet("nystrom", "fit", "-k", "sst", "-l", "2", "-q", d / "trees.txt", "--out",
           d / "proj.npz")
    _quiet("pa", "train", "-q", "--epochs", "2", d / "sparse.txt", "--out", d / "pa.npz")
    _quiet("ds", "train", "-q", "--max-iter", "50", d / "data", "--out", d / "ds.npz")
    return d


# (the command, with {name} for a copy of the input `name` and OUT for the output; the input
# that OUT names). Inputs are copied under the names given, so that the output's suffix
# fits the command: e.g. training trees in `trees.npz`, a model in `model.tsv`.
CASES = [
    ("gram -k sst {trees.tsv} --out OUT", "trees.tsv"),
    ("gram -k sst {trees.txt} {other.tsv} --out OUT", "other.tsv"),
    ("gram -k sptk --vectors {vectors.tsv} {trees.txt} --out OUT", "vectors.tsv"),
    ("predict {ksvm.npz} {trees.tsv} --out OUT", "trees.tsv"),
    ("predict {model.tsv} {trees.txt} --out OUT", "model.tsv"),
    ("train --algo ksvm -k sst {trees.npz} --out OUT", "trees.npz"),
    ("train --algo dcd --projector {proj.npz} {trees.txt} --out OUT", "proj.npz"),
    ("train --algo dcd -k sptk --vectors {vectors.npz} -l 2 {trees.txt} --out OUT",
     "vectors.npz"),
    ("nystrom fit -k sst -l 2 {trees.npz} --out OUT", "trees.npz"),
    ("nystrom embed {proj.npz} {trees.tsv} --out OUT", "trees.tsv"),
    ("nystrom embed {projector.tsv} {trees.txt} --out OUT", "projector.tsv"),
    ("convert --shape pos-leaves {trees.txt} --out OUT", "trees.txt"),
    ("parse {text.txt} --out OUT", "text.txt"),
    ("pa train {sparse.npz} --out OUT", "sparse.npz"),
    ("pa predict {pa.npz} {sparse.tsv} --out OUT", "sparse.tsv"),
    ("pa predict {pamodel.tsv} {sparse.txt} --out OUT", "pamodel.tsv"),
    ("ds predict {ds.npz} {data} --out OUT", "data/ds-wordnet/pairs.tsv"),
    ("ds predict {dsmodel.tsv} {data} --out OUT", "dsmodel.tsv"),
    ("ds train {data} --out OUT", "data/ds-wordnet/pairs.tsv"),
]
SOURCES = {"trees": "trees.txt", "other": "trees.txt", "vectors": "vectors.txt",
           "ksvm": "ksvm.npz", "model": "ksvm.npz", "proj": "proj.npz", "projector": "proj.npz",
           "text": "text.txt", "sparse": "sparse.txt", "pa": "pa.npz", "pamodel": "pa.npz",
           "ds": "ds.npz", "dsmodel": "ds.npz", "data": "data"}


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize(("command", "protected"), CASES, ids=[c for c, _ in CASES])
def test_an_output_that_is_an_input_is_refused(made, tmp_path, capsys, command, protected,
                                              link):
    argv = []
    for word in command.split():
        if word.startswith("{"):
            name = word[1:-1]
            source = made / SOURCES[name.split(".")[0]]
            (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
            word = str(tmp_path / name)
        argv.append(word)
    target = tmp_path / protected
    before = target.read_bytes()
    out = target
    if link != "same":  # a new name for the same file, with the input's suffix
        out = tmp_path / f"link{target.suffix}"
        (os.symlink if link == "symlink" else os.link)(target, out)
    code = main([str(out) if w == "OUT" else w for w in argv])
    err = capsys.readouterr().err.splitlines()
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("jkern: error: --out "), err
    assert "is the input file" in err[0] and "choose another output file" in err[0]
    assert target.read_bytes() == before
    if link == "symlink":
        assert out.is_symlink() and os.path.samefile(out, target)
    elif link == "hardlink":
        assert os.path.samefile(out, target)
    assert not any(p.name.endswith(".tmp") for p in tmp_path.rglob("*"))  # nothing written
