"""`jkern nystrom fit|embed`, `jkern train`, `jkern predict` end to end on the reference trees
(SVM-Light-TK lines with ±1 labels), checked against the library calls they wrap."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest
from data_paths import REF_DIR, require

import jkern
from jkern.cli import main


@pytest.fixture(scope="module")
def dat():
    return str(require(REF_DIR / "trees50.dat"))


def test_nystrom_fit_and_embed_match_the_library(dat, tmp_path):
    proj_path = tmp_path / "p.npz"
    assert main(["nystrom", "fit", dat, "--kernel", "sst", "--normalize", "-l", "12",
                 "--seed", "3", "--out", str(proj_path), "-q"]) == 0
    assert main(["nystrom", "embed", str(proj_path), dat, "--out", str(tmp_path / "x.npy"),
                 "-q"]) == 0
    trees = jkern.read_trees(dat)
    want = jkern.fit_nystrom(jkern.Normalized(jkern.SST(0.4)), trees, landmarks=12,
                             key=jax.random.PRNGKey(3), dtype="float64")
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"),
                                  want.embed(trees, dtype="float64"))


def test_train_and_predict_ksvm(dat, tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["train", dat, "--algo", "ksvm", "--kernel", "sst", "--normalize", "--C", "10",
                 "--out", str(model)]) == 0
    assert "support vectors" in capsys.readouterr().err
    out = tmp_path / "p.tsv"
    assert main(["predict", str(model), dat, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    lines = out.read_text().splitlines()
    # a binary model: one decision value per tree, positive for class 1 (SVM-Light-TK's)
    assert lines[0] == "label\tscore_1" and len(lines) == 51
    # the library's binary SVM (two classes: one SVM, as SVM-Light-TK) gives the same values
    trees = jkern.read_trees(dat)
    labels = np.array([int(line.split()[0]) for line in Path(dat).read_text().splitlines()])
    g = jkern.gram(jkern.Normalized(jkern.SST(0.4)), trees, dtype="float64")
    ref = jkern.svm.ksvm(g, labels, C=10.0).model
    f = np.asarray(ref.decision_function(g))
    decision = np.array([float(line.split("\t")[1]) for line in lines[1:]])
    np.testing.assert_allclose(decision, f, atol=1e-9)
    predicted = np.array([int(line.split("\t")[0]) for line in lines[1:]])
    np.testing.assert_array_equal(predicted, np.where(f >= 0, 1, -1))
    acc = float(np.mean(predicted == labels))
    assert f"accuracy {acc:.4f}" in err
    assert jkern.load(model).classes == ("-1", "1")


@pytest.mark.parametrize("extra", [[], ["--j", "3"], ["--devices", "1"],
                                   ["--j", "3", "--c-light", "0.5"], ["--confirm", "3"]],
                         ids=["usvm", "usvm+j", "devices", "c-light", "confirm"])
def test_train_and_predict_cpa(dat, tmp_path, capsys, extra):
    model = tmp_path / "m.npz"
    assert main(["train", dat, "--algo", "cpa", "--kernel", "sst", "--normalize", "--C", "50",
                 "--sample", "20", "--seed", "2", "--out", str(model), *extra]) == 0
    assert "cutting-plane iterations" in capsys.readouterr().err
    out = tmp_path / "p.tsv"
    assert main(["predict", str(model), dat, "--out", str(out), "-q"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "label\tscore_1" and len(lines) == 51
    trees = jkern.read_trees(dat)
    labels = np.array([int(line.split()[0]) for line in Path(dat).read_text().splitlines()])
    j = 3.0 if "--j" in extra else None
    # --c-light 0.5 with j = 3: the 1-slack C is 0.5 * (3 * positives + negatives)
    c = 0.5 * (3 * np.sum(labels > 0) + np.sum(labels < 0)) if "--c-light" in extra else 50.0
    confirm = 3 if "--confirm" in extra else 1
    ref = jkern.svm.cpa(trees, labels, kernel=jkern.Normalized(jkern.SST(0.4)), C=c,
                        sample=20, class_weight=None if j is None else {1: j, -1: 1.0},
                        confirm=confirm, key=jax.random.PRNGKey(2))
    f = np.asarray(ref.model.decision_function(trees))
    decision = np.array([float(line.split("\t")[1]) for line in lines[1:]])
    np.testing.assert_allclose(decision, f, rtol=1e-9, atol=1e-12)
    predicted = np.array([int(line.split("\t")[0]) for line in lines[1:]])
    np.testing.assert_array_equal(predicted[f != 0], np.where(f > 0, 1, -1)[f != 0])


def test_train_cpa_asks_for_more_devices_than_there_are(dat, tmp_path, capsys):
    n = len(jax.devices())
    assert main(["train", dat, "--algo", "cpa", "--kernel", "sst", "--sample", "20",
                 "--devices", str(n + 1), "--out", str(tmp_path / "m.npz")]) == 2
    assert f"--devices {n + 1}: JAX sees {n} device" in capsys.readouterr().err


def test_train_and_predict_kda(dat, tmp_path, capsys):
    proj_path, model = tmp_path / "p.npz", tmp_path / "m.npz"
    assert main(["nystrom", "fit", dat, "--kernel", "ptk", "--normalize", "-l", "10",
                 "--out", str(proj_path), "-q"]) == 0
    assert main(["train", dat, "--algo", "kda", "--projector", str(proj_path), "--hidden",
                 "16", "--epochs", "30", "--patience", "5", "--dev-fraction", "0.2",
                 "--out", str(model)]) == 0
    assert "best dev accuracy" in capsys.readouterr().err
    out = tmp_path / "p.tsv"
    assert main(["predict", str(model), dat, "--out", str(out), "-q"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "label\tscore_1" and len(lines) == 51
    # the saved network and projector give the same scores through the library; the one
    # decision value of two classes is the difference of the logits (the log-odds of 1)
    net = jkern.load(model).head
    proj = jkern.load(proj_path)
    trees = jkern.read_trees(dat)
    c = jkern.gram(proj.kernel, trees, list(proj.landmarks), dtype="float64")
    logits = np.asarray(net(c))
    decision = np.array([float(line.split("\t")[1]) for line in lines[1:]])
    np.testing.assert_allclose(decision, logits[:, 1] - logits[:, 0], rtol=1e-12, atol=1e-12)
    assert net.classes == ("-1", "1") and [w.weight.shape[0] for w in net.hidden] == [16]


@pytest.mark.parametrize("argv, message", [
    (["train", "{dat}", "--algo", "dcd", "--kernel", "sst", "--out", "{tmp}/m.npz"],
     "needs --projector FILE or --landmarks M"),
    (["train", "{dat}", "--algo", "ksvm", "--out", "{tmp}/m.npz"], "give --kernel"),
    (["train", "{dat}", "--algo", "kda", "--kernel", "ptk", "-l", "5", "--dropout", "1",
      "--out", "{tmp}/m.npz"], "--dropout 1.0: use a rate in [0, 1)"),
    (["train", "{dat}", "--algo", "ksvm", "--kernel", "sst", "--out", "{tmp}/m.txt"],
     "use a .npz file name"),
    (["predict", "{dat}", "{dat}", "--out", "{tmp}/p.tsv"], "not a jkern model file"),
    (["nystrom", "embed", "{tmp}/missing.npz", "{dat}", "--out", "{tmp}/x.npy"],
     "No such file"),
])
def test_model_commands_fail_with_one_line(dat, tmp_path, capsys, argv, message):
    argv = [a.format(dat=dat, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jkern: error:") and message in err[0]
    assert not (tmp_path / "m.npz").exists()


def test_predict_finds_labels_as_train_does_and_keeps_multiclass_scores(dat, tmp_path, capsys):
    """A TSV with a `label` column: train and predict both find it; three classes keep one
    score column per class; a file without labels gives no accuracy."""
    lines = Path(dat).read_text().splitlines()
    penn = [line.split("|BT|")[1].split("|ET|")[0].strip() for line in lines]
    classes = ["a", "b", "c"]
    tsv = tmp_path / "t.tsv"
    tsv.write_text("id\ttree\tlabel\n" + "".join(
        f"{i}\t{t}\t{classes[i % 3]}\n" for i, t in enumerate(penn)))
    model = tmp_path / "m.npz"
    assert main(["train", str(tsv), "--algo", "ksvm", "--kernel", "sst", "--normalize", "--C",
                 "10", "--out", str(model), "-q"]) == 0
    out = tmp_path / "p.tsv"
    assert main(["predict", str(model), str(tsv), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    rows = out.read_text().splitlines()
    assert rows[0] == "label\tscore_a\tscore_b\tscore_c" and len(rows) == 51
    predicted = [row.split("\t")[0] for row in rows[1:]]
    acc = np.mean([p == classes[i % 3] for i, p in enumerate(predicted)])
    assert f"accuracy {acc:.4f}" in err
    bare = tmp_path / "t.txt"
    bare.write_text("".join(f"{t}\n" for t in penn))
    assert main(["predict", str(model), str(bare), "--out", str(out)]) == 0
    assert "accuracy" not in capsys.readouterr().err
    assert out.read_text().splitlines()[1:] == rows[1:]
    # a column named by --label-column that the file lacks is a usage error
    assert main(["predict", str(model), str(tsv), "--label-column", "gold",
                 "--out", str(out)]) == 2
    assert "name the label column (columns: id, tree, label)" in capsys.readouterr().err


def test_progress_reports_every_phase(dat, tmp_path, capsys):
    model = tmp_path / "m.npz"
    argv = ["train", dat, "--algo", "cpa", "--kernel", "sst", "--normalize", "--C", "50",
            "--sample", "20", "--seed", "2", "--out", str(model), "-q"]
    assert main([*argv, "--progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    iterations = [line for line in err if "cutting planes, positive class 1: iteration" in line]
    assert iterations and "iteration 1," in iterations[0]
    assert main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["train", dat, "--algo", "ksvm", "--kernel", "sst", "--out", str(model),
                 "--progress", "-q"]) == 0
    err = capsys.readouterr().err
    for phase in ("jkern: Gram matrix of 50 trees ...", "jkern: Gram matrix of 50 trees: ",
                  "jkern: SMO, one binary SVM (positive class 1): ", "blocks"):
        assert phase in err


def test_train_dcd_two_classes_is_one_binary_svm(dat, tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["train", dat, "--algo", "dcd", "--kernel", "sst", "--normalize", "-l", "12",
                 "--seed", "1", "--out", str(model), "-q"]) == 0
    out = tmp_path / "p.tsv"
    assert main(["predict", str(model), dat, "--out", str(out), "-q"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "label\tscore_1" and len(lines) == 51
    m = jkern.load(model)
    assert m.head.w.ndim == 1 and m.classes == ("-1", "1")
    trees = jkern.read_trees(dat)
    x = m.projector.embed(trees, dtype="float64")
    f = np.asarray(m.head.decision_function(x))
    decision = np.array([float(line.split("\t")[1]) for line in lines[1:]])
    np.testing.assert_allclose(decision, f, rtol=1e-12, atol=1e-12)
    labels = [line.split("\t")[0] for line in lines[1:]]
    assert labels == np.where(f >= 0, "1", "-1").tolist()
    assert np.asarray(m.head.predict(x)).tolist() == labels
