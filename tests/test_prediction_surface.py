"""Issue 36: every model has one prediction surface (docs/learners.md) and the command line
only calls it.

- `KDA` has `decision_function` (its logits), `predict` by the tie rule and `classes`, like
  the SVMs; `NystromModel` feeds each head what it `takes` (no special case per head type);
- `binary_decision(scores)`: each two-class model's one decision value, the SVMs' margin and
  the KDA's log-odds, with the positive column of `jkern.positive_class`;
- `jkern.ds.rank_pairs` is `held_out`'s ranking (the rows `jkern ds predict` writes);
- one landmark rule (`fit_nystrom` refuses more landmarks than inputs) and its progress phase;
- the kernel names come from one registry (library, command line, estimators).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import kda
from jkern.errors import InputError, NumericalError
from jkern.svm import KernelExpansion, LinearSVM
from jkern.trees import parse_penn

TREES = [parse_penn(t) for t in ("(S (NP (D a) (N dog)) (VP (V runs)))",
                                 "(SQ (WP who) (VP (V runs)))",
                                 "(S (NP (N dogs)) (VP (V run) (ADV fast)))",
                                 "(SQ (WP what) (VP (V is) (NP (N it))))",
                                 "(S (NP (D the) (N cat)) (VP (V sleeps)))")]


def _kda(classes):
    return kda.KDA.init(jnp.eye(3), classes, key=jax.random.PRNGKey(0), hidden=(4,))


def test_kda_has_the_prediction_surface_of_every_model():
    net = _kda(("+1", "-1"))  # sorted strings of an SVM-Light-TK file: +1 first
    c = jax.random.normal(jax.random.PRNGKey(1), (6, 3))
    f = net.decision_function(c)
    np.testing.assert_array_equal(f, net(c))
    assert f.shape == (6, 2) and net.classes == ("+1", "-1")
    assert list(net.predict(c)) == list(jkern.predict_labels(f, net.classes))
    pos, values = net.binary_decision(f)
    assert pos == 0 == jkern.positive_class(net.classes)  # the larger number, +1
    np.testing.assert_array_equal(values, np.asarray(f[:, 0] - f[:, 1], np.float64))
    assert net.takes == "kernel columns" and net.n_inputs == 3


def test_svm_binary_decisions_are_their_margins():
    x = jax.random.normal(jax.random.PRNGKey(2), (5, 3))
    binary = LinearSVM(jnp.array([1.0, -2.0, 0.5]), jnp.array(0.25), classes=("no", "yes"))
    f = binary.decision_function(x)
    pos, values = binary.binary_decision(jnp.stack([-f, f], axis=-1))
    assert pos == 1
    np.testing.assert_array_equal(values, np.asarray(f, np.float64))
    # two one-vs-rest SVMs on mirror problems: half the difference, f_pos
    ovr = LinearSVM(jnp.stack([-binary.w, binary.w]), jnp.stack([-binary.b, binary.b]),
                    classes=(-1, 1))
    pos, values = ovr.binary_decision(ovr.decision_function(x))
    assert pos == 1
    np.testing.assert_allclose(values, np.asarray(f, np.float64), rtol=1e-12)
    expansion = KernelExpansion(jkern.SST(0.4), jnp.array([1.0, -1.0]), jnp.array(0.0),
                                (0, 1), tuple(TREES[:2]), classes=("q", "s"))
    g = expansion.decision_function(TREES)
    pos, values = expansion.binary_decision(expansion.class_scores(TREES))
    np.testing.assert_array_equal(values, np.asarray(g, np.float64))
    with pytest.raises(InputError, match="two-class decision"):
        expansion.binary_decision(jnp.zeros((2, 3)))


def test_nystrom_model_feeds_each_head_what_it_takes():
    proj = jkern.fit_nystrom(jkern.SST(0.4), TREES, landmarks=4, key=jax.random.PRNGKey(0))
    c = proj.columns(TREES)
    net = kda.KDA.init(proj.projection, ("q", "s"), key=jax.random.PRNGKey(0), hidden=(4,))
    model = jkern.NystromModel(proj, net)
    np.testing.assert_array_equal(model.decision_function(TREES), net.decision_function(c))
    scores = model.class_scores(TREES)
    assert model.binary_decision(scores)[1].tolist() == net.binary_decision(scores)[1].tolist()
    svm = LinearSVM(jnp.ones(proj.rank), jnp.array(-1.0), classes=("q", "s"))
    model = jkern.NystromModel(proj, svm)
    np.testing.assert_array_equal(model.decision_function(TREES),
                                  svm.decision_function(proj.embed(TREES)))
    wide = proj.rank + 1
    with pytest.raises(InputError, match=f"LinearSVM takes {wide} features; the projector "
                                         f"embeds in {proj.rank} dimensions"):
        jkern.NystromModel(proj, LinearSVM(jnp.ones(wide), jnp.array(0.0)))


def test_finite_values_refuse_nan_and_inf():
    assert jkern.finite_values(jnp.array([1.5, -2.0], jnp.float32)).dtype == np.float64
    with pytest.raises(NumericalError, match="the model gives NaN or inf scores"):
        jkern.finite_values(np.array([[0.0, np.inf]]), "scores")


def test_rank_pairs_is_held_outs_ranking():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=(7, 4)), 1)  # ties among the rounded scores
    relations = rng.random((7, 3)) < 0.3
    ranked = jkern.ds.rank_pairs(scores, relations)
    flat = scores[:, 1:].ravel()
    order = np.argsort(-flat, kind="stable")
    np.testing.assert_array_equal(ranked.pair * 3 + ranked.relation, order)
    np.testing.assert_array_equal(ranked.score, flat[order])
    np.testing.assert_array_equal(ranked.in_kb, relations.ravel()[order])
    figures = jkern.ds.held_out(scores, relations, top=(1, 5))
    assert figures["p_at_5"] == float(np.mean(ranked.in_kb[:5]))
    assert figures["average_precision"] == jkern.metrics.average_precision(
        relations.ravel(), flat)
    with pytest.raises(InputError, match="NaN or inf"):
        jkern.ds.rank_pairs(np.full((2, 2), np.nan), np.zeros((2, 2), bool))


def test_one_landmark_rule_and_the_fits_progress_phase(capsys):
    with pytest.raises(InputError, match="got 6 landmarks for 5 inputs"):
        jkern.fit_nystrom(jkern.SST(0.4), TREES, landmarks=6, key=jax.random.PRNGKey(0))
    with pytest.raises(InputError, match="got 6 landmarks for 5 inputs"):
        jkern.fit_nystrom_ensemble(jkern.SST(0.4), TREES, landmarks=6, projections=2,
                                   key=jax.random.PRNGKey(0), progress=True)
    assert "Nystrom projector" not in capsys.readouterr().err  # refused before the phase
    jkern.fit_nystrom_ensemble(jkern.SST(0.4), TREES, landmarks=2, projections=2,
                               key=jax.random.PRNGKey(0), progress=True)
    err = capsys.readouterr().err
    assert "jkern: Nystrom projector, 2 landmarks x 2 projections ..." in err
    assert "jkern: Nystrom projector, 2 landmarks ..." not in err  # one phase, not one each


def test_sparse_rows_count_the_features_they_use():
    x = jkern.SparseRows.from_rows([{0: 1.0, 4: 0.0}, {2: 3.0}, {2: 1.0}], n_features=6)
    assert x.n_used_features() == 2


def test_kernel_names_come_from_one_registry():
    from jkern.cli import build_parser
    from jkern.sklearn import KERNELS

    assert jkern.KERNEL_NAMES == jkern.kernels.KERNEL_NAMES
    assert set(jkern.WORD_VECTOR_KERNELS) <= set(jkern.PARTIAL_TREE_KERNELS)
    assert set(jkern.PARTIAL_TREE_KERNELS) <= set(jkern.KERNEL_NAMES)
    assert KERNELS == tuple(n for n in jkern.KERNEL_NAMES if n not in jkern.WORD_VECTOR_KERNELS)
    commands = next(a for a in build_parser()._actions
                    if isinstance(a, argparse._SubParsersAction)).choices
    for command in ("gram", "train"):
        kernel = next(a for a in commands[command]._actions if "--kernel" in a.option_strings)
        assert tuple(kernel.choices) == jkern.KERNEL_NAMES
    for name in jkern.KERNEL_NAMES:
        options = {"vocab": ["a"], "vectors": np.ones((1, 2))} \
            if name in jkern.WORD_VECTOR_KERNELS else {}
        assert jkern.kernels.kernel_by_name(name, **options) is not None
