"""Grave (2014)'s relaxation by alternating a primal phase in W and a dual (bcd) phase.

Neither dual method alone reaches small gaps on features whose Gram has a few huge
eigenvalues (common features: on ds-wordnet sigma_max(X)^2 = 16,692 at lam = 1). FISTA's
step shrinks with ||Q||; block coordinate ascent handles the stiff directions (its blocks
take their own curvatures) but creeps along the soft ones, the directions in which the
objective is flat. A method in the primal weights W treats exactly those well, so the two
are alternated, each cycle:

**Primal phase.** The primal is min over W of h(W) = min_Y (||Y - X W||^2 + lam ||W||^2) /
(2 lam) + mu slack(Y), Y feasible. The inner minimum separates by pair; it is a Moreau
envelope, so h is smooth and 1-strongly convex, with gradient W + X^T (X W - Y(W)) / lam
and Hessian at most I + X^T X / lam (Y(W) is `label_pairs`' labelling: its pair multipliers
are warm-started from the previous step's, so a few steps per call keep them current). h
has no constraints, so the step is preconditioned: by the diagonal P of I + X^T X / lam (a
common feature's column is scaled down by its count), with the Lipschitz constant of
P^-1/2 (I + X^T X / lam) P^-1/2 bounded by 1 + sigma_max(X P^-1/2)^2 / lam (power
iteration, 1% margin). Steps are accelerated (FISTA) with O'Donoghue & Candes's gradient
restart.

**Dual phase.** The labelling splits (Y - X W) / lam exactly into a dual point (`label_pairs`:
Lam = a, nu = -theta / lam, Sig >= 0), which starts `_bcd`'s sweeps; they fix the stiff
directions in a few sweeps, and the check after them (`check_point`) gives a certified
primal bound and dual value.

The next primal phase starts from whichever W (the primal phase's, or bcd's X^T Z) has the
lower bound. The best bound and the best dual value over all cycles bracket the optimum; the
run stops when their relative gap is <= tol, returning the labelling and weights of the best
bound and the Z of the best dual point.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._sparse import Features, SparseRows, matmul, rmatmul
from . import _bcd
from ._relaxation import (
    Check,
    Problem,
    check_point,
    label_pairs,
    primal_bound,
    relative_gap,
    spectral_norm_sq,
)


def _column_sq_norms(x: Features) -> Any:
    """Squared norm of each column of X, per block: `[D_b, 1]` arrays (a tuple for blocks)."""
    if isinstance(x, tuple):
        return tuple(_column_sq_norms(b) for b in x)
    if isinstance(x, SparseRows):
        ones = jnp.ones((x.indices.shape[0], 1), x.values.dtype)
        return rmatmul(SparseRows(x.indices, x.values * x.values, x.n_features), ones)
    return jnp.sum(x * x, axis=0)[:, None]


def _scale_columns(x: Features, scale: Any) -> Features:
    """X with column j multiplied by scale[j] (`[D_b, 1]` per block)."""
    if isinstance(x, tuple):
        return tuple(_scale_columns(b, s) for b, s in zip(x, scale, strict=True))
    if isinstance(x, SparseRows):
        return SparseRows(x.indices, x.values * scale[x.indices, 0], x.n_features)
    return x * scale[:, 0][None, :]


def _tree_dot(a: Any, b: Any) -> Float[Array, ""]:
    return sum((jnp.sum(u * v) for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b))),
               start=jnp.zeros(()))


def _weights(w: Any) -> Float[Array, "d c"]:
    """W as one `[D, C]` array (blocks stacked in order), as bcd's buffer holds it."""
    return jnp.concatenate(w, axis=0) if isinstance(w, tuple) else w


class Best(NamedTuple):
    """The best bound so far with the labelling and weights behind it, and the best dual
    value with its Z."""

    primal: Float[Array, ""]
    y: Float[Array, "n c"]
    w: Any
    dual: Float[Array, ""]
    z: Float[Array, "n c"]


