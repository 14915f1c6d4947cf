"""The learner contract itself (docs/learners.md), across the learners that follow it.

- a grid of C is one `jax.vmap` (ksvm, dcd) and equals the loop of single fits (model, stats,
  result), in float64; `Solution` under vmap stacks `result` and the array stats;
- `ksvm_ovr` and `dcd_ovr` are `one_vs_rest(ksvm/dcd, ...)`, and each class is the binary
  fit of that class against the rest (class k's weight on the positive side only);
- `class_weight` is a mapping label -> weight or "balanced" (n / (2 count) for binary) for
  dcd, ksvm and cpa; cpa's `{1: j, -1: 1}` is uSVM+j's importance `where(y > 0, j, 1)`;
- one tie rule: a decision value of exactly 0 predicts +1 (LinearSVM, KernelSVM,
  KernelExpansion); multiclass ties go to the lowest class;
- `throw=True`: `ConvergenceError` on a run cut short by `max_iter` (dcd, ksvm, cpa), nothing
  on a converged one; an equinox runtime error under `jit`/`vmap`;
- `dtype=None` follows the input; bad input raises `jkern.errors.InputError`.

Compilations are the expensive part: one data shape per learner, the dcd shape and max_iter of
tests/test_dcd.py (the on-disk compilation cache serves both), ksvm's max_iter is traced (no
recompile), and cpa reads its margins off a precomputed Gram matrix (`gram=`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import RESULTS, Solution
from jkern.errors import ConvergenceError, InputError
from jkern.svm import (
    KernelExpansion,
    KernelSVM,
    LinearSVM,
    cpa,
    dcd,
    dcd_ovr,
    ksvm,
    ksvm_ovr,
    one_vs_rest,
)
from jkern.trees import parse_penn

N, D = 48, 5  # tests/test_dcd.py's shape and max_iter: the same compiled dcd programs
MAX_ITER = 20_000
CS = (0.05, 0.5, 5.0)
KERNEL = jkern.Normalized(jkern.SST(0.4))

# 14 small parses: questions (+1) against statements (-1), 5 to 9 (n_pos != n_neg)
SENTENCES = [
    ("(SQ (WP what) (VP (V is) (NP (N it))))", 1),
    ("(SQ (WP who) (VP (V runs)))", 1),
    ("(SQ (WP what) (VP (V runs) (ADV fast)))", 1),
    ("(SQ (WP who) (VP (V is) (NP (D a) (N dog))))", 1),
    ("(SQ (WRB where) (VP (V sleeps) (NP (D the) (N cat))))", 1),
    ("(S (NP (D a) (N dog)) (VP (V runs)))", -1),
    ("(S (NP (D the) (N cat)) (VP (V sleeps)))", -1),
    ("(S (NP (N dogs)) (VP (V run) (ADV fast)))", -1),
    ("(S (NP (D a) (N cat)) (VP (V runs) (ADV fast)))", -1),
    ("(S (NP (D the) (N dog)) (VP (V is) (NP (D a) (N cat))))", -1),
    ("(S (NP (N it)) (VP (V sleeps)))", -1),
    ("(S (NP (D the) (N dogs)) (VP (V run)))", -1),
    ("(S (NP (N cats)) (VP (V sleep) (ADV fast)))", -1),
    ("(S (NP (D a) (N dog)) (VP (V is) (NP (N it))))", -1),
]


@pytest.fixture(scope="module")
def data():
    """Features `[N, D]` (float64), ±1 labels, 3-class labels (5, 15, 25), and the Gram
    matrix of a linear kernel with a constant."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((N, D))
    y = np.where(X @ rng.standard_normal(D) + 0.8 * rng.standard_normal(N) > 0, 1.0, -1.0)
    labels = np.argmax(X[:, :3] + 0.5 * rng.standard_normal((N, 3)), axis=1) * 10 + 5
    assert np.sum(y > 0) != np.sum(y < 0)  # "balanced" differs from no weights
    assert sorted(set(labels.tolist())) == [5, 15, 25]
    return X, y, labels, X @ X.T + 1.0


@pytest.fixture(scope="module")
def trees():
    """The small tree set, its ±1 labels and its float64 Gram matrix under KERNEL."""
    ts = [parse_penn(s) for s, _ in SENTENCES]
    y = np.array([label for _, label in SENTENCES])
    return ts, y, np.asarray(jkern.gram(KERNEL, ts, dtype="float64"))


