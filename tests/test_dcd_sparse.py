"""jkern.svm.dcd on sparse features (`jkern.SparseRows`): the same solver as on the densified
matrix (same visit order, iterations and dual variables), against scikit-learn's LinearSVC on
the same scipy CSR matrix, one-vs-rest, vmap over C and over data, the model's scores, and
the boundary checks.

One problem shape and one max_iter everywhere: each (layout, loss, width) compiles once.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from helpers import _as_model, _linear_svc

from jkern import SparseRows
from jkern._rows import SparseRowsAccess
from jkern.errors import InputError
from jkern.svm import LinearSVM, dcd, dcd_grid, dcd_ovr, primal_objective

MAX_ITER = 20_000
N, D, NNZ = 300, 500, 10


@pytest.fixture(scope="module")
def problem():
    """A random CSR matrix (about NNZ nonzeros per row; repeated columns are merged, so rows
    differ in length and the SparseRows has padding), its SparseRows and dense forms, and
    labels from a sparse teacher with noise."""
    rng = np.random.default_rng(11)
    rows = np.repeat(np.arange(N), NNZ)
    cols = rng.integers(0, D, N * NNZ)
    vals = rng.standard_normal(N * NNZ) / np.sqrt(NNZ)
    csr = sp.csr_matrix((vals, (rows, cols)), shape=(N, D))
    csr.sum_duplicates()
    coo = csr.tocoo()
    S = SparseRows.from_coo(coo.row, coo.col, coo.data, (N, D))
    X = csr.toarray()
    assert np.any(np.asarray(S.values) == 0)  # some padding
    teacher = np.where(rng.random(D) < 0.3, rng.standard_normal(D), 0.0)
    y = np.where(X @ teacher + 0.2 * rng.standard_normal(N) > 0, 1.0, -1.0)
    return csr, S, X, y


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_sparse_equals_dense(problem, loss):
    _, S, X, y = problem
    for bias, cw in ((1.0, None), (None, {1: 2.0, -1: 0.5}), (0.5, "balanced")):
        kw = dict(C=0.8, loss=loss, bias=bias, class_weight=cw, tol=1e-6, max_iter=MAX_ITER,
                  key=jax.random.key(2))
        sp_, de = dcd(S, y, **kw), dcd(X, y, **kw)
        assert bool(sp_.converged) and bool(de.converged)
        # the same visit orders (same key, same n) give the same path: same epochs, same α
        assert int(sp_.stats["n_iter"]) == int(de.stats["n_iter"])
        np.testing.assert_allclose(sp_.stats["alpha"], de.stats["alpha"], rtol=0, atol=1e-10)
        np.testing.assert_allclose(sp_.model.w, de.model.w, rtol=0, atol=1e-10)
        np.testing.assert_allclose(sp_.model.b, de.model.b, rtol=0, atol=1e-10)
        np.testing.assert_allclose(sp_.stats["dual_objective"], de.stats["dual_objective"],
                                   rtol=1e-12)
        assert sp_.model.w.dtype == jnp.float64 and sp_.model.w.shape == (D,)
        if not bias:
            assert float(sp_.model.b) == 0.0
        # the model scores SparseRows and dense rows alike; the primal too
        np.testing.assert_allclose(sp_.model.decision_function(S),
                                   de.model.decision_function(X), rtol=0, atol=1e-10)
        np.testing.assert_array_equal(sp_.model.predict(S), de.model.predict(X))
        pkw = dict(C=0.8, loss=loss, bias=bias, class_weight=cw)
        p_sp = float(primal_objective(sp_.model, S, y, **pkw))
        np.testing.assert_allclose(p_sp, float(primal_objective(de.model, X, y, **pkw)),
                                   rtol=1e-12)
        assert float(sp_.stats["dual_objective"]) <= p_sp * (1 + 1e-9)


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_sparse_matches_linear_svc_on_csr(problem, loss):
    csr, S, _, y = problem
    C, bias = 0.8, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning
        sk = _linear_svc(loss=loss, C=C, intercept_scaling=bias).fit(csr, y)
    sol = dcd(S, y, C=C, loss=loss, bias=bias, tol=1e-6, max_iter=MAX_ITER,
              key=jax.random.key(0))
    assert bool(sol.converged)
    p_jk = float(primal_objective(sol.model, S, y, C=C, loss=loss, bias=bias))
    p_sk = float(primal_objective(_as_model(sk.coef_[0], sk.intercept_[0]), S, y, C=C,
                                  loss=loss, bias=bias))
    assert abs(p_jk - p_sk) <= 1e-3 * p_sk
    np.testing.assert_array_equal(np.asarray(sol.model.predict(S)) == y, sk.predict(csr) == y)


def test_ovr_sparse_equals_dense(problem):
    _, S, X, _ = problem
    labels = np.random.default_rng(3).integers(0, 3, N) * 10 + 5
    kw = dict(C=1.0, tol=1e-6, max_iter=MAX_ITER, key=jax.random.key(6),
              class_weight={5: 1.0, 15: 2.0, 25: 0.5})
    a, b = dcd_ovr(S, labels, **kw), dcd_ovr(X, labels, **kw)
    assert a.model.classes == (5, 15, 25) and a.model.w.shape == (3, D)
    np.testing.assert_array_equal(a.stats["n_iter"], b.stats["n_iter"])
    f_sp, f_de = a.model.decision_function(S), b.model.decision_function(X)
    assert f_sp.shape == (N, 3)
    np.testing.assert_allclose(f_sp, f_de, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.model.decision_function(X), f_sp, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.model.predict(S), b.model.predict(X))
    np.testing.assert_allclose(primal_objective(a.model, S, labels, C=1.0),
                               primal_objective(b.model, X, labels, C=1.0), rtol=1e-12)


def test_vmap_over_C_and_over_values(problem):
    _, S, X, y = problem
    key = jax.random.key(3)
    kw = dict(loss="hinge", tol=1e-6, max_iter=MAX_ITER, key=key)
    Cs = jnp.array([0.05, 0.8, 5.0])
    grid = jax.vmap(lambda c: dcd(S, y, C=c, **kw))(Cs)
    assert grid.model.w.shape == (3, D)
    for j, c in enumerate(np.asarray(Cs)):
        one = dcd(S, y, C=float(c), **kw)
        np.testing.assert_allclose(grid.model.w[j], one.model.w, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grid.stats["alpha"][j], one.stats["alpha"], rtol=0,
                                   atol=1e-10)
        assert int(grid.stats["n_iter"][j]) == int(one.stats["n_iter"])
    np.testing.assert_array_equal(dcd_grid(S, y, Cs, **kw).model.w, grid.model.w)
    # a grid's [3, d] weights score SparseRows as they score the dense rows
    np.testing.assert_allclose(grid.model.decision_function(S),
                               grid.model.decision_function(X), rtol=0, atol=1e-12)
    # vmap over the values (shared indices): members trained one after the other
    scales = jnp.array([1.0, 2.0])
    many = jax.vmap(lambda s: dcd(SparseRows(S.indices, s * S.values, D), y, C=0.8, **kw))(
        scales)
    for j, s in enumerate(np.asarray(scales)):
        one = dcd(SparseRows(S.indices, s * S.values, D), y, C=0.8, **kw)
        np.testing.assert_allclose(many.model.w[j], one.model.w, rtol=0, atol=1e-10)


def test_float32_values_train_in_float32(problem):
    _, S, _, y = problem
    kw = dict(C=0.8, loss="hinge", tol=1e-4, max_iter=MAX_ITER, key=jax.random.key(0))
    m = dcd(S.astype(jnp.float32), y, **kw).model
    assert m.w.dtype == jnp.float32 and m.b.dtype == jnp.float32
    np.testing.assert_allclose(m.w, dcd(S, y, **kw).model.w, atol=1e-3)


def test_sq_norms_with_repeated_columns():
    # a row may name a column twice (its entries add up, as in todense): ‖x_i‖² stays exact
    S = SparseRows(jnp.array([[3, 1, 3, 0], [2, 2, 2, 0], [0, 0, 0, 0]]),
                   jnp.array([[1.0, 2.0, 0.5, 0.0], [1.0, -1.0, 4.0, 0.0], [0.0, 0.0, 0.0, 0.0]]),
                   5)
    want = np.sum(np.asarray(S.todense()) ** 2, axis=1)
    np.testing.assert_allclose(SparseRowsAccess(S).sq_norms(), want, rtol=1e-15)


def test_bad_sparse_input(problem):
    _, S, X, y = problem
    key = jax.random.key(0)
    with pytest.raises(InputError, match="one label per example"):
        dcd(S.rows(np.arange(N - 1)), y, key=key)
    with pytest.raises(InputError, match="labels must be \\[n\\] = \\[299\\]"):
        dcd_ovr(S.rows(np.arange(N - 1)), np.arange(N) % 3, key=key)
    bad = SparseRows(S.indices.at[0, 0].set(D), S.values, D)
    with pytest.raises(InputError, match="outside"):
        dcd(bad, y, key=key)
    with pytest.raises(InputError, match="X holds NaN"):
        dcd(SparseRows(S.indices, S.values.at[1, 0].set(jnp.nan), D), y, key=key)
    m = LinearSVM(w=jnp.zeros(D + 1), b=jnp.array(0.0))
    with pytest.raises(InputError, match="the model has 501"):
        m.decision_function(S)
    with pytest.raises(InputError, match="the model has 501"):
        primal_objective(m, S, y)
