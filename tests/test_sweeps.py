"""Wide sweeps, run with `bash scripts/test.sh -m slow` (not part of the default suite).

The default suite checks each capability against an independent reference on a small,
fast sample. These sweeps repeat the same comparisons where bugs of scale or of an untested
corner would show: the whole TREC training Gram, every corpus the project reads (questions,
PropBank boundary trees with and without words, UD dependency shapes, shapes made by head
rules, Python ASTs) across kernel parameters, SPTK with the real GloVe vectors, LIBLINEAR's
and LIBSVM's solutions over parameter grids on full data, the cutting-plane modes on the
boundary data, and many more random trees.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
import reference_kernels as R
from data_paths import require
from helpers import (
    _as_model,
    _linear_svc,
    _read_questions,
    assert_rel,
    make_kernel,
    projective_single_root,
    word_features,
    word_sigma,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jkern
from jkern.data import glove_6b_50d, load_stdlib_functions, load_trec, tree_words
from jkern.svm import cpa, dcd, ksvm, primal_objective
from jkern.trees import (
    Tree,
    grct,
    head_dependencies,
    lct,
    loct,
    pos_leaves,
    read_conllu,
    read_examples,
    without_leaves,
)

pytestmark = pytest.mark.slow

KERNEL_NAMES = ("ST", "SST", "SST_BOW", "PTK")


def _sample(items, k: int, seed: int):
    pick = np.random.default_rng(seed).choice(len(items), k, replace=False)
    return [items[i] for i in np.sort(pick)]


# --------------------------------------------------------------------------- 1. whole TREC Gram


@pytest.fixture(scope="module")
def trec(shared_data):
    require(shared_data / "trec" / "qc_train.tsv")
    return load_trec(shared_data, "train"), load_trec(shared_data, "test")


@pytest.mark.parametrize("name", ["ST", "SST", "SST_BOW", "PTK"])
def test_whole_trec_gram_matches_the_oracle_at_sampled_pairs(trec, name):
    """The square Gram of all 5,401 training parses and the 5,401 x 500 train x test block,
    float64, at 1,500 pairs each: uniform pairs, the largest off-diagonal entries (pairs that
    share the most structure), the diagonal."""
    train, test = trec[0].trees, trec[1].trees
    kernel, oracle = make_kernel(name, 0.4, 0.4), R.kernel_function(name, 0.4, 0.4)
    g = np.asarray(jkern.gram(kernel, train, dtype="float64"))
    assert g.shape == (len(train), len(train))
    np.testing.assert_array_equal(g, g.T)
    rng = np.random.default_rng(1)
    n = len(train)
    off = g - np.diag(np.diag(g))
    top = np.argpartition(off.ravel(), -300)[-300:]
    diag = rng.choice(n, 200, replace=False)
    pairs = np.concatenate([rng.integers(0, n, (1000, 2)),
                            np.stack(np.unravel_index(top, g.shape), 1),
                            np.stack([diag, diag], 1)])
    want = np.array([oracle(train[a], train[b]) for a, b in pairs])
    assert_rel(g[pairs[:, 0], pairs[:, 1]], want, 1e-9, f"{name} train")
    assert np.count_nonzero(want[:1000]) > 100  # the uniform pairs are not all zero

    block = np.asarray(jkern.gram(kernel, train, test, dtype="float64"))
    assert block.shape == (len(train), len(test))
    pairs = np.stack([rng.integers(0, n, 1500), rng.integers(0, len(test), 1500)], 1)
    want = np.array([oracle(train[a], test[b]) for a, b in pairs])
    assert_rel(block[pairs[:, 0], pairs[:, 1]], want, 1e-9, f"{name} train x test")


# --------------------------------------------------------------------------- 2. every corpus


@pytest.fixture(scope="module")
def boundary_examples(shared_data):
    return read_examples(require(shared_data / "srl" / "boundary_5000.dat"))


@pytest.fixture(scope="module")
def ud_sentences(shared_data):
    return read_conllu(require(shared_data / "ud-english-ewt" / "en_ewt-ud-dev.conllu"))


@pytest.fixture(scope="module")
def corpora(trec, boundary_examples, ud_sentences):
    """Seeded samples of every tree source the project reads, as {name: trees}."""
    questions = _sample(trec[0].trees, 50, 2)
    boundary = _sample([e.trees[0] for e in boundary_examples], 50, 3)
    ud = _sample([s for s in ud_sentences if 4 <= len(s) <= 20], 15, 4)
    headed = [head_dependencies(t) for t in _sample(trec[0].trees, 15, 5)]
    functions = [t for t in load_stdlib_functions(max_per_package=40, identifiers=False).trees
                 if len(t) <= 120]
    return {
        "trec": questions,
        "srl": boundary,
        "srl-unlex": [without_leaves(t) for t in boundary],
        "ud-grct-lct-loct": [f(s) for f in (grct, lct, loct) for s in ud],
        "trec-heads-grct-lct-loct": [f(s) for f in (grct, lct, loct) for s in headed],
        "python-ast": _sample(functions, 25, 6),
    }


SETTINGS = [("ST", 0.1, None, None), ("ST", 1.0, None, None), ("SST", 0.1, None, None),
            ("SST", 1.0, None, None), ("SST_BOW", 0.7, None, None), ("PTK", 0.1, 0.9, None),
            ("PTK", 1.0, 1.0, None), ("PTK", 0.4, 0.4, 3)]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(map(str, s)))
def test_every_corpus_matches_the_oracle_across_parameters(corpora, setting):
    """One float64 Gram over all corpora together (one forest); each corpus's block in full
    and 300 cross-corpus pairs against the oracle."""
    kernel, oracle = make_kernel(*setting), R.kernel_function(*setting)
    trees = [t for ts in corpora.values() for t in ts]
    g = np.asarray(jkern.gram(kernel, trees, dtype="float64"))
    assert np.all(np.isfinite(g))
    start = 0
    for name, ts in corpora.items():
        want = np.array([[oracle(a, b) for b in ts] for a in ts])
        got = g[start:start + len(ts), start:start + len(ts)]
        assert_rel(got, want, 1e-9, f"{setting} {name}")
        assert np.count_nonzero(want) > len(ts), name  # trees share structure
        start += len(ts)
    pairs = np.random.default_rng(7).integers(0, len(trees), (300, 2))
    want = np.array([oracle(trees[a], trees[b]) for a, b in pairs])
    assert_rel(g[pairs[:, 0], pairs[:, 1]], want, 1e-9, f"{setting} cross-corpus")


# --------------------------------------------------------------------------- 3. SPTK with GloVe


@pytest.fixture(scope="module")
def glove_trees(trec, ud_sentences):
    """40 TREC parses with words marked by their preterminal (as qc_kda.py runs SPTK) and 15 UD
    sentences as LCTs (`lemma::p` nodes), with their GloVe 6B 50-d vectors."""
    trees = [pos_leaves(t, lowercase=True) for t in _sample(trec[0].trees, 40, 8)]
    trees += [lct(s) for s in _sample([s for s in ud_sentences if 4 <= len(s) <= 12], 15, 9)]
    vocab, vectors = glove_6b_50d().for_words(tree_words(trees))
    leaves = {t.labels[i] for t in trees for i in range(len(t)) if t.is_leaf(i)}
    return trees, leaves, list(vocab), np.asarray(vectors, np.float64)


@pytest.mark.parametrize("similarity", [{"gamma": 1.0}, {"gamma": 3.0}, {"threshold": 0.3}],
                         ids=["gamma1", "gamma3", "cosine0.3"])
def test_sptk_with_glove_vectors_matches_the_oracle(glove_trees, similarity):
    trees, leaves, vocab, vectors = glove_trees
    kernel = jkern.SPTK(vocab, vectors, 0.4, 0.4, **similarity)
    g = np.asarray(jkern.gram(kernel, trees, dtype="float64"))
    sigma = word_sigma(vectors, similarity.get("threshold", 0.0), leaves, vocab,
                       gamma=similarity.get("gamma"))
    want = np.array([[R.sptk(a, b, 0.4, 0.4, sigma) for b in trees] for a in trees])
    assert_rel(g, want, 1e-9, f"SPTK {similarity}")
    exact = np.array([[R.ptk(a, b, 0.4, 0.4) for b in trees] for a in trees])
    assert np.sum(want > exact * (1 + 1e-6)) > len(trees)  # the vectors do smooth


# --------------------------------------------------------------------------- 4. DCD vs LIBLINEAR


@pytest.fixture(scope="module")
def trec_words(shared_data):
    """All 5,401 training questions and the 500 test questions as binary features of the
    2,000 most frequent lowercase tokens."""
    labels, tokens = _read_questions(require(shared_data / "trec" / "qc_train.tsv"))
    test_labels, test_tokens = _read_questions(require(shared_data / "trec" / "qc_test.tsv"))
    X, Xt = word_features(tokens, test_tokens, 2000)
    return X, labels, Xt, test_labels


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("C", [0.05, 0.5, 5.0])
@pytest.mark.parametrize("bias, class_weight",
                         [(1.0, None), (None, None), (1.0, {1: 3.0, -1: 1.0})],
                         ids=["bias", "no-bias", "weighted"])
def test_dcd_matches_linear_svc_over_a_grid(trec_words, loss, C, bias, class_weight):
    """ENTY against the rest on all training questions: primal objective within 0.1% of
    LinearSVC's and the same accuracy (within 0.5 points) on training and test questions."""
    X, labels, Xt, test_labels = trec_words
    y, yt = np.where(labels == "ENTY", 1.0, -1.0), np.where(test_labels == "ENTY", 1.0, -1.0)
    sk_kw = {"intercept_scaling": bias} if bias else {"fit_intercept": False}
    if class_weight:
        sk_kw["class_weight"] = class_weight  # the same mapping label -> weight
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning
        sk = _linear_svc(loss=loss, C=C, **sk_kw).fit(X, y)
    sol = dcd(X, y, C=C, loss=loss, bias=bias, class_weight=class_weight, tol=1e-6,
              max_iter=100_000, key=jax.random.key(0))
    assert bool(sol.converged)
    m = sol.model
    obj = {"C": C, "loss": loss, "bias": bias, "class_weight": class_weight}
    p_jk = float(primal_objective(m, X, y, **obj))
    p_sk = float(primal_objective(_as_model(sk.coef_[0], sk.intercept_[0] if bias else 0.0),
                                  X, y, **obj))
    assert abs(p_jk - p_sk) <= 1e-3 * p_sk, (p_jk, p_sk)
    for F, t in ((X, y), (Xt, yt)):
        acc_jk = np.mean(np.asarray(m.predict(F)) == t)
        acc_sk = np.mean(sk.predict(F) == t)
        assert abs(acc_jk - acc_sk) <= 0.005, (acc_jk, acc_sk)


