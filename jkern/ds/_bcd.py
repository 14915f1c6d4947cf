"""Grave (2014)'s relaxation solved by exact block coordinate ascent on its dual.

The dual (see `_relaxation`) is max D(Lam, Sig, nu) over Lam in [0, mu], Sig >= 0, nu free,
with Z = E^T (S o Lam) + Sig + nu 1^T and Y = Q Z, Q = X X^T + lam I. Its constraints separate
into blocks, and each block has a closed-form exact maximizer:

- mention i, (Sig_i, nu_i) (C + 1 variables): D depends on them through z_i only, and with
  everything else fixed, y_i = b + q_ii (Sig_i + nu_i 1) where q_ii = ||x_i||^2 + lam and b is
  y_i without them. The KKT conditions (y_i >= 0, Sig_i >= 0, Sig_i o y_i = 0, y_i 1 = 1) say
  exactly that the new y_i is the Euclidean projection of b onto the simplex,
  y_i = max(b - theta, 0): so nu_i = -theta / q_ii and Sig_i = max(theta - b, 0) / q_ii.
- pair p, Lam_p (C variables): Lam_pk moves z_ik by S_pk for every mention i of p; the classes
  do not interact, and D is a parabola in each Lam_pk with slope R_pk - S_pk sum_{i in p} y_ik
  and curvature h_p = 1^T Q_pp 1 = ||sum_{i in p} x_i||^2 + lam n_p: the exact step is that
  Newton step, clipped to [0, mu].

A sweep visits every pair: its mentions' blocks, then its Lam_p block. W = X^T Z is kept up to
date (a mention's change is a rank-one update of W on its nonzeros), so a block costs
O(nnz(x_i) C), whatever N: the step sizes are the blocks' own curvatures, not ||Q||, which is
what makes this fast where common features make sigma_max(X)^2 large and the projected-gradient
step 1 / (3 ||Q||) tiny. Exact block coordinate ascent on a concave quadratic over a product of
closed convex sets converges to the optimum (Luo & Tseng 1992); the relative duality gap of the
same primal-dual check as FISTA's stops it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._rows import SparseRowsAccess
from .._sparse import Features, SparseRows
from .._validate import is_traced
from ..errors import InputError
from ._relaxation import (
    Check,
    Constraints,
    DualPoint,
    Problem,
    check_point,
    simplex_threshold,
)


class Layout(eqx.Module):
    """What a sweep reads besides the state, built once per feature matrix on the host.

    The features are one padded row format over all blocks (a dense block's row is its d
    values at columns offset..offset + d), and the mentions are grouped by pair:
    `members[start[p]:start[p + 1]]` are pair p's mentions.
    """

    indices: Int[Array, "n k"]
    values: Float[Array, "n k"]
    n_features: int = eqx.field(static=True)
    sq_norms: Float[Array, " n"]  # ||x_i||^2
    members: Int[Array, " n"]
    start: Int[Array, " p1"]
    curvature_x: Float[Array, " p"]  # ||sum_{i in p} x_i||^2 (lam n_p is added per solve)


def layout(x: Features, cons: Constraints) -> Layout:
    """The `Layout` of features `x` (concrete) and constraints `cons`."""
    blocks = x if isinstance(x, tuple) else (x,)
    mp = np.asarray(cons.mention_pair).astype(np.int64)
    dt = cons.sign.dtype
    idx_parts, val_parts, offset = [], [], 0
    for b in blocks:
        if isinstance(b, SparseRows):
            idx_parts.append(np.asarray(b.indices, np.int64) + offset)
            val_parts.append(np.asarray(b.values))
            offset += b.n_features
        else:
            dense = np.asarray(b)
            idx_parts.append(np.broadcast_to(np.arange(dense.shape[1]) + offset, dense.shape))
            val_parts.append(dense)
            offset += dense.shape[1]
    idx = np.concatenate(idx_parts, axis=1)
    val = np.concatenate(val_parts, axis=1).astype(np.float64)
    # ||sum_{i in p} x_i||^2: sum equal (pair, column) entries, square, add up per pair
    key = (mp[:, None] * offset + idx).ravel()
    uniq, inv = np.unique(key, return_inverse=True)
    sums = np.bincount(inv, weights=val.ravel(), minlength=len(uniq))
    curvature = np.bincount(uniq // offset, weights=sums * sums, minlength=cons.n_pairs)
    rows = SparseRows(jnp.asarray(idx, jnp.int32), jnp.asarray(val, dt), offset)
    start = np.concatenate([[0], np.cumsum(np.bincount(mp, minlength=cons.n_pairs))])
    return Layout(rows.indices, rows.values, offset, SparseRowsAccess(rows).sq_norms(),
                  jnp.asarray(np.argsort(mp, kind="stable"), jnp.int32),
                  jnp.asarray(start, jnp.int32), jnp.asarray(curvature, dt))


class BCDState(NamedTuple):
    """The dual point and W in one `[D + N + P, C]` buffer (rows: W = X^T Z, then
    U = Sig + nu 1^T per mention, then Lam per pair) and the sweep count.

    One buffer, updated by one scatter-add per block, keeps XLA's loop updates in place (a
    second carried array written after a read of it is copied whole at every step). Sig and
    nu are kept as their sum U: Z needs only U, and the best split of U for the dual value
    is nu_i = min_k U_ik, Sig_i = U_i - nu_i (`dual_point`).
    """

    buf: Float[Array, "rows c"]
    n_iter: Int[Array, ""]


def init(lay: Layout, cons: Constraints) -> BCDState:
    """The state at the dual point 0 (Z = 0, W = 0)."""
    rows = lay.n_features + cons.mention_pair.shape[0] + cons.n_pairs
    return BCDState(jnp.zeros((rows, cons.n_classes), cons.sign.dtype),
                    jnp.zeros((), jnp.int32))


def dual_point(state: BCDState, lay: Layout, cons: Constraints) -> DualPoint:
    d, n = lay.n_features, cons.mention_pair.shape[0]
    u = state.buf[d:d + n]
    nu = jnp.min(u, axis=1)
    return DualPoint(state.buf[d + n:], u - nu[:, None], nu)


def sweep(state: BCDState, lay: Layout, cons: Constraints, lam: Any, mu: Any,
          order: Int[Array, " p"]) -> BCDState:
    """One pass over the pairs in `order`: each pair's mention blocks, then its Lam block."""
    d_feat, n = lay.n_features, cons.mention_pair.shape[0]
    u_row, lam_row = d_feat, d_feat + n

    def y_of(buf, i, p):
        z = cons.sign[p] * buf[lam_row + p] + buf[u_row + i]
        return lay.values[i] @ buf[lay.indices[i]] + lam * z, buf[u_row + i]

    def mention(t, carry):
        buf, p = carry
        i = lay.members[t]
        y, u = y_of(buf, i, p)
        q = lay.sq_norms[i] + lam
        base = y - q * u
        new = -jnp.minimum(base, simplex_threshold(base[None, :])[0, 0]) / q
        delta = new - u
        rows = jnp.concatenate([lay.indices[i], (u_row + i)[None]])
        upd = jnp.concatenate([lay.values[i][:, None] * delta[None, :], delta[None, :]])
        return buf.at[rows].add(upd), p

    def pair(k, buf):
        p = order[k]
        lo, hi = lay.start[p], lay.start[p + 1]
        buf, _ = jax.lax.fori_loop(lo, hi, mention, (buf, p))
        total = jax.lax.fori_loop(lo, hi, lambda t, acc: acc + y_of(buf, lay.members[t], p)[0],
                                  jnp.zeros((cons.n_classes,), buf.dtype))
        h = lay.curvature_x[p] + lam * (hi - lo).astype(buf.dtype)
        old = buf[lam_row + p]
        new = jnp.clip(old + (cons.bound[p] - cons.sign[p] * total) / h, 0.0, mu)
        step = cons.sign[p] * (new - old)

        def spread(t, buf):
            i = lay.members[t]
            first = (t == lo).astype(buf.dtype)  # Lam_p's own row moves once
            rows = jnp.concatenate([lay.indices[i], (lam_row + p)[None]])
            upd = jnp.concatenate([lay.values[i][:, None] * step[None, :],
                                   (first * (new - old))[None, :]])
            return buf.at[rows].add(upd)

        return jax.lax.fori_loop(lo, hi, spread, buf)

    buf = jax.lax.fori_loop(0, order.shape[0], pair, state.buf)
    return BCDState(buf, state.n_iter + 1)


