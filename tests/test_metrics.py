"""Tests of jkern.metrics, mostly against scikit-learn on random data with fixed seeds."""

import time
import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from jkern.errors import InputError
from jkern.metrics import (
    accuracy,
    approximate_randomization,
    average_precision,
    binary_prf,
    mean_average_precision,
    pr_auc,
    precision_recall_curve,
    precision_recall_f1,
)


def _noisy(rng, y, p_correct, classes):
    """Copy of y where each label is replaced by a random class with probability 1 - p_correct."""
    return np.where(rng.random(y.size) < p_correct, y, rng.choice(classes, size=y.size))


# --- accuracy, precision / recall / F1 ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_accuracy_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, 100)
    p = _noisy(rng, y, 0.6, np.arange(4))
    assert accuracy(y, p) == pytest.approx(skm.accuracy_score(y, p), abs=1e-15)
    ys, ps = np.array(["x", "y", "z", "w"])[y], np.array(["x", "y", "z", "w"])[p]
    assert accuracy(list(ys), list(ps)) == pytest.approx(skm.accuracy_score(ys, ps), abs=1e-15)


def _check_prf_against_sklearn(y, p, labels=None):
    res = precision_recall_f1(y, p, labels=labels)
    sk_labels = np.unique(np.concatenate([y, p])) if labels is None else labels
    sp, sr, sf, ss = skm.precision_recall_fscore_support(
        y, p, labels=sk_labels, average=None, zero_division=0
    )
    assert list(res["per_class"]) == [lab.item() if hasattr(lab, "item") else lab
                                      for lab in sk_labels]
    for i, row in enumerate(res["per_class"].values()):
        assert row["precision"] == pytest.approx(sp[i], abs=1e-12)
        assert row["recall"] == pytest.approx(sr[i], abs=1e-12)
        assert row["f1"] == pytest.approx(sf[i], abs=1e-12)
        assert row["support"] == ss[i]
    for avg in ("macro", "micro"):
        ap, ar, af, _ = skm.precision_recall_fscore_support(
            y, p, labels=sk_labels, average=avg, zero_division=0
        )
        assert res[avg]["precision"] == pytest.approx(ap, abs=1e-12)
        assert res[avg]["recall"] == pytest.approx(ar, abs=1e-12)
        assert res[avg]["f1"] == pytest.approx(af, abs=1e-12)
        assert res[avg]["support"] == int(ss.sum())


@pytest.mark.parametrize("seed", range(5))
def test_prf_multiclass_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    k = 2 + seed
    y = rng.integers(0, k, 60)
    p = _noisy(rng, y, 0.5, np.arange(k + 1))  # may predict a class never in y_true
    _check_prf_against_sklearn(y, p)


def test_prf_string_labels_and_explicit_labels_match_sklearn():
    rng = np.random.default_rng(7)
    names = np.array(["DESC", "ENTY", "HUM", "LOC", "NUM"])
    y = rng.choice(names, 80)
    p = _noisy(rng, y, 0.6, names)
    _check_prf_against_sklearn(y, p)
    _check_prf_against_sklearn(y, p, labels=["NUM", "ABBR", "HUM"])  # ABBR absent everywhere
    assert list(precision_recall_f1(y, p, labels=["NUM", "HUM"])["per_class"]) == ["NUM", "HUM"]


def test_string_labels_held_as_objects_pair_with_string_arrays():
    """A model's predict gives string classes as an object array; the metrics take it beside
    a plain string array (as they do two string arrays), and still refuse mixed kinds."""
    rng = np.random.default_rng(3)
    names = np.array(["DESC", "ENTY", "HUM"])
    y = rng.choice(names, 40)
    p = _noisy(rng, y, 0.5, names)
    as_objects = p.astype(object)
    assert precision_recall_f1(y, as_objects) == precision_recall_f1(y, p)
    assert accuracy(y, as_objects) == accuracy(y, p)
    with pytest.raises(InputError, match="incompatible"):
        precision_recall_f1(y, np.array([1, "a"] * 20, dtype=object))


