"""Grave (2014)'s convex relaxation for distant supervision, solved in its dual by FISTA.

Mentions i = 1..N (rows of the feature matrix X), grouped into entity pairs p = 1..P
(`mention_pair[i]`, the incidence matrix E as an index); C = K + 1 classes, class 0 = NA.
The relaxation infers a soft labelling Y of the mentions:

    min_{Y, xi}  1/2 tr(Y^T Q^-1 Y) + mu ||xi||_1,   Q = X X^T + lam I
    s.t.         Y >= 0,  Y 1 = 1,  S o (E Y) >= R - xi,  xi >= 0

(S, R: `Constraints`). Its dual, with Z = E^T (S o Lam) + Sig + nu 1^T,

    max  D = -1/2 tr(Z^T Q Z) + <Lam, R> + <nu, 1>   over Lam in [0, mu], Sig >= 0, nu free,

is smooth with box constraints: every projection is a clip. Y = Q Z = X (X^T Z) + lam Z uses
products with X only (never an N x N matrix), and the classifier is W = X^T Z.

Step sizes (derived in docs/distant_supervision.md and tested): the Hessian of -D is
A^T Q A with A(Lam, Sig, nu) = E^T (S o Lam) + Sig + nu 1^T, and by Cauchy-Schwarz
||A theta||^2 <= 3 (sum_p n_p ||Lam_p||^2 + ||Sig||^2 + C ||nu||^2), so -D is smooth with
constant 3 ||Q|| in the metric M = diag(n_p, 1, C): each block steps by 1 / (3 ||Q|| M).
||Q|| = sigma_max(X)^2 + lam, sigma_max^2 from a power iteration (with a 1% margin).

Stopping: every `check_every` steps, a feasible primal point is built from the dual one:
Y-hat = each row of Q Z projected onto the simplex, xi = max(0, R - S o (E Y-hat)), and its
objective bounded above without Q^-1 through
1/2 tr(Y^T Q^-1 Y) = min_W (||Y - X W||^2 + lam ||W||^2) / (2 lam), taken at W = X^T Z
(equality at the optimum). The relative gap (P - D) / P certifies both.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._sparse import Features, SparseRows, matmul, n_rows, rmatmul, weights_sq_norm
from .._validate import finite_model, float_dtype
from ..errors import InputError


class Constraints(eqx.Module):
    """The pair-level constraints S o (E Y) >= R - xi of the relaxation.

    Attributes:
        mention_pair: `[N]` int32, the pair of each mention (E as an index).
        sign: `[P, C]` S: +1 "at least R mentions", -1 "at most -R mentions", 0 none.
        bound: `[P, C]` R (0 where `sign` is 0).
        pair_size: `[P]` mentions per pair.
    """

    mention_pair: Int[Array, " n"]
    sign: Float[Array, "p c"]
    bound: Float[Array, "p c"]
    pair_size: Float[Array, " p"]

    @property
    def n_pairs(self) -> int:
        return self.sign.shape[0]

    @property
    def n_classes(self) -> int:
        return self.sign.shape[1]


def constraints(mention_pair: Any, relations: Any, *, at_least: float = 1.0,
                dtype: Any = None) -> Constraints:
    """Grave's constraints from the knowledge base.

    Args:
        mention_pair: `[N]` ints in [0, P): the entity pair of each mention; every pair needs
            at least one mention.
        relations: `[P, K]` bools: `relations[p, k]` when the KB holds relation k (class k + 1)
            for pair p. Class 0 is NA.
        at_least: R of a held relation: its pair's mentions must carry at least this much of
            it in total (Grave: 1, "at least one mention expresses it").

    The convention: for a held relation, sum_{i in p} Y[i, k] >= at_least (S = +1, R =
    at_least); for a relation the KB does not hold, sum_{i in p} Y[i, k] <= 0 (S = -1, R = 0):
    no mention of the pair expresses it, so a pair without KB relations is all NA; the NA
    column itself is unconstrained (S = R = 0). Violations cost mu per unit of slack.
    """
    dt = float_dtype(dtype)
    mp = np.asarray(mention_pair)
    rel = np.asarray(relations)
    if rel.ndim != 2 or rel.shape[1] < 1:
        raise InputError(f"relations must be a [pairs, relations] boolean array, got shape "
                         f"{rel.shape}")
    if rel.dtype != bool:
        if not np.isin(rel, (0, 1)).all():
            raise InputError("relations must be booleans (or 0/1)")
        rel = rel.astype(bool)
    p = rel.shape[0]
    if mp.ndim != 1 or not np.issubdtype(mp.dtype, np.integer):
        raise InputError(f"mention_pair must be a 1-D integer array, got {mp.dtype} shape "
                         f"{mp.shape}")
    if len(mp) and (mp.min() < 0 or mp.max() >= p):
        raise InputError(f"mention_pair must index the {p} pairs, got values "
                         f"{mp.min()}..{mp.max()}")
    size = np.bincount(mp, minlength=p)
    if (size == 0).any():
        raise InputError(f"{int((size == 0).sum())} pairs have no mention (e.g. pair "
                         f"{int(np.flatnonzero(size == 0)[0])}); drop them from relations")
    if not (np.isfinite(at_least) and at_least > 0):
        raise InputError(f"at_least must be a finite number > 0, got {at_least}")
    sign = np.zeros((p, rel.shape[1] + 1))
    bound = np.zeros_like(sign)
    sign[:, 1:] = np.where(rel, 1.0, -1.0)
    bound[:, 1:] = np.where(rel, at_least, 0.0)
    return Constraints(jnp.asarray(mp, jnp.int32), jnp.asarray(sign, dt),
                       jnp.asarray(bound, dt), jnp.asarray(size, dt))


class RelationModel(eqx.Module):
    """The classifier W = X^T Z of a solved relaxation: mention scores x W, `[m, C]`.

    `weights` is `[D, C]`, or a tuple of per-block weights when the features are a tuple of
    blocks. Column 0 is NA.
    """

    weights: Any
    classes: tuple = eqx.field(static=True)

    def decision_function(self, x: Features) -> Float[Array, "m c"]:
        self = finite_model(self)
        return matmul(x, self.weights)

    def predict_index(self, x: Features) -> Int[Array, " m"]:
        return jnp.argmax(self.decision_function(x), axis=-1)

    def predict(self, x: Features) -> np.ndarray:
        return np.asarray(self.classes, dtype=object)[np.asarray(self.predict_index(x))]

    def pair_scores(self, x: Features, mention_pair: Any, n_pairs: int, *,
                    aggregate: str = "max") -> Float[Array, "p c"]:
        """Scores per entity pair from its mentions' (see `aggregate_pairs`)."""
        return aggregate_pairs(self.decision_function(x), mention_pair, n_pairs,
                               aggregate=aggregate)


