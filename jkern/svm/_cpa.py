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
importance weights: example i is kept with probability z_i / max z. With
`class_weight={1: j, -1: 1}`, positives get z = j and negatives 1.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._solution import Solution, result_code
from .._validate import class_weights, plus_minus_labels, positive_int, resolve_dtype
from ..errors import InputError
from ..kernels._base import AbstractKernel
from ..kernels._prepared import PreparedTrees
from ..kernels._tree_kernels import AbstractTreeKernel, as_trees
from ..trees._forest import Forest
from ._expansion import KernelExpansion, inv_sqrt, split_tree_kernel
from ._qp import solve_one_slack_dual

MODES = ("usvm", "sdag", "sdag+", "forest")


def _split_kernel(kernel: AbstractKernel) -> tuple[AbstractTreeKernel, bool]:
    split = split_tree_kernel(kernel)
    if split is not None:
        return split
    raise InputError("the cutting-plane SVM needs a tree kernel (ST, SST, SSTBow, PTK, SPTK) or "
                    f"Normalized(tree kernel), got {type(kernel).__name__}")


class _Work:
    """Delta evaluations (distinct node pairs whose Delta is computed) of one collection."""

    def __init__(self, prepared: PreparedTrees):
        self.prepared = prepared
        self.mark = 0

    def total(self) -> int:
        return int(self.prepared.counts.delta_evals)

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
        self.prepared = base.prepare(trees + trees if expanded else trees, dtype=dtype,
                                     expanded=[False] * n + [True] * n if expanded else None)
        self.work = _Work(self.prepared)
        self.block_size, self.threads, self.devices = block_size, threads, devices
        self.dtype = dtype
        # Self-kernels on the compacted trees (the paper's preprocessing).
        if normalize:
            self.scale = inv_sqrt(np.asarray(self.prepared.diag(np.arange(n))))
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
        g = self.prepared.block(self.sample_side(rows), self.model_side(cols),
                                block_size=self.block_size, threads=self.threads,
                                devices=self.devices)
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
            raise InputError(f"gram must be [n, n] = [{n}, {n}], got {gram.shape}")
        if not np.all(np.isfinite(gram)):
            raise InputError("gram holds NaN or inf values")
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


def svm_light_C(c_light: float, y: Any, *, class_weight: Mapping[Any, Any] | None = None,
                importance: Any = None) -> float:
    """The 1-slack C of `cpa` that matches SVM-light's C (and its -j cost factor).

    With importance weights z (from `class_weight`, e.g. `{1: j, -1: 1}` for SVM-light's
    `-j j`, or given per example), the planes of uSVM+j estimate the z-weighted mean loss
    sum_i z_i xi_i / sum_i z_i, so the 1-slack problem at C = c_light * sum_i z_i is
    SVM-light's min ||w||^2/2 + c_light sum_i z_i xi_i (no bias). Without weights
    sum_i z_i = n: C = n * c_light.
    """
    if not c_light > 0:
        raise InputError(f"c_light must be > 0, got {c_light}")
    y = np.asarray(y)
    importance = _importance(y, class_weight, importance)
    return float(c_light) * (len(y) if importance is None else float(importance.sum()))


def _importance(y: np.ndarray, class_weight: Any, importance: Any) -> np.ndarray | None:
    """The checked per-example importance weights from `class_weight` or `importance` (None:
    neither): uSVM+j's z_i = weight(y_i)."""
    if class_weight is not None and importance is not None:
        raise InputError("give class_weight or importance, not both")
    if class_weight is not None:
        w_pos, w_neg = class_weights(class_weight, (1, -1), y)
        return np.where(y > 0, float(w_pos), float(w_neg))
    if importance is None:
        return None
    importance = np.asarray(importance, np.float64)
    if importance.shape != y.shape or not np.all(np.isfinite(importance)) \
            or np.any(importance < 0) or importance.max() <= 0:
        raise InputError(f"importance must be {len(y)} finite weights >= 0, not all 0")
    return importance


