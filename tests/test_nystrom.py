"""Nyström projectors: exact reconstruction with m = n, save/load round trips, landmark
sampling, and the kernel SVM baseline against exact and LIBSVM solutions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from data_paths import require

import jkern
from jkern.svm import ksvm, ksvm_ovr

N = 80


@pytest.fixture(scope="module")
def trec(shared_data):
    from jkern.data import load_trec

    require(shared_data / "trec" / "qc_train.tsv")
    data = load_trec(shared_data, "train")
    # the file is sorted by class: a seeded sample covers all six
    idx = np.random.default_rng(0).choice(len(data.trees), N, replace=False)
    return [data.trees[i] for i in idx], np.asarray(data.coarse)[idx]


@pytest.fixture(scope="module")
def kernel():
    return jkern.Normalized(jkern.PTK(0.4, 0.4))


@pytest.fixture(scope="module")
def gram(trec, kernel):
    return np.asarray(jkern.gram(kernel, trec[0], dtype="float64"))


def test_all_inputs_as_landmarks_reconstruct_the_gram_exactly(trec, kernel, gram):
    proj = jkern.fit_nystrom(kernel, trec[0], landmarks=N, key=jax.random.PRNGKey(0),
                             dtype="float64", rcond=1e-12)
    x = np.asarray(proj.embed(trec[0], dtype="float64"))
    assert x.shape == (N, proj.rank)
    np.testing.assert_allclose(x @ x.T, gram, rtol=0, atol=1e-8)
    assert jkern.approximation_error(gram, x) < 1e-8


def test_fewer_landmarks_approximate_and_landmark_rows_are_exact(trec, kernel, gram):
    key = jax.random.PRNGKey(3)
    proj = jkern.fit_nystrom(kernel, trec[0], landmarks=30, key=key, dtype="float64")
    x = np.asarray(proj.embed(trec[0], dtype="float64"))
    err = jkern.approximation_error(gram, x)
    assert 1e-4 < err < 0.5
    idx = jkern.select_landmarks(N, 30, key=key)
    # a landmark's kernel row against the other landmarks is reproduced exactly
    np.testing.assert_allclose((x @ x.T)[np.ix_(idx, idx)], gram[np.ix_(idx, idx)], atol=1e-8)
    # precomputed columns give the same embedding as the forest path
    np.testing.assert_allclose(proj.embed_columns(jnp.asarray(gram[:, idx])), x, atol=1e-12)


def test_rank_deficient_landmarks_drop_components(trec, kernel):
    trees = trec[0][:10]
    proj = jkern.fit_nystrom(kernel, trees + trees, landmarks=20,
                             key=jax.random.PRNGKey(0), dtype="float64")
    assert proj.n_landmarks == 20 and proj.rank <= 10  # duplicates add no component


def test_projector_save_load_round_trip_is_bit_identical(trec, kernel, tmp_path):
    trees, labels = trec
    proj = jkern.fit_nystrom(kernel, trees, landmarks=12, key=jax.random.PRNGKey(1),
                             labels=labels, dtype="float64")
    path = tmp_path / "p.npz"
    jkern.save(path, proj)
    again = jkern.load(path)
    assert again.landmarks == proj.landmarks
    np.testing.assert_array_equal(again.embed(trees, dtype="float64"),
                                  proj.embed(trees, dtype="float64"))
    ens = jkern.fit_nystrom_ensemble(kernel, trees, landmarks=6, projections=3,
                                     key=jax.random.PRNGKey(2), dtype="float64")
    jkern.save(tmp_path / "e.npz", ens)
    x = ens.embed(trees, dtype="float64")
    assert x.shape[1] == sum(m.rank for m in ens.members)
    assert ens.rank == x.shape[1]
    np.testing.assert_array_equal(jkern.load(tmp_path / "e.npz").embed(
        trees, dtype="float64"), x)
    # the ensemble's inner products average the members' approximations
    parts = [np.asarray(m.embed(trees, dtype="float64")) for m in ens.members]
    np.testing.assert_allclose(np.asarray(x @ x.T), sum(p @ p.T for p in parts) / 3,
                               atol=1e-12)


def test_landmark_sampling():
    key = jax.random.PRNGKey(5)
    a = jkern.select_landmarks(100, 10, key=key)
    assert len(set(a.tolist())) == 10
    np.testing.assert_array_equal(a, jkern.select_landmarks(100, 10, key=key))
    labels = np.array(["a"] * 70 + ["b"] * 25 + ["c"] * 5)
    s = jkern.select_landmarks(100, 20, key=key, labels=labels)
    counts = {c: int(np.sum(labels[s] == c)) for c in "abc"}
    assert counts == {"a": 14, "b": 5, "c": 1} and len(set(s.tolist())) == 20
    with pytest.raises(ValueError, match="landmarks"):
        jkern.select_landmarks(5, 6, key=key)


def test_nystrom_projection_is_jittable_and_vmappable():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 6, 4))
    ws = jnp.asarray(a @ np.swapaxes(a, 1, 2))  # rank 4 of 6
    hs, keep = jax.vmap(jax.jit(lambda w: jkern.nystrom_projection(w, rcond=1e-10)))(ws)
    assert keep.sum(axis=1).tolist() == [4, 4, 4]
    for w, h in zip(ws, hs):  # W H Hᵀ W = W (H Hᵀ is W's pseudo-inverse)
        np.testing.assert_allclose(w @ h @ h.T @ w, w, atol=1e-9)


# --------------------------------------------------------------------------- kernel SVM


def _exact_dual(k, y, c):
    """The C-SVM dual by scipy's SLSQP on a small problem (an independent solver)."""
    from scipy.optimize import minimize

    q = (y[:, None] * y[None, :]) * k
    res = minimize(lambda a: 0.5 * a @ q @ a - a.sum(), np.zeros(len(y)),
                   jac=lambda a: q @ a - 1, method="SLSQP", bounds=[(0, c)] * len(y),
                   constraints=[{"type": "eq", "fun": lambda a: a @ y, "jac": lambda a: y}],
                   options={"ftol": 1e-14, "maxiter": 2000})
    assert res.success
    return res.fun


