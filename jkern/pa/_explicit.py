"""PA-I on explicit features: opal's linear mode, and the degree-d conjunction expansion.

For binary vectors (sets), the polynomial kernel is a sum over shared conjunctions:

    (1 + s·x)^d = Σ_{U ⊆ s∩x, |U| ≤ d} c_|U|,   c_j = Σ_{k=j}^{d} C(d, k) j! S(k, j)

(S the Stirling numbers of the second kind: (s·x)^k counts k-tuples of shared features, and
j! S(k, j) of them cover a given j-set). d = 2: c = (1, 3, 2); d = 3: c = (1, 7, 12, 6). So the
kernel model Σ_s α_s k(s, ·) is the linear model with w_U = Σ_s α_s [U ⊆ s] and

    m(x) = Σ_{U ⊆ x, |U| ≤ d} c_|U| w_U,

and its PA-I update (τ from the same rule, |x| the number of primitive features) adds y·τ to
w_U for every U ⊆ x: the same sequence of updates as the kernel modes. The conjunctions are
enumerated on the host (`conjunction_table`); U = ∅ is the bias. In exact mode the weights
are int64 counts of 2^-32 like the kernel modes' α, so the margins are the same integers.
Linear mode (opal's linear row) is the plain linear PA-I m = Σ_f w_f x_f, no bias, real
values allowed.

Memory: an example of k features holds Σ_{j≤d} C(k, j) conjunctions (k = 30, d = 3: 4,526).
`fit` never materializes them for the whole data: the table is enumerated in chunks
(`conjunction_table`), and the weight ids of 4,096 visits at a time are searched in one
batch inside the jitted run (`_split.CommonPart` with every feature common), so memory
follows the table and one chunk. `expand` (host, whole matrix) is for models' inputs.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._executables import stored_filter_jit
from .._labels import sign_labels
from .._memory import release_freed_memory
from .._sparse import FeatureIds, SparseRows
from .._unique import merge_unique, sorted_unique, value_bounds
from .._validate import finite_model, host_array, is_traced, to_device
from ..errors import InputError
from ._kernel import decide, kernel_int
from ._pages import BlockPages, page_add, page_margins
from ._table import (
    CommonPart,
    chunk_rows,
    conjunction_coefficients,
    dense_layout,
    packed_chunks,
    searched_bound,
    table_margins,
)


def _conjunction_keys(X: SparseRows | tuple[np.ndarray, np.ndarray], degree: int, base: int,
                      below: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every conjunction of 1..d features of every row as an int64 key Σ_i (f_i + 1) base^i
    over its sorted features (-1 for combinations that touch padding), and each column's
    conjunction size. The empty conjunction (key 0) is column 0. Features the keys cannot
    name (ids >= base - 1), or ids >= `below`, count as absent, and the columns are cut to
    the most features a row keeps. `X` may be a pair of host arrays (indices, values).

    A key's digits are its features, the top digit its largest: keys sort by size, then by
    largest feature, whatever the base (`rebase`, `largest_feature`)."""
    if isinstance(X, SparseRows):
        X = (np.asarray(X.indices), np.asarray(X.values))
    idx = X[0].astype(np.int64)
    cut = base - 1 if below is None else min(base - 1, below)
    present = (X[1] != 0) & (idx < cut)
    order = np.argsort(np.where(present, idx, np.iinfo(np.int64).max), axis=1, kind="stable")
    width = int(present.sum(axis=1).max(initial=0))
    idx = np.take_along_axis(idx, order, axis=1)[:, :width]
    present = np.take_along_axis(present, order, axis=1)[:, :width]
    n, k = idx.shape
    keys = [np.zeros((n, 1), np.int64)]
    sizes = [np.zeros(1, np.int64)]
    for j in range(1, degree + 1):
        combos = np.asarray(list(itertools.combinations(range(k), j)), np.int64)
        if combos.size == 0:
            break
        f = idx[:, combos]  # [n, nc, j], features ascending
        ok = np.all(present[:, combos], axis=-1)
        key = np.zeros(f.shape[:2], np.int64)
        for i in range(j):
            key += (f[..., i] + 1) * base ** i
        keys.append(np.where(ok, key, -1))
        sizes.append(np.full(len(combos), j, np.int64))
    return np.concatenate(keys, axis=1), np.concatenate(sizes)


