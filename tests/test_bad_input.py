"""Issue 23's list of bad inputs, a test per row: each gets a `jkern.errors` exception with a
message saying what to pass, never a silent model or a raw error from inside JAX."""

from __future__ import annotations

import bad_input_cases
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import svm
from jkern.errors import InputError, ModelFileError
from jkern.trees import TreeParseError, parse_penn

K4 = np.eye(4) + 0.1
TREES = [parse_penn(t) for t in ("(S (A a))", "(S (B b))", "(S (A a)(B b))", "(S (C c))")]


def test_a_binary_learner_refuses_one_class():
    with pytest.raises(InputError, match="both classes"):
        svm.ksvm(K4, [1, 1, 1, 1])
    with pytest.raises(InputError, match="both classes"):
        svm.cpa(TREES, [1, 1, 1, 1], kernel=jkern.SST(0.4), key=jax.random.key(0))
    with pytest.raises(InputError, match="both classes"):
        svm.dcd(np.ones((4, 2)), [-1, -1, -1, -1], key=jax.random.key(0))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_grams_and_features_are_refused(bad):
    gram = K4.copy()
    gram[0, 1] = bad
    with pytest.raises(InputError, match="NaN or inf"):
        svm.ksvm(gram, [1, -1, 1, -1])
    x = np.ones((4, 3))
    x[2, 1] = bad
    with pytest.raises(InputError, match="NaN or inf"):
        svm.dcd(x, [1, -1, 1, -1], key=jax.random.key(0))
    for kernel in (jkern.Linear(), jkern.Polynomial(2), jkern.RBF(0.5)):
        with pytest.raises(InputError, match="NaN or inf"):
            kernel.gram(x)
        with pytest.raises(InputError, match="NaN or inf"):
            kernel.gram(np.ones((2, 3)), x)


@pytest.mark.parametrize("lam", [-1.0, 0.0, float("nan"), float("inf"), 1.5])
def test_decay_factors_outside_zero_one_are_refused(lam):
    for make in (lambda: jkern.ST(lam), lambda: jkern.SST(lam), lambda: jkern.PTK(lam, 0.4),
                 lambda: jkern.PTK(0.4, lam)):
        with pytest.raises(InputError, match=r"decay factor: it must be in \(0, 1\]"):
            make()
    assert float(jkern.SST(1.0).lam) == 1.0  # the boundary is allowed


def test_a_traced_decay_is_checked_when_the_kernel_runs():
    @jax.jit
    def k(lam):
        return jkern.SST(lam).lam * 2

    assert float(k(0.5)) == 1.0
    with pytest.raises(Exception, match="decay factor"):
        jax.block_until_ready(k(-0.5))


def test_vector_kernel_parameters():
    with pytest.raises(InputError, match="gamma must be a finite number > 0"):
        jkern.RBF(0.0)
    with pytest.raises(InputError, match="gamma must be a finite number > 0"):
        jkern.Polynomial(2, gamma=-1.0)
    with pytest.raises(InputError, match="coef0 must be a finite number >= 0"):
        jkern.Polynomial(2, coef0=-0.5)
    with pytest.raises(InputError, match="degree must be a positive int"):
        jkern.Polynomial(0)


def test_a_kernel_block_of_the_wrong_width_names_the_shape():
    model = svm.ksvm(K4, [1, -1, 1, -1]).model
    with pytest.raises(InputError, match=r"trained on 4 inputs: pass K\(test, train\) of "
                                         r"shape \[m, 4\]"):
        model.predict(np.ones((2, 3)))


def test_an_empty_training_set_is_an_input_error():
    with pytest.raises(InputError, match="at least 2 examples"):
        svm.ksvm(np.zeros((0, 0)), [])


def test_parse_penn_takes_a_str():
    with pytest.raises(InputError, match=r"decode it first"):
        parse_penn(b"(A x)")  # pyright: ignore[reportArgumentType]
    with pytest.raises(InputError, match="takes the tree as a str, got int"):
        parse_penn(3)  # pyright: ignore[reportArgumentType]
    # a malformed tree is an InputError too, with its location
    with pytest.raises(InputError, match="<string>:1:"):
        parse_penn("(S (A a)")
    assert issubclass(TreeParseError, InputError)


