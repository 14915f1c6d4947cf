"""`jkern.ds.fit`: the driver that solves Grave (2014)'s relaxation with either dual method.

The relaxation, its dual point, check and FISTA step live in `_relaxation`; block coordinate
ascent in `_bcd`; this module checks the user's input once and runs one of them, jitted, to
the contract's `Solution`.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._cache import jit
from .._solution import Solution, result_code
from .._sparse import Features, SparseRows, n_rows
from .._validate import float_dtype, is_traced, kernel_fits, positive, positive_int
from ..errors import InputError
from . import _bcd, _hybrid
from ._relaxation import (
    Check,
    Problem,
    RelationModel,
    _features_dtype,
    check,
    constraints,
    init,
    spectral_norm_sq,
    update,
)


@functools.partial(jit, static_argnames=("max_iter", "check_every", "refine"))
def _solve(x, cons, lam, mu, sigma_sq, tol, *, max_iter: int, check_every: int, refine: int):
    prob = Problem(x, cons, lam, mu, sigma_sq * 1.01 + lam)
    n_checks = -(-max_iter // check_every)
    dt = cons.sign.dtype
    history = jnp.full((n_checks, 4), jnp.nan, dt)

    def cond(s):
        state, chk, _, k = s
        return (k < n_checks) & ~(chk.gap <= tol) & ~jnp.isnan(chk.gap)

    def body(s):
        state, _, history, k = s
        state = jax.lax.fori_loop(0, check_every, lambda _, st: update(st, prob), state)
        chk, *_ = check(state, prob, refine)
        history = history.at[k].set(jnp.stack(list(chk)))
        return state, chk, history, k + 1

    state = init(prob)
    inf = jnp.asarray(jnp.inf, dt)
    state, chk, history, k = jax.lax.while_loop(
        cond, body, (state, Check(inf, -inf, inf, inf), history, jnp.zeros((), jnp.int32)))
    chk, y_hat, w, z = check(state, prob, refine)
    finite = jnp.isfinite(chk.gap) & jnp.isfinite(chk.primal)
    return state, chk, y_hat, w, z, history, result_code(chk.gap <= tol, finite)


@functools.partial(jit, static_argnames=("max_iter", "check_every", "refine"))
def _solve_bcd(x, cons, lay, lam, mu, tol, key, *, max_iter: int, check_every: int,
               refine: int):
    prob = Problem(x, cons, lam, mu, jnp.zeros((), lam.dtype))  # no global step: no ||Q||
    state, chk, y_hat, w, z, history = _bcd.solve(prob, lay, tol, key, max_iter=max_iter,
                                                  check_every=check_every, refine=refine)
    finite = jnp.isfinite(chk.gap) & jnp.isfinite(chk.primal)
    return state, chk, y_hat, w, z, history, result_code(chk.gap <= tol, finite)


@functools.partial(jit, static_argnames=("max_iter", "primal_steps", "sweeps", "refine"))
def _solve_hybrid(x, cons, lay, lam, mu, tol, *, max_iter: int, primal_steps: int,
                  sweeps: int, refine: int):
    prob = Problem(x, cons, lam, mu, jnp.zeros((), lam.dtype))
    k, chk, y_hat, w, z, history, n_sweeps = _hybrid.solve(
        prob, lay, tol, max_iter=max_iter, primal_steps=primal_steps, sweeps=sweeps,
        refine=refine)
    finite = jnp.isfinite(chk.gap) & jnp.isfinite(chk.primal)
    return k, chk, y_hat, w, z, history, n_sweeps, result_code(chk.gap <= tol, finite)


def _check_features(x: Any) -> Features:
    if isinstance(x, SparseRows):
        return x
    if isinstance(x, (tuple, list)):
        if not x:
            raise InputError("a tuple of feature blocks needs at least one block")
        return tuple(_check_features(b) for b in x)
    if not hasattr(x, "shape"):
        x = np.asarray(x)
    if len(x.shape) != 2:
        raise InputError(f"features must be a 2-D [mentions, features] array, a SparseRows "
                         f"or a tuple of them, got shape {tuple(x.shape)}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = jnp.asarray(x, float_dtype(None))
    return x


def _cast(x: Features, dt: Any) -> Features:
    if isinstance(x, tuple):
        return tuple(_cast(b, dt) for b in x)
    if isinstance(x, SparseRows):
        return x.astype(dt)
    return jnp.asarray(x, dt)


def fit(
    x: Features,
    mention_pair: Any,
    relations: Any,
    *,
    lam: Any = 1.0,
    mu: Any = 1.0,
    at_least: float = 1.0,
    classes: tuple | None = None,
    tol: float = 1e-4,
    method: str | None = None,
    max_iter: int | None = None,
    check_every: int | None = None,
    refine: int | None = None,
    primal_steps: int = 150,
    key: Any,
    dtype: Any = None,
    throw: bool = False,
) -> Solution[RelationModel]:
    """Solves the relaxation for features `x` (mentions x features), their pairs and the KB.

    Args:
        x: `[N, D]` dense features, a `jkern.SparseRows`, or a tuple of such blocks (their
            column concatenation, e.g. sparse features beside a Nystrom embedding).
        mention_pair: `[N]` the entity pair of each mention, ints in [0, P).
        relations: `[P, K]` bools, the KB relations held by each pair (see `constraints`).
        lam: ridge regularization lambda > 0 (vmappable).
        mu: slack cost mu > 0 (vmappable).
        at_least: R of a held relation (`constraints`).
        classes: names of the C = K + 1 classes, NA first (default 0..K).
        tol: stop when the relative duality gap (primal - dual) / primal <= tol.
        method: `"hybrid"` (the default for concrete features), cycles of a preconditioned
            primal phase in W and a few bcd sweeps (`_hybrid`: it reaches small gaps on
            large, ill-conditioned data such as ds-wordnet, where both dual methods alone
            stall); `"fista"` (the default when the features are traced, e.g. under jit over
            x), accelerated projected gradient with step 1 / (3 ||Q||); or `"bcd"`, exact
            block coordinate ascent on the
            dual (`_bcd`: each block's own curvature sets its step, so it is not slowed down
            by a large ||Q|| as FISTA is; slower than FISTA where ||Q|| / lam is small).
        max_iter: at most this many sweeps over the pairs (bcd, default 2,000), FISTA steps
            (default 20,000) or cycles (hybrid, default 100). `check_every`: sweeps (bcd,
            default 1) or steps (FISTA, default 10) between checks; for hybrid, the bcd
            sweeps of a cycle (default 15; every cycle ends with a check).
        refine: steps that tighten each check's primal bound by choosing the labelling
            (`check`; default 30 for bcd and hybrid, 0 for fista): the gap is certified
            either way. Hybrid's primal phase labels with as many steps.
        primal_steps: hybrid only: the primal phase's steps per cycle.
        key: keyword-only, no default (the learner can draw: docs/learners.md). bcd visits
            the pairs in a fresh random order each sweep drawn from it, or in index order
            with `key=None`; fista and hybrid draw nothing: pass `key=None`.
        dtype: the computation's float dtype (default the features').
        throw: raise `ConvergenceError` unless the gap reached `tol`.

    Returns:
        `Solution` with `model` a `RelationModel` (W = X^T Z) and `stats`: `Y` (the feasible
        labelling, rows on the simplex), `Z` (dual coefficients: scores of a new mention are
        sum_i k(x, x_i) Z_i), `primal`, `dual`, `gap`, `violation`, `n_iter` (sweeps or
        steps), `restarts` (FISTA),
        `history` (`[checks, 4]`: primal, dual, gap, violation per check, NaN past the end;
        hybrid: the best bound and dual value so far), `sigma_max_sq` (FISTA), `sweeps`
        (hybrid: bcd sweeps in all).
    """
    if method is None:  # hybrid reads the features' rows on the host: FISTA under tracing
        method = "fista" if _bcd.features_traced(x) else "hybrid"
    if method not in ("bcd", "fista", "hybrid"):
        raise InputError(f"method must be 'fista', 'bcd' or 'hybrid', got {method!r}")
    x = _check_features(x)
    dt = float_dtype(_features_dtype(x) if dtype is None else dtype)
    x = _cast(x, dt)
    bcd = method == "bcd"
    hybrid = method == "hybrid"
    defaults = {"fista": (20_000, 10, 0), "bcd": (2_000, 1, 30), "hybrid": (100, 15, 30)}
    default_iter, default_every, default_refine = defaults[method]
    max_iter = positive_int("max_iter", default_iter if max_iter is None else max_iter)
    check_every = positive_int("check_every", default_every if check_every is None
                               else check_every)
    primal_steps = positive_int("primal_steps", primal_steps)
    refine = default_refine if refine is None else refine
    if isinstance(refine, bool) or not isinstance(refine, int) or refine < 0:
        raise InputError(f"refine must be an int >= 0, got {refine!r}")
    if key is not None and not bcd:
        raise InputError(f"key orders the pairs of method='bcd'; {method} draws nothing: "
                         "pass key=None")
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol > 0):
        raise InputError(f"tol must be a finite number > 0, got {tol!r}")
    cons = constraints(mention_pair, relations, at_least=at_least, dtype=dt)
    n = n_rows(x)
    if cons.mention_pair.shape[0] != n:
        raise InputError(f"mention_pair has {cons.mention_pair.shape[0]} entries for {n} "
                         "mentions (rows of x)")
    _finite_features(x)
    if classes is None:
        classes = tuple(range(cons.n_classes))
    classes = tuple(classes)
    if len(classes) != cons.n_classes:
        raise InputError(f"classes names {len(classes)} classes; relations has "
                         f"{cons.n_classes - 1} relations + NA = {cons.n_classes}")
    lam = positive("lam", lam, dt)
    mu = positive("mu", mu, dt)
    if hybrid:
        _bcd.check_features(x, method)
        lay = _bcd.layout(x, cons)
        n_iter, chk, y_hat, w, z, history, sweeps, result = _solve_hybrid(
            x, cons, lay, lam, mu, jnp.asarray(tol, dt), max_iter=max_iter,
            primal_steps=primal_steps, sweeps=check_every, refine=refine)
        extra = {"sweeps": sweeps}
    elif bcd:
        _bcd.check_features(x)
        lay = _bcd.layout(x, cons)
        state, chk, y_hat, w, z, history, result = _solve_bcd(
            x, cons, lay, lam, mu, jnp.asarray(tol, dt), key, max_iter=max_iter,
            check_every=check_every, refine=refine)
        n_iter = state.n_iter
        extra = {}
    else:
        sigma_sq = spectral_norm_sq(x, dtype=dt)
        state, chk, y_hat, w, z, history, result = _solve(
            x, cons, lam, mu, sigma_sq, jnp.asarray(tol, dt), max_iter=max_iter,
            check_every=check_every, refine=refine)
        n_iter = state.n_iter
        extra = {"restarts": state.restarts, "sigma_max_sq": sigma_sq}
    stats = {"Y": y_hat, "Z": z, "primal": chk.primal, "dual": chk.dual, "gap": chk.gap,
             "violation": chk.violation, "n_iter": n_iter, "history": history,
             **extra}
    sol = Solution(RelationModel(w, classes), result, stats)
    return sol.check(throw)


def _finite_features(x: Features) -> None:
    if isinstance(x, tuple):
        for b in x:
            _finite_features(b)
        return
    v = x.values if isinstance(x, SparseRows) else x
    if not is_traced(v) and not bool(jnp.all(jnp.isfinite(v))):
        raise InputError("the features hold NaN or inf values")
    # finite values whose squares overflow: X·W and the norms of the relaxation are inf
    kernel_fits("the features", v, lambda sq: sq, "the linear kernel x·y")
