"""Evaluation metrics for classifiers and rankers (numpy; inputs may be lists, numpy or JAX arrays).

Conventions: a precision or recall whose denominator is zero is 0.0, and F1 is 0.0 when
precision + recall = 0 (scikit-learn's ``zero_division=0``). Binary relevance labels are 0/1,
±1 or booleans, and 1 (True) is the relevant class. See ``docs/metrics.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .errors import InputError

__all__ = [
    "accuracy", "approximate_randomization", "average_precision", "binary_prf",
    "mean_average_precision", "pr_auc", "precision_recall_curve", "precision_recall_f1",
]

_TIE_TOL = 1e-12  # relative; shuffled differences this close to the observed one count as ties


def _as_1d(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == object and all(isinstance(v, str) for v in arr.flat):
        arr = arr.astype(str)  # string labels held as objects (a model's predict)
    if arr.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise InputError(f"{name} is empty")
    return arr


def _pair(a: Any, b: Any, name_a: str, name_b: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = _as_1d(a, name_a), _as_1d(b, name_b)
    if a.shape != b.shape:
        raise InputError(f"{name_a} and {name_b} have different lengths: {a.size} != {b.size}")
    return a, b


def _labels(*arrays: np.ndarray) -> np.ndarray:
    """Sorted distinct labels of several label arrays (all numeric or all strings)."""
    kinds = {"n" if x.dtype.kind in "biuf" else x.dtype.kind for x in arrays}
    if len(kinds) > 1 or "c" in kinds:
        types = ", ".join(str(x.dtype) for x in arrays)
        raise InputError(f"y_true and the predictions hold labels of incompatible types: {types}")
    return np.unique(np.concatenate(arrays))


def _relevance(y: np.ndarray, name: str = "y_true") -> np.ndarray:
    """Binary labels (0/1, ±1 or bool) to a boolean 'is relevant' array."""
    if y.dtype == np.bool_:
        return y
    if np.issubdtype(y.dtype, np.number):
        values = set(np.unique(y).tolist())
        if values <= {0, 1} or values <= {-1, 1}:
            return y == 1
    raise InputError(f"{name} must hold binary labels 0/1 or -1/+1, got {np.unique(y)[:5]}")


def _scores(scores: Any, n: int) -> np.ndarray:
    s = _as_1d(scores, "scores").astype(np.float64)
    if s.size != n:
        raise InputError(f"y_true and scores have different lengths: {n} != {s.size}")
    if not np.all(np.isfinite(s)):
        raise InputError("scores must be finite (no NaN or inf)")
    return s


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def _prf(tp: Any, n_pred: Any, n_true: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall, F1 from counts (elementwise, zero-division gives 0)."""
    p, r = _div(tp, n_pred), _div(tp, n_true)
    return p, r, _div(2.0 * p * r, p + r)


def accuracy(y_true: Any, y_pred: Any) -> float:
    """Fraction of examples whose prediction equals the true label.

    Args:
        y_true: True labels, shape ``(n,)``.
        y_pred: Predicted labels, shape ``(n,)``.

    Returns:
        The accuracy in [0, 1].

    >>> accuracy([1, 0, 1, 1], [1, 1, 1, 0])
    0.5
    """
    t, p = _pair(y_true, y_pred, "y_true", "y_pred")
    return int(np.count_nonzero(t == p)) / t.size


