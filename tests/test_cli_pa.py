"""`jkern pa train|predict` in-process: round trips on small sparse-vector files written here
whose decision values equal the library's (`jkern.pa.fit` + `decision_function`), the
error contract (exit codes, one line, no partial file) and the help."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jkern
from jkern.cli import main
from jkern.pa import read_sparse

TRAIN = """\
+1 1:1 2:1 5:1
+1 1:1 3:1 # a comment
-1 2:1 3:1
-1 3:1 4:1
+1 1:1 4:1 5:1

-1 2:1 4:1
+1 1:1 2:1
-1 3:1 5:1
"""
# A feature (9) training never saw, and one example with no feature at all.
TEST = """\
+1 1:1 5:1
-1 3:1 9:1
+1 1:1 2:1 3:1
-1 4:1
-1
"""
# SVM-Light-TK lines: the vector after |ET| is read, the tree ignored.
TK = """\
+1 |BT| (S (A a)) |ET| 1:1 2:1 5:1 |EV|
+1 |BT| (S (B b)) |ET| 1:1 3:1 |EV|
-1 |BT| (S (A a)) |ET| 2:1 3:1 |EV|
-1 |BT| (S (C c)) |ET| 3:1 4:1 |EV|
"""
REAL = "+1 1:0.5 2:1.5\n-1 2:2 3:0.25\n+1 1:1 3:-0.5\n-1 3:1\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "train.svm").write_text(TRAIN)
    (tmp_path / "test.svm").write_text(TEST)
    return tmp_path


def _values(path):
    return np.array([float(v) for v in path.read_text().split()])


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jkern: error: "), err
    return err[0]


@pytest.mark.parametrize("mode,degree", [("block", 2), ("kernel", 3), ("splitting", 2),
                                         ("slicing", 3), ("explicit", 2), ("linear", 1)])
def test_round_trip_equals_the_library(files, capsys, mode, degree):
    model, pred = files / "m.npz", files / "p.tsv"
    assert main(["pa", "train", str(files / "train.svm"), "--out", str(model), "--mode", mode,
                 "--degree", str(degree), "--C", "0.5", "--epochs", "3"]) == 0
    err = capsys.readouterr().err
    assert f"pa train: 8 examples, 5 features, mode {mode}" in err
    assert main(["pa", "predict", str(model), str(files / "test.svm"), "--out", str(pred)]) == 0
    err = capsys.readouterr().err
    got = _values(pred)

    train, test = read_sparse(files / "train.svm"), read_sparse(files / "test.svm")
    sol = jkern.pa.fit(train.features, train.labels, degree=degree, C=0.5, epochs=3,
                       mode=mode, throw=True, key=None)
    want = np.asarray(sol.model.decision_function(test.features), np.float64)
    np.testing.assert_array_equal(got, want)
    accuracy = np.mean(np.where(want >= 0, 1, -1) == test.labels)
    assert f"5 examples -> {pred}, accuracy {accuracy:.4f}" in err
    # the saved model is the library's, through the one save/load
    loaded = jkern.load(model)
    assert type(loaded) is type(sol.model)


def test_modes_give_one_model_and_stdout_output(files, capsys):
    outs = []
    for mode in ("kernel", "block", "splitting", "slicing", "explicit"):
        model = files / f"{mode}.npz"
        assert main(["pa", "train", str(files / "train.svm"), "-o", str(model), "-m", mode,
                     "-q"]) == 0
        assert capsys.readouterr().err == ""
        assert main(["pa", "predict", str(model), str(files / "test.svm"), "-q"]) == 0
        captured = capsys.readouterr()
        assert captured.err == ""
        outs.append(np.array([float(v) for v in captured.out.split()]))
    # averaged and shuffled: the library's model
    model = files / "avg.npz"
    assert main(["pa", "train", str(files / "train.svm"), "-o", str(model), "--average",
                 "--shuffle", "--seed", "4"]) == 0
    assert ", shuffled, averaged" in capsys.readouterr().err
    train = read_sparse(files / "train.svm")
    want = jkern.pa.fit(train.features, train.labels, average=True, shuffle=True,
                        key=jax.random.key(4)).model
    test = read_sparse(files / "test.svm").features
    np.testing.assert_array_equal(np.asarray(jkern.load(model).decision_function(test)),
                                  np.asarray(want.decision_function(test)))
    # the expanded model (pecco's PKE) gives the same values
    model = files / "expanded.npz"
    assert main(["pa", "train", str(files / "train.svm"), "-o", str(model), "--expand",
                 "-q"]) == 0
    assert isinstance(jkern.load(model), jkern.pa.ExpandedModel)
    assert main(["pa", "predict", str(model), str(files / "test.svm"), "-q"]) == 0
    outs.append(np.array([float(v) for v in capsys.readouterr().out.split()]))
    assert main(["pa", "train", str(files / "train.svm"), "-o", str(model), "--expand",
                 "-m", "linear"]) == 2
    assert "--expand applies to the kernel modes" in capsys.readouterr().err
    assert all(len(o) == 5 for o in outs)
    for o in outs[1:]:
        np.testing.assert_allclose(o, outs[0], rtol=1e-12, atol=1e-12)


def test_textbook_and_real_values(tmp_path, capsys):
    data = tmp_path / "real.svm"
    data.write_text(REAL)
    for extra in ([], ["--textbook"]):
        model, pred = tmp_path / "m.npz", tmp_path / "p.tsv"
        assert main(["pa", "train", str(data), "--out", str(model), "--mode", "kernel",
                     "--epochs", "2", *extra]) == 0
        assert main(["pa", "predict", str(model), str(data), "--out", str(pred)]) == 0
        d = read_sparse(data)
        sol = jkern.pa.fit(d.features, d.labels, mode="kernel", epochs=2,
                           textbook=bool(extra), throw=True, key=None)
        np.testing.assert_array_equal(
            _values(pred), np.asarray(sol.model.decision_function(d.features), np.float64))
    capsys.readouterr()


def test_svm_light_tk_lines(tmp_path, capsys):
    tk = tmp_path / "tk.dat"
    tk.write_text(TK)
    plain = tmp_path / "plain.svm"
    plain.write_text("".join(f"{line.split()[0]} {line.split('|ET|')[1].split('|EV|')[0]}\n"
                             for line in TK.splitlines()))
    values = []
    for path in (tk, plain):
        model, pred = tmp_path / "m.npz", tmp_path / f"{path.stem}.tsv"
        assert main(["pa", "train", str(path), "-o", str(model), "-q"]) == 0
        assert main(["pa", "predict", str(model), str(path), "-o", str(pred)]) == 0
        values.append(_values(pred))
    np.testing.assert_array_equal(values[0], values[1])
    assert "accuracy 1.0000" in capsys.readouterr().err


@pytest.mark.parametrize("text,message", [
    ("+1 1:1\n2 3:1\n", "train.svm:2:1: label must be +1 or -1, got '2'"),
    ("+1 1:1\n-1 x:1\n", "train.svm:2:"),
    ("", "train.svm: no examples"),
    ("# only a comment\n\n", "train.svm: no examples"),
])
def test_bad_training_file(tmp_path, capsys, text, message):
    data, model = tmp_path / "train.svm", tmp_path / "m.npz"
    data.write_text(text)
    assert main(["pa", "train", str(data), "--out", str(model)]) == 2
    assert message in _one_error(capsys)
    assert not model.exists()


def test_unknown_mode_is_the_library_error(files, capsys):
    model = files / "m.npz"
    assert main(["pa", "train", str(files / "train.svm"), "--out", str(model),
                 "--mode", "fast"]) == 2
    line = _one_error(capsys)
    assert "mode must be one of" in line and "'fast'" in line
    assert not model.exists()


def test_flags_the_data_cannot_take(tmp_path, capsys):
    data, model = tmp_path / "real.svm", tmp_path / "m.npz"
    data.write_text(REAL)
    assert main(["pa", "train", str(data), "--out", str(model), "--mode", "splitting"]) == 2
    assert "binary features" in _one_error(capsys)
    assert main(["pa", "train", str(data), "--out", str(model), "--exact"]) == 2
    assert "exact=True needs binary features" in _one_error(capsys)
    assert not model.exists()


@pytest.mark.parametrize("argv,message", [
    (["--degree", "4"], "invalid choice"),
    (["--C", "0"], "must be a finite number > 0"),
    (["--epochs", "0"], "must be >= 1"),
])
def test_bad_flags(files, capsys, argv, message):
    model = files / "m.npz"
    assert main(["pa", "train", str(files / "train.svm"), "--out", str(model), *argv]) == 2
    assert message in _one_error(capsys)
    assert not model.exists()


def test_bad_outputs_and_models(files, capsys):
    train = str(files / "train.svm")
    assert main(["pa", "train", train, "--out", str(files / "m.pkl")]) == 2
    assert "unknown output format" in _one_error(capsys)
    assert main(["pa", "train", train, "--out", str(files / "nowhere" / "m.npz")]) == 2
    assert "does not exist" in _one_error(capsys)
    assert main(["pa", "train", str(files / "missing.svm"), "--out",
                 str(files / "m.npz")]) == 2
    assert "missing.svm" in _one_error(capsys)

    model = files / "m.npz"
    assert main(["pa", "train", train, "--out", str(model), "-q"]) == 0
    pred = files / "p.tsv"
    bad = files / "bad.svm"
    bad.write_text("+1 1:1\n+1 1:nan\n")
    assert main(["pa", "predict", str(model), str(bad), "--out", str(pred)]) == 2
    assert "bad.svm:2:" in _one_error(capsys)
    assert not pred.exists()
    assert main(["pa", "predict", str(model), train, "--out", str(files / "p.npy")]) == 2
    assert "unknown output format" in _one_error(capsys)
    assert main(["pa", "predict", str(files / "none.npz"), train, "--out", str(pred)]) == 2
    assert "none.npz" in _one_error(capsys)
    # a jkern model that is not PA-I's
    other = files / "kernel.npz"
    jkern.save(other, jkern.kernels.SST(lam=0.4))
    assert main(["pa", "predict", str(other), train, "--out", str(pred)]) == 2
    assert "not a model from `jkern pa train`" in _one_error(capsys)
    assert not pred.exists()


def test_help(capsys):
    assert main(["pa", "--help"]) == 0
    out = capsys.readouterr().out
    assert "train" in out and "predict" in out
    assert main(["pa", "train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for name in ("kernel", "block", "splitting", "slicing", "explicit", "linear"):
        assert name in text
    assert "(default 2)" in text and "(default 10)" in text and "--textbook" in text
    assert main(["pa", "predict", "--help"]) == 0
    assert "(default: stdout)" in " ".join(capsys.readouterr().out.split())
    assert main(["--help"]) == 0
    assert "pa" in capsys.readouterr().out


def test_cli_modes_match_the_library():
    from jkern.cli._pa import MODES

    assert MODES == jkern.pa.MODES
