"""Convolution tree kernels: ST, SST, SST-bow, PTK and SPTK, computed on the forest.

Semantics are SVM-Light-TK's as pinned in ../shared/ref/README.md:
- ST/SST nodes are internal nodes; two nodes match when their productions are equal; leaf
  children do not enter the product. ST: Delta = lam prod Delta(children);
  SST: Delta = lam prod (1 + Delta(children)). SST-bow also counts equal leaves (lam each).
- PTK nodes include leaves and match on labels:
  Delta = mu (lam^2 + sum over equal-length child subsequences of lam^gaps prod Delta),
  with gaps counting skipped children only.
- SPTK multiplies PTK's Delta by a node similarity sigma(n1, n2): 1 for equal labels,
  thresholded cosine of word vectors for lexical nodes of the same PoS (or, with `gamma`,
  the positive definite exp(gamma (cos - 1))), 0 otherwise.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import time
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._cache import jit
from .._programs import program_stats
from .._validate import in_domain, is_traced
from ..errors import InputError
from ..trees._compositional import parse_composed
from ..trees._forest import Forest
from ..trees._svmlight import Example
from ..trees._tree import Tree
from ._base import ROW_CHUNK, AbstractKernel, check_options, resolve_dtype
from ._engine import Counts, MatchPlan, Params
from ._prepared import PreparedTrees, reusable
from ._schedule import release_pages
from ._timing import report as seconds_report
from ._traced import OVERFLOW


def as_trees(xs: Sequence[Any], tree_index: int) -> list[Tree]:
    """Trees out of a sequence of `Tree`s or `Example`s (taking `trees[tree_index]`)."""
    out = []
    for i, x in enumerate(xs):
        if isinstance(x, Tree):
            out.append(x)
        elif isinstance(x, Example):
            if tree_index >= len(x.trees):
                raise InputError(f"example {i} has {len(x.trees)} tree(s), no tree {tree_index}")
            out.append(x.trees[tree_index])
        else:
            raise InputError(f"item {i}: expected a jkern Tree or Example, got {type(x).__name__}")
    return out


def _check_finite(g: Any, dtype: jnp.dtype) -> Any:
    """`g`, refused (`FloatingPointError`) when it holds inf/NaN. A traced `g` (a Gram over
    traced parameters) was checked where it was computed (`_traced.py`)."""
    msg = OVERFLOW.format(dtype=dtype.name)
    if is_traced(g):
        return g
    if isinstance(g, np.ndarray):  # the caller's `out` (maybe a memory map): row chunks
        finite = True
        for s in range(0, g.shape[0], ROW_CHUNK):
            finite = finite and bool(np.isfinite(g[s:s + ROW_CHUNK]).all())
            release_pages(g, s, s + ROW_CHUNK)  # a memory map's pages read back go again
    else:
        finite = bool(jnp.all(jnp.isfinite(g)))
    if not finite:
        raise FloatingPointError(msg)
    return g


class AbstractTreeKernel(AbstractKernel):
    """A convolution tree kernel evaluated on the forest of its inputs.

    `gram` options: `dtype`, `progress` (a progress bar on stderr), `block_size` (row trees
    per block; by default about 2^19 tree pairs per block, 32 to 256 rows), `threads` (host
    threads computing blocks at once; under jit/grad/vmap the blocks run in the calling
    thread), `devices` (JAX devices to spread the row blocks over), `processes` (True: in a
    `jax.distributed` job every process computes a share of the row blocks and gets the
    whole matrix; "shared": each writes its rows into `out`, one file they all mapped),
    `stats` (a dict that receives the work counters, `programs`, the XLA programs built
    during the call, and its thread-seconds: `host_seconds`, by phase `forest_seconds`,
    `pairs_seconds`..., apart from `program_seconds` in compiled programs, `_timing.py`;
    the call's `seconds` and the process's `cpu_seconds` over it),
    `out` (a float NumPy array or `np.memmap` the Gram matrix is written into, block by
    block, and returned: memory stays at the output plus one block's working
    set per thread), `max_memory` (bytes or a size such as "8G": the Gram matrix held in
    memory and each block's working set must fit it, checked before the work, else a
    `MemoryBudgetError`; default the environment variable `JKERN_MAX_MEMORY`, else half the
    memory the process can still take, docs/kernels.md).
    """

    tree_index: eqx.AbstractVar[int]

    @abc.abstractmethod
    def match_plan(self, forest: Forest) -> MatchPlan:
        """Which forest nodes take part, how they are grouped for matching."""

    @abc.abstractmethod
    def params(self) -> Params:
        """The array parameters the recurrences read."""

    def prepare(self, trees: Sequence[Any], *, dtype: Any = None,
                expanded: Sequence[bool] | None = None) -> PreparedTrees:
        """`trees` (or examples) compacted into one forest and planned for this kernel once:
        Gram blocks between any of them follow without rebuilding (`PreparedTrees.block`,
        `.diag`). `expanded`: optional flag per tree, whose nodes are then shared with no
        other tree (the tree-by-tree baselines of the cutting-plane SVM)."""
        return PreparedTrees(self, as_trees(trees, self.tree_index), resolve_dtype(dtype),
                             expanded)

    def gram(self, x1, x2=None, *, dtype=None, progress=False, block_size=None, threads=2,
             devices=None, processes=False, stats=None, out=None, max_memory=None):
        before = int(program_stats()["programs"])
        start, start_cpu = time.perf_counter(), time.process_time()
        prepared, rows, cols = self._prepared(x1, x2, dtype)
        counted = _counted(prepared, start, start_cpu)
        g = prepared.block(rows, cols, block_size=block_size, progress=progress,
                           threads=threads, devices=devices, processes=processes, out=out,
                           max_memory=max_memory)
        _report(prepared, stats, before, counted)
        return _check_finite(g, prepared.dtype)

    def gram_and_diag(self, x1, x2, *, dtype=None, progress=False, block_size=None, threads=2,
                      devices=None, processes=False, stats=None, out=None, max_memory=None):
        """The block and both sides' self-kernels on one prepared forest (one set of
        compiled programs; the self-kernels compute only the node pairs within a tree)."""
        before = int(program_stats()["programs"])
        start, start_cpu = time.perf_counter(), time.process_time()
        prepared, rows, cols = self._prepared(x1, x2, dtype)
        counted = _counted(prepared, start, start_cpu)
        assert cols is not None
        g = prepared.block(rows, cols, block_size=block_size, progress=progress,
                           threads=threads, devices=devices, processes=processes, out=out,
                           max_memory=max_memory)
        both = np.concatenate([rows, cols])
        d = _check_finite(prepared.diag(both, threads=threads, max_memory=max_memory),
                          prepared.dtype)
        _report(prepared, stats, before, counted)
        return _check_finite(g, prepared.dtype), d[:len(rows)], d[len(rows):]

    def diag(self, x, *, dtype=None, **options):
        check_options(self, options)
        prepared, rows, _ = self._prepared(x, None, dtype)
        d = prepared.diag(rows, threads=options.get("threads", 2),
                          max_memory=options.get("max_memory"))
        return _check_finite(d, prepared.dtype)

    def _prepared(self, x1, x2, dtype) -> tuple[PreparedTrees, np.ndarray, np.ndarray | None]:
        """(prepared collection, row indices, column indices or None): the collection both
        sides come from when they are subsets of one prepared for this kernel and dtype
        (`PreparedTrees.__getitem__`); when one side only is, that collection extended by
        the other side's trees (`PreparedTrees.extend`: the block reuses its forest and
        planned column side); else a new one of their trees."""
        dtype = resolve_dtype(dtype)
        prepared = reusable(self, dtype, x1, x2)
        if prepared is not None:
            return prepared, x1.indices, None if x2 is None else x2.indices
        for known, other in () if x2 is None else ((x2, x1), (x1, x2)):
            base = reusable(self, dtype, known)
            if base is None or base.expanded:
                continue
            ext = base.extend(as_trees(other, self.tree_index))
            new = np.arange(base.n_trees, ext.n_trees)
            return (ext, new, known.indices) if known is x2 else (ext, known.indices, new)
        trees1 = as_trees(x1, self.tree_index)
        trees2 = [] if x2 is None else as_trees(x2, self.tree_index)
        prepared = PreparedTrees(self, trees1 + trees2, dtype)
        rows = np.arange(len(trees1))
        return prepared, rows, None if x2 is None else np.arange(len(trees1), prepared.n_trees)


def _counted(prepared: PreparedTrees, start: float, start_cpu: float
             ) -> tuple[Counts, dict[str, float], float, float]:
    """The collection's work counters and seconds so far (`_report` subtracts them), and
    when the call started (wall, process CPU); the collection's set-up counts as this
    call's (seconds from zero) when the call made it."""
    seconds = {} if prepared.started >= start else prepared.engine.seconds.snapshot()
    return dataclasses.replace(prepared.counts), seconds, start, start_cpu


