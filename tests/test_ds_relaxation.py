"""Grave (2014)'s relaxation (`jkern.ds`) against an independent reference.

The reference is cvxpy (CLARABEL, an interior-point method) on the primal problem in its
original ridge form, min over (Y, W, xi): nothing of the dual, the step sizes or the primal
bound the solver uses.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import ds
from jkern.errors import InputError

cp = pytest.importorskip("cvxpy")


def instance(seed: int, n: int, d: int, k: int, *, sparse: bool):
    """Mentions grouped into pairs (every pair has one), random KB relations (some pairs
    multi-label, some all NA) and features, dense Gaussian or sparse nonnegative."""
    rng = np.random.default_rng(seed)
    p = max(2, n // 3)
    mention_pair = np.concatenate([np.arange(p), rng.integers(0, p, n - p)])
    relations = rng.random((p, k)) < 0.25
    if sparse:
        x = (rng.random((n, d)) < 0.08) * rng.random((n, d))
    else:
        x = rng.normal(size=(n, d)) / np.sqrt(d)
    return x, mention_pair, relations


def cvxpy_reference(x, mention_pair, relations, lam, mu, at_least=1.0):
    """The primal in its ridge form (before Woodbury): 1/2 tr(Y^T Q^-1 Y) is
    min_W (||Y - X W||^2 + lam ||W||^2) / (2 lam), so cvxpy minimizes over (Y, W, xi)."""
    n, d = x.shape
    p, k = relations.shape
    incidence = np.zeros((p, n))
    incidence[mention_pair, np.arange(n)] = 1.0
    sign = np.zeros((p, k + 1))
    sign[:, 1:] = np.where(relations, 1.0, -1.0)
    bound = np.zeros((p, k + 1))
    bound[:, 1:] = np.where(relations, at_least, 0.0)
    y = cp.Variable((n, k + 1))
    w = cp.Variable((d, k + 1))
    xi = cp.Variable((p, k + 1))
    objective = (cp.sum_squares(y - x @ w) + lam * cp.sum_squares(w)) / (2 * lam) \
        + mu * cp.sum(xi)
    problem = cp.Problem(
        cp.Minimize(objective),
        [y >= 0, cp.sum(y, axis=1) == 1, cp.multiply(sign, incidence @ y) >= bound - xi,
         xi >= 0])
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert problem.status == "optimal"
    return problem.value, y.value


CASES = [  # seed, mentions, features, relations, sparse, lam, mu
    (0, 60, 10, 3, False, 0.5, 2.0),
    (1, 120, 40, 4, True, 1.0, 1.0),
    (2, 200, 30, 5, False, 0.1, 5.0),
    (3, 300, 100, 10, True, 2.0, 0.5),
    (4, 150, 5, 2, False, 1.0, 10.0),
    (5, 90, 200, 6, True, 0.3, 1.0),
]


@pytest.mark.parametrize("case", CASES, ids=[f"n{c[1]}-{'sparse' if c[4] else 'dense'}"
                                             for c in CASES])
def test_matches_cvxpy(case) -> None:
    seed, n, d, k, sparse, lam, mu = case
    x, mp, rel = instance(seed, n, d, k, sparse=sparse)
    ref_value, _ = cvxpy_reference(x, mp, rel, lam, mu)
    features = jkern.SparseRows.from_dense(x) if sparse else x
    tol = 1e-8
    sol = ds.fit(features, mp, rel, lam=lam, mu=mu, tol=tol, method="fista", max_iter=100_000,
                 throw=True, key=None)
    st = sol.stats
    primal = float(st["primal"])
    assert abs(primal - ref_value) <= 1e-6 * abs(ref_value), (primal, ref_value)
    assert float(st["gap"]) <= tol
    # the reported primal is the exact objective of the returned, feasible Y
    y = np.asarray(st["Y"])
    assert y.min() >= -1e-12 and np.abs(y.sum(axis=1) - 1).max() <= 1e-9
    exact = ds.primal_objective(x, y, mp, rel, lam=lam, mu=mu)
    assert exact <= primal * (1 + 1e-9) + 1e-12
    assert abs(exact - ref_value) <= 1e-6 * abs(ref_value)
    # weak duality: the dual value is below the optimum
    assert float(st["dual"]) <= ref_value * (1 + 1e-9)


@pytest.mark.parametrize(("case", "key"), [(CASES[0], None), (CASES[5], 0)],
                         ids=["n60-dense-cyclic", "n90-sparse-shuffled"])
def test_block_coordinate_ascent_matches_cvxpy(case, key) -> None:
    seed, n, d, k, sparse, lam, mu = case
    x, mp, rel = instance(seed, n, d, k, sparse=sparse)
    ref_value, _ = cvxpy_reference(x, mp, rel, lam, mu)
    features = jkern.SparseRows.from_dense(x) if sparse else x
    sol = ds.fit(features, mp, rel, lam=lam, mu=mu, tol=1e-8, method="bcd", max_iter=20_000,
                 key=None if key is None else jax.random.PRNGKey(key), throw=True)
    st = sol.stats
    assert abs(float(st["primal"]) - ref_value) <= 1e-6 * abs(ref_value)
    assert float(st["gap"]) <= 1e-8
    y = np.asarray(st["Y"])
    exact = ds.primal_objective(x, y, mp, rel, lam=lam, mu=mu)
    assert abs(exact - ref_value) <= 1e-6 * abs(ref_value)
    # the same classifier as FISTA's to the precision of the solves
    fista = ds.fit(features, mp, rel, lam=lam, mu=mu, tol=1e-10, method="fista",
                   max_iter=200_000, key=None)
    np.testing.assert_allclose(sol.model.decision_function(features),
                               fista.model.decision_function(features), atol=2e-3)


def test_block_coordinate_ascent_on_blocks_and_vmap() -> None:
    x, mp, rel = instance(14, 90, 20, 3, sparse=True)
    blocks = (jkern.SparseRows.from_dense(x[:, :12]), x[:, 12:])
    kw = dict(lam=0.5, mu=2.0, tol=1e-9, method="bcd", max_iter=20_000, key=None)
    whole = ds.fit(x, mp, rel, **kw)
    split = ds.fit(blocks, mp, rel, **kw)
    np.testing.assert_allclose(split.stats["Y"], whole.stats["Y"], atol=1e-9)

    def gap(lam, mu):
        return ds.fit(x, mp, rel, lam=lam, mu=mu, tol=1e-6, method="bcd",
                      max_iter=20_000, key=None).stats["primal"]

    lams, mus = jnp.asarray([0.5, 2.0]), jnp.asarray([1.0, 4.0])
    np.testing.assert_allclose(jax.vmap(gap)(lams, mus), [gap(0.5, 1.0), gap(2.0, 4.0)],
                               rtol=1e-9)


@pytest.mark.parametrize(("case", "primal_steps", "sweeps"),
                         [*[(c, 150, 15) for c in CASES], (CASES[2], 5, 1)],
                         ids=[*[f"n{c[1]}-{'sparse' if c[4] else 'dense'}" for c in CASES],
                              "n200-dense-short-cycles"])
def test_hybrid_matches_cvxpy(case, primal_steps, sweeps) -> None:
    seed, n, d, k, sparse, lam, mu = case
    x, mp, rel = instance(seed, n, d, k, sparse=sparse)
    ref_value, _ = cvxpy_reference(x, mp, rel, lam, mu)
    features = jkern.SparseRows.from_dense(x) if sparse else x
    sol = ds.fit(features, mp, rel, lam=lam, mu=mu, tol=1e-8, method="hybrid",
                 primal_steps=primal_steps, check_every=sweeps, max_iter=2_000, throw=True,
                 key=None)
    st = sol.stats
    assert abs(float(st["primal"]) - ref_value) <= 1e-6 * abs(ref_value)
    assert float(st["gap"]) <= 1e-8
    assert float(st["dual"]) <= ref_value * (1 + 1e-9)
    assert int(st["sweeps"]) == sweeps * int(st["n_iter"])
    if primal_steps == 5:  # short cycles: several, and the best bound never rises
        history = np.asarray(st["history"])[: int(st["n_iter"])]
        assert len(history) > 1 and np.all(np.diff(history[:, 0]) <= 0)
        assert np.all(np.diff(history[:, 1]) >= 0)
    y = np.asarray(st["Y"])
    assert y.min() >= -1e-12 and np.abs(y.sum(axis=1) - 1).max() <= 1e-9
    exact = ds.primal_objective(x, y, mp, rel, lam=lam, mu=mu)
    assert exact <= float(st["primal"]) * (1 + 1e-9) + 1e-12
    assert abs(exact - ref_value) <= 1e-6 * abs(ref_value)


def test_hybrid_on_blocks_and_vmap() -> None:
    x, mp, rel = instance(14, 90, 20, 3, sparse=True)
    # one feature in every mention, much larger than the rest: sigma_max(X)^2 / lam large
    x = np.concatenate([x, np.full((90, 1), 3.0)], axis=1)
    blocks = (jkern.SparseRows.from_dense(x[:, :12]), x[:, 12:])
    kw = dict(lam=0.5, mu=2.0, tol=1e-9, method="hybrid", primal_steps=20, check_every=2)
    whole = ds.fit(x, mp, rel, **kw, key=None)
    split = ds.fit(blocks, mp, rel, **kw, key=None)
    assert float(whole.stats["gap"]) <= 1e-9 and float(split.stats["gap"]) <= 1e-9
    np.testing.assert_allclose(split.stats["primal"], whole.stats["primal"], rtol=1e-8)
    np.testing.assert_allclose(split.model.decision_function(blocks),
                               whole.model.decision_function(x), atol=1e-3)

    def primal(lam, mu):
        return ds.fit(x, mp, rel, lam=lam, mu=mu, tol=1e-9, method="hybrid",
                      primal_steps=20, check_every=2, key=None).stats["primal"]

    lams, mus = jnp.asarray([0.5, 2.0]), jnp.asarray([1.0, 4.0])
    np.testing.assert_allclose(jax.vmap(primal)(lams, mus),
                               [primal(0.5, 1.0), primal(2.0, 4.0)], rtol=1e-8)


def test_dense_and_sparse_give_the_same_labelling() -> None:
    x, mp, rel = instance(7, 120, 25, 4, sparse=True)
    kw = dict(lam=0.7, mu=2.0, tol=1e-10, method="fista", max_iter=100_000)
    dense = ds.fit(x, mp, rel, **kw, key=None)
    sparse = ds.fit(jkern.SparseRows.from_dense(x), mp, rel, **kw, key=None)
    blocks = ds.fit((jkern.SparseRows.from_dense(x[:, :10]), x[:, 10:]), mp, rel, **kw, key=None)
    for other in (sparse, blocks):
        np.testing.assert_allclose(other.stats["Y"], dense.stats["Y"], atol=1e-9)
        np.testing.assert_allclose(other.stats["primal"], dense.stats["primal"], rtol=1e-12)
        xs = jkern.SparseRows.from_dense(x)
        np.testing.assert_allclose(
            sparse.model.decision_function(xs), dense.model.decision_function(x), atol=1e-9)


def test_vmap_over_lam_and_mu_matches_a_loop() -> None:
    x, mp, rel = instance(8, 80, 12, 3, sparse=False)
    lams = jnp.asarray([0.3, 1.0, 3.0])
    mus = jnp.asarray([0.5, 2.0, 8.0])

    def solve(lam, mu):
        st = ds.fit(x, mp, rel, lam=lam, mu=mu, tol=1e-9, method="fista",
                    max_iter=50_000, key=None).stats
        return st["primal"], st["gap"], st["Y"]

    primal, gap, y = jax.vmap(solve)(lams, mus)
    for i in range(3):
        p1, g1, y1 = solve(float(lams[i]), float(mus[i]))
        assert float(gap[i]) <= 1e-9
        np.testing.assert_allclose(primal[i], p1, rtol=1e-8)
        np.testing.assert_allclose(y[i], y1, atol=1e-5)


def test_step_size_bound_holds() -> None:
    """The smoothness bound behind the step: ||A theta||^2 <= 3 theta^T M theta for the dual
    map A(Lam, Sig, nu) = E^T (S o Lam) + Sig + nu 1^T, M = diag(n_p, 1, C)."""
    rng = np.random.default_rng(9)
    _, mp, rel = instance(9, 50, 3, 4, sparse=False)
    cons = ds.constraints(mp, rel)
    n, c, p = 50, 5, cons.n_pairs
    size = np.bincount(mp, minlength=p)
    worst = 0.0
    for _ in range(200):
        lam = rng.normal(size=(p, c))
        sig = rng.normal(size=(n, c))
        nu = rng.normal(size=n)
        z = (np.asarray(cons.sign) * lam)[mp] + sig + nu[:, None]
        metric = (size[:, None] * lam ** 2).sum() + (sig ** 2).sum() + c * (nu ** 2).sum()
        worst = max(worst, (z ** 2).sum() / metric)
    assert worst <= 3.0


def test_spectral_norm_matches_numpy() -> None:
    x, _, _ = instance(10, 70, 30, 2, sparse=True)
    est = float(ds.spectral_norm_sq(jkern.SparseRows.from_dense(x)))
    exact = np.linalg.norm(x, 2) ** 2
    assert exact * (1 - 1e-5) <= est <= exact * (1 + 1e-9)


def test_project_rows_simplex_matches_bisection() -> None:
    """Against the projection's optimality condition solved by bisection: y = max(v - t, 0)
    with t such that sum y = 1 (sum max(v - t, 0) decreases in t)."""
    rng = np.random.default_rng(11)
    v = rng.normal(size=(40, 5)) * 2
    v[:10] = np.round(v[:10])  # ties, on and off the threshold
    v[10] = [0.2, 0.2, 0.2, 0.2, 0.2]  # already on the simplex
    v[11] = [5.0, -3.0, -3.0, -3.0, -3.0]  # one vertex
    v[12] = [1e6, 1e6, -1e6, 0.0, 0.0]  # far away, a tie at the top
    wide = rng.exponential(size=(20, 40)) * (rng.random((20, 40)) < 0.3)  # many classes
    got = [np.asarray(ds.project_rows_simplex(jnp.asarray(a))) for a in (v, wide)]
    for row, out in [*zip(v, got[0]), *zip(wide, got[1])]:
        assert out.min() >= 0 and abs(out.sum() - 1) <= 1e-12
        lo, hi = row.min() - 1.0, row.max()
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if np.maximum(row - mid, 0).sum() > 1 else (lo, mid)
        np.testing.assert_allclose(out, np.maximum(row - lo, 0), atol=1e-12)


def test_aggregation() -> None:
    scores = jnp.asarray([[0.1, 0.9], [0.5, 0.2], [0.3, 0.4]])
    mp = np.array([0, 0, 1])
    np.testing.assert_allclose(ds.aggregate_pairs(scores, mp, 2), [[0.5, 0.9], [0.3, 0.4]])
    np.testing.assert_allclose(ds.aggregate_pairs(scores, mp, 2, aggregate="mean"),
                               [[0.3, 0.55], [0.3, 0.4]])
    np.testing.assert_allclose(ds.aggregate_pairs(scores, mp, 2, aggregate="noisy_or"),
                               [[1 - 0.9 * 0.5, 1 - 0.1 * 0.8], [0.3, 0.4]])
    with pytest.raises(InputError, match="aggregate"):
        ds.aggregate_pairs(scores, mp, 2, aggregate="sum")


def test_bad_input_is_refused() -> None:
    x, mp, rel = instance(12, 30, 4, 2, sparse=False)
    with pytest.raises(InputError, match="method"):
        ds.fit(x, mp, rel, method="newton", key=None)
    with pytest.raises(InputError, match="key"):
        ds.fit(x, mp, rel, key=jax.random.PRNGKey(0))
    with pytest.raises(InputError, match="refine"):
        ds.fit(x, mp, rel, refine=-1, key=None)
    with pytest.raises(InputError, match="concrete"):
        jax.jit(lambda v: ds.fit(v, mp, rel, method="bcd", key=None).stats["gap"])(x)
    with pytest.raises(InputError, match="concrete"):
        jax.jit(lambda v: ds.fit(v, mp, rel, method="hybrid", key=None).stats["gap"])(x)
    with pytest.raises(InputError, match="primal_steps"):
        ds.fit(x, mp, rel, method="hybrid", primal_steps=0, key=None)
    with pytest.raises(InputError, match="no mention"):
        ds.fit(x, mp, np.vstack([rel, rel[:1]]), key=None)
    with pytest.raises(InputError, match="mention_pair has"):
        ds.fit(x[:-1], mp, rel, key=None)
    with pytest.raises(InputError, match="lam"):
        ds.fit(x, mp, rel, lam=0.0, key=None)
    with pytest.raises(InputError, match="mu"):
        ds.fit(x, mp, rel, mu=-1.0, key=None)
    with pytest.raises(InputError, match="NaN or inf"):
        ds.fit(np.where(np.arange(4) == 2, np.nan, x), mp, rel, key=None)
    with pytest.raises(InputError, match="booleans"):
        ds.fit(x, mp, rel * 2, key=None)
    with pytest.raises(InputError, match="classes"):
        ds.fit(x, mp, rel, classes=("NA", "a"), key=None)
    with pytest.raises(InputError, match="2-D"):
        ds.fit(x[:, 0], mp, rel, key=None)


def test_not_converged_is_reported() -> None:
    x, mp, rel = instance(13, 60, 10, 3, sparse=False)
    sol = ds.fit(x, mp, rel, tol=1e-12, method="fista", max_iter=20, check_every=10, key=None)
    assert int(sol.result) != int(jkern.RESULTS.successful)
    with pytest.raises(jkern.errors.ConvergenceError):
        ds.fit(x, mp, rel, tol=1e-12, method="fista", max_iter=20, check_every=10,
               throw=True, key=None)


def test_the_default_method_follows_the_features() -> None:
    """hybrid for concrete features; FISTA (products only) when x is traced."""
    x, mp, rel = instance(15, 60, 8, 3, sparse=False)
    concrete = ds.fit(x, mp, rel, tol=1e-8, key=None)
    assert "sweeps" in concrete.stats and float(concrete.stats["gap"]) <= 1e-8
    traced = jax.jit(lambda v: ds.fit(v, mp, rel, tol=1e-8, max_iter=100_000, key=None).stats)(
        jnp.asarray(x))
    assert "restarts" in traced and float(traced["gap"]) <= 1e-8
    np.testing.assert_allclose(traced["primal"], concrete.stats["primal"], rtol=1e-7)
