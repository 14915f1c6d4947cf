"""KDA: the Nyström layer, training (pure step, early stopping), vmapped grids, save/load."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import kda
from jkern.trees import parse_penn


def _blobs(n=240, m=12, k=3, seed=0):
    """k Gaussian blobs in m dims: features and labels."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2.0, size=(k, m))
    y = rng.integers(0, k, size=n)
    return centers[y] + rng.normal(size=(n, m)), y


TREES = [parse_penn(s) for s in (
    "(S (NP (D a) (N dog)) (VP (V runs)))", "(S (NP (D the) (N cat)) (VP (V sleeps)))",
    "(S (NP (N dogs)) (VP (V run) (ADV fast)))", "(SQ (WP what) (VP (V is) (NP (N it))))",
    "(SQ (WP who) (VP (V runs)))", "(S (NP (D a) (N cat)) (VP (V runs) (ADV fast)))",
)]


def test_nystrom_layer_reproduces_nystrom_embeddings():
    kernel = jkern.Normalized(jkern.PTK(0.4, 0.4))
    projector = jkern.fit_nystrom(kernel, TREES, landmarks=4, key=jax.random.PRNGKey(0))
    c = kernel.gram(TREES, list(projector.landmarks))
    model = kda.KDA.init(projector.projection, ("q", "s"), key=jax.random.PRNGKey(1))
    np.testing.assert_array_equal(np.asarray(model.embed(c)), np.asarray(projector.embed(TREES)))


def test_init_shapes_and_checks():
    h = jnp.eye(5)
    model = kda.KDA.init(h, (0, 1, 2), key=jax.random.PRNGKey(0))
    assert [layer.weight.shape for layer in model.hidden] == [(5, 5), (5, 5)]  # paper: 2 x m
    assert model.output.weight.shape == (3, 5)
    model = kda.KDA.init(h, (0, 1), key=jax.random.PRNGKey(0), hidden=(7,))
    assert model(jnp.ones((4, 5))).shape == (4, 2)
    with pytest.raises(ValueError, match="dropout"):
        kda.KDA.init(h, (0, 1), key=jax.random.PRNGKey(0), dropout=1.0)
    with pytest.raises(ValueError, match="distinct"):
        kda.KDA.init(h, (0, 0), key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="kernel columns"):
        model(jnp.ones((4, 6)))


def test_train_step_updates_only_trained_leaves():
    x, y = _blobs(n=32, m=6)
    batch = (jnp.asarray(x), jnp.asarray(y), jnp.ones(32))
    for train_nystrom in (False, True):
        model = kda.KDA.init(jnp.eye(6) * 0.5, (0, 1, 2), key=jax.random.PRNGKey(0), dropout=0.2,
                             train_nystrom=train_nystrom)
        opt = kda.adam()
        new, _, loss = jax.jit(kda.train_step)(model, kda.init_opt_state(model, opt), batch,
                                                jax.random.PRNGKey(2))
        assert np.isfinite(float(loss))
        assert bool(jnp.any(new.output.weight != model.output.weight))
        assert bool(jnp.any(new.nystrom != model.nystrom)) == train_nystrom
        assert float(new.dropout) == pytest.approx(0.2)


def test_loss_penalty_counts_weights_not_biases_or_nystrom():
    model = kda.KDA.init(jnp.eye(4) * 3.0, (0, 1), key=jax.random.PRNGKey(0), hidden=(3,))
    expected = float(jnp.sum(model.hidden[0].weight ** 2) + jnp.sum(model.output.weight ** 2))
    assert float(model.penalty()) == pytest.approx(expected)
    c, y, w = jnp.ones((2, 4)), jnp.array([0, 1]), jnp.ones(2)
    base = kda.loss_fn(model, c, y, w, None, 0.0)
    assert float(kda.loss_fn(model, c, y, w, None, 0.5)) == pytest.approx(
        float(base) + 0.5 * expected)
    # padding rows (weight 0) do not count
    padded = kda.loss_fn(model, jnp.ones((3, 4)), jnp.array([0, 1, 1]), jnp.array([1., 1., 0.]),
                         None, 0.0)
    assert float(padded) == pytest.approx(float(base))


def test_tiny_problem_fits_training_set():
    x, y = _blobs(n=100, m=8, seed=3)
    model = kda.KDA.init(jnp.eye(8), (0, 1, 2), key=jax.random.PRNGKey(0), hidden=(32, 32))
    result = kda.fit(x, y, model=model, key=jax.random.PRNGKey(1), epochs=150, batch_size=32)
    assert int(result.stats["n_epochs"]) == 150  # no dev set: all epochs, the last model
    np.testing.assert_array_equal(np.asarray(result.model.predict(x)), y)


