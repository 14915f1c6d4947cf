"""Exact SVMs for tree kernels by the 1-slack cutting-plane algorithm with sampled cuts.

Severyn & Moschitti, "Fast learning of SVMs with tree kernels" (MLJ 2012), Algorithms 2-9,
after Yu & Joachims (2008). Every iteration re-solves the 1-slack dual over the cutting
planes so far (`_qp.solve_one_slack_dual`), draws r examples, computes their margins
w . phi(x_i) by kernel expansion, and adds the most violated cutting plane of the sample:

    c_i = [y_i w . phi(x_i) < 1],  d_t = 1/r sum_i c_i,  g_t = 1/r sum_i c_i y_i phi(x_i),

stopping when d_t - w . g_t <= xi + epsilon (xi: the slack of the current planes).

With sampled planes that test is noisy and biased towards stopping early: xi is a maximum over
planes that are each a sample mean, so it overestimates the loss of w, while the new sample's
violation is an unbiased estimate of it. `confirm=k` stops only when the test passes on k
consecutive samples (the planes of the passing samples are kept); k = 1 is the paper's rule.

How the margins are computed is the `mode`; all modes compute the same numbers:
- "usvm": kernel expansion, every cutting plane's trees against every sample tree, tree by
  tree (no node shared between trees): the Delta work of plain uSVM.
- "sdag": each cutting plane compacted into a DAG of its unique subtrees (SDAG).
- "sdag+": all cutting planes compacted into one DAG (SDAG+).
- "forest" (default): SDAG+ with the sample's trees compacted too, so each distinct pair of
  subtrees gets one Delta; the Delta rows run as jkern's batched, jitted recurrences.
In the first three modes the sample side is expanded as in the paper (Algorithm 8 loops over
the nodes of each sample tree). The Delta evaluations of every mode are counted.

Cost-proportionate rejection sampling (Algorithm 9, "uSVM+j") draws the sample with
importance weights: example i is kept with probability z_i / max z. With `j`, positives get
z = j and negatives 1.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..kernels._base import AbstractKernel, Normalized, resolve_dtype
from ..kernels._engine import GramEngine, compute_gram
from ..kernels._tree_kernels import AbstractTreeKernel, as_trees
from ..trees._forest import Forest
from ._qp import solve_one_slack_dual

MODES = ("usvm", "sdag", "sdag+", "forest")


def _split_kernel(kernel: AbstractKernel) -> tuple[AbstractTreeKernel, bool]:
    if isinstance(kernel, Normalized) and isinstance(kernel.kernel, AbstractTreeKernel):
        return kernel.kernel, True
    if isinstance(kernel, AbstractTreeKernel):
        return kernel, False
    raise TypeError("the cutting-plane SVM needs a tree kernel (ST, SST, SSTBow, PTK, SPTK) or "
                    f"Normalized(tree kernel), got {type(kernel).__name__}")


class _Work:
    """Delta evaluations (distinct node pairs whose Delta is computed) of one engine."""

    def __init__(self, engine: GramEngine):
        self.engine = engine
        self.mark = 0

    def total(self) -> int:
        c = self.engine.counts
        return int(c.delta_entries + c.constant_entries)

    def take(self) -> int:
        now = self.total()
        added, self.mark = now - self.mark, now
        return added


class _KernelBlocks:
    """Normalized (or raw) kernel blocks of the training trees in one mode's representation.

    Training tree k is forest tree k (compacted); in the paper's modes it is also forest tree
    n + k, expanded (its nodes shared with nothing).
    """

    def __init__(self, base: AbstractTreeKernel, normalize: bool, trees: list, mode: str,
                 dtype: Any, block_size: int, threads: int, devices: Sequence[Any] | None):
        n = len(trees)
        self.n, self.mode = n, mode
        expanded = mode != "forest"
        forest = Forest.build(trees + trees if expanded else trees,
                              [False] * n + [True] * n if expanded else None)
        self.engine = GramEngine(forest, base.match_plan(forest), dtype)
        self.params = base.params()
        self.work = _Work(self.engine)
        self.block_size, self.threads, self.devices = block_size, threads, devices
        self.dtype = dtype
        # Self-kernels on the compacted trees (the paper's preprocessing).
        if normalize:
            self.scale = _inv_sqrt(_self_kernels(self.engine, self.params, np.arange(n)))
        else:
            self.scale = np.ones(n)
        self.preprocessing_deltas = self.work.take()

    def sample_side(self, idx: np.ndarray) -> np.ndarray:
        return idx if self.mode == "forest" else idx + self.n

    def model_side(self, idx: np.ndarray) -> np.ndarray:
        return idx + self.n if self.mode == "usvm" else idx

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """K^(rows, cols) (normalized if asked) with rows as sample trees, cols as model trees."""
        if len(rows) == 0 or len(cols) == 0:
            return np.zeros((len(rows), len(cols)))
        g = compute_gram(self.engine, self.params, self.sample_side(rows),
                         self.model_side(cols), block_size=self.block_size,
                         threads=self.threads, devices=self.devices)
        g = np.asarray(g, dtype=np.float64 if self.dtype == jnp.float64 else np.float32)
        return g * self.scale[rows][:, None] * self.scale[cols][None, :]


class _GramBlocks:
    """Kernel blocks read off a precomputed training Gram matrix (no Delta evaluations)."""

    class _NoWork:
        @staticmethod
        def take() -> int:
            return 0

    def __init__(self, gram: Any, n: int):
        gram = np.asarray(gram, np.float64)
        if gram.shape != (n, n):
            raise ValueError(f"gram must be [n, n] = [{n}, {n}], got {gram.shape}")
        self.gram = gram
        self.work = self._NoWork()
        self.preprocessing_deltas = 0
        self.mode = "gram"

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return self.gram[np.ix_(rows, cols)]


class _GramPlanes:
    """The planes as dense per-example weights `[n, planes]` over a precomputed Gram matrix.

    With every kernel value at hand, a sample's margins are K[rows] @ (W alpha) and the new
    plane's Gram column is (w_t K[members]) @ W: O(r n + n t) per iteration, where the per-plane
    products of the kernel modes cost O(r n t). Same values up to rounding.
    """

    def __init__(self, blocks: _GramBlocks):
        self.gram = blocks.gram
        self.weights = np.zeros((blocks.gram.shape[0], 16))
        self.count = 0

    def margins(self, rows: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """`[len(rows)]` w . phi(x_i), w = sum_j alpha_j g_j."""
        return self.gram[rows] @ (self.weights[:, : self.count] @ alpha)

    def column(self, members: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """`[planes]` g_j . g, g = sum_k weights_k phi(x_members_k)."""
        return (weights @ self.gram[members]) @ self.weights[:, : self.count]

    def add(self, plane: _Plane) -> None:
        if self.count == self.weights.shape[1]:
            self.weights = np.pad(self.weights, ((0, 0), (0, self.count)))
        self.weights[plane.examples, self.count] = plane.weights
        self.count += 1


@dataclasses.dataclass
class _Plane:
    """A cutting plane's gradient: g = sum_k weight_k phi(x_k) (its offset is in `offsets`)."""

    examples: np.ndarray  # distinct training indices
    weights: np.ndarray  # share_k * y_k (share: multiplicity / r, or z_k / sum z)