def precision_recall_f1(y_true: Any, y_pred: Any, *, labels: Sequence[Any] | None = None) -> dict:
    """Per-class precision, recall, F1 and support, with macro and micro averages.

    Args:
        y_true: True labels, shape ``(n,)`` (ints, strings, ...).
        y_pred: Predicted labels, shape ``(n,)``.
        labels: Classes to report, in this order. Default: the sorted union of the labels in
            ``y_true`` and ``y_pred``. Examples of other classes are ignored (as in scikit-learn).

    Returns:
        ``{"per_class": {label: {"precision", "recall", "f1", "support"}}, "macro": {...},
        "micro": {...}}``. Macro values are unweighted means of the per-class values; micro
        values come from counts summed over the classes. Both carry the total ``support``.

    Examples:
        >>> r = precision_recall_f1(["a", "b", "b"], ["a", "a", "b"])
        >>> r["per_class"]["a"]
        {'precision': 0.5, 'recall': 1.0, 'f1': 0.6666666666666666, 'support': 1}
        >>> round(r["macro"]["f1"], 4), r["micro"]["f1"]
        (0.6667, 0.6666666666666666)
    """
    t, p = _pair(y_true, y_pred, "y_true", "y_pred")
    if labels is None:
        classes = _labels(t, p)
    else:
        classes = _as_1d(labels, "labels")
        if np.unique(classes).size != classes.size:
            raise InputError("labels contains duplicates")
    is_t = t[None, :] == classes[:, None]
    is_p = p[None, :] == classes[:, None]
    tp = np.count_nonzero(is_t & is_p, axis=1)
    n_pred, n_true = np.count_nonzero(is_p, axis=1), np.count_nonzero(is_t, axis=1)
    prec, rec, f1 = _prf(tp, n_pred, n_true)
    per_class = {
        (c.item() if isinstance(c, np.generic) else c): {
            "precision": float(a), "recall": float(b), "f1": float(f), "support": int(s)}
        for c, a, b, f, s in zip(classes, prec, rec, f1, n_true)
    }
    support = int(n_true.sum())
    mp, mr, mf = _prf(tp.sum(), n_pred.sum(), n_true.sum())
    return {
        "per_class": per_class,
        "macro": {"precision": float(np.mean(prec)), "recall": float(np.mean(rec)),
                  "f1": float(np.mean(f1)), "support": support},
        "micro": {"precision": float(mp), "recall": float(mr), "f1": float(mf),
                  "support": support},
    }


def binary_prf(y_true: Any, y_pred: Any, *, positive: Any = 1) -> tuple[float, float, float]:
    """Precision, recall and F1 of one positive class.

    Args:
        y_true: True labels, shape ``(n,)``.
        y_pred: Predicted labels, shape ``(n,)``.
        positive: The positive class.

    Returns:
        ``(precision, recall, f1)``; 0.0 where a denominator is zero.

    >>> binary_prf([1, 1, 0, 0], [1, 0, 1, 0])
    (0.5, 0.5, 0.5)
    >>> binary_prf([1, 0], [0, 0])  # no positive predictions
    (0.0, 0.0, 0.0)
    """
    t, p = _pair(y_true, y_pred, "y_true", "y_pred")
    tt, pp = t == positive, p == positive
    prec, rec, f1 = _prf(np.count_nonzero(tt & pp), np.count_nonzero(pp), np.count_nonzero(tt))
    return float(prec), float(rec), float(f1)


def average_precision(y_true: Any, scores: Any) -> float:
    """Average precision of a ranking: mean precision@k over the ranks k of the relevant items.

    Items are ranked by descending score; tied scores keep their input order (stable sort), so
    with ties the result depends on that order (scikit-learn's ``average_precision_score``
    instead treats a tie group as one threshold). A ranking without relevant items gives 0.0.

    Args:
        y_true: Binary relevance (0/1 or ±1), shape ``(n,)``.
        scores: Scores, higher = more relevant, shape ``(n,)``.

    Returns:
        Average precision in [0, 1].

    >>> average_precision([0, 1, 1, 0], [0.9, 0.8, 0.3, 0.1])  # (1/2 + 2/3) / 2
    0.5833333333333333
    """
    rel = _relevance(_as_1d(y_true, "y_true"))
    s = _scores(scores, rel.size)
    ranked = rel[np.argsort(-s, kind="stable")]
    n_rel = int(np.count_nonzero(ranked))
    if n_rel == 0:
        return 0.0
    prec_at_k = np.cumsum(ranked) / np.arange(1, ranked.size + 1)
    return float(np.sum(prec_at_k[ranked]) / n_rel)


def mean_average_precision(
    queries: Iterable[tuple[Any, Any]], *, skip_empty: bool = False
) -> float:
    """Mean average precision (MAP) over queries, each a ranking of candidates.

    Args:
        queries: Iterable of ``(y_true, scores)`` pairs, one per query (see
            :func:`average_precision`).
        skip_empty: Drop queries without relevant items instead of counting them as AP = 0.

    Returns:
        The mean of the per-query average precisions.

    >>> mean_average_precision([([1, 0], [0.9, 0.1]), ([0, 1], [0.9, 0.1]), ([0, 0], [1, 2])])
    0.5
    >>> mean_average_precision([([1, 0], [0.9, 0.1]), ([0, 0], [1, 2])], skip_empty=True)
    1.0
    """
    aps = []
    for i, query in enumerate(queries):
        try:
            y, s = query
        except (TypeError, ValueError) as e:
            raise InputError(f"query {i} is not a (y_true, scores) pair") from e
        try:
            rel = _relevance(_as_1d(y, "y_true"))
            if not (skip_empty and not rel.any()):
                aps.append(average_precision(rel, s))
        except ValueError as e:
            raise InputError(f"query {i}: {e}") from e
    if not aps:
        raise InputError("no queries" + (" with a relevant item" if skip_empty else ""))
    return float(np.mean(aps))


