"""The cutting-plane SVM (uSVM / SDAG / SDAG+ / forest) and its 1-slack dual QP.

References are independent of the code under test: an active-set enumeration for the QP, a
bisection for the capped-simplex projection, L-BFGS-B on the n-slack dual for the exact
CPA's optimum, and Delta counts from tree-by-tree production matching.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern.data import load_trec
from jkern.errors import InputError
from jkern.svm import (
    cpa,
    delta_counts,
    draw_sample,
    solve_one_slack_dual,
    svm_light_C,
)
from jkern.svm._qp import project_capped_simplex

jax.config.update("jax_enable_x64", True)

KERNEL = jkern.Normalized(jkern.SST(0.4))


# --------------------------------------------------------------------------- QP


def _exact_one_slack(gram, d, c):
    """Max d.a - a'Ga/2, a >= 0, sum a <= c by enumerating supports and the sum constraint."""
    t = len(d)
    best, best_a = -np.inf, None
    for size in range(0, t + 1):
        for support in itertools.combinations(range(t), size):
            s = list(support)
            for tight in (False, True):
                a = np.zeros(t)
                nu = 0.0
                if s:
                    if tight:  # G_ss a_s + nu 1 = d_s, 1'a_s = c
                        m = np.zeros((len(s) + 1, len(s) + 1))
                        m[:-1, :-1] = gram[np.ix_(s, s)]
                        m[:-1, -1] = 1
                        m[-1, :-1] = 1
                        sol = np.linalg.solve(m, np.concatenate([d[s], [c]]))
                        a[s], nu = sol[:-1], sol[-1]
                    else:
                        a[s] = np.linalg.solve(gram[np.ix_(s, s)], d[s])
                elif tight:
                    continue
                grad = d - gram @ a - nu
                ok = (np.all(a[s] > -1e-12) and a.sum() <= c + 1e-9 and nu >= -1e-12
                      and np.all(grad[[i for i in range(t) if i not in s]] <= 1e-9))
                if ok:
                    val = d @ a - 0.5 * a @ gram @ a
                    if val > best:
                        best, best_a = val, a
    return best_a, best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("c", [0.05, 1.0, 100.0])
def test_one_slack_dual_matches_active_set_enumeration(seed, c):
    rng = np.random.default_rng(seed)
    t = 1 + seed % 5
    g = rng.normal(size=(t, 3 + t))
    gram = g @ g.T + 1e-3 * np.eye(t)
    d = rng.uniform(0.2, 1.0, size=t)
    want_a, want = _exact_one_slack(gram, d, c)
    cap = 8
    gram_p = np.zeros((cap, cap))
    gram_p[:t, :t] = gram
    d_p = np.zeros(cap)
    d_p[:t] = d
    res = solve_one_slack_dual(jnp.asarray(gram_p), jnp.asarray(d_p), c,
                               jnp.arange(cap) < t, None, 1e-13, 200_000)
    assert abs(float(res.dual) - want) <= 1e-9 * max(1, abs(want))
    np.testing.assert_allclose(np.asarray(res.alpha)[:t], want_a, atol=1e-5)
    assert np.all(np.asarray(res.alpha)[t:] == 0)
    assert float(res.gap) >= -1e-12 and float(res.alpha.sum()) <= c * (1 + 1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_one_slack_dual_backtracks_from_a_low_step_bound(seed):
    # A first L far below G's largest eigenvalue (too long a step): the rejected steps raise
    # it, and the solve still reaches the exact optimum.
    rng = np.random.default_rng(10 + seed)
    t = 5
    g = rng.normal(size=(t, 8))
    gram = g @ g.T
    d = rng.uniform(0.2, 1.0, size=t)
    want_a, want = _exact_one_slack(gram, d, 3.0)
    top = float(np.linalg.eigvalsh(gram)[-1])
    res = solve_one_slack_dual(jnp.asarray(gram), jnp.asarray(d), 3.0, jnp.ones(t, bool),
                               None, 1e-13, 200_000, 1e-3 * top)
    assert abs(float(res.dual) - want) <= 1e-9 * max(1, abs(want))
    assert 1e-3 * top < float(res.lipschitz) <= 1.1 * top * (1 + 1e-9)


def test_one_slack_dual_warm_start_reaches_the_same_optimum():
    rng = np.random.default_rng(7)
    g = rng.normal(size=(4, 6))
    gram, d = g @ g.T, rng.uniform(0.5, 1, 4)
    mask = jnp.ones(4, bool)
    cold = solve_one_slack_dual(jnp.asarray(gram), jnp.asarray(d), 2.0, mask)
    warm = solve_one_slack_dual(jnp.asarray(gram), jnp.asarray(d), 2.0, mask,
                                jnp.asarray([5.0, -1.0, 0.3, 0.0]))
    assert abs(float(cold.dual) - float(warm.dual)) <= 1e-9


@pytest.mark.parametrize("seed", range(5))
def test_capped_simplex_projection_matches_bisection(seed):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=7) * 2
    mask = rng.uniform(size=7) < 0.8
    c = float(rng.uniform(0.1, 3))
    got = np.asarray(project_capped_simplex(jnp.asarray(v), c, jnp.asarray(mask)))
    vm = np.where(mask, v, -np.inf)
    lo, hi = 0.0, max(0.0, float(np.max(v)))
    for _ in range(200):  # smallest theta >= 0 with sum(max(v - theta, 0)) <= c
        mid = 0.5 * (lo + hi)
        if np.maximum(vm - mid, 0).sum() <= c:
            hi = mid
        else:
            lo = mid
    theta = 0.0 if np.maximum(vm, 0).sum() <= c else hi
    np.testing.assert_allclose(got, np.maximum(vm - theta, 0), atol=1e-12)