class ExpandedInstance(NamedTuple):
    """One example as explicit features: m = Σ margin_coef · w[ids]; an update adds
    y τ step_coef to w[ids].

    Attributes:
        ids: `[K]` weight ids (padding: any id, coefficients 0).
        margin_coef: `[K]` c_|U| (conjunctions) or the feature value (linear).
        step_coef: `[K]` 1 (conjunctions) or the feature value (linear).
        sq_norm: |x| = Σ_f x_f² over the primitive features (the step's divisor).
    """

    ids: Int[Array, "*block K"]
    margin_coef: Float[Array, "*block K"]
    step_coef: Float[Array, "*block K"]
    sq_norm: Float[Array, "*block"]


class ExplicitState(NamedTuple):
    """`w`: `[n_weights + 1]` weights (the last slot, of unseen conjunctions, stays 0);
    `n_updates`: updates so far."""

    w: Float[Array, " D"]
    n_updates: Int[Array, ""]


class ExplicitPA(eqx.Module):
    """PA-I on explicit features (`ExpandedInstance`s), the update rule of `KernelPA`.

    Attributes:
        C: the aggressiveness bound (> 0), an array leaf (vmap over a grid).
        degree: d of the kernel the expansion stands for (for `textbook`; 1 in linear mode).
        textbook: divide the step by K(x, x) = (1 + |x|)^d instead of |x| (static).
        exact: int64 fixed-point weights (see `KernelPA`) (static).
        batched: C is traced: the steps run under `jax.vmap` (a grid of C) or a `jax.jit`
            over C (static). Then a block's
            update writes the whole block's ids (steps of 0 for the examples that did not
            update), every block. Otherwise a block without an update writes nothing, and
            one with updates writes the updated examples' ids one example at a time (not
            for `_pages.BlockPages`, see `page_add`). Under vmap, a loop over the updates
            or a `cond` on them would select every member's weights at each step: all the
            weights, for every block.
    """

    C: Float[Array, ""]
    degree: int = eqx.field(static=True, default=2)
    textbook: bool = eqx.field(static=True, default=False)
    exact: bool = eqx.field(static=True, default=False)
    batched: bool = eqx.field(static=True, default=False)

    def init(self, n_weights: int, dtype: Any = None) -> ExplicitState:
        """Zero weights: int64 counts of 2^-32 when `exact`, else `dtype`."""
        dtype = jnp.result_type(self.C) if dtype is None else dtype
        dtype = jnp.int64 if self.exact else dtype
        if is_traced(self.C):
            return ExplicitState(jnp.zeros((n_weights + 1,), dtype), jnp.zeros((), jnp.int32))
        # built on the host and moved: no program to compile for a new size
        return ExplicitState(to_device(np.zeros((n_weights + 1,), jnp.dtype(dtype))),
                             to_device(np.int32(0)))

    def step(self, state: ExplicitState, x: ExpandedInstance, y: Any, valid: Any = True
             ) -> tuple[ExplicitState, Float[Array, ""], Bool[Array, ""]]:
        """(new state, the margin before the step, updated?); `valid=False`: a padding
        visit (never updates)."""
        w = state.w
        fdt = x.sq_norm.dtype
        m = jnp.sum(x.margin_coef.astype(w.dtype) * w[x.ids])
        upd, delta, m = decide(m, jnp.asarray(y, fdt), x.sq_norm, self.C, self.degree,
                               self.textbook)
        upd = upd & valid
        w = w.at[x.ids].add(jnp.where(upd, delta, 0) * x.step_coef.astype(w.dtype))
        return ExplicitState(w, state.n_updates + upd.astype(jnp.int32)), m, upd

    def update(self, state: ExplicitState, x: ExpandedInstance, y: Any) -> ExplicitState:
        return self.step(state, x, y)[0]

    def step_block(self, state: ExplicitState, xs: ExpandedInstance, ys: Any,
                   rows: Int[Array, "B k"], n_features: int, valid: Any
                   ) -> tuple[ExplicitState, Array, Array]:
        """`block_steps` without the steps."""
        return self.block_steps(state, xs, ys, rows, n_features, valid)[:3]

    def block_steps(self, state: ExplicitState, xs: ExpandedInstance | BlockPages, ys: Any,
                    rows: Int[Array, "B k"], n_features: int, valid: Any,
                    extra: Array | None = None) -> tuple[ExplicitState, Array, Array, Array]:
        """B examples in order, exactly as B `step`s, with work per update, not per pair:
        their margins against the weights at the block start in one batched gather; then,
        while some example not yet visited would update, jump to the first one, update the
        weights at its conjunctions and add Δα k(x_t, x_s) to the margins of the examples
        after it (an update of x_t moves the margin of x_s by Δα (1 + |x_t ∩ x_s|)^d: every
        conjunction of x_t ∩ x_s has its weight). A block where no example would update
        against the block-start weights costs one gather. `rows`: `[B, k]` the examples'
        feature ids (`n_features` or more for absent positions). `xs`' coefficients may be
        one `[K]` row shared by the block, or `xs` their rows' pages (`_pages.BlockPages`:
        live ids only, step coefficients 1); `extra`: `[B]` margin the weights do not hold
        (the rare part, `_rare`), added at the block start. Returns (new state, margins,
        updated flags, steps Δα)."""
        w = state.w
        fdt = xs.sq_norm.dtype
        ys = jnp.asarray(ys, fdt)
        if isinstance(xs, BlockPages):
            m0 = page_margins(w, xs, xs.sq_norm.shape[0])
        else:
            coef = jnp.broadcast_to(xs.margin_coef, xs.ids.shape).astype(w.dtype)
            m0 = jnp.sum(coef * w[xs.ids], axis=1)
        if extra is not None:
            m0 = m0 + extra.astype(w.dtype)
        B = m0.shape[0]
        at = jnp.arange(B)
        present = rows < n_features

        def would_update(m, start):
            upd, _, _ = decide(m, ys, xs.sq_norm, self.C, self.degree, self.textbook)
            return upd & valid & (at >= start)

        def pending(carry):
            m, dalpha, upds, start = carry
            return jnp.any(would_update(m, start))

        def update(carry):
            m, dalpha, upds, start = carry
            t = jnp.argmax(would_update(m, start))
            _, delta, _ = decide(m[t], ys[t], xs.sq_norm[t], self.C, self.degree,
                                 self.textbook)
            shared = jnp.sum((rows[t][None, :, None] == rows[:, None, :])
                             & present[t][None, :, None], axis=(1, 2))
            later = at > t  # earlier margins are final: they were visited before x_t
            m = m + jnp.where(later, delta * kernel_int(shared, self.degree, w.dtype), 0)
            return m, dalpha.at[t].set(delta), upds.at[t].set(True), t + 1

        # the loop carries the block's margins and steps only, never the weights: under
        # jax.vmap a while_loop selects its whole carry at every iteration
        m, dalpha, upds, _ = jax.lax.while_loop(
            pending, update, (m0, jnp.zeros((B,), w.dtype), jnp.zeros((B,), bool),
                              jnp.zeros((), at.dtype)))
        _, _, ms = decide(m, ys, xs.sq_norm, self.C, self.degree, self.textbook)

        def write(w):
            # the last slot (conjunctions not in the table) stays 0 whatever the coefficients
            if isinstance(xs, BlockPages):
                return page_add(w, xs, dalpha)
            step = jnp.broadcast_to(xs.step_coef, xs.ids.shape).astype(w.dtype)
            if self.batched:
                return w.at[xs.ids].add(dalpha[:, None] * step).at[-1].set(0)
            todo = jnp.nonzero(upds, size=upds.shape[0], fill_value=0)[0]

            def one(i, w):
                t = todo[i]
                return w.at[xs.ids[t]].add(dalpha[t] * step[t])

            return jax.lax.fori_loop(0, jnp.sum(upds, dtype=jnp.int32), one, w).at[-1].set(0)

        # most blocks have no update after the first epochs: their scatter is skipped (not
        # under vmap, where the cond would be a select of all the weights, every block)
        w = write(w) if self.batched else jax.lax.cond(jnp.any(upds), write, lambda w: w, w)
        return (ExplicitState(w, state.n_updates + jnp.sum(upds, dtype=jnp.int32)), ms, upds,
                dalpha)