def draw_sample(n: int, r: int, importance: np.ndarray | None, *, key: jax.Array
                ) -> np.ndarray:
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
                                             if jax.config.read("jax_enable_x64")
                                             else jnp.float32))
        keep = cand[coin < accept[cand]]
        kept.append(keep)
        count += len(keep)
        round_ += 1
    return np.concatenate(kept)[:r]


def cpa(
    x: Sequence[Any],
    y: Any,
    *,
    kernel: AbstractKernel,
    C: float = 1.0,
    sample: int = 1000,
    epsilon: float = 1e-3,
    confirm: int = 1,
    mode: str = "forest",
    class_weight: Mapping[Any, Any] | None = None,
    importance: Any = None,
    max_iter: int = 500,
    key: jax.Array | None,
    dtype: Any = None,
    qp_tol: float = 1e-12,
    qp_max_iter: int = 20_000,
    block_size: int = 256,
    threads: int = 2,
    devices: Sequence[Any] | None = None,
    keep_margins: bool = False,
    callback: Any = None,
    gram: Any = None,
    throw: bool = False,
) -> Solution[KernelExpansion]:
    """Train a binary SVM with a tree kernel by the cutting-plane algorithm with sampling.

    Args:
        x: training trees (or `Example`s; the kernel's `tree_index` picks the tree).
        y: labels, +1 / -1.
        kernel: a tree kernel or `Normalized(tree kernel)` (the paper normalizes).
        C: the 1-slack SVM's C (`svm_light_C` converts SVM-light's C, with class weights).
        sample: r, examples drawn per iteration (r >= n: all, the exact CPA; with
            importance weights z, r >= n gives the exact weighted CPA: every example in
            every plane with weight z_i / sum z, the expectation of a sampled plane).
        epsilon: stop when no cutting plane of the sample is violated by more than it.
        confirm: stop when that holds on this many consecutive samples (1, the default, is
            Algorithm 2's rule; with sampled planes a single pass is often premature, see the
            module docstring). Without sampling (r >= n) one pass is final.
        mode: "forest" (default), "sdag+", "sdag" or "usvm" (see the module docstring).
        class_weight: uSVM+j: `{1: j, -1: 1}` gives positives importance j and negatives 1,
            and the sample is drawn by cost-proportionate rejection sampling ("balanced":
            n / (2 count)).
        importance: per-example importance weights instead of `class_weight`.
        max_iter: most iterations (the result says whether it converged).
        key: PRNG key of the samples (keyword-only, no default: the learner can draw);
            None only for the exact algorithm (`sample` >= n), which draws nothing.
        dtype: computation dtype (default JAX's default float: float64 under x64).
        qp_tol: the QP's relative duality-gap tolerance.
        qp_max_iter: most gradient steps per QP solve (many nearly parallel planes make the
            last digits slow; the solve is warm-started, so later solves resume there).
        block_size, threads: the Gram engine's row blocks and host threads.
        devices: JAX devices (e.g. `jax.devices()`) to shard the sample's margin blocks over:
            row block b of the sample runs on device b mod len(devices). Same margins.
        keep_margins: keep every iteration's sample margins in the stats.
        callback: called with each `CPAIteration`.
        gram: optional precomputed `[n, n]` Gram matrix of `x` under `kernel` (normalized
            if the kernel is): the margins are read off it instead of computed, which gives
            the same model with no kernel work in training (small data, many fits: model
            selection). `mode` is then ignored and no Delta evaluations are counted.
        throw: raise `ConvergenceError` unless the stopping rule was met.

    Returns:
        A `Solution` with the `KernelExpansion` (no intercept) and stats:
        `history` (one `CPAIteration` per iteration), `alpha` and `offsets` (the QP's dual
        variables and the planes' offsets d_j), `delta_evals` (Delta evaluations of
        training: margins and Gram columns), `preprocessing_deltas` (the training trees'
        self-kernels of the normalization), `seconds` (wall time, preprocessing included),
        `margins` (`[iterations, r]` sample margins y_i w . phi(x_i) when `keep_margins`,
        else None), `samples` (per iteration, the distinct training indices of its sample)
        and `planes` (per cutting plane, the distinct training indices it holds; with
        `samples` this fixes the work of every mode: `delta_counts` recounts it).
    """
    if mode not in MODES:
        raise InputError(f"mode must be one of {MODES}, got {mode!r}")
    if not (np.isfinite(C) and C > 0) or not (np.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"C and epsilon must be finite numbers > 0, got C={C}, "
                         f"epsilon={epsilon}")
    confirm = positive_int("confirm", confirm)
    sample = positive_int("sample", sample)
    max_iter = positive_int("max_iter", max_iter)
    base, normalize = _split_kernel(kernel)
    trees = as_trees(x, base.tree_index)
    n = len(trees)
    if n == 0:
        raise InputError("no training trees")
    y = np.asarray(plus_minus_labels("y", y, n, jnp.float32)).astype(np.int64)
    importance = _importance(y, class_weight, importance)
    if key is None and sample < n:
        raise InputError(f"sample={sample} < {n} examples draws random samples: pass key=")
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
    if importance is not None and exact:
        keep = np.flatnonzero(importance > 0)
        share_all = importance[keep] / importance.sum()
    passes = 0  # consecutive samples that passed the stopping test
    for it in range(max_iter):
        t_it = time.perf_counter()
        if exact_weighted:  # every example, with its share of the weighted mean loss
            uniq, mult, share = keep, np.ones(len(keep), np.int64), share_all
        else:  # a sampled plane's share of example i: its draws / r
            if exact:
                idx = np.arange(n)
            else:
                assert key is not None  # checked above: sampling needs a key
                idx = draw_sample(n, r, importance, key=jax.random.fold_in(key, it))
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

    t = len(planes)
    model = _model(kernel, trees, planes, alpha[:t], dt)
    stats = {"history": history, "alpha": alpha[:t].copy(), "offsets": offsets[:t].copy(),
             "delta_evals": sum(h.delta_evals for h in history),
             "preprocessing_deltas": blocks.preprocessing_deltas,
             "seconds": time.perf_counter() - t_start, "margins": margins_kept,
             "samples": samples, "planes": [p.examples for p in planes]}
    return Solution(model, result_code(converged), stats).check(throw)


