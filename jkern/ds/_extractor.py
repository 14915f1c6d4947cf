"""A whole relation extractor: mention text -> features -> the relaxation's classifier.

`train_extractor` fits the feature pipeline on the training mentions (vocabulary, optional
document-frequency pruning, optional degree-2 expansion, optional SVD projection; report
Algorithms 1 and 2), solves the relaxation on the result and returns the solve's `Solution`
with one `RelationExtractor` as its model, which scores new mentions and pairs from their
tokens. It is an `equinox.Module` of arrays and JSON values, so `jkern.save` / `jkern.load`
keep it in one file (what `jkern ds train` writes).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._solution import Solution
from .._sparse import SparseRows, matmul
from .._validate import finite_model, positive_int
from ..errors import InputError
from ._features import FeatureVocabulary, lexical_features
from ._fit import fit
from ._relaxation import RelationModel, aggregate_pairs
from ._transforms import (
    ProductIndex,
    normalize_rows,
    polynomial_expansion,
    prune_features,
    randomized_svd_projection,
    remap_columns,
)


class RelationExtractor(eqx.Module):
    """Features and classifier of a trained extractor.

    Attributes:
        feature_names: `[D0]` the training vocabulary (str array), before pruning.
        column_map: `[D0]` pruning map (`prune_features`), or None.
        product_keys: the seen degree-2 products (`ProductIndex.keys`), or None.
        projection: `[D, F]` SVD projection, or None.
        model: the relaxation's classifier on the final features.
        options: the feature options (`max_sequence`, `max_bag`, `heads`, `squares`).
    """

    feature_names: np.ndarray
    column_map: np.ndarray | None
    product_keys: np.ndarray | None
    projection: jax.Array | None
    model: RelationModel
    options: dict

    @property
    def classes(self) -> tuple:
        return self.model.classes

    def features(self, tokens: Sequence[Sequence[str]], e1_token: Any, e2_token: Any
                 ) -> SparseRows | jax.Array:
        """The classifier's input for mentions given by their tokens and noun positions."""
        rows = lexical_features(tokens, e1_token, e2_token, max_sequence=self.options[
            "max_sequence"], max_bag=self.options["max_bag"], heads=self.options["heads"])
        dtype = _model_dtype(self.model)
        x = FeatureVocabulary(tuple(self.feature_names.tolist())).transform(rows, dtype=dtype)
        return _transform(x, self.column_map, self.product_keys, self.options["squares"],
                          self.projection)

    def decision_function(self, tokens: Sequence[Sequence[str]], e1_token: Any,
                          e2_token: Any) -> jax.Array:
        """`[m, C]` mention scores, column 0 NA."""
        self = finite_model(self)
        return self.model.decision_function(self.features(tokens, e1_token, e2_token))

    def predict(self, tokens: Sequence[Sequence[str]], e1_token: Any, e2_token: Any
                ) -> np.ndarray:
        """`[m]` the class of each mention's highest score (ties to the lowest class):
        `model.predict` on the mentions' features."""
        self = finite_model(self)
        return self.model.predict(self.features(tokens, e1_token, e2_token))

    def pair_scores(self, tokens: Sequence[Sequence[str]], e1_token: Any, e2_token: Any,
                    mention_pair: Any, n_pairs: int, *, aggregate: str = "max") -> jax.Array:
        """`[P, C]` scores per entity pair (`aggregate_pairs`)."""
        return aggregate_pairs(self.decision_function(tokens, e1_token, e2_token),
                               mention_pair, n_pairs, aggregate=aggregate)


def _model_dtype(model: RelationModel) -> Any:
    w = model.weights[0] if isinstance(model.weights, tuple) else model.weights
    return w.dtype


def _transform(x: SparseRows, column_map: np.ndarray | None, product_keys: np.ndarray | None,
               squares: bool, projection: jax.Array | None) -> SparseRows | jax.Array:
    if column_map is not None:
        x = normalize_rows(remap_columns(x, column_map))
    if product_keys is not None:
        x, _ = polynomial_expansion(x, products=ProductIndex(x.n_features, product_keys,
                                                             squares))
        x = normalize_rows(x)
    if projection is not None:
        return matmul(x, projection)
    return x