def _report(prepared: PreparedTrees, stats: dict | None, programs_before: int,
            counted: tuple[Counts, dict[str, float], float, float]) -> None:
    """The work counters of a computation (the prepared collection's, less what it had
    counted before), where its seconds went (`_timing.report`: host phases, compiled
    programs), and its wall and process CPU seconds (`seconds`, `cpu_seconds`) into the
    caller's `stats` dict."""
    if stats is None:
        return
    c, (b, seconds, start, start_cpu) = prepared.counts, counted
    stats.update(trees=prepared.n_trees, total_nodes=prepared.total_nodes,
                 forest_nodes=prepared.forest_nodes,
                 delta_entries=c.delta_entries - b.delta_entries,
                 constant_entries=c.constant_entries - b.constant_entries,
                 node_pairs=c.node_pairs - b.node_pairs, blocks=c.blocks - b.blocks,
                 programs=program_stats()["programs"] - programs_before,
                 **seconds_report(prepared.engine.seconds.snapshot(), seconds),
                 seconds=time.perf_counter() - start, cpu_seconds=time.process_time() - start_cpu)


def _internal_production_keys(forest: Forest, with_leaves: bool) -> tuple[np.ndarray, int]:
    key = forest.production.astype(np.int32).copy()
    if not with_leaves:
        key[forest.is_leaf] = -1
    return key, int(forest.production.max(initial=-1)) + 1