class CPAIteration(NamedTuple):
    """One cutting-plane iteration: what it found and what it cost."""

    planes: int  # cutting planes in the QP after this iteration
    violation: float  # d_t - w . g_t of the sample's plane
    slack: float  # xi of the planes before it
    dual: float  # the QP's dual objective after re-solving
    delta_evals: int  # Delta evaluations this iteration (margins + Gram column)
    seconds: float


class CutPlaneSVM(eqx.Module):
    """A kernel SVM trained by the cutting-plane algorithm: f(x) = sum_k coef_k K(x_k, x).

    The support trees are kept, so the model classifies new trees itself, through one
    weighted forest of all support vectors (`decision_function`). No bias (as the paper).

    Attributes:
        kernel: the kernel trained with (a tree kernel, possibly `Normalized`).
        support_trees: the support vectors' trees.
        support: their indices in the training set.
        coef: `[n_sv]` coefficients (sum over the planes holding the tree of alpha_j y_k / r).
        alpha: `[planes]` the QP's dual variables.
        offsets: `[planes]` the planes' offsets d_j.
        converged: whether the stopping rule was met within `max_iter`.
    """

    kernel: AbstractKernel
    coef: Float[Array, " n_sv"]
    alpha: Float[Array, " planes"]
    offsets: Float[Array, " planes"]
    support: tuple[int, ...] = eqx.field(static=True)
    support_trees: tuple = eqx.field(static=True)
    converged: bool = eqx.field(static=True)

    @property
    def n_support(self) -> int:
        return len(self.support_trees)

    def decision_function(self, x: Sequence[Any], *, mode: str = "forest", dtype: Any = None,
                          block_size: int = 256, threads: int = 2,
                          devices: Sequence[Any] | None = None,
                          stats: dict | None = None) -> Float[Array, " m"]:
        """f(x) for trees (or examples) `x`.

        Args:
            mode: "forest" (support vectors and inputs compacted together, the default),
                "sdag+" (support vectors as one weighted DAG against each input's nodes,
                Table 3 of the paper) or "usvm" (tree by tree, the Delta work of plain
                kernel expansion). Same values, different work.
            devices: JAX devices to shard the inputs' row blocks over (`compute_gram`).
            stats: a dict that receives `delta_evals`.
        """
        if mode not in ("forest", "sdag+", "usvm"):
            raise ValueError(f"mode must be 'forest', 'sdag+' or 'usvm', got {mode!r}")
        base, normalize = _split_kernel(self.kernel)
        trees = as_trees(x, base.tree_index)
        dt = resolve_dtype(dtype if dtype is not None else self.coef.dtype)
        sv = list(self.support_trees)
        n_sv, m = len(sv), len(trees)
        # Inputs expanded (tree by tree) except in forest mode; support vectors only in usvm.
        forest = Forest.build(sv + trees, None if mode == "forest"
                              else [mode == "usvm"] * n_sv + [True] * m)
        rows, cols = np.arange(n_sv, n_sv + m), np.arange(n_sv)
        engine = GramEngine(forest, base.match_plan(forest), dt)
        params = base.params()
        coef = np.asarray(self.coef, np.float64)
        if m == 0:
            return jnp.zeros(0, dt)
        g = np.asarray(compute_gram(engine, params, rows, cols, block_size=block_size,
                                    threads=threads, devices=devices), np.float64)
        if normalize:
            # Self-kernels of the inputs and support vectors (not counted as model work).
            before = engine.counts.delta_entries + engine.counts.constant_entries
            d_sv = _self_kernels(engine, params, cols)
            d_x = _self_kernels(engine, params, rows)
            after = engine.counts.delta_entries + engine.counts.constant_entries
            g = g * _inv_sqrt(d_x)[:, None] * _inv_sqrt(d_sv)[None, :]
        else:
            before = after = 0
        if stats is not None:
            c = engine.counts
            stats["delta_evals"] = int(c.delta_entries + c.constant_entries) - (after - before)
            stats["forest_nodes"] = forest.n_nodes
        return jnp.asarray(g @ coef, dt)

    def predict(self, x: Sequence[Any], **options) -> np.ndarray:
        """+1 / -1 labels (sign of the decision value, +1 at 0)."""
        return np.where(np.asarray(self.decision_function(x, **options)) >= 0, 1, -1)