def solve(prob: Problem, lay: Layout, tol: Any, key: Any, *, max_iter: int,
          check_every: int, refine: int) -> tuple[BCDState, Check, Float[Array, "n c"], Any,
                                     Float[Array, "n c"], Float[Array, "k 4"]]:
    """Sweeps until the relative duality gap is <= tol (checked every `check_every` sweeps) or
    `max_iter` sweeps. `key`: None (pairs in index order) or a PRNG key (a fresh random order
    each sweep); `refine`: CG steps of each check's primal bound (`check`). Returns (state,
    check, Y-hat, W, Z, history)."""
    cons = prob.cons
    n_checks = -(-max_iter // check_every)
    dt = cons.sign.dtype
    history = jnp.full((n_checks, 4), jnp.nan, dt)

    def order_of(k):
        if key is None:
            return jnp.arange(cons.n_pairs, dtype=jnp.int32)
        return jax.random.permutation(jax.random.fold_in(key, k), cons.n_pairs
                                      ).astype(jnp.int32)

    def checked(state):
        return check_point(dual_point(state, lay, cons), prob, refine)

    def cond(s):
        _, chk, _, k = s
        return (k < n_checks) & ~(chk.gap <= tol) & ~jnp.isnan(chk.gap)

    def body(s):
        state, _, history, k = s
        state = jax.lax.fori_loop(
            0, check_every,
            lambda j, st: sweep(st, lay, cons, prob.lam, prob.mu,
                                order_of(k * check_every + j)), state)
        chk, _, w, _ = checked(state)
        history = history.at[k].set(jnp.stack(list(chk)))
        # W afresh from the full product X^T Z: no drift from the rank-one updates
        w = jnp.concatenate(w, axis=0) if isinstance(w, tuple) else w
        state = BCDState(state.buf.at[:lay.n_features].set(w), state.n_iter)
        return state, chk, history, k + 1

    inf = jnp.asarray(jnp.inf, dt)
    state, _, history, _ = jax.lax.while_loop(
        cond, body, (init(lay, cons), Check(inf, -inf, inf, inf), history,
                     jnp.zeros((), jnp.int32)))
    chk, y_hat, w, z = checked(state)
    return state, chk, y_hat, w, z, history


def features_traced(x: Features) -> bool:
    """Whether any block of `x` is traced (under jit, grad or vmap over the features)."""
    blocks = x if isinstance(x, tuple) else (x,)
    return any(is_traced(b.values if isinstance(b, SparseRows) else b) for b in blocks)


def check_features(x: Features, method: str = "bcd") -> None:
    """Block coordinate ascent reads rows: the features must be known now (not traced)."""
    if features_traced(x):
        raise InputError(f"method={method!r} needs concrete features (its pair layout is "
                         "built on the host); under jit over x use method='fista'")
