"""Tree-kernel parameters learned by gradient: kernel-target alignment (issue 33).

The forest engine is differentiable in the kernels' parameters (λ, μ, the similarity's γ,
CSPTK's composition matrices A and B), so a kernel can be fitted to labelled trees before
any classifier sees it. The objective is the centered kernel-target alignment (Cortes,
Mohri & Rostamizadeh 2012) of the normalized kernel on minibatches of the training trees:

    A(K, Y) = <K_c, Y_c>_F / (|K_c|_F |Y_c|_F),   Y = Z Z^T (Z: one-hot labels),

with K_c = H K H, H = I - 11^T/n. It needs no classifier in the loop, and it is what a
kernel machine's generalization bound improves with. Parameters stay in their domains
through their parametrization: λ and μ as sigmoids of free values (in (0, 1)), γ as the
exponential of one; A and B are free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._solution import Solution, result_code
from .._validate import positive_int
from ..errors import InputError
from ._base import Normalized
from ._tree_kernels import CSPTK, PTK, SPTK, as_trees

_TRAINABLE = {PTK: ("lam", "mu"), SPTK: ("lam", "mu", "gamma"),
              CSPTK: ("lam", "mu", "gamma", "A", "B")}


def alignment(gram: jax.Array, labels: jax.Array, n_classes: int) -> jax.Array:
    """Centered kernel-target alignment of `gram` `[n, n]` with the integer `labels` `[n]`
    (0..n_classes-1): in [-1, 1], 1 when the centered kernel is a positive multiple of the
    centered ideal kernel Z Z^T."""
    n = gram.shape[0]
    z = jax.nn.one_hot(labels, n_classes, dtype=gram.dtype)
    h = jnp.eye(n, dtype=gram.dtype) - 1.0 / n
    kc = h @ gram @ h
    yc = h @ (z @ z.T) @ h
    return jnp.sum(kc * yc) / (jnp.linalg.norm(kc) * jnp.linalg.norm(yc) + 1e-12)


def _logit(x: Any) -> jax.Array:
    x = jnp.clip(jnp.asarray(x, float), 1e-6, 1 - 1e-6)
    return jnp.log(x) - jnp.log1p(-x)


def learn_kernel(trees: Sequence[Any], labels: Any, *, kernel: Any, key: jax.Array,
                 steps: int = 60, batch_size: int = 96, batches: int = 8,
                 learning_rate: float = 0.05,
                 trainable: Sequence[str] | None = None, dtype: Any = "float64",
                 throw: bool = False) -> Solution:
    """A tree kernel whose parameters maximize the kernel-target alignment on `trees`.

    Adam on minibatches of `batch_size` trees; each step differentiates the normalized Gram
    of its batch through the forest engine. The `batches` minibatches are drawn once with
    `key` (uniformly, disjoint while the trees last) and cycled: each batch's programs
    compile on its first step and are reused after (a fresh batch per step would compile
    anew every step, which costs far more than the step).

    Args:
        trees: the training trees (or examples).
        labels: their labels (any hashable values; one class per tree).
        kernel: the starting kernel: `PTK`, `SPTK` or `CSPTK` (or `Normalized` of one; the
            objective always normalizes).
        key: the minibatches' random key.
        steps: optimizer steps.
        batch_size: trees per step (the Gram of a batch is `batch_size`^2 pairs).
        batches: distinct minibatches, cycled over the steps.
        learning_rate: Adam's step size on the free parametrization (logits of λ and μ,
            log γ); A and B step by `learning_rate / d` per entry (d the vectors'
            dimension), about `learning_rate` per matrix in Frobenius norm.
        trainable: the fields to learn (default: all the kernel has of lam, mu, gamma, A, B).
        dtype: the Gram computations' dtype.
        throw: raise if a step's objective is not finite.

    Returns:
        A `Solution` whose `model` is the learned kernel (same type as given, never
        normalized), with `stats`: `alignment` (per step, on its batch), `initial_alignment`
        and `final_alignment` on one fixed evaluation batch (the first `batch_size` trees
        of a fixed permutation), `steps`.
    """
    base = kernel.kernel if isinstance(kernel, Normalized) else kernel
    if type(base) not in _TRAINABLE:
        raise InputError(f"learn_kernel learns PTK, SPTK and CSPTK parameters, not "
                         f"{type(base).__name__}")
    fields = tuple(_TRAINABLE[type(base)] if trainable is None else trainable)
    for f in fields:
        if f not in _TRAINABLE[type(base)]:
            raise InputError(f"{type(base).__name__} has no trainable field {f!r}; choose from "
                             f"{_TRAINABLE[type(base)]}")
    if "gamma" in fields and getattr(base, "gamma", None) is None:
        raise InputError("gamma is learned only for the Gaussian similarity: give the kernel "
                         "a gamma (the thresholded cosine is not differentiable in it)")
    steps = positive_int("steps", steps)
    batch_size = positive_int("batch_size", batch_size)
    if not learning_rate > 0 or not np.isfinite(learning_rate):
        raise InputError(f"learning_rate must be a positive number, got {learning_rate}")
    batches = positive_int("batches", batches)
    items = as_trees(trees, int(getattr(base, "tree_index", 0)))
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) != len(items):
        raise InputError(f"labels must be one per tree: {len(items)} trees, labels of shape "
                         f"{y.shape}")
    classes, y_int = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise InputError("learn_kernel needs at least two classes among the labels")
    if len(items) < 4:
        raise InputError(f"learn_kernel needs at least 4 trees, got {len(items)}")
    batch_size = min(batch_size, len(items))

    free = {}
    for f in fields:
        value = getattr(base, f)
        free[f] = (_logit(value) if f in ("lam", "mu")
                   else jnp.log(jnp.asarray(value, float)) if f == "gamma"
                   else jnp.asarray(value, float))

    def build(p: Any) -> Any:
        k = base
        for f, v in p.items():
            value = (jax.nn.sigmoid(v) if f in ("lam", "mu") else jnp.exp(v) if f == "gamma"
                     else v)
            k = eqx.tree_at(lambda m, f=f: getattr(m, f), k, value)
        return k

    def objective(p: Any, idx: np.ndarray) -> jax.Array:
        batch = [items[i] for i in idx]
        g = jnp.asarray(Normalized(build(p)).gram(batch, dtype=dtype))
        return -alignment(g, jnp.asarray(y_int[idx]), len(classes))

    # A and B have d^2 entries, each of which Adam moves by about the step size: their step is
    # scaled by 1/d, so a step changes a matrix by about `learning_rate` in Frobenius norm.
    dim = int(base.A.shape[0]) if isinstance(base, CSPTK) else 1
    opt = optax.multi_transform(
        {"scalar": optax.adam(learning_rate),
         "matrix": optax.adam(learning_rate / max(dim, 1))},
        {f: "matrix" if f in ("A", "B") else "scalar" for f in free})
    state = opt.init(free)
    rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
    order = rng.permutation(len(items))
    chosen = [np.sort(np.resize(np.roll(order, -b * batch_size), batch_size))
              for b in range(batches)]
    eval_idx = chosen[0]
    initial = -float(objective(free, eval_idx))
    history = []
    finite = True
    for step in range(steps):
        idx = chosen[step % batches]
        loss, grads = jax.value_and_grad(objective)(free, idx)
        if not np.isfinite(float(loss)) or not all(
                bool(jnp.all(jnp.isfinite(g))) for g in jax.tree_util.tree_leaves(grads)):
            finite = False
            break
        updates, state = opt.update(grads, state, free)
        free = optax.apply_updates(free, updates)
        history.append(-float(loss))
    final = -float(objective(free, eval_idx)) if finite else float("nan")
    solution = Solution(model=build(free), result=result_code(True, finite),
                        stats={"alignment": np.asarray(history),
                               "initial_alignment": initial, "final_alignment": final,
                               "steps": len(history)})
    return solution.check(throw)
