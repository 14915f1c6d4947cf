"""Linear SVM by dual coordinate descent (Hsieh, Chang, Lin, Keerthi, Sundararajan, ICML 2008).

The solver is LIBLINEAR's `solve_l2r_l1l2_svc` (what scikit-learn's `LinearSVC(dual=True)` runs),
written as one jit-compiled program of arrays. For labels y_i in {-1, +1} and the augmented
instance x̄_i = [x_i, bias], it minimises the dual

    f(α) = ½ αᵀ Q̄ α − Σ α_i,   0 ≤ α_i ≤ U_i,   Q̄_ij = y_i y_j x̄_i·x̄_j + D_ii δ_ij,

with, for class-weighted costs C_i = C * weight(y_i):

* squared hinge (L2-loss): D_ii = 1 / (2 C_i), U_i = ∞;
* hinge (L1-loss):         D_ii = 0,           U_i = C_i.

The primal vector is w̄ = Σ α_i y_i x̄_i = [w, w_bias]; the bias feature is regularised exactly
like LIBLINEAR's `-B` / LinearSVC's `intercept_scaling`, and the intercept is b = bias * w_bias.

Each epoch visits the active coordinates in a fresh random order: a permutation π of all n
indices (from `fold_in(key, epoch)`) restricted, order-preserving, to the active set. Shrinking,
the stopping rule (max PG − min PG ≤ tol, re-checked over all variables after un-shrinking) and
the `|PG| > 1e-12` update guard follow LIBLINEAR line by line.

X is a dense `[n, d]` array or a `jkern.SparseRows`; the solver reads it only through the row
access of `jkern/_rows.py` (the dot products w·x_i and the update w += δ x_i: a row of the dense
matrix, or a gather-sum and a scatter-add over the k stored entries of a sparse row), so both
layouts run this one algorithm, with the same visit orders, and reach the same iterates up to
floating-point summation order. The bias feature is never materialised: its weight w_bias is a
separate scalar in both.

Many models (a grid of C values, the classes of a one-vs-rest problem) are trained by
`jax.vmap`, which this module intercepts with `jax.custom_batching.custom_vmap`: models that
share X and the key share the visit order π, so each step reads the row x_i once and updates
every model with it (a small matrix-vector product instead of one dot per model). Restricted to
one model's active set, the shared order is exactly the order that model sees when trained
alone, so a vmapped fit equals the loop of single fits (up to floating-point summation order).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap
from jaxtyping import Array, Float, Int

from .._cache import jit
from .._labels import labels_at, predict_labels, sign_labels, two_class_decision
from .._rows import AbstractRows, as_rows, scores
from .._solution import Solution, result_code
from .._sparse import FeatureIds, SparseRows
from .._validate import (
    class_weights,
    concrete,
    finite,
    finite_model,
    plus_minus_labels,
    positive,
    positive_int,
)
from ..errors import InputError
from ._ovr import one_vs_rest

Loss = Literal["squared_hinge", "hinge"]
_LOSSES = ("squared_hinge", "hinge")
_PG_EPS = 1e-12  # LIBLINEAR: a coordinate moves only when |PG| > 1e-12


class LinearSVM(eqx.Module):
    """A linear SVM trained by `dcd` (binary) or `dcd_ovr` (one-vs-rest).

    Binary: `w` is `[d]` and `b` a scalar. One-vs-rest: one row per class (`w` `[k, d]`,
    `b` `[k]`) and `classes` holds the sorted labels. A `jax.vmap`ped fit adds leading axes.

    Attributes:
        w: weights of the features.
        b: intercept, `bias * w_bias` (0 without a bias feature).
        classes: the sorted labels of a one-vs-rest model (a static tuple), the (negative,
            positive) labels of a binary model that names them, else None.
        ids: the feature id of each column when trained on a `SparseRows` whose `ids` name
            them (static; None: column j is id j): a `SparseRows` X is mapped onto the
            columns by id, features the model never saw ignored.
    """

    w: Float[Array, "*batch d"]
    b: Float[Array, "*batch"]
    classes: tuple | None = eqx.field(static=True, default=None)
    ids: FeatureIds | None = eqx.field(static=True, default=None)

    #: What `decision_function` takes: features (a `jkern.NystromModel` gives it the
    #: projector's embeddings).
    takes: ClassVar[str] = "features"

    @property
    def n_inputs(self) -> int:
        """The width of what `decision_function` takes: the features the model weighs."""
        return int(self.w.shape[-1])

    def decision_function(self, X: Float[Array, "m d"] | SparseRows
                          ) -> Float[Array, " m *classes"]:
        """`X @ w + b`: `[m]` for a binary model, `[m, k]` for one-vs-rest. X is `[m, d]` or a
        `jkern.SparseRows` of d features."""
        self = finite_model(self)
        if not isinstance(X, SparseRows):  # a SparseRows holds finite values
            finite("X", X)
        if isinstance(X, SparseRows) and (self.ids is not None or X.ids is not None):
            X, _ = X.aligned(self.ids, self.w.shape[-1])
        b = self.b if self.b.ndim == 0 else jnp.expand_dims(self.b, -2)
        return scores(X, self.w) + b

    def binary_decision(self, scores: Float[Array, "m 2"]) -> tuple[int, Any]:
        """`(positive class index, one decision value per input)` of two-class scores (a
        binary model's class scores (-f, f): f; two one-vs-rest models: half the difference
        of their mirror problems' values), float64 NumPy."""
        return two_class_decision(scores, self.classes, logits=False)

    def predict_index(self, X: Float[Array, "m d"] | SparseRows) -> Int[Array, " m"]:
        """One-vs-rest: index into `classes` of the highest score (ties: the lowest index)."""
        return jnp.argmax(self.decision_function(X), axis=-1)

    def predict(self, X: Float[Array, "m d"] | SparseRows) -> Any:
        """Binary: +1 where the score is >= 0, else -1 (`classes[1]` / `classes[0]` when it
        names them). One-vs-rest: the label of the highest score (ties: the lowest class), a
        jax array for numeric labels, a numpy array otherwise (then not usable under jit)."""
        if self.classes is None:
            return sign_labels(self.decision_function(X))
        if self.w.ndim == 1:  # binary, naming its (negative, positive) classes
            return predict_labels(self.decision_function(X), self.classes)
        return labels_at(self.classes, self.predict_index(X))


# ----------------------------------------------------------------------------------------------
# The solver: M models over one X, sharing the visit order.


def _mix32(x):
    """A 32-bit integer hash (xor-shift-multiply finaliser)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def _random_permutation(key, n: int, rounds: int = 6):
    """A fresh pseudo-random permutation of range(n) from `key`: a keyed `rounds`-round Feistel
    network on the smallest even-bit domain 2^(2h) >= n, restricted to [0, n) by cycle walking.

    It is a bijection for every key, and about 7x cheaper on CPU than `jax.random.permutation`
    (a sort of n random keys, ~10 ms for n = 20,000: a fifth of an epoch)."""
    bits = max(2, int(np.ceil(np.log2(max(n, 2)))))
    bits += bits % 2
    h = bits // 2
    mask = jnp.uint32((1 << h) - 1)
    ks = jax.random.bits(key, (rounds,), jnp.uint32)

    def encrypt(x):
        left, right = x >> h, x & mask
        for r in range(rounds):
            left, right = right, left ^ (_mix32(right ^ ks[r]) & mask)
        return (left << h) | right

    x = encrypt(jnp.arange(n, dtype=jnp.uint32))
    x = jax.lax.while_loop(
        lambda x: jnp.any(x >= n), lambda x: jnp.where(x >= n, encrypt(x), x), x
    )
    return x.astype(jnp.int32)


def _widths(M: int) -> list[int]:
    """Inner-loop widths: M, then the powers of two below it (8 -> 8, 4, 2, 1)."""
    out = [M]
    w = 1 << max(0, (M - 1).bit_length() - 1)
    while w >= 1:
        if w < out[-1]:
            out.append(w)
        w //= 2
    return out


def _sweep(rows: AbstractRows, idx, n_steps, W, wb, a_p, y_p, live_p, q_p, D_p, U_p, bias,
           pgmax_old, pgmin_old, *, l1: bool, shrinking: bool):
    """One epoch's coordinate steps for m models: visit idx[0:n_steps] in order.

    Per step: one row x_i, m dot products, m axpys (dense or sparse: `rows`). Returns W, wb
    and a `[n, 2m]` buffer holding, per visited position, the new α and PG (NaN where the
    variable was shrunk).
    """
    n = rows.shape[0]
    m = W.shape[0]

    def step(s, c):
        W, wb, out = c
        i = jax.lax.dynamic_index_in_dim(idx, s, keepdims=False)
        x = rows.row(i)
        a = jax.lax.dynamic_index_in_dim(a_p, s, keepdims=False)
        yv = jax.lax.dynamic_index_in_dim(y_p, s, keepdims=False)
        lv = jax.lax.dynamic_index_in_dim(live_p, s, keepdims=False)
        q = jax.lax.dynamic_index_in_dim(q_p, s, keepdims=False)
        Dm = jax.lax.dynamic_index_in_dim(D_p, s, keepdims=False)
        G = yv * (rows.dot(W, x) + bias * wb) - 1 + Dm * a
        at0 = a == 0
        if l1:
            Um = jax.lax.dynamic_index_in_dim(U_p, s, keepdims=False)
            atU = a == Um
            PG = jnp.where(at0, jnp.minimum(G, 0), jnp.where(atU, jnp.maximum(G, 0), G))
            s_cond = (at0 & (G > pgmax_old)) | (atU & (G < pgmin_old))
            an = jnp.clip(a - G / q, 0, Um)
        else:
            PG = jnp.where(at0, jnp.minimum(G, 0), G)
            s_cond = at0 & (G > pgmax_old)
            an = jnp.maximum(a - G / q, 0)
        shr = lv & s_cond if shrinking else jnp.zeros_like(lv)
        move = lv & ~shr & (jnp.abs(PG) > _PG_EPS)
        an = jnp.where(move, an, a)
        delta = (an - a) * yv
        W = rows.axpy(W, delta, x)
        wb = wb + delta * bias
        row = jnp.concatenate([an, jnp.where(shr, jnp.nan, PG)])
        out = jax.lax.dynamic_update_index_in_dim(out, row, s, 0)
        return W, wb, out

    out0 = jnp.zeros((n, 2 * m), W.dtype)
    return jax.lax.fori_loop(0, n_steps, step, (W, wb, out0))


def _solve(rows: AbstractRows, Y, Cp, Cn, bias, tol, key, *, loss: str, shrinking: bool,
           max_iter: int):
    """Train M models at once. `rows` an `[n, d]` matrix (dense or sparse), Y `[M, n]` (±1),
    Cp/Cn/bias/tol `[M]`.

    Returns (W `[M, d]`, w_bias `[M]`, alpha `[M, n]`, n_iter `[M]`, converged `[M]`,
    dual `[M]`).
    """
    n, d = rows.shape
    M = Y.shape[0]
    dt = rows.dtype
    inf = jnp.asarray(jnp.inf, dt)
    if loss == "squared_hinge":
        Dpos, Dneg = 0.5 / Cp, 0.5 / Cn
        Upos = Uneg = jnp.full((M,), jnp.inf, dt)
    else:
        Dpos = Dneg = jnp.zeros((M,), dt)
        Upos, Uneg = Cp, Cn
    l1 = loss == "hinge"
    Yt = Y.T  # [n, M]: one row per training point
    D = jnp.where(Yt > 0, Dpos[None, :], Dneg[None, :])  # D_ii per model
    U = jnp.where(Yt > 0, Upos[None, :], Uneg[None, :])  # upper bounds per model
    Q = rows.sq_norms()[:, None] + (bias * bias)[None, :] + D  # Q̄_ii, once
    widths = _widths(M)

    def epoch(state):
        e, alpha, active, W, wb, pgmax_old, pgmin_old, n_iter, done, conv = state
        perm = _random_permutation(jax.random.fold_in(key, e), n)
        live = active & ~done[None, :]
        # Order-preserving compaction of π to the points active in at least one model.
        u = jnp.any(live, axis=1)[perm]
        pos = jnp.cumsum(u.astype(jnp.int32)) - 1
        n_steps = jnp.sum(u.astype(jnp.int32))
        idx = jnp.zeros((n,), jnp.int32).at[jnp.where(u, pos, n)].set(perm, mode="drop")
        # Visit-order copies, read-only inside the loop. (Reading and writing one carried
        # alpha array makes XLA copy it every step; new values go to a write-only buffer.)
        a_p = alpha[idx]
        live_p = live[idx]
        per_pt = (Yt[idx], Q[idx], D[idx], U[idx])

        def run(width):
            # Models still running first; sweep only the first `width` of them (models that
            # are done cost nothing: converged members drop out of a vmapped grid).
            def branch(_):
                if width == M:
                    sel = jnp.arange(M)
                else:
                    sel = jnp.argsort(done, stable=True)[:width]
                W_s, wb_s, out = _sweep(
                    rows, idx, n_steps, W[sel], wb[sel], a_p[:, sel], per_pt[0][:, sel],
                    live_p[:, sel], per_pt[1][:, sel], per_pt[2][:, sel], per_pt[3][:, sel],
                    bias[sel], pgmax_old[sel], pgmin_old[sel], l1=l1, shrinking=shrinking,
                )
                if width == M:
                    return W_s, wb_s, out[:, :M], out[:, M:]
                a_new = a_p.at[:, sel].set(out[:, :width])
                pg = jnp.zeros((n, M), dt).at[:, sel].set(out[:, width:])
                return W.at[sel].set(W_s), wb.at[sel].set(wb_s), a_new, pg

            return branch

        if len(widths) == 1:
            W, wb, a_new, pg = run(M)(None)
        else:
            n_run = jnp.sum(~done)
            # the narrowest width that holds every running model
            b = jnp.sum(jnp.asarray(widths) >= n_run) - 1
            W, wb, a_new, pg = jax.lax.switch(b, [run(w) for w in widths], None)

        visited = (jnp.arange(n) < n_steps)[:, None] & live_p
        shr = visited & jnp.isnan(pg)
        counted = visited & ~shr
        pgmax = jnp.max(jnp.where(counted, pg, -inf), axis=0)
        pgmin = jnp.min(jnp.where(counted, pg, inf), axis=0)
        sidx = jnp.where(jnp.arange(n) < n_steps, idx, n)
        alpha = alpha.at[sidx].set(jnp.where(visited, a_new, a_p), mode="drop")
        active = active.at[sidx].set(active[idx] & ~shr, mode="drop")

        running = ~done
        n_iter = n_iter + running.astype(n_iter.dtype)
        small = running & (pgmax - pgmin <= tol)
        full = jnp.all(active, axis=0)
        stop = small & full
        unshrink = small & ~full
        active = active | unshrink[None, :]
        pgmax_old = jnp.where(unshrink, inf, jnp.where(pgmax <= 0, inf, pgmax))
        pgmin_old = jnp.where(unshrink, -inf, jnp.where(pgmin >= 0, -inf, pgmin))
        return (e + 1, alpha, active, W, wb, pgmax_old, pgmin_old, n_iter, done | stop,
                conv | stop)

    def cond(state):
        return (state[0] < max_iter) & ~jnp.all(state[8])

    state0 = (
        jnp.zeros((), jnp.int32),
        jnp.zeros((n, M), dt),
        jnp.ones((n, M), bool),
        jnp.zeros((M, d), dt),
        jnp.zeros((M,), dt),
        jnp.full((M,), inf),
        jnp.full((M,), -inf),
        jnp.zeros((M,), jnp.int32),
        jnp.zeros((M,), bool),
        jnp.zeros((M,), bool),
    )
    _, alpha, _, W, wb, _, _, n_iter, _, conv = jax.lax.while_loop(cond, epoch, state0)
    A = alpha.T
    dual = (
        jnp.sum(A, axis=1)
        - 0.5 * (jnp.sum(W * W, axis=1) + wb * wb)
        - 0.5 * jnp.sum(D.T * A * A, axis=1)
    )
    return W, wb, A, n_iter, conv, dual


@functools.cache
def _solver(loss: str, shrinking: bool, max_iter: int):
    """The solver for one static configuration, with its vmap rule."""

    @custom_vmap
    def solve(rows, Y, Cp, Cn, bias, tol, key):
        return _solve(rows, Y, Cp, Cn, bias, tol, key, loss=loss, shrinking=shrinking,
                      max_iter=max_iter)

    @solve.def_vmap
    def rule(axis_size, in_batched, rows, Y, Cp, Cn, bias, tol, key):
        args = (rows, Y, Cp, Cn, bias, tol, key)
        # `in_batched` mirrors the arguments: one flag per leaf (a sparse X has two).
        batched = [any(jax.tree.leaves(b)) for b in in_batched]
        if batched[0] or batched[6]:
            # Different data or different keys: no shared visit order. Train the members one
            # after the other inside the same program (leaves of a batched argument that are
            # shared, e.g. a sparse X's indices, are broadcast).
            def full_batch(a, flags):
                return jax.tree.map(
                    lambda leaf, b: leaf if b else jnp.broadcast_to(
                        leaf, (axis_size, *jnp.shape(leaf))), a, flags)

            mapped = [full_batch(a, f) for a, f, b in zip(args, in_batched, batched) if b]

            def one(members):
                it = iter(members)
                return solve(*[next(it) if b else a for a, b in zip(args, batched)])

            out = jax.lax.map(one, mapped)
            return out, (True,) * 6
        M = Y.shape[-2]

        def widen(a, b):  # [B, M, ...] (or unbatched [M, ...]) -> [B * M, ...]
            if not b:
                a = jnp.broadcast_to(a, (axis_size, *a.shape))
            return a.reshape((axis_size * M, *a.shape[2:]))

        Y2, Cp2, Cn2, bias2, tol2 = (widen(a, b) for a, b in zip(args[1:6], in_batched[1:6]))
        out = solve(rows, Y2, Cp2, Cn2, bias2, tol2, key)
        out = tuple(o.reshape((axis_size, M, *o.shape[1:])) for o in out)
        return out, (True,) * 6

    return solve


# ----------------------------------------------------------------------------------------------
# Public API


@functools.partial(jit, static_argnames=("loss", "shrinking", "max_iter"))
def _fit_binary(rows, y, C, w_pos, w_neg, bias, tol, key, *, loss, shrinking, max_iter):
    dt = rows.dtype
    cw = jnp.stack([jnp.asarray(w_pos, dt), jnp.asarray(w_neg, dt)])
    cw = eqx.error_if(cw, jnp.any(~(cw > 0)), "class weights must be > 0")
    out = _solver(loss, shrinking, max_iter)(
        rows,
        y.astype(dt)[None, :],
        (C * cw[0])[None],
        (C * cw[1])[None],
        jnp.asarray(bias, dt)[None],
        jnp.asarray(tol, dt)[None],
        key,
    )
    W, wb, A, n_iter, conv, dual = (o[0] for o in out)
    code = result_code(conv, jnp.isfinite(dual))
    return W, wb * jnp.asarray(bias, dt), A, n_iter, code, dual


def dcd(
    X: Float[Array, "n d"] | SparseRows,
    y: Float[Array, " n"],
    *,
    C: float | Array = 1.0,
    loss: Loss = "squared_hinge",
    bias: float | Array | None = 1.0,
    tol: float | Array = 1e-4,
    max_iter: int = 1000,
    class_weight: Mapping[Any, Any] | str | None = None,
    shrinking: bool = True,
    key: Array,
    dtype: Any = None,
    throw: bool = False,
) -> Solution[LinearSVM]:
    """Train a binary linear SVM by dual coordinate descent (LIBLINEAR's dual solver).

    Same problem and stopping rule as scikit-learn's `LinearSVC(dual=True, loss=loss, C=C,
    tol=tol, max_iter=max_iter, intercept_scaling=bias, class_weight=class_weight)`.

    Args:
        X: `[n, d]` features: a dense array, or a `jkern.SparseRows` (each step then costs
            O(nonzeros of the row), not O(d)).
        y: `[n]` labels in {-1, +1}.
        C: cost (> 0); may be a traced scalar, e.g. under `jax.vmap` over a grid.
        loss: `"squared_hinge"` (L2-loss: D_ii = 1/(2 C_i), no upper bound) or `"hinge"`
            (L1-loss: D_ii = 0, 0 <= α_i <= C_i).
        bias: value of the constant feature appended to every x (its weight is regularised
            like the others; `b = bias * w_bias`). 0 or None: no bias term.
        tol: stop when max PG − min PG <= tol over all variables.
        max_iter: at most this many epochs (static).
        class_weight: `{1: w_pos, -1: w_neg}` or "balanced": C_i = C * weight(y_i).
        shrinking: LIBLINEAR's shrinking (static); the solution is the same either way.
        key: PRNG key for the per-epoch visit orders.
        dtype: computation dtype (default: X's floating dtype (a SparseRows' values),
            else JAX's default float).
        throw: raise `ConvergenceError` unless the stopping rule was met.

    Returns:
        A `Solution` with a `LinearSVM` (`w` `[d]`, scalar `b`) and stats `alpha` `[n]` (the
        dual variables, in the order of the rows), `n_iter` (epochs: LIBLINEAR's `iter`)
        and `dual_objective` (Σα − ½‖w̄‖² − ½ Σ D_ii α_i², to be maximised: the primal
        optimum at convergence, a lower bound on it for any feasible α).

    A grid of C values is one compiled program under `jax.vmap` (see also `dcd_grid`):

    >>> import jax, jax.numpy as jnp
    >>> from jkern.svm import dcd
    >>> X = jax.random.normal(jax.random.key(0), (40, 3))
    >>> y = jnp.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    >>> key = jax.random.key(1)
    >>> Cs = jnp.array([0.01, 0.1, 1.0, 10.0])
    >>> ws = jax.vmap(lambda c: dcd(X, y, C=c, key=key).model.w)(Cs)
    >>> ws.shape
    (4, 3)
    >>> bool(jnp.allclose(ws[2], dcd(X, y, C=1.0, key=key).model.w, atol=1e-5))
    True
    """
    if loss not in _LOSSES:
        raise InputError(f"loss must be one of {_LOSSES}, got {loss!r}")
    max_iter = positive_int("max_iter", max_iter)
    rows, dt = as_rows(X, dtype)
    y = plus_minus_labels("y", y, rows.shape[0], dt)
    C = positive("C", C, dt)
    tol = positive("tol", tol, dt)
    bias = _check_bias(bias, dt)
    w_pos, w_neg = class_weights(class_weight, (1, -1), y)
    W, b, A, n_iter, code, dual = _fit_binary(
        rows, y, C, w_pos, w_neg, bias, tol, key,
        loss=loss, shrinking=bool(shrinking), max_iter=max_iter,
    )
    stats = {"alpha": A, "n_iter": n_iter, "dual_objective": dual}
    ids = rows.X.ids if isinstance(rows.X, SparseRows) else None
    return Solution(LinearSVM(w=W, b=b, ids=ids), code, stats).check(throw)


def _check_bias(bias, dt):
    if bias is None:
        return jnp.asarray(0.0, dt)
    v = concrete(bias)
    if v is not None and (v.ndim != 0 or not (np.isfinite(v) and v >= 0)):
        raise InputError(f"bias must be a finite scalar >= 0 (or None), got {bias!r}")
    return jnp.asarray(bias, dt)


def dcd_grid(
    X: Float[Array, "n d"] | SparseRows, y: Float[Array, " n"], Cs: Float[Array, " g"], **kwargs
) -> Solution[LinearSVM]:
    """`dcd` for every C in `Cs`, vmapped: one compiled program, one pass over the rows per
    step for all models. Returns a `Solution` whose arrays have a leading `[g]` axis."""
    Cs = jnp.asarray(Cs)
    if Cs.ndim != 1:
        raise InputError(f"Cs must be 1-D, got shape {Cs.shape}")
    cv = concrete(Cs)
    if cv is not None and not np.all(np.isfinite(cv) & (cv > 0)):
        raise InputError(f"every C must be a finite number > 0, got {cv}")
    return jax.vmap(lambda c: dcd(X, y, C=c, **kwargs))(Cs)


def dcd_ovr(
    X: Float[Array, "n d"] | SparseRows,
    labels: Any,
    *,
    classes: Sequence[Any] | None = None,
    class_weight: Mapping[Any, Any] | str | None = None,
    dtype: Any = None,
    **options: Any,
) -> Solution[LinearSVM]:
    """One-vs-rest multiclass linear SVM (LinearSVC's `multi_class="ovr"`):
    `one_vs_rest(dcd, ...)`, all classes vmapped into one program that reads each row once
    per step for every class.

    Class k's model separates `labels == classes[k]` (+1) from the rest (-1); class k's
    weight scales the cost of its positive side only, C+ = C * weight_k, C- = C, as
    LIBLINEAR and LinearSVC do. Options as in `dcd`. `predict` gives labels (argmax of the
    scores, ties to the lowest class); the stats are per class. X may be a `jkern.SparseRows`.
    """
    rows, _ = as_rows(X, dtype)
    return one_vs_rest(dcd, rows.X, labels, classes=classes, class_weight=class_weight,
                       n=rows.shape[0], **options)


def primal_objective(
    model: LinearSVM,
    X: Float[Array, "n d"] | SparseRows,
    y: Any,
    *,
    C: float | Array = 1.0,
    loss: Loss = "squared_hinge",
    bias: float | Array | None = 1.0,
    class_weight: Mapping[Any, Any] | str | None = None,
) -> Float[Array, "*classes"]:
    """LIBLINEAR's primal ½‖[w, w_bias]‖² + Σ C_i ξ_i with w_bias = b / bias and
    ξ_i = max(0, 1 − y_i f(x_i)) (hinge) or its square (squared hinge).

    Binary model: `y` in {-1, +1}, `class_weight` `{1: w_pos, -1: w_neg}`, a scalar result.
    One-vs-rest model (`classes` set): `y` are labels, `class_weight` `label -> weight` for
    the positive side of each class problem, and the result is `[k]`, one objective per class
    problem (the same mappings the learners take). A
    LinearSVC fit can be scored the same way: `LinearSVM(w=coef_[0], b=intercept_[0], ...)`
    with `bias=intercept_scaling`. X is `[n, d]` or a `jkern.SparseRows`.
    """
    if loss not in _LOSSES:
        raise InputError(f"loss must be one of {_LOSSES}, got {loss!r}")
    w = jnp.asarray(model.w)
    dt = w.dtype
    b = jnp.asarray(model.b, dt)
    bias_v = jnp.asarray(0.0 if bias is None else bias, dt)
    wbias = jnp.where(bias_v > 0, b / jnp.where(bias_v > 0, bias_v, 1), 0)
    if w.ndim > 2:
        raise InputError(f"primal_objective takes a binary or one-vs-rest model, got weights "
                         f"of shape {w.shape} (index a vmapped grid first)")
    f = scores(X, w) + (b if b.ndim == 0 else b[None, :])
    if model.classes is None:
        Y = jnp.asarray(y, dt)
        cw = jnp.asarray(class_weights(class_weight, (1, -1), y), dt)
        Ci = C * jnp.where(Y > 0, cw[0], cw[1])
    else:
        lab = np.asarray(y)
        Y = jnp.asarray(
            np.where(lab[:, None] == np.asarray(model.classes, dtype=lab.dtype)[None, :], 1, -1),
            dt,
        )
        cw = jnp.asarray(class_weights(class_weight, model.classes, lab), dt)
        Ci = C * jnp.where(Y > 0, cw[None, :], 1)
    xi = jnp.maximum(0, 1 - Y * f)
    if loss == "squared_hinge":
        xi = xi * xi
    return 0.5 * (jnp.sum(w * w, axis=-1) + wbias * wbias) + jnp.sum(Ci * xi, axis=0)