def _as_param(x: Any) -> jax.Array:
    return jnp.asarray(x, dtype=float)


def _decay(name: str, x: Any) -> jax.Array:
    """A decay factor (λ, μ) as a parameter: finite and in (0, 1]. A traced one (a grid
    under `jax.vmap`) is checked by one compiled program, not an op at a time."""
    if is_traced(x):
        return _traced_decay(x, name=name)
    return _checked_decay(name, x)


def _checked_decay(name: str, x: Any) -> jax.Array:
    return in_domain(name, x, float, lambda v: (v > 0) & (v <= 1),
                     "is a decay factor: it must be in (0, 1]", scalar=False)


@functools.partial(jit, static_argnames=("name",))
def _traced_decay(x: Any, *, name: str) -> jax.Array:
    return _checked_decay(name, x)


class ST(AbstractTreeKernel):
    """Subtree kernel (Vishwanathan & Smola): counts shared complete subtrees, decay lam.

    >>> import jkern
    >>> t = jkern.trees.parse_penn("(A (B b))")
    >>> round(float(jkern.ST(lam=0.4).gram([t])[0, 0]), 6)
    0.56
    """

    lam: Float[Array, ""]
    tree_index: int = eqx.field(static=True)

    def __init__(self, lam: Any = 0.4, *, tree_index: int = 0):
        self.lam = _decay("lam", lam)
        self.tree_index = tree_index

    def match_plan(self, forest):
        key, n = _internal_production_keys(forest, with_leaves=False)
        return MatchPlan("aligned", key, n, plus_one=False)

    def params(self):
        return Params(self.lam, self.lam)


class SST(AbstractTreeKernel):
    """Subset-tree kernel (Collins & Duffy 2002), decay lam.

    >>> import jkern
    >>> t = jkern.trees.parse_penn("(A (B b))")
    >>> round(float(jkern.SST(lam=0.4).gram([t])[0, 0]), 6)
    0.96
    """

    lam: Float[Array, ""]
    tree_index: int = eqx.field(static=True)

    def __init__(self, lam: Any = 0.4, *, tree_index: int = 0):
        self.lam = _decay("lam", lam)
        self.tree_index = tree_index

    def match_plan(self, forest):
        key, n = _internal_production_keys(forest, with_leaves=False)
        return MatchPlan("aligned", key, n, plus_one=True)

    def params(self):
        return Params(self.lam, self.lam)


class SSTBow(AbstractTreeKernel):
    """SST plus a bag of words: equal leaves also match, lam each (SVM-Light-TK `-F 2`)."""

    lam: Float[Array, ""]
    tree_index: int = eqx.field(static=True)

    def __init__(self, lam: Any = 0.4, *, tree_index: int = 0):
        self.lam = _decay("lam", lam)
        self.tree_index = tree_index

    def match_plan(self, forest):
        key, n = _internal_production_keys(forest, with_leaves=True)
        return MatchPlan("aligned", key, n, plus_one=True)

    def params(self):
        return Params(self.lam, self.lam)