def _self_kernels(engine: GramEngine, params, idx: np.ndarray) -> np.ndarray:
    return np.concatenate([
        np.diagonal(np.asarray(engine.block(idx[s:s + 128], idx[s:s + 128], params)))
        for s in range(0, len(idx), 128)
    ]) if len(idx) else np.zeros(0)


def _inv_sqrt(d: np.ndarray) -> np.ndarray:
    return np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)


class CPAResult(NamedTuple):
    """A trained model and its training record.

    Attributes:
        model: the `CutPlaneSVM`.
        history: one `CPAIteration` per iteration.
        delta_evals: Delta evaluations of training (margins and Gram columns; the
            self-kernels of the normalization are `preprocessing_deltas`).
        preprocessing_deltas: Delta evaluations of the training trees' self-kernels.
        seconds: training wall time (preprocessing included).
        margins: `[iterations, r]` the sample margins y_i w . phi(x_i) of every iteration
            (kept when `keep_margins`), for checking that modes agree.
        samples: per iteration, the distinct training indices of its sample.
        planes: per cutting plane, the distinct training indices it holds (plane t was
            formed in iteration t). With `samples` this fixes the work of every mode:
            `delta_counts` recounts it without computing a kernel.
    """

    model: CutPlaneSVM
    history: list
    delta_evals: int
    preprocessing_deltas: int
    seconds: float
    margins: list | None
    samples: list
    planes: list