def test_ksvm_dual_objective_matches_an_exact_solver(gram, trec):
    y = np.where(trec[1][:40] == "HUM", 1.0, -1.0)
    k = gram[:40, :40]
    for c in (0.5, 5.0):
        sol = ksvm(k, y, C=c, tol=1e-8)
        assert bool(sol.converged)
        want = _exact_dual(k, y, c)
        assert float(sol.stats["dual_objective"]) == pytest.approx(want, rel=1e-6)


def test_ksvm_matches_libsvm_on_real_trees(gram, trec):
    from sklearn.svm import SVC

    y = np.where(trec[1] == "ENTY", 1, -1)
    sol = ksvm(gram, y, C=1.0, tol=1e-5)
    model = sol.model
    ref = SVC(kernel="precomputed", C=1.0, tol=1e-5, shrinking=False).fit(gram, y)
    np.testing.assert_array_equal(model.support, np.sort(ref.support_))
    coef = np.zeros(N)
    coef[ref.support_] = ref.dual_coef_[0]
    ref_obj = 0.5 * coef @ gram @ coef - np.abs(coef).sum()
    assert float(sol.stats["dual_objective"]) == pytest.approx(ref_obj, rel=1e-6)
    np.testing.assert_allclose(model.coef, coef, atol=1e-3)
    np.testing.assert_array_equal(model.predict(gram), ref.predict(gram))


def test_ksvm_one_vs_rest_is_the_per_class_models(gram, trec):
    labels = trec[1]
    ovr = ksvm_ovr(gram, labels, C=2.0, tol=1e-6).model
    assert ovr.classes == tuple(sorted(set(labels.tolist())))
    for c, name in enumerate(ovr.classes):
        one = ksvm(gram, np.where(labels == name, 1, -1), C=2.0, tol=1e-6).model
        np.testing.assert_allclose(ovr.coef[c], one.coef, atol=1e-12)
        assert float(ovr.intercept[c]) == pytest.approx(float(one.intercept), abs=1e-12)
    assert (ovr.predict(gram) == labels).mean() > 0.9  # training accuracy


def test_ksvm_rejects_bad_input(gram):
    with pytest.raises(ValueError, match="square"):
        ksvm(gram[:, :5], np.ones(N))
    with pytest.raises(ValueError, match=r"only -1 and \+1"):
        ksvm(gram, np.zeros(N))
    with pytest.raises(ValueError, match="both classes"):
        ksvm(gram, np.ones(N))
