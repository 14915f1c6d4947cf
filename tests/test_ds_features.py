"""Mention features for distant supervision: lexical features and their vocabulary, pruning,
the explicit degree-2 expansion, the randomized SVD projection, dependency paths."""

from __future__ import annotations

import sys

import jax.numpy as jnp
import numpy as np
import pytest
from data_paths import SHARED_DATA, require

from jkern import SparseRows
from jkern._sparse import matmul
from jkern.ds import (
    FeatureVocabulary,
    dependency_paths,
    lexical_features,
    mention_features,
    normalize_rows,
    parse_sentences,
    path_tree,
    polynomial_expansion,
    prune_features,
    randomized_svd_projection,
    remap_columns,
)
from jkern.errors import InputError
from jkern.trees import Token

# --- lexical features ----------------------------------------------------------------------

KILN = "Kiln : a furnace of brick .".split()  # pair (brick, kiln): e1 = brick, e2 = Kiln
FINGER = "the Fingers are parts of the hand".split()  # pair (finger, hand)
OAK = "an oak tree grows".split()  # pair (oak, tree): adjacent nouns


def test_mention_features_by_hand():
    assert mention_features(KILN, 5, 0) == [
        "order=e2_first", "dist=4-5", "bw=:", "bw=a", "bw=furnace", "bw=of",
        "bseq=e2_first:: a furnace of", "win=<s>|e2_first:: a furnace of|.",
        "e1_left=of", "e1_right=.", "e2_left=<s>", "e2_right=:", "defhead=e2"]
    assert mention_features(FINGER, 1, 6, heads=True) == [
        "order=e1_first", "dist=4-5", "bw=are", "bw=part", "bw=of", "bw=the",
        "bseq=e1_first:are part of the", "win=the|e1_first:are part of the|</s>",
        "e1_left=the", "e1_right=are", "e2_left=the", "e2_right=</s>", "defhead=none",
        "e1_head=finger", "e2_head=hand"]
    assert mention_features(OAK, 1, 2) == [
        "order=e1_first", "dist=1", "bseq=e1_first:", "win=an|e1_first:|grow",
        "e1_left=an", "e1_right=<e2>", "e2_left=<e1>", "e2_right=grow", "defhead=none"]


def test_long_between_bag_is_capped():
    toks = ["X", ":"] + [f"x{c}" for c in "abcdefghijk"] + ["Y"]  # 12 words between
    feats = mention_features(toks, 0, 13, max_bag=4)
    bag = [f for f in feats if f.startswith("bw=")]
    assert bag == ["bw=:", "bw=xa", "bw=xj", "bw=xk"]  # the first 2 and the last 2
    assert "dist=11-20" in feats and "defhead=e1" in feats
    assert not any(f.startswith(("bseq=", "win=")) for f in feats)
    with pytest.raises(InputError, match="must be distinct"):
        mention_features(toks, 3, 3)


def test_vocabulary_fit_transform():
    train = lexical_features([KILN, FINGER], [5, 1], [0, 6])
    vocab = FeatureVocabulary.fit(train)
    assert list(vocab.names) == sorted(set(train[0]) | set(train[1]))
    assert FeatureVocabulary.fit(train[::-1]).names == vocab.names  # order-free ids
    x = vocab.transform(train, normalize=False)
    dense = np.asarray(x.todense())
    for i, feats in enumerate(train):
        assert sorted(np.flatnonzero(dense[i])) == sorted(vocab.index(f) for f in feats)
        assert set(dense[i]) <= {0.0, 1.0}
    xn = np.asarray(vocab.transform(train).todense())
    assert np.allclose(np.linalg.norm(xn, axis=1), 1.0)
    # A test mention: its features unseen in train are dropped.
    test = lexical_features([OAK], [1], [2])
    t = np.asarray(vocab.transform(test, normalize=False).todense())[0]
    known = [f for f in test[0] if f in vocab]
    assert known == ["order=e1_first", "defhead=none"]
    assert sorted(np.flatnonzero(t)) == sorted(vocab.index(f) for f in known)


# --- pruning and the degree-2 expansion ----------------------------------------------------


def _random_sparse(rng, n, d, density, binary=False):
    dense = (rng.random((n, d)) < density) * (1.0 if binary else rng.uniform(0.5, 2.0, (n, d)))
    return dense, SparseRows.from_dense(dense)


def test_prune_keeps_exactly_the_columns_in_range():
    rng = np.random.default_rng(0)
    dense, x = _random_sparse(rng, 40, 25, 0.2, binary=True)
    counts = (dense != 0).sum(0)
    pruned, column_map = prune_features(x, 6, 9)
    keep = (counts >= 6) & (counts <= 9)
    assert 0 < keep.sum() < 25
    assert np.array_equal(column_map >= 0, keep)
    assert np.array_equal(column_map[keep], np.arange(keep.sum()))
    assert np.array_equal(np.asarray(pruned.todense()), dense[:, keep])
    assert np.all(pruned.column_counts() >= 6) and np.all(pruned.column_counts() <= 9)
    test_dense, test_x = _random_sparse(rng, 7, 25, 0.3)
    assert np.allclose(np.asarray(remap_columns(test_x, column_map).todense()),
                       test_dense[:, keep])
    names = FeatureVocabulary(tuple(f"f{j:02d}" for j in range(25))).select(column_map)
    assert names.names == tuple(f"f{j:02d}" for j in np.flatnonzero(keep))
    with pytest.raises(InputError, match="no feature occurs"):
        prune_features(x, 100, 200)


