"""`jkern ds train|predict` in-process: a round trip on a tiny ds-wordnet folder written here,
checked against the library calls the commands wrap; the error contract (exit codes, one
line, no partial file); and one quick run on the real data (`--max-pairs 200`)."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
from pathlib import Path

import numpy as np
import pytest
from data_paths import SHARED_DATA, require

import jkern
from jkern.cli import main
from jkern.data import load_ds_wordnet

RELATIONS = ("NA", "is_a", "part_of", "member_of")

# (e1, e2, split, relations, [(sentence, e1 surface form, e2 surface form), ...])
PAIRS = [
    ("cat", "feline", "train", "is_a", [
        ("Cat : a small domesticated feline of many breeds .", "Cat", "feline"),
        ("The cat is a carnivorous feline that hunts mice .", "cat", "feline")]),
    ("dog", "mammal", "train", "is_a", [
        ("Dog : a domesticated carnivorous mammal kept as a pet .", "Dog", "mammal"),
        ("Every dog is a mammal , as is every wolf .", "dog", "mammal"),
        ("The dog and other mammal pets need water .", "dog", "mammal")]),
    ("finger", "hand", "train", "part_of", [
        ("Finger : one of the five terminating members of the hand .", "Finger", "hand"),
        ("He wore a ring on one finger of his left hand .", "finger", "hand")]),
    ("blade", "knife", "train", "part_of", [
        ("Blade : the cutting part of a knife or sword .", "Blade", "knife"),
        ("The blade of the knife was sharp .", "blade", "knife")]),
    ("player", "team", "train", "member_of", [
        ("Player : one who plays on a team in a game .", "Player", "team"),
        ("Each player of the team wore red .", "player", "team")]),
    ("bee", "swarm", "train", "member_of,part_of", [
        ("Swarm : a great number of bees leaving the hive together .", "bees", "Swarm"),
        ("A bee of the swarm stung him .", "bee", "swarm")]),
    ("bread", "river", "train", "NA", [
        ("They ate bread by the river .", "bread", "river"),
        ("Bread was carried across the river in boats .", "Bread", "river")]),
    ("chair", "moon", "train", "NA", [
        ("She sat in a chair and watched the moon .", "chair", "moon")]),
    ("oak", "tree", "test", "is_a", [
        ("Oak : a tree of the genus Quercus .", "Oak", "tree"),
        ("The oak is a tree with hard wood .", "oak", "tree")]),
    ("rose", "shrub", "test", "is_a", [
        ("Rose : a prickly shrub bearing fragrant flowers .", "Rose", "shrub"),
        ("The rose is a shrub of the garden .", "rose", "shrub")]),
    ("leaf", "plant", "test", "part_of", [
        ("Leaf : a green part of a plant growing from the stem .", "Leaf", "plant"),
        ("Each leaf of the plant turned yellow .", "leaf", "plant")]),
    ("musician", "orchestra", "test", "member_of", [
        ("Musician : one who plays in an orchestra .", "Musician", "orchestra"),
        ("A musician of the orchestra tuned his violin .", "musician", "orchestra")]),
    ("garden", "hour", "test", "NA", [
        ("They worked in the garden for an hour .", "garden", "hour")]),
    ("lamp", "sugar", "test", "NA", [
        ("He left the sugar beside the lamp .", "lamp", "sugar"),
        ("Sugar and a lamp were on the table .", "lamp", "Sugar")]),
]
N_TEST = sum(split == "test" for _, _, split, _, _ in PAIRS)


def write_dataset(folder: Path, pairs=PAIRS, relations=RELATIONS) -> Path:
    """`folder/ds-wordnet/` in the ds-wordnet layout; returns `folder`."""
    d = folder / "ds-wordnet"
    d.mkdir(parents=True)
    (d / "relations.txt").write_text("".join(f"{r}\n" for r in relations))
    rows = ["pair\te1\te2\tsplit\trelations\tmentions\n"]
    mentions = ["pair\te1\te2\tsplit\te1_token\te2_token\tsentence\n"]
    for p, (e1, e2, split, rel, sentences) in enumerate(pairs):
        rows.append(f"{p}\t{e1}\t{e2}\t{split}\t{rel}\t{len(sentences)}\n")
        for text, w1, w2 in sentences:
            tokens = text.split(" ")
            mentions.append(f"{p}\t{e1}\t{e2}\t{split}\t{tokens.index(w1)}\t"
                            f"{tokens.index(w2)}\t{text}\n")
    (d / "pairs.tsv").write_text("".join(rows))
    with gzip.open(d / "mentions.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("".join(mentions))
    return folder


def _run(capsys, *argv) -> tuple[int, list[str], str]:
    """Exit code, stderr lines and stdout of `jkern argv`."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.err.splitlines(), captured.out


