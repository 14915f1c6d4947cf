"""The kernel SVM baseline ("KSVM"): a C-SVM on a precomputed Gram matrix, by SMO.

The dual of LIBSVM's C-SVC (Chang & Lin 2011), the solver the papers' KSVM rows use:
    min_a  ½ aᵀ Q a − Σ a_i   s.t.  yᵀa = 0,  0 <= a_i <= C_i,   Q_ij = y_i y_j K_ij,
solved by SMO with LIBSVM's second-order working-set selection (Fan, Chen & Lin 2005),
stopping when the maximal violating pair violates by less than `tol`. The decision function
is f(x) = Σ a_i y_i K(x_i, x) − rho, rho from the free support vectors as LIBSVM does.
Everything is one `lax.while_loop` over arrays: `jax.vmap` trains all one-vs-rest classes
(and a grid of C values) as one program over the same Gram matrix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._cache import filter_jit
from .._labels import predict_labels, two_class_decision
from .._solution import Solution, result_code
from .._validate import (
    class_weights,
    finite,
    finite_model,
    float_dtype,
    plus_minus_labels,
    positive,
    positive_int,
)
from ..errors import InputError
from ..kernels._base import AbstractKernel
from ..kernels._tree_kernels import as_trees
from ._expansion import KernelExpansion, split_tree_kernel
from ._ovr import one_vs_rest

_TAU = 1e-12  # LIBSVM's floor for a non-positive second derivative


class KernelSVM(eqx.Module):
    """A kernel SVM on a precomputed Gram matrix (binary, or one-vs-rest with a leading class
    axis).

    Attributes:
        coef: `[..., n]` a_i y_i over the training inputs (0 off the support vectors).
        intercept: `[...]` -rho.
        classes: for one-vs-rest models, the class labels (sorted); for a binary model that
            names them, its (negative, positive) labels; else None.
    """

    coef: Float[Array, "*classes n"]
    intercept: Float[Array, "*classes"]
    classes: tuple[Any, ...] | None = eqx.field(static=True, default=None)

    @property
    def support(self) -> np.ndarray:
        """Indices of the training inputs with a non-zero coefficient (in any class)."""
        nz = np.asarray(self.coef) != 0
        return np.flatnonzero(nz.reshape(-1, nz.shape[-1]).any(axis=0))

    @property
    def n_support(self) -> int:
        """Support vectors: kernel evaluations needed to classify one input."""
        return len(self.support)

    def decision_function(self, k: Float[Array, "m n"]) -> Float[Array, " m *classes"]:
        """Decision values from `k[i, j] = K(x_i, train_j)`."""
        self = finite_model(self)
        finite("k", k)
        k = jnp.asarray(k)
        n = self.coef.shape[-1]
        if k.ndim != 2 or k.shape[1] != n:
            raise InputError(f"kernel block has shape {tuple(k.shape)}; the model was trained on "
                             f"{n} inputs: pass K(test, train) of shape [m, {n}]")
        prec = jax.lax.Precision.HIGHEST
        f = jnp.matmul(k, jnp.moveaxis(self.coef, -1, 0), precision=prec)
        return f + self.intercept[None]  # [m, *classes] + [1, *classes]

    def predict(self, k: Float[Array, "m n"]):
        """±1 (binary: +1 where f >= 0) or class labels (one-vs-rest: the highest decision
        value, ties to the lowest class)."""
        return predict_labels(self.decision_function(k), self.classes)

    def binary_decision(self, scores: Float[Array, "m 2"]) -> tuple[int, Any]:
        """`(positive class index, one decision value per input)` of two-class scores (a
        binary model's (-f, f): f; two one-vs-rest models: half the difference of their
        mirror problems' values), float64 NumPy."""
        return two_class_decision(scores, self.classes, logits=False)

    def expand(self, kernel: AbstractKernel, inputs: Sequence[Any]) -> KernelExpansion:
        """The model as a `KernelExpansion` over its support inputs (`inputs`: the training
        inputs of the Gram matrix, in its order), which classifies new inputs itself."""
        if len(inputs) != self.coef.shape[-1]:
            raise InputError(f"{len(inputs)} inputs for a model trained on "
                             f"{self.coef.shape[-1]}")
        support = self.support
        split = split_tree_kernel(kernel)
        chosen = [inputs[int(i)] for i in support]
        if split is not None:
            chosen = as_trees(chosen, split[0].tree_index)
        return KernelExpansion(kernel, self.coef[..., support], self.intercept,
                               tuple(int(i) for i in support), tuple(chosen), self.classes)


def _smo(k, y, c_i, tol, max_iter):
    n = y.shape[0]
    qd = jnp.diagonal(k)
    dtype = k.dtype

    def select(alpha, grad):
        yg = y * grad
        up = ((y > 0) & (alpha < c_i)) | ((y < 0) & (alpha > 0))
        low = ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < c_i))
        score_up = jnp.where(up, -yg, -jnp.inf)
        i = jnp.argmax(score_up)
        gmax = score_up[i]
        gmax2 = jnp.max(jnp.where(low, yg, -jnp.inf))
        grad_diff = gmax + yg
        quad = qd[i] + qd - 2 * k[i]
        quad = jnp.where(quad > 0, quad, _TAU)
        obj = jnp.where(low & (grad_diff > 0), -(grad_diff**2) / quad, jnp.inf)
        j = jnp.argmin(obj)
        return i, j, gmax + gmax2

    def cond(state):
        _, _, it, gap = state
        return (gap >= tol) & (it < max_iter)

    def body(state):
        alpha, grad, it, _ = state
        i, j, _ = select(alpha, grad)
        yi, yj, ci, cj = y[i], y[j], c_i[i], c_i[j]
        ai, aj = alpha[i], alpha[j]
        kij = k[i, j]
        # the two-variable subproblem, exactly LIBSVM's update and clipping
        quad = jnp.maximum(qd[i] + qd[j] - 2 * kij, 0)
        quad = jnp.where(quad > 0, quad, _TAU)

        def opposite():
            delta = (-grad[i] - grad[j]) / quad
            diff = ai - aj
            ni, nj = ai + delta, aj + delta
            ni, nj = (jnp.where(diff > 0, jnp.where(nj < 0, diff, ni), jnp.where(ni < 0, 0., ni)),
                      jnp.where(diff > 0, jnp.where(nj < 0, 0., nj), jnp.where(ni < 0, -diff, nj)))
            hi = diff > ci - cj
            ni, nj = (jnp.where(hi, jnp.where(ni > ci, ci, ni), jnp.where(nj > cj, cj + diff, ni)),
                      jnp.where(hi, jnp.where(ni > ci, ci - diff, nj), jnp.where(nj > cj, cj, nj)))
            return ni, nj

        def same():
            delta = (grad[i] - grad[j]) / quad
            total = ai + aj
            ni, nj = ai - delta, aj + delta
            over = total > ci
            ni, nj = (jnp.where(over, jnp.where(ni > ci, ci, ni),
                                jnp.where(nj < 0, total, ni)),
                      jnp.where(over, jnp.where(ni > ci, total - ci, nj),
                                jnp.where(nj < 0, 0., nj)))
            over = total > cj
            ni, nj = (jnp.where(over, jnp.where(nj > cj, total - cj, ni),
                                jnp.where(ni < 0, 0., ni)),
                      jnp.where(over, jnp.where(nj > cj, cj, nj),
                                jnp.where(ni < 0, total, nj)))
            return ni, nj

        oi, oj = opposite()
        si, sj = same()
        ni = jnp.where(yi != yj, oi, si).astype(dtype)
        nj = jnp.where(yi != yj, oj, sj).astype(dtype)
        # Q_t,i = y_t y_i K_t,i: the gradient moves along two columns of K
        grad = grad + y * (yi * (ni - ai) * k[i] + yj * (nj - aj) * k[j])
        alpha = alpha.at[i].set(ni).at[j].set(nj)
        _, _, gap = select(alpha, grad)
        return alpha, grad, it + 1, gap

    alpha0 = jnp.zeros(n, dtype)
    grad0 = -jnp.ones(n, dtype)
    _, _, gap0 = select(alpha0, grad0)
    alpha, grad, it, gap = jax.lax.while_loop(cond, body, (alpha0, grad0, jnp.int32(0), gap0))
    # rho as LIBSVM: mean of y G over free vectors, else the middle of the feasible interval
    yg = y * grad
    free = (alpha > 0) & (alpha < c_i)
    ub_set = ((y > 0) & (alpha >= c_i)) | ((y < 0) & (alpha <= 0))
    lb_set = ((y > 0) & (alpha <= 0)) | ((y < 0) & (alpha >= c_i))
    ub = jnp.min(jnp.where(ub_set, yg, jnp.inf))
    lb = jnp.max(jnp.where(lb_set, yg, -jnp.inf))
    n_free = jnp.sum(free)
    rho = jnp.where(n_free > 0, jnp.sum(jnp.where(free, yg, 0)) / jnp.maximum(n_free, 1),
                    (ub + lb) / 2)
    objective = 0.5 * jnp.sum(alpha * (grad - 1))
    return alpha * y, -rho, objective, it, gap < tol