def _expand_dense(train, rows, squares):
    """Independent reference: products from outer products, columns in (a, b) order."""
    d = train.shape[1]
    off = 0 if squares else 1
    seen = np.zeros((d, d), bool)
    for row in train:
        seen |= np.triu(np.outer(row, row) != 0, off)
    a, b = np.nonzero(seen)  # row-major: sorted by (a, b)
    out = [np.concatenate([row, np.outer(row, row)[a, b]]) for row in rows]
    return np.array(out), int(seen.sum())


@pytest.mark.parametrize("squares", [False, True])
def test_polynomial_expansion_matches_outer_products(squares):
    rng = np.random.default_rng(1)
    train, x = _random_sparse(rng, 12, 9, 0.3)
    big, index = polynomial_expansion(x, squares=squares)
    want, n_products = _expand_dense(train, train, squares)
    assert big.n_features == 9 + n_products == index.n_features
    np.testing.assert_allclose(np.asarray(big.todense()), want, rtol=1e-12)
    # Test rows: products never seen in train are dropped, the rest land in train's columns.
    test = rng.uniform(0.5, 2.0, (4, 9)) * (rng.random((4, 9)) < 0.6)
    test[0] = 0.0
    test[0, [0, 8]] = 1.5
    small, _ = _expand_dense(train, test, squares)
    got, same = polynomial_expansion(SparseRows.from_dense(test), products=index)
    assert same is index
    np.testing.assert_allclose(np.asarray(got.todense()), small, rtol=1e-12)
    unseen = [(a, b) for row in test for a in range(9) for b in range(a + 1, 9)
              if row[a] and row[b] and not np.any(train[:, a] * train[:, b])]
    assert unseen  # the check above covered dropped products
    names = index.feature_names([f"f{j}" for j in range(9)])
    assert len(names) == big.n_features and names[9].count("&") == 1


def test_polynomial_expansion_errors():
    x = SparseRows.from_rows([{j: 1.0 for j in range(20)}, {0: 1.0}])
    with pytest.raises(InputError, match=r"row 0 has 20 features: its degree-2 expansion "
                                         r"has 210 > max_row_features=100"):
        polynomial_expansion(x, max_row_features=100)
    with pytest.raises(InputError, match="only degree=2"):
        polynomial_expansion(x, degree=3)
    _, index = polynomial_expansion(x)
    with pytest.raises(InputError, match="fit on 20 columns"):
        polynomial_expansion(SparseRows.from_rows([{0: 1.0}], n_features=5), products=index)


def test_normalize_rows():
    rng = np.random.default_rng(2)
    dense, x = _random_sparse(rng, 6, 5, 0.5)
    dense[3] = 0.0
    got = np.asarray(normalize_rows(SparseRows.from_dense(dense)).todense())
    norms = np.linalg.norm(dense, axis=1, keepdims=True)
    np.testing.assert_allclose(got, np.divide(dense, norms, where=norms > 0,
                                              out=np.zeros_like(dense)), rtol=1e-12)


# --- randomized SVD ------------------------------------------------------------------------


def test_randomized_svd_matches_numpy(key):
    rng = np.random.default_rng(3)
    u, _ = np.linalg.qr(rng.normal(size=(80, 50)))
    v, _ = np.linalg.qr(rng.normal(size=(50, 50)))
    s = 0.7 ** np.arange(50)
    x = (u * s) @ v.T
    exact = np.linalg.svd(x, compute_uv=False)
    proj = np.asarray(randomized_svd_projection(x, 6, key=key))
    assert proj.shape == (50, 6)
    np.testing.assert_allclose(proj.T @ proj, np.eye(6), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(x @ proj, axis=0), exact[:6], rtol=1e-6)
    np.testing.assert_allclose(np.abs(np.sum(proj * v[:, :6], axis=0)), 1.0, atol=1e-6)
    # The same on a SparseRows: only X @ V and X^T @ U products, same result.
    xs = SparseRows.from_dense(x)
    proj_s = np.asarray(randomized_svd_projection(xs, 6, key=key))
    np.testing.assert_allclose(proj_s, proj, atol=1e-9)
    np.testing.assert_allclose(np.asarray(matmul(xs, jnp.asarray(proj_s))), x @ proj,
                               atol=1e-9)
    with pytest.raises(InputError, match="rank"):
        randomized_svd_projection(x, 51, key=key)


# --- dependency paths ----------------------------------------------------------------------