# --------------------------------------------------------------------------- 5. Nyström, KSVM


@pytest.fixture(scope="module")
def sptk_gram(trec):
    """The normalized SPTK (Gaussian word similarity, GloVe) Gram of 300 seeded TREC parses."""
    data = trec[0]
    pick = np.sort(np.random.default_rng(10).choice(len(data.trees), 300, replace=False))
    trees = [pos_leaves(data.trees[i], lowercase=True) for i in pick]
    vocab, vectors = glove_6b_50d().for_words(tree_words(trees))
    kernel = jkern.Normalized(jkern.SPTK(vocab, vectors, 0.4, 0.4, gamma=3.0))
    return kernel, trees, np.asarray(data.coarse)[pick], np.asarray(
        jkern.gram(kernel, trees, dtype="float64"))


def test_nystrom_with_every_tree_as_a_landmark_is_exact_on_sptk(sptk_gram):
    kernel, trees, _, g = sptk_gram
    projector = jkern.fit_nystrom(kernel, trees, landmarks=len(trees), key=jax.random.key(0),
                                  rcond=1e-12, dtype="float64")
    x = np.asarray(projector.embed(trees, dtype="float64"))
    np.testing.assert_allclose(x @ x.T, g, rtol=0, atol=1e-8)


@pytest.mark.parametrize("C", [0.3, 3.0, 30.0])
@pytest.mark.parametrize("label", ["ENTY", "LOC"])
def test_ksvm_matches_libsvm_over_a_grid(sptk_gram, C, label):
    from sklearn.svm import SVC

    _, _, labels, g = sptk_gram
    y = np.where(labels == label, 1, -1)
    sol = ksvm(g, y, C=C, tol=1e-6)
    assert bool(sol.converged)
    model = sol.model
    ref = SVC(kernel="precomputed", C=C, tol=1e-6, shrinking=False).fit(g, y)
    coef = np.zeros(len(y))
    coef[ref.support_] = ref.dual_coef_[0]
    ref_obj = 0.5 * coef @ g @ coef - np.abs(coef).sum()
    assert float(sol.stats["dual_objective"]) == pytest.approx(ref_obj, rel=1e-6)
    f, f_ref = np.asarray(model.decision_function(g)), ref.decision_function(g)
    assert np.max(np.abs(f - f_ref)) <= 1e-3 * np.max(np.abs(f_ref))
    np.testing.assert_array_equal(np.sign(f[np.abs(f_ref) > 1e-3]),
                                  np.sign(f_ref[np.abs(f_ref) > 1e-3]))