@filter_jit
def _fit(k, y, c_i, tol, max_iter):
    coef, b, objective, it, ok = _smo(k, y, c_i, tol, max_iter)
    finite = jnp.isfinite(objective) & jnp.isfinite(b)
    return coef, b, objective, it, result_code(ok, finite)


def _check_gram(gram, dtype) -> Array:
    k = jnp.asarray(gram)
    if k.ndim != 2 or k.shape[0] != k.shape[1]:
        raise InputError(f"gram must be a square [n, n] matrix, got shape {k.shape}")
    if k.shape[0] < 2:
        raise InputError(f"gram must hold at least 2 examples, got shape {k.shape}")
    k = k.astype(float_dtype(dtype, k))
    finite("gram", k)
    return k


def ksvm(gram: Float[Array, "n n"], y: Any, *, C: Any = 1.0,
         class_weight: Mapping[Any, Any] | str | None = None, tol: Any = 1e-3,
         max_iter: int = 1_000_000, dtype: Any = None, throw: bool = False
         ) -> Solution[KernelSVM]:
    """A binary C-SVM on a precomputed Gram matrix (labels ±1).

    Args:
        gram: `[n, n]` kernel matrix of the training inputs.
        y: ±1 labels.
        C: the box constraint (> 0; may be traced: `jax.vmap` over a grid of C).
        class_weight: `{1: w_pos, -1: w_neg}` or "balanced": C_i = C * weight(y_i)
            (LIBSVM's -wi).
        tol: stopping tolerance on the maximal violating pair (LIBSVM's -e, default 1e-3).
        max_iter: bound on SMO steps.
        dtype: computation dtype (default: the Gram matrix's floating dtype).
        throw: raise `ConvergenceError` unless the stopping rule was met.

    Returns:
        A `Solution` with a `KernelSVM` and stats `n_iter` (SMO steps) and `dual_objective`
        (½ aᵀQa − Σa at the solution).

    >>> import jax.numpy as jnp
    >>> x = jnp.array([[0.0], [1.0], [3.0], [4.0]])
    >>> model = ksvm(x @ x.T + 1, [-1, -1, 1, 1], C=10.0).model
    >>> model.predict(jnp.array([[0.5], [3.5]]) @ x.T + 1).tolist()
    [-1, 1]
    """
    k = _check_gram(gram, dtype)
    n = k.shape[0]
    y = plus_minus_labels("y", y, n, k.dtype)
    C = positive("C", C, k.dtype)
    tol = positive("tol", tol, k.dtype)
    max_iter = positive_int("max_iter", max_iter)
    w_pos, w_neg = class_weights(class_weight, (1, -1), y)
    c_i = jnp.where(y > 0, C * jnp.asarray(w_pos, k.dtype), C * jnp.asarray(w_neg, k.dtype))
    c_i = eqx.error_if(c_i, ~(c_i > 0), "class weights must be > 0")
    coef, b, obj, it, code = _fit(k, y, c_i, tol, jnp.int32(max_iter))
    solution = Solution(KernelSVM(coef, b), code, {"n_iter": it, "dual_objective": obj})
    return solution.check(throw)


def ksvm_ovr(gram: Float[Array, "n n"], labels: Any, *, C: Any = 1.0,
             class_weight: Mapping[Any, Any] | str | None = None,
             classes: Sequence[Any] | None = None, **options: Any) -> Solution[KernelSVM]:
    """One-vs-rest C-SVMs for every class of `labels`, trained as one vmapped program over
    the shared Gram matrix (`one_vs_rest(ksvm, ...)`; options as `ksvm`)."""
    k = _check_gram(gram, options.pop("dtype", None))
    return one_vs_rest(ksvm, k, labels, classes=classes, class_weight=class_weight, C=C,
                       **options)
