"""API fuzzing (issue 23): random trees, matrices, labels and hyperparameters, boundaries
included, given to the public kernels and learners. Each either gives a correct result or
raises a `jkern.errors` exception (or `TreeParseError`, one of them); never an error from
inside JAX, never NaN in a result. A few examples each by default; `-m slow` runs the long
profile (JKERN_FUZZ_EXAMPLES, default 200)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import PROFILES
from hypothesis import example, given
from hypothesis import strategies as st

import jkern
from jkern import svm
from jkern._solution import RESULTS
from jkern.errors import JkernError
from jkern.trees import parse_penn

# Values at and beyond every boundary, and ordinary ones.
EDGE_FLOATS = st.sampled_from([float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 1e-300,
                               0.5, 1.0, 1.0 + 1e-12, 5.0, 1e300])
LABELS = st.sampled_from(["A", "NP", "VP", "x", "é", "名詞", "a b", "(", ")", "", "::", "N::n"])


@st.composite
def trees(draw, depth: int = 3):
    """Bracket text of a random tree: deep, wide, unicode, odd labels (some unparseable)."""
    label = draw(LABELS)
    if depth == 0 or draw(st.booleans()):
        return label or "w"
    width = draw(st.sampled_from([1, 2, 3, 40, 300] if depth == 3 else [1, 2, 3]))
    kids = [draw(trees(depth - 1)) for _ in range(min(width, 3))] * (width // 3 or 1)
    return f"({label} {' '.join(k if k.startswith('(') else f'(P {k})' for k in kids)})"


def _jkern_error_or(fn):
    """fn's result, or None when it raised one of jkern's errors; anything else fails."""
    try:
        return fn()
    except JkernError:
        return None


@pytest.mark.parametrize("profile", PROFILES)
def test_tree_kernels_on_random_trees_and_decays(profile):
    @profile
    @given(st.lists(trees(), min_size=1, max_size=4), EDGE_FLOATS, EDGE_FLOATS,
           st.sampled_from(["ST", "SST", "PTK"]))
    def check(texts, lam, mu, name):
        parsed = [_jkern_error_or(lambda t=t: parse_penn(t)) for t in texts]
        trees_ok = [t for t in parsed if t is not None]
        kernel = _jkern_error_or(lambda: jkern.PTK(lam, mu) if name == "PTK"
                                 else getattr(jkern, name)(lam))
        valid = all(np.isfinite(v) and 0 < v <= 1 for v in (lam, mu if name == "PTK" else 0.5))
        assert (kernel is not None) == valid
        if kernel is None or not trees_ok:
            return
        try:
            g = np.asarray(kernel.gram(trees_ok, dtype="float64"))
        except (JkernError, FloatingPointError):  # a documented limit, or float64 overflow
            return
        assert g.shape == (len(trees_ok),) * 2
        assert np.all(np.isfinite(g)) and np.allclose(g, g.T, rtol=1e-12)
        # K(t, t) > 0, except where λ, μ ~ 1e-300 make it underflow float64 (then 0)
        tiny = min(lam, mu if name == "PTK" else 1.0) < 1e-100
        assert np.all(np.diag(g) >= 0) if tiny else np.all(np.diag(g) > 0)

    check()


@st.composite
def labelled_grams(draw):
    n = draw(st.sampled_from([0, 5]))
    x = np.asarray(draw(st.lists(st.floats(-3, 3), min_size=2 * n, max_size=2 * n)),
                   np.float64).reshape(n, 2)
    gram = x @ x.T + np.eye(n)
    if n and draw(st.booleans()):
        gram[draw(st.integers(0, n - 1)), 0] = draw(EDGE_FLOATS)
    labels = draw(st.lists(st.sampled_from([-1, 1]), min_size=n, max_size=n))
    if draw(st.booleans()):
        labels = [labels[0]] * n if n else labels  # one class
    return gram, labels


@pytest.mark.parametrize("profile", PROFILES)
def test_ksvm_on_random_grams_and_labels(profile):
    @profile
    @given(labelled_grams(), EDGE_FLOATS)
    def check(data, C):
        gram, labels = data
        sol = _jkern_error_or(lambda: svm.ksvm(gram, labels, C=C))
        if sol is None:
            return
        assert np.isfinite(gram).all() and len(set(labels)) == 2 and np.isfinite(C) and C > 0
        assert np.all(np.isfinite(np.asarray(sol.model.coef)))
        pred = np.asarray(sol.model.predict(gram))
        assert set(pred.tolist()) <= {-1, 1}

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_dcd_on_random_features(profile):
    @profile
    @given(st.integers(0, 2**31 - 1), EDGE_FLOATS, st.booleans(), st.booleans())
    def check(seed, C, poison, zero_row):
        n, d = 6, 3
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(n, d))
        if zero_row:
            x[0] = 0.0
        if poison:
            x[-1, 0] = np.nan
        y = np.where(np.arange(n) % 2 == 0, 1, -1)
        sol = _jkern_error_or(lambda: svm.dcd(x, y, C=C, key=jax.random.key(0)))
        if sol is None:
            return
        assert not poison and np.isfinite(C) and C > 0
        assert np.all(np.isfinite(np.asarray(sol.model.w)))

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_pa_on_random_sparse_vectors(profile):
    from jkern import SparseRows
    from jkern.pa import fit

    @profile
    @given(st.lists(st.dictionaries(st.integers(0, 7), st.sampled_from([1.0, 0.5, -2.0]),
                                    min_size=1, max_size=4), min_size=8, max_size=8),
           st.sampled_from(["block", "explicit", "linear"]), EDGE_FLOATS, st.booleans())
    def check(rows, mode, C, one_class):
        degree = 2
        X = SparseRows.from_rows(rows, n_features=8)
        y = [1] * len(rows) if one_class else [1 if i % 2 else -1 for i in range(len(rows))]
        sol = _jkern_error_or(lambda: fit(X, y, mode=mode, degree=degree, C=C, epochs=2, key=None))
        if sol is None:
            return
        assert np.isfinite(C) and C > 0
        m = np.asarray(sol.model.decision_function(X))
        assert m.shape[0] == len(rows) and np.all(np.isfinite(m))

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_pa_binary_modes_on_random_sets(profile):
    """Kernel, splitting and slicing (binary features; other values are refused), against
    the pure kernel's margins: the same model or a jkern error."""
    from jkern import SparseRows
    from jkern.pa import fit

    @profile
    @given(st.lists(st.sets(st.integers(0, 9), min_size=0, max_size=4), min_size=8,
                    max_size=8),
           st.sampled_from(["splitting", "slicing"]), st.sampled_from([None, 0, 3]),
           EDGE_FLOATS, st.booleans())
    @example([{0, 1}, {1, 2, 3}, {0, 4}, set(), {5, 6, 7, 8}, {0, 1}, {9}, {2, 4}],
             "splitting", 3, 1.0, False)  # a valid one, in every profile
    def check(sets, mode, n_common, C, real):
        rows = [{f: (0.5 if real else 1.0) for f in s} for s in sets]
        X = SparseRows.from_rows(rows, n_features=10)
        y = [1 if i % 3 else -1 for i in range(len(rows))]
        sol = _jkern_error_or(lambda: fit(X, y, mode=mode, degree=2, C=C, epochs=2,
                                          n_common=n_common, key=None))
        if sol is None:
            assert real or not (np.isfinite(C) and C > 0)
            return
        assert not real and np.isfinite(C) and C > 0
        pure = fit(X, y, mode="kernel", degree=2, C=C, epochs=2, key=None)
        np.testing.assert_array_equal(np.asarray(sol.stats["updated"]),
                                      np.asarray(pure.stats["updated"]))
        np.testing.assert_allclose(np.asarray(sol.model.decision_function(X)),
                                   np.asarray(pure.model.decision_function(X)), atol=1e-9)

    check()