def _read_ranked(path: Path) -> tuple[list[str], list[list[str]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def trained(tiny, tmp_path_factory) -> tuple[Path, int, list[str]]:
    """One `jkern ds train` run on the tiny data's train split (solver defaults)."""
    model = tmp_path_factory.mktemp("model") / "ds.npz"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["ds", "train", str(tiny), "--out", str(model)])
    return model, code, err.getvalue().splitlines()


def test_train_then_predict_round_trip(tiny, trained, tmp_path, capsys):
    model, code, err = trained
    assert code == 0, err
    assert len(err) == 1 and err[0].startswith("jkern: ds train: ")
    assert "16 mentions of 8 train pairs, 3 relations" in err[0] and "(converged" in err[0]
    extractor = jkern.load(model)
    assert isinstance(extractor, jkern.ds.RelationExtractor)
    assert tuple(extractor.classes) == RELATIONS

    out = tmp_path / "ranked.tsv"
    # DATA as the ds-wordnet folder itself this time
    code, err, stdout = _run(capsys, "ds", "predict", model, tiny / "ds-wordnet", "--evaluate",
                             "--out", out)
    assert code == 0, err
    assert len(err) == 1 and err[0].startswith("jkern: ds predict: ")
    header, rows = _read_ranked(out)
    assert header == ["e1", "e2", "relation", "score", "in_kb"]
    assert len(rows) == N_TEST * (len(RELATIONS) - 1)
    assert all(len(r) == 5 for r in rows)
    scores = [float(r[3]) for r in rows]
    assert scores == sorted(scores, reverse=True)
    # every (test pair, relation) once, in_kb from the KB
    test = load_ds_wordnet(tiny).test
    kb = {(*pair, RELATIONS[k + 1]): int(v) for pair, row in zip(test.pairs, test.relations)
          for k, v in enumerate(row)}
    assert {(r[0], r[1], r[2]): int(r[4]) for r in rows} == kb
    # the scores are the library's
    m = test.mentions
    want = np.asarray(extractor.pair_scores(m.tokens, m.e1_token, m.e2_token, m.mention_pair,
                                            test.n_pairs))
    index = {pair: p for p, pair in enumerate(test.pairs)}
    got = [want[index[(r[0], r[1])], RELATIONS.index(r[2])] for r in rows]
    np.testing.assert_array_equal(np.array(scores), np.array(got))
    # --evaluate: jkern.ds.held_out's figures on stdout, one `name<TAB>value` per line
    figures = dict(line.split("\t") for line in stdout.splitlines())
    ref = jkern.ds.held_out(want, test.relations)
    assert list(figures) == ["auc", "average_precision", "p_at_100", "p_at_200", "p_at_500",
                             "facts", "items"]
    assert float(figures["auc"]) == pytest.approx(ref["auc"], abs=5e-5)
    assert float(figures["average_precision"]) == pytest.approx(ref["average_precision"],
                                                                abs=5e-5)
    assert figures["p_at_100"] == "nan"  # fewer than 100 items
    assert int(figures["facts"]) == 4 and int(figures["items"]) == len(rows)


def test_predict_aggregate_split_and_subset(tiny, trained, tmp_path, capsys):
    model, code, _ = trained
    assert code == 0
    out = tmp_path / "ranked.tsv"
    code, err, stdout = _run(capsys, "ds", "predict", model, tiny, "--split", "train",
                             "--aggregate", "noisy_or", "--max-pairs", "3", "--seed", "1",
                             "--out", out, "-q")
    assert (code, err, stdout) == (0, [], "")
    _, rows = _read_ranked(out)
    split = load_ds_wordnet(tiny).train.sample(3, seed=1)
    assert len(rows) == 3 * 3 and {(r[0], r[1]) for r in rows} == set(split.pairs)
    m = split.mentions
    want = np.asarray(jkern.load(model).pair_scores(
        m.tokens, m.e1_token, m.e2_token, m.mention_pair, 3, aggregate="noisy_or"))
    index = {pair: p for p, pair in enumerate(split.pairs)}
    got = [want[index[(r[0], r[1])], RELATIONS.index(r[2])] for r in rows]
    np.testing.assert_array_equal(np.array([float(r[3]) for r in rows]), np.array(got))


def test_not_converged_warns_or_fails(tiny, tmp_path, capsys):
    # Degree-2 products, pruning, an SVD projection, float32, a subset of the pairs; 3 steps
    # are not enough: exit 1 without a model under --require-converged, else a warning.
    model = tmp_path / "m.npz"
    argv = ["ds", "train", tiny, "--poly", "--min-count", "1", "--max-count", "10", "--svd",
            "4", "--max-pairs", "6", "--seed", "2", "--lam", "0.5", "--mu", "2", "--tol",
            "1e-6", "--method", "fista", "--max-iter", "3", "--dtype", "float32", "--out",
            model]
    code, err, _ = _run(capsys, *argv, "--require-converged")
    assert code == 1
    assert len(err) == 1 and err[0].startswith("jkern: error: the solver did not converge")
    assert "--max-iter" in err[0] and not model.exists()
    assert os.listdir(tmp_path) == []
    code, err, _ = _run(capsys, *argv)
    assert code == 0 and len(err) == 2, err
    assert err[0].startswith("jkern: warning: the solver did not converge")
    assert "-> 4 projected" in err[1] and "NOT converged" in err[1]
    assert "of 6 train pairs" in err[1]
    out = tmp_path / "r.tsv"
    assert main(["ds", "predict", str(model), str(tiny), "--out", str(out), "-q"]) == 0
    _, rows = _read_ranked(out)
    assert len(rows) == N_TEST * 3
    assert jkern.load(model).model.weights.dtype == np.float32


# --------------------------------------------------------------------------- errors


def _other_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad" / "ds-wordnet"
    write_dataset(tmp_path / "bad")
    text = (bad / "pairs.tsv").read_text().splitlines(keepends=True)
    text[3] = text[3].replace("\tpart_of\t", "\tpart\t")
    (bad / "pairs.tsv").write_text("".join(text))
    half = tmp_path / "half" / "ds-wordnet"
    write_dataset(tmp_path / "half")
    (half / "mentions.tsv.gz").unlink()
    write_dataset(tmp_path / "other", relations=(*RELATIONS, "substance_of"))
    only_na = [(e1, e2, split, "NA" if split == "test" else rel, s)
               for e1, e2, split, rel, s in PAIRS]
    write_dataset(tmp_path / "na", pairs=only_na)
    jkern.save(tmp_path / "kernel.npz", jkern.PTK(0.4, 0.4))


@pytest.mark.parametrize("argv, code, needle", [
    (["train", "{d}/nope", "--out", "{d}/m.npz"], 2, "nope is not a directory"),
    (["train", "{d}/half", "--out", "{d}/m.npz"], 2, "missing {d}/half/ds-wordnet/mentions"),
    (["train", "{d}/half/ds-wordnet", "--out", "{d}/m.npz"], 2,
     "missing {d}/half/ds-wordnet/mentions"),
    (["train", "{d}/bad", "--out", "{d}/m.npz"], 2, "pairs.tsv:4: unknown relation 'part'"),
    (["train", "{tiny}", "--out", "{d}/m.npz", "--lam", "-1"], 2, "--lam"),
    (["train", "{tiny}", "--out", "{d}/m.npz", "--max-pairs", "0"], 2, "--max-pairs"),
    (["train", "{tiny}", "--out", "{d}/m.npz", "--min-count", "5", "--max-count", "2"], 2,
     "--min-count 5 is above --max-count 2"),
    (["train", "{tiny}", "--out", "{d}/m.pt"], 2, "'.pt'"),
    (["train", "{tiny}", "--out", "{d}/missing/m.npz"], 2, "does not exist"),
    (["train", "{tiny}", "--out", "{d}/m.npz", "--split", "dev"], 2, "--split"),
    (["predict", "{d}/kernel.npz", "{tiny}", "--out", "{d}/r.tsv"], 2,
     "not a relation extractor from `jkern ds train` (a PTK)"),
    (["predict", "{d}/nope.npz", "{tiny}", "--out", "{d}/r.tsv"], 2, "nope.npz"),
    (["predict", "{model}", "{d}/other", "--out", "{d}/r.tsv"], 2,
     "was trained for the classes NA, is_a, part_of, member_of, but"),
    (["predict", "{model}", "{d}/na", "--out", "{d}/r.tsv", "--evaluate"], 2,
     "no KB relation to evaluate against"),
    (["predict", "{model}", "{tiny}", "--out", "{d}/r.csv"], 2, "'.csv'"),
    (["predict", "{model}", "{tiny}", "--out", "{d}/missing/r.tsv"], 2, "does not exist"),
    (["predict", "{model}", "{tiny}", "--out", "{d}/r.tsv", "--aggregate", "sum"], 2,
     "--aggregate"),
], ids=["no-folder", "missing-file", "missing-file-dataset-folder", "bad-row", "lam",
        "max-pairs", "min-max", "train-suffix", "train-nodir", "split", "not-extractor",
        "no-model", "other-relations", "evaluate-no-facts", "predict-suffix", "predict-nodir",
        "aggregate"])
def test_errors(tiny, trained, tmp_path, capsys, argv, code, needle):
    _other_files(tmp_path)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    fill = {"d": tmp_path, "tiny": tiny, "model": trained[0]}
    got, err, stdout = _run(capsys, "ds", *[a.format(**fill) for a in argv])
    assert got == code
    assert len(err) == 1 and err[0].startswith("jkern: error: "), err
    assert needle.format(**fill) in err[0], err[0]
    assert stdout == ""
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # no output, no temp file


def test_help(capsys):
    assert main(["ds", "train", "--help"]) == 0
    assert "--max-pairs" in capsys.readouterr().out
    assert main(["ds", "--help"]) == 0
    assert "predict" in capsys.readouterr().out


# --------------------------------------------------------------------------- real data


def test_real_data_with_max_pairs(tmp_path, capsys):
    data = require(SHARED_DATA / "ds-wordnet")  # skips, or fails under JKERN_REQUIRE_DATA=1
    model, out = tmp_path / "m.npz", tmp_path / "r.tsv"
    code, err, _ = _run(capsys, "ds", "train", data.parent, "--max-pairs", "200", "--seed",
                        "0", "--out", model)
    assert code == 0, err
    assert "of 200 train pairs, 10 relations" in err[-1]
    code, err, stdout = _run(capsys, "ds", "predict", model, data, "--max-pairs", "200",
                             "--evaluate", "--out", out)
    assert code == 0, err
    header, rows = _read_ranked(out)
    assert header == ["e1", "e2", "relation", "score", "in_kb"] and len(rows) == 200 * 10
    scores = np.array([float(r[3]) for r in rows])
    assert np.all(np.diff(scores) <= 0)
    figures = dict(line.split("\t") for line in stdout.splitlines())
    assert 0 <= float(figures["auc"]) <= 1 and int(figures["items"]) == 2000
    assert int(figures["facts"]) == sum(int(r[4]) for r in rows) > 0
    # better than chance: the top 100 hold more facts than the overall rate
    assert float(figures["p_at_100"]) > int(figures["facts"]) / 2000


def test_hybrid_method_trains_the_same_model(tiny, tmp_path, capsys):
    models = {}
    for method in ("fista", "hybrid"):
        models[method] = tmp_path / f"{method}.npz"
        code, err, _ = _run(capsys, "ds", "train", tiny, "--method", method, "--tol", "1e-9",
                            "--max-iter", "100000", "--out", models[method])
        assert code == 0, err
        assert "(converged" in err[0]
    fista, hybrid = (jkern.load(models[m]) for m in ("fista", "hybrid"))
    m = load_ds_wordnet(tiny).test.mentions
    scores = [np.asarray(e.pair_scores(m.tokens, m.e1_token, m.e2_token, m.mention_pair,
                                       int(m.mention_pair.max()) + 1)) for e in (fista, hybrid)]
    np.testing.assert_allclose(scores[1], scores[0], atol=1e-3)
