"""The `jkern` command line: `main([...])` in-process, plus one real `python -m jkern` run."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from data_paths import REF_DIR

import jkern
from jkern.cli import main


@pytest.fixture(scope="session")
def shared_ref() -> Path:
    """`../shared/ref`; skips when missing, fails instead under JKERN_REQUIRE_DATA=1."""
    if (REF_DIR / "trees50.dat").is_file() and (REF_DIR / "ref_gram.tsv").is_file():
        return REF_DIR
    msg = f"reference data not found at {REF_DIR}"
    if os.environ.get("JKERN_REQUIRE_DATA") == "1":
        pytest.fail(msg + " (JKERN_REQUIRE_DATA=1)")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def ref_ptk(shared_ref: Path) -> tuple[np.ndarray, np.ndarray]:
    """(raw, normalized) 50x50 PTK lam=mu=0.4 `dist` (max_subseq 5) matrices from ref_gram.tsv."""
    raw = np.full((50, 50), np.nan)
    norm = np.full((50, 50), np.nan)
    with open(shared_ref / "ref_gram.tsv", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if (row["kernel"], row["lambda"], row["mu"], row["variant"]) != (
                "PTK", "0.4", "0.4", "dist"
            ):
                continue
            i, j = int(row["i"]), int(row["j"])
            raw[i, j] = raw[j, i] = float(row["raw"])
            norm[i, j] = norm[j, i] = float(row["normalized"])
    assert not np.isnan(raw).any() and not np.isnan(norm).any()
    return raw, norm


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, list[str]]:
    """Exit code and stderr lines of `jkern <argv>` run in-process."""
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err.splitlines()


def _read_tsv(path: Path) -> np.ndarray:
    return np.array([[float(x) for x in line.split("\t")]
                     for line in path.read_text().splitlines()])


PTK5 = ("gram", "--kernel", "ptk", "--max-subseq", "5", "--dtype", "float64")


@pytest.fixture(scope="module")
def ptk_square(shared_ref: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the raw PTK Gram of trees50.dat as `g.tsv` and `g.npy`."""
    out = tmp_path_factory.mktemp("ptk_square")
    for name in ("g.tsv", "g.npy"):
        assert main([*PTK5, "--quiet", str(shared_ref / "trees50.dat"),
                     "--out", str(out / name)]) == 0
    return out


# --------------------------------------------------------------------------- exact values


def test_square_gram_matches_svmlight_tk(ptk_square, ref_ptk):
    raw, _ = ref_ptk
    g = _read_tsv(ptk_square / "g.tsv")
    assert g.shape == (50, 50)
    np.testing.assert_allclose(g, raw, rtol=1e-9, atol=0)


def test_tsv_and_npy_agree_exactly(ptk_square):
    g_npy = np.load(ptk_square / "g.npy")
    assert g_npy.dtype == np.float64 and g_npy.shape == (50, 50)
    np.testing.assert_array_equal(_read_tsv(ptk_square / "g.tsv"), g_npy)  # TSV round-trips