def aggregate_pairs(scores: Float[Array, "m c"], mention_pair: Any, n_pairs: int, *,
                    aggregate: str = "max") -> Float[Array, "p c"]:
    """Per-pair scores from per-mention ones: `"max"` (Mintz, Riedel, Grave), `"mean"`, or
    `"noisy_or"`: 1 - prod (1 - s) with each mention score clipped to [0, 1] (the relaxation's
    scores estimate the soft labels Y, which lie in [0, 1]). A pair without mentions gets
    -inf (max), 0 (mean, noisy-or)."""
    mp = jnp.asarray(mention_pair, jnp.int32)
    if aggregate == "max":
        return jax.ops.segment_max(scores, mp, num_segments=n_pairs)
    if aggregate == "mean":
        total = jax.ops.segment_sum(scores, mp, num_segments=n_pairs)
        count = jax.ops.segment_sum(jnp.ones_like(mp, scores.dtype), mp, num_segments=n_pairs)
        return total / jnp.maximum(count, 1)[:, None]
    if aggregate == "noisy_or":
        logs = jnp.log1p(-jnp.clip(scores, 0.0, 1.0 - 1e-12))
        return 1.0 - jnp.exp(jax.ops.segment_sum(logs, mp, num_segments=n_pairs))
    raise InputError(f"aggregate must be 'max', 'mean' or 'noisy_or', got {aggregate!r}")


class DualPoint(NamedTuple):
    lam: Float[Array, "p c"]  # Lambda, in [0, mu]
    sig: Float[Array, "n c"]  # Sigma >= 0
    nu: Float[Array, " n"]


class RelaxationState(NamedTuple):
    """FISTA's state: the iterate, the previous iterate, the momentum counter t, and the
    products at both iterates (Y = Q Z and W = X^T Z are linear in the dual point, so the
    extrapolated point's Y is a combination of the two: one product per step, and none for
    a check)."""

    x: DualPoint
    x_prev: DualPoint
    t: Float[Array, ""]
    n_iter: Int[Array, ""]
    restarts: Int[Array, ""]
    y: Float[Array, "n c"]  # Q Z(x)
    y_prev: Float[Array, "n c"]  # Q Z(x_prev)
    w: Any  # X^T Z(x)


