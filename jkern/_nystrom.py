"""Nyström embeddings: any jkern kernel turned into dense vectors.

With landmarks L (a sample of the training inputs), W = K(L, L) = U S Uᵀ and
H = U S^-1/2 (components with s_i / s_0 below `rcond` dropped), an input x is embedded as
x̃ = K(x, L) H, so that x̃ · ỹ ≈ K(x, y) (exact when x or y is a landmark and W has full
rank). K(x, L) goes through the forest path of the tree kernels, in row blocks: the landmarks
are prepared once (their forest, its plan, the block's column side, their self-kernels) and
every embedding extends them with its inputs' trees (`PreparedTrees.extend`).

In a `jax.distributed` job, `processes=True` shares the row blocks of W = K(L, L) and of K(x, L)
among the processes (every process makes the same call and gets the whole result, computing
its share of the blocks); the fit broadcasts process 0's H, so every process holds the same
projector bit for bit (docs/multi-host.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._progress import phase
from ._validate import finite_model, is_traced, resolve_dtype
from .errors import InputError
from .kernels._base import AbstractKernel, Normalized, Scaled
from .kernels._budget import check_landmarks, memory_budget
from .kernels._prepared import remembered
from .kernels._processes import broadcast, check_same, shared_among
from .kernels._tree_kernels import AbstractTreeKernel


def select_landmarks(n: int, m: int, *, key: Array, labels: Sequence[Any] | None = None
                     ) -> np.ndarray:
    """Indices of `m` landmarks among `n` inputs, sampled uniformly without replacement.

    With `labels`, sampling is stratified by class: each class gets a share of the `m`
    landmarks proportional to its size (largest remainders; every class at least one when
    `m` allows), sampled uniformly without replacement inside the class.

    >>> import jax
    >>> idx = select_landmarks(10, 4, key=jax.random.PRNGKey(0))
    >>> len(idx), len(set(idx.tolist())), bool(idx.max() < 10)
    (4, 4, True)
    """
    _check_count(m, n)
    if labels is None:
        return np.asarray(jax.random.choice(key, n, (m,), replace=False))
    lab = np.asarray(labels)
    if lab.shape != (n,):
        raise InputError(f"labels must have one entry per input ({n}), got shape {lab.shape}")
    classes, inverse, sizes = np.unique(lab, return_inverse=True, return_counts=True)
    share = m * sizes / n
    quota = np.floor(share).astype(np.int64)
    if m >= len(classes):
        quota = np.maximum(quota, 1)
    while quota.sum() > m:  # the floor-of-one rule may overshoot: take from the largest
        quota[np.argmax(quota - share)] -= 1
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    for c in order[: m - int(quota.sum())]:
        quota[c] += 1
    keys = jax.random.split(key, len(classes))
    parts = []
    for c, k in enumerate(keys):
        members = np.flatnonzero(inverse == c)
        q = int(min(quota[c], len(members)))
        if q:
            parts.append(members[np.asarray(jax.random.choice(k, len(members), (q,),
                                                             replace=False))])
    return np.concatenate(parts)


def _check_count(m: int, n: int) -> None:
    """The one rule for the number of landmarks, of every caller (the library, the command
    line, the estimators): between 1 and the number of inputs. More landmarks than inputs
    is refused, never lowered: the caller asked for a projector this data cannot give."""
    if not 1 <= m <= n:
        raise InputError(f"need 1 <= landmarks <= inputs, got {m} landmarks for {n} inputs")


def nystrom_projection(w: Float[Array, "m m"], *, rcond: float = 1e-5
                       ) -> tuple[Float[Array, "m m"], Array]:
    """`(H, keep)`: H = U S^-1/2 of the symmetric `w`, columns of dropped components zero.

    Components are sorted by decreasing eigenvalue; one is kept when s_i / s_0 >= rcond
    (and s_i > 0). Shapes are static, so this runs under jit and vmap; `keep` says which
    columns are live.
    """
    s, u = jnp.linalg.eigh(w)
    s, u = s[::-1], u[:, ::-1]
    keep = (s > 0) & (s >= rcond * s[0])
    h = jnp.where(keep[None, :], u / jnp.sqrt(jnp.where(keep, s, 1))[None, :], 0)
    return h, keep


class Nystrom(eqx.Module):
    """A Nyström projector: a kernel, its landmarks and H = U S^-1/2.

    `embed(x)` gives `K(x, landmarks) @ projection`. Save with `jkern.save`, reload with
    `jkern.load`; the reloaded projector embeds bit-identically.
    """

    kernel: AbstractKernel
    landmarks: tuple[Any, ...]
    projection: Float[Array, "landmarks rank"]

    @property
    def n_landmarks(self) -> int:
        return len(self.landmarks)

    @property
    def rank(self) -> int:
        return int(self.projection.shape[1])

    def embed(self, x: Sequence[Any], *, dtype: Any = None, processes: bool | str = False,
              **gram_options: Any) -> Float[Array, "n rank"]:
        """Embeddings of the inputs `x`: `columns(x) @ projection`.

        Args:
            x: inputs, as the kernel takes them.
            dtype: computation dtype of K(x, L).
            processes: in a `jax.distributed` job, True shares the row blocks of K(x, L)
                among the processes: every process makes the same call (the same projector
                and `x`, checked) and gets the whole embedding. "shared": K(x, L) goes into
                `out=`, one `np.memmap` every process opened, and each embeds all of it.
                In a one-process job, ignored. See docs/multi-host.md.
            **gram_options: the Gram engine's options (`progress`, `block_size`, `threads`,
                `devices`, `stats`: this process's work, `out`: K(x, L) written into it,
                `max_memory`).
        """
        self = finite_model(self)
        _check_same_projector(self, processes, (*self.landmarks, self.projection))
        return self.embed_columns(_columns(self.kernel, self.landmarks, x, dtype, processes,
                                           gram_options))

    def columns(self, x: Sequence[Any], *, dtype: Any = None, processes: bool | str = False,
                **gram_options: Any) -> Float[Array, "n landmarks"]:
        """K(x, landmarks); for a tree kernel, on the landmarks' prepared forest extended by
        x's trees (see `landmark_columns`). `processes` and `gram_options` as `embed`'s
        (with "shared", every process returns `out`, the shared file)."""
        _check_same_projector(self, processes, self.landmarks)
        return _columns(self.kernel, self.landmarks, x, dtype, processes, gram_options)

    def embed_columns(self, c: Float[Array, "n landmarks"]) -> Float[Array, "n rank"]:
        """Embeddings from precomputed kernel values `c[i, j] = K(x_i, landmark_j)`."""
        if c.shape[-1] != self.n_landmarks:
            raise InputError(f"expected {self.n_landmarks} kernel columns, got {c.shape[-1]}")
        h = self.projection.astype(c.dtype)
        return jnp.matmul(c, h, precision=jax.lax.Precision.HIGHEST)


class NystromEnsemble(eqx.Module):
    """Several independent projections (Croce & Basili's ensemble Nyström).

    The embedding is the concatenation [x̃_1, ..., x̃_E] / sqrt(E): its inner products are
    (1/E) sum_e x̃_e · ỹ_e, the average of the E kernel approximations (each weighted 1/E).
    """

    members: tuple[Nystrom, ...]

    @property
    def n_landmarks(self) -> int:
        """Landmarks over all members: the kernel evaluations an embedding costs."""
        return sum(m.n_landmarks for m in self.members)

    @property
    def rank(self) -> int:
        """Dimensions of the embedding: the members' ranks added up."""
        return sum(m.rank for m in self.members)

    def embed(self, x: Sequence[Any], *, dtype: Any = None, processes: bool | str = False,
              **gram_options: Any) -> Float[Array, "n rank"]:
        """The members' embeddings, concatenated and scaled; options as `Nystrom.embed`'s."""
        self = finite_model(self)
        _check_same_projector(self, processes,
                              (*self._union(), *(m.projection for m in self.members)))
        return self.embed_columns(_columns(self.members[0].kernel, self._union(), x, dtype,
                                           processes, gram_options))

    def columns(self, x: Sequence[Any], *, dtype: Any = None, processes: bool | str = False,
                **gram_options: Any) -> Float[Array, "n all_landmarks"]:
        """K(x, landmarks) over all members' landmarks: one Gram block against all of them
        at once (one forest, one pass; prepared once, as `Nystrom.columns`; options as
        `Nystrom.embed`'s)."""
        _check_same_projector(self, processes, self._union())
        return _columns(self.members[0].kernel, self._union(), x, dtype, processes,
                        gram_options)

    def _union(self) -> tuple[Any, ...]:
        return tuple(t for m in self.members for t in m.landmarks)

    def embed_columns(self, c: Float[Array, "n all_landmarks"]) -> Float[Array, "n rank"]:
        parts, start = [], 0
        for m in self.members:
            parts.append(m.embed_columns(c[:, start: start + m.n_landmarks]))
            start += m.n_landmarks
        return jnp.concatenate(parts, axis=1) / np.sqrt(len(self.members))


def _columns(kernel: AbstractKernel, landmarks: Sequence[Any], x: Sequence[Any], dtype: Any,
             processes: bool | str, gram_options: dict[str, Any]) -> Any:
    """K(x, landmarks) through `landmark_columns`, row blocks shared as `processes` says."""
    return kernel.gram(x, landmark_columns(kernel, landmarks, dtype), dtype=dtype,
                       processes=processes, **gram_options)


def _check_same_projector(model: eqx.Module, processes: bool | str, values: Sequence[Any]
                          ) -> None:
    """With `processes` in a several-process job: InputError unless every process holds the
    same landmarks (and projection, `values`). The Gram's own check compares sizes only, and
    K(x, L) gathered from processes with different landmarks would mix their columns."""
    traced = any(is_traced(leaf) for leaf in jax.tree_util.tree_leaves(model))
    if shared_among(processes, traced):
        check_same("Nystrom projectors (landmarks or projection)", values,
                   "fit it the same way in every process (fit_nystrom(..., processes=True) "
                   "with the same inputs and key) or load the same file")


def landmark_columns(kernel: AbstractKernel, landmarks: Sequence[Any], dtype: Any = None
                     ) -> Sequence[Any]:
    """The landmarks as the columns of `kernel.gram(x, ...)`.

    For a tree kernel (or a `Normalized` or `Scaled` one) with concrete parameters: all the
    trees of the landmarks' collection prepared for it in `dtype`, remembered by the
    landmarks' identities (`kernels._prepared.remembered`), so each `gram(x, columns)`
    extends that forest with x's trees instead of building the whole block's: the landmarks'
    forest, plan, column side and (normalized) self-kernels are computed once per
    projector. Otherwise (vector kernels, sums, traced parameters) the landmarks themselves.
    Nothing is stored on the projector: it stays a plain Module (jit, `eqx.tree_equal`,
    `jkern.save`).
    """
    tree_kernel = kernel
    while isinstance(tree_kernel, (Normalized, Scaled)):
        tree_kernel = tree_kernel.kernel
    if not isinstance(tree_kernel, AbstractTreeKernel) or any(
            is_traced(leaf) for leaf in jax.tree_util.tree_leaves(tree_kernel)):
        return list(landmarks)
    return remembered(tree_kernel, landmarks, resolve_dtype(dtype))[:]


def fit_nystrom(kernel: AbstractKernel, x: Sequence[Any], *, landmarks: int, key: Array,
                labels: Sequence[Any] | None = None, rcond: float = 1e-5, dtype: Any = None,
                gram: Float[Array, "m m"] | None = None, processes: bool | str = False,
                **gram_options: Any) -> Nystrom:
    """A projector with `landmarks` inputs of `x` sampled by `select_landmarks`.

    Args:
        kernel: any jkern kernel.
        x: training inputs (trees, examples or vectors, as the kernel takes).
        landmarks: number of landmarks.
        key: PRNG key of the landmark sampling.
        labels: stratify the sampling by these classes (None: uniform).
        rcond: drop eigen-components with s_i / s_0 below it.
        dtype: computation dtype of K(L, L).
        gram: W = K(L, L) if already computed (e.g. a sub-block of a full Gram), in the
            order of `select_landmarks(len(x), landmarks, key=key, labels=labels)`.
        processes: in a `jax.distributed` job, True (or "shared": W is small, so it is
            gathered either way) shares W's row blocks among the processes. Every process
            makes the same call (the same `x`, `key` and `labels`: the landmarks are
            checked) and returns the same projector, bit for bit: W is gathered and process
            0's H broadcast. In a one-process job, ignored. See docs/multi-host.md.
        **gram_options: the Gram engine's options; with `progress=True` the fit is one
            phase on stderr (`Nystrom projector, M landmarks ...`, then its time) around
            the engine's bar.

    Raises:
        InputError: `landmarks` is not between 1 and `len(x)` (more landmarks than inputs
            is refused, not lowered); with `processes`, processes chose different landmarks.
    """
    _check_count(landmarks, len(x))
    with phase(bool(gram_options.get("progress", False)),
               f"Nystrom projector, {landmarks} landmarks"):
        return _fit(kernel, x, landmarks, key, labels, rcond, dtype, gram, processes,
                    gram_options)


def _fit(kernel: AbstractKernel, x: Sequence[Any], landmarks: int, key: Array,
         labels: Sequence[Any] | None, rcond: float, dtype: Any, gram: Any,
         processes: bool | str, gram_options: dict[str, Any]) -> Nystrom:
    """`fit_nystrom` without its progress phase (the engine's bar still shows)."""
    idx = select_landmarks(len(x), landmarks, key=key, labels=labels)
    check_landmarks(memory_budget(gram_options.get("max_memory")), len(idx),
                    resolve_dtype(dtype).itemsize)
    chosen = tuple(x[int(i)] for i in idx)
    several = shared_among(processes, any(
        is_traced(leaf) for leaf in jax.tree_util.tree_leaves((kernel, gram))))
    if several:  # the Gram's check sees W's size only, not which inputs its rows are
        check_same("landmarks", (len(x), *chosen),
                   "pass the same inputs, landmarks, key and labels in every process")
    w = (kernel.gram(list(chosen), dtype=dtype, processes=bool(processes), **gram_options)
         if gram is None else gram)
    return _projector(kernel, chosen, w, rcond, several)


def projector_from_gram(kernel: AbstractKernel, landmarks: Sequence[Any],
                        w: Float[Array, "m m"], *, rcond: float = 1e-5) -> Nystrom:
    """The projector of `landmarks` whose kernel matrix is `w` (dropped components removed)."""
    return _projector(kernel, landmarks, w, rcond, False)


def _projector(kernel: AbstractKernel, landmarks: Sequence[Any], w: Any, rcond: float,
               several: bool) -> Nystrom:
    """`projector_from_gram`; `several`: every process takes process 0's H and kept
    components (W is the same everywhere, but an eigendecomposition on another kind of
    device could round, or keep a component, differently)."""
    w = jnp.asarray(w)
    if w.shape != (len(landmarks), len(landmarks)):
        raise InputError(f"W must be [{len(landmarks)}, {len(landmarks)}], got {w.shape}")
    h, keep = nystrom_projection(w, rcond=rcond)
    if several:
        h, kept = broadcast((h, keep.astype(h.dtype)))
        h, keep = jnp.asarray(h, w.dtype), np.asarray(kept) > 0
    return Nystrom(kernel, tuple(landmarks), h[:, np.asarray(keep)])


def fit_nystrom_ensemble(kernel: AbstractKernel, x: Sequence[Any], *, landmarks: int,
                         projections: int, key: Array, **options: Any) -> NystromEnsemble:
    """`projections` independent projectors of `landmarks` each (keys split from `key`;
    `options` as `fit_nystrom`'s). With `progress=True` the fit is one phase on stderr
    (`Nystrom projector, M landmarks x E projections ...`)."""
    if projections < 1:
        raise InputError(f"projections must be >= 1, got {projections}")
    _check_count(landmarks, len(x))
    labels, rcond = options.pop("labels", None), options.pop("rcond", 1e-5)
    dtype, gram = options.pop("dtype", None), options.pop("gram", None)
    processes = options.pop("processes", False)
    keys = jax.random.split(key, projections)
    with phase(bool(options.get("progress", False)),
               f"Nystrom projector, {landmarks} landmarks x {projections} projections"):
        members = [_fit(kernel, x, landmarks, k, labels, rcond, dtype, gram, processes,
                        options) for k in keys]
    return NystromEnsemble(tuple(members))


def approximation_error(gram: Float[Array, "n n"], embedding: Float[Array, "n r"]) -> float:
    """‖G − X̃X̃ᵀ‖_F / ‖G‖_F."""
    g = jnp.asarray(gram)
    approx = jnp.matmul(embedding, embedding.T, precision=jax.lax.Precision.HIGHEST)
    return float(jnp.linalg.norm(g - approx) / jnp.linalg.norm(g))


def saving(landmarks: int, support_vectors: int) -> float:
    """The papers' saving: the share of kernel evaluations per classified input avoided,
    1 − landmarks / support vectors of the kernel SVM."""
    return 1.0 - landmarks / support_vectors