def solve(prob: Problem, lay: _bcd.Layout, tol: Any, *, max_iter: int, primal_steps: int,
          sweeps: int, refine: int) -> tuple[Any, Check, Float[Array, "n c"], Any,
                                             Float[Array, "n c"], Float[Array, "k 4"], Any]:
    """Cycles of `primal_steps` primal steps (each labelling with `refine` multiplier steps)
    and `sweeps` bcd sweeps, until the relative gap is <= tol or `max_iter` cycles. Returns
    (cycles, check, Y-hat, W, Z, history, sweep count)."""
    x, cons, lam = prob.x, prob.cons, prob.lam
    dt = cons.sign.dtype
    c = cons.n_classes
    precond = jax.tree.map(lambda s: 1.0 + s / lam, _column_sq_norms(x))
    scaled = _scale_columns(x, jax.tree.map(lambda p: 1.0 / jnp.sqrt(p), precond))
    lipschitz = (1.0 + spectral_norm_sq(scaled, dtype=dt) / lam) * 1.01
    order = jnp.arange(cons.n_pairs, dtype=jnp.int32)

    def primal_phase(w, a):
        def step(_, s):
            w, w_prev, a, t = s
            t_next = (1 + jnp.sqrt(1 + 4 * t * t)) / 2
            beta = (t - 1) / t_next
            v = jax.tree.map(lambda u, p: u + beta * (u - p), w, w_prev)
            xv = matmul(x, v)
            y, a, _ = label_pairs(prob, xv, a, refine)
            grad = jax.tree.map(lambda u, g: u + g / lam, v, rmatmul(x, xv - y))
            new = jax.tree.map(lambda u, g, p: u - g / (lipschitz * p), v, grad, precond)
            # gradient restart: momentum is dropped when the step goes against the gradient
            restart = _tree_dot(grad, jax.tree.map(jnp.subtract, new, w)) > 0
            return new, w, a, jnp.where(restart, jnp.ones((), dt), t_next)

        w, _, a, _ = jax.lax.fori_loop(0, primal_steps, step, (w, w, a, jnp.ones((), dt)))
        xw = matmul(x, w)
        y, a, theta = label_pairs(prob, xw, a, refine)
        return w, a, y, (y - xw) / lam, primal_bound(prob, y, xw, w)

    def dual_phase(z, a):
        # (Y - X W) / lam = E^T (S o a) + U exactly (`label_pairs`): bcd's point, W = X^T Z
        u = z - (cons.sign * a)[cons.mention_pair]
        state = _bcd.BCDState(jnp.concatenate([_weights(rmatmul(x, z)), u, a], axis=0),
                              jnp.zeros((), jnp.int32))
        state = jax.lax.fori_loop(
            0, sweeps, lambda _, st: _bcd.sweep(st, lay, cons, lam, prob.mu, order), state)
        point = _bcd.dual_point(state, lay, cons)
        chk, y_hat, w, z = check_point(point, prob, refine)
        return chk, y_hat, w, z, point.lam

    def better(best: Best, primal, y, w, dual, z) -> Best:
        p_wins, d_wins = primal < best.primal, dual > best.dual

        def pick(cond, new, old):
            return jax.tree.map(lambda a, b: jnp.where(cond, a, b), new, old)

        return Best(jnp.minimum(primal, best.primal), pick(p_wins, y, best.y),
                    pick(p_wins, w, best.w), jnp.maximum(dual, best.dual),
                    pick(d_wins, z, best.z))

    def gap_of(best: Best):
        return relative_gap(best.primal, best.dual)

    def cond(s):
        _, _, best, _, _, k = s
        gap = gap_of(best)
        return (k == 0) | ((k < max_iter) & ~(gap <= tol) & ~jnp.isnan(gap))

    def body(s):
        w, a, best, _, history, k = s
        w, a, y, z, bound = primal_phase(w, a)
        chk, y_hat, w_dual, z_dual, lam_dual = dual_phase(z, a)
        best = better(best, bound, y, w, -jnp.inf, z)
        best = better(best, chk.primal, y_hat, w_dual, chk.dual, z_dual)
        history = history.at[k].set(jnp.stack([best.primal, best.dual, gap_of(best),
                                               chk.violation]))
        # the next primal phase starts from the weights with the lower bound
        dual_wins = chk.primal < bound
        w = jax.tree.map(lambda d, p: jnp.where(dual_wins, d, p), w_dual, w)
        a = jnp.where(dual_wins, lam_dual, a)
        return w, a, best, chk.violation, history, k + 1

    w0 = jax.tree.map(lambda p: jnp.zeros((p.shape[0], c), dt), precond)
    n = cons.mention_pair.shape[0]
    zeros_nc = jnp.zeros((n, c), dt)
    inf = jnp.asarray(jnp.inf, dt)
    best0 = Best(inf, zeros_nc, w0, -inf, zeros_nc)
    history = jnp.full((max_iter, 4), jnp.nan, dt)
    _, _, best, violation, history, k = jax.lax.while_loop(
        cond, body, (w0, jnp.zeros((cons.n_pairs, c), dt), best0, inf, history,
                     jnp.zeros((), jnp.int32)))
    chk = Check(best.primal, best.dual, gap_of(best), violation)
    return k, chk, best.y, best.w, best.z, history, k * sweeps