# A fixed pool of parseable trees: learners see the same shapes (few compilations).
POOL = [parse_penn(t) for t in ("(S (A a))", "(S (B b))", "(S (A a)(B b))", "(S (C c))",
                                "(S (A b)(C a))", "(S (B a)(A c))")]
LABEL_SETS = st.sampled_from([[1, -1, 1, -1, 1, -1], [1] * 6, ["x", "y", "x", "y", "z", "z"],
                              ["only"] * 6, [0, 1, 0, 1, 0, 1]])


@pytest.mark.parametrize("profile", PROFILES)
def test_cpa_on_random_labels_and_C(profile):
    @profile
    @given(LABEL_SETS, EDGE_FLOATS)
    @example([1, -1, 1, -1, 1, -1], 1.0)  # a valid one, in every profile
    def check(labels, C):
        sol = _jkern_error_or(lambda: svm.cpa(POOL, labels, kernel=jkern.SST(0.4), C=C,
                                              key=jax.random.key(0)))
        if sol is None:
            return
        assert len(set(labels)) == 2 and np.isfinite(C) and C > 0
        pred = np.asarray(sol.model.predict(POOL)).tolist()
        assert set(pred) <= {-1, 1}

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_nystrom_svm_on_random_landmarks_labels_and_C(profile):
    @profile
    @given(st.sampled_from([-1, 0, 1, 3, 6, 7]), LABEL_SETS, EDGE_FLOATS)
    @example(3, ["x", "y", "x", "y", "z", "z"], 1.0)  # a valid one, in every profile
    def check(landmarks, labels, C):
        projector = _jkern_error_or(lambda: jkern.fit_nystrom(
            jkern.SST(0.4), POOL, landmarks=landmarks, key=jax.random.key(0)))
        if projector is None:
            assert not 1 <= landmarks <= len(POOL)
            return
        assert 1 <= landmarks <= len(POOL)
        sol = _jkern_error_or(lambda: jkern.train_nystrom_svm(projector, POOL, labels, C=C,
                                                              key=jax.random.key(1)))
        if sol is None:
            return
        assert len(set(map(str, labels))) >= 2 and np.isfinite(C) and C > 0
        pred = sol.model.predict(POOL)
        assert len(pred) == len(POOL) and set(map(str, pred)) <= set(map(str, labels))

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_kda_on_random_features_and_labels(profile):
    from jkern import kda

    @profile
    @given(st.integers(0, 2**31 - 1), st.sampled_from([None, float("nan"), float("inf")]),
           st.sampled_from([[0, 1, 2, 0, 1, 2, 0, 1], [0] * 8, [0, 1, 0, 1, 0, 1, 0, 5]]),
           EDGE_FLOATS)
    @example(0, None, [0, 1, 2, 0, 1, 2, 0, 1], 0.5)  # a valid one, in every profile
    def check(seed, poison, labels, l2):
        rng = np.random.default_rng(seed)
        c = rng.normal(size=(8, 4))
        if poison is not None:
            c[3, 2] = poison
        model = kda.KDA.init(np.eye(4), (0, 1, 2), key=jax.random.key(0), hidden=(8,))
        sol = _jkern_error_or(lambda: kda.fit(c, labels, model=model, key=jax.random.key(1), l2=l2,
                                              epochs=3, batch_size=4))
        if sol is None:
            return
        assert poison is None and set(labels) <= {0, 1, 2} and np.isfinite(l2) and l2 >= 0
        assert np.all(np.isfinite(np.asarray(sol.model.head(sol.model.embed(jnp.asarray(c))))))
        assert set(np.asarray(sol.model.predict(c)).tolist()) <= {0, 1, 2}

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_distant_supervision_on_random_problems(profile):
    from jkern import ds

    @profile
    @given(st.integers(0, 2**31 - 1), st.sampled_from([None, float("nan"), float("inf")]),
           st.booleans(), EDGE_FLOATS, EDGE_FLOATS)
    @example(0, None, False, 1.0, 1.0)  # a valid one, in every profile
    def check(seed, poison, bad_pair, lam, mu):
        rng = np.random.default_rng(seed)
        n, d, p, k = 12, 5, 4, 2
        x = rng.normal(size=(n, d))
        if poison is not None:
            x[2, 1] = poison
        pairs = rng.integers(0, p, n)
        pairs[:p] = np.arange(p)  # every pair has a mention
        if bad_pair:
            pairs[-1] = p + 3  # a pair id past the relations' rows
        relations = rng.random((p, k)) < 0.5
        sol = _jkern_error_or(lambda: ds.fit(x, pairs, relations, lam=lam, mu=mu,
                                             max_iter=50, key=None))
        if sol is None:
            return
        assert poison is None and not bad_pair
        assert all(np.isfinite(v) and v > 0 for v in (lam, mu))
        if int(sol.result) != int(RESULTS.successful):  # reported, never silent
            assert int(sol.result) in (int(RESULTS.nonfinite), int(RESULTS.max_iter_reached))
            with pytest.raises(JkernError):
                sol.check(True)
            return
        assert np.isfinite(float(sol.stats["primal"]))

    check()
