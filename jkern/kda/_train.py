"""Training the KDA: a pure step, a jitted fit with early stopping, and vmapped grids.

The paper's recipe (section 4): cross-entropy + λ Σ‖W‖², Adam (learning rate 1e-3), batches of
256, up to 500 epochs, the model of the best development-set epoch kept. Here the whole fit is
one compiled `lax.while_loop` over epochs (each a `lax.scan` over batches), so a grid of
configurations — dropout rates, λ values, seeds — trains as one `jax.vmap`ped program.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from .._cache import filter_jit
from .._progress import end_line, rewrite
from .._solution import Solution, result_code
from .._validate import finite, in_domain, kernel_fits, nonnegative, resolve_dtype
from ..errors import InputError
from ._model import KDA


@functools.cache
def adam(learning_rate: float = 1e-3) -> optax.GradientTransformation:
    """Adam, one object per learning rate (a new optimizer object would recompile the fit)."""
    return optax.adam(learning_rate)


def init_opt_state(model: KDA, optimizer: optax.GradientTransformation) -> optax.OptState:
    """The optimizer state of the trained leaves of `model`."""
    return optimizer.init(eqx.filter(model, model.trainable()))


def loss_fn(model: KDA, c: Float[Array, "b landmarks"], y: Int[Array, " b"],
            weight: Float[Array, " b"], key: PRNGKeyArray | None, l2: Any, *,
            embedded: bool = False) -> Float[Array, ""]:
    """Weighted mean cross-entropy + `l2` Σ‖W‖² (hidden and output weight matrices).

    `y` holds class indices (into `model.classes`); `weight` is 0 for padding rows.
    `embedded`: `c` already holds the Nyström embeddings `model.embed(c)` (a frozen layer's
    output computed once, not at every step)."""
    logits = model.head(c, key=key) if embedded else model(c, key=key)
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    total = jnp.sum(weight)
    return jnp.sum(weight * ce) / jnp.where(total > 0, total, 1) + l2 * model.penalty()


def train_step(model: KDA, opt_state: optax.OptState,
               batch: tuple[Float[Array, "b landmarks"], Int[Array, " b"], Float[Array, " b"]],
               key: PRNGKeyArray, *, l2: Any = 0.0,
               optimizer: optax.GradientTransformation | None = None, embedded: bool = False
               ) -> tuple[KDA, optax.OptState, Float[Array, ""]]:
    """One optimizer step on `batch = (c, y_index, weight)`; returns (model, opt_state, loss).

    Pure: jit it, scan it, vmap it. Only the leaves of `model.trainable()` change.
    `embedded`: as in `loss_fn` (only for a frozen Nyström layer)."""
    if embedded and model.train_nystrom:
        raise InputError("embedded=True skips the Nyström layer, which this model trains")
    optimizer = adam() if optimizer is None else optimizer
    params, static = eqx.partition(model, model.trainable())

    def objective(p):
        return loss_fn(eqx.combine(p, static), *batch, key, l2, embedded=embedded)

    loss, grads = jax.value_and_grad(objective)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return eqx.combine(eqx.apply_updates(params, updates), static), opt_state, loss


def epoch_batches(n: int, batch_size: int, epoch: Any, data_key: PRNGKeyArray,
                  key: PRNGKeyArray, dtype: Any = jnp.float32
                  ) -> tuple[Int[Array, "b s"], Float[Array, "b s"], PRNGKeyArray]:
    """The batches of one epoch as `fit` runs them: (row indices `[b, batch_size]`, weights
    (0 for the padding of the last batch), one dropout key per batch).

    The order is a permutation from `fold_in(data_key, epoch)`, the keys split from
    `fold_in(key, epoch)`: a hand-written loop of `train_step` over these batches reproduces
    `fit` (see experiments/bench_kda.py)."""
    n_batches = -(-n // batch_size)
    pad = n_batches * batch_size - n
    perm = jax.random.permutation(jax.random.fold_in(data_key, epoch), n).astype(jnp.int32)
    idx = jnp.concatenate([perm, jnp.zeros((pad,), jnp.int32)])
    weight = jnp.concatenate([jnp.ones((n,), dtype), jnp.zeros((pad,), dtype)])
    return (idx.reshape(n_batches, batch_size), weight.reshape(n_batches, batch_size),
            jax.random.split(jax.random.fold_in(key, epoch), n_batches))


def default_data_key(key: PRNGKeyArray) -> PRNGKeyArray:
    """The batch-order key `fit` uses when none is given."""
    return jax.random.fold_in(key, 0x5EED)


class _Loop(NamedTuple):
    epoch: Int[Array, ""]
    params: Any
    opt_state: Any
    best: Any
    best_acc: Float[Array, ""]
    best_epoch: Int[Array, ""]
    stop: Bool[Array, ""]
    dev_acc: Float[Array, " epochs"]
    loss: Float[Array, " epochs"]


def _fit(model: KDA, c: Array, y: Array, c_dev: Array, y_dev: Array, key: PRNGKeyArray,
         l2: Array, data_key: PRNGKeyArray, *, optimizer, epochs: int, batch_size: int,
         patience: int | None, min_epochs: int = 0, progress: bool = False) -> Solution[KDA]:
    n = c.shape[0]
    has_dev = c_dev.shape[0] > 0
    params, static = eqx.partition(model, model.trainable())
    dt = c.dtype
    # a frozen Nyström layer maps the data once, not at every step and evaluation
    embedded = not model.train_nystrom
    if embedded:
        c, c_dev = model.embed(c), model.embed(c_dev)

    def epoch_body(s: _Loop) -> _Loop:
        batches = epoch_batches(n, batch_size, s.epoch, data_key, key, dt)

        def step(carry, xs):
            p, o = carry
            idx, w, k = xs
            m, o, loss = train_step(eqx.combine(p, static), o, (c[idx], y[idx], w), k,
                                    l2=l2, optimizer=optimizer, embedded=embedded)
            return (eqx.filter(m, m.trainable()), o), loss * jnp.sum(w)

        (p, o), losses = jax.lax.scan(step, (s.params, s.opt_state), batches)
        if has_dev:
            current = eqx.combine(p, static)
            scores = current.head(c_dev) if embedded else current(c_dev)
            pred = jnp.argmax(scores, axis=-1)
            acc = jnp.mean((pred == y_dev).astype(dt))
        else:
            acc = jnp.asarray(0.0, dt)
        if progress:  # a host callback per epoch: the loop itself stays compiled
            jax.debug.callback(_report_epoch, s.epoch + 1, epochs, acc,
                               jnp.sum(losses) / n, has_dev)
        # strict improvement: ties keep the earlier (fewer epochs) model
        better = acc > s.best_acc if has_dev else jnp.asarray(True)
        best = jax.tree_util.tree_map(lambda a, b: jnp.where(better, a, b), p, s.best)
        best_epoch = jnp.where(better, s.epoch, s.best_epoch)
        stop = s.stop
        if patience is not None:  # never before min_epochs have run
            stop = (s.epoch - best_epoch >= patience) & (s.epoch + 1 >= min_epochs)
        return _Loop(s.epoch + 1, p, o, best, jnp.where(better, acc, s.best_acc), best_epoch,
                     stop, s.dev_acc.at[s.epoch].set(acc if has_dev else jnp.nan),
                     s.loss.at[s.epoch].set(jnp.sum(losses) / n))

    init = _Loop(jnp.asarray(0), params, optimizer.init(params), params,
                 jnp.asarray(-1.0, dt), jnp.asarray(0), jnp.asarray(False),
                 jnp.full((epochs,), jnp.nan, dt), jnp.full((epochs,), jnp.nan, dt))
    s = jax.lax.while_loop(lambda s: (s.epoch < epochs) & ~s.stop, epoch_body, init)
    # Early stopping and the epoch budget are both normal ends of a fit; a NaN loss is not.
    ran = jnp.arange(epochs) < s.epoch
    code = result_code(True, jnp.all(jnp.where(ran, jnp.isfinite(s.loss), True)))
    stats = {"best_epoch": s.best_epoch, "n_epochs": s.epoch, "dev_accuracy": s.dev_acc,
             "train_loss": s.loss}
    return Solution(eqx.combine(s.best, static), code, stats)


# When the fit with progress started (`_report_epoch` shows the seconds since).
_PROGRESS_T0 = [0.0]


def _report_epoch(epoch: Any, epochs: int, acc: Any, loss: Any, has_dev: bool) -> None:
    """One progress line per epoch on stderr (rewritten in place on a terminal)."""
    dev = f", development accuracy {float(acc):.4f}" if has_dev else ""
    rewrite(f"jkern: KDA epoch {int(epoch)}/{epochs}: training loss {float(loss):.4f}{dev}, "
            f"{time.perf_counter() - _PROGRESS_T0[0]:.1f} s")


@functools.cache
def _compiled(optimizer, epochs: int, batch_size: int, patience: int | None, batched: bool,
              shared_order: bool = False, progress: bool = False, min_epochs: int = 0):
    fit = functools.partial(_fit, optimizer=optimizer, epochs=epochs, batch_size=batch_size,
                            patience=patience, min_epochs=min_epochs, progress=progress)
    if batched:  # models, keys and λ stacked; the data (and maybe the batch order) shared
        order_axis = None if shared_order else 0
        fit = eqx.filter_vmap(fit, in_axes=(0, None, None, None, None, 0, 0, order_axis))
    return filter_jit(fit)


def _indices(classes: tuple, labels: Any, what: str) -> np.ndarray:
    index = {c: i for i, c in enumerate(classes)}
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise InputError(f"{what} must be 1-D, got shape {labels.shape}")
    unknown = sorted({lab for lab in labels.tolist() if lab not in index}, key=str)
    if unknown:
        raise InputError(f"{what} has labels not in the model's classes: {unknown[:5]}")
    return np.array([index[lab] for lab in labels.tolist()], np.int32)


def _check_data(model_landmarks: int, c, y, c_dev, y_dev, classes, dtype):
    finite("c", c)
    c = jnp.asarray(c, dtype)
    # finite columns whose squares overflow: the projection and the network give inf / NaN
    kernel_fits("c", c, lambda sq: sq, "the inner product c·c")
    if c.ndim != 2 or c.shape[1] != model_landmarks:
        raise InputError(f"c must be [n, {model_landmarks}] kernel columns, got {c.shape}")
    if len(y) != c.shape[0]:
        raise InputError(f"c has {c.shape[0]} rows but y has {len(y)} labels")
    if c.shape[0] == 0:
        raise InputError("c has no rows: nothing to train on")
    if len({str(v) for v in np.asarray(y).tolist()}) < 2:
        raise InputError("y holds one class: a classifier needs at least two to train "
                         "(it would predict that class for everything)")
    if c_dev is not None:
        finite("c_dev", c_dev)
    if c_dev is None:
        c_dev, y_dev = jnp.zeros((0, model_landmarks), dtype), np.zeros((0,), np.int32)
    else:
        c_dev = jnp.asarray(c_dev, dtype)
        if c_dev.ndim != 2 or c_dev.shape[1] != model_landmarks:
            raise InputError(f"c_dev must be [n_dev, {model_landmarks}], got {c_dev.shape}")
        if y_dev is None or len(y_dev) != c_dev.shape[0]:
            raise InputError("y_dev must give one label per row of c_dev")
        y_dev = _indices(classes, y_dev, "y_dev")
    return c, jnp.asarray(_indices(classes, y, "y")), c_dev, jnp.asarray(y_dev)


def _check_options(epochs, batch_size, patience, min_epochs=0):
    for name, v in (("epochs", epochs), ("batch_size", batch_size)):
        if not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive int, got {v!r}")
    if not isinstance(min_epochs, int) or min_epochs < 0:
        raise InputError(f"min_epochs must be an int >= 0, got {min_epochs!r}")
    if patience is not None and (not isinstance(patience, int) or patience < 1):
        raise InputError(f"patience must be a positive int or None, got {patience!r}")


def fit(c: Float[Array, "n landmarks"], y: Sequence[Any] | np.ndarray, *, model: KDA,
        key: PRNGKeyArray, c_dev: Float[Array, "n_dev landmarks"] | None = None,
        y_dev: Sequence[Any] | np.ndarray | None = None, l2: float = 0.0, epochs: int = 500,
        batch_size: int = 256, patience: int | None = None, min_epochs: int = 0,
        optimizer: optax.GradientTransformation | None = None,
        data_key: PRNGKeyArray | None = None, dtype: Any = None, throw: bool = False,
        progress: bool = False) -> Solution[KDA]:
    """Trains `model` on kernel columns `c` (`K(x, landmarks)`) and labels `y`.

    Every epoch shuffles the training set (from `fold_in(data_key, epoch)`), runs its batches (the
    last one partial: padding rows weigh 0) and scores the development set; the model of the
    best development accuracy is returned (earliest on ties). `patience`: stop after that many
    epochs without a better development accuracy (None: run all `epochs`), but not before
    `min_epochs` epochs have run (the best epoch is still chosen among all). Without a
    development set the last epoch's model is returned. Deterministic given `key`.

    Args:
        c, y: training kernel columns `[n, landmarks]` and labels (from `model.classes`).
        model: the network to train, from `KDA.init` (keyword-only: data first, as every
            learner of docs/learners.md).
        key: PRNG key (shuffling and dropout).
        c_dev, y_dev: the development set (optional).
        l2: λ of the weight penalty.
        epochs, batch_size, patience: as above (the paper: 500, 256, no patience).
        optimizer: an optax transformation (default Adam, learning rate 1e-3).
        data_key: PRNG key of the batch order (default: derived from `key`); the dropout
            masks come from `fold_in(key, epoch)`.
        dtype: computation dtype (default: the model's, its Nyström layer's; the kernel
            columns are cast to it). Another dtype casts the model's parameters too.
        throw: raise `ConvergenceError` if the training loss became NaN or inf.
        progress: a line per epoch on stderr (training loss, development accuracy,
            seconds), from a host callback in the compiled loop; rewritten in place on a
            terminal.

    Returns:
        A `Solution` with the model of the best development epoch (the last one without a
        development set) and stats `best_epoch` (0-based), `n_epochs` (epochs run: early
        stopping may end before `epochs`), `dev_accuracy` `[epochs]` (development accuracy
        after each epoch, NaN after the last one run) and `train_loss` `[epochs]` (mean
        training loss of each epoch, NaN after the last one). The result is `successful`
        unless the loss became non-finite (`nonfinite`).
    """
    if not isinstance(model, KDA):
        raise InputError(f"model must be a KDA (from KDA.init), got {type(model).__name__}")
    model = _as_dtype(model, dtype)
    _check_options(epochs, batch_size, patience, min_epochs)
    optimizer = adam() if optimizer is None else optimizer
    data = _check_data(model.n_landmarks, c, y, c_dev, y_dev, model.classes, model.nystrom.dtype)
    fitter = _compiled(optimizer, epochs, batch_size, patience, False, False, bool(progress),
                       min_epochs)
    order = default_data_key(key) if data_key is None else data_key
    penalty = nonnegative("l2", l2, model.nystrom.dtype)
    _PROGRESS_T0[0] = time.perf_counter()
    solution = fitter(model, *data, key, penalty, order)
    if progress:
        jax.block_until_ready(solution)
        jax.effects_barrier()  # every epoch's line is out
        end_line(True)
    return solution.check(throw)


def _as_dtype(model: KDA, dtype: Any) -> KDA:
    """`model` with its floating arrays in `dtype` (None: as it is)."""
    if dtype is None:
        return model
    dt = resolve_dtype(dtype)
    if dt == model.nystrom.dtype:
        return model
    return jax.tree_util.tree_map(
        lambda a: a.astype(dt) if eqx.is_inexact_array(a) else a, model)


def fit_grid(c: Float[Array, "n landmarks"], y: Sequence[Any] | np.ndarray, *, models: KDA,
             keys: PRNGKeyArray, l2: Any, c_dev: Float[Array, "n_dev landmarks"] | None = None,
             y_dev: Sequence[Any] | np.ndarray | None = None, epochs: int = 500,
             batch_size: int = 256, patience: int | None = None, min_epochs: int = 0,
             optimizer: optax.GradientTransformation | None = None,
             data_key: PRNGKeyArray | None = None, dtype: Any = None,
             throw: bool = False) -> Solution[KDA]:
    """`fit` for G configurations at once, as one vmapped program.

    Data first, as `fit` and every learner of docs/learners.md: `c`, `y` (and `c_dev`,
    `y_dev`) are shared by the grid; everything else is keyword-only. `models` is a stacked
    KDA (leading axis G on every array leaf, from `init_grid`), `keys` `[G]` keys (no
    default: each member's dropout, and without `data_key` its batch order, are drawn from
    its key) and `l2` `[G]` penalties (a scalar: the same for every member). Member g equals
    `fit(c, y, model=model_g, key=keys[g], l2=l2[g], data_key=data_key, ...)`. With one
    `data_key` every member sees the same batches (one gather per step for the whole grid,
    and configurations compared on equal terms); without it each member shuffles from its
    own key. With `patience` the program runs until the last member stops; members that
    stopped keep their state. `dtype`: as `fit`'s (default: the models' own)."""
    if not isinstance(models, KDA):
        raise InputError(f"models must be a stacked KDA (from init_grid), got "
                         f"{type(models).__name__}")
    models = _as_dtype(models, dtype)
    _check_options(epochs, batch_size, patience, min_epochs)
    optimizer = adam() if optimizer is None else optimizer
    dtype = models.nystrom.dtype
    l2 = nonnegative("l2", l2, dtype) if np.ndim(l2) == 0 else in_domain(
        "l2", l2, dtype, lambda v: v >= 0, "must be finite numbers >= 0", scalar=False)
    sizes = {x.shape[0] for x in jax.tree_util.tree_leaves(eqx.filter(models, eqx.is_array))}
    if l2.ndim == 0:  # one penalty for every member
        l2 = jnp.full((len(keys),), l2, dtype)
    sizes |= {l2.shape[0], len(keys)}
    if len(sizes) != 1 or models.nystrom.ndim != 3:
        raise InputError("models (stacked), keys and l2 must share one leading grid axis; got "
                         f"sizes {sorted(sizes)}")
    data = _check_data(models.nystrom.shape[1], c, y, c_dev, y_dev, models.classes, dtype)
    shared = data_key is not None
    fitter = _compiled(optimizer, epochs, batch_size, patience, True, shared, False, min_epochs)
    data_keys = data_key if shared else jax.vmap(default_data_key)(keys)
    return fitter(models, *data, keys, l2, data_keys).check(throw)


def init_grid(nystrom: Float[Array, "landmarks rank"], classes: Sequence[Any], *,
              key: PRNGKeyArray, dropout: Any, hidden: Sequence[int] | None = None,
              train_nystrom: bool = False, dtype: Any = None) -> KDA:
    """G stacked models, one per entry of `dropout` (`[G]`), initialised from
    `split(key, G)` (so member g equals `KDA.init(nystrom, classes, key=split(key, G)[g],
    dropout=dropout[g], ...)`). As `KDA.init`: the Nyström layer and classes first, `key`
    keyword-only and required; `hidden`, `train_nystrom` and `dtype` are its own."""
    dropout = jnp.atleast_1d(jnp.asarray(dropout))
    keys = jax.random.split(key, dropout.shape[0])
    return eqx.filter_vmap(
        lambda k, p: KDA.init(nystrom, classes, key=k, hidden=hidden, dropout=p,
                              train_nystrom=train_nystrom, dtype=dtype)
    )(keys, dropout)


def grid_member(result: Any, g: int) -> Any:
    """Member `g` of a stacked model or `Solution` (the arrays' row g)."""
    arrays, static = eqx.partition(result, eqx.is_array)
    return eqx.combine(jax.tree_util.tree_map(lambda a: a[g], arrays), static)
