"""jkern.sklearn: the estimators give the jkern models' own predictions, and work in
Pipeline, GridSearchCV, cross_val_score and clone (issue 22), on TREC questions."""

from __future__ import annotations

import numpy as np
import pytest
from data_paths import SHARED_DATA, require
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
    parametrize_with_checks,
)

import jkern
from jkern.errors import InputError
from jkern.sklearn import (
    KDAClassifier,
    KernelSVC,
    NystromSVC,
    PAClassifier,
    TreeKernelTransformer,
)

ESTIMATORS = [TreeKernelTransformer, NystromSVC, KernelSVC, KDAClassifier, PAClassifier]


@pytest.fixture(scope="module")
def trec():
    """40 training questions of each of three coarse classes (string labels) and 14 test
    ones of each, as bracket text."""
    from jkern.data import load_trec

    require(SHARED_DATA / "trec")
    data = load_trec(SHARED_DATA, "train")
    train, test = [], []
    for c in ("HUM", "LOC", "NUM"):
        rows = [i for i, k in enumerate(data.coarse) if k == c]
        train += rows[:40]
        test += rows[40:54]
    split = [([data.trees[i].to_penn() for i in part], np.array([data.coarse[i] for i in part]))
             for part in (train, test)]
    return split[0][0], split[0][1], split[1][0], split[1][1]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_api_checks_that_apply(cls):
    name = cls.__name__
    check_parameters_default_constructible(name, cls())
    check_no_attributes_set_in_init(name, cls())
    check_get_params_invariance(name, cls())
    check_set_params(name, cls())


# PAClassifier takes numeric X, so scikit-learn's data checks apply to it; it declares
# itself binary (`multi_class=False` in its tags), so the checks leave out the multi-class
# cases. The checks that still fail, and why:
PA_EXPECTED_FAILURES: dict[str, str] = {}


@parametrize_with_checks([PAClassifier(epochs=3)],
                         expected_failed_checks=lambda est: PA_EXPECTED_FAILURES)
def test_pa_classifier_passes_scikit_learns_checks(estimator, check):
    check(estimator)


def test_nystrom_svc_is_the_library_model(trec):
    x, y, xt, yt = trec
    est = NystromSVC(landmarks=30, C=1.0).fit(x, y)
    assert est.classes_.tolist() == ["HUM", "LOC", "NUM"]
    pred = est.predict(xt)
    assert set(pred.tolist()) <= set(est.classes_.tolist())
    assert est.decision_function(xt).shape == (len(xt), 3)
    # the same model as the library call it wraps
    import jax

    trees = [jkern.trees.parse_penn(t) for t in x]
    projector = jkern.fit_nystrom(jkern.Normalized(jkern.SST(0.4)), trees, landmarks=30,
                                  key=jax.random.fold_in(jax.random.PRNGKey(0), 0), labels=y)
    model = jkern.train_nystrom_svm(projector, trees, y.tolist(), C=1.0,
                                    key=jax.random.fold_in(jax.random.PRNGKey(0), 1)).model
    test = [jkern.trees.parse_penn(t) for t in xt]
    np.testing.assert_array_equal(pred, np.asarray(model.predict(test)))
    assert est.score(xt, yt) > 0.5


def test_grid_search_over_lambda_and_C(trec):
    x, y, _, _ = trec
    two = np.isin(y, ["HUM", "LOC"])
    xs = [t for t, k in zip(x, two) if k]
    search = GridSearchCV(KernelSVC(), {"lam": [0.2, 0.4], "C": [0.5, 2.0]}, cv=2)
    search.fit(xs, y[two])
    assert set(search.best_params_) == {"lam", "C"}
    assert search.best_estimator_.decision_function(xs[:5]).shape == (5,)
    scores = cross_val_score(clone(search.best_estimator_), xs, y[two], cv=2)
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))


def test_precomputed_gram_in_a_pipeline(trec):
    x, y, xt, yt = trec
    pipe = Pipeline([("kernel", TreeKernelTransformer(kernel="ptk", lam=0.4, mu=0.4)),
                     ("svm", SVC(kernel="precomputed", C=1.0))])
    pipe.fit(x, y)
    gram = pipe.named_steps["kernel"].transform(xt)
    assert gram.shape == (len(xt), len(x))
    np.testing.assert_allclose(
        gram, np.asarray(jkern.gram(jkern.Normalized(jkern.PTK(0.4, 0.4)),
                                    [jkern.trees.parse_penn(t) for t in xt],
                                    [jkern.trees.parse_penn(t) for t in x])))
    assert pipe.score(xt, yt) > 0.5
    feats = TreeKernelTransformer(landmarks=20).fit(x, y).transform(xt)
    assert feats.shape[0] == len(xt) and np.all(np.isfinite(feats))