def precision_recall_curve(y_true: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision-recall pairs at every distinct score threshold (scikit-learn's semantics).

    ``thresholds`` are the distinct scores in increasing order; ``precision[i]`` and
    ``recall[i]`` are those of predicting relevant every item with score >= ``thresholds[i]``.
    A final point ``precision = 1, recall = 0`` (no threshold) is appended. If ``y_true`` has no
    relevant item, recall is 1 everywhere and a warning is issued, as scikit-learn does.

    Args:
        y_true: Binary relevance (0/1 or ±1), shape ``(n,)``.
        scores: Scores, higher = more relevant, shape ``(n,)``.

    Returns:
        ``(precision, recall, thresholds)``, of lengths ``t + 1``, ``t + 1`` and ``t``.

    >>> p, r, t = precision_recall_curve([0, 1, 1, 0], [0.1, 0.4, 0.35, 0.8])
    >>> p.tolist(), r.tolist(), t.tolist()
    ([0.5, 0.6666666666666666, 0.5, 0.0, 1.0], [1.0, 1.0, 0.5, 0.0, 0.0], [0.1, 0.35, 0.4, 0.8])
    """
    rel = _relevance(_as_1d(y_true, "y_true"))
    s = _scores(scores, rel.size)
    order = np.argsort(-s, kind="stable")
    s, rel = s[order], rel[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]  # last index of each tie group
    tps = np.cumsum(rel)[last].astype(np.float64)
    precision = _div(tps, last + 1.0)
    if tps[-1] == 0:
        warnings.warn("No positive class found in y_true, recall is set to one for all "
                      "thresholds.", UserWarning, stacklevel=2)
        recall = np.ones_like(tps)
    else:
        recall = tps / tps[-1]
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0], s[last][::-1]


def pr_auc(y_true: Any, scores: Any) -> float:
    """Area under :func:`precision_recall_curve` by the trapezoidal rule.

    Equals ``sklearn.metrics.auc(recall, precision)``. Unlike :func:`average_precision` (a
    step-wise sum, precision held constant between recall levels), the trapezoids interpolate
    precision linearly between points, which tends to overestimate the area (Davis & Goadrich,
    2006); the two differ in general.

    Args:
        y_true: Binary relevance (0/1 or ±1), shape ``(n,)``.
        scores: Scores, higher = more relevant, shape ``(n,)``.

    Returns:
        The area, in [0, 1].

    >>> round(pr_auc([0, 1, 1, 0], [0.1, 0.4, 0.35, 0.8]), 4)  # average precision: 0.5833
    0.4167
    """
    p, r, _ = precision_recall_curve(y_true, scores)
    return float(np.sum((r[:-1] - r[1:]) * (p[:-1] + p[1:]) / 2.0))


def _swap_masks(rng: np.random.Generator, n_shuffles: int, n: int) -> Iterator[np.ndarray]:
    """Boolean swap masks, ``(chunk, n)`` at a time; both test paths draw exactly these."""
    chunk = max(1, min(1000, 4_000_000 // n))
    for start in range(0, n_shuffles, chunk):
        yield rng.random((min(chunk, n_shuffles - start), n)) < 0.5


def _count_features(name: str, t: np.ndarray, a: np.ndarray, b: np.ndarray):
    """Per-example count contributions of systems a and b and the metric as a function of counts."""
    if name == "accuracy":
        n = t.size
        return (a == t)[:, None], (b == t)[:, None], lambda c: c[:, 0] / n
    if name == "f1":
        _relevance(_labels(t, a, b), "labels for metric='f1'")
        n_pos = np.count_nonzero(t == 1)
        def feats(p: np.ndarray) -> np.ndarray:
            return np.stack([(p == 1) & (t == 1), p == 1], axis=1)
        return feats(a), feats(b), lambda c: _prf(c[:, 0], c[:, 1], n_pos)[2]
    if name == "macro_f1":
        classes = _labels(t, a, b)
        k = classes.size
        n_true = np.count_nonzero(t[:, None] == classes[None, :], axis=0)
        def feats(p: np.ndarray) -> np.ndarray:
            onehot = p[:, None] == classes[None, :]
            return np.concatenate([onehot & (t == p)[:, None], onehot], axis=1)
        def macro(c: np.ndarray) -> np.ndarray:
            # classes seen in y_true or in this system's predictions, as precision_recall_f1
            f1 = _prf(c[:, :k], c[:, k:], n_true)[2]
            return f1.sum(axis=1) / ((c[:, k:] > 0) | (n_true > 0)).sum(axis=1)
        return feats(a), feats(b), macro
    raise InputError(f"unknown metric {name!r}; use 'accuracy', 'f1', 'macro_f1' or a callable")


def approximate_randomization(
    y_true: Any,
    pred_a: Any,
    pred_b: Any,
    *,
    metric: str | Callable[[np.ndarray, np.ndarray], float] = "accuracy",
    n_shuffles: int = 10_000,
    seed: int | np.random.Generator | None = 0,
) -> dict:
    """Approximate randomization test (Noreen, 1989; Yeh, 2000) for two systems' predictions.

    The observed statistic is ``d = |metric(y_true, pred_a) - metric(y_true, pred_b)|``. Each
    shuffle swaps every example's two predictions independently with probability 1/2 and
    recomputes ``d'``; the p-value is ``(#{d' >= d} + 1) / (n_shuffles + 1)``. A ``d'`` short
    of ``d`` by at most ``1e-12 * max(1, d)`` counts as ``>=``, so rounding never breaks a tie.
    "accuracy", "f1" and "macro_f1" are computed for all shuffles at once with array
    operations; a callable is called twice per shuffle. Both draw the same swap masks
    from ``seed``, so for the same seed they give the same p-value for the same metric.

    Args:
        y_true: True labels, shape ``(n,)``.
        pred_a: Predictions of system A, shape ``(n,)``.
        pred_b: Predictions of system B, shape ``(n,)``.
        metric: "accuracy"; "f1" (binary, labels 0/1 or ±1, positive class 1); "macro_f1"
            (over the classes in ``y_true`` or the system's predictions, as
            :func:`precision_recall_f1`); or a callable ``metric(y_true, y_pred) -> float``.
        n_shuffles: Number of random shuffles, >= 1.
        seed: Seed or ``numpy.random.Generator`` for the swap masks.

    Returns:
        ``{"p_value": float, "observed_difference": float, "n_shuffles": int}``.

    >>> y = [1, 0, 1, 1, 0]
    >>> approximate_randomization(y, [1, 0, 0, 1, 0], [1, 0, 0, 1, 0], n_shuffles=99)["p_value"]
    1.0
    """
    t, a = _pair(y_true, pred_a, "y_true", "pred_a")
    _, b = _pair(y_true, pred_b, "y_true", "pred_b")
    if isinstance(n_shuffles, bool) or not isinstance(n_shuffles, int | np.integer):
        raise InputError(f"n_shuffles must be an integer, got {n_shuffles!r}")
    if n_shuffles < 1:
        raise InputError(f"n_shuffles must be >= 1, got {n_shuffles}")
    n_shuffles = int(n_shuffles)
    rng = np.random.default_rng(seed)
    count = 0
    if isinstance(metric, str):
        fa, fb, value = _count_features(metric, t, a, b)
        fa, fb = fa.astype(np.float64), fb.astype(np.float64)
        ca, cb = fa.sum(axis=0, keepdims=True), fb.sum(axis=0, keepdims=True)
        observed = float(np.abs(value(ca) - value(cb))[0])
        changed = np.flatnonzero(np.any(fa != fb, axis=1))  # only these swaps change counts
        delta = (fb - fa)[changed]
        threshold = observed - _TIE_TOL * max(1.0, observed)
        for mask in _swap_masks(rng, n_shuffles, t.size):
            shift = mask[:, changed].astype(np.float64) @ delta
            d = np.abs(value(ca + shift) - value(cb - shift))
            count += int(np.count_nonzero(d >= threshold))
    elif callable(metric):
        observed = abs(float(metric(t, a)) - float(metric(t, b)))
        threshold = observed - _TIE_TOL * max(1.0, observed)
        for masks in _swap_masks(rng, n_shuffles, t.size):
            for mask in masks:
                a2, b2 = np.where(mask, b, a), np.where(mask, a, b)
                count += abs(float(metric(t, a2)) - float(metric(t, b2))) >= threshold
    else:
        raise InputError(f"metric must be a string or a callable, got {type(metric).__name__}")
    return {
        "p_value": (count + 1) / (n_shuffles + 1),
        "observed_difference": observed,
        "n_shuffles": n_shuffles,
    }