def _dcd_kw(**kw):
    return dict(tol=1e-6, max_iter=MAX_ITER, key=jax.random.key(3), **kw)


def _arrays(tree):
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(eqx.filter(tree, eqx.is_array))]


def _assert_same(a, b):
    """The same arrays, bit for bit (model, result and array stats of two Solutions)."""
    la, lb = _arrays(a), _arrays(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        assert u.dtype == v.dtype
        np.testing.assert_array_equal(u, v)


# --------------------------------------------------------------------------- vmap over C


def test_ksvm_vmaps_over_C_and_equals_the_loop_of_single_fits(data):
    _, y, _, K = data
    grid = jax.vmap(lambda c: ksvm(K, y, C=c, tol=1e-6))(jnp.array(CS))
    assert isinstance(grid, Solution) and isinstance(grid.model, KernelSVM)
    assert grid.model.coef.shape == (3, N) and grid.model.intercept.shape == (3,)
    assert grid.result.shape == (3,) and grid.result.dtype == jnp.int32
    assert grid.converged.shape == (3,) and bool(jnp.all(grid.converged))
    assert grid.stats["n_iter"].shape == (3,) and grid.stats["dual_objective"].shape == (3,)
    assert grid.model.coef.dtype == jnp.float64
    for j, c in enumerate(CS):
        one = ksvm(K, y, C=c, tol=1e-6)
        assert int(one.result) == RESULTS.successful == int(grid.result[j])
        np.testing.assert_allclose(grid.model.coef[j], one.model.coef, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grid.model.intercept[j], one.model.intercept, rtol=0,
                                   atol=1e-10)
        assert int(grid.stats["n_iter"][j]) == int(one.stats["n_iter"])
        np.testing.assert_allclose(grid.stats["dual_objective"][j],
                                   one.stats["dual_objective"], rtol=1e-12, atol=0)
    # the grid is a real grid: C changes the model
    assert not np.allclose(grid.model.coef[0], grid.model.coef[2])


def test_dcd_vmaps_over_C_and_equals_the_loop_of_single_fits(data):
    X, y, _, _ = data
    grid = jax.vmap(lambda c: dcd(X, y, C=c, **_dcd_kw()))(jnp.array(CS))
    assert isinstance(grid, Solution) and isinstance(grid.model, LinearSVM)
    assert grid.model.w.shape == (3, D) and grid.model.b.shape == (3,)
    assert grid.result.shape == (3,) and grid.result.dtype == jnp.int32
    assert grid.converged.shape == (3,) and bool(jnp.all(grid.converged))
    assert grid.stats["alpha"].shape == (3, N)
    assert grid.stats["n_iter"].shape == (3,) and grid.stats["dual_objective"].shape == (3,)
    assert grid.model.w.dtype == jnp.float64
    for j, c in enumerate(CS):
        one = dcd(X, y, C=c, **_dcd_kw())
        assert int(one.result) == RESULTS.successful == int(grid.result[j])
        np.testing.assert_allclose(grid.model.w[j], one.model.w, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grid.model.b[j], one.model.b, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grid.stats["alpha"][j], one.stats["alpha"], rtol=0,
                                   atol=1e-10)
        assert int(grid.stats["n_iter"][j]) == int(one.stats["n_iter"])
        np.testing.assert_allclose(grid.stats["dual_objective"][j],
                                   one.stats["dual_objective"], rtol=1e-12, atol=0)
    assert not np.allclose(grid.model.w[0], grid.model.w[2])


def test_vmapped_solution_stacks_per_member_results(data):
    # ksvm's max_iter is traced (no recompile): 40 SMO steps are enough at small C (22 and
    # 34 steps), not at C = 5 (over 1,000): the results differ per member, and stack
    _, y, _, K = data
    Cs = jnp.array([1e-3, 0.05, 5.0])
    grid = jax.vmap(lambda c: ksvm(K, y, C=c, tol=1e-6, max_iter=40))(Cs)
    codes = np.asarray(grid.result)
    assert codes.dtype == np.int32
    np.testing.assert_array_equal(codes, [RESULTS.successful, RESULTS.successful,
                                          RESULTS.max_iter_reached])
    np.testing.assert_array_equal(np.asarray(grid.converged), [True, True, False])
    assert int(grid.stats["n_iter"][2]) == 40
    for j, c in enumerate(np.asarray(Cs)):
        one = ksvm(K, y, C=float(c), tol=1e-6, max_iter=40)
        assert int(one.result) == codes[j]
        assert int(one.stats["n_iter"]) == int(grid.stats["n_iter"][j])
        np.testing.assert_allclose(grid.model.coef[j], one.model.coef, rtol=0, atol=1e-10)


# --------------------------------------------------------------------------- one-vs-rest


@pytest.mark.parametrize("name", ["ksvm", "dcd"])
def test_ovr_is_one_vs_rest_of_the_binary_learner(data, name):
    X, _, labels, K = data
    learner, ovr, x, kw = {
        "ksvm": (ksvm, ksvm_ovr, K, dict(C=1.0, tol=1e-6)),
        "dcd": (dcd, dcd_ovr, X, _dcd_kw(C=1.0)),
    }[name]
    weights = {5: 2.0, 25: 0.5}  # 15 is absent: weight 1
    sol = ovr(x, labels, class_weight=weights, **kw)
    assert sol.model.classes == (5, 15, 25)
    _assert_same(sol, one_vs_rest(learner, x, labels, class_weight=weights, **kw))
    assert sol.result.shape == (3,) and bool(jnp.all(sol.converged))
    for k, c in enumerate(sol.model.classes):
        one = learner(x, np.where(labels == c, 1, -1),
                      class_weight={1: weights.get(c, 1.0), -1: 1.0}, **kw)
        assert int(sol.result[k]) == int(one.result)
        for u, v in zip(_arrays(sol.model), _arrays(one.model)):
            np.testing.assert_allclose(u[k], v, rtol=0, atol=1e-10)
        assert int(sol.stats["n_iter"][k]) == int(one.stats["n_iter"])
        np.testing.assert_allclose(sol.stats["dual_objective"][k],
                                   one.stats["dual_objective"], rtol=1e-12, atol=0)
    # class k's weight reaches problem k only: unweighted, class 15's model is the same
    plain = ovr(x, labels, **kw)
    for u, v in zip(_arrays(sol.model), _arrays(plain.model)):
        np.testing.assert_allclose(u[1], v[1], rtol=0, atol=1e-10)
        assert not np.allclose(u[0], v[0])
    # prediction: the class of the highest score
    scores = np.asarray(sol.model.decision_function(x))
    np.testing.assert_array_equal(sol.model.predict(x),
                                  np.asarray(sol.model.classes)[scores.argmax(1)])


def test_ovr_balanced_weights_are_n_over_k_count(data):
    _, _, labels, K = data
    counts = {c: int(np.sum(labels == c)) for c in (5, 15, 25)}
    explicit = {c: N / (3 * m) for c, m in counts.items()}
    _assert_same(ksvm_ovr(K, labels, class_weight="balanced", C=1.0, tol=1e-6),
                 ksvm_ovr(K, labels, class_weight=explicit, C=1.0, tol=1e-6))


# --------------------------------------------------------------------------- class_weight


def test_dcd_class_weight_mapping_and_balanced(data):
    X, y, _, _ = data
    n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y < 0))
    explicit = {1: N / (2 * n_pos), -1: N / (2 * n_neg)}
    balanced = dcd(X, y, class_weight="balanced", **_dcd_kw())
    _assert_same(balanced, dcd(X, y, class_weight=explicit, **_dcd_kw()))
    assert not np.allclose(balanced.model.w, dcd(X, y, **_dcd_kw()).model.w)
    # a label missing from the mapping weighs 1; 1, 1.0 and np.int64(1) name one class
    _assert_same(dcd(X, y, class_weight={1: 2.0}, **_dcd_kw()),
                 dcd(X, y, class_weight={1.0: 2.0, np.int64(-1): 1.0}, **_dcd_kw()))