def delta_counts(kernel: AbstractKernel, x: Sequence[Any], result: Solution, *,
                 block_size: int = 256) -> dict[str, int]:
    """The Delta evaluations each mode performs for the `cpa` run `result` (same samples and
    planes: its stats).

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

    counts: dict[str, Any] = dict.fromkeys(MODES, 0.0)
    planes = result.stats["planes"]
    for it, sample in enumerate(result.stats["samples"]):
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


def _plane_products(blocks: _KernelBlocks | _GramBlocks, planes: list[_Plane],
                    rows: np.ndarray) -> np.ndarray:
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


def _model(kernel, trees, planes, alpha, dt) -> KernelExpansion:
    coef: dict[int, float] = {}
    for a, p in zip(alpha, planes):
        if a == 0:
            continue
        for k, w in zip(p.examples.tolist(), p.weights.tolist()):
            coef[k] = coef.get(k, 0.0) + a * w
    support = np.array(sorted(k for k, v in coef.items() if v != 0), np.int64)
    values = np.array([coef[k] for k in support.tolist()], np.float64)
    return KernelExpansion(
        kernel=kernel,
        coef=jnp.asarray(values, dt),
        intercept=jnp.zeros((), dt),
        support=tuple(support.tolist()),
        support_inputs=tuple(trees[k] for k in support.tolist()),
    )
