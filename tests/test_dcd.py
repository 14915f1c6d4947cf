"""Linear SVM by dual coordinate descent (jkern.svm.dcd): against an exact QP solution, against
scikit-learn's LinearSVC (LIBLINEAR) on the TREC questions, vmap over C grids and one-vs-rest
classes, jit round-trips, shrinking on/off.

Few distinct shapes and one max_iter everywhere: every (shape, loss, shrinking, width) compiles.
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
from data_paths import SHARED_DATA, require
from helpers import _as_model, _linear_svc, _read_questions, word_features

from jkern.svm import LinearSVM, dcd, dcd_grid, dcd_ovr, primal_objective
from jkern.svm._dcd import _fit_binary, _random_permutation

MAX_ITER = 20_000  # static: one value for every small-problem fit
N, D = 48, 5


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((N, D))
    y = np.where(X @ rng.standard_normal(D) + 0.8 * rng.standard_normal(N) > 0, 1.0, -1.0)
    return X, y


# --- an exact reference: the dual QP by L-BFGS-B, polished by an active-set solve ------------


def _dual_data(X, y, C, loss, bias, cw):
    Xb = np.hstack([X, np.full((len(X), 1), bias)]) if bias else X
    Ci = C * np.where(y > 0, cw[0], cw[1])
    if loss == "squared_hinge":
        Dg, U = 0.5 / Ci, np.full(len(y), np.inf)
    else:
        Dg, U = np.zeros(len(y)), Ci
    Q = (y[:, None] * y[None, :]) * (Xb @ Xb.T) + np.diag(Dg)
    return Xb, Q, Dg, U


def _projected_gradient(alpha, Q, U):
    G = Q @ alpha - 1
    at0 = alpha <= 0
    atU = alpha >= U
    return np.where(at0, np.minimum(G, 0), np.where(atU, np.maximum(G, 0), G))


def _exact_dual(Q, U):
    """argmin ½αᵀQα − Σα over 0 ≤ α ≤ U: L-BFGS-B, then exact solves on the free set until
    the KKT conditions hold to 1e-10."""
    n = len(Q)
    bounds = [(0.0, None if np.isinf(u) else u) for u in U]
    res = scipy.optimize.minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1),
        np.zeros(n),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"ftol": 1e-16, "gtol": 1e-12, "maxiter": 100_000},
    )
    alpha = np.clip(res.x, 0, U)
    for _ in range(50):
        G = Q @ alpha - 1
        lo = (alpha < 1e-7) & (G > 0)
        hi = (alpha > U - 1e-7) & (G < 0)
        free = ~(lo | hi)
        a = np.where(lo, 0.0, np.where(hi, U, alpha))
        rhs = 1 - Q[np.ix_(free, ~free)] @ a[~free]
        a[free] = np.linalg.lstsq(Q[np.ix_(free, free)], rhs, rcond=None)[0]
        a = np.clip(a, 0, U)
        alpha = a
        if np.max(np.abs(_projected_gradient(alpha, Q, U))) < 1e-10:
            break
    assert np.max(np.abs(_projected_gradient(alpha, Q, U))) < 1e-9, "reference QP not solved"
    return alpha


CASES = [
    ("squared_hinge", 1.0, None, 0.7),
    ("squared_hinge", None, (2.0, 0.5), 3.0),
    ("squared_hinge", 2.5, (0.5, 1.5), 0.2),
    ("hinge", 1.0, None, 0.7),
    ("hinge", None, (0.5, 3.0), 2.0),
    ("hinge", 2.5, (1.5, 0.8), 0.2),
]


@pytest.mark.parametrize("loss,bias,cw,C", CASES)
def test_matches_exact_qp(small, loss, bias, cw, C):
    X, y = small
    cw_ = (1.0, 1.0) if cw is None else cw
    Xb, Q, Dg, U = _dual_data(X, y, C, loss, bias, cw_)
    ref = _exact_dual(Q, U)
    w_ref = (ref * y) @ Xb
    dual_ref = ref.sum() - 0.5 * ref @ Q @ ref  # the dual, maximised

    cw_map = None if cw is None else {1: cw[0], -1: cw[1]}
    sol = dcd(X, y, C=C, loss=loss, bias=bias, class_weight=cw_map, tol=1e-7,
              max_iter=MAX_ITER, key=jax.random.key(0))
    m = sol.model
    assert bool(sol.converged) and int(sol.stats["n_iter"]) < MAX_ITER
    assert m.w.dtype == jnp.float64
    w = np.append(np.asarray(m.w), float(m.b) / bias if bias else [])
    np.testing.assert_allclose(w, w_ref, atol=1e-4)
    assert abs(float(sol.stats["dual_objective"]) - dual_ref) <= 1e-6 * abs(dual_ref)
    # KKT of jkern's alpha: feasible, projected gradient ~ 0, w = Σ α_i y_i x̄_i
    alpha = np.asarray(sol.stats["alpha"])
    assert np.all(alpha >= 0) and np.all(alpha <= U)
    assert np.max(np.abs(_projected_gradient(alpha, Q, U))) < 1e-6
    np.testing.assert_allclose((alpha * y) @ Xb, w, atol=1e-10)
    # the primal at w equals the dual at alpha (no duality gap at the optimum)
    p = float(primal_objective(m, X, y, C=C, loss=loss, bias=bias, class_weight=cw_map))
    assert abs(p - dual_ref) <= 1e-6 * abs(dual_ref)
    if not bias:
        assert float(m.b) == 0.0


def test_shrinking_on_and_off_agree(small):
    X, y = small
    for loss in ("squared_hinge", "hinge"):
        kw = dict(C=1.5, loss=loss, tol=1e-8, max_iter=MAX_ITER, key=jax.random.key(4))
        on, off = dcd(X, y, shrinking=True, **kw), dcd(X, y, shrinking=False, **kw)
        assert bool(on.converged) and bool(off.converged)
        np.testing.assert_allclose(on.model.w, off.model.w, atol=1e-6)
        np.testing.assert_allclose(on.model.b, off.model.b, atol=1e-6)
        d_on, d_off = float(on.stats["dual_objective"]), float(off.stats["dual_objective"])
        assert abs(d_on - d_off) <= 1e-9 * abs(d_on)


# --- vmap: C grids and one-vs-rest classes -----------------------------------------------------


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_vmap_grid_equals_loop(small, loss):
    X, y = small
    key = jax.random.key(3)
    Cs = jnp.array([0.05, 0.3, 2.0, 10.0])
    kw = dict(loss=loss, tol=1e-6, max_iter=MAX_ITER, key=key)
    grid = jax.vmap(lambda c: dcd(X, y, C=c, **kw))(Cs)
    assert grid.model.w.shape == (4, D) and grid.stats["n_iter"].shape == (4,)
    for j, c in enumerate(np.asarray(Cs)):
        one = dcd(X, y, C=float(c), **kw)
        np.testing.assert_allclose(grid.model.w[j], one.model.w, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grid.model.b[j], one.model.b, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grid.stats["alpha"][j], one.stats["alpha"], rtol=0,
                                   atol=1e-10)
        assert int(grid.stats["n_iter"][j]) == int(one.stats["n_iter"])
    again = dcd_grid(X, y, Cs, **kw)
    np.testing.assert_array_equal(again.model.w, grid.model.w)


def test_vmap_over_keys_equals_loop(small):
    X, y = small
    keys = jax.random.split(jax.random.key(5), 3)
    kw = dict(C=1.0, tol=1e-6, max_iter=MAX_ITER)
    many = jax.vmap(lambda k: dcd(X, y, key=k, **kw))(keys)
    for j in range(3):
        one = dcd(X, y, key=keys[j], **kw)
        np.testing.assert_allclose(many.model.w[j], one.model.w, rtol=0, atol=1e-10)
        assert int(many.stats["n_iter"][j]) == int(one.stats["n_iter"])


def test_ovr_equals_per_class_fits(small):
    X, _ = small
    labels = np.random.default_rng(2).integers(0, 3, N) * 10 + 5  # labels 5, 15, 25
    cw = [1.0, 2.0, 0.5]
    key = jax.random.key(6)
    kw = dict(C=1.0, tol=1e-6, max_iter=MAX_ITER, key=key)
    m = dcd_ovr(X, labels, class_weight={5: 1.0, 15: 2.0, 25: 0.5}, **kw).model
    assert m.classes == (5, 15, 25) and m.w.shape == (3, D) and m.b.shape == (3,)
    for k, c in enumerate(m.classes):
        one = dcd(X, np.where(labels == c, 1.0, -1.0), class_weight={1: cw[k], -1: 1.0},
                  **kw).model
        np.testing.assert_allclose(m.w[k], one.w, rtol=0, atol=1e-10)
        np.testing.assert_allclose(m.b[k], one.b, rtol=0, atol=1e-10)
    scores = np.asarray(m.decision_function(X))
    assert scores.shape == (N, 3)
    np.testing.assert_array_equal(m.predict(X), np.asarray(m.classes)[scores.argmax(1)])
    # a C grid of one-vs-rest models: nested vmap, one program
    ws = jax.vmap(
        lambda c: dcd_ovr(X, labels, C=c, key=key, tol=1e-6, max_iter=MAX_ITER).model.w
    )(jnp.array([0.5, 2.0]))
    np.testing.assert_allclose(ws[1], dcd_ovr(X, labels, C=2.0, key=key, tol=1e-6,
                                                max_iter=MAX_ITER).model.w, rtol=0, atol=1e-10)


def test_predict_ties_go_to_the_lowest_class():
    m = LinearSVM(w=jnp.zeros((3, 2)), b=jnp.array([1.0, 1.0, 0.0]), classes=("a", "b", "c"))
    assert list(m.predict(np.ones((2, 2)))) == ["a", "a"]
    # the binary tie rule (docs/learners.md): a decision value of exactly 0 gives +1
    binary = LinearSVM(w=jnp.array([1.0, 0.0]), b=jnp.array(0.0))
    np.testing.assert_array_equal(binary.predict(np.array([[1.0, 0], [0, 0], [-1, 0]])),
                                  [1, 1, -1])


# --- jit round-trips ---------------------------------------------------------------------------


def test_module_jit_round_trip_without_recompiling(small):
    X, y = small
    m = dcd(X, y, C=1.0, tol=1e-6, max_iter=MAX_ITER, key=jax.random.key(0)).model
    traces = []

    @eqx.filter_jit
    def score(model, Z):
        traces.append(1)  # runs only when tracing
        return model.decision_function(Z)

    rng = np.random.default_rng(0)
    Z1, Z2 = rng.standard_normal((10, D)), rng.standard_normal((10, D))
    np.testing.assert_allclose(score(m, Z1), Z1 @ np.asarray(m.w) + float(m.b), atol=1e-12)
    np.testing.assert_allclose(score(m, Z2), Z2 @ np.asarray(m.w) + float(m.b), atol=1e-12)
    assert len(traces) == 1
    back = eqx.filter_jit(lambda model: model)(m)
    assert isinstance(back, LinearSVM)
    np.testing.assert_array_equal(back.w, m.w)
    # refitting on new data of the same shape reuses the compiled solver
    before = _fit_binary._cache_size()
    dcd(X + 0.1, -y, C=2.0, tol=1e-6, max_iter=MAX_ITER, key=jax.random.key(1))
    assert _fit_binary._cache_size() == before
    # a one-vs-rest model (static classes) through filter_jit, predict inside
    o = dcd_ovr(X, (np.arange(N) % 3), C=1.0, tol=1e-6, max_iter=MAX_ITER,
                key=jax.random.key(0)).model
    pred = eqx.filter_jit(lambda model, Z: model.predict(Z))(o, Z1)
    np.testing.assert_array_equal(pred, o.predict(Z1))


# --- boundary checks, dtypes, the permutation ----------------------------------------------------


def test_validation_errors(small):
    X, y = small
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="-1 and \\+1"):
        dcd(X, (y > 0).astype(float), key=key)
    with pytest.raises(ValueError, match="one label per example"):
        dcd(X, y[:-1], key=key)
    with pytest.raises(ValueError, match="2-D"):
        dcd(X[0], y, key=key)
    with pytest.raises(ValueError, match="C must be a finite number > 0"):
        dcd(X, y, C=0.0, key=key)
    with pytest.raises(ValueError, match="C must be a finite number > 0"):
        dcd(X, y, C=-1.0, key=key)
    with pytest.raises(ValueError, match="loss"):
        dcd(X, y, loss="log", key=key)
    with pytest.raises(ValueError, match="class_weight"):
        dcd(X, y, class_weight=(1.0, 2.0, 3.0), key=key)
    with pytest.raises(ValueError, match="bias"):
        dcd(X, y, bias=-1.0, key=key)
    with pytest.raises(ValueError, match="max_iter"):
        dcd(X, y, max_iter=0, key=key)
    with pytest.raises(ValueError, match="2 classes"):
        dcd_ovr(X, np.zeros(N), key=key)
    with pytest.raises(ValueError, match="mapping label -> weight"):
        dcd_ovr(X, np.arange(N) % 3, class_weight=[1.0, 2.0], key=key)
    with pytest.raises(ValueError, match="not classes"):
        dcd_ovr(X, np.arange(N) % 3, class_weight={7: 2.0}, key=key)
    with pytest.raises(ValueError, match="every C"):
        dcd_grid(X, y, jnp.array([1.0, 0.0]), key=key)


def test_float32_inputs_train_in_float32(small):
    X, y = small
    m = dcd(X.astype(np.float32), y.astype(np.float32), C=1.0, tol=1e-4, max_iter=MAX_ITER,
            key=jax.random.key(0)).model
    assert m.w.dtype == jnp.float32 and m.b.dtype == jnp.float32
    ref = dcd(X, y, C=1.0, tol=1e-4, max_iter=MAX_ITER, key=jax.random.key(0)).model
    np.testing.assert_allclose(m.w, ref.w, atol=1e-3)


@pytest.mark.parametrize("n", [1, 2, 3, 17, 64, 65, 1000])
def test_random_permutation_is_a_permutation(n):
    k = jax.random.key(n)
    p = np.asarray(_random_permutation(k, n))
    np.testing.assert_array_equal(np.sort(p), np.arange(n))
    q = np.asarray(_random_permutation(jax.random.fold_in(k, 1), n))
    if n >= 17:
        assert not np.array_equal(p, q)


# --- against LinearSVC on real data: the TREC questions, bag of words -------------------------

@pytest.fixture(scope="module")
def trec():
    """2,000 training questions (a seeded sample: the file is sorted by class) and the 500 test
    questions as binary features of the 1,000 most frequent lowercase tokens, float64."""
    labels, tokens = _read_questions(require(SHARED_DATA / "trec" / "qc_train.tsv"))
    test_labels, test_tokens = _read_questions(require(SHARED_DATA / "trec" / "qc_test.tsv"))
    pick = np.sort(np.random.default_rng(0).choice(len(labels), 2000, replace=False))
    labels, tokens = labels[pick], [tokens[i] for i in pick]
    X, Xt = word_features(tokens, test_tokens, 1000)
    return X, labels, Xt, test_labels


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_binary_matches_linear_svc_on_trec(trec, loss):
    X, labels, Xt, test_labels = trec
    y, yt = np.where(labels == "HUM", 1.0, -1.0), np.where(test_labels == "HUM", 1.0, -1.0)
    C, bias = 0.5, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning
        sk = _linear_svc(loss=loss, C=C, intercept_scaling=bias).fit(X, y)
    sol = dcd(X, y, C=C, loss=loss, bias=bias, tol=1e-6, max_iter=100_000,
              key=jax.random.key(0))
    m = sol.model
    assert bool(sol.converged)
    ref = _as_model(sk.coef_[0], sk.intercept_[0])
    p_jk = float(primal_objective(m, X, y, C=C, loss=loss, bias=bias))
    p_sk = float(primal_objective(ref, X, y, C=C, loss=loss, bias=bias))
    assert abs(p_jk - p_sk) <= 1e-3 * p_sk
    assert float(sol.stats["dual_objective"]) <= p_jk * (1 + 1e-9)  # weak duality
    for F, t in ((X, y), (Xt, yt)):
        acc_jk = np.mean(np.asarray(m.predict(F)) == t)
        acc_sk = np.mean(sk.predict(F) == t)
        assert abs(acc_jk - acc_sk) <= 0.005, (acc_jk, acc_sk)


def test_ovr_matches_linear_svc_on_trec(trec):
    X, labels, Xt, test_labels = trec
    C = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sk = _linear_svc(C=C).fit(X, labels)
    sol = dcd_ovr(X, labels, C=C, tol=1e-6, max_iter=100_000, key=jax.random.key(0))
    m = sol.model
    assert m.classes == tuple(sk.classes_) and len(m.classes) == 6
    assert bool(jnp.all(sol.converged))
    p_jk = np.asarray(primal_objective(m, X, labels, C=C))
    p_sk = np.asarray(primal_objective(_as_model(sk.coef_, sk.intercept_, m.classes), X, labels,
                                       C=C))
    np.testing.assert_array_less(np.abs(p_jk - p_sk), 1e-3 * p_sk)
    for F, t in ((X, labels), (Xt, test_labels)):
        acc_jk = np.mean(np.asarray(m.predict(F)) == t)
        acc_sk = np.mean(sk.predict(F) == t)
        assert abs(acc_jk - acc_sk) <= 0.005, (acc_jk, acc_sk)
