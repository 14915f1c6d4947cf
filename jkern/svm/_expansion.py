"""A kernel machine over its support inputs: f(x) = sum_k coef_k K(x_k, x) + intercept.

The model of the cutting-plane SVM (`cpa`), and of a kernel SVM once its support inputs are
attached (`KernelSVM.expand`): it keeps the support inputs, so it classifies new trees
itself, through one weighted forest of all support vectors. In a `jax.distributed` job,
`decision_function(x, processes=True)` shares the row blocks of K(x, support) among the
processes (docs/multi-host.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._labels import predict_labels, score_columns, two_class_decision
from .._validate import finite_model, is_traced, resolve_dtype
from ..errors import InputError
from ..kernels._base import AbstractKernel, Normalized
from ..kernels._processes import check_same, shared_among
from ..kernels._tree_kernels import AbstractTreeKernel

DECISION_MODES = ("forest", "sdag+", "usvm")


def split_tree_kernel(kernel: AbstractKernel) -> tuple[AbstractTreeKernel, bool] | None:
    """`(tree kernel, normalized?)` for a tree kernel or `Normalized(tree kernel)`, else None."""
    if isinstance(kernel, Normalized) and isinstance(kernel.kernel, AbstractTreeKernel):
        return kernel.kernel, True
    if isinstance(kernel, AbstractTreeKernel):
        return kernel, False
    return None


def inv_sqrt(d: np.ndarray) -> np.ndarray:
    """1 / sqrt(d), 0 where d <= 0 (a zero self-kernel normalizes to 0)."""
    return np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)


class KernelExpansion(eqx.Module):
    """f(x) = sum_k coef_k K(support_k, x) + intercept, binary or one-vs-rest.

    Binary: `coef` is `[n_sv]` and `intercept` a scalar; `predict` gives ±1 (+1 where
    f >= 0), or `classes[1]` / `classes[0]` when two `classes` are named. One-vs-rest:
    `coef` is `[k, n_sv]`, `intercept` `[k]`, `classes` the k labels; `predict` gives the
    label of the highest score (ties: the lowest class).

    Attributes:
        kernel: the kernel (a tree kernel, possibly `Normalized`, or any jkern kernel).
        coef: the support inputs' coefficients.
        intercept: the bias (0 for the cutting-plane SVM, which has none, as the paper).
        support: the support inputs' indices in the training set.
        support_inputs: the support inputs (trees).
        classes: None (±1), the two labels of a binary model, or the k one-vs-rest labels.
    """

    kernel: AbstractKernel
    coef: Float[Array, "*classes n_sv"]
    intercept: Float[Array, "*classes"]
    support: tuple[int, ...] = eqx.field(static=True)
    support_inputs: tuple = eqx.field(static=True)
    classes: tuple | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if self.coef.shape[-1] != len(self.support_inputs):
            raise InputError(f"coef has {self.coef.shape[-1]} columns for "
                             f"{len(self.support_inputs)} support inputs")
        binary = self.coef.ndim == 1
        if self.classes is not None and not binary and len(self.classes) != self.coef.shape[0]:
            raise InputError(f"{len(self.classes)} classes for {self.coef.shape[0]} rows of coef")
        if self.classes is not None and binary and len(self.classes) != 2:
            raise InputError(f"a binary model names 2 classes, got {len(self.classes)}")

    @property
    def n_support(self) -> int:
        """Support inputs: kernel evaluations needed to classify one input."""
        return len(self.support_inputs)

    def decision_function(self, x: Sequence[Any], *, mode: str = "forest", dtype: Any = None,
                          block_size: int = 256, threads: int = 2,
                          devices: Sequence[Any] | None = None, processes: bool | str = False,
                          progress: bool = False, stats: dict | None = None
                          ) -> Float[Array, " m *classes"]:
        """f(x): `[m]` for a binary model, `[m, k]` for one-vs-rest.

        Args:
            x: trees (or examples) for a tree kernel; whatever the kernel takes otherwise.
            mode: tree kernels only: "forest" (support vectors and inputs compacted
                together, the default), "sdag+" (support vectors as one weighted DAG
                against each input's nodes, Table 3 of the SDAG paper) or "usvm" (tree by
                tree, the Delta work of plain kernel expansion). Same values, other work.
            dtype: computation dtype (default: the coefficients').
            block_size, threads, devices, progress: the Gram engine's row blocks, host
                threads, JAX devices and progress bar.
            processes: in a `jax.distributed` job, True shares the row blocks of the kernel
                columns K(x, support) among the processes: every process makes the same call
                (the same model, checked, and `x`) and gets all the decision values. (Only
                True: the values are small, there is no `"shared"` file.) In a one-process
                job, ignored. A normalized kernel's self-kernels of `x` are computed by
                every process. See docs/multi-host.md.
            stats: a dict that receives `delta_evals` (with `processes`, this process's)
                and `forest_nodes` (tree kernels).
        """
        if mode not in DECISION_MODES:
            raise InputError(f"mode must be one of {DECISION_MODES}, got {mode!r}")
        if processes == "shared":
            raise InputError("decision_function gives every process all its values: pass "
                             "processes=True (there is no shared file to write)")
        self = finite_model(self)
        traced = any(is_traced(leaf) for leaf in jax.tree_util.tree_leaves(self))
        if shared_among(processes, traced):  # the Gram's check sees sizes, not support trees
            check_same("models (support inputs or coefficients)",
                       (*self.support_inputs, self.coef, self.intercept),
                       "train (or load) the same model in every process")
        dt = resolve_dtype(dtype if dtype is not None else self.coef.dtype)
        m = len(x)
        shape = (m, *self.coef.shape[:-1])
        if m == 0:
            return jnp.zeros(shape, dt)
        split = split_tree_kernel(self.kernel)
        if split is None:
            if mode != "forest":
                raise InputError(f"mode {mode!r} needs a tree kernel")
            g = np.asarray(self.kernel.gram(list(x), list(self.support_inputs), dtype=dt,
                                            block_size=block_size, threads=threads,
                                            devices=devices, processes=processes,
                                            progress=progress, stats=stats),
                           np.float64)
        else:
            g = self._tree_block(split, x, mode, dt, block_size, threads, devices, processes,
                                 progress, stats)
        coef = np.asarray(self.coef, np.float64)
        f = g @ coef.T + np.asarray(self.intercept, np.float64)
        return jnp.asarray(f, dt)

    def _tree_block(self, split, x, mode, dt, block_size, threads, devices, processes, progress,
                    stats):
        base, normalize = split
        sv = list(self.support_inputs)
        n_sv = len(sv)
        trees = list(x)
        # Inputs expanded (tree by tree) except in forest mode; support vectors only in usvm.
        expanded = None if mode == "forest" else [mode == "usvm"] * n_sv + [True] * len(trees)
        prepared = base.prepare(sv + trees, dtype=dt, expanded=expanded)
        rows, cols = np.arange(n_sv, n_sv + len(trees)), np.arange(n_sv)
        g = np.asarray(prepared.block(rows, cols, block_size=block_size, threads=threads,
                                      devices=devices, processes=processes,
                                      progress=progress), np.float64)
        model_work = prepared.counts.delta_evals
        if normalize:  # self-kernels of inputs and support vectors: not counted as model work
            g = g * inv_sqrt(prepared.diag(rows))[:, None] * inv_sqrt(prepared.diag(cols))[None]
        if stats is not None:
            stats["delta_evals"] = int(model_work)
            stats["forest_nodes"] = prepared.forest_nodes
        return g

    def class_scores(self, x: Sequence[Any], **options: Any) -> Float[Array, "m k"]:
        """`[m, k]` one score per class: the decision values of a one-vs-rest model, and
        (-f, f) for a binary one (so the argmax is `predict`'s class)."""
        return score_columns(self.decision_function(x, **options))

    def predict(self, x: Sequence[Any], **options: Any) -> Any:
        """Labels: ±1 (or `classes[1]`/`classes[0]`) by the sign, +1 at 0; one-vs-rest: the
        label of the highest score (ties: the lowest class)."""
        return predict_labels(self.decision_function(x, **options), self.classes)

    def classify(self, x: Sequence[Any], **options: Any) -> tuple[Any, Float[Array, "m k"]]:
        """`(predict(x), class_scores(x))` from one kernel computation."""
        f = self.decision_function(x, **options)
        return predict_labels(f, self.classes), score_columns(f)

    def binary_decision(self, scores: Float[Array, "m 2"]) -> tuple[int, Any]:
        """`(positive class index, one decision value per input)` of a two-class model's
        `class_scores` (a binary model's (-f, f): f; two one-vs-rest models: half the
        difference of their mirror problems' values), float64 NumPy."""
        return two_class_decision(scores, self.classes, logits=False)

    @staticmethod
    def stack(models: Sequence[KernelExpansion], classes: Sequence[Any]) -> KernelExpansion:
        """One one-vs-rest model from binary models (one per class, same kernel) over the
        union of their support inputs."""
        return stack_expansions(models, classes)


def stack_expansions(models: Sequence[KernelExpansion], classes: Sequence[Any]
                     ) -> KernelExpansion:
    """Binary expansions (one per class, same kernel) as one one-vs-rest expansion whose
    support is the union of theirs (a coefficient is 0 where a class does not use a tree)."""
    if len(models) != len(classes) or not models:
        raise InputError(f"{len(models)} models for {len(classes)} classes")
    inputs: dict[int, Any] = {}
    for m in models:
        if m.coef.ndim != 1:
            raise InputError("stack binary models (one per class)")
        inputs.update(zip(m.support, m.support_inputs))
    support = sorted(inputs)
    col = {k: i for i, k in enumerate(support)}
    dt = models[0].coef.dtype
    coef = np.zeros((len(models), len(support)), np.float64)
    for c, m in enumerate(models):
        coef[c, [col[k] for k in m.support]] = np.asarray(m.coef, np.float64)
    intercept = np.array([float(m.intercept) for m in models])
    return KernelExpansion(models[0].kernel, jnp.asarray(coef, dt), jnp.asarray(intercept, dt),
                           tuple(support), tuple(inputs[k] for k in support),
                           tuple(classes))
