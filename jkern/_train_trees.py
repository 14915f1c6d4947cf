"""Tree classifiers end to end: labelled trees in, one model that classifies trees out.

Two classes give one binary SVM (SVM-Light-TK's problem; its classes named (negative,
positive), the positive class by `positive_class`), more give one SVM per class against the
rest.

Each function runs one learner of the contract (docs/learners.md) on trees and returns its
`Solution` with a model that predicts from trees itself (`NystromModel`, `KernelExpansion`),
ready for `jkern.save`. `jkern train` is a thin layer over these. With `progress=True` each
long phase reports on stderr (the Gram engine's bar of row blocks, a line per solver phase,
a line per cutting-plane iteration), from the host between compiled programs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._labels import positive_class
from ._nystrom import Nystrom, NystromEnsemble
from ._pipeline import NystromModel
from ._progress import cpa_iterations, end_line, phase
from ._solution import Solution
from .errors import InputError
from .kernels._base import AbstractKernel
from .svm._cpa import cpa, svm_light_C
from .svm._dcd import dcd, dcd_ovr
from .svm._expansion import KernelExpansion, stack_expansions
from .svm._ksvm import ksvm, ksvm_ovr
from .svm._ovr import stack_stats


def check_kda_options(*, dropout: Any, dev_fraction: float | None,
                      names: tuple[str, str] = ("dropout", "dev_fraction")) -> None:
    """`train_kda`'s options in their domains (the CLI checks them with this before any
    work, `names` its flags')."""
    rates = np.asarray(dropout, np.float64)
    if rates.ndim > 1 or rates.size == 0 or not np.all((rates >= 0) & (rates < 1)):
        raise InputError(f"{names[0]} {dropout}: use a rate in [0, 1)")
    if dev_fraction is not None and not 0 < dev_fraction < 1:
        raise InputError(f"{names[1]} {dev_fraction}: use a fraction in (0, 1)")


def check_labels(labels: Sequence[Any], n: int) -> None:
    """One label per tree and at least two classes, as every `train_*` function requires
    (the CLI checks a file's labels with this before any work)."""
    _classes(labels, n)


def _classes(labels: Sequence[Any], n: int) -> tuple[np.ndarray, np.ndarray]:
    """`(labels, sorted classes)` as arrays, checked: one label per tree, two classes."""
    lab = np.asarray(labels)
    if lab.shape != (n,):
        raise InputError(f"{n} trees but {len(lab)} labels")
    classes = np.unique(lab)
    if len(classes) < 2:
        raise InputError(f"needs at least two classes, got {classes.tolist()}")
    return lab, classes


def train_nystrom_svm(projector: Nystrom | NystromEnsemble, trees: Sequence[Any],
                      labels: Sequence[Any], *, C: float = 1.0, key: jax.Array,
                      **gram_options: Any) -> Solution[NystromModel]:
    """Linear SVMs by dual coordinate descent on the projector's embeddings of `trees`: one
    binary SVM (`dcd`) for two classes, one-vs-rest (`dcd_ovr`) for more."""
    lab, classes = _classes(labels, len(trees))
    on = bool(gram_options.get("progress", False))
    with phase(on, f"Nystrom embedding of {len(trees)} trees ({projector.n_landmarks} "
                   "landmarks)"):
        x = projector.embed(trees, **gram_options)
    with phase(on, f"dual coordinate descent, {_svms(classes)}"):
        if len(classes) == 2:
            y, named = _binary(lab, classes)
            sol = dcd(x, jnp.asarray(y), C=C, key=key)
            sol = Solution(dataclasses.replace(sol.model, classes=named), sol.result, sol.stats)
        else:
            sol = dcd_ovr(x, lab, C=C, key=key)
        jax.block_until_ready(sol.model)
    return Solution(NystromModel(projector, sol.model), sol.result, sol.stats)


def train_kda(projector: Nystrom, trees: Sequence[Any], labels: Sequence[Any], *,
              key: jax.Array, hidden: Sequence[int] | None = None, dropout: Any = 0.2,
              l2: Any = 1e-4, steps: int | None = None, epochs: int | None = None,
              patience: int | None = 20, dev_fraction: float | None = None,
              split_seed: int = 0, **gram_options: Any) -> Solution[NystromModel]:
    """A KDA (Nyström layer + MLP) on the kernel columns of `trees` against the projector's
    landmarks, trained by `jkern.kda.train` and its rules (docs/kda.md, "Defaults"): early
    stopping on a stratified development part (`dev_fraction`; by default 10% when that is
    at least 200 trees, `jkern.data.stratified_split(seed=split_seed)`), else `steps`
    optimizer steps (default 1,000) on every tree. `dropout` and `l2` may be sequences: their
    grid trains as one vmapped program, chosen on the development part.
    The network is initialised from `fold_in(key, 1)` and trained with `fold_in(key, 2)`."""
    from .kda import train

    lab, _ = _classes(labels, len(trees))
    if not isinstance(projector, Nystrom):
        raise InputError("a KDA needs a single Nyström projector (not an ensemble)")
    check_kda_options(dropout=dropout, dev_fraction=dev_fraction)
    on = bool(gram_options.get("progress", False))
    with phase(on, f"kernel columns of {len(trees)} trees against {projector.n_landmarks} "
                   "landmarks"):
        c = jnp.asarray(projector.columns(trees, **gram_options))
    with phase(on, "KDA training"):
        sol = train(c, lab, jnp.asarray(projector.projection, c.dtype), key=key,
                    hidden=hidden, dropout=dropout, l2=l2, dev_fraction=dev_fraction,
                    split_seed=split_seed, steps=steps, epochs=epochs, patience=patience,
                    progress=on)
        jax.block_until_ready(sol.model)
    return Solution(NystromModel(projector, sol.model), sol.result, sol.stats)