# --------------------------------------------------------------------------- 6. cutting planes


@pytest.fixture(scope="module")
def boundary(boundary_examples):
    pick = np.random.default_rng(11).permutation(len(boundary_examples))[:500]
    trees = [boundary_examples[i].trees[0] for i in pick]
    y = np.array([1 if boundary_examples[i].label > 0 else -1 for i in pick])
    return trees, y


@pytest.mark.parametrize("kernel_name", ["SST", "PTK"])
@pytest.mark.parametrize("lexicalized", [True, False], ids=["srl", "srl-unlex"])
def test_cutting_plane_modes_agree_on_boundary_data(boundary, kernel_name, lexicalized):
    """uSVM, SDAG, SDAG+ and the forest mode train the same model (margins 1e-10, decision
    values 1e-9 relative, same predictions) with fewer Delta evaluations each."""
    trees, y = boundary
    if not lexicalized:
        trees = [without_leaves(t) for t in trees]
    kernel = jkern.Normalized(make_kernel(kernel_name, 0.4, 0.4))
    train, y_train, test = trees[:400], y[:400], trees[400:]
    runs = {mode: cpa(train, y_train, kernel=kernel, C=40.0 * len(train) / 400, sample=100,
                      epsilon=1e-3, mode=mode, keep_margins=True, key=jax.random.PRNGKey(4),
                      max_iter=25)
            for mode in ("usvm", "sdag", "sdag+", "forest")}
    base = runs["usvm"]
    assert len(base.stats["history"]) >= 5
    f0 = np.asarray(base.model.decision_function(test, mode="usvm"))
    for mode, r in runs.items():
        assert len(r.stats["history"]) == len(base.stats["history"]), mode
        for a, b in zip(r.stats["margins"], base.stats["margins"]):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
        np.testing.assert_allclose(r.model.coef, base.model.coef, rtol=1e-9, atol=1e-12)
        f = np.asarray(r.model.decision_function(test, mode="sdag+"))
        assert np.max(np.abs(f - f0)) <= 1e-9 * np.max(np.abs(f0)), mode
        np.testing.assert_array_equal(np.where(f >= 0, 1, -1), np.where(f0 >= 0, 1, -1))
    d = [runs[m].stats["delta_evals"] for m in ("usvm", "sdag", "sdag+", "forest")]
    assert d[0] > d[1] > d[2] >= d[3] > 0, d


