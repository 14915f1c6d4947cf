"""Held-out evaluation of relation extraction (Mintz 2009, Riedel 2010, Grave 2014).

Every (test pair, relation) gets one score; the list ranked by score is compared with the
knowledge base's facts of the test pairs: precision-recall curve, its area, precision at the
top k. NA is not a relation: its column is left out.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import metrics
from ..errors import InputError


class RankedPairs(NamedTuple):
    """Every (pair, relation) item of a split ranked by score, highest first (ties in
    (pair, relation) order), NA left out: one entry per item, `[P * K]` each."""

    pair: np.ndarray  # int: the pair's row
    relation: np.ndarray  # int: the relation's column among the K (NA excluded: class k + 1)
    score: np.ndarray  # float64: the item's score
    in_kb: np.ndarray  # bool: whether the knowledge base holds the item (a fact)


def rank_pairs(pair_scores: Any, relations: Any) -> RankedPairs:
    """The (pair, relation) items of per-pair scores, ranked as `held_out` ranks them: highest
    score first, ties in (pair, relation) order (a stable sort).

    Args:
        pair_scores: `[P, C]` scores of the pairs, column 0 NA (`RelationModel.pair_scores`),
            or `[P, K]` without the NA column.
        relations: `[P, K]` bools, the KB relations of the pairs.

    Raises:
        InputError: shapes that do not match; a NaN or inf score.

    >>> r = rank_pairs([[0.0, 0.2, 0.9], [0.0, 0.9, 0.1]], [[False, True], [True, False]])
    >>> r.pair.tolist(), r.relation.tolist(), r.in_kb.tolist()
    ([0, 1, 0, 1], [1, 0, 0, 1], [True, True, False, False])
    """
    rel = np.asarray(relations)
    scores = np.asarray(pair_scores, np.float64)
    if rel.ndim != 2 or scores.ndim != 2 or scores.shape[0] != rel.shape[0]:
        raise InputError(f"pair_scores [P, C] and relations [P, K] must share P, got shapes "
                         f"{scores.shape} and {rel.shape}")
    if scores.shape[1] == rel.shape[1] + 1:
        scores = scores[:, 1:]
    elif scores.shape[1] != rel.shape[1]:
        raise InputError(f"pair_scores has {scores.shape[1]} columns for {rel.shape[1]} "
                         "relations (expected K, or K + 1 with NA first)")
    if not np.isfinite(scores).all():
        raise InputError("pair_scores hold NaN or inf (a pair without mentions?)")
    s = scores.ravel()
    order = np.argsort(-s, kind="stable")
    pair, relation = np.divmod(order, scores.shape[1])
    return RankedPairs(pair, relation, s[order], rel.astype(bool).ravel()[order])


def held_out(pair_scores: Any, relations: Any, *, top: tuple[int, ...] = (100, 200, 500)
             ) -> dict[str, Any]:
    """The held-out figures of per-pair scores.

    Args:
        pair_scores: `[P, C]` scores of the test pairs, column 0 NA (e.g.
            `RelationModel.pair_scores`), or `[P, K]` without the NA column.
        relations: `[P, K]` bools, the KB relations of the test pairs.
        top: the k of the precision-at-k figures.

    Returns:
        `auc` (area under the precision-recall curve, trapezoids: `jkern.metrics.pr_auc`),
        `average_precision`, `p_at_<k>` for each k, `facts` (positive (pair, relation)
        items), `items` (all ranked items), and the curve as `precision`, `recall` arrays.
        The ranking itself is `rank_pairs`'.

    >>> r = held_out([[0.9, 0.1], [0.2, 0.8]], [[True, False], [False, True]], top=(1, 2))
    >>> r["auc"], r["p_at_1"], r["p_at_2"], r["facts"]
    (1.0, 1.0, 1.0, 2)
    """
    ranked = rank_pairs(pair_scores, relations)
    # already in rank order, which the metrics' stable sort by score keeps (ties included)
    y, s = ranked.in_kb, ranked.score
    precision, recall, _ = metrics.precision_recall_curve(y, s)
    out: dict[str, Any] = {
        "auc": metrics.pr_auc(y, s),
        "average_precision": metrics.average_precision(y, s),
        "facts": int(y.sum()),
        "items": int(y.size),
        "precision": precision,
        "recall": recall,
    }
    for k in top:
        out[f"p_at_{k}"] = float(y[:k].mean()) if k <= y.size else float("nan")
    return out