class PTK(AbstractTreeKernel):
    """Partial tree kernel (Moschitti 2006): vertical decay mu, horizontal decay lam.

    Args:
        lam: decay per child-sequence gap (and lam^2 per matched node).
        mu: decay per node (tree height).
        max_subseq: longest child subsequence considered (None: all, exact). SVM-Light-TK as
            distributed stops at 5.

    >>> import jkern
    >>> t = jkern.trees.parse_penn("(A b)")
    >>> round(float(jkern.PTK(lam=0.4, mu=0.4).gram([t])[0, 0]), 6)   # 2 mu lam^2 + mu^2 lam^2
    0.1536
    """

    lam: Float[Array, ""]
    mu: Float[Array, ""]
    max_subseq: int | None = eqx.field(static=True)
    tree_index: int = eqx.field(static=True)

    def __init__(self, lam: Any = 0.4, mu: Any = 0.4, *, max_subseq: int | None = None,
                 tree_index: int = 0):
        self.lam = _decay("lam", lam)
        self.mu = _decay("mu", mu)
        self.max_subseq = max_subseq
        self.tree_index = tree_index

    def __check_init__(self):
        if self.max_subseq is not None and self.max_subseq < 1:
            raise InputError(f"max_subseq must be >= 1 or None, got {self.max_subseq}")

    def match_plan(self, forest):
        return MatchPlan("subseq", forest.label.astype(np.int32), len(forest.vocab),
                         max_subseq=self.max_subseq, residual=True)

    def params(self):
        return Params(self.lam, self.mu)


def split_lexical(label: str, is_leaf: bool) -> tuple[str, str] | None:
    """`(lemma, pos)` of a lexical node label, None for a non-lexical node.

    Lexical nodes are labels `lemma::pos` (dependency trees, GRCT/LCT) and the leaves (words)
    of constituency trees, whose PoS is "" (their parent's label already has to match).
    """
    if "::" in label:
        lemma, _, pos = label.rpartition("::")
        return lemma, pos
    return (label, "") if is_leaf else None


class SPTK(AbstractTreeKernel):
    """Smoothed partial tree kernel (Croce, Moschitti & Basili 2011).

    PTK where two lexical nodes (labels `lemma::pos`, or the words of a constituency tree)
    of the same PoS match with similarity sigma = cosine of their word vectors when it is at
    least `threshold` (0 below); other nodes match on equal labels (sigma = 1). With no
    vectors (or all-orthogonal ones) SPTK equals PTK.

    The thresholded cosine is what the SPTK papers use, but it is not a positive definite
    word similarity, so the Gram matrix can have negative eigenvalues (on the TREC parses with
    GloVe 50-d vectors it does). Giving `gamma` replaces it by sigma = exp(gamma (cos - 1)),
    a Gaussian kernel on the unit vectors (exp(-gamma |u - v|^2 / 2)): positive definite,
    1 on equal words, and PTK again as gamma grows. SPTK is a valid kernel whenever sigma is
    (Croce et al. 2011), so this variant's Gram matrices are positive semi-definite.

    Args:
        vocab: words/lemmas, one per row of `vectors`.
        vectors: `[len(vocab), d]` word vectors (normalized here).
        lam, mu, max_subseq: as in `PTK`.
        threshold: similarities below it count as 0 (cosine similarity only).
        gamma: if given, the Gaussian similarity exp(gamma (cos - 1)) instead of the
            thresholded cosine; gamma > 0, and `threshold` must then stay 0.
    """

    lam: Float[Array, ""]
    mu: Float[Array, ""]
    vectors: Float[Array, "vocab dim"]
    threshold: Float[Array, ""]
    gamma: Float[Array, ""] | None
    vocab: tuple[str, ...] = eqx.field(static=True)
    max_subseq: int | None = eqx.field(static=True)
    tree_index: int = eqx.field(static=True)

    def __init__(self, vocab: Sequence[str], vectors: Any, lam: Any = 0.4, mu: Any = 0.4, *,
                 threshold: Any = 0.0, gamma: Any = None, max_subseq: int | None = None,
                 tree_index: int = 0):
        vectors = jnp.asarray(vectors, dtype=float)
        if vectors.ndim != 2 or vectors.shape[0] != len(vocab):
            raise InputError(
                f"vectors must be [len(vocab), dim] = [{len(vocab)}, d], got {vectors.shape}"
            )
        norms = jnp.linalg.norm(vectors, axis=1, keepdims=True)
        self.vectors = jnp.where(norms > 0, vectors / jnp.where(norms > 0, norms, 1), 0)
        self.vocab = tuple(vocab)
        self.lam = _decay("lam", lam)
        self.mu = _decay("mu", mu)
        self.threshold = _as_param(threshold)
        if gamma is not None and not is_traced(gamma):
            if not np.all(np.asarray(gamma) > 0):
                raise InputError(f"gamma must be > 0, got {gamma}")
            if not is_traced(threshold) and np.any(np.asarray(threshold) != 0):
                raise InputError("threshold applies to the cosine similarity only; with gamma "
                                 "(the Gaussian similarity) leave it at 0")
        self.gamma = None if gamma is None else _as_param(gamma)
        self.max_subseq = max_subseq
        self.tree_index = tree_index

    def match_plan(self, forest):
        key, n_keys, vec_index = _smoothed_plan(forest, self.vocab)
        return MatchPlan("subseq", key, n_keys, max_subseq=self.max_subseq,
                         vec_index=vec_index)

    def params(self):
        return Params(self.lam, self.mu, _gatherable(self.vectors), self.threshold, self.gamma)