# --------------------------------------------------------------------------- CPA on TREC


@pytest.fixture(scope="module")
def trec(shared_data):
    train = load_trec(shared_data, "train")
    test = load_trec(shared_data, "test")
    # The training file is grouped by class: a random subset, "HUM" (about 1 in 5) vs rest.
    pick = np.random.default_rng(0).permutation(len(train.trees))[:240]
    y = np.where(np.asarray(train.coarse)[pick] == "HUM", 1, -1)
    return [train.trees[i] for i in pick], y, test.trees[:60]


@pytest.fixture(scope="module")
def runs(trec):
    trees, y, _ = trec
    return {mode: cpa(trees, y, kernel=KERNEL, C=20.0, sample=80, epsilon=1e-3, mode=mode,
                      keep_margins=True, key=jax.random.PRNGKey(3), max_iter=40)
            for mode in ("usvm", "sdag", "sdag+", "forest")}


def test_modes_give_the_same_margins_model_and_decisions(runs, trec):
    _, _, test = trec
    base = runs["usvm"]
    assert len(base.stats["history"]) >= 5  # a real run: several planes
    f0 = np.asarray(base.model.decision_function(test, mode="usvm"))
    for mode, r in runs.items():
        assert len(r.stats["history"]) == len(base.stats["history"]), mode
        # The modes' plane Gram matrices agree up to rounding, and each QP stops at a 1e-12
        # relative duality gap; its rounding-sensitive steps (restarts, backtracking) may
        # differ between modes, so margins agree to 1e-10, not bit for bit.
        for a, b in zip(r.stats["margins"], base.stats["margins"]):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
        assert r.model.support == base.model.support
        np.testing.assert_allclose(r.model.coef, base.model.coef, rtol=1e-9, atol=1e-12)
        for dmode in ("forest", "sdag+", "usvm"):
            f = np.asarray(r.model.decision_function(test, mode=dmode))
            assert np.max(np.abs(f - f0)) <= 1e-9 * np.max(np.abs(f0)), (mode, dmode)
            np.testing.assert_array_equal(np.where(f >= 0, 1, -1), np.where(f0 >= 0, 1, -1))


def test_delta_evaluations_shrink_with_compaction(runs):
    d = {mode: r.stats["delta_evals"] for mode, r in runs.items()}
    assert d["usvm"] > d["sdag"] > d["sdag+"] > d["forest"] > 0
    pre = {r.stats["preprocessing_deltas"] for r in runs.values()}
    assert len(pre) == 1  # the self-kernels cost the same in every mode


