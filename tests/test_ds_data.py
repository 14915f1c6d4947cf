"""The ds-wordnet loader: counts against the data set's README, and errors on bad files."""

from __future__ import annotations

import gzip
import re

import numpy as np
import pytest
from data_paths import SHARED_DATA, require

from jkern.data import DsWordnetData, load_ds_wordnet
from jkern.errors import InputError


@pytest.fixture(scope="module")
def ds() -> DsWordnetData:
    # Skips when ../shared/data/ds-wordnet is missing; fails instead under JKERN_REQUIRE_DATA=1.
    return load_ds_wordnet(require(SHARED_DATA / "ds-wordnet"))


def test_counts_match_readme(ds):
    assert ds.relation_names[0] == "NA" and len(ds.relation_names) == 11
    assert ds.train.n_pairs + ds.test.n_pairs == 66_651
    assert (ds.train.n_pairs, ds.test.n_pairs) == (46_667, 19_984)
    assert ds.train.n_mentions + ds.test.n_mentions == 142_994
    assert (ds.train.n_mentions, ds.test.n_mentions) == (100_631, 42_363)
    assert ds.train.dropped_pairs == ds.test.dropped_pairs == 0
    assert ds.test.n_facts == 6_776
    positive = [s.relations.any(1) for s in (ds.train, ds.test)]
    assert sum(int(p.sum()) for p in positive) == 22_195
    assert sum(int((s.relations.sum(1) > 1).sum()) for s in (ds.train, ds.test)) == 263
    # Mentions of positive pairs (README: 45,980 train, 19,501 test).
    for s, want in ((ds.train, 45_980), (ds.test, 19_501)):
        assert int(s.relations.any(1)[s.mentions.mention_pair].sum()) == want


def test_splits_are_consistent(ds):
    assert not set(ds.train.pairs) & set(ds.test.pairs)
    for s in (ds.train, ds.test):
        m = s.mentions
        assert s.relations.shape == (s.n_pairs, 10) and s.relations.dtype == bool
        assert m.mention_pair.dtype == np.int32 and m.e1_token.dtype == np.int32
        assert np.array_equal(np.unique(m.mention_pair), np.arange(s.n_pairs))
        assert all(e1 < e2 for e1, e2 in s.pairs)
        assert np.all(np.diff(s.pair_ids) > 0)
        lengths = np.array([len(t) for t in m.tokens])
        assert np.all(m.e1_token < lengths) and np.all(m.e2_token < lengths)
    # The README's example pairs and their relations.
    names = ds.relation_names[1:]
    rel = {p: [names[k] for k in np.flatnonzero(row)]
           for s in (ds.train, ds.test) for p, row in zip(s.pairs, s.relations)}
    assert rel[("finger", "hand")] == ["part_of"]
    assert rel[("arm", "hand")] == ["part_of^-1"]
    assert rel[("canine", "dog")] == ["hypernym^-1"]
    # First mention in the file: pair 0 (a, out), a train pair.
    m = ds.train.mentions
    assert ds.train.pairs[m.mention_pair[0]] == ("a", "out")
    assert m.tokens[0][int(m.e2_token[0])].lower() == "out"


# --- errors on small hand-written files ----------------------------------------------------

_PAIRS = "pair\te1\te2\tsplit\trelations\tmentions\n"
_MENTIONS = "pair\te1\te2\tsplit\te1_token\te2_token\tsentence\n"


def _write(root, pairs, mentions, relations="NA\nhypernym\npart_of\n"):
    d = root / "ds-wordnet"
    d.mkdir()
    (d / "relations.txt").write_text(relations)
    (d / "pairs.tsv").write_text(_PAIRS + pairs)
    with gzip.open(d / "mentions.tsv.gz", "wt", encoding="utf-8") as f:
        f.write(_MENTIONS + mentions)
    return d


def test_small_files(tmp_path):
    _write(tmp_path,
           "0\tfinger\thand\ttrain\tpart_of\t2\n1\tdog\tpet\ttest\tNA\t1\n"
           "2\tcat\tfeline\ttrain\thypernym,part_of\t1\n",
           "0\tfinger\thand\ttrain\t1\t6\tthe finger is part of the hand\n"
           "1\tdog\tpet\ttest\t0\t2\tdog , pet\n"
           "2\tcat\tfeline\ttrain\t0\t2\tcat : feline\n"
           "0\tfinger\thand\ttrain\t0\t2\tfingers : hand\n")
    ds = load_ds_wordnet(tmp_path)
    assert ds.relation_names == ("NA", "hypernym", "part_of")
    assert ds.train.pairs == [("finger", "hand"), ("cat", "feline")]
    assert ds.train.relations.tolist() == [[False, True], [True, True]]
    assert ds.train.mentions.mention_pair.tolist() == [0, 1, 0]
    assert ds.train.mentions.tokens[1] == ["cat", ":", "feline"]
    assert ds.test.relations.tolist() == [[False, False]] and ds.test.n_facts == 0
    assert load_ds_wordnet(tmp_path / "ds-wordnet").train.pairs == ds.train.pairs