def _gatherable(vectors: jax.Array) -> jax.Array:
    """The word vectors as the recurrences gather them: an empty vocabulary (or zero
    dimension) becomes one zero row, since gathers need a row."""
    if vectors.shape[0] == 0 or vectors.shape[1] == 0:
        return jnp.zeros((1, max(1, vectors.shape[1])), vectors.dtype)
    return vectors


def _smoothed_plan(forest: Forest, vocab: Sequence[str], *, composed: bool = False
                   ) -> tuple[np.ndarray, int, np.ndarray]:
    """SPTK's view of a forest: (match key per node, number of keys, row of each lexical
    node's word vector or -1). Lexical nodes are grouped by PoS, other nodes by label.
    `composed`: labels `rel<head,mod>` are not lexical (CSPTK groups them itself)."""
    word_row = {w: i for i, w in enumerate(vocab)}
    n_labels = len(forest.vocab)
    leaf = forest.is_leaf
    lexical = [None if composed and parse_composed(lab) is not None
               else split_lexical(lab, False) for lab in forest.vocab]
    # Plain words (constituency leaves) may share their label with internal nodes (the
    # word "." under the PoS "."); PTK matches those, so every node whose label is also
    # a plain word goes into the words' group, where sigma is 1 on equal labels.
    word_labels = np.zeros(n_labels, bool)
    word_labels[forest.label[leaf]] = True
    if composed:
        word_labels &= np.array([parse_composed(lab) is None for lab in forest.vocab], bool)
    pos_ids: dict[str, int] = {}
    key = forest.label.astype(np.int32).copy()
    vec_index = np.full(forest.n_nodes, -1, np.int32)
    for u in range(forest.n_nodes):
        lab_id = forest.label[u]
        lex = lexical[lab_id]
        if lex is None:
            if not word_labels[lab_id]:
                continue
            lex = (forest.vocab[lab_id], "")
        lemma, pos = lex
        key[u] = n_labels + pos_ids.setdefault(pos, len(pos_ids))
        if lexical[lab_id] is not None or leaf[u]:  # only lexical nodes get vectors
            vec_index[u] = word_row.get(lemma, -1)
    return key, n_labels + len(pos_ids), vec_index


def _matrix(name: str, x: Any, dim: int) -> jax.Array:
    """A composition matrix: `[dim, dim]`, finite (identity when None)."""
    if x is None:
        return jnp.eye(dim, dtype=float)
    x = jnp.asarray(x, dtype=float)
    if x.shape != (dim, dim):
        raise InputError(f"{name} must be a [{dim}, {dim}] matrix (the word vectors' "
                         f"dimension), got shape {x.shape}")
    if not is_traced(x) and not bool(jnp.all(jnp.isfinite(x))):
        raise InputError(f"{name} must be finite")
    return x