def test_precomputed_gram_gives_the_same_model(runs, trec):
    trees, y, test = trec
    g = np.asarray(jkern.gram(KERNEL, trees, dtype="float64"))
    res = cpa(trees, y, kernel=KERNEL, C=20.0, sample=80, epsilon=1e-3, keep_margins=True,
              key=jax.random.PRNGKey(3), max_iter=40, gram=g)
    base = runs["forest"]
    assert res.stats["delta_evals"] == 0
    assert len(res.stats["history"]) == len(base.stats["history"])
    for a, b in zip(res.stats["margins"], base.stats["margins"]):  # 1e-10: see the modes test
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    assert res.model.support == base.model.support
    np.testing.assert_allclose(res.model.coef, base.model.coef, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="gram must be"):
        cpa(trees, y, kernel=KERNEL, gram=g[:5, :5], key=None)


def test_delta_counts_from_histograms_equal_the_engine_counts(runs, trec):
    trees, _, _ = trec
    for kernel in (KERNEL,):
        counted = delta_counts(kernel, trees, runs["usvm"])
        assert counted == {mode: r.stats["delta_evals"] for mode, r in runs.items()}


def test_delta_counts_for_ptk(trec):
    trees, y, _ = trec
    k = jkern.Normalized(jkern.PTK(0.4, 0.4))
    for mode in ("usvm", "sdag+"):
        res = cpa(trees[:100], y[:100], kernel=k, C=10.0, sample=40, mode=mode, max_iter=6,
                  key=jax.random.PRNGKey(0))
        assert delta_counts(k, trees[:100], res)[mode] == res.stats["delta_evals"]
    # several row blocks: a subtree shared by two blocks is computed (and counted) twice
    res = cpa(trees, y, kernel=KERNEL, C=20.0, sample=200, mode="forest", max_iter=8,
              block_size=64, key=jax.random.PRNGKey(0))
    assert delta_counts(KERNEL, trees, res, block_size=64)["forest"] == res.stats["delta_evals"]


def test_decision_function_equals_the_gram_expansion(runs, trec):
    trees, _, test = trec
    model = runs["forest"].model
    sv = [trees[k] for k in model.support]
    g = np.asarray(jkern.gram(KERNEL, test, sv, dtype="float64"))
    np.testing.assert_allclose(model.decision_function(test), g @ np.asarray(model.coef),
                               rtol=1e-10, atol=1e-12)


def _productions(tree):
    """SST's match keys of a tree's internal nodes (label, child labels, child leafness)."""
    out = []
    for i, kids in enumerate(tree.children):
        if kids:
            out.append((tree.labels[i], tuple((tree.labels[c], not tree.children[c])
                                              for c in kids)))
    return out


def _serial(tree, i):
    kids = tree.children[i]
    return tree.labels[i] if not kids else \
        "(" + tree.labels[i] + " " + " ".join(_serial(tree, c) for c in kids) + ")"


def test_delta_counts_match_tree_by_tree_and_dag_matching(runs, trec):
    _, _, test = trec
    model = runs["forest"].model
    sv = list(model.support_inputs)
    # usvm: every node pair with equal productions, tree pair by tree pair.
    usvm = 0
    for x in test:
        px = _productions(x)
        for t in sv:
            pt = _productions(t)
            usvm += sum(a == b for a in px for b in pt)
    # sdag+: the support vectors' distinct subtrees (Algorithm 6's node ids) x input nodes.
    dag = {}
    for t in sv:
        for i, kids in enumerate(t.children):
            if kids:
                dag[_serial(t, i)] = (t.labels[i], tuple((t.labels[c], not t.children[c])
                                                         for c in kids))
    dag_prods = list(dag.values())
    sdag_plus = sum(a == b for x in test for a in _productions(x) for b in dag_prods)
    for mode, want in (("usvm", usvm), ("sdag+", sdag_plus)):
        stats = {}
        model.decision_function(test, mode=mode, stats=stats)
        assert stats["delta_evals"] == want, mode
    assert usvm > sdag_plus


