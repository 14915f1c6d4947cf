"""The one boundary between a tree kernel and the Delta engine: a prepared collection.

`AbstractTreeKernel.prepare(trees)` compacts the trees into one forest and plans it for the
kernel once; Gram blocks between any of its trees are then computed without rebuilding either.
`gram`, `diag`, the cutting-plane SVM's kernel blocks and its model's decision function all go
through it. `PreparedTrees.extend(new_trees)` adds trees to a collection without redoing it:
blocks of the new trees against the old ones (a Nyström projector's landmarks) reuse the old
forest, its planned column sides and its self-kernels.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..errors import InputError, TreeInputError
from ..trees._forest import Forest
from ..trees._tree import Tree
from ._engine import Counts, GramEngine
from ._recurrences import batch_size, params_traced
from ._schedule import compute_diag, compute_gram
from ._traced import over_params

if TYPE_CHECKING:
    from ._tree_kernels import AbstractTreeKernel


class PreparedTrees:
    """Trees compacted into one forest (the DAG of their unique subtrees) and planned for one
    tree kernel, with its parameters.

    Args:
        kernel: the tree kernel.
        trees: the trees (already resolved from examples).
        dtype: the computation dtype.
        expanded: optional flag per tree: an expanded tree shares no node with any tree
            (the tree-by-tree baselines of the cutting-plane SVM).
        extends: a collection prepared for `kernel` in `dtype` whose trees `trees` begin
            with (see `extend`).

    Attributes:
        base: the collection this one extends (`extends`), or None.
        expanded: whether any tree is expanded (such a collection cannot be extended).
    """

    def __init__(self, kernel: AbstractTreeKernel, trees: Sequence[Tree], dtype: Any,
                 expanded: Sequence[bool] | None = None, *,
                 extends: PreparedTrees | None = None) -> None:
        self.started = time.perf_counter()  # (a `gram` call reports the set-up it caused)
        self.kernel = kernel
        self.trees = list(trees)
        self.expanded = expanded is not None and any(map(bool, expanded))
        self.base = extends
        if extends is None:
            self.forest = _forest_of(self.trees, expanded)
        else:
            n = extends.n_trees
            if extends.expanded or expanded is not None:
                raise InputError("collections with expanded trees cannot be extended")
            if len(self.trees) < n or any(a is not b for a, b in zip(self.trees, extends.trees)):
                raise InputError("an extension's trees must begin with the extended "
                                 "collection's trees")
            self.forest = extends.forest.extend(self.trees[n:])
        planned = time.perf_counter()
        try:
            self.engine = GramEngine(self.forest, kernel.match_plan(self.forest), dtype)
        except TreeInputError as err:
            raise _located(err, self.forest, self.trees) from None
        if extends is not None:
            self.engine.share_columns(extends.engine)
        self.params = self.engine.resolve_params(kernel.params())
        self.dtype = self.engine.dtype
        self.engine.seconds.add("forest", planned - self.started)
        self.engine.seconds.add("setup", time.perf_counter() - planned)
        self._self_kernels: np.ndarray | None = None  # `self_kernels`
        self._lock = threading.Lock()

    def extend(self, trees: Sequence[Tree]) -> PreparedTrees:
        """This collection with `trees` added after its own (indices `n_trees` on), without
        redoing it: the new trees are hash-consed into this forest (`Forest.extend`: its
        nodes keep their ids), and blocks whose columns are trees of this collection take
        their planned column side from this one's engine (planned once however many
        extensions ask), their self-kernels from `self_kernels`. Not for a collection with
        expanded trees."""
        return PreparedTrees(self.kernel, self.trees + list(trees), self.dtype, extends=self)

    def __len__(self) -> int:
        return self.forest.n_trees

    def __getitem__(self, index: Any) -> TreeSubset:
        """Trees of the collection as a sequence that remembers where they came from:
        `kernel.gram(prepared[rows], prepared[cols])` (also `diag`, and `Normalized`'s gram)
        computes on this forest instead of building another one. `index`: a slice, an int
        array or a boolean mask."""
        idx = np.arange(self.n_trees)[index]
        return TreeSubset(self, np.atleast_1d(idx).astype(np.int64))

    @property
    def n_trees(self) -> int:
        return self.forest.n_trees

    @property
    def forest_nodes(self) -> int:
        """Unique subtrees (forest nodes)."""
        return self.forest.n_nodes

    @property
    def total_nodes(self) -> int:
        """Nodes of all the trees, counted tree by tree."""
        return self.forest.total_nodes()

    @property
    def counts(self) -> Counts:
        """The engine's work counters so far (they add up over calls)."""
        return self.engine.counts

    def block(self, rows: np.ndarray, cols: np.ndarray | None = None, *,
              block_size: int | None = None, threads: int = 2, devices: Sequence[Any] | None = None,
              processes: bool | str = False, progress: bool = False,
              out: np.ndarray | None = None, max_memory: int | str | None = None) -> Any:
        """The raw kernel block `K[rows, cols]` between trees of the collection (`cols=None`:
        `rows` against themselves, symmetric): a JAX array, or `out` filled in place.
        Options as `compute_gram`. With traced parameters (a `jax.vmap` over them, `jit`,
        `grad`) see `_traced.py`: the plan is made once, whatever the transformation."""
        rows = np.asarray(rows, np.int64)
        cols = None if cols is None else np.asarray(cols, np.int64)

        def run(params: Any) -> Any:
            return compute_gram(self.engine, params, rows, cols, block_size=block_size,
                                progress=progress, threads=threads, devices=devices,
                                processes=processes, out=out, max_memory=max_memory)

        if not self._traced(devices is not None or bool(processes) or out is not None):
            return run(self.params)
        shape = (len(rows), len(rows) if cols is None else len(cols))
        return over_params(run, run, self.params, shape, self.dtype)

    def _traced(self, concrete_only: bool) -> bool:
        """Whether the parameters are traced and go through `_traced.over_params` (options
        for concrete blocks only, `concrete_only`, go the inline way, which refuses them).
        One value per parameter is required of concrete ones."""
        if not params_traced(self.params):
            if batch_size(self.params) is not None:
                raise InputError("a tree kernel's parameters must be scalars here; for a grid "
                                 "of values, jax.vmap over them (e.g. jax.vmap(lambda lam: "
                                 "jkern.gram(jkern.PTK(lam), trees))(lams))")
            return False
        return not concrete_only

    def diag(self, idx: np.ndarray, *, block_size: int = 512, threads: int = 2,
             max_memory: int | str | None = None) -> jax.Array:
        """Self-kernels K(t, t) of the trees `idx` (only node pairs within a tree); in an
        extension, the extended collection's trees take theirs from its `self_kernels`."""
        idx = np.asarray(idx, np.int64)
        if self._traced(False):
            def run(params: Any) -> Any:
                return compute_diag(self.engine, params, idx, block_size=block_size,
                                    threads=threads, max_memory=max_memory)

            return over_params(run, run, self.params, (len(idx),), self.dtype)
        base = self.base
        old = np.zeros(len(idx), bool) if base is None else idx < base.n_trees
        if not old.any():
            return compute_diag(self.engine, self.params, idx, block_size=block_size,
                                threads=threads, max_memory=max_memory)
        assert base is not None
        values = np.empty(len(idx), self.dtype)
        values[old] = base.self_kernels(threads=threads)[idx[old]]
        if not old.all():
            values[~old] = np.asarray(compute_diag(self.engine, self.params, idx[~old],
                                                   block_size=block_size, threads=threads,
                                                   max_memory=max_memory))
        return jnp.asarray(values)

    def self_kernels(self, *, threads: int = 2) -> np.ndarray:
        """K(t, t) of every tree of the collection, computed on first use and kept (the
        parameters must be concrete: under jit/grad/vmap use `diag`)."""
        if params_traced(self.params):
            raise InputError("self_kernels keeps concrete values; under a transformation "
                             "use diag")
        with self._lock:
            if self._self_kernels is None:
                self._self_kernels = np.asarray(self.diag(np.arange(self.n_trees),
                                                          threads=threads))
            return self._self_kernels


def _located(err: TreeInputError, forest: Forest, trees: list[Tree]) -> TreeInputError:
    """`err` naming the first tree that holds its forest node."""
    if err.node is None:
        return err
    holders = forest.count_tree[forest.count_node == err.node]
    if not len(holders):
        return err
    i = int(holders.min())
    return TreeInputError(f"tree {i} (0-based) of the {len(trees)} given: {err}",
                          tree=trees[i] if i < len(trees) else None, index=i)


def _forest_of(trees: list[Tree], expanded: Sequence[bool] | None) -> Forest:
    """`Forest.build(trees, expanded)`, remembered for the last few collections: the forest
    depends on the trees only, so calls on the same trees with other kernels or parameters
    (a grid over lambda, a normalized block and its self-kernels) build it once. Trees are
    immutable; the cache holds them, so their identities stay theirs."""
    key = (tuple(map(id, trees)), None if expanded is None else tuple(map(bool, expanded)))
    with _FORESTS_LOCK:
        for i, (known, _trees, forest) in enumerate(_FORESTS):
            if known == key:
                _FORESTS.insert(0, _FORESTS.pop(i))
                return forest
    forest = Forest.build(trees, expanded)
    with _FORESTS_LOCK:
        _FORESTS.insert(0, (key, trees, forest))
        del _FORESTS[_FORESTS_KEPT:]
    return forest


# The forests of the last few collections (`_forest_of`): (key, trees, forest), newest first.
_FORESTS: list[tuple[tuple, list[Tree], Forest]] = []
_FORESTS_KEPT = 2
_FORESTS_LOCK = threading.Lock()


def remembered(kernel: AbstractTreeKernel, items: Sequence[Any], dtype: Any) -> PreparedTrees:
    """`kernel.prepare(items, dtype=dtype)`, remembered for the last few collections (by the
    items' identities, an equal kernel and the dtype): a Nyström projector's landmarks are
    prepared once for all its embeddings, which extend them (`PreparedTrees.extend`). Trees
    and examples are immutable; the cache holds them, so their identities stay theirs. The
    kernel's parameters must be concrete."""
    key = (tuple(map(id, items)), jnp.dtype(dtype))
    with _PREPARED_LOCK:
        for i, (known, _items, prepared) in enumerate(_PREPARED):
            if known == key and (prepared.kernel is kernel
                                 or bool(eqx.tree_equal(prepared.kernel, kernel))):
                _PREPARED.insert(0, _PREPARED.pop(i))
                return prepared
    prepared = kernel.prepare(items, dtype=dtype)
    with _PREPARED_LOCK:
        _PREPARED.insert(0, (key, list(items), prepared))
        del _PREPARED[_PREPARED_KEPT:]
    return prepared


# The collections `remembered` keeps: (key, items, prepared), newest first.
_PREPARED: list[tuple[tuple, list[Any], PreparedTrees]] = []
_PREPARED_KEPT = 4
_PREPARED_LOCK = threading.Lock()


class TreeSubset(Sequence[Tree]):
    """Trees of a `PreparedTrees` (`prepared[index]`): a sequence of `Tree`s like any other,
    which the prepared kernel's Gram computations recognize and run on the prepared forest
    (another kernel, or another dtype, just reads the trees)."""

    def __init__(self, prepared: PreparedTrees, indices: np.ndarray) -> None:
        self.prepared = prepared
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return TreeSubset(self.prepared, self.indices[i])
        return self.prepared.trees[int(self.indices[i])]


def reusable(kernel: AbstractTreeKernel, dtype: Any, *xs: Any) -> PreparedTrees | None:
    """The prepared collection all of `xs` (None entries aside) are subsets of, when it was
    prepared for `kernel` in `dtype`; None otherwise (the trees are then prepared afresh)."""
    subsets = [x for x in xs if x is not None]
    if not subsets or not all(isinstance(x, TreeSubset) for x in subsets):
        return None
    prepared = subsets[0].prepared
    if any(x.prepared is not prepared for x in subsets) or prepared.dtype != dtype:
        return None
    if prepared.kernel is not kernel and not bool(eqx.tree_equal(prepared.kernel, kernel)):
        return None
    return prepared