def importance_weights(y: np.ndarray, j: float) -> np.ndarray:
    """Importance z_i for uSVM+j: j for positive examples, 1 for negative ones."""
    if not (np.isfinite(j) and j > 0):
        raise ValueError(f"j must be a finite number > 0, got {j}")
    return np.where(np.asarray(y) > 0, float(j), 1.0)


def svm_light_C(c_light: float, y: Any, *, j: float | None = None,
                importance: Any = None) -> float:
    """The 1-slack C of `cpa` that matches SVM-light's C (and its -j cost factor).

    With importance weights z (j for positives, 1 for negatives, or given), the planes of
    uSVM+j estimate the z-weighted mean loss sum_i z_i xi_i / sum_i z_i, so the 1-slack
    problem at C = c_light * sum_i z_i is SVM-light's min ||w||^2/2 + c_light sum_i z_i xi_i
    (no bias). Without weights sum_i z_i = n: C = n * c_light.
    """
    if not c_light > 0:
        raise ValueError(f"c_light must be > 0, got {c_light}")
    y = np.asarray(y)
    importance = _importance(y, j, importance)
    return float(c_light) * (len(y) if importance is None else float(importance.sum()))


def _importance(y: np.ndarray, j: float | None, importance: Any) -> np.ndarray | None:
    """The checked per-example importance weights from `j` or `importance` (None: neither)."""
    if j is not None and importance is not None:
        raise ValueError("give j or importance, not both")
    if j is not None:
        return importance_weights(y, j)
    if importance is None:
        return None
    importance = np.asarray(importance, np.float64)
    if importance.shape != y.shape or not np.all(np.isfinite(importance)) \
            or np.any(importance < 0) or importance.max() <= 0:
        raise ValueError(f"importance must be {len(y)} finite weights >= 0, not all 0")
    return importance


def draw_sample(key: jax.Array, n: int, r: int, importance: np.ndarray | None) -> np.ndarray:
    """Training indices of one iteration's sample.

    Uniform: r distinct indices (all n when r >= n). With importance weights z: Algorithm 9,
    cost-proportionate rejection sampling: indices drawn uniformly with replacement, each
    kept with probability z_i / max(z), until r are kept (so an index may repeat).
    """
    if importance is None:
        if r >= n:
            return np.arange(n)
        return np.sort(np.asarray(jax.random.choice(key, n, (r,), replace=False)))
    z = np.asarray(importance, np.float64)
    accept = z / z.max()
    kept: list[np.ndarray] = []
    count, round_ = 0, 0
    while count < r:
        k_idx, k_coin = jax.random.split(jax.random.fold_in(key, round_))
        draw = max(2 * r, 64)
        cand = np.asarray(jax.random.randint(k_idx, (draw,), 0, n))
        coin = np.asarray(jax.random.uniform(k_coin, (draw,), dtype=jnp.float64
                                             if jax.config.jax_enable_x64 else jnp.float32))
        keep = cand[coin < accept[cand]]
        kept.append(keep)
        count += len(keep)
        round_ += 1
    return np.concatenate(kept)[:r]


