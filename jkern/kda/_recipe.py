"""`train`: the KDA with defaults that work from a few hundred examples up.

`fit` runs the paper's loop as told (epochs, a development set, patience). `train` decides
them from the data, by the rules measured in docs/kda.md ("Defaults"):

- a development split (a stratified `DEV_FRACTION` of the examples) only when it holds at
  least `MIN_DEV` examples: early stopping on fewer follows noise (16 development trees stop
  a network after a handful of steps, before it has learnt anything);
- without one, every example trains, for a fixed number of optimizer steps (`STEPS`, counted
  in steps, not epochs: 240 examples in batches of 256 are one step per epoch, so the
  paper's epochs are far too few steps on small data), and the last model is kept;
- with one, early stopping ends no run before `STEPS` optimizer steps (a network that still
  predicts the majority class has a flat development accuracy: on the boundary data patience
  alone stopped every run at epoch 0), and a grid of dropout rates × λ trains as one
  vmapped program (`fit_grid`); the member of the best development accuracy is kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Float, PRNGKeyArray

from .._solution import Solution
from ..errors import InputError
from ._model import KDA
from ._train import fit, fit_grid, grid_member, init_grid

DROPOUT = 0.2  # the dropout rate (a rate or a sequence of rates: a grid)
L2 = 1e-4  # λ of the weight penalty (a value or a sequence: a grid)
STEPS = 1000  # optimizer steps without a development split
DEV_FRACTION = 0.1  # the development part, when it is large enough
MIN_DEV = 200  # the fewest development examples that early-stop a fit
EPOCHS = 500  # most epochs with a development split (the paper)
PATIENCE = 20  # epochs without a better development accuracy, then stop


def _grid(name: str, value: Any) -> list[float]:
    values = [float(v) for v in np.atleast_1d(np.asarray(value, np.float64)).tolist()]
    if not values or np.ndim(value) > 1:
        raise InputError(f"{name} must be a number or a 1-D sequence of numbers, got {value!r}")
    return values


def _positive(name: str, value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or value < 1):
        raise InputError(f"{name} must be a positive int or None, got {value!r}")


def development_split(labels: Sequence[Any] | np.ndarray, dev_fraction: float | None = None,
                      *, seed: int = 0, grid: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """`(fit, dev)` indices as `train` splits the examples.

    `dev_fraction=None` (the default rule): a stratified `DEV_FRACTION` when that holds at
    least `MIN_DEV` examples (or when `grid`: a grid needs one to choose), else no
    development part (`dev` empty). A given fraction always splits, and must leave at least
    one development example."""
    from ..data._split import stratified_split

    lab = np.asarray(labels)
    if dev_fraction is None:
        fit_idx, dev_idx = stratified_split(lab, DEV_FRACTION, seed=seed)
        if len(dev_idx) >= MIN_DEV or (grid and len(dev_idx) > 0):
            return fit_idx, dev_idx
        return np.arange(len(lab)), np.zeros(0, np.int64)
    if not 0 < dev_fraction < 1:
        raise InputError(f"dev_fraction {dev_fraction}: use a fraction in (0, 1), or None for "
                         "the default rule")
    fit_idx, dev_idx = stratified_split(lab, dev_fraction, seed=seed)
    if len(dev_idx) == 0:
        raise InputError(f"dev_fraction {dev_fraction} of {len(lab)} trees leaves no "
                         "development tree: raise it or give more trees")
    return fit_idx, dev_idx


def train(c: Float[Array, "n landmarks"], y: Sequence[Any] | np.ndarray,
          nystrom: Float[Array, "landmarks rank"], *, key: PRNGKeyArray,
          classes: Sequence[Any] | None = None, hidden: Sequence[int] | None = None,
          dropout: Any = DROPOUT, l2: Any = L2, dev_fraction: float | None = None,
          split_seed: int = 0, steps: int | None = None, epochs: int | None = None,
          patience: int | None = PATIENCE, batch_size: int = 256, train_nystrom: bool = False,
          optimizer: optax.GradientTransformation | None = None, throw: bool = False,
          progress: bool = False) -> Solution[KDA]:
    """A KDA on kernel columns `c = K(x, landmarks)` and labels `y`, with the rules above.

    Args:
        c, y: kernel columns `[n, landmarks]` and one label per row.
        nystrom: the projector's H (`Nystrom.projection`), the frozen first layer.
        key: PRNG key: the network is initialised from `fold_in(key, 1)` and trained with
            `fold_in(key, 2)` (batch order and dropout).
        classes: the labels in score order (default: the sorted unique labels of `y`).
        hidden: hidden-layer widths (default two as wide as the landmarks, the paper's).
        dropout, l2: a value each, or sequences: their product is a grid trained as one
            vmapped program, chosen on the development split (so a grid needs one).
        dev_fraction: None for the default rule (a stratified 10% when that is at least 200
            examples, none otherwise); a fraction in (0, 1) always splits.
        split_seed: seed of the stratified split.
        steps: without a development split, optimizer steps to train (default `STEPS`),
            rounded up to whole epochs.
        epochs: most epochs (default: `EPOCHS` with a development split; without one the
            epochs that make `steps`); given, it replaces the step count.
        patience: with a development split, stop after that many epochs without a better
            development accuracy, but not before `STEPS` steps (None: run all epochs).
        batch_size, train_nystrom, optimizer, throw, progress: as `fit` and `KDA.init`.

    Returns:
        `fit`'s `Solution` (with a development split, that of the member of the best
        development accuracy, the earliest on ties; without one, the last epoch's model,
        `dev_accuracy` all NaN), its stats plus `dropout` and `l2` (the values used),
        `dev_size` (development examples, 0 for none), `steps` (optimizer steps run) and,
        with a grid, `grid_dev_accuracy` `[G]` (each member's best development accuracy).
    """
    lab = np.asarray(y)
    if lab.ndim != 1:
        raise InputError(f"y must be 1-D, got shape {lab.shape}")
    classes = tuple(sorted(set(lab.tolist()))) if classes is None else tuple(classes)
    for name, v in (("steps", steps), ("epochs", epochs), ("batch_size", batch_size)):
        _positive(name, v)
    dropouts, l2s = _grid("dropout", dropout), _grid("l2", l2)
    configs = list(itertools.product(dropouts, l2s))
    nystrom = jnp.asarray(nystrom)
    c = jnp.asarray(c)
    if c.ndim != 2 or c.shape[0] != len(lab):
        raise InputError(f"c must be [n, landmarks] kernel columns, one row per label "
                         f"({len(lab)}), got shape {c.shape}")
    fit_idx, dev_idx = development_split(lab, dev_fraction, seed=split_seed,
                                         grid=len(configs) > 1)
    has_dev = len(dev_idx) > 0
    if len(configs) > 1 and not has_dev:
        raise InputError(f"a dropout / l2 grid ({len(configs)} configurations) needs a "
                         "development split to choose on: give dev_fraction")
    per_epoch = -(-len(fit_idx) // batch_size)
    if epochs is None:
        epochs = EPOCHS if has_dev else -(-(STEPS if steps is None else steps) // per_epoch)
    k_init, k_fit = jax.random.fold_in(key, 1), jax.random.fold_in(key, 2)
    dev = (c[dev_idx], lab[dev_idx]) if has_dev else (None, None)
    options = {"epochs": epochs, "batch_size": batch_size, "optimizer": optimizer,
               "patience": patience if has_dev else None, "throw": throw,
               "min_epochs": min(epochs, -(-STEPS // per_epoch)) if has_dev else 0}
    extra: dict[str, Any] = {}
    if len(configs) == 1:  # one configuration: `fit` itself (with its progress lines)
        model = KDA.init(nystrom, classes, key=k_init, hidden=hidden, dropout=dropouts[0],
                         train_nystrom=train_nystrom)
        member = fit(c[fit_idx], lab[fit_idx], model=model, c_dev=dev[0], y_dev=dev[1],
                     key=k_fit, l2=l2s[0], progress=progress, **options)
    else:  # the grid: one vmapped program, every member on the same batches
        rates = jnp.asarray([d for d, _ in configs], nystrom.dtype)
        models = init_grid(nystrom, classes, key=k_init, dropout=rates, hidden=hidden,
                           train_nystrom=train_nystrom)
        grid = fit_grid(c[fit_idx], lab[fit_idx], models=models, c_dev=dev[0], y_dev=dev[1],
                        keys=jax.random.split(k_fit, len(configs)),
                        l2=jnp.asarray([v for _, v in configs], nystrom.dtype),
                        data_key=jax.random.fold_in(k_fit, 0x5EED), **options)
        best_dev = np.nanmax(np.asarray(grid.stats["dev_accuracy"]), axis=1)
        member = grid_member(grid, int(np.argmax(best_dev)))  # the first of the best
        configs = [configs[int(np.argmax(best_dev))]]
        extra["grid_dev_accuracy"] = jnp.asarray(best_dev)
    stats = dict(member.stats)
    stats.update(dropout=jnp.asarray(configs[0][0]), l2=jnp.asarray(configs[0][1]),
                 dev_size=jnp.asarray(len(dev_idx)),
                 steps=member.stats["n_epochs"] * per_epoch, **extra)
    return Solution(member.model, member.result, stats)