def test_normalized_gram_matches_svmlight_tk(shared_ref, ref_ptk, tmp_path, capsys):
    _, norm = ref_ptk
    out = tmp_path / "n.npy"
    code, err = _run(capsys, *PTK5, "--normalize", shared_ref / "trees50.dat", "--out", out)
    assert code == 0
    assert len(err) == 1 and "50x50" in err[0] and "ptk" in err[0]  # the summary line
    g = np.load(out)
    np.testing.assert_allclose(g, norm, rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(np.diag(g), 1.0)


def test_trees2_gives_the_rectangular_block(shared_ref, ptk_square, tmp_path, capsys):
    # TREES: the first 20 trees (SVM-Light-TK lines); TREES2: the other 30 (TSV, 'tree' column)
    dat = (shared_ref / "trees50.dat").read_text().splitlines(keepends=True)
    tsv = (shared_ref / "trees50.tsv").read_text().splitlines(keepends=True)
    first, rest = tmp_path / "first.dat", tmp_path / "rest.tsv"
    first.write_text("".join(dat[:20]))
    rest.write_text("".join([tsv[0], *tsv[21:]]))
    out = tmp_path / "block.npy"
    code, _ = _run(capsys, *PTK5, "--quiet", first, rest, "--out", out)
    assert code == 0
    block = np.load(out)
    assert block.shape == (20, 30)
    square = np.load(ptk_square / "g.npy")
    np.testing.assert_allclose(block, square[:20, 20:], rtol=1e-12, atol=0)


# --------------------------------------------------------------------------- small inputs

TREES = "(S (NP (DT the)(NN dog))(VP (VBZ barks)))\n(S (NP (DT a)(NN cat))(VP (VBZ sleeps)))\n"


def test_sptk_with_orthogonal_vectors_equals_ptk(tmp_path, capsys):
    trees = tmp_path / "t.txt"
    trees.write_text(TREES + "(S (NP (DT the)(NN cat))(VP (VBZ barks)))\n")
    words = ["the", "a", "dog", "cat", "barks", "sleeps"]
    vectors = tmp_path / "v.txt"
    vectors.write_text(f"{len(words)} {len(words)}\n" + "".join(
        w + " " + " ".join("1" if k == i else "0" for k in range(len(words))) + "\n"
        for i, w in enumerate(words)
    ))
    code, _ = _run(capsys, "gram", "--kernel", "ptk", "-q", trees, "--out", tmp_path / "p.npy")
    assert code == 0
    code, _ = _run(capsys, "gram", "--kernel", "sptk", "--vectors", vectors, "--threshold", "0.1",
                   "-q", trees, "--out", tmp_path / "s.npy")
    assert code == 0
    ptk, sptk = np.load(tmp_path / "p.npy"), np.load(tmp_path / "s.npy")
    assert ptk.shape == (3, 3) and (ptk > 0).all()
    np.testing.assert_allclose(sptk, ptk, rtol=1e-12, atol=0)


def test_sptk_gamma_flag_gives_the_gaussian_similarity(tmp_path, capsys):
    trees = tmp_path / "t.txt"
    trees.write_text(TREES)
    vectors = tmp_path / "v.txt"  # "dog" and "cat" at cosine 0.6, the rest orthogonal
    vectors.write_text("3 2\ndog 1 0\ncat 0.6 0.8\nthe 0 1\n")
    out = tmp_path / "s.npy"
    code, _ = _run(capsys, "gram", "--kernel", "sptk", "--vectors", vectors, "--gamma", "2",
                   "-q", trees, "--out", out)
    assert code == 0
    vocab, vecs = ["dog", "cat", "the"], np.array([[1, 0], [0.6, 0.8], [0, 1.0]])
    parsed = [jkern.trees.parse_penn(line) for line in TREES.splitlines()]
    want = jkern.gram(jkern.SPTK(vocab, vecs, 0.4, 0.4, gamma=2.0), parsed, dtype="float64")
    ptk = jkern.gram(jkern.PTK(0.4, 0.4), parsed, dtype="float64")
    assert float(want[0, 1]) > float(ptk[0, 1]) * (1 + 1e-6)  # dog ~ cat counts
    np.testing.assert_allclose(np.load(out), np.asarray(want), rtol=1e-12)
    code, err = _run(capsys, "gram", "--kernel", "sptk", "--vectors", vectors, "--gamma", "2",
                     "--threshold", "0.1", trees, "--out", out)
    assert code == 2 and "--gamma" in "\n".join(err)


def test_csptk_flag_gives_the_compositional_kernel(tmp_path, capsys):
    lines = ["(root (nsubj<bark::v,dog::n> (NOUN dog::n))(VERB bark::v))",
             "(root (nsubj<run::v,cat::n> (NOUN cat::n))(VERB run::v))",
             "(root (nsubj<bark::v,cat::n> (NOUN cat::n))(VERB bark::v))"]
    trees = tmp_path / "t.txt"
    trees.write_text("\n".join(lines) + "\n")
    vectors = tmp_path / "v.txt"
    vectors.write_text("4 2\ndog 1 0\ncat 0.6 0.8\nbark 0 1\nrun 0.8 0.6\n")
    out = tmp_path / "c.npy"
    code, _ = _run(capsys, "gram", "--kernel", "csptk", "--vectors", vectors, "--gamma", "2",
                   "--normalize", "-q", trees, "--out", out)
    assert code == 0
    vocab = ["dog", "cat", "bark", "run"]
    vecs = np.array([[1, 0], [0.6, 0.8], [0, 1.0], [0.8, 0.6]])
    parsed = [jkern.trees.parse_penn(line) for line in lines]
    kernel = jkern.Normalized(jkern.CSPTK(vocab, vecs, 0.4, 0.4, gamma=2.0))
    want = np.asarray(jkern.gram(kernel, parsed, dtype="float64"))
    sptk = np.asarray(jkern.gram(jkern.Normalized(jkern.SPTK(vocab, vecs, 0.4, 0.4, gamma=2.0)),
                                 parsed, dtype="float64"))
    assert abs(want[0, 1] - sptk[0, 1]) > 1e-3  # the head-modifier nodes are smoothed
    np.testing.assert_allclose(np.load(out), want, rtol=1e-12)
    code, err = _run(capsys, "gram", "--kernel", "csptk", trees, "--out", tmp_path / "x.npy")
    assert code == 2 and "--vectors" in err[0]


def test_sptk_without_vectors_is_a_usage_error(tmp_path, capsys):
    trees = tmp_path / "t.txt"
    trees.write_text(TREES)
    code, err = _run(capsys, "gram", "--kernel", "sptk", trees, "--out", tmp_path / "g.npy")
    assert code == 2
    assert len(err) == 1 and err[0].startswith("jkern: error: ") and "--vectors" in err[0]
    assert sorted(os.listdir(tmp_path)) == ["t.txt"]


@pytest.mark.parametrize(
    "bad_line, problem",
    [
        ("(S (NP (DT the)(NN dog))(VP (VBZ barks))", "unclosed"),  # unbalanced paren
        ("()", "empty"),  # empty tree
        ("(S (NN x)) stray words", "after the tree"),  # stray text
    ],
    ids=["unbalanced", "empty", "stray"],
)
@pytest.mark.parametrize("fmt", ["penn", "svmlight"])
def test_malformed_input_fails_cleanly(tmp_path, capsys, bad_line, problem, fmt):
    lines = [*TREES.splitlines(), bad_line]
    if fmt == "svmlight":
        lines = [f"+1 |BT| {t} |ET|" for t in lines]
    trees = tmp_path / "bad.txt"
    trees.write_text("\n".join(lines) + "\n")
    out = tmp_path / "g.tsv"
    code, err = _run(capsys, "gram", "--kernel", "sst", trees, "--out", out)
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith(f"jkern: error: {trees}:3:")
    assert problem in err[0]
    assert sorted(os.listdir(tmp_path)) == ["bad.txt"]  # no output, no temp file


def test_malformed_trees2_names_that_file(tmp_path, capsys):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(TREES)
    bad.write_text(TREES + "(S (NN x)))\n")
    code, err = _run(capsys, "gram", "--kernel", "st", good, bad, "--out", tmp_path / "g.npy")
    assert code == 2 and len(err) == 1 and f"{bad}:3:" in err[0]
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "good.txt"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--out", "{d}/g.csv"], "'.csv'"),  # bad suffix
        (["--out", "{d}/g"], "no suffix"),
        (["--out", "{d}/missing/g.npy"], "does not exist"),
        (["--out", "{d}/g.npy", "--lam", "-1"], "--lam"),
        (["--out", "{d}/g.npy", "--max-subseq", "0"], "--max-subseq"),
        (["--out", "{d}/g.npy", "--threshold", "0.5"], "--threshold"),
        (["--out", "{d}/g.npy", "--gamma", "2"], "--gamma"),
        ([], "--out"),
    ],
    ids=["csv", "nosuffix", "nodir", "lam", "maxsubseq", "threshold-not-sptk", "gamma-not-sptk",
         "no-out"],
)
def test_usage_errors(tmp_path, capsys, argv, needle):
    trees = tmp_path / "t.txt"
    trees.write_text(TREES)
    args = [a.format(d=tmp_path) for a in argv]
    code, err = _run(capsys, "gram", "--kernel", "ptk", trees, *args)
    assert code == 2
    assert len(err) == 1 and err[0].startswith("jkern: error: ") and needle in err[0], err
    assert sorted(os.listdir(tmp_path)) == ["t.txt"]