def test_early_stopping_restores_the_best_epoch():
    x, y = _blobs(n=300, m=10, seed=1)
    y = np.where(np.random.default_rng(0).random(300) < 0.25, (y + 1) % 3, y)  # label noise
    model = kda.KDA.init(jnp.eye(10), (0, 1, 2), key=jax.random.PRNGKey(0), hidden=(64, 64))
    result = kda.fit(x[:200], y[:200], model=model, c_dev=x[200:], y_dev=y[200:],
                     key=jax.random.PRNGKey(1), epochs=200, batch_size=32, patience=15)
    n, best = int(result.stats["n_epochs"]), int(result.stats["best_epoch"])
    hist = np.asarray(result.stats["dev_accuracy"])
    assert n == best + 16 and n < 200  # stopped 15 epochs after the best one
    assert np.all(np.isnan(hist[n:])) and not np.any(np.isnan(hist[:n]))
    assert hist[best] == hist[:n].max() and best == int(np.argmax(hist[:n]))  # earliest best
    dev_acc = np.mean(np.asarray(result.model.predict(x[200:])) == y[200:])
    assert dev_acc == pytest.approx(hist[best])
    # the restored model is the best epoch's, not the last one's: replaying n epochs without
    # a dev set ends on a model whose dev accuracy differs from the best one
    last = kda.fit(x[:200], y[:200], model=model, key=jax.random.PRNGKey(1), epochs=n,
                   batch_size=32)
    assert np.mean(np.asarray(last.model.predict(x[200:])) == y[200:]) == pytest.approx(hist[n - 1])


def test_fit_is_deterministic_given_the_key():
    x, y = _blobs(n=80, m=6)
    model = kda.KDA.init(jnp.eye(6), (0, 1, 2), key=jax.random.PRNGKey(0), dropout=0.3)
    a = kda.fit(x, y, model=model, key=jax.random.PRNGKey(5), epochs=5, batch_size=16)
    b = kda.fit(x, y, model=model, key=jax.random.PRNGKey(5), epochs=5, batch_size=16)
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_progress_reports_every_epoch_and_changes_nothing(capsys):
    """`progress=True`: one line per epoch run (early stopping included) from the compiled
    loop, with the epoch's loss and development accuracy; the same model as without."""
    x, y = _blobs(n=120, m=6, seed=2)
    model = kda.KDA.init(jnp.eye(6), (0, 1, 2), key=jax.random.PRNGKey(0), dropout=0.2)
    options = {"key": jax.random.PRNGKey(3), "epochs": 40, "batch_size": 16, "patience": 3}
    quiet = kda.fit(x[:90], y[:90], model=model, c_dev=x[90:], y_dev=y[90:], **options)
    capsys.readouterr()
    shown = kda.fit(x[:90], y[:90], model=model, c_dev=x[90:], y_dev=y[90:], progress=True,
                    **options)
    lines = capsys.readouterr().err.splitlines()
    n = int(shown.stats["n_epochs"])
    assert len(lines) == n and lines[0].startswith("jkern: KDA epoch 1/40: training loss ")
    hist = np.asarray(shown.stats["dev_accuracy"])
    assert lines[-1].startswith(f"jkern: KDA epoch {n}/40: ")
    assert f"development accuracy {hist[n - 1]:.4f}" in lines[-1]
    for u, v in zip(jax.tree_util.tree_leaves(quiet), jax.tree_util.tree_leaves(shown)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_vmapped_grid_equals_loop():
    x, y = _blobs(n=150, m=8, seed=2)
    dropouts = jnp.array([0.0, 0.2, 0.5, 0.2])
    l2 = jnp.array([0.0, 1e-3, 1e-4, 1e-2])
    keys = jax.random.split(jax.random.PRNGKey(7), 4)
    models = kda.init_grid(jnp.eye(8), (0, 1, 2), key=jax.random.PRNGKey(0), dropout=dropouts,
                           hidden=(16, 16))
    grid = kda.fit_grid(x[:100], y[:100], models=models, c_dev=x[100:], y_dev=y[100:],
                        keys=keys, l2=l2, epochs=40, batch_size=32, patience=8)
    for g in range(4):
        single = kda.KDA.init(jnp.eye(8), (0, 1, 2),
                              key=jax.random.split(jax.random.PRNGKey(0), 4)[g],
                              dropout=dropouts[g], hidden=(16, 16))
        loop = kda.fit(x[:100], y[:100], model=single, c_dev=x[100:], y_dev=y[100:], key=keys[g],
                       l2=l2[g], epochs=40, batch_size=32, patience=8)
        member = kda.grid_member(grid, g)
        assert int(member.stats["best_epoch"]) == int(loop.stats["best_epoch"])
        assert int(member.stats["n_epochs"]) == int(loop.stats["n_epochs"])
        for u, v in zip(jax.tree_util.tree_leaves(member), jax.tree_util.tree_leaves(loop)):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)