class Check(NamedTuple):
    primal: Float[Array, ""]
    dual: Float[Array, ""]
    gap: Float[Array, ""]  # relative: (primal - dual) / max(|primal|, tiny)
    violation: Float[Array, ""]  # of Y = Q Z: max(-Y, |Y 1 - 1|)


class Problem(NamedTuple):
    """What `update` and `check` need besides the state: features, constraints, lam, mu,
    and ||Q|| (sigma_max(X)^2 + lam)."""

    x: Any
    cons: Constraints
    lam: Float[Array, ""]
    mu: Float[Array, ""]
    q_norm: Float[Array, ""]


def _z(cons: Constraints, d: DualPoint) -> Float[Array, "n c"]:
    return (cons.sign * d.lam)[cons.mention_pair] + d.sig + d.nu[:, None]


def _qz(prob: Problem, z: Float[Array, "n c"]) -> tuple[Float[Array, "n c"], Any]:
    w = rmatmul(prob.x, z)
    return matmul(prob.x, w) + prob.lam * z, w


def _pair_sum(cons: Constraints, y: Float[Array, "n c"]) -> Float[Array, "p c"]:
    return jax.ops.segment_sum(y, cons.mention_pair, num_segments=cons.n_pairs)


def init(prob: Problem) -> RelaxationState:
    """The state at the dual point 0 (Z = 0)."""
    n, c = n_rows(prob.x), prob.cons.n_classes
    dt = prob.cons.sign.dtype
    zero = DualPoint(jnp.zeros((prob.cons.n_pairs, c), dt), jnp.zeros((n, c), dt),
                     jnp.zeros((n,), dt))
    y0, w0 = _qz(prob, _z(prob.cons, zero))  # zeros, of the products' dtypes and structure
    return RelaxationState(zero, zero, jnp.ones((), dt), jnp.zeros((), jnp.int32),
                           jnp.zeros((), jnp.int32), y0, y0, w0)


def update(state: RelaxationState, prob: Problem) -> RelaxationState:
    """One accelerated projected-gradient step on the dual (FISTA with adaptive restart)."""
    cons = prob.cons
    c = cons.n_classes
    x, xp, t = state.x, state.x_prev, state.t
    t_next = (1 + jnp.sqrt(1 + 4 * t * t)) / 2
    beta = (t - 1) / t_next
    w = jax.tree.map(lambda a, b: a + beta * (a - b), x, xp)
    y = state.y + beta * (state.y - state.y_prev)  # Q Z(w), by linearity
    step = 1.0 / (3.0 * prob.q_norm)
    g_lam = cons.bound - cons.sign * _pair_sum(cons, y)
    new = DualPoint(
        jnp.clip(w.lam + step / cons.pair_size[:, None] * g_lam, 0.0, prob.mu),
        jnp.maximum(w.sig - step * y, 0.0),
        w.nu + step / c * (1.0 - y.sum(axis=1)),
    )
    # Adaptive restart (O'Donoghue & Candes): momentum that points against the gradient step
    # is dropped, in the metric M the steps are taken in.
    metric = DualPoint(cons.pair_size[:, None], jnp.ones((), y.dtype), jnp.asarray(c, y.dtype))
    inner = jnp.stack([jnp.sum(m * (a - b) * (b - d)) for m, a, b, d in zip(metric, w, new, x)])
    restart = jnp.sum(inner) > 0
    y_new, w_new = _qz(prob, _z(cons, new))
    return RelaxationState(new, x, jnp.where(restart, 1.0, t_next).astype(t.dtype),
                           state.n_iter + 1, state.restarts + restart.astype(jnp.int32),
                           y_new, state.y, w_new)


def simplex_threshold(y: Float[Array, "n c"]) -> Float[Array, "n 1"]:
    """theta of each row's Euclidean projection max(y - theta, 0) onto {y >= 0, sum y = 1}.

    Michelot's (1986) fixed point: from theta = (sum y - 1) / c, repeat theta <- (sum of the
    entries above theta - 1) / (their number). theta rises to the exact threshold and the set
    above it shrinks, so it stops, exactly, within c rounds (usually 2-4). No sort: XLA's CPU
    sort calls a comparator per comparison and cost more than the rest of a FISTA check. (An
    entry equal to theta changes neither the sum max(y - theta, 0) nor the average.)
    """
    c = y.shape[-1]

    def rule(theta):
        above = y > theta
        return ((jnp.sum(jnp.where(above, y, 0.0), axis=-1, keepdims=True) - 1.0)
                / jnp.sum(above, axis=-1, keepdims=True).astype(y.dtype))

    def cond(s):
        theta, prev, k = s
        return (k < c) & jnp.any(theta != prev)

    def body(s):
        theta, _, k = s
        return rule(theta), theta, k + 1

    start = (jnp.sum(y, axis=-1, keepdims=True) - 1.0) / c
    theta, _, _ = jax.lax.while_loop(cond, body, (rule(start), start, jnp.ones((), jnp.int32)))
    return theta


