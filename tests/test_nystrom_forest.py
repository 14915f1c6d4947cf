"""Nyström embeddings on the landmarks' prepared forest: `Forest.extend` gives the forest a
fresh build gives, embeddings equal the plain Gram path, and a second batch plans nothing
on the landmark side again."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import numpy as np
import pytest
from data_paths import require
from helpers import assert_rel

import jkern
from jkern._nystrom import landmark_columns
from jkern.kernels._prepared import PreparedTrees, TreeSubset
from jkern.trees import parse_penn
from jkern.trees._forest import Forest

F64 = {"dtype": "float64"}
# trees with words and labels no landmark has (new PTK keys, new SST productions)
UNSEEN = [parse_penn(s) for s in (
    "(ROOT (SBARQ (WHNP (WP Whence)) (SQ (VBZ comes) (NP (NNP Zyzzyva))) (. ?)))",
    "(ROOT (FRAG (XNEW (YNEW quux) (WP What)) (. ?)))",
)]


@pytest.fixture(scope="module")
def trec(shared_data):
    train = jkern.read_trees(require(shared_data / "trec" / "qc_train.tsv"))
    test = jkern.read_trees(require(shared_data / "trec" / "qc_test.tsv"))
    return train[:60], test[:40]


def assert_same_forest(a: Forest, b: Forest) -> None:
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), field.name
        else:
            assert x == y, field.name


def test_extended_forest_is_the_forest_of_all_the_trees(trec):
    landmarks, test = trec
    cases = [(landmarks, test), (landmarks, landmarks[10:20] + test[:5] + UNSEEN),
             (landmarks[:3], test), ([], test[:5]), (landmarks, [])]
    for old, new in cases:
        base = Forest.build(old)
        ext = base.extend(new)
        assert_same_forest(ext, Forest.build(old + new))
        assert_same_forest(base.extend(new[:2]).extend(new[2:]), ext)  # twice
    assert_same_forest(base, Forest.build(landmarks))  # the extended forest is untouched


def _projector(kernel, landmarks):
    # any H will do: the embedding is K(x, L) @ H, compared with the plain Gram path
    h = np.random.default_rng(0).normal(size=(len(landmarks), 7))
    return jkern.Nystrom(kernel, tuple(landmarks), jax.numpy.asarray(h))


@pytest.mark.parametrize("name", ["sst", "ptk", "normalized-ptk"])
def test_embeddings_equal_the_plain_gram_path(trec, name):
    kernel = {"sst": jkern.SST(0.4), "ptk": jkern.PTK(0.4, 0.4),
              "normalized-ptk": jkern.Normalized(jkern.PTK(0.4, 0.4))}[name]
    landmarks, test = trec
    proj = _projector(kernel, landmarks)
    batches = [test[:20],  # new trees
               test[20:] + landmarks[5:10] + UNSEEN]  # landmarks among them, unseen labels
    for x in batches:
        want = np.asarray(kernel.gram(x, list(landmarks), **F64)) @ np.asarray(proj.projection)
        assert_rel(proj.embed(x, **F64), want, 1e-12, name)
    # an ensemble embeds against the union of its members' landmarks the same way
    ens = jkern.NystromEnsemble((_projector(kernel, landmarks[:30]),
                                 _projector(kernel, landmarks[30:])))
    c = np.asarray(kernel.gram(test[:10], list(landmarks), **F64))
    assert_rel(ens.columns(test[:10], **F64), c, 1e-12, f"{name} ensemble")
    assert_rel(ens.embed(test[:10], **F64), ens.embed_columns(c), 1e-12, f"{name} ensemble")


def test_second_batch_plans_nothing_on_the_landmark_side(trec, monkeypatch):
    landmarks, test = trec
    kernel = jkern.Normalized(jkern.PTK(0.4, 0.4))
    proj = _projector(kernel, landmarks)
    before = jax.tree_util.tree_leaves(proj)
    proj.embed(test[:20], **F64)
    cols = landmark_columns(kernel, proj.landmarks, "float64")
    assert isinstance(cols, TreeSubset) and len(cols) == len(landmarks)
    base = cols.prepared  # the landmarks' collection, remembered
    forest, done = base.forest, dataclasses.replace(base.counts)
    assert done.column_sides == 1  # planned by the first batch, with the self-kernels
    built: list[int] = []
    extensions: list[PreparedTrees] = []
    build, extend = Forest.build.__func__, PreparedTrees.extend

    def counting_build(cls, trees, expand=None):
        built.append(len(trees))
        return build(cls, trees, expand)

    def recording_extend(self, trees):
        extensions.append(extend(self, trees))
        return extensions[-1]

    monkeypatch.setattr(Forest, "build", classmethod(counting_build))
    monkeypatch.setattr(PreparedTrees, "extend", recording_extend)
    x = test[20:] + UNSEEN
    got = proj.embed(x, **F64)
    assert built == [len(x)]  # only the new trees' forest: no landmark forest again
    assert landmark_columns(kernel, proj.landmarks, "float64").prepared is base
    assert base.forest is forest and base.counts == done  # no work on the landmark side
    (ext,) = extensions
    assert ext.base is base and ext.forest.n_trees == len(landmarks) + len(x)
    assert ext.engine.counts.column_sides == 0  # the column side came from the landmarks
    assert ext.engine.counts.blocks > 0
    # and it is the plain path's embedding
    want = np.asarray(kernel.gram(x, list(landmarks), **F64)) @ np.asarray(proj.projection)
    assert_rel(got, want, 1e-12, "second batch")
    # the projector itself is untouched: the same leaves, equal, jit-able
    after = jax.tree_util.tree_leaves(proj)
    assert len(after) == len(before) and all(a is b for a, b in zip(after, before))
    assert bool(eqx.tree_equal(proj, _projector(kernel, landmarks)))
    c = kernel.gram(test[:3], list(landmarks), **F64)
    np.testing.assert_allclose(eqx.filter_jit(proj.embed_columns)(c), proj.embed_columns(c),
                               rtol=1e-12)


def test_sptk_shares_the_column_side_under_renumbered_keys(trec):
    # SPTK's lexical keys follow the label count, so new labels renumber them: the column
    # side is shared, renumbered. A word equal to a landmark's internal label regroups old
    # nodes: nothing is shared, and the values are still exact.
    from jkern.data import tree_words

    landmarks, test = trec
    words = tree_words(landmarks + test)
    vectors = np.random.default_rng(1).normal(size=(len(words), 6))
    kernel = jkern.SPTK(words, vectors, 0.4, 0.4, threshold=0.2)
    base = kernel.prepare(landmarks, **F64)
    for x, shared in ((test[:15] + UNSEEN, True), ([parse_penn("(ROOT (NN SQ))")], False)):
        ext = base.extend(x)
        if shared:  # new labels: the lexical keys move up
            assert ext.engine.plan.n_keys > base.engine.plan.n_keys
        assert (ext.engine._columns_from is base.engine) == shared
        got = kernel.gram(x, base[:], **F64)
        assert_rel(got, kernel.gram(x, list(landmarks), **F64), 1e-12, f"sptk {shared}")


def test_shared_column_sides_equal_fresh_ones(trec):
    # what an extension takes from its base is what it would have planned itself
    from jkern.data import tree_words

    landmarks, test = trec
    words = tree_words(landmarks)
    sptk = jkern.SPTK(words, np.ones((len(words), 3)), 0.4, 0.4)
    cols = np.arange(len(landmarks))
    for kernel in (jkern.SST(0.4), jkern.PTK(0.4, 0.4), sptk):
        ext = kernel.prepare(landmarks, **F64).extend(test + UNSEEN)
        shared, fresh = ext.engine._shared_columns(cols), ext.engine._make_columns(cols)
        assert shared is not None
        for field in dataclasses.fields(shared):
            a, b = getattr(shared, field.name), getattr(fresh, field.name)
            assert a.dtype == b.dtype and np.array_equal(a, b), (type(kernel), field.name)
