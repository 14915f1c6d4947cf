"""API fuzzing (issue 23): random trees, matrices, labels and hyperparameters, boundaries
included, given to the public kernels and learners. Each either gives a correct result or
raises a `jkern.errors` exception (or `TreeParseError`, one of them); never an error from
inside JAX, never NaN in a result. A few examples each by default; `-m slow` runs the long
profile (JKERN_FUZZ_EXAMPLES, default 200)."""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jkern
from jkern import svm
from jkern.errors import JkernError
from jkern.trees import parse_penn

# The short profile keeps shapes fixed (every new shape is a compilation: seconds each).
SHORT = settings(max_examples=8, deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=int(os.environ.get("JKERN_FUZZ_EXAMPLES", "200")),
                deadline=None, database=None, suppress_health_check=list(HealthCheck))
PROFILES = [pytest.param(SHORT, id="short"),
            pytest.param(LONG, id="long", marks=pytest.mark.slow)]

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
        assert np.all(np.diag(g) > 0)

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
        sol = _jkern_error_or(lambda: fit(X, y, mode=mode, degree=degree, C=C, epochs=2))
        if sol is None:
            return
        assert np.isfinite(C) and C > 0
        m = np.asarray(sol.model.decision_function(X))
        assert m.shape[0] == len(rows) and np.all(np.isfinite(m))

    check()
