"""Issue 32: a model holding NaN or inf parameters never scores: every learner's
`decision_function` (and so `predict`), and a projector's `embed`, raise `InputError` naming
the array, where they used to return NaN scores that label every input one class. Traced
(a jitted call), the same check runs inside the program (`equinox.error_if`). The inputs of
the models that score arrays (a kernel block, feature rows, kernel columns) are checked too."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import svm
from jkern.errors import InputError
from jkern.trees import parse_penn

TREES = [parse_penn(t) for t in ("(S (A a))", "(S (B b))", "(S (A a)(B b))", "(S (C c))")]
GRAM = np.eye(4) + 0.1
Y = [1, -1, 1, -1]
X = np.eye(4)
ROWS = jkern.SparseRows.from_rows([{0: 1.0, 1: 1.0}, {1: 1.0, 2: 1.0}, {0: 1.0, 2: 1.0},
                                   {2: 1.0, 3: 1.0}])


def _nan_at(model, where):
    """`model` with the first entry of the array `where(model)` set to NaN."""
    return eqx.tree_at(where, model, replace_fn=lambda a: a.at[(0,) * a.ndim].set(jnp.nan))


@pytest.fixture(scope="module")
def models():
    """name -> (a trained model, the array to poison, what it scores)."""
    key = jax.random.key(0)
    proj = jkern.fit_nystrom(jkern.SST(0.4), TREES, landmarks=2, key=key)
    pa = jkern.pa.fit
    tokens = [["a", "is", "b"], ["c", "of", "d"], ["e", "is", "f"], ["g", "of", "h"]]
    extractor = jkern.ds.train_extractor(
        tokens, [0, 0, 0, 0], [2, 2, 2, 2], np.arange(4), np.array([[1], [0], [1], [0]], bool),
        key=None, classes=("NA", "is_a"), max_iter=20).model
    return {
        "KernelSVM": (svm.ksvm(GRAM, Y).model, lambda m: m.coef, GRAM),
        "KernelSVM ovr": (svm.ksvm_ovr(GRAM, ["a", "b", "c", "a"]).model,
                          lambda m: m.intercept, GRAM),
        "LinearSVM": (svm.dcd(X, Y, key=key).model, lambda m: m.b, X),
        "LinearSVM sparse": (svm.dcd(ROWS, Y, key=key).model, lambda m: m.w, ROWS),
        "KernelExpansion": (jkern.train_kernel_svm(jkern.SST(0.4), TREES, Y).model,
                            lambda m: m.coef, TREES),
        "CPA": (jkern.train_cutting_plane(jkern.SST(0.4), TREES, Y, key=key).model,
                lambda m: m.coef, TREES),
        "Nystrom + DCD": (jkern.train_nystrom_svm(proj, TREES, Y, key=key).model,
                          lambda m: m.head.w, TREES),
        "Nystrom + DCD projector": (jkern.train_nystrom_svm(proj, TREES, Y, key=key).model,
                                    lambda m: m.projector.projection, TREES),
        "KDA": (jkern.train_kda(proj, TREES, [0, 1, 0, 1], key=key, dev_fraction=0.5,
                                epochs=2).model, lambda m: m.head.output.weight, TREES),
        "PA kernel": (pa(ROWS, Y, mode="kernel", key=None).model, lambda m: m.alpha, ROWS),
        "PA explicit": (pa(ROWS, Y, mode="explicit", key=None).model, lambda m: m.weights, ROWS),
        "PA linear": (pa(ROWS, Y, mode="linear", key=None).model, lambda m: m.weights, ROWS),
        "PA expanded": (pa(ROWS, Y, mode="kernel", key=None).model.expanded(), lambda m: m.weights,
                        ROWS),
        "PA vmapped grid": (jax.vmap(lambda C: pa(ROWS, Y, mode="kernel", C=C, key=None).model)(
            jnp.array([0.5, 1.0])), lambda m: m.alpha, ROWS),
        "DS relation model": (extractor.model, lambda m: m.weights,
                              extractor.features(tokens, [0] * 4, [2] * 4)),
        "DS extractor": (extractor, lambda m: m.model.weights, (tokens, [0] * 4, [2] * 4)),
    }


NAMES = ["KernelSVM", "KernelSVM ovr", "LinearSVM", "LinearSVM sparse", "KernelExpansion", "CPA",
         "Nystrom + DCD", "Nystrom + DCD projector", "KDA", "PA kernel", "PA explicit",
         "PA linear", "PA expanded", "PA vmapped grid", "DS relation model", "DS extractor"]


def _scores(model, x):
    return model.decision_function(*x) if isinstance(x, tuple) else model.decision_function(x)


@pytest.mark.parametrize("name", NAMES)
def test_a_model_with_a_nan_parameter_does_not_score(models, name):
    model, where, x = models[name]
    assert np.isfinite(np.asarray(_scores(model, x))).all()
    bad = _nan_at(model, where)
    with pytest.raises(InputError, match="holds NaN or inf values in .*: it would give NaN"):
        _scores(bad, x)
    if hasattr(bad, "predict") and not isinstance(x, tuple):
        with pytest.raises(InputError, match="holds NaN or inf values"):
            bad.predict(x)


def test_a_projector_with_a_nan_projection_does_not_embed():
    proj = jkern.fit_nystrom(jkern.SST(0.4), TREES, landmarks=2, key=jax.random.key(0))
    with pytest.raises(InputError, match=r"the Nystrom holds NaN or inf values in projection"):
        _nan_at(proj, lambda p: p.projection).embed(TREES)
    ensemble = jkern.fit_nystrom_ensemble(jkern.SST(0.4), TREES, landmarks=2, projections=2,
                                          key=jax.random.key(0))
    with pytest.raises(InputError, match=r"members\[1\]\.projection"):
        _nan_at(ensemble, lambda p: p.members[1].projection).embed(TREES)


def test_a_traced_model_is_checked_when_the_program_runs():
    model = svm.ksvm(GRAM, Y).model
    score = eqx.filter_jit(lambda m, k: m.decision_function(k))
    np.testing.assert_allclose(score(model, GRAM), model.decision_function(GRAM))
    with pytest.raises(Exception, match="the KernelSVM holds NaN or inf values in coef"):
        jax.block_until_ready(score(_nan_at(model, lambda m: m.coef), GRAM))


def test_nan_inputs_to_the_array_models_are_refused(models):
    with pytest.raises(InputError, match="k holds NaN or inf values"):
        models["KernelSVM"][0].predict(np.full((2, 4), np.nan))
    with pytest.raises(InputError, match="X holds NaN or inf values"):
        models["LinearSVM"][0].predict(np.full((2, 4), np.inf))
    head = models["KDA"][0].head
    with pytest.raises(InputError, match="c holds NaN or inf values"):
        head.predict(jnp.full((2, head.n_landmarks), jnp.nan))
