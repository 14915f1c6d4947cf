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

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

_TAU = 1e-12  # LIBSVM's floor for a non-positive second derivative


class KernelSVM(eqx.Module):
    """A trained kernel SVM (binary, or one-vs-rest with a leading class axis).

    Attributes:
        coef: `[..., n]` a_i y_i over the training inputs (0 off the support vectors).
        intercept: `[...]` -rho.
        dual_objective: `[...]` ½ aᵀQa − Σa at the solution.
        n_iter: `[...]` SMO steps taken.
        converged: `[...]` whether the stopping rule was met within `max_iter`.
        classes: for one-vs-rest models, the class labels (sorted), else None.
    """

    coef: Float[Array, "*classes n"]
    intercept: Float[Array, "*classes"]
    dual_objective: Float[Array, "*classes"]
    n_iter: Int[Array, "*classes"]
    converged: Bool[Array, "*classes"]
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

    def decision_function(self, k: Float[Array, "m n"]) -> Float[Array, "m *classes"]:
        """Decision values from `k[i, j] = K(x_i, train_j)`."""
        k = jnp.asarray(k)
        prec = jax.lax.Precision.HIGHEST
        return jnp.matmul(k, jnp.moveaxis(self.coef, -1, 0), precision=prec) + self.intercept

    def predict(self, k: Float[Array, "m n"]):
        """±1 (binary) or class labels (one-vs-rest: the highest decision value)."""
        f = self.decision_function(k)
        if self.classes is None:
            return jnp.where(f >= 0, 1, -1)
        return np.asarray(self.classes)[np.asarray(jnp.argmax(f, axis=-1))]


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
            ni, nj = (jnp.where(over, jnp.where(ni > ci, ci, ni), jnp.where(nj < 0, total, ni)),
                      jnp.where(over, jnp.where(ni > ci, total - ci, nj), jnp.where(nj < 0, 0., nj)))
            over = total > cj
            ni, nj = (jnp.where(over, jnp.where(nj > cj, total - cj, ni), jnp.where(ni < 0, 0., ni)),
                      jnp.where(over, jnp.where(nj > cj, cj, nj), jnp.where(ni < 0, total, nj)))
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


@eqx.filter_jit
def _fit(k, y, c_i, tol, max_iter):
    return _smo(k, y, c_i, tol, max_iter)


@eqx.filter_jit
def _fit_many(k, ys, cs, tol, max_iter):
    return jax.vmap(_smo, in_axes=(None, 0, 0, None, None))(k, ys, cs, tol, max_iter)


def _check_gram(gram) -> Array:
    k = jnp.asarray(gram)
    if k.ndim != 2 or k.shape[0] != k.shape[1]:
        raise ValueError(f"gram must be a square [n, n] matrix, got shape {k.shape}")
    if not jnp.issubdtype(k.dtype, jnp.floating):
        k = k.astype(float)
    return k


def _per_example_c(y, c, class_weight, dtype):
    w_pos, w_neg = (1.0, 1.0) if class_weight is None else class_weight
    return jnp.where(y > 0, c * w_pos, c * w_neg).astype(dtype)


def ksvm(gram: Float[Array, "n n"], y: Sequence[int], *, C: float = 1.0,
         class_weight: tuple[float, float] | None = None, tol: float = 1e-3,
         max_iter: int = 1_000_000) -> KernelSVM:
    """A binary C-SVM on a precomputed Gram matrix (labels ±1).

    Args:
        gram: `[n, n]` kernel matrix of the training inputs.
        y: ±1 labels.
        C: the box constraint.
        class_weight: `(w_pos, w_neg)`: C_i = C * w of y_i's class (LIBSVM's -wi).
        tol: stopping tolerance on the maximal violating pair (LIBSVM's -e, default 1e-3).
        max_iter: bound on SMO steps.

    >>> import jax.numpy as jnp
    >>> x = jnp.array([[0.0], [1.0], [3.0], [4.0]])
    >>> model = ksvm(x @ x.T + 1, [-1, -1, 1, 1], C=10.0)
    >>> model.predict(jnp.array([[0.5], [3.5]]) @ x.T + 1).tolist()
    [-1, 1]
    """
    k = _check_gram(gram)
    y = jnp.asarray(y)
    if y.shape != (k.shape[0],) or not bool(jnp.all((y == 1) | (y == -1))):
        raise ValueError("y must hold one label +1 or -1 per row of gram")
    if not C > 0:
        raise ValueError(f"C must be > 0, got {C}")
    y = y.astype(k.dtype)
    coef, b, obj, it, ok = _fit(k, y, _per_example_c(y, C, class_weight, k.dtype),
                                jnp.asarray(tol, k.dtype), jnp.int32(max_iter))
    return KernelSVM(coef, b, obj, it, ok)


def ksvm_ovr(gram: Float[Array, "n n"], labels: Sequence[Any], *, C: float = 1.0,
             tol: float = 1e-3, max_iter: int = 1_000_000) -> KernelSVM:
    """One-vs-rest C-SVMs for every class of `labels`, trained as one vmapped program."""
    k = _check_gram(gram)
    labels = np.asarray(labels)
    if labels.shape != (k.shape[0],):
        raise ValueError(f"labels must have one entry per row of gram ({k.shape[0]})")
    classes = np.unique(labels)
    if len(classes) < 2:
        raise ValueError("one-vs-rest needs at least two classes")
    if not C > 0:
        raise ValueError(f"C must be > 0, got {C}")
    ys = jnp.asarray(np.where(labels[None, :] == classes[:, None], 1.0, -1.0), k.dtype)
    cs = jnp.full(ys.shape, C, k.dtype)
    coef, b, obj, it, ok = _fit_many(k, ys, cs, jnp.asarray(tol, k.dtype), jnp.int32(max_iter))
    return KernelSVM(coef, b, obj, it, ok, tuple(classes.tolist()))