class CSPTK(AbstractTreeKernel):
    """Compositionally smoothed partial tree kernel (Annesi, Croce & Basili 2014).

    SPTK on compositionally labelled dependency trees (`jkern.trees.cgrct`): besides the
    lexical nodes, each head-modifier node `rel<h::hp,m::mp>` is smoothed. Two such nodes
    match when their relation and both PoS are equal, with similarity sigma(cos(c1, c2)) of
    their compositions c = A h + B m (h, m: the unit word vectors of the head and the
    modifier; the additive composition of Croce et al., ACL 2017, A = B = I by default).
    Lexical nodes are compared as in `SPTK`; every other node by its label. A pair or word
    without a vector (missing from `vocab`, a zero vector, or a composition that vanishes)
    matches only its own label. sigma is SPTK's: the cosine thresholded at `threshold`, or
    with `gamma` the positive definite exp(gamma (cos - 1)). Differentiable in lam, mu,
    gamma, A, B (and the vectors): `jax.grad` through `gram` learns them.

    Args:
        vocab: words/lemmas, one per row of `vectors`.
        vectors: `[len(vocab), d]` word vectors (normalized here).
        lam, mu, max_subseq: as in `PTK`.
        A, B: `[d, d]` composition matrices (default: identity).
        threshold, gamma: the word and pair similarity, as in `SPTK`.
    """

    lam: Float[Array, ""]
    mu: Float[Array, ""]
    vectors: Float[Array, "vocab dim"]
    A: Float[Array, "dim dim"]
    B: Float[Array, "dim dim"]
    threshold: Float[Array, ""]
    gamma: Float[Array, ""] | None
    vocab: tuple[str, ...] = eqx.field(static=True)
    max_subseq: int | None = eqx.field(static=True)
    tree_index: int = eqx.field(static=True)

    def __init__(self, vocab: Sequence[str], vectors: Any, lam: Any = 0.4, mu: Any = 0.4, *,
                 A: Any = None, B: Any = None, threshold: Any = 0.0, gamma: Any = None,
                 max_subseq: int | None = None, tree_index: int = 0):
        smooth = SPTK(vocab, vectors, lam, mu, threshold=threshold, gamma=gamma,
                      max_subseq=max_subseq, tree_index=tree_index)  # its checks, its scaling
        self.vectors = smooth.vectors
        self.vocab, self.lam, self.mu = smooth.vocab, smooth.lam, smooth.mu
        self.threshold, self.gamma = smooth.threshold, smooth.gamma
        self.max_subseq, self.tree_index = max_subseq, tree_index
        dim = self.vectors.shape[1]
        self.A = _matrix("A", A, dim)
        self.B = _matrix("B", B, dim)

    def __check_init__(self):
        if self.max_subseq is not None and self.max_subseq < 1:
            raise InputError(f"max_subseq must be >= 1 or None, got {self.max_subseq}")

    def match_plan(self, forest):
        key, n_keys, vec_index = _smoothed_plan(forest, self.vocab, composed=True)
        word_row = {w: i for i, w in enumerate(self.vocab)}
        n_words = max(len(self.vocab), 1)  # params() pads an empty vocabulary to one row
        groups: dict[tuple[str, str, str], int] = {}
        pair_row: dict[tuple[int, int], int] = {}
        label_key = np.full(len(forest.vocab), -1, np.int64)
        label_vec = np.full(len(forest.vocab), -1, np.int64)
        for lab_id, lab in enumerate(forest.vocab):
            parts = parse_composed(lab)
            if parts is None:
                continue
            label_key[lab_id] = n_keys + groups.setdefault(
                (parts.rel, parts.head_pos, parts.mod_pos), len(groups))
            h, m = word_row.get(parts.head_lemma), word_row.get(parts.mod_lemma)
            if h is not None and m is not None:
                label_vec[lab_id] = n_words + pair_row.setdefault((h, m), len(pair_row))
        node_key, node_vec = label_key[forest.label], label_vec[forest.label]
        is_composed = node_key >= 0
        key = np.where(is_composed, node_key, key).astype(np.int32)
        vec_index = np.where(is_composed, node_vec, vec_index).astype(np.int32)
        pairs = np.array(list(pair_row), np.int32).reshape(-1, 2)
        return MatchPlan("subseq", key, n_keys + len(groups), max_subseq=self.max_subseq,
                         vec_index=vec_index, composed=pairs)

    def params(self):
        vectors = _gatherable(self.vectors)
        a, b = self.A, self.B
        if a.shape[0] != vectors.shape[1]:  # zero-dimensional vectors padded to one
            a = b = jnp.zeros((vectors.shape[1], vectors.shape[1]), vectors.dtype)
        return Params(self.lam, self.mu, vectors, self.threshold, self.gamma, (a, b))