class ConjunctionModel(eqx.Module):
    """f(x) = Σ_{U ⊆ x, |U| ≤ d} c_|U| w_U (conjunction mode) or Σ_f w_f x_f (linear mode).

    The expansion of new inputs runs on the host (NumPy), the sum in JAX.

    Attributes:
        weights: `[*batch, D + 1]` weights; the last is 0 (unseen conjunctions).
        keys: `[D]` sorted int64 keys of the conjunctions (a host array; linear: empty;
            a vmapped fit under x64 stacks copies of it, one per grid point).
        degree: d (static).
        linear: linear mode (static).
        n_features: the training matrix's columns, which the keys are built on (static).
        ids: the feature id of each column (the training matrix's `SparseRows.ids`; None:
            column j is id j), static: new rows are mapped onto the columns by id.
    """

    weights: Float[Array, "*batch D1"]
    keys: np.ndarray
    degree: int = eqx.field(static=True)
    linear: bool = eqx.field(static=True)
    n_features: int = eqx.field(static=True)
    ids: FeatureIds | None = eqx.field(static=True, default=None)

    def expand(self, X: SparseRows) -> ExpandedInstance:
        """X as explicit features of this model (host). A `jax.vmap`ped fit stacks one copy
        of the (identical) keys per grid point; the first is used. Features the model
        never saw are dropped."""
        if not isinstance(X, SparseRows):
            raise InputError(f"X must be a jkern.SparseRows, got {type(X).__name__}")
        X, _ = X.aligned(self.ids, self.n_features)
        keys = np.asarray(self.keys)
        keys = keys.reshape(-1, keys.shape[-1])[0] if keys.ndim > 1 else keys
        return expand(X, keys, degree=self.degree, linear=self.linear,
                      n_features=self.n_features, dtype=self.weights.dtype)

    def decision_function(self, X: SparseRows, *, block: int = 4096
                          ) -> Float[Array, " m *batch"]:
        """The margins of `X`'s rows. One model in conjunction mode: `block` rows per step
        of one jitted call, each row's conjunctions searched in the sorted keys on the
        device (memory per block, not per data set); linear mode or a vmapped batch of
        models: expanded on the host."""
        self = finite_model(self)
        if not self.linear and self.weights.ndim == 1:
            return self._blocked_margins(X, block)
        e = self.expand(X)
        w = self.weights.astype(e.margin_coef.dtype)
        out = jnp.einsum("mk,...mk->...m", e.margin_coef, w[..., e.ids])
        return jnp.moveaxis(out, 0, -1) if out.ndim > 1 else out

    def _blocked_margins(self, X: SparseRows, block: int) -> Float[Array, " m"]:
        if not isinstance(X, SparseRows):
            raise InputError(f"X must be a jkern.SparseRows, got {type(X).__name__}")
        X, _ = X.aligned(self.ids, self.n_features)
        val = np.asarray(X.values)
        if not np.all((val == 0) | (val == 1)):
            raise InputError("the conjunction expansion needs binary features (every value "
                             "1); use mode='kernel' or 'block' for real values")
        m = len(X)
        if m == 0:
            return jnp.zeros((0,), self.weights.dtype)
        F = self.n_features
        idx = np.asarray(X.indices)
        known = (val != 0) & (idx >= 0) & (idx < F)
        width = -(-int(known.sum(axis=1).max(initial=0)) // 4) * 4  # shared programs
        # rows padded to whole blocks and to at least `width` columns (`table_margins` sorts
        # each row's features and enumerates the conjunctions of its first `width`)
        B = max(1, min(block, m))
        idx = np.pad(np.where(known, idx, F), ((0, -m % B), (0, max(0, width - idx.shape[1]))),
                     constant_values=F).reshape(-1, B, max(width, idx.shape[1]))
        # the conjunctions of the lowest ids (the most frequent features where X was
        # renumbered by `frequency_order`, as for opal) are read at arithmetic ids, unsearched
        keys = np.asarray(self.keys)
        if is_traced(self.weights):
            table, src = dense_layout(keys, F, width, self.degree)
            weights = jnp.take(self.weights, to_device(src))
        else:  # (no gather program) and only the conjunctions whose weight is not 0: they
            # alone move a margin, and most of a fit's are 0 (never in an updated example)
            host_w = np.asarray(self.weights)
            live = host_w[:-1] != 0
            if not np.all(live):  # (a fit's model holds only those already: no copies)
                keys, host_w = keys[live], np.append(host_w[:-1][live], host_w[-1:])
            # laid out where each weight goes (no index array), then moved: not shared with
            # JAX, whose last use of them may end on one of its threads, after this call
            # returns (a shared buffer's release there needs Python: at exit, the process
            # once aborted with "terminate called without an active exception")
            table, laid_out = dense_layout(keys, F, width, self.degree, weights=host_w)
            weights = to_device(laid_out)
            del laid_out
        rank = np.arange(F, dtype=np.int32)
        searched = searched_bound(rank, table, F, idx, idx < F)
        out = table_margins(to_device(rank), weights, table, F, to_device(idx, jnp.int32),
                            to_device(idx < F), searched)
        host = host_array(out)  # (cut on the host where it lives there: no program)
        return to_device(host.reshape(-1)[:m]) if host is not None else out.reshape(-1)[:m]

    @property
    def classes(self) -> tuple[int, int]:
        """PA-I is binary: (-1, +1); `predict` gives +1 where the margin is >= 0."""
        return (-1, 1)

    def predict(self, X: SparseRows) -> Int[Array, " m *batch"]:
        """+1 where the margin is >= 0, else -1."""
        return sign_labels(self.decision_function(X))


def conjunction_table(X: SparseRows, degree: int, *, n_common: int | None = None,
                      limit: int | None = None, chunk: int = 1 << 22,
                      n_dense: int = 0) -> np.ndarray | None:
    """The sorted int64 keys of every conjunction (∅ and 1..d features) of `X`'s rows.

    Enumerated `chunk` keys at a time (rows in chunks), so memory follows the table, not
    the data times its conjunctions.

    Args:
        X: the rows (binary).
        degree: the largest conjunction size d.
        n_common: only conjunctions of features below `n_common` (kernel splitting's common
            features, keyed in base n_common + 1); None: every feature (base n_features + 1).
        limit: give up, returning None, once the table holds more than `limit` keys.
        chunk: keys enumerated at a time.
        n_dense: leave out the conjunctions of features below `n_dense` (∅ included): they
            have arithmetic ids (`CommonPart.n_dense`).
    """
    d = X.n_features if n_common is None else n_common
    keys, complete = distinct_keys(X, degree, _base(d, degree), d, limit=limit, chunk=chunk,
                                   n_dense=n_dense)
    return keys if complete else None


def distinct_keys(X: SparseRows, degree: int, base: int, below: int, *,
                  limit: int | None = None, chunk: int = 1 << 22,
                  n_dense: int = 0, shared: bool = False) -> tuple[np.ndarray, bool]:
    """(the sorted distinct keys in `base` of the conjunctions of features below `below`
    of `X`'s rows, complete?). With `limit`, the enumeration stops once more than `limit`
    keys are found, returning those found so far (a subset of the table) and False.
    `shared`: only the keys of two rows or more (a row's keys are distinct; ∅ is kept).

    Where every key is below BITMAP_KEYS the keys found are marked in a byte map (a
    scatter; N = 511 at d = 3), else each chunk's are sorted and merged. `n_dense`: the
    conjunctions whose features are all below it (∅ included) are left out (a key of size
    j is one when below (n_dense + 1) base^(j - 1): its top digit, the largest feature + 1,
    is at most n_dense)."""
    idx, val = np.asarray(X.indices), np.asarray(X.values)
    width = int(np.sum((val != 0) & (idx < below), axis=1).max(initial=0))
    per_row = sum(math.comb(width, j) for j in range(degree + 1))
    step = max(1, chunk // per_row)
    # keys are below this: a key's top digit is its largest feature + 1 <= below
    space = min(base, below + 1) * base ** (degree - 1)
    seen = np.zeros(space, bool) if space <= BITMAP_KEYS and not shared else None
    assert limit is None or not shared
    # shared: every key k is held as 2k + (seen in two rows or more?), the runs of a
    # sorted array of those merged (`_merge_counted`)
    table = np.zeros(0 if n_dense else 1, np.int64) + int(shared)  # ∅, unless left out
    found = _Ranges(_merge_counted if shared else merge_unique, table, even=shared)
    pending = 0
    # merge the chunks' distinct keys now and then (memory), and check the limit then
    merge_at = chunk if limit is None else min(chunk, max(limit // 2, 1))
    on_device = (len(idx) > step  # (a single chunk: not worth a program)
                 and (jax.config.jax_enable_x64  # pyright: ignore[reportAttributeAccessIssue]
                      or base ** degree < 2 ** 31))
    if on_device:  # the program's temporaries are several times its keys: smaller chunks
        step = max(1, step // 8)
        probe, rows = _wanted_rows(idx, val, degree, base, below, n_dense, width)
        totals, size = packed_chunks(probe.searched_counts(rows), step)
    for start in range(0, len(idx), step):
        if on_device:  # the same keys, enumerated by a compiled program
            part_rows = chunk_rows(rows, start, step, probe.n_common)
            keys = np.asarray(_wanted_keys(probe, to_device(part_rows),
                                           size))[:int(totals[start // step])]
            keys = keys.astype(np.int64)
        else:
            keys, sizes = _conjunction_keys((idx[start:start + step],
                                             val[start:start + step]), degree, base, below)
            if n_dense:
                dense_below = np.asarray([1] + [(n_dense + 1) * base ** (j - 1)
                                                for j in range(1, degree + 1)], np.int64)
                keys = keys[keys >= dense_below[sizes]]
            else:
                keys = keys[keys >= 0]
        if seen is not None:
            seen[keys] = True
            pending += len(keys)
            if limit is not None and pending > merge_at:
                pending = 0
                if np.count_nonzero(seen) > limit:
                    return np.flatnonzero(seen), False
            continue
        if shared:
            keys = keys * 2
            part = _merge_counted([keys])
        else:
            part = sorted_unique(keys)
        del keys
        found.add(part)
        pending += len(part)
        last = start + step >= len(idx)
        if pending > merge_at or last or (limit is not None and len(part) > limit):
            found.merge()
            pending = 0
            release_freed_memory()  # (the merge's temporaries: the next chunks' pages)
            if limit is not None and found.size > limit:
                return found.keys(), False
    if seen is not None:
        seen[0] = not n_dense
        table = np.flatnonzero(seen)
        return table, limit is None or len(table) <= limit
    table = found.keys()
    del found
    if shared:
        table = table[(table & 1) == 1] >> 1
    release_freed_memory()  # (the ranges: before the table's slots are built)
    return table, True


RANGES = 16  # `_Ranges`' value ranges


class _Ranges:
    """Sorted distinct keys kept in RANGES value ranges, each merged with its own new keys
    on its own: a merge's temporaries are a range's, not the whole table's (at d = 3 on UD
    the table holds 5.3M keys before the shared ones are kept; merged whole, its build
    raised a fit's peak by ~420 MB). The ranges' bounds are quantiles of the first part
    added (`value_bounds`); `even`: bounds even, so that the two codes 2k and 2k + 1 of a
    key (`_merge_counted`) share a range."""

    def __init__(self, merge: Any, first: np.ndarray, even: bool) -> None:
        self._merge = merge
        self._even = even
        self._bounds: np.ndarray | None = None
        self._tables = [first]
        self._pending: list[list[np.ndarray]] = [[]]

    def add(self, part: np.ndarray) -> None:
        """Adds `part` (sorted), merged at the next `merge`."""
        if self._bounds is None:
            bounds = value_bounds(part, RANGES)
            if self._even:
                bounds = sorted_unique(bounds & ~1)
            self._bounds = bounds
            cut = np.searchsorted(self._tables[0], bounds)
            self._tables = np.split(self._tables[0], cut)
            self._pending = [[] for _ in self._tables]
        cut = np.searchsorted(part, self._bounds)
        for pending, piece in zip(self._pending, np.split(part, cut)):
            if len(piece):
                pending.append(piece)  # (views: `part` is held until the merge)

    def merge(self) -> None:
        """Merges each range's new keys into it."""
        for i, pending in enumerate(self._pending):
            if pending:
                self._tables[i] = self._merge([self._tables[i], *pending])
                pending.clear()

    @property
    def size(self) -> int:
        """The distinct keys merged so far."""
        return sum(len(t) for t in self._tables)

    def keys(self) -> np.ndarray:
        """The merged keys, sorted."""
        return np.concatenate(self._tables)


def _merge_counted(parts: list[np.ndarray]) -> np.ndarray:
    """The distinct keys of `parts` (each 2k + f, f: k is in two rows or more), as 2k + f:
    a stable sort of their concatenation (it merges sorted runs), then per run of one k,
    f = 1 where the run is longer than one (k in two parts, or twice in one) or its last
    (the largest: f = 1 sorts last) has f = 1."""
    s = np.concatenate(parts)
    s.sort(kind="stable")
    if s.size < 2:
        return s
    # a run of one k: neighbours that differ in the flag bit at most
    last = np.empty(s.size, bool)
    last[-1] = True
    diff = s[1:] ^ s[:-1]
    np.greater(diff, 1, out=last[:-1])
    del diff
    ends = np.flatnonzero(last)
    del last
    longer = np.diff(ends, prepend=-1) > 1
    out = s[ends]
    del s
    out |= longer  # (the last of a run is 2k + 1 where any was: it sorts last)
    return out


def _wanted_rows(idx: np.ndarray, val: np.ndarray, degree: int, base: int, below: int,
                 n_dense: int, width: int) -> tuple[CommonPart, np.ndarray]:
    """(a keyless `CommonPart` that enumerates `distinct_keys`' keys, the rows sorted and
    cut to `width` positions, int32, absent positions `base` − 1)."""
    n_common = base - 1
    absent = n_common  # sorts last and is no feature below `below`
    present = (val != 0) & (idx >= 0) & (idx < below)
    f = np.sort(np.where(present, idx, absent).astype(np.int32), axis=1)[:, :max(width, 1)]
    if f.shape[1] < max(width, 1):
        f = np.pad(f, ((0, 0), (0, max(width, 1) - f.shape[1])), constant_values=absent)
    kdt = np.int64 if base ** degree >= 2 ** 31 else np.int32
    probe = CommonPart(to_device(np.zeros(1, kdt)), n_common, max(width, 1), degree,
                       n_dense=n_dense, below=below if below < n_common else 0)
    return probe, f


@stored_filter_jit
def _wanted_keys(probe: CommonPart, rows, size: int):
    """The packed keys of `rows`' conjunctions of ≤ d features below `below` that are not
    dense (`CommonPart.searched_keys`): unsorted, repeated, the chunk's total first."""
    return probe.searched_keys(rows, size)[0]


def largest_feature(keys: np.ndarray, base: int) -> np.ndarray:
    """The largest feature of each key (its top digit − 1; −1 for ∅, key 0)."""
    keys = np.asarray(keys, np.int64)
    top = np.zeros_like(keys)
    power = 1
    while True:  # the digit at `power` is the top one for keys in [power, power * base)
        at = (keys >= power) & (keys // base < power)
        top = np.where(at, keys // power, top)
        if power > np.iinfo(np.int64).max // base or not np.any(keys >= power * base):
            break
        power *= base
    return top - 1


def rebase(keys: np.ndarray, base: int, new_base: int) -> np.ndarray:
    """The same conjunctions keyed in `new_base` (every feature below new_base − 1): a
    sorted array stays sorted."""
    keys = np.asarray(keys, np.int64)
    out = np.zeros_like(keys)
    rest = keys.copy()
    power = 1
    while np.any(rest):
        out += (rest % base) * power
        rest //= base
        power *= new_base
    return out


BITMAP_KEYS = 1 << 27  # distinct_keys marks keys in a byte map up to this many (128 MiB)


def _base(n_features: int, degree: int) -> int:
    base = n_features + 1
    if base ** degree >= 2 ** 62:
        raise InputError(f"{n_features} features at degree {degree} overflow the 64-bit "
                         "conjunction keys; renumber the features (frequency_order) first")
    return base


def expand(X: SparseRows, keys: np.ndarray, *, degree: int, linear: bool = False,
           n_features: int | None = None, dtype: Any = None) -> ExpandedInstance:
    """`X`'s rows as `ExpandedInstance`s over the weights named by `keys` (host).

    Linear mode: the ids are the feature ids themselves (`keys` unused); conjunction mode
    needs binary values and maps conjunctions missing from `keys` to the last weight."""
    dtype = X.values.dtype if dtype is None else dtype
    val = np.asarray(X.values).astype(np.float64)
    sq = np.sum(val * val, axis=1)
    d = X.n_features if n_features is None else n_features
    if linear:
        idx = np.asarray(X.indices)
        known = idx < d  # unseen features: the last weight, coefficient 0
        val = np.where(known, val, 0.0)
        ids = np.where(known, idx, d).astype(np.int32)
        sq = np.sum(val * val, axis=1)
        return ExpandedInstance(to_device(ids), to_device(val, dtype),
                                to_device(val, dtype), to_device(sq, dtype))
    if not np.all((val == 0) | (val == 1)):
        raise InputError("the conjunction expansion needs binary features (every value 1); "
                         "use mode='kernel' or 'block' for real values")
    allkeys, sizes = _conjunction_keys(X, degree, _base(d, degree))
    if len(keys):
        pos = np.minimum(np.searchsorted(keys, allkeys), len(keys) - 1)
        found = (allkeys >= 0) & (keys[pos] == allkeys)
    else:
        pos = np.zeros(allkeys.shape, np.int64)
        found = np.zeros(allkeys.shape, bool)
    ids = np.where(found, pos, len(keys)).astype(np.int32)
    c = np.asarray(conjunction_coefficients(degree), np.float64)[sizes]
    margin_coef = np.where(found, c[None, :], 0.0)
    step_coef = found.astype(np.float64)
    return ExpandedInstance(to_device(ids), to_device(margin_coef, dtype),
                            to_device(step_coef, dtype), to_device(sq, dtype))


def index_rows(e: ExpandedInstance, i: Any) -> ExpandedInstance:
    """Row(s) `i` of a batch of expanded instances."""
    return jax.tree.map(lambda a: a[i], e)