def project_rows_simplex(y: Float[Array, "n c"]) -> Float[Array, "n c"]:
    """Each row's Euclidean projection onto {y >= 0, sum y = 1}."""
    return jnp.maximum(y - simplex_threshold(y), 0.0)


def check(state: RelaxationState, prob: Problem, refine: int = 0
          ) -> tuple[Check, Float[Array, "n c"], Any, Float[Array, "n c"]]:
    """`check_point` at FISTA's iterate, from the products the state carries."""
    return _objectives(prob, state.x, state.y, state.w, refine)


def check_point(d: DualPoint, prob: Problem, refine: int = 0
                ) -> tuple[Check, Float[Array, "n c"], Any, Float[Array, "n c"]]:
    """Primal and dual objectives at the dual point `d`, and the feasible Y-hat behind the
    primal one. Returns (check, Y-hat, W, Z), W = X^T Z.

    The primal side: for any W, (||Y - X W||^2 + lam ||W||^2) / (2 lam) bounds
    1/2 tr(Y^T Q^-1 Y) from above (equality at the ridge W of Y), so the primal objective at a
    feasible Y is at most that plus mu times Y's slack. With `refine = 0`, Y-hat is each row of
    Q Z projected onto the simplex. With `refine > 0`, Y-hat instead (nearly) minimizes the
    bound over Y for W = X^T Z, which separates by pair: refine steps of projected gradient on
    the pairs' multipliers (`_best_labelling`). Far from convergence the projection of Q Z
    breaks many pair constraints, each costing mu, and that slack, not the dual, dominates the
    gap; the refined Y trades it against the squared loss.
    """
    y, w = _qz(prob, _z(prob.cons, d))
    return _objectives(prob, d, y, w, refine)


def _objectives(prob: Problem, d: DualPoint, y: Float[Array, "n c"], w: Any, refine: int
                ) -> tuple[Check, Float[Array, "n c"], Any, Float[Array, "n c"]]:
    """`check_point`'s work, given Y = Q Z and W = X^T Z at `d`."""
    cons = prob.cons
    z = _z(cons, d)
    dual = -0.5 * jnp.sum(z * y) + jnp.sum(d.lam * cons.bound) + jnp.sum(d.nu)
    xw = y - prob.lam * z
    y_hat = (_best_labelling(prob, xw, d.lam, refine) if refine
             else project_rows_simplex(y))
    primal = primal_bound(prob, y_hat, xw, w)
    gap = relative_gap(primal, dual)
    violation = jnp.maximum(jnp.max(jnp.maximum(-y, 0.0), initial=0.0),
                            jnp.max(jnp.abs(y.sum(axis=1) - 1.0), initial=0.0))
    return Check(primal, dual, gap, violation), y_hat, w, z


def primal_bound(prob: Problem, y_hat: Float[Array, "n c"], xw: Float[Array, "n c"],
                 w: Any) -> Float[Array, ""]:
    """The primal objective bound at the feasible labelling `y_hat` and weights W (`xw` =
    X W): (||Y - X W||^2 + lam ||W||^2) / (2 lam) + mu sum slack, exact at the ridge W of Y."""
    cons = prob.cons
    resid = y_hat - xw
    slack = jnp.maximum(cons.bound - cons.sign * _pair_sum(cons, y_hat), 0.0)
    return ((jnp.sum(resid * resid) + prob.lam * weights_sq_norm(w)) / (2 * prob.lam)
            + prob.mu * jnp.sum(slack))


def relative_gap(primal: Float[Array, ""], dual: Float[Array, ""]) -> Float[Array, ""]:
    """(primal - dual) / |primal| (a tiny floor keeps it finite at primal = 0)."""
    return (primal - dual) / jnp.maximum(jnp.abs(primal), jnp.finfo(primal.dtype).tiny)


def _best_labelling(prob: Problem, xw: Float[Array, "n c"], lam0: Float[Array, "p c"],
                    steps: int) -> Float[Array, "n c"]:
    """The labelling of `label_pairs` (its Y only)."""
    return label_pairs(prob, xw, lam0, steps)[0]