def test_foreign_truncated_and_renamed_files_are_not_model_files(tmp_path):
    model = svm.ksvm(K4, [1, -1, 1, -1]).model
    good = tmp_path / "m.npz"
    jkern.save(good, model)
    raw = good.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(raw[: len(raw) // 2])
    renamed = tmp_path / "renamed.npz"
    np.save(tmp_path / "a.npy", np.ones(3))
    (tmp_path / "a.npy").rename(renamed)
    text = tmp_path / "text.npz"
    text.write_text("hello\n")
    for path in (truncated, renamed, text):
        with pytest.raises(ModelFileError, match="not a jkern model file"):
            jkern.load(path)
    back = jkern.load(good)
    np.testing.assert_array_equal(np.asarray(back.predict(K4)), np.asarray(model.predict(K4)))


def test_vmap_over_C_still_works_with_the_checks():
    grid = jax.vmap(lambda c: svm.ksvm(K4, jnp.asarray([1, -1, 1, -1]), C=c).model.coef)(
        jnp.asarray([0.5, 1.0]))
    assert grid.shape[0] == 2


TK_TRAIN = "".join(f"{lab} |BT| {tree} |ET|\n" for lab, tree in [
    ("+1", "(S (A a))"), ("-1", "(S (B b))"), ("+1", "(S (A a)(C c))"), ("-1", "(S (B b)(C c))"),
    ("+1", "(S (A a)(A a))"), ("-1", "(S (B b)(B b))")])


def test_label_zero_beside_plus_minus_one_is_refused(tmp_path):
    from jkern.trees import read_labels

    path = tmp_path / "t.dat"
    path.write_text(TK_TRAIN + "0 |BT| (S (C c)) |ET|\n")
    with pytest.raises(InputError, match=r"t.dat:7: label 0 beside -1 and \+1 marks an "
                                         r"unlabelled example"):
        read_labels(path)
    # 0 and 1 alone are an ordinary binary coding
    path.write_text("0 |BT| (S (A a)) |ET|\n1 |BT| (S (B b)) |ET|\n")
    assert read_labels(path) == ["0", "1"]


def test_cli_counts_test_labels_the_model_never_saw(tmp_path, capsys):
    from jkern.cli import main

    train, test = tmp_path / "train.dat", tmp_path / "test.dat"
    train.write_text(TK_TRAIN)
    test.write_text("+1 |BT| (S (A a)) |ET|\n3 |BT| (S (B b)) |ET|\n")
    model, out = tmp_path / "m.npz", tmp_path / "p.tsv"
    assert main(["train", str(train), "--algo", "ksvm", "--kernel", "sst", "--out",
                 str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(test), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 of 2 examples have labels the model never saw, counted as errors: 3" in err


@pytest.mark.parametrize("command", [["train", "--algo", "dcd"], ["nystrom", "fit"]])
def test_cli_refuses_more_landmarks_than_trees_with_the_librarys_message(command, tmp_path,
                                                                         capsys):
    """One rule (issue 36), the library's: `train` used to lower the count, `nystrom fit`
    refused it with a message of its own."""
    from jkern.cli import main

    train, out = tmp_path / "train.dat", tmp_path / "m.npz"
    train.write_text(TK_TRAIN)
    assert main([*command, str(train), "--kernel", "sst", "--landmarks", "50",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["jkern: error: need 1 <= landmarks <= inputs, got 50 landmarks for 6 "
                   "inputs"], err
    assert not out.exists()


def _flat(labels) -> str:
    return "(S " + " ".join(f"(N {w})" for w in labels) + ")"


def test_wide_nodes_match_the_reference():
    """Nodes past the old limit of 256 children (a flat bag of words): exact against the
    plain-Python references."""
    import reference_kernels as R

    rng = np.random.default_rng(0)
    texts = [_flat(rng.choice(["a", "b", "c", "d"], size=n).tolist()) for n in (260, 4, 3)]
    trees = [parse_penn(t) for t in texts]
    refs = [R.parse_bracket(t) for t in texts]
    for name, kernel, ref in (("sst", jkern.SST(0.1), lambda a, b: R.sst(a, b, 0.1)),
                              ("ptk", jkern.PTK(0.1, 0.4), lambda a, b: R.ptk(a, b, 0.1, 0.4))):
        got = np.asarray(kernel.gram(trees, dtype="float64"))
        want = np.array([[ref(a, b) for b in refs] for a in refs])
        np.testing.assert_allclose(got, want, rtol=1e-10, err_msg=name)


def test_a_ten_thousand_child_node():
    """SST takes a 10,000-child node (K(t, t) of a root over n equal preterminals is
    lam (1 + lam)^n + n^2 lam); PTK refuses it with the reason, above its documented limit
    of 2,048 children, and takes 2,048."""
    n, lam = 10_000, 0.01
    wide = parse_penn(_flat(["a"] * n))
    got = float(jkern.SST(lam).gram([wide], dtype="float64")[0, 0])
    want = lam * (1 + lam) ** n + n * n * lam
    assert abs(got - want) <= 1e-9 * want
    with pytest.raises(InputError, match="at most 2,048 children"):
        jkern.PTK(0.1, 0.4).gram([wide])
    from jkern.kernels._engine import MAX_ARITY

    assert MAX_ARITY["subseq"] == 2048
    edge = parse_penn(_flat(["a", "b"] * 1024))
    assert np.isfinite(np.asarray(jkern.PTK(0.1, 0.1).gram([edge]))).all()


def test_a_too_wide_node_names_its_tree_and_file_line(tmp_path, capsys):
    """Past a kernel's arity limit: an input error naming the tree (library) and its file
    and line (CLI, exit 2)."""
    from jkern.cli import main
    from jkern.errors import TreeInputError

    wide = _flat(["a", "b"] * 1500)  # 3,000 children: above PTK's 2,048
    trees = [parse_penn("(S (A a))"), parse_penn(wide), parse_penn("(S (B b))")]
    with pytest.raises(TreeInputError, match=r"tree 1 \(0-based\).*3,000 children") as info:
        jkern.PTK(0.1, 0.4).gram(trees)
    assert info.value.tree is trees[1] and info.value.index == 1
    path = tmp_path / "wide.txt"
    path.write_text("(S (A a))\n(S (B b))\n" + wide + "\n")
    assert main(["gram", "--kernel", "ptk", "--out", str(tmp_path / "k.npy"), str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: tree 2 (0-based)" in err and "at most 2,048 children" in err
    assert not (tmp_path / "k.npy").exists()


@pytest.mark.parametrize("case", bad_input_cases.cases(), ids=lambda c: c[0][:60])
def test_every_documented_bad_input_raises_its_error(case):
    code, expected, run = case
    kind, message = bad_input_cases.outcome(run)
    assert kind == expected, f"{code}: {kind}: {message}"
    assert message


def test_the_bad_input_page_is_up_to_date():
    """docs/bad-input.md's table is what the cases raise (`experiments/bad_input_table.py`)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "experiments" / "bad_input_table.py"
    spec = importlib.util.spec_from_file_location("bad_input_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run python experiments/bad_input_table.py"