def test_ksvm_class_weight_mapping_and_balanced(data):
    _, y, _, K = data
    n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y < 0))
    explicit = {1: N / (2 * n_pos), -1: N / (2 * n_neg)}
    balanced = ksvm(K, y, C=0.05, class_weight="balanced", tol=1e-6)
    _assert_same(balanced, ksvm(K, y, C=0.05, class_weight=explicit, tol=1e-6))
    assert not np.allclose(balanced.model.coef, ksvm(K, y, C=0.05, tol=1e-6).model.coef)
    _assert_same(ksvm(K, y, C=0.05, class_weight={1: 2.0}, tol=1e-6),
                 ksvm(K, y, C=0.05, class_weight={1.0: 2.0, np.int64(-1): 1.0}, tol=1e-6))
    # what the mapping means: the box of example i is [0, C * weight(y_i)] (LIBSVM's -wi);
    # at a small C both classes have bounded support vectors, at their own bound
    sol = ksvm(K, y, C=0.05, class_weight={1: 3.0, -1: 0.5}, tol=1e-8)
    alpha = np.asarray(sol.model.coef) * y
    assert np.all(alpha >= 0)
    assert abs(float(np.sum(np.asarray(sol.model.coef)))) <= 1e-12  # y' alpha = 0
    np.testing.assert_allclose(alpha[y > 0].max(), 0.05 * 3.0, rtol=1e-12)
    np.testing.assert_allclose(alpha[y < 0].max(), 0.05 * 0.5, rtol=1e-12)