# --------------------------------------------------------------------------- 7. head rules


@pytest.mark.parametrize("semantic", [True, False])
def test_every_boundary_tree_converts_to_a_projective_tree(boundary_examples, semantic):
    for e in boundary_examples:
        tree = e.trees[0]
        tokens = head_dependencies(tree, semantic=semantic)
        assert len(tokens) == tree.n_leaves
        assert projective_single_root(tokens), tree.to_penn()


# --------------------------------------------------------------------------- 8. random trees

_LABELS = st.sampled_from(["A", "B", "C"])
_WORDS = st.sampled_from(["a", "b", "A"])  # "A" also as a word: a leaf child != node child
_NESTED = st.recursive(
    _WORDS,
    lambda kids: st.tuples(_LABELS, st.lists(kids, min_size=1, max_size=4)),
    max_leaves=14,
)


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_NESTED.map(Tree.from_nested), min_size=2, max_size=5),
       st.sampled_from([0.3, 1.0]), st.sampled_from([None, 2]))
def test_random_trees_match_the_oracle(trees, lam, max_subseq):
    for name in KERNEL_NAMES:
        g = np.asarray(jkern.gram(make_kernel(name, lam, 0.7, max_subseq), trees,
                                  dtype="float64"))
        oracle = R.kernel_function(name, lam, 0.7, max_subseq)
        want = np.array([[oracle(a, b) for b in trees] for a in trees])
        assert_rel(g, want, 1e-9, name)