def train_kernel_svm(kernel: AbstractKernel, trees: Sequence[Any], labels: Sequence[Any], *,
                     C: float = 1.0, **gram_options: Any) -> Solution[KernelExpansion]:
    """C-SVMs by SMO on the full Gram matrix of `trees` (one binary `ksvm` for two classes,
    one-vs-rest `ksvm_ovr` for more), kept as a `KernelExpansion` over the support trees."""
    from .kernels._gram import gram

    lab, classes = _classes(labels, len(trees))
    on = bool(gram_options.get("progress", False))
    with phase(on, f"Gram matrix of {len(trees)} trees"):
        g = gram(kernel, trees, **gram_options)
    with phase(on, f"SMO, {_svms(classes)}"):
        if len(classes) == 2:
            y, named = _binary(lab, classes)
            sol = ksvm(g, y, C=C)
            model = dataclasses.replace(sol.model, classes=named)
        else:
            sol = ksvm_ovr(g, lab, C=C)
            model = sol.model
        jax.block_until_ready(model)
    return Solution(model.expand(kernel, trees), sol.result, sol.stats)


def _svms(classes: np.ndarray) -> str:
    if len(classes) == 2:
        return f"one binary SVM (positive class {classes[positive_class(classes.tolist())]})"
    return f"{len(classes)} one-vs-rest SVMs"


def _binary(lab: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, tuple[Any, Any]]:
    """Two classes: the ±1 targets and the (negative, positive) class names."""
    pos = positive_class(classes.tolist())
    return np.where(lab == classes[pos], 1, -1), (classes[1 - pos].item(), classes[pos].item())


def train_cutting_plane(kernel: AbstractKernel, trees: Sequence[Any], labels: Sequence[Any],
                        *, key: jax.Array, C: float = 1.0, c_light: float | None = None,
                        j: float | None = None, **options: Any) -> Solution[KernelExpansion]:
    """Cutting-plane SVMs (`cpa`): one binary model for two classes (its classes named in
    `(negative, positive)` order, the positive class by `positive_class`; `cpa`'s result and
    stats), one per class against the rest otherwise, merged over the union of their support
    trees (`result` `[k]`, the stats with a leading class axis, `jkern.svm.stack_stats`: a
    list of k where the classes differ in shape, e.g. `history`).

    Args:
        C: the 1-slack C, unless `c_light` gives SVM-light's C (then C = c_light times the
            number of trees, or with `j` the sum of the importance weights).
        j: uSVM+j: positives `j` times as likely to be kept by the rejection sampling
            (`class_weight={1: j, -1: 1}`).
        **options: the rest of `cpa`'s options (sample, epsilon, confirm, max_iter, mode,
            dtype, threads, devices, ...), and `progress` (a line per iteration on stderr).
    """
    lab, classes = _classes(labels, len(trees))
    on = bool(options.pop("progress", False))
    callback = options.pop("callback", None)
    epsilon = options.get("epsilon", 1e-3)
    class_weight = None if j is None else {1: j, -1: 1.0}
    targets = [positive_class(classes.tolist())] if len(classes) == 2 else list(range(len(classes)))
    sols = []
    for n, k in enumerate(targets):
        y = np.where(lab == classes[k], 1, -1)
        c = C if c_light is None else svm_light_C(c_light, y, class_weight=class_weight)
        what = (f"cutting planes, class {classes[k]} ({n + 1}/{len(targets)})"
                if len(targets) > 1 else f"cutting planes, positive class {classes[k]}")
        sols.append(cpa(trees, y, kernel=kernel, C=c, class_weight=class_weight, key=key,
                        callback=cpa_iterations(on, what, epsilon, callback), **options))
        end_line(on)
    if len(classes) == 2:  # one binary learner: its own result and stats
        pos = targets[0]
        named = (classes[1 - pos].item(), classes[pos].item())
        sol = sols[0]
        model = KernelExpansion(sol.model.kernel, sol.model.coef, sol.model.intercept,
                                sol.model.support, sol.model.support_inputs, named)
        return Solution(model, sol.result, sol.stats)
    return Solution(stack_expansions([s.model for s in sols], classes.tolist()),
                    jnp.stack([s.result for s in sols]), stack_stats([s.stats for s in sols]))