def test_missing_input_file(tmp_path, capsys):
    code, err = _run(capsys, "gram", "--kernel", "st", tmp_path / "nope.txt",
                     "--out", tmp_path / "g.npy")
    assert code == 2 and len(err) == 1 and "nope.txt" in err[0]
    assert os.listdir(tmp_path) == []


def test_float32_overflow_is_an_error_without_output(tmp_path, capsys):
    def full(depth: int) -> str:  # complete binary tree: SST self-kernel ~ 2^(2^depth) at lam=1
        return "(A a)" if depth == 0 else f"(A {full(depth - 1)} {full(depth - 1)})"

    trees = tmp_path / "big.txt"
    trees.write_text(full(8) + "\n")
    out = tmp_path / "g.npy"
    code, err = _run(capsys, "gram", "--kernel", "sst", "--lam", "1", "--dtype", "float32",
                     trees, "--out", out)
    assert code == 1
    assert len(err) == 1 and err[0].startswith("jkern: error: ") and "float64" in err[0]
    assert sorted(os.listdir(tmp_path)) == ["big.txt"]


def test_help_exits_zero(capsys):
    assert main(["gram", "--help"]) == 0
    assert "--kernel" in capsys.readouterr().out


# --------------------------------------------------------------------------- real entry path


def test_python_dash_m_jkern(tmp_path):
    trees = tmp_path / "t.txt"
    trees.write_text("(S (NP (NN a))(VP (VB b)))\n(S (NP (NN a)))\n")
    out = tmp_path / "g.tsv"
    env = {k: v for k, v in os.environ.items() if k != "JKERN_DEBUG"}
    proc = subprocess.run(
        [sys.executable, "-m", "jkern", "gram", "--kernel", "sst", "--lam", "1", str(trees),
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    # SST, lam 1: NN 1 + VB 1 + NP 2 + VP 2 + S 9 = 15; NN 1 + NP 2 + S 3 = 6; shared 1 + 2 = 3
    assert out.read_text() == "15\t3\n3\t6\n"  # exact: float64 by default
    err = proc.stderr.splitlines()
    assert len(err) == 1 and "2x2" in err[0] and "sst" in err[0]