def cpa(
    kernel: AbstractKernel,
    x: Sequence[Any],
    y: Any,
    *,
    C: float = 1.0,
    sample: int = 1000,
    epsilon: float = 1e-3,
    confirm: int = 1,
    mode: str = "forest",
    j: float | None = None,
    importance: Any = None,
    max_iter: int = 500,
    key: jax.Array | None = None,
    dtype: Any = "float64",
    qp_tol: float = 1e-12,
    qp_max_iter: int = 20_000,
    block_size: int = 256,
    threads: int = 2,
    devices: Sequence[Any] | None = None,
    keep_margins: bool = False,
    callback: Any = None,
    gram: Any = None,
) -> CPAResult:
    """Train a binary SVM with a tree kernel by the cutting-plane algorithm with sampling.

    Args:
        kernel: a tree kernel or `Normalized(tree kernel)` (the paper normalizes).
        x: training trees (or `Example`s; the kernel's `tree_index` picks the tree).
        y: labels, +1 / -1.
        C: the 1-slack SVM's C (`svm_light_C` converts SVM-light's C, with j).
        sample: r, examples drawn per iteration (r >= n: all, the exact CPA; with
            importance weights z, r >= n gives the exact weighted CPA: every example in
            every plane with weight z_i / sum z, the expectation of a sampled plane).
        epsilon: stop when no cutting plane of the sample is violated by more than it.
        confirm: stop when that holds on this many consecutive samples (1, the default, is
            Algorithm 2's rule; with sampled planes a single pass is often premature, see the
            module docstring). Without sampling (r >= n) one pass is final.
        mode: "forest" (default), "sdag+", "sdag" or "usvm" (see the module docstring).
        j: uSVM+j: positives get importance j, negatives 1, and the sample is drawn by
            cost-proportionate rejection sampling.
        importance: per-example importance weights instead of `j`.
        max_iter: most iterations (the result says whether it converged).
        key: PRNG key of the samples (default `jax.random.PRNGKey(0)`).
        dtype: "float64" (default; exact comparisons between modes) or "float32".
        qp_tol: the QP's relative duality-gap tolerance.
        qp_max_iter: most gradient steps per QP solve (many nearly parallel planes make the
            last digits slow; the solve is warm-started, so later solves resume there).
        block_size, threads: the Gram engine's row blocks and host threads.
        devices: JAX devices (e.g. `jax.devices()`) to shard the sample's margin blocks over:
            row block b of the sample runs on device b mod len(devices). Same margins.
        keep_margins: keep every iteration's sample margins in the result.
        callback: called with each `CPAIteration`.
        gram: optional precomputed `[n, n]` Gram matrix of `x` under `kernel` (normalized
            if the kernel is): the margins are read off it instead of computed, which gives
            the same model with no kernel work in training (small data, many fits: model
            selection). `mode` is then ignored and no Delta evaluations are counted.

    Returns:
        A `CPAResult`.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not C > 0 or not epsilon > 0:
        raise ValueError(f"C and epsilon must be > 0, got C={C}, epsilon={epsilon}")
    if int(confirm) < 1:
        raise ValueError(f"confirm must be >= 1, got {confirm}")
    if int(sample) < 1:
        raise ValueError(f"sample must be >= 1, got {sample}")
    base, normalize = _split_kernel(kernel)
    trees = as_trees(x, base.tree_index)
    y = np.asarray(y)
    n = len(trees)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {y.shape}")
    if not np.all(np.isin(y, (-1, 1))):
        raise ValueError("labels must be +1 or -1")
    if n == 0:
        raise ValueError("no training trees")
    importance = _importance(y, j, importance)
    key = jax.random.PRNGKey(0) if key is None else key
    dt = resolve_dtype(dtype)
    t_start = time.perf_counter()
    blocks = (_KernelBlocks(base, normalize, trees, mode, dt, block_size, threads, devices)
              if gram is None else _GramBlocks(gram, n))
    r = int(sample)
    yf = y.astype(np.float64)

    planes: list[_Plane] = []
    cap = 16
    gram = np.zeros((cap, cap))
    offsets = np.zeros(cap)
    alpha = np.zeros(cap)
    slack = 0.0
    dual = 0.0
    history: list[CPAIteration] = []
    margins_kept: list | None = [] if keep_margins else None
    samples: list[np.ndarray] = []
    converged = False
    lipschitz = None  # the first solve computes G's largest eigenvalue
    gram_planes = _GramPlanes(blocks) if isinstance(blocks, _GramBlocks) else None
    exact = r >= n  # every example in every plane: the stopping test is deterministic
    exact_weighted = importance is not None and exact
    if exact_weighted:
        keep = np.flatnonzero(importance > 0)
        share_all = importance[keep] / importance.sum()
    passes = 0  # consecutive samples that passed the stopping test
    for it in range(max_iter):
        t_it = time.perf_counter()
        if exact_weighted:  # every example, with its share of the weighted mean loss
            uniq, mult, share = keep, np.ones(len(keep), np.int64), share_all
        else:  # a sampled plane's share of example i: its draws / r
            idx = draw_sample(jax.random.fold_in(key, it), n, r, importance)
            uniq, mult = np.unique(idx, return_counts=True)
            share = mult / r
        samples.append(uniq)
        if gram_planes is not None:
            f = gram_planes.margins(uniq, alpha[: len(planes)])
        else:  # per_plane[i, j] = g_j . phi(x_i) for the sample's distinct examples
            per_plane = _plane_products(blocks, planes, uniq)
            f = per_plane @ alpha[: len(planes)]
        margin = yf[uniq] * f
        c = margin < 1  # the examples whose loss is positive form the new plane
        if margins_kept is not None:
            margins_kept.append(np.repeat(margin, mult))
        d_new = float(np.sum(share * c))
        wg_new = float(np.sum(share * c * yf[uniq] * f))
        violation = d_new - wg_new
        deltas = blocks.work.take()
        passes = passes + 1 if violation <= slack + epsilon else 0
        if passes >= (1 if exact else int(confirm)):
            converged = True
            record = CPAIteration(len(planes), violation, slack, dual, deltas,
                                  time.perf_counter() - t_it)
            history.append(record)
            if callback is not None:
                callback(record)
            break
        members = uniq[c]
        weights = share[c] * yf[members]
        plane = _Plane(members, weights)
        t = len(planes)
        if t == cap:
            cap *= 2
            gram = np.pad(gram, ((0, cap - t), (0, cap - t)))
            offsets = np.pad(offsets, (0, cap - t))
            alpha = np.pad(alpha, (0, cap - t))
        # New Gram column: g_j . g_t = sum_{i in plane t} weight_i g_j . phi(x_i), read off the
        # margins; g_t . g_t needs the plane's own kernel block.
        if t:
            column = (gram_planes.column(members, weights) if gram_planes is not None
                      else weights @ per_plane[c])
            gram[:t, t] = gram[t, :t] = column
        own = blocks.block(members, members)
        gram[t, t] = float(weights @ own @ weights)
        offsets[t] = d_new
        planes.append(plane)
        if gram_planes is not None:
            gram_planes.add(plane)
        mask = np.arange(cap) <= t
        # The step bound carries over: a new plane never lowers G's largest eigenvalue, and
        # the solver raises it by backtracking when needed (no eigensolve per iteration).
        res = solve_one_slack_dual(jnp.asarray(gram), jnp.asarray(offsets), C,
                                   jnp.asarray(mask), jnp.asarray(alpha), qp_tol, qp_max_iter,
                                   lipschitz)
        alpha = np.asarray(res.alpha, np.float64)
        lipschitz = float(res.lipschitz)
        dual = float(res.dual)
        g_alpha = gram[: t + 1, : t + 1] @ alpha[: t + 1]
        slack = max(0.0, float(np.max(offsets[: t + 1] - g_alpha)))
        deltas += blocks.work.take()
        record = CPAIteration(t + 1, violation, slack, dual, deltas, time.perf_counter() - t_it)
        history.append(record)
        if callback is not None:
            callback(record)

    model = _model(kernel, trees, planes, alpha[: len(planes)], offsets[: len(planes)],
                   converged, dt)
    total = sum(h.delta_evals for h in history)
    return CPAResult(model, history, total, blocks.preprocessing_deltas,
                     time.perf_counter() - t_start, margins_kept, samples,
                     [p.examples for p in planes])


def delta_counts(kernel: AbstractKernel, x: Sequence[Any], result: CPAResult, *,
                 block_size: int = 256) -> dict[str, int]:
    """The Delta evaluations each mode performs for the run `result` (same samples, planes).

    A Delta evaluation is a pair of nodes in the same match group (production for ST/SST,
    label for PTK; PTK's leaves, whose Delta is a constant, are not counted) of a sample-side
    node and a model-side node. Per group the count is a product of node counts, so every
    mode's work is summed from per-tree histograms without computing a kernel:
    - usvm: every node of the sample trees x every node of each plane's trees;
    - sdag: ... x the distinct subtrees of each plane;
    - sdag+: ... x the distinct subtrees of all planes;
    - forest: the sample's distinct subtrees x the distinct subtrees of all planes.
    Each iteration's Gram column adds the new plane's trees against its own DAG (or trees).
    Compacted sample sides are compacted per row block of `block_size` trees (`cpa`'s
    engine blocks, which bound its memory), so a subtree shared by two blocks counts twice.
    Equal to what `cpa` counts when it runs in that mode with the same `block_size`; lets
    an experiment report the work of a mode too slow to run.
    """
    base, _ = _split_kernel(kernel)
    trees = as_trees(x, base.tree_index)
    forest = Forest.build(trees)
    plan = base.match_plan(forest)
    stored = plan.key >= 0
    if plan.residual:
        stored &= forest.arity > 0
    n_keys = plan.n_keys
    key = plan.key.astype(np.int64)
    occ_tree = forest.count_tree.astype(np.int64)
    occ_node = forest.count_node.astype(np.int64)
    occ_count = forest.count.astype(np.int64)
    keep = stored[occ_node]
    occ_tree, occ_node, occ_count = occ_tree[keep], occ_node[keep], occ_count[keep]

    def expanded(idx: np.ndarray) -> np.ndarray:  # node counts per group, with repeats
        sel = np.isin(occ_tree, idx)
        return np.bincount(key[occ_node[sel]], weights=occ_count[sel], minlength=n_keys)

    def distinct(idx: np.ndarray) -> np.ndarray:  # distinct subtrees per group
        nodes = np.unique(occ_node[np.isin(occ_tree, idx)])
        return np.bincount(key[nodes], minlength=n_keys).astype(np.float64)

    def blocked(idx: np.ndarray) -> np.ndarray:  # compacted rows, one DAG per row block
        return sum((distinct(idx[s:s + block_size]) for s in range(0, len(idx), block_size)),
                   np.zeros(n_keys))

    counts = dict.fromkeys(MODES, 0.0)
    planes = result.planes
    for it, sample in enumerate(result.samples):
        before = planes[:it]  # planes in the model when iteration `it` computed margins
        s_exp, s_dis = expanded(sample), blocked(sample)
        if before:
            union = np.unique(np.concatenate(before))
            counts["usvm"] += sum(s_exp @ expanded(p) for p in before)
            counts["sdag"] += sum(s_exp @ distinct(p) for p in before)
            counts["sdag+"] += s_exp @ distinct(union)
            counts["forest"] += s_dis @ distinct(union)
        if it < len(planes):  # this iteration added plane `it`: its own kernel block
            p = planes[it]
            counts["usvm"] += expanded(p) @ expanded(p)
            for mode in ("sdag", "sdag+"):
                counts[mode] += expanded(p) @ distinct(p)
            counts["forest"] += blocked(p) @ distinct(p)
    return {mode: int(round(v)) for mode, v in counts.items()}


def _plane_products(blocks: _KernelBlocks, planes: list[_Plane], rows: np.ndarray) -> np.ndarray:
    """`[len(rows), planes]` g_j . phi(x_i), computed as the mode prescribes."""
    out = np.zeros((len(rows), len(planes)))
    if not planes:
        return out
    if blocks.mode in ("usvm", "sdag"):  # plane by plane: nothing shared between planes
        for j, p in enumerate(planes):
            out[:, j] = blocks.block(rows, p.examples) @ p.weights
        return out
    union = np.unique(np.concatenate([p.examples for p in planes]))
    weights = np.zeros((len(union), len(planes)))
    for j, p in enumerate(planes):
        weights[np.searchsorted(union, p.examples), j] = p.weights
    return blocks.block(rows, union) @ weights


def _model(kernel, trees, planes, alpha, offsets, converged, dt) -> CutPlaneSVM:
    coef: dict[int, float] = {}
    for a, p in zip(alpha, planes):
        if a == 0:
            continue
        for k, w in zip(p.examples.tolist(), p.weights.tolist()):
            coef[k] = coef.get(k, 0.0) + a * w
    support = np.array(sorted(k for k, v in coef.items() if v != 0), np.int64)
    values = np.array([coef[k] for k in support.tolist()], np.float64)
    return CutPlaneSVM(
        kernel=kernel,
        coef=jnp.asarray(values, dt),
        alpha=jnp.asarray(alpha, dt),
        offsets=jnp.asarray(offsets, dt),
        support=tuple(support.tolist()),
        support_trees=tuple(trees[k] for k in support.tolist()),
        converged=converged,
    )