def test_cpa_class_weight_is_uSVM_j_importance(trees):
    ts, y, g = trees
    n, j = len(y), 3.0
    kw = dict(kernel=KERNEL, C=5.0, sample=6, epsilon=1e-3, key=jax.random.key(1),
              max_iter=60, gram=g)
    weighted = cpa(ts, y, class_weight={1: j, -1: 1}, **kw)
    by_importance = cpa(ts, y, importance=np.where(y > 0, j, 1.0), **kw)
    assert isinstance(weighted.model, KernelExpansion)
    assert bool(weighted.converged)
    _same_cpa_run(weighted, by_importance)
    plain = cpa(ts, y, **kw)
    assert not (plain.model.support == weighted.model.support
                and np.allclose(plain.model.coef, weighted.model.coef))
    # "balanced" = {1: n / (2 n_pos), -1: n / (2 n_neg)}
    n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y < 0))
    _same_cpa_run(cpa(ts, y, class_weight="balanced", **kw),
                  cpa(ts, y, class_weight={1: n / (2 * n_pos), -1: n / (2 * n_neg)}, **kw))


def _same_cpa_run(a, b):
    assert a.model.support == b.model.support
    np.testing.assert_array_equal(np.asarray(a.model.coef), np.asarray(b.model.coef))
    np.testing.assert_array_equal(a.stats["alpha"], b.stats["alpha"])
    np.testing.assert_array_equal(a.stats["offsets"], b.stats["offsets"])
    assert len(a.stats["samples"]) == len(b.stats["samples"])
    for s, t in zip(a.stats["samples"], b.stats["samples"]):
        np.testing.assert_array_equal(s, t)
    assert int(a.result) == int(b.result)


# --------------------------------------------------------------------------- the tie rule