def test_prf_class_absent_from_predictions():
    res = precision_recall_f1([0, 1, 2, 2], [0, 0, 2, 2])
    assert res["per_class"][1] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert res["per_class"][0] == {"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1}
    assert res["macro"]["f1"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert res["micro"]["precision"] == res["micro"]["recall"] == 0.75


@pytest.mark.parametrize("seed", range(3))
def test_binary_prf_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.choice([-1, 1], 50)
    p = _noisy(rng, y, 0.7, [-1, 1])
    for pos in (1, -1):
        ref = skm.precision_recall_fscore_support(
            y, p, pos_label=pos, average="binary", zero_division=0
        )[:3]
        assert binary_prf(y, p, positive=pos) == pytest.approx(ref, abs=1e-12)


def test_binary_prf_edge_cases():
    assert binary_prf([1, 1, 0], [0, 0, 0]) == (0.0, 0.0, 0.0)  # no positive predictions
    assert binary_prf([0, 0, 0], [1, 0, 0]) == (0.0, 0.0, 0.0)  # no positive examples
    assert binary_prf([0, 0], [0, 0]) == (0.0, 0.0, 0.0)
    assert binary_prf(["y", "n", "y"], ["y", "y", "y"], positive="y") == pytest.approx(
        (2 / 3, 1.0, 0.8)
    )


# --- ranking metrics ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_average_precision_matches_sklearn_without_ties(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 40)
    y[0] = 1
    s = rng.normal(size=40)
    assert average_precision(y, s) == pytest.approx(skm.average_precision_score(y, s), abs=1e-12)
    assert average_precision(2 * y - 1, s) == pytest.approx(average_precision(y, s), abs=0)


def test_average_precision_by_hand():
    # ranking by score: relevant at ranks 1, 3 and 6 -> (1/1 + 2/3 + 3/6) / 3
    y = [0, 1, 0, 1, 0, 1]
    s = [0.5, 0.9, 0.7, 0.6, 0.4, 0.1]
    assert average_precision(y, s) == pytest.approx((1 + 2 / 3 + 3 / 6) / 3)
    assert average_precision([1, 1, 1], [3, 2, 1]) == 1.0
    assert average_precision([0, 0, 0], [3, 2, 1]) == 0.0
    # ties keep input order (stable sort)
    assert average_precision([0, 1], [1.0, 1.0]) == 0.5
    assert average_precision([1, 0], [1.0, 1.0]) == 1.0


def test_mean_average_precision():
    q1 = ([0, 1, 0, 1, 0, 1], [0.5, 0.9, 0.7, 0.6, 0.4, 0.1])  # AP = 13/18
    q2 = ([1, 0], [0.2, 0.8])  # AP = 1/2
    q3 = ([-1, -1], [0.2, 0.8])  # no relevant item
    assert mean_average_precision([q1, q2]) == pytest.approx((13 / 18 + 1 / 2) / 2)
    assert mean_average_precision(iter([q1, q2, q3])) == pytest.approx((13 / 18 + 1 / 2) / 3)
    assert mean_average_precision([q1, q2, q3], skip_empty=True) == pytest.approx(
        (13 / 18 + 1 / 2) / 2
    )
    with pytest.raises(ValueError, match="no queries"):
        mean_average_precision([])
    with pytest.raises(ValueError, match="relevant"):
        mean_average_precision([q3], skip_empty=True)
    with pytest.raises(ValueError, match="query 1"):
        mean_average_precision([q1, ([1, 0], [0.1])])


@pytest.mark.parametrize("seed", range(5))
def test_precision_recall_curve_and_auc_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = 30 + 10 * seed
    y = rng.choice([-1, 1], n) if seed % 2 else rng.integers(0, 2, n)
    y[0] = 1
    s = np.round(rng.random(n), 1) if seed < 3 else rng.normal(size=n)  # ties for seed < 3
    p, r, t = precision_recall_curve(y, s)
    sp, sr, st = skm.precision_recall_curve(y, s)
    np.testing.assert_allclose(p, sp, rtol=0, atol=1e-14)
    np.testing.assert_allclose(r, sr, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(t, st)
    assert pr_auc(y, s) == pytest.approx(skm.auc(sr, sp), abs=1e-12)


def test_precision_recall_curve_edge_cases():
    p, r, t = precision_recall_curve([1, 0, 1], [2.0, 2.0, 2.0])  # a single threshold
    assert p.tolist() == [2 / 3, 1.0] and r.tolist() == [1.0, 0.0] and t.tolist() == [2.0]
    with pytest.warns(UserWarning, match="No positive class"):
        p, r, t = precision_recall_curve([0, 0, 0], [0.3, 0.2, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sp, sr, st = skm.precision_recall_curve([0, 0, 0], [0.3, 0.2, 0.1])
    np.testing.assert_array_equal(p, sp)
    np.testing.assert_array_equal(r, sr)
    np.testing.assert_array_equal(t, st)


def test_pr_auc_differs_from_average_precision():
    y, s = [0, 1, 1, 0], [0.1, 0.4, 0.35, 0.8]
    assert average_precision(y, s) == pytest.approx(7 / 12)
    assert pr_auc(y, s) == pytest.approx(5 / 12)


# --- approximate randomization ------------------------------------------------------------------


def _two_systems(seed, n=500, acc_a=0.85, acc_b=0.75, k=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    wrong = (y + rng.integers(1, k, n)) % k if k > 2 else 1 - y
    a = np.where(rng.random(n) < acc_a, y, wrong)
    b = np.where(rng.random(n) < acc_b, y, (y + rng.integers(1, k, n)) % k if k > 2 else 1 - y)
    return y, a, b


@pytest.mark.parametrize("metric", ["accuracy", "f1", "macro_f1", accuracy])
def test_randomization_identical_systems_give_p_one(metric):
    y, a, _ = _two_systems(0, n=100)
    res = approximate_randomization(y, a, a.copy(), metric=metric, n_shuffles=200)
    assert res == {"p_value": 1.0, "observed_difference": 0.0, "n_shuffles": 200}


@pytest.mark.parametrize("metric", ["accuracy", "f1", "macro_f1"])
def test_randomization_better_system_is_significant_and_fast(metric):
    y, a, b = _two_systems(1)
    start = time.perf_counter()
    res = approximate_randomization(y, a, b, metric=metric, n_shuffles=10_000, seed=3)
    elapsed = time.perf_counter() - start
    assert res["p_value"] < 0.01
    assert res["n_shuffles"] == 10_000
    assert elapsed < 1.0
    again = approximate_randomization(y, a, b, metric=metric, n_shuffles=10_000, seed=3)
    assert again == res


def test_randomization_observed_difference_and_minimum_p():
    y, a, b = _two_systems(2, n=200, k=3)
    res = approximate_randomization(y, a, b, n_shuffles=50)
    assert res["observed_difference"] == pytest.approx(abs(accuracy(y, a) - accuracy(y, b)))
    res = approximate_randomization(y, a, b, metric="macro_f1", n_shuffles=50)
    macro = [precision_recall_f1(y, p)["macro"]["f1"] for p in (a, b)]
    assert res["observed_difference"] == pytest.approx(abs(macro[0] - macro[1]), abs=1e-12)
    # all correct vs all wrong: a shuffle reaches d' = d only if it swaps all or none of 60
    res = approximate_randomization(y[:60], y[:60], (y[:60] + 1) % 3, n_shuffles=999)
    assert res["observed_difference"] == 1.0 and res["p_value"] == 1 / 1000


def test_randomization_seed_reproducibility():
    y, a, b = _two_systems(4, n=300, acc_a=0.8, acc_b=0.78)
    p = [approximate_randomization(y, a, b, n_shuffles=2000, seed=s)["p_value"] for s in (5, 5, 6)]
    assert p[0] == p[1] and p[0] != p[2]
    assert 0.05 < p[0] < 1.0
    gen = approximate_randomization(y, a, b, n_shuffles=2000, seed=np.random.default_rng(5))
    assert gen["p_value"] == p[0]


@pytest.mark.parametrize(
    ("name", "func", "k"),
    [
        ("accuracy", accuracy, 2),
        ("accuracy", accuracy, 4),
        ("f1", lambda t, p: binary_prf(t, p, positive=1)[2], 2),
        ("macro_f1", lambda t, p: precision_recall_f1(t, p)["macro"]["f1"], 4),
    ],
)
def test_randomization_vectorized_agrees_with_callable(name, func, k):
    y, a, b = _two_systems(5 + k, n=150, acc_a=0.8, acc_b=0.74, k=k)
    if k > 2:
        b[:3] = k  # B predicts a class that is neither in y_true nor in A's predictions
    for seed in (0, 1):
        fast = approximate_randomization(y, a, b, metric=name, n_shuffles=1000, seed=seed)
        slow = approximate_randomization(y, a, b, metric=func, n_shuffles=1000, seed=seed)
        assert fast["p_value"] == slow["p_value"]
        assert fast["observed_difference"] == pytest.approx(slow["observed_difference"], abs=1e-12)
        assert 0.002 < fast["p_value"] < 1.0  # not a degenerate case


def test_randomization_f1_on_pm1_labels():
    y, a, b = _two_systems(8, n=200)
    res01 = approximate_randomization(y, a, b, metric="f1", n_shuffles=500)
    res_pm = approximate_randomization(2 * y - 1, 2 * a - 1, 2 * b - 1, metric="f1", n_shuffles=500)
    assert res01 == res_pm


# --- input handling and errors ------------------------------------------------------------------


def test_accepts_jax_arrays():
    jnp = pytest.importorskip("jax.numpy")
    y, p = jnp.array([1, 0, 1, 1]), jnp.array([1, 1, 1, 0])
    assert accuracy(y, p) == 0.5
    assert average_precision(y, jnp.array([0.4, 0.3, 0.2, 0.1])) == pytest.approx(
        (1 + 2 / 3 + 3 / 4) / 3
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: accuracy([1, 0, 1], [1, 0]),
        lambda: precision_recall_f1([1, 0], [1, 0, 1]),
        lambda: binary_prf([1], [1, 0]),
        lambda: average_precision([1, 0], [0.5, 0.4, 0.3]),
        lambda: precision_recall_curve([1, 0, 1], [0.5, 0.4]),
        lambda: pr_auc([1, 0, 1], [0.5, 0.4]),
        lambda: mean_average_precision([([1, 0], [0.5])]),
        lambda: approximate_randomization([1, 0], [1, 0], [1, 0, 1]),
        lambda: approximate_randomization([1, 0, 1], [1, 0], [1, 0, 1]),
    ],
)
def test_mismatched_lengths_raise(call):
    with pytest.raises(ValueError, match="different lengths"):
        call()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: accuracy([], []), "empty"),
        (lambda: accuracy([[1, 0]], [[1, 0]]), "one-dimensional"),
        (lambda: average_precision([0, 2, 1], [0.1, 0.2, 0.3]), "binary"),
        (lambda: average_precision([0, -1, 1], [0.1, 0.2, 0.3]), "binary"),
        (lambda: precision_recall_curve(["a", "b"], [0.1, 0.2]), "binary"),
        (lambda: average_precision([0, 1], [0.1, np.nan]), "finite"),
        (lambda: precision_recall_f1([1, 0], [1, 0], labels=[1, 1]), "duplicates"),
        (lambda: precision_recall_f1([1, 2], ["1", "2"]), "incompatible types"),
        (lambda: approximate_randomization([1, 0], [1, 0], ["a", "b"], metric="macro_f1"),
         "incompatible types"),
        (lambda: approximate_randomization([1, 0], [1, 0], [0, 0], n_shuffles=0), "n_shuffles"),
        (lambda: approximate_randomization([1, 0], [1, 0], [0, 0], n_shuffles=2.5), "n_shuffles"),
        (lambda: approximate_randomization([1, 0], [1, 0], [0, 0], metric="auc"), "unknown"),
        (lambda: approximate_randomization([2, 0], [1, 0], [0, 0], metric="f1"), "binary"),
    ],
)
def test_invalid_inputs_raise(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_non_callable_metric_raises_an_input_error():
    with pytest.raises(InputError, match="string or a callable"):
        approximate_randomization([1, 0], [1, 0], [0, 0], metric=3)