def test_kda_probabilities(trec):
    x, y, xt, _ = trec
    est = KDAClassifier(landmarks=20, hidden=(16,), epochs=5, patience=None,
                        dev_fraction=0.2).fit(x, y)
    p = est.predict_proba(xt)
    assert p.shape == (len(xt), 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(est.classes_[np.argmax(p, axis=1)], est.predict(xt))


def test_bad_inputs_are_input_errors():
    with pytest.raises(InputError, match="sequence of trees"):
        NystromSVC().fit("(S (A a))", ["a"])
    with pytest.raises(InputError, match="one class"):
        KernelSVC().fit(["(S (A a))", "(S (B b))"], ["a", "a"])
    with pytest.raises(InputError, match="kernel must be one of"):
        KernelSVC(kernel="rbf").fit(["(S (A a))", "(S (B b))"], ["a", "b"])
    with pytest.raises(InputError, match=r"X\[1\]"):
        KernelSVC().fit(["(S (A a))", 3], ["a", "b"])


@pytest.mark.parametrize(("est", "method"), [
    (KernelSVC(), "predict"), (KernelSVC(), "decision_function"),
    (NystromSVC(), "predict"), (NystromSVC(), "decision_function"),
    (KDAClassifier(), "predict"), (KDAClassifier(), "decision_function"),
    (KDAClassifier(), "predict_proba"), (TreeKernelTransformer(), "transform"),
    (TreeKernelTransformer(landmarks=2), "transform"), (PAClassifier(), "predict"),
    (PAClassifier(), "decision_function")], ids=lambda v: getattr(v, "__name__", str(v)))
def test_unfitted_estimators_raise_not_fitted_error(est, method):
    """Issue 32: scikit-learn's NotFittedError before fit, never an AttributeError."""
    from sklearn.exceptions import NotFittedError

    X = np.ones((2, 3)) if isinstance(est, PAClassifier) else ["(S (A a))", "(S (B b))"]
    with pytest.raises(NotFittedError):
        getattr(est, method)(X)


def test_pa_classifier_is_jkern_pa_fit():
    import jax
    import scipy.sparse as sp

    from jkern.pa import conjunctive_concepts, fit

    train, test = conjunctive_concepts(600, 200, key=jax.random.key(0), n_features=300)
    y = np.where(np.asarray(train.labels) > 0, "yes", "no")
    est = PAClassifier(degree=2, C=1.0, epochs=3).fit(train.features, y)
    assert est.classes_.tolist() == ["no", "yes"] and est.n_features_in_ == 300
    ref = fit(train.features, np.asarray(train.labels), degree=2, C=1.0, epochs=3, mode="block",
              key=None)
    np.testing.assert_array_equal(est.decision_function(test.features),
                                  np.asarray(ref.model.decision_function(test.features)))
    # a SciPy sparse matrix and a list of dicts are the same input
    dense = np.asarray(train.features.todense())
    same = PAClassifier(degree=2, C=1.0, epochs=3).fit(sp.csr_matrix(dense), y)
    np.testing.assert_array_equal(same.predict(test.features), est.predict(test.features))
    rows = [{int(j): 1.0 for j in np.flatnonzero(r)} for r in dense]
    assert PAClassifier(degree=2, epochs=3).fit(rows, y).score(test.features, np.where(
        np.asarray(test.labels) > 0, "yes", "no")) == est.score(test.features, np.where(
            np.asarray(test.labels) > 0, "yes", "no"))


def test_pa_classifier_classifies_binary_rows_with_the_expanded_model():
    """Binary rows go through the expanded model (pecco's), whose margins are the kernel
    model's bit for bit; real-valued rows through the kernel model."""
    from jkern.pa import ExpandedModel

    rng = np.random.default_rng(5)
    rows = [{int(f): 1.0 for f in rng.choice(30, 5, replace=False)} for _ in range(80)]
    y = np.where(rng.random(80) < 0.5, "a", "b")
    est = PAClassifier(degree=3, epochs=3).fit(rows, y)
    assert isinstance(est._fast_model, ExpandedModel)
    X = jkern.SparseRows.from_rows(rows, n_features=30)
    np.testing.assert_array_equal(est.decision_function(rows),
                                  np.asarray(est.model_.decision_function(X)))
    half = [{f: 0.5 for f in r} for r in rows[:5]]
    np.testing.assert_array_equal(
        est.decision_function(half),
        np.asarray(est.model_.decision_function(jkern.SparseRows.from_rows(half,
                                                                           n_features=30))))


def test_pa_classifier_in_one_vs_rest_and_a_grid():
    from sklearn.multiclass import OneVsRestClassifier

    rng = np.random.default_rng(0)
    x = (rng.random((90, 8)) < 0.4).astype(np.float64)
    y = np.array(["a", "b", "c"])[np.argmax(x[:, :3] + 0.1 * rng.random((90, 3)), axis=1)]
    ovr = OneVsRestClassifier(PAClassifier(degree=2, epochs=2)).fit(x, y)
    assert set(ovr.predict(x).tolist()) <= {"a", "b", "c"}
    with pytest.raises(InputError, match="OneVsRestClassifier"):
        PAClassifier().fit(x, y)
    two = np.isin(y, ["a", "b"])
    search = GridSearchCV(PAClassifier(epochs=2), {"C": [0.1, 1.0]}, cv=2)
    search.fit(x[two], y[two])
    assert set(search.best_params_) == {"C"}