def test_grid_checks_sizes():
    models = kda.init_grid(jnp.eye(3), (0, 1), key=jax.random.PRNGKey(0), dropout=[0.1, 0.2])
    with pytest.raises(ValueError, match="leading grid axis"):
        kda.fit_grid(jnp.ones((4, 3)), [0, 1, 0, 1], models=models, keys=jax.random.split(
            jax.random.PRNGKey(0), 3), l2=[0.0, 0.1], epochs=1)


def test_fit_checks_labels_and_shapes():
    model = kda.KDA.init(jnp.eye(3), ("a", "b"), key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="not in the model's classes"):
        kda.fit(jnp.ones((2, 3)), ["a", "c"], model=model, key=jax.random.PRNGKey(0), epochs=1)
    with pytest.raises(ValueError, match="kernel columns"):
        kda.fit(jnp.ones((2, 4)), ["a", "b"], model=model, key=jax.random.PRNGKey(0), epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        kda.fit(jnp.ones((2, 3)), ["a", "b"], model=model, key=jax.random.PRNGKey(0), epochs=0)


def test_save_load_round_trip_with_projector(tmp_path):
    kernel = jkern.Normalized(jkern.PTK(0.4, 0.4))
    projector = jkern.fit_nystrom(kernel, TREES, landmarks=4, key=jax.random.PRNGKey(0))
    c = kernel.gram(TREES, list(projector.landmarks))
    labels = ["s", "s", "s", "q", "q", "s"]
    model = kda.KDA.init(projector.projection, ("q", "s"), key=jax.random.PRNGKey(1), dropout=0.1)
    model = kda.fit(c, labels, model=model, key=jax.random.PRNGKey(2), epochs=3, batch_size=4).model
    path = tmp_path / "kda.npz"
    jkern.save(path, jkern.NystromModel(projector, model))  # network and projector, one file
    again = jkern.load(path)
    model2, projector2 = again.head, again.projector
    c2 = kernel.gram(TREES, list(projector2.landmarks))
    np.testing.assert_array_equal(np.asarray(model2(c2)), np.asarray(model(c)))
    assert list(model2.predict(c2)) == list(model.predict(c))
    assert list(again.predict(TREES)) == list(model.predict(c))  # from trees directly
    assert model2.classes == ("q", "s")


def test_grid_with_shared_batch_order_equals_fits_and_a_hand_written_loop():
    x, y = _blobs(n=70, m=5, seed=4)
    dropouts, l2 = jnp.array([0.1, 0.4]), jnp.array([1e-3, 0.0])
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    data_key = jax.random.PRNGKey(11)
    models = kda.init_grid(jnp.eye(5), (0, 1, 2), key=jax.random.PRNGKey(0), dropout=dropouts,
                           hidden=(8,))
    grid = kda.fit_grid(x, y, models=models, keys=keys, l2=l2, data_key=data_key, epochs=3,
                        batch_size=16)
    for g in range(2):
        single = kda.grid_member(models, g)
        fitted = kda.fit(x, y, model=single, key=keys[g], l2=l2[g], data_key=data_key, epochs=3,
                         batch_size=16).model
        # the same training written as a script: train_step over epoch_batches
        model, opt_state = single, kda.init_opt_state(single, kda.adam())
        step = jax.jit(kda.train_step)
        for e in range(3):
            idx, weight, step_keys = kda.epoch_batches(70, 16, e, data_key, keys[g],
                                                       jnp.float64)
            for b in range(idx.shape[0]):
                model, opt_state, _ = step(model, opt_state, (jnp.asarray(x)[idx[b]],
                                           jnp.asarray(y)[idx[b]], weight[b]), step_keys[b],
                                           l2=l2[g])
        member = kda.grid_member(grid, g).model
        for u, v, w in zip(jax.tree_util.tree_leaves(member), jax.tree_util.tree_leaves(fitted),
                           jax.tree_util.tree_leaves(model)):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(np.asarray(u), np.asarray(w), rtol=1e-9, atol=1e-11)


def test_dropout_rate_is_applied():
    model = kda.KDA.init(jnp.eye(4), (0, 1), key=jax.random.PRNGKey(0), dropout=0.3)
    from jkern.kda._model import _dropout

    x = jnp.ones((400, 250))
    out = _dropout(x, model.dropout, jax.random.PRNGKey(1))
    kept = np.asarray(out != 0)
    assert abs(kept.mean() - 0.7) < 0.01  # 100,000 units
    np.testing.assert_allclose(np.asarray(out)[kept], 1 / 0.7)
    assert np.array_equal(np.asarray(_dropout(x, jnp.asarray(0.0), jax.random.PRNGKey(1))),
                          np.asarray(x))


def _two_sided(n, m=20, k=3, seed=1):
    """k classes, each two Gaussian blobs on either side of the origin, rows scaled to unit
    norm as a normalized kernel's Nyström embeddings are: linear SVMs fit it badly, an MLP
    well, once it has had enough steps."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, 2, m))
    y = rng.integers(0, k, size=n)
    x = centers[y, rng.integers(0, 2, size=n)] + 1.2 * rng.normal(size=(n, m))
    return jnp.asarray(x / np.linalg.norm(x, axis=1, keepdims=True), jnp.float32), y


def test_defaults_beat_dcd_on_the_same_features_with_240_examples():
    """`kda.train`'s defaults on 240 examples (no development split: 24 would be held out,
    too few to early-stop; 1,000 steps on every example) against one-vs-rest DCD on the same
    embeddings, on 400 test examples. The old defaults (a 10% development split, patience 20
    epochs of one step each) stopped after a few dozen steps, near chance."""
    x, y = _two_sided(640)
    h = jnp.eye(20, dtype=jnp.float32)  # the embeddings are the columns themselves
    xtr, ytr, xte, yte = x[:240], y[:240], x[240:], y[240:]
    sol = kda.train(xtr, ytr, h, key=jax.random.PRNGKey(0))
    assert int(sol.stats["dev_size"]) == 0 and int(sol.stats["steps"]) == 1000
    acc = np.mean(np.asarray(sol.model.predict(xte)) == yte)
    dcd = max(np.mean(np.asarray(jkern.svm.dcd_ovr(xtr, ytr, C=C, key=jax.random.PRNGKey(0))
                                 .model.predict(xte)) == yte) for C in (1.0, 10.0, 100.0))
    assert acc >= dcd + 0.04, (acc, dcd)  # measured 0.865 against 0.785 (test SE 0.02)
    fit_i, dev_i = jkern.data.stratified_split(ytr, 0.1, seed=0)
    old = kda.fit(xtr[fit_i], ytr[fit_i],
                  model=kda.KDA.init(h, (0, 1, 2), key=jax.random.PRNGKey(1), dropout=0.2),
                  c_dev=xtr[dev_i], y_dev=ytr[dev_i], key=jax.random.PRNGKey(2), l2=1e-4,
                  epochs=500, patience=20)
    assert np.mean(np.asarray(old.model.predict(xte)) == yte) < dcd - 0.2  # measured 0.35


def test_train_development_split_rule_and_grid():
    """A development split only from 200 held-out examples up (or when asked); early stopping
    never ends a run before 1,000 steps (here: all 60 epochs of 3 steps despite patience 2);
    a dropout x λ grid is one vmapped program, its best development member kept."""
    from jkern.kda._recipe import MIN_DEV

    y = np.arange(2000) % 4
    fit_i, dev_i = kda.development_split(y[:1960])
    assert len(dev_i) == 0 and len(fit_i) == 1960  # 196 would be held out
    fit_i, dev_i = kda.development_split(y)
    assert len(dev_i) == MIN_DEV == 200 and len(fit_i) == 1800
    assert len(kda.development_split(y[:40], 0.3)[1]) == 12  # asked for: always
    with pytest.raises(ValueError, match="leaves no development"):
        kda.development_split(y[:4], 0.1)
    x, yb = _blobs(n=120, m=6, seed=5)
    h = jnp.eye(6)
    with pytest.raises(ValueError, match="needs a development split"):  # none in 8 examples
        kda.train(x[:8], yb[:8], h, key=jax.random.PRNGKey(0), dropout=[0.0, 0.3], epochs=2)
    sol = kda.train(x, yb, h, key=jax.random.PRNGKey(0), dropout=[0.0, 0.3], l2=[0.0, 1e-3],
                    dev_fraction=0.25, batch_size=32, epochs=60, patience=2,
                    hidden=(8,))
    assert sol.stats["grid_dev_accuracy"].shape == (4,) and int(sol.stats["dev_size"]) == 30
    assert int(sol.stats["n_epochs"]) == 60 and int(sol.stats["steps"]) == 180
    g = int(np.argmax(np.asarray(sol.stats["grid_dev_accuracy"])))
    assert float(sol.stats["dropout"]) == [0.0, 0.0, 0.3, 0.3][g]
    assert float(sol.stats["l2"]) == pytest.approx([0.0, 1e-3, 0.0, 1e-3][g])
