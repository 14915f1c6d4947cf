"""The dual of the 1-slack SVM over a set of cutting planes, by accelerated projected gradient.

With cutting planes (d_j, g_j), j < t, the 1-slack primal

    min_w,xi  1/2 |w|^2 + C xi   s.t.  w . g_j >= d_j - xi  (all j),  xi >= 0

has the dual

    max_alpha  d . alpha - 1/2 alpha^T G alpha   s.t.  alpha >= 0,  sum(alpha) <= C,

G_jl = g_j . g_l, and w = sum_j alpha_j g_j. The feasible set is a capped simplex; its
Euclidean projection has a closed form (clip at 0, or a simplex projection when the clipped
vector sums to more than C). FISTA with adaptive restart on this problem converges to the
exact optimum; it stops on the duality gap, which needs no knowledge of the optimum.

Arrays are padded to a fixed capacity with a `mask` of the planes in use, so a cutting-plane
run that adds one plane per iteration recompiles only when the capacity doubles.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from .._cache import jit


class QPResult(NamedTuple):
    """The dual solution and how it was reached.

    Attributes:
        alpha: `[T]` dual variables (0 outside the mask).
        dual: the dual objective d . alpha - 1/2 alpha^T G alpha.
        primal: 1/2 alpha^T G alpha + C max(0, max_j (d_j - (G alpha)_j)): the primal
            objective of w = sum alpha_j g_j with its smallest feasible slack.
        gap: primal - dual (>= 0; 0 at the optimum).
        iterations: gradient steps taken (rejected trial steps included).
        lipschitz: the curvature bound L of the last step (a warm start for the next solve).
    """

    alpha: Float[Array, " T"]
    dual: Float[Array, ""]
    primal: Float[Array, ""]
    gap: Float[Array, ""]
    iterations: Int[Array, ""]
    lipschitz: Float[Array, ""]


def project_capped_simplex(v: Float[Array, " T"], c: Float[Array, ""] | float,
                           mask: Bool[Array, " T"]) -> Float[Array, " T"]:
    """Euclidean projection of `v` onto {a >= 0, sum(a) <= c, a = 0 outside `mask`}."""
    v = jnp.where(mask, v, 0)
    clipped = jnp.maximum(v, 0)
    # Simplex {a >= 0, sum(a) = c}: a = max(v - theta, 0) with theta from the sorted values.
    # Padding zeros do not change theta (> 0 in this branch) and project to 0.
    u = jnp.sort(v)[::-1]
    css = jnp.cumsum(u)
    k = jnp.arange(1, v.shape[0] + 1, dtype=v.dtype)
    rho = jnp.max(jnp.where(u - (css - c) / k > 0, k, 1))
    theta = (css[rho.astype(jnp.int32) - 1] - c) / rho
    on_simplex = jnp.maximum(v - theta, 0)
    out = jnp.where(jnp.sum(clipped) <= c, clipped, on_simplex)
    return jnp.where(mask, out, 0)


def _objectives(alpha, g_alpha, offsets, c, mask):
    """Dual and primal objectives of `alpha`, given G alpha."""
    quad = 0.5 * alpha @ g_alpha
    dual = offsets @ alpha - quad
    slack = jnp.maximum(0, jnp.max(jnp.where(mask, offsets - g_alpha, -jnp.inf)))
    primal = quad + c * slack
    return dual, primal


@jit
def solve_one_slack_dual(
    gram: Float[Array, "T T"],
    offsets: Float[Array, " T"],
    c: Float[Array, ""] | float,
    mask: Bool[Array, " T"],
    alpha0: Float[Array, " T"] | None = None,
    tol: float | Float[Array, ""] = 1e-10,
    max_iter: int | Int[Array, ""] = 100_000,
    lipschitz: Float[Array, ""] | float | None = None,
) -> QPResult:
    """Maximize d . alpha - 1/2 alpha^T G alpha over alpha >= 0, sum(alpha) <= C.

    Args:
        gram: `[T, T]` G_jl = g_j . g_l (only the masked block is read).
        offsets: `[T]` the planes' offsets d_j.
        c: the 1-slack SVM's C.
        mask: `[T]` planes in use.
        alpha0: warm start (projected onto the feasible set first); zeros if None.
        tol: stop when primal - dual <= tol * max(1, |dual|).
        max_iter: most gradient steps (rejected trial steps included).
        lipschitz: a first estimate of the step's curvature bound L (a previous solve's
            `QPResult.lipschitz`: adding a plane never lowers the largest eigenvalue of G).
            None: the largest eigenvalue of G, computed here (an O(T^3) eigensolve). Either
            way a step whose curvature exceeds L is rejected and retried with a larger L
            (backtracking), which keeps FISTA's convergence guarantee without the eigensolve.
    """
    dtype = gram.dtype
    both = mask[:, None] & mask[None, :]
    gram = jnp.where(both, gram, 0)
    offsets = jnp.where(mask, offsets, 0)
    c = jnp.asarray(c, dtype)
    tiny = jnp.finfo(dtype).tiny
    if lipschitz is None:
        # L = the largest eigenvalue of G (G is PSD; tiny floor for an all-zero G).
        lipschitz = jnp.linalg.eigvalsh(gram)[-1]
    lipschitz = jnp.maximum(jnp.asarray(lipschitz, dtype), tiny)
    start = jnp.zeros_like(offsets) if alpha0 is None else alpha0.astype(dtype)
    start = project_capped_simplex(start, c, mask)

    def cond(state):
        it, gap, dual = state[-3:]
        return (it < max_iter) & (gap > tol * jnp.maximum(1.0, jnp.abs(dual)))

    # One product with G per step: G y is kept alongside y, by linearity of the momentum.
    def body(state):
        alpha, g_alpha, y, g_y, theta, lip, it, gap, dual = state
        grad = offsets - g_y  # gradient of the (maximized) dual at y
        new = project_capped_simplex(y + grad / lip, c, mask)
        g_new = gram @ new
        step = new - y
        curvature = step @ (g_new - g_y)
        # The step is a valid 1/L step when its curvature along it is at most L
        # (the sufficient-decrease condition of backtracking FISTA, exact for a quadratic).
        accept = curvature <= lip * (step @ step) * (1 + 1e-9)
        theta_new = 0.5 * (1 + jnp.sqrt(1 + 4 * theta**2))
        beta = (theta - 1) / theta_new
        # Adaptive restart (O'Donoghue & Candes): drop the momentum when it points uphill.
        restart = jnp.dot(grad, new - alpha) < 0
        y_new = jnp.where(restart, new, new + beta * (new - alpha))
        g_y_new = jnp.where(restart, g_new, g_new + beta * (g_new - g_alpha))
        theta_new = jnp.where(restart, 1.0, theta_new)
        dual_new, primal_new = _objectives(new, g_new, offsets, c, mask)
        # rejected: stay at y with L raised past the curvature seen (10% margin)
        lip_up = 1.1 * curvature / jnp.maximum(step @ step, tiny)
        keep = lambda a, b: jnp.where(accept, a, b)  # noqa: E731
        return (keep(new, alpha), keep(g_new, g_alpha), keep(y_new, y), keep(g_y_new, g_y),
                keep(theta_new, theta), keep(lip, lip_up), it + 1,
                keep(primal_new - dual_new, gap), keep(dual_new, dual))

    g_start = gram @ start
    dual0, primal0 = _objectives(start, g_start, offsets, c, mask)
    state = (start, g_start, start, g_start, jnp.asarray(1.0, dtype), lipschitz,
             jnp.asarray(0), primal0 - dual0, dual0)
    alpha, _, _, _, _, lip, it, _, _ = jax.lax.while_loop(cond, body, state)
    dual, primal = _objectives(alpha, gram @ alpha, offsets, c, mask)
    return QPResult(alpha, dual, primal, primal - dual, it, lip)