@pytest.mark.parametrize("j", [None, 3.0])
def test_exact_cpa_reaches_the_n_slack_optimum(trec, j):
    # With r = n the 1-slack problem is the n-slack SVM (no bias) with C/n per example; with
    # importance weights z (uSVM+j's j) it is SVM-light's -j problem, c_light z_i per example
    # at C = c_light sum z (`svm_light_C`). The CPA's solution is epsilon-optimal:
    # P(w) <= P* + C epsilon.
    scipy_optimize = pytest.importorskip("scipy.optimize")
    trees, y, _ = trec
    trees, y = trees[:120], y[:120]
    n, eps = len(trees), 1e-4
    z = np.ones(n) if j is None else np.where(y > 0, j, 1.0)
    c_light = 0.25
    cw = None if j is None else {1: j, -1: 1.0}
    c = svm_light_C(c_light, y, class_weight=cw)
    assert c == pytest.approx(c_light * z.sum())
    res = cpa(trees, y, kernel=KERNEL, C=c, sample=n, epsilon=eps, max_iter=200,
              class_weight=cw, key=None)  # sample=n: the exact algorithm draws nothing
    assert res.converged
    gram = np.asarray(jkern.gram(KERNEL, trees, dtype="float64"))
    q = gram * np.outer(y, y)

    def dual(a):
        return 0.5 * a @ q @ a - a.sum(), q @ a - 1

    opt = scipy_optimize.minimize(dual, np.zeros(n), jac=True, method="L-BFGS-B",
                                  bounds=[(0, c_light * zi) for zi in z],
                                  options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000})
    a = opt.x

    def primal(beta):
        f = gram @ beta
        return 0.5 * beta @ gram @ beta + c_light * (z * np.maximum(0, 1 - y * f)).sum()

    p_star = primal(a * y)
    assert abs(p_star + opt.fun) <= 1e-6 * abs(p_star)  # L-BFGS-B's gap is tiny
    beta = np.zeros(n)
    beta[list(res.model.support)] = np.asarray(res.model.coef)
    p_cpa = primal(beta)
    assert p_star - 1e-9 <= p_cpa <= p_star + c * eps


def test_confirm_continues_the_same_run_until_k_consecutive_passes(trec):
    # confirm=k replays the confirm=1 run (the samples depend on the iteration only) and goes
    # on until the stopping test passes on k samples in a row; the planes of passing samples
    # are kept. With sampled planes the longer run reaches a lower primal objective.
    trees, y, _ = trec
    g = np.asarray(jkern.gram(KERNEL, trees, dtype="float64"))
    kw = dict(C=200.0, sample=30, epsilon=1e-3, key=jax.random.PRNGKey(1), max_iter=400,
              gram=g, class_weight={1: 3.0, -1: 1.0})
    once = cpa(trees, y, kernel=KERNEL, **kw)
    thrice = cpa(trees, y, kernel=KERNEL, confirm=3, **kw)
    assert once.converged and thrice.converged
    stop = len(once.stats["history"]) - 1  # the iteration where confirm=1 stopped
    assert len(thrice.stats["history"]) >= stop + 3
    for a, b in zip(once.stats["history"][:stop], thrice.stats["history"][:stop]):
        assert a.planes == b.planes and a.violation == pytest.approx(b.violation, abs=1e-9)

    def passed(run, i):  # the stopping test of iteration i (xi: the slack before it)
        h = run.stats["history"]
        return h[i].violation <= (h[i - 1].slack if i else 0.0) + 1e-3

    assert passed(once, stop) and passed(thrice, stop)
    last = len(thrice.stats["history"]) - 1
    assert all(passed(thrice, i) for i in (last - 2, last - 1, last))
    # ... and not earlier: no three passes in a row before the last three
    assert not any(passed(thrice, i) and passed(thrice, i + 1) and passed(thrice, i + 2)
                   for i in range(last - 2))
    z = np.where(y > 0, 3.0, 1.0)

    def primal(res):
        beta = np.zeros(len(y))
        beta[list(res.model.support)] = np.asarray(res.model.coef)
        f = g @ beta
        return 0.5 * beta @ f + kw["C"] * (z @ np.maximum(0, 1 - y * f)) / z.sum()

    assert primal(thrice) < primal(once)
    # without sampling the test is deterministic: one pass is final
    exact = dict(kw, sample=len(y))
    assert len(cpa(trees, y, kernel=KERNEL, confirm=3, **exact).stats["history"]) == len(
        cpa(trees, y, kernel=KERNEL, **exact).stats["history"])