def test_binary_decision_value_zero_predicts_plus_one(trees):
    ts = trees[0][:3]
    linear = LinearSVM(w=jnp.array([1.0, 0.0]), b=jnp.array(0.0))
    x = np.array([[0.0, 5.0], [-1.0, 3.0], [2.0, 0.0]])
    np.testing.assert_array_equal(np.asarray(linear.decision_function(x)), [0.0, -1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(linear.predict(x)), [1, -1, 1])

    kernel_svm = KernelSVM(coef=jnp.array([1.0, -1.0]), intercept=jnp.array(0.0))
    k = np.array([[1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(np.asarray(kernel_svm.decision_function(k)), [0.0, -1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(kernel_svm.predict(k)), [1, -1, 1])

    def expansion(intercept, classes=None):
        return KernelExpansion(kernel=KERNEL, coef=jnp.array([0.0]),
                               intercept=jnp.array(intercept), support=(0,),
                               support_inputs=(ts[0],), classes=classes)

    zero = expansion(0.0)
    np.testing.assert_array_equal(np.asarray(zero.decision_function(ts)), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(zero.predict(ts)), [1, 1, 1])
    np.testing.assert_array_equal(np.asarray(expansion(-1.0).predict(ts)), [-1, -1, -1])
    assert list(expansion(0.0, ("no", "yes")).predict(ts)) == ["yes"] * 3
    assert list(expansion(-1.0, ("no", "yes")).predict(ts)) == ["no"] * 3


@pytest.mark.parametrize("intercept,want", [([1.0, 1.0, 1.0], 0), ([0.5, 1.0, 1.0], 1),
                                            ([0.5, 0.2, 1.0], 2)])
def test_multiclass_ties_go_to_the_lowest_class(trees, intercept, want):
    ts = trees[0][:2]
    b = jnp.array(intercept)
    for classes in ((3, 7, 9), ("a", "b", "c")):
        linear = LinearSVM(w=jnp.zeros((3, 2)), b=b, classes=classes)
        assert list(linear.predict(np.ones((2, 2)))) == [classes[want]] * 2
        kernel_svm = KernelSVM(coef=jnp.zeros((3, 4)), intercept=b, classes=classes)
        assert list(kernel_svm.predict(np.ones((2, 4)))) == [classes[want]] * 2
        expansion = KernelExpansion(kernel=KERNEL, coef=jnp.zeros((3, 1)), intercept=b,
                                    support=(0,), support_inputs=(ts[0],), classes=classes)
        assert list(expansion.predict(ts)) == [classes[want]] * 2


# --------------------------------------------------------------------------- throw=


def test_throw_raises_on_a_run_cut_short_and_passes_a_converged_one(data, trees):
    X, y, _, K = data
    ts, yt, g = trees
    with pytest.raises(ConvergenceError, match="iteration limit"):
        ksvm(K, y, C=5.0, tol=1e-6, max_iter=3, throw=True)
    with pytest.raises(ConvergenceError, match="iteration limit"):
        dcd(X, y, C=5.0, tol=1e-6, max_iter=2, key=jax.random.key(3), throw=True)
    kw = dict(kernel=KERNEL, C=5.0, sample=6, key=jax.random.key(1), gram=g)
    with pytest.raises(ConvergenceError, match="iteration limit"):
        cpa(ts, yt, max_iter=1, throw=True, **kw)
    # the same runs without throw: the solution says it, the caller decides
    for sol in (ksvm(K, y, C=5.0, tol=1e-6, max_iter=3),
                dcd(X, y, C=5.0, tol=1e-6, max_iter=2, key=jax.random.key(3)),
                cpa(ts, yt, max_iter=1, **kw)):
        assert int(sol.result) == RESULTS.max_iter_reached and not bool(sol.converged)
        with pytest.raises(ConvergenceError):
            sol.check(True)
        assert sol.check(False) is sol
    assert issubclass(ConvergenceError, jkern.errors.NumericalError)
    # converged runs pass through throw=True unchanged
    for sol in (ksvm(K, y, C=5.0, tol=1e-6, throw=True),
                dcd(X, y, C=5.0, throw=True, **_dcd_kw()),
                cpa(ts, yt, max_iter=60, throw=True, **kw)):
        assert int(sol.result) == RESULTS.successful and bool(sol.converged)
    _assert_same(ksvm(K, y, C=5.0, tol=1e-6, throw=True), ksvm(K, y, C=5.0, tol=1e-6))


def test_throw_under_vmap_and_jit_is_an_equinox_runtime_error(data):
    X, y, _, K = data
    Cs = jnp.array(CS)
    with pytest.raises(eqx.EquinoxRuntimeError, match="did not succeed"):
        jax.vmap(lambda c: ksvm(K, y, C=c, tol=1e-6, max_iter=3, throw=True))(Cs)
    with pytest.raises(eqx.EquinoxRuntimeError, match="did not succeed"):
        jax.vmap(lambda c: dcd(X, y, C=c, tol=1e-6, max_iter=2, key=jax.random.key(3),
                               throw=True))(Cs)
    with pytest.raises(eqx.EquinoxRuntimeError, match="did not succeed"):
        eqx.filter_jit(lambda c: ksvm(K, y, C=c, tol=1e-6, max_iter=3, throw=True))(5.0)
    with pytest.raises(jax.errors.JaxRuntimeError, match="did not succeed"):
        jax.jit(lambda c: ksvm(K, y, C=c, tol=1e-6, max_iter=3, throw=True))(5.0)
    # converged: no error, the same grid as without throw
    grid = jax.vmap(lambda c: ksvm(K, y, C=c, tol=1e-6, throw=True))(Cs)
    _assert_same(grid, jax.vmap(lambda c: ksvm(K, y, C=c, tol=1e-6))(Cs))
    grid = jax.vmap(lambda c: dcd(X, y, C=c, throw=True, **_dcd_kw()))(Cs)
    assert bool(jnp.all(grid.converged))


def test_throw_under_jit_holds_when_only_the_model_is_kept(data):
    _, y, _, K = data
    with pytest.raises(jax.errors.JaxRuntimeError, match="did not succeed"):
        jax.jit(lambda c: ksvm(K, y, C=c, tol=1e-6, max_iter=3, throw=True).model.coef)(5.0)


# --------------------------------------------------------------------------- dtype=None


def test_dtype_none_follows_the_input(data, trees):
    X, y, _, K = data
    for dt in (np.float32, np.float64):
        sol = dcd(X.astype(dt), y.astype(dt), C=1.0, **_dcd_kw())
        assert sol.model.w.dtype == dt and sol.model.b.dtype == dt
        assert sol.stats["alpha"].dtype == dt and sol.stats["dual_objective"].dtype == dt
        sol = ksvm(K.astype(dt), y, C=1.0, tol=1e-3)
        assert sol.model.coef.dtype == dt and sol.model.intercept.dtype == dt
        assert sol.stats["dual_objective"].dtype == dt
    # an explicit dtype wins over the input's
    assert dcd(X, y, C=1.0, dtype=jnp.float32, **_dcd_kw()).model.w.dtype == jnp.float32
    assert ksvm(K, y, C=1.0, tol=1e-3, dtype=jnp.float32).model.coef.dtype == jnp.float32
    # trees have no dtype: JAX's default float (float64 here: the tests run with x64)
    ts, yt, g = trees
    kw = dict(kernel=KERNEL, C=5.0, sample=6, key=jax.random.key(1), max_iter=60, gram=g)
    assert cpa(ts, yt, **kw).model.coef.dtype == jnp.float64
    assert cpa(ts, yt, dtype=jnp.float32, **kw).model.coef.dtype == jnp.float32


# --------------------------------------------------------------------------- InputError


def test_bad_input_raises_input_error(data, trees):
    X, y, labels, K = data
    ts, yt, g = trees
    key = jax.random.key(0)
    assert issubclass(InputError, ValueError)
    cpa_kw = dict(kernel=KERNEL, sample=6, key=key, gram=g)
    # one class only
    for call in (lambda: dcd(X, np.ones(N), key=key), lambda: ksvm(K, np.ones(N)),
                 lambda: cpa(ts, -np.ones(len(ts)), **cpa_kw)):
        with pytest.raises(InputError, match="both classes"):
            call()
    for call in (lambda: dcd_ovr(X, np.full(N, 5), key=key),
                 lambda: ksvm_ovr(K, np.full(N, 5))):
        with pytest.raises(InputError, match="at least 2 classes"):
            call()
    # C <= 0
    for c in (0.0, -1.0):
        with pytest.raises(InputError, match="C must be a finite number > 0"):
            dcd(X, y, C=c, key=key)
        with pytest.raises(InputError, match="C must be a finite number > 0"):
            ksvm(K, y, C=c)
        with pytest.raises(InputError, match="C and epsilon must be finite numbers > 0"):
            cpa(ts, yt, C=c, **cpa_kw)
    # NaN in the features or the Gram matrix
    bad_X = X.copy()
    bad_X[3, 1] = np.nan
    with pytest.raises(InputError, match="X holds NaN"):
        dcd(bad_X, y, key=key)
    bad_K = K.copy()
    bad_K[2, 5] = np.nan
    with pytest.raises(InputError, match="gram holds NaN"):
        ksvm(bad_K, y)
    with pytest.raises(InputError, match="gram holds NaN"):
        ksvm_ovr(bad_K, labels)
    # labels outside ±1 for the binary learners
    for bad in (np.where(y > 0, 1, 0), np.where(y > 0, 2, 1)):
        with pytest.raises(InputError, match="only -1 and \\+1"):
            dcd(X, bad, key=key)
        with pytest.raises(InputError, match="only -1 and \\+1"):
            ksvm(K, bad)
    with pytest.raises(InputError, match="only -1 and \\+1"):
        cpa(ts, np.where(yt > 0, 1, 0), **cpa_kw)


def test_traced_bad_C_stops_the_vmap_with_an_equinox_error(data):
    # validation never stops a vmap by a Python `if`: a traced C <= 0 is an error_if
    _, y, _, K = data
    with pytest.raises(eqx.EquinoxRuntimeError, match="C must be a finite number > 0"):
        jax.vmap(lambda c: ksvm(K, y, C=c, tol=1e-6))(jnp.array([0.05, -1.0, 5.0]))


def test_cpa_rejects_nan_in_the_gram_matrix(trees):
    ts, yt, g = trees
    bad = g.copy()
    bad[1, 2] = bad[2, 1] = np.nan
    with pytest.raises(InputError, match="NaN"):
        cpa(ts, yt, kernel=KERNEL, sample=6, key=jax.random.key(0), max_iter=5, gram=bad)