def _tok(i, lemma, upos, head, rel):
    return Token(i, lemma, lemma, upos, "_", head, rel)


FINGER_PARSE = [_tok(1, "the", "DET", 2, "det"), _tok(2, "finger", "NOUN", 3, "nsubj"),
                _tok(3, "be", "AUX", 0, "ROOT"), _tok(4, "part", "NOUN", 3, "attr"),
                _tok(5, "of", "ADP", 4, "prep"), _tok(6, "the", "DET", 7, "det"),
                _tok(7, "hand", "NOUN", 5, "pobj")]


def test_path_tree_shape():
    t = path_tree(FINGER_PARSE, 1, 6)
    assert t.to_penn() == ("(PATH (E1 nsubj NOUN)(be::v top AUX)(part::n attr NOUN)"
                           "(of::adp prep ADP)(E2 pobj NOUN))")
    # From e2's side: the same words reversed; the ends keep their roles.
    assert path_tree(FINGER_PARSE, 6, 1).to_penn() == (
        "(PATH (E1 pobj NOUN)(of::adp prep ADP)(part::n attr NOUN)(be::v top AUX)"
        "(E2 nsubj NOUN))")
    # One noun above the other: it is the top of the path.
    assert path_tree(FINGER_PARSE, 3, 6, entity_words=True).to_penn() == (
        "(PATH (part::n top NOUN)(of::adp prep ADP)(hand::n pobj NOUN))")
    two_roots = [_tok(1, "dog", "NOUN", 2, "nsubj"), _tok(2, "bark", "VERB", 0, "ROOT"),
                 _tok(3, "cat", "NOUN", 0, "ROOT")]
    assert path_tree(two_roots, 0, 2).to_penn() == (
        "(PATH (E1 nsubj NOUN)(bark::v root VERB)(E2 root NOUN))")
    cycle = [_tok(1, "a", "NOUN", 2, "x"), _tok(2, "b", "NOUN", 1, "x"),
             _tok(3, "c", "NOUN", 0, "ROOT")]
    with pytest.raises(InputError, match="do not lead to a root"):
        path_tree(cycle, 0, 2)
    with pytest.raises(InputError, match="must be distinct"):
        path_tree(FINGER_PARSE, 2, 9)


def test_missing_spacy_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "spacy", None)
    with pytest.raises(ImportError, match=r"pip install 'jkern\[ds\]'"):
        dependency_paths([["a", "b"]], [0], [1], cache_dir=tmp_path)


def test_dependency_paths_with_spacy(nlp, tmp_path):
    sentences = [" ".join(FINGER).lower(), KILN]
    trees = dependency_paths(sentences, [1, 5], [6, 0], cache_dir=tmp_path, nlp=nlp)
    lexical = [trees[0].labels[c] for c in trees[0].children[0]]
    assert lexical == ["E1", "be::v", "part::n", "of::adp", "E2"]
    assert trees[1].labels[trees[1].children[0][0]] == "E1"
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].suffix == ".npz"
    # Second run: read back from the cache, spaCy not called.
    parses = parse_sentences(sentences, cache_dir=tmp_path, nlp=nlp)

    def fail(*args, **kwargs):
        raise AssertionError("the cache was not used")

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(nlp, "pipe", fail)
    try:
        assert parse_sentences(sentences, cache_dir=tmp_path, nlp=nlp) == parses
        assert dependency_paths(sentences, [1, 5], [6, 0], cache_dir=tmp_path,
                                nlp=nlp) == trees
    finally:
        monkeypatch.undo()
    assert [t.form for t in parses[1]] == KILN  # the given tokens, indexes unchanged
    assert sum(t.head == 0 for t in parses[1]) == 1  # one sentence each
    parse_sentences(sentences[:1], cache_dir=tmp_path, nlp=nlp)  # other sentences, new key
    assert len(list(tmp_path.iterdir())) == 2


# --- a slice of the real data --------------------------------------------------------------


def test_real_slice(nlp, tmp_path):
    from jkern.data import load_ds_wordnet

    ds = load_ds_wordnet(require(SHARED_DATA / "ds-wordnet"))
    tr, te = ds.train.mentions, ds.test.mentions
    train = lexical_features(tr.tokens[:300], tr.e1_token[:300], tr.e2_token[:300])
    vocab = FeatureVocabulary.fit(train)
    x = vocab.transform(train)
    assert x.shape == (300, len(vocab)) and x.indices.shape[1] <= 25
    xt = vocab.transform(lexical_features(te.tokens[:100], te.e1_token[:100],
                                          te.e2_token[:100]))
    assert xt.shape == (100, len(vocab))
    trees = dependency_paths(tr.tokens[:20], tr.e1_token[:20], tr.e2_token[:20],
                             cache_dir=tmp_path, nlp=nlp)
    assert len(trees) == 20 and all(t.labels[0] == "PATH" for t in trees)
    assert all(len(t.children[0]) >= 2 for t in trees)