def test_rejection_sampling_follows_importance_weights():
    y = np.where(np.arange(1100) < 100, 1, -1)  # 1:10
    z = np.where(y > 0, 5.0, 1.0)  # uSVM+j's importance with j = 5
    idx = np.concatenate([draw_sample(len(y), 500, z, key=jax.random.PRNGKey(s))
                          for s in range(20)])
    frac = np.mean(y[idx] > 0)
    want = 100 * 5 / (100 * 5 + 1000)  # P(positive) under z-weighted draws
    assert abs(frac - want) < 0.03
    z0 = z.copy()
    z0[:50] = 0  # zero importance: never drawn
    idx = draw_sample(len(y), 2000, z0, key=jax.random.PRNGKey(0))
    assert not np.any(idx < 50)
    uniform = draw_sample(30, 10, None, key=jax.random.PRNGKey(1))
    assert len(np.unique(uniform)) == 10
    np.testing.assert_array_equal(draw_sample(30, 50, None, key=jax.random.PRNGKey(1)),
                                  np.arange(30))


def test_importance_sampling_raises_recall(trec):
    trees, y, _ = trec
    plain = cpa(trees, y, kernel=KERNEL, C=5.0, sample=80, key=jax.random.PRNGKey(0),
                max_iter=60)
    weighted = cpa(trees, y, kernel=KERNEL, C=5.0, sample=80, class_weight={1: 5.0, -1: 1.0},
                   key=jax.random.PRNGKey(0), max_iter=60)
    pos = y > 0
    recall = [np.mean(m.model.predict(trees)[pos] > 0) for m in (plain, weighted)]
    assert recall[1] > recall[0]


def test_svm_light_c_conversion():
    y = np.array([1, -1, -1, 1, -1])
    assert svm_light_C(2.0, y) == 10.0
    assert svm_light_C(2.0, y, class_weight={1: 3.0, -1: 1.0}) == 2.0 * (3 + 1 + 1 + 3 + 1)
    assert svm_light_C(1.0, y, importance=np.array([0.5, 1, 1, 0.5, 2])) == 5.0
    with pytest.raises(ValueError, match="not both"):
        svm_light_C(1.0, y, class_weight={1: 2.0}, importance=np.ones(5))
    with pytest.raises(ValueError, match="c_light"):
        svm_light_C(0.0, y)
    with pytest.raises(ValueError, match="5 finite weights"):
        svm_light_C(1.0, y, importance=np.ones(4))


@pytest.mark.parametrize("kwargs,match", [
    ({"mode": "fast"}, "mode"),
    ({"C": 0.0}, "C and epsilon"),
    ({"sample": 0}, "sample"),
    ({"confirm": 0}, "confirm"),
    ({"class_weight": {1: 2.0}, "importance": np.ones(3)}, "not both"),
    ({"class_weight": {1: -1.0}}, r"class_weight\[1\] must be"),
    ({"class_weight": {2: 1.0}}, "not classes"),
    ({"sample": 2}, "key="),
])
def test_bad_arguments(kwargs, match):
    trees = [jkern.trees.parse_penn("(S (NP (NN a))(VP (VB b)))")] * 3
    with pytest.raises(ValueError, match=match):
        cpa(trees, np.array([1, -1, 1]), kernel=KERNEL, key=None, **kwargs)


def test_bad_labels_and_kernels():
    trees = [jkern.trees.parse_penn("(S (NP (NN a))(VP (VB b)))")] * 2
    with pytest.raises(ValueError, match="-1 and \\+1"):
        cpa(trees, np.array([1, 0]), kernel=KERNEL, key=None)
    with pytest.raises(InputError, match="tree kernel"):
        cpa(trees, np.array([1, -1]), kernel=jkern.RBF(1.0), key=None)