def label_pairs(prob: Problem, xw: Float[Array, "n c"], a0: Float[Array, "p c"], steps: int
                ) -> tuple[Float[Array, "n c"], Float[Array, "p c"], Float[Array, "n 1"]]:
    """Y (rows on the simplex) approximately minimizing ||Y - XW||^2 / (2 lam) + mu sum slack
    for the scores XW = `xw`; returns (Y, the pair multipliers a, each row's threshold).

    With a multiplier a_pk in [0, mu] per pair constraint, mu max(0, R - S s) = max_a a (R - S s),
    and for fixed a the best row is y_i = proj_simplex(x_i W + lam S_p o a_p). The multipliers
    ascend their concave dual by projected gradient (slope R - S o (E Y), step 1 / (lam n_p):
    the slope's Lipschitz constant), from `a0`. Any Y it returns is feasible, so a bound built
    on it stays valid however many steps run; and Y, a and the thresholds theta split
    (Y - XW) / lam exactly into a dual point: Lam = a, nu_i = -theta_i / lam, and Sig_i =
    max(theta_i - u_i, 0) / lam >= 0 for u_i = x_i W + lam S_p o a_p (`_hybrid`).
    """
    cons = prob.cons
    step = 1.0 / (prob.lam * cons.pair_size[:, None])

    def labelling(a):
        u = xw + prob.lam * (cons.sign * a)[cons.mention_pair]
        theta = simplex_threshold(u)
        return jnp.maximum(u - theta, 0.0), theta

    def body(_, a):
        slope = cons.bound - cons.sign * _pair_sum(cons, labelling(a)[0])
        return jnp.clip(a + step * slope, 0.0, prob.mu)

    a = jax.lax.fori_loop(0, steps, body, a0)
    y, theta = labelling(a)
    return y, a, theta


def spectral_norm_sq(x: Features, *, max_iter: int = 500, rtol: float = 1e-7,
                     dtype: Any = None) -> Float[Array, ""]:
    """sigma_max(X)^2 by power iteration on X^T X from a fixed start (no key: deterministic).

    The Rayleigh quotient approaches sigma_max^2 from below; the solver adds a 1% margin.
    """
    n = n_rows(x)
    dt = float_dtype(_features_dtype(x) if dtype is None else dtype)
    v = jnp.ones((n, 1), dt) + jnp.arange(n, dtype=dt)[:, None] % 7 / 7.0
    v = v / jnp.linalg.norm(v)

    def body(s):
        v, est, _, i = s
        u = matmul(x, rmatmul(x, v))  # X X^T v: the same top eigenvalue as X^T X
        new = jnp.sum(u * v)
        nrm = jnp.linalg.norm(u)
        return (u / jnp.where(nrm > 0, nrm, 1.0), new, est, i + 1)

    def cond(s):
        _, est, old, i = s
        return (i < max_iter) & ((i < 2) | (jnp.abs(est - old) > rtol * jnp.abs(est)))

    zero = jnp.zeros((), dt)
    _, est, _, _ = jax.lax.while_loop(cond, body, (v, zero, zero, jnp.zeros((), jnp.int32)))
    return est


def _features_dtype(x: Features) -> Any:
    if isinstance(x, tuple):
        return jnp.result_type(*[_features_dtype(b) for b in x])
    return x.dtype


def primal_objective(x: Features, y: Any, mention_pair: Any, relations: Any, *, lam: float,
                     mu: float, at_least: float = 1.0) -> float:
    """The relaxation's primal objective at a labelling Y, exactly (a dense linear solve:
    for checks on small problems). Y must be [N, C] with rows on the simplex."""
    xd = _dense(x)
    yv = np.asarray(y, np.float64)
    n = xd.shape[0]
    q = xd @ xd.T + lam * np.eye(n)
    quad = 0.5 * float(np.sum(yv * np.linalg.solve(q, yv)))
    cons = constraints(mention_pair, relations, at_least=at_least, dtype=None)
    pair_sum = np.zeros((cons.n_pairs, yv.shape[1]))
    np.add.at(pair_sum, np.asarray(cons.mention_pair), yv)
    slack = np.maximum(np.asarray(cons.bound) - np.asarray(cons.sign) * pair_sum, 0.0)
    return quad + mu * float(slack.sum())


def _dense(x: Features) -> np.ndarray:
    if isinstance(x, tuple):
        return np.concatenate([_dense(b) for b in x], axis=1)
    if isinstance(x, SparseRows):
        return np.asarray(x.todense(), np.float64)
    return np.asarray(x, np.float64)


__all__ = ["Constraints", "RelationModel", "RelaxationState", "Check", "Problem",
           "constraints", "init", "update", "check", "aggregate_pairs",
           "project_rows_simplex", "spectral_norm_sq", "primal_objective"]