def test_subset_and_sample(tmp_path):
    _write(tmp_path,
           "0\ta\tb\ttrain\tNA\t1\n1\tc\td\ttrain\thypernym\t2\n"
           "2\te\tf\ttrain\tpart_of\t1\n",
           "0\ta\tb\ttrain\t0\t1\ta b\n1\tc\td\ttrain\t0\t1\tc d\n"
           "2\te\tf\ttrain\t1\t0\tf e\n1\tc\td\ttrain\t1\t0\td c\n")
    train = load_ds_wordnet(tmp_path).train
    sub = train.subset([2, 1])  # kept in this order, renumbered; mentions in file order
    assert sub.pairs == [("e", "f"), ("c", "d")] and sub.pair_ids.tolist() == [2, 1]
    assert sub.relations.tolist() == [[False, True], [True, False]]
    m = sub.mentions
    assert m.tokens == [["c", "d"], ["f", "e"], ["d", "c"]]
    assert m.mention_pair.tolist() == [1, 0, 1] and m.mention_pair.dtype == np.int32
    assert m.e1_token.tolist() == [0, 1, 1] and sub.n_facts == 2
    assert train.sample(5, seed=0) is train
    two = train.sample(2, seed=3)
    assert two.n_pairs == 2 and two.pairs == train.sample(2, seed=3).pairs
    assert two.pairs == sorted(two.pairs, key=train.pairs.index)  # file order
    with pytest.raises(InputError, match="distinct"):
        train.subset([0, 0])
    with pytest.raises(InputError, match=r"in \[0, 3\)"):
        train.subset([3])
    with pytest.raises(InputError, match="max_pairs"):
        train.sample(0, seed=0)


def test_missing_folder(tmp_path):
    with pytest.raises(InputError, match="is not a directory"):
        load_ds_wordnet(tmp_path / "nope")
    (tmp_path / "relations.txt").write_text("NA\n")  # the dataset folder itself, incomplete
    with pytest.raises(InputError, match=re.escape(f"missing {tmp_path}/pairs.tsv")):
        load_ds_wordnet(tmp_path)


def test_pair_without_mentions_is_dropped(tmp_path):
    _write(tmp_path, "0\ta\tb\ttrain\tNA\t1\n1\tc\td\ttrain\thypernym\t0\n",
           "0\ta\tb\ttrain\t0\t1\ta b\n")
    ds = load_ds_wordnet(tmp_path)
    assert ds.train.pairs == [("a", "b")] and ds.train.dropped_pairs == 1


def test_missing_file(tmp_path):
    d = tmp_path / "ds-wordnet"
    d.mkdir()
    (d / "relations.txt").write_text("NA\n")
    (d / "pairs.tsv").write_text(_PAIRS)
    with pytest.raises(InputError, match="ds-wordnet data not found: missing .*mentions.tsv.gz"):
        load_ds_wordnet(tmp_path)


@pytest.mark.parametrize("pairs, mentions, match", [
    ("0\ta\tb\ttrain\tNA\n", "", r"pairs.tsv:2: expected 6 tab-separated fields, got 5"),
    ("0\ta\tb\ttrain\tNA\t1\n1\tc\td\tdev\tNA\t1\n", "", r"pairs.tsv:3: split must be"),
    ("0\ta\tb\ttrain\tis_a\t1\n", "", r"pairs.tsv:2: unknown relation 'is_a'"),
    ("0\ta\tb\ttrain\tNA\t1\n", "0\ta\tb\ttrain\t0\t5\ta b\n",
     r"mentions.tsv.gz:2: token indexes \(0, 5\)"),
    ("0\ta\tb\ttrain\tNA\t1\n", "0\ta\tb\ttrain\tx\t1\ta b\n",
     r"mentions.tsv.gz:2: e1_token must be"),
    ("0\ta\tb\ttrain\tNA\t1\n", "0\ta\tb\ttest\t0\t1\ta b\n",
     r"mentions.tsv.gz:2: pair 0 is \(a, b, test\) here"),
    ("0\ta\tb\ttrain\tNA\t2\n", "0\ta\tb\ttrain\t0\t1\ta b\n",
     r"pair 0 has 1 mentions, but pairs.tsv says 2"),
    ("0\ta\tb\ttrain\tNA\t1\n", "0\ta\tb\ttrain\t0\t1\ta b\textra\n",
     r"mentions.tsv.gz:2: expected 7"),
])
def test_malformed_rows(tmp_path, pairs, mentions, match):
    _write(tmp_path, pairs, mentions)
    with pytest.raises(InputError, match=match):
        load_ds_wordnet(tmp_path)


def test_bad_relations_file(tmp_path):
    _write(tmp_path, "", "", relations="hypernym\nNA\n")
    with pytest.raises(InputError, match=r"relations.txt:1: the first relation must be 'NA'"):
        load_ds_wordnet(tmp_path)