def train_extractor(
    tokens: Sequence[Sequence[str]],
    e1_token: Any,
    e2_token: Any,
    mention_pair: Any,
    relations: Any,
    *,
    key: jax.Array | None,
    classes: tuple | None = None,
    min_count: int | None = None,
    max_count: int | None = None,
    polynomial: bool = False,
    squares: bool = False,
    svd_rank: int | None = None,
    max_sequence: int = 5,
    max_bag: int = 10,
    heads: bool = False,
    dtype: Any = None,
    **solver_options: Any,
) -> Solution[RelationExtractor]:
    """Fits the feature pipeline on the training mentions and solves the relaxation.

    A learner of docs/learners.md: the data (mentions) first, then the distant labels (each
    mention's pair and the KB relations), the rest keyword-only, a `Solution` back.

    Args:
        tokens, e1_token, e2_token: the training mentions (sentence tokens, noun positions).
        mention_pair: `[N]` each mention's pair; `relations`: `[P, K]` the KB (see
            `jkern.ds.fit`).
        key: PRNG key of the SVD projection (keyword-only, no default: the pipeline can
            draw); None without `svd_rank`. Its only consumer: the solve draws nothing
            (`method="bcd"` visits the pairs in index order).
        min_count, max_count: prune features by document frequency (report Algorithm 1);
            rows are L2-normalized again after pruning.
        polynomial: add the degree-2 products of each row's features (`squares`: also x_a^2).
        svd_rank: project the features onto their top `svd_rank` right singular vectors
            (report Algorithm 2; needs `key`).
        max_sequence, max_bag, heads: the lexical feature options (`mention_features`).
        dtype: float dtype of the features and the solve.
        **solver_options: `lam`, `mu`, `tol`, `max_iter`, ... of `jkern.ds.fit`.

    Returns:
        A `Solution` whose model is the `RelationExtractor` and whose `result` is the
        solve's; its stats are `jkern.ds.fit`'s plus the feature counts (`features`, and
        `features_pruned`, `features_expanded`, `features_projected` for the steps taken)
        and the seconds spent building features (`feature_seconds`) and solving
        (`solve_seconds`).
    """
    t0 = time.perf_counter()
    rows = lexical_features(tokens, e1_token, e2_token, max_sequence=max_sequence,
                            max_bag=max_bag, heads=heads)
    vocab = FeatureVocabulary.fit(rows)
    x = vocab.transform(rows, dtype=dtype)
    info: dict[str, Any] = {"features": len(vocab)}
    column_map = None
    if min_count is not None or max_count is not None:
        x, column_map = prune_features(x, 1 if min_count is None else min_count, max_count)
        x = normalize_rows(x)
        info["features_pruned"] = x.n_features
    product_keys = None
    if polynomial:
        x, index = polynomial_expansion(x, squares=squares)
        x = normalize_rows(x)
        product_keys = index.keys
        info["features_expanded"] = x.n_features
    projection = None
    features: SparseRows | jax.Array = x
    if svd_rank is not None:
        if key is None:
            raise InputError("svd_rank needs a PRNG key (key=jax.random.PRNGKey(0))")
        positive_int("svd_rank", svd_rank)
        projection = randomized_svd_projection(x, svd_rank, key=key)
        features = matmul(x, projection)
        info["features_projected"] = svd_rank
    info["feature_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = fit(features, mention_pair, relations, classes=classes, dtype=dtype, key=None,
              **solver_options)
    jax.block_until_ready(sol.stats["primal"])
    info["solve_seconds"] = time.perf_counter() - t0
    extractor = RelationExtractor(
        np.asarray(vocab.names, dtype=str), column_map, product_keys,
        None if projection is None else jnp.asarray(projection), sol.model,
        {"max_sequence": max_sequence, "max_bag": max_bag, "heads": heads,
         "squares": squares})
    return Solution(extractor, sol.result, {**sol.stats, **info})
