"""`fit`: PA-I over a file-ordered stream of epochs, in one of six modes, as a `Solution`.

One driver (`fit`: the input checked, the stats and the averaged model built) and one
learner function per way of computing the margins (`_LEARNERS`, at the end of the module).
Modes (all the same PA-I, `_kernel`'s rule; all but `linear` the same model):

- `"kernel"`: pure kernel, one example at a time (`KernelPA.step`);
- `"block"`: exact blocks of `block_size` examples (`KernelPA.step_block`);
- `"splitting"`: kernel splitting, explicit weights for the conjunctions of the N most
  frequent features and an index from the other features to support vectors (`_split`);
- `"slicing"`: kernel slicing, partial margins of frequency-ordered prefixes cached in a
  trie and refreshed with the updates logged since (`_slice`);
- `"explicit"`: linear PA-I on the degree-d conjunction expansion (binary features);
- `"linear"`: opal's linear PA-I on the primitive features, no bias (another model).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._cache import filter_jit
from .._executables import stored_filter_jit
from .._labels import sign_labels
from .._memory import release_freed_memory
from .._solution import RESULTS, Solution
from .._sparse import FeatureIds, SparseRows
from .._validate import (
    aligned_empty,
    concrete,
    finite_model,
    float_dtype,
    host_array,
    is_traced,
    kernel_fits,
    plus_minus_labels,
    positive,
    positive_int,
    shared_on_cpu,
    to_device,
)
from ..errors import InputError
from ._data import is_binary, unique_host_rows, unique_rows
from ._explicit import (
    ConjunctionModel,
    ExpandedInstance,
    ExplicitPA,
    expand,
    index_rows,
)
from ._kernel import SCALE, Instance, KernelPA, KernelState, chunk_margins, decide
from ._pages import RowPages, block_pages, kept_row_ids, row_pages, worth_paging
from ._pke import ExpandedModel, expand_support_vectors
from ._rare import (
    RarePart,
    add_partners,
    private_counts,
    rare_conjunctions,
    rare_features,
    rare_part,
)
from ._slice import (
    CHUNK_VISITS,
    IDS_BYTES,
    dense_seen,
    fit_split,
    keeps_ids,
    kept_ids,
)
from ._split import common_part
from ._table import (
    CommonPart,
    conjunction_coefficients,
    dense_features,
    dense_keys_of,
    n_conjunctions,
)

MODES = ("kernel", "block", "splitting", "slicing", "explicit", "linear")
# `SupportVectorModel.classifier` expands support vectors of at most this many conjunctions
# (their keys and weights, 8 bytes each, are held and sorted: a few hundred MB at the bound)
EXPANSION_BUDGET = 1 << 25


class SupportVectorModel(eqx.Module):
    """f(x) = Σ_i α_i (1 + s_i·x)^d over support vectors s_i (padded index/value rows).

    A `jax.vmap`ped fit gives leading batch axes (then unused slots have α = 0).

    Attributes:
        indices: `[*batch, n_sv, k]` feature ids of the support vectors.
        values: `[*batch, n_sv, k]` their values (padding 0).
        alpha: `[*batch, n_sv]` their weights.
        degree: d (static).
        n_features: the columns of the training matrix (static).
        ids: the feature id of each column (`SparseRows.ids` of the training matrix; None:
            column j is id j), static: new rows are mapped onto the columns by id.
    """

    indices: Int[Array, "*batch n_sv k"]
    values: Float[Array, "*batch n_sv k"]
    alpha: Float[Array, "*batch n_sv"]
    degree: int = eqx.field(static=True)
    n_features: int = eqx.field(static=True)
    ids: FeatureIds | None = eqx.field(static=True, default=None)

    def decision_function(self, X: SparseRows, *, block: int = 64) -> Float[Array, " m *batch"]:
        """The margins of `X`'s rows, `block` rows per batched computation (features the
        model has never seen are ignored: they contribute nothing)."""
        self = finite_model(self)
        X, _ = _checked(X).aligned(self.ids, self.n_features)
        if self.alpha.ndim > 1:
            inner = eqx.filter_vmap(lambda mdl: mdl.decision_function(X, block=block))(self)
            return jnp.moveaxis(inner, 0, -1)
        idx = jnp.asarray(X.indices)
        val = jnp.asarray(X.values, self.alpha.dtype)
        known = idx < self.n_features
        idx, val = jnp.where(known, idx, 0), jnp.where(known, val, 0)
        m = idx.shape[0]
        B = max(1, min(block, m))
        pad = -m % B
        idx = jnp.pad(idx, ((0, pad), (0, 0))).reshape(-1, B, idx.shape[1])
        val = jnp.pad(val, ((0, pad), (0, 0))).reshape(-1, B, val.shape[1])
        return _margins(self, idx, val).reshape(-1)[:m]

    @property
    def classes(self) -> tuple[int, int]:
        """PA-I is binary: (-1, +1); `predict` gives +1 where the margin is >= 0."""
        return (-1, 1)

    def predict(self, X: SparseRows) -> Int[Array, " m *batch"]:
        """+1 where the margin is >= 0, else -1."""
        return sign_labels(self.decision_function(X))

    def classifier(self) -> SupportVectorModel | ExpandedModel:
        """The fastest classifier with this model's exact margins for binary rows: the
        expanded model (`expanded()`) where the support vectors are binary, their
        conjunctions at most `EXPANSION_BUDGET` and the margins exact sums in float64 (α
        multiples of 2^-32, as the exact arithmetic makes them, and Σ|α| (1 + k)^d below
        2^20: the expanded model's margins are then the kernel sum's, bit for bit); else
        this model. One model, concrete (not a vmapped batch, not traced)."""
        if self.alpha.ndim != 1 or is_traced(self.alpha) or is_traced(self.values):
            return self
        alpha, values = np.asarray(self.alpha), np.asarray(self.values)
        if alpha.dtype != np.float64:
            return self
        if not np.all((values == 0) | (values == 1)):
            return self
        scaled = alpha * 2.0 ** 32
        nnz = np.sum(values != 0, axis=1)
        bound = float(np.sum(np.abs(alpha))) * (1.0 + float(nnz.max(initial=0))) ** self.degree
        if not (np.all(scaled == np.round(scaled)) and bound < 2.0 ** 20):
            return self
        widths, vectors = np.unique(nnz, return_counts=True)
        keys = sum(int(m) * math.comb(int(w), j) for w, m in zip(widths, vectors)
                   for j in range(1, self.degree + 1))
        return self.expanded() if keys <= EXPANSION_BUDGET else self

    def expanded(self) -> ExpandedModel:
        """The same classifier as weights of the support vectors' conjunctions (pecco's
        polynomial kernel expansion, `jkern.pa.ExpandedModel`): a margin then costs a
        search per conjunction of x, whatever the number of support vectors. Binary
        support vectors; one model (not a vmapped batch)."""
        if self.alpha.ndim > 1:
            raise InputError("expanded() takes one model; index the vmapped batch first")
        return expand_support_vectors(np.asarray(self.indices), np.asarray(self.values),
                                      np.asarray(self.alpha), self.degree, self.n_features,
                                      ids=self.ids)


def _checked(X: Any) -> SparseRows:
    if not isinstance(X, SparseRows):
        raise InputError(f"X must be a jkern.SparseRows (read_sparse gives one), got "
                         f"{type(X).__name__}")
    return X


@filter_jit
def _margins(model: SupportVectorModel, idx, val):
    cols = jnp.arange(idx.shape[1])[:, None]

    def one(args):
        i, v = args
        dense = jnp.zeros((model.n_features, i.shape[0]), val.dtype).at[i, cols].add(v)
        return chunk_margins(model.indices, model.values, model.alpha, model.alpha.shape[0],
                             dense, model.degree)

    return jax.lax.map(one, (idx, val))


FILE_ORDER_VISITS = 2**31  # visits in file order below it: the epochs compute them (int32)


def _stream(orders: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """The positions visited (`orders`, `[epochs, n]`, epoch after epoch) padded to whole
    blocks, and the mask; aligned for `shared_on_cpu` (JAX reads them in place)."""
    visits = orders.size
    total = visits + (-visits % block)
    order = aligned_empty((total,), np.int32)
    order[:visits].reshape(orders.shape)[...] = orders  # (no flat copy of a broadcast view)
    order[visits:] = 0
    mask = aligned_empty((total,), bool)
    mask[:visits] = True
    mask[visits:] = False
    return order.reshape(-1, block), mask.reshape(-1, block)


@stored_filter_jit
def _run_kernel(learner: KernelPA, state: KernelState, data: Instance, y, order, mask,
                record: bool):
    blocked = order.shape[1] > 1

    def visit(state, t):
        if blocked:
            pos, valid = order[t], mask[t]
            xs = jax.tree.map(lambda a: a[pos], data)
            state, m, upd = learner.step_block(state, xs, y[pos], valid)
        else:
            pos = order[t, 0]
            x = jax.tree.map(lambda a: a[pos], data)
            state, m, upd = learner.step(state, x, y[pos])
            m, upd = m[None], upd[None]
        return state, (m if record else None, upd)

    state, (ms, upds) = jax.lax.scan(visit, state, jnp.arange(order.shape[0]))
    return state, ms, upds


@stored_filter_jit
def _run_explicit(learner: ExplicitPA, state, data, y, order, record: bool):
    def visit(state, pos):
        state, m, upd = learner.step(state, index_rows(data, pos), y[pos])
        return state, (m if record else None, upd)

    state, (ms, upds) = jax.lax.scan(visit, state, order[:, 0])
    return state, ms, upds


@stored_filter_jit(donate=(2,))  # (the state's weights: held once, not twice)
def _run_conjunctions(learner: ExplicitPA, common: CommonPart, state, idx, sq, y, order,
                      mask, record: bool, kept_ids, block: int, rare: RarePart | None = None,
                      pages: RowPages | None = None, in_file_order: tuple[int, int] | None = None,
                      row_ids: Array | None = None):
    """Linear PA-I on the conjunction expansion without materializing it: per chunk of
    visits (`order`, `[chunks, size]`), the weight ids of its examples (the searched ones
    from `kept_ids`, `KeptIds`, when every example's were searched once; else in one
    batched search), then
    blocks of `block` visits (`ExplicitPA.step_block`). With `rare` (`_rare`), the
    conjunctions of rare features are not weights: each example's rare margin r = P α is
    kept and added to at each update; returns (state, margins, updated, α per example)
    then, α `[n]` (the rare conjunctions' weights come from it). With `pages`
    (`_pages.RowPages`), each block gathers its rows' pages: no ids computed, no padding.
    With `row_ids` (`_pages.kept_row_ids`, `[n, K]`), each chunk gathers its rows' ids.
    `in_file_order` (visits, size), static: `order` and `mask` are None and the visits are the
    examples in file order, epoch after epoch, `size` a chunk (`_stream`'s, computed here: no
    `[visits]` stream held)."""
    # the coefficients are per position (∅, singles, pairs, ...), the same for every
    # example: the sink id D (a conjunction not in the table) holds weight 0
    coef = common.coefficients(jnp.zeros((common.n_ids,), jnp.int32), sq.dtype)
    ones = jnp.ones((common.n_ids,), sq.dtype)
    n = idx.shape[0]

    by_size = jnp.asarray(conjunction_coefficients(common.degree), sq.dtype)

    def chunk(carry, args):
        if in_file_order is None:
            pos, valid = args
        else:  # (chunk c: visits c·size, c·size + 1, ...; examples t mod n)
            visits, size = in_file_order
            t = args * size + jnp.arange(size, dtype=jnp.int32)
            pos, valid = jnp.where(t < visits, t % n, 0), t < visits
        if row_ids is not None:
            ids = row_ids[pos]
        elif pages is None:
            rows = idx[pos]
            ids = (common.ids(rows) if kept_ids is None
                   else common.ids_from(rows, kept_ids, pos))
        pos, valid = pos.reshape(-1, block), valid.reshape(-1, block)
        if pages is None:
            ids = ids.reshape(pos.shape + ids.shape[1:])

        def visit(carry, t):
            state, r, alpha = carry
            x = (ExpandedInstance(ids[t], coef, ones, sq[pos[t]]) if pages is None
                 else block_pages(pages, pos[t], valid[t], by_size, sq[pos[t]]))
            extra = None if rare is None else r[pos[t]]
            state, m, upd, dalpha = learner.block_steps(state, x, y[pos[t]], idx[pos[t]],
                                                        common.n_common, valid[t], extra)
            if rare is not None:
                part = rare
                r, alpha = jax.lax.cond(
                    jnp.any(upd),
                    lambda ra: (add_partners(ra[0], part, pos[t], dalpha, upd),
                                ra[1].at[pos[t]].add(dalpha)),
                    lambda ra: ra, (r, alpha))
            return (state, r, alpha), (m if record else None, upd)

        return jax.lax.scan(visit, carry, jnp.arange(pos.shape[0]))

    size = 1 if rare is None else n + 1
    zeros = jnp.zeros((size,), state.w.dtype)
    if in_file_order is None:
        chunks = (order, mask)
    else:
        visits, size = in_file_order
        chunks = jnp.arange(-(-visits // size), dtype=jnp.int32)
    (state, _, alpha), (ms, upds) = jax.lax.scan(chunk, (state, zeros, zeros), chunks)
    if rare is None:
        return state, ms, upds
    return state, ms, upds, alpha[:n]


def visit_orders(n: int, epochs: int, shuffle: bool, key: Any) -> np.ndarray:
    """`[epochs, n]` the examples visited in each epoch: file order, or (`shuffle`) a
    permutation per epoch, `jax.random.permutation(fold_in(key, epoch), n)`."""
    if not shuffle:  # (one row, read-only, seen `epochs` times: no [epochs, n] array held)
        return np.broadcast_to(np.arange(n, dtype=np.int32), (epochs, n))
    if key is None:
        raise InputError("shuffle=True needs key= (a jax.random key): the visiting order "
                         "is drawn from it")
    if is_traced(key):
        raise InputError("the shuffling key must be concrete (the order is built on the "
                         "host); vmap over C, not over keys")
    try:
        return np.stack([np.asarray(jax.random.permutation(jax.random.fold_in(key, e), n))
                         for e in range(epochs)]).astype(np.int32)
    except (TypeError, ValueError) as e:
        raise InputError(f"key must be a jax.random key, got {key!r}") from e


def averaged_steps(ms: Array, upds: Array, orders: Array, y: Array, sq_norm: Array, C: Any,
                   degree: int, textbook: bool, exact: bool, dtype: Any) -> Array:
    """`[n]`: what each example adds to the averaged model (1/T) Σ_t model_t, T visits:
    the sum over its visits v that updated of Δα_v (T − v) / T (the update of visit v is in
    the T − v models after it). Δα_v comes from the recorded margin through the training's
    own rule (`decide`), so it is the step training took (in exact mode bit for bit)."""
    m, upd, ex = ms.reshape(-1), upds.reshape(-1), orders.reshape(-1)
    T = m.shape[0]
    if exact:  # the recorded margin is the exact count / 2^32
        _, da, _ = decide(jnp.round(m.astype(jnp.float64) * SCALE).astype(jnp.int64), y[ex],
                          sq_norm[ex], C, degree, textbook)
        da = da.astype(dtype) / SCALE
    else:
        _, da, _ = decide(m.astype(dtype), y[ex], sq_norm[ex], C, degree, textbook)
    share = (T - jnp.arange(T, dtype=dtype)) / T
    return jax.ops.segment_sum(jnp.where(upd, da * share, 0), ex, num_segments=y.shape[0])


def fit(X: SparseRows, y: Any, *, degree: int = 2, C: Any = 1.0, epochs: int = 10,
        mode: str = "block", textbook: bool = False, capacity: int | None = None,
        block_size: int = 32, record: bool = False, exact: bool | None = None,
        dtype: Any = None, throw: bool = False, n_common: int | None = None,
        memory_budget: int = 32 * 2**20, average: bool = False, shuffle: bool = False,
        key: Any) -> Solution[Any]:
    """Online PA-I with the polynomial kernel (1 + s·x)^d, opal's rule (`jkern.pa.KernelPA`).

    Visits the examples in file order (or, `shuffle`, a new permutation each epoch),
    `epochs` times; the model is the last one (or, `average`, the average of the models
    after every visit).

    Args:
        X: the training vectors (a `SparseRows`; for opal's kernel-mode feature order,
            renumber with `frequency_order` first: the model does not depend on it).
        y: ±1 labels.
        degree: d >= 1.
        C: the aggressiveness bound (> 0; may be traced: `jax.vmap` over a grid of C).
        epochs: passes over the data.
        mode: `"kernel"` (pure kernel), `"block"` (exact blocks), `"splitting"` (kernel
            splitting), `"slicing"` (kernel slicing), `"explicit"` (linear PA-I on the
            conjunction expansion) or `"linear"` (opal's linear mode on the primitive
            features: a different model, no bias). Splitting, slicing and explicit need
            binary features; splitting and slicing run on the host's frequency renumbering
            (the returned model uses X's ids) and cannot be vmapped.
        textbook: step by (1 − y·m) / K(x, x) instead of opal's (1 − y·m) / |x|.
        capacity: support-vector slots of the kernel modes; None (default): the number of
            distinct training vectors, which always suffices. A fit that runs out raises
            `InputError` (or, traced, returns `RESULTS.capacity_exceeded`).
        block_size: examples per block in `"block"`, `"splitting"`, `"slicing"` and
            `"explicit"` modes
            (margins against the model at the block start in one batch, then in-block
            corrections).
        record: keep every visit's margin in `stats["margins"]`.
        exact: fixed-point weights (int64 counts of 2^-32) and integer kernel values, so
            every mode sums the same integers and gives bit for bit the same updates
            (binary features, float64). None (default): exact when the features are
            binary and the dtype is float64. Float arithmetic (`exact=False`) drifts
            between modes: opal's large steps amplify rounding differences (x10 every few
            hundred updates), so long runs of different modes part ways.
        dtype: computation dtype (default: X's values' floating dtype).
        throw: raise unless the result is successful (`Solution.check`).
        n_common: splitting and slicing: N, the most frequent features whose conjunctions
            get explicit weights (None: opal's rule, the largest 2^i - 1 whose conjunction
            table fits `memory_budget`). Explicit: the features at or above N reach the
            margins through the training examples that share one, not as conjunction
            weights (None: every feature at d = 2 where their pairs are at most 2^24 slots
            and the rows hold at most half of them, `_every_feature_held`; else the
            smallest N with at most 2^22 such sharings, `_rare`; ignored under a traced C).
            The model does not depend on it.
        memory_budget: bytes for the common-conjunction table when `n_common` is None
            (opal's default, 32 MiB; 16 bytes a conjunction).
        average: averaged PA-I: the returned model is (1/T) Σ_t model_t over the T visits
            (the updates, and the stats, are those of plain PA-I; opal: off). Its weights
            are floats, not multiples of 2^-32.
        shuffle: visit a new random permutation of the examples each epoch (opal: file
            order); needs `key`.
        key: PRNG key of the `shuffle` permutations (keyword-only, no default: the learner
            can draw). File order (`shuffle=False`, opal's) draws nothing: pass `key=None`
            (a key given there is unused).

    Returns:
        A `Solution` with a `SupportVectorModel` (kernel modes) or a `ConjunctionModel`
        (explicit, linear) and stats: `updates` (`[epochs]` updates per epoch),
        `updated` (`[epochs, n]` whether each visit updated, in visiting order), `order`
        (`[epochs, n]` the example of each visit), `support_vectors` (distinct vectors
        updated at least once), `margins` (`[epochs, n]`, with `record`), and
        for splitting and slicing `n_common` (N) and `walked` (index entries visited: the
        kernel part's work).

    >>> import jax.numpy as jnp
    >>> X = SparseRows.from_rows([{0: 1, 1: 1}, {0: 1}, {1: 1, 2: 1}, {2: 1}])
    >>> sol = fit(X, [1, 1, -1, -1], degree=2, epochs=3, key=None)
    >>> sol.model.predict(X).tolist(), sol.stats["updates"].tolist()
    ([1, 1, -1, -1], [2, 1, 0])
    """
    X = _checked(X)
    if mode not in MODES:
        raise InputError(f"mode must be one of {MODES}, got {mode!r}")
    degree = positive_int("degree", degree)
    epochs = positive_int("epochs", epochs)
    block_size = positive_int("block_size", block_size)
    n = len(X)
    if n < 1:
        raise InputError("X has no rows")
    # a block past every visit holds only padding (the model does not depend on the size):
    # its arrays follow the data, not the number asked for (10**9 once meant 16 GB)
    block_size = min(block_size, n * epochs)
    if is_traced(X.indices) or is_traced(X.values):
        raise InputError("fit needs concrete X (the vector ids are computed on the host); "
                         "vmap over C, not over the data")
    dt = float_dtype(dtype, X.values)
    # explicit mode reads which entries are nonzero only (its features are binary): the
    # values as given, not a copy in `dt`
    X = X if mode == "explicit" else X.astype(dt)
    if not np.all(np.isfinite(np.asarray(X.values))):
        raise InputError("X holds NaN or inf values")
    # Feature ids are labels: when most ids are unused (past a slack of 4096 columns), only
    # the columns in use, so memory and the model follow the distinct features, not the
    # largest id (the model keeps X.ids to map new rows).
    X = X.compact(sparse=True)
    # Finite values whose squares overflow: k(x, x) = (1 + |x|^2)^d (x·x in linear mode) is
    # inf, margins become inf or NaN and steps 0, differently in every mode. Every kernel
    # value between rows is at most the largest k(x, x) (Cauchy-Schwarz): refuse those rows.
    kernel_fits("X", X.values,
                (lambda sq: sq) if mode == "linear" else (lambda sq: (1 + sq) ** degree),
                "the linear kernel x·y" if mode == "linear"
                else f"the polynomial kernel (x·y + 1)^{degree}",
                label=lambda i, j: int(X.column_ids(np.asarray(X.indices)[i, j])))
    y = plus_minus_labels("y", y, n, dt)
    C = positive("C", C, dt)
    orders = visit_orders(n, epochs, shuffle, key)
    keep_margins = record
    record = record or average  # the averaged model is rebuilt from the margins
    # the distinct vectors: the kernel modes' support-vector slots need them before the fit;
    # the explicit and linear modes only count the support vectors, afterwards, among the
    # examples that updated (a fraction of the rows)
    uids, n_vectors = (None, None) if mode in ("explicit", "linear") else unique_rows(X)
    f64 = jnp.dtype(dt) == jnp.dtype(jnp.float64)
    binary = is_binary(X)
    if exact is None:
        exact = binary and f64
    elif exact and not (binary and f64):
        raise InputError("exact=True needs binary features (every value 1) and float64 "
                         "(jax.config.update('jax_enable_x64', True)); pass exact=False")

    if mode in ("splitting", "slicing", "explicit") and not binary:
        raise InputError(f"mode={mode!r} needs binary features (every value 1); use "
                         "mode='kernel' or 'block' for real values")
    problem = _Problem(X, y, C, degree, epochs, textbook, exact, dt, block_size, record,
                       orders, shuffle, uids, n_vectors)
    if n_common is not None and (isinstance(n_common, bool) or not isinstance(
            n_common, numbers.Integral) or n_common < 0):
        raise InputError(f"n_common must be None or an int >= 0, got {n_common!r}")
    release_freed_memory()  # (the checks' temporaries: see `_memory`)
    run = _LEARNERS[mode](problem, mode=mode, capacity=capacity, n_common=n_common,
                          memory_budget=memory_budget)
    model, ms, upds, code = run.model, run.margins, run.updated, run.code

    visits = n * epochs
    host_upds = host_array(upds)
    if host_upds is not None:  # the counts on the host: no programs to compile
        upds_np = host_upds.reshape(-1)[:visits].reshape(epochs, n)
        if uids is None:
            ex = np.unique(orders[upds_np])
            n_sv = unique_host_rows(np.asarray(X.indices)[ex], np.asarray(X.values)[ex])[1]
        else:
            assert n_vectors is not None
            touched_np = np.zeros((n_vectors,), bool)
            touched_np[uids[orders[upds_np]]] = True
            n_sv = int(touched_np.sum())
        upds, visited = to_device(upds_np), to_device(orders)
        updates = to_device(upds_np.sum(axis=1, dtype=np.int32))
        support_vectors = to_device(np.int32(n_sv))
    else:
        if uids is None:
            uids, n_vectors = unique_rows(X)
        uid_of = to_device(uids)
        upds = upds.reshape(-1)[:visits].reshape(epochs, n)
        visited = to_device(orders)
        touched = jnp.zeros((n_vectors,), bool).at[uid_of[visited]].max(upds)
        updates = jnp.sum(upds, axis=1, dtype=jnp.int32)
        support_vectors = jnp.sum(touched, dtype=jnp.int32)
    stats: dict[str, Any] = {
        "updates": updates,
        "updated": upds,
        "order": visited,
        "support_vectors": support_vectors,
    }
    if ms is not None:
        ms = ms.reshape(-1)[:visits].reshape(epochs, n)
        if keep_margins:
            stats["margins"] = ms
    if average:
        assert ms is not None
        linear = mode == "linear"
        sq = jnp.sum(X.values * X.values, axis=1).astype(dt)
        share = averaged_steps(ms, upds, visited, y, sq, C, 1 if linear else degree,
                               textbook and not linear, exact, dt)
        if isinstance(model, SupportVectorModel):
            # slot -1 (never updated, so its share is 0) is dropped
            assert run.slots is not None
            alpha = jax.ops.segment_sum(share, run.slots[to_device(uids)],
                                        num_segments=run.n_slots)
            model = eqx.tree_at(lambda mdl: mdl.alpha, model, alpha[:model.alpha.shape[-1]])
        else:
            rows = (np.arange(n) if is_traced(share)
                    else np.flatnonzero(np.asarray(share) != 0))
            e = expand(X.rows(rows), np.asarray(model.keys), degree=model.degree,
                       linear=linear, n_features=X.n_features, dtype=dt)
            weights = jnp.zeros_like(model.weights).at[e.ids].add(
                share[rows][:, None] * e.step_coef)
            model = eqx.tree_at(lambda mdl: mdl.weights, model, weights)
    stats.update(run.stats)
    return Solution(model, code.astype(jnp.int32), stats).check(throw)


# --------------------------------------------------------------------------- the learners
# One function per way of computing the margins, behind `fit`'s one driver (which checks the
# input and builds the stats and the averaged model): each trains on a `_Problem` and
# returns a `_Run`.


class _Problem(NamedTuple):
    """A checked training problem: rows (compact ids), ±1 labels, C, the visiting orders
    (`[epochs, n]`) and the vector ids of the rows (`unique_rows`)."""

    X: SparseRows
    y: Array
    C: Array
    degree: int
    epochs: int
    textbook: bool
    exact: bool
    dtype: Any
    block: int
    record: bool
    orders: np.ndarray
    shuffle: bool
    uids: Any  # np.ndarray: the kernel modes' (None: explicit and linear modes)
    n_vectors: Any  # int, or None where `uids` is


class _Run(NamedTuple):
    """What a learner returns: its model, every visit's margin (with `record`) and update
    flag (flat, in visiting order, padding after), the result code, the slot of each
    vector id and the number of slots (support-vector modes: the averaged model's), and
    its own stats."""

    model: Any
    margins: Array | None
    updated: Array
    code: Array
    slots: Array | None = None
    n_slots: int = 0
    stats: dict[str, Any] = {}


def _capacity_error(capacity: int, n_vectors: int) -> InputError:
    return InputError(f"capacity={capacity} support vectors is too small for this data: "
                      "pass a larger capacity, or None (the number of distinct training "
                      f"vectors, {n_vectors}, always suffices)")


def _fit_split(p: _Problem, *, mode: str, capacity: int | None, n_common: int | None,
               memory_budget: int) -> _Run:
    """Kernel splitting or slicing (`_split`, `_slice`), on the host's frequency
    renumbering; the model in X's ids."""
    if is_traced(p.C):
        raise InputError(f"mode={mode!r} sizes its index on the host between epochs: "
                         "it cannot be vmapped or jitted over C; use mode='block'")
    capacity = positive_int("capacity", p.n_vectors if capacity is None else capacity)
    state, ms, upds, original, N = fit_split(
        p.X, p.y, p.uids, p.n_vectors, C=p.C, degree=p.degree, epochs=p.epochs,
        textbook=p.textbook, exact=p.exact, capacity=capacity, slicing=mode == "slicing",
        n_common=n_common, memory_budget=positive_int("memory_budget", memory_budget),
        record=p.record, dtype=p.dtype, block=p.block,
        orders=p.orders if p.shuffle else None)
    if bool(state.overflow):
        raise _capacity_error(capacity, p.n_vectors)
    k = int(state.n_sv)
    alpha = state.alpha[:k].astype(p.dtype) / SCALE if p.exact else state.alpha[:k]
    sv = np.asarray(state.sv_indices[:k])
    real = sv < len(original)
    model = SupportVectorModel(
        jnp.asarray(np.where(real, original[np.minimum(sv, len(original) - 1)], 0)),
        jnp.asarray(real.astype(np.float64), p.dtype), alpha, p.degree, p.X.n_features,
        p.X.ids)
    code = jnp.where(jnp.all(jnp.isfinite(alpha)), RESULTS.successful, RESULTS.nonfinite)
    return _Run(model, ms, upds, code, state.slot, state.alpha.shape[0],
                {"n_common": N, "walked": state.walked})


def _fit_kernel(p: _Problem, *, mode: str, capacity: int | None, **unused: Any) -> _Run:
    """The pure kernel (one example at a time) or exact blocks (`KernelPA`); traceable in
    C (vmap over a grid)."""
    capacity = positive_int("capacity", p.n_vectors if capacity is None else capacity)
    B = p.block if mode == "block" else 1
    X = p.X
    learner = KernelPA(p.C, degree=p.degree, textbook=p.textbook, exact=p.exact)
    state = learner.init(capacity=capacity, width=X.indices.shape[1],
                         n_features=X.n_features, n_vectors=p.n_vectors, block=B,
                         dtype=p.dtype)
    data = Instance(X.indices.astype(jnp.int32), X.values, to_device(p.uids))
    order, mask = _stream(p.orders, B)
    state, ms, upds = _run_kernel(learner, state, data, p.y, to_device(order),
                                  to_device(mask), p.record)
    alpha = state.alpha.astype(p.dtype) / SCALE if p.exact else state.alpha
    finite = jnp.all(jnp.isfinite(alpha))
    code = jnp.where(state.overflow, RESULTS.capacity_exceeded,
                     jnp.where(finite, RESULTS.successful, RESULTS.nonfinite))
    model = SupportVectorModel(state.sv_indices, state.sv_values, alpha, p.degree,
                               X.n_features, X.ids)
    n_sv = concrete(state.n_sv)
    overflow = concrete(state.overflow)
    if overflow is not None and bool(overflow):
        raise _capacity_error(capacity, p.n_vectors)
    if n_sv is not None:  # concrete: the model keeps the slots in use
        k = int(n_sv)
        model = SupportVectorModel(state.sv_indices[:k], state.sv_values[:k], alpha[:k],
                                   p.degree, X.n_features, X.ids)
    return _Run(model, ms, upds, code, state.slot, state.alpha.shape[0])


def _fit_explicit(p: _Problem, *, mode: str, n_common: int | None = None, **unused: Any
                  ) -> _Run:
    """Linear PA-I on the conjunction expansion (`explicit`, binary features, exact blocks
    over every example's conjunction ids) or on the primitive features (`linear`)."""
    X = p.X
    linear = mode == "linear"
    learner = ExplicitPA(p.C, degree=1 if linear else p.degree,
                         textbook=p.textbook and not linear, exact=p.exact,
                         batched=is_traced(p.C))
    if linear:
        keys = np.zeros(0, np.int64)
        state = learner.init(X.n_features, dtype=p.dtype)
        data = expand(X, keys, degree=p.degree, linear=True, dtype=p.dtype)
        order, _ = _stream(p.orders, 1)
        state, ms, upds = _run_explicit(learner, state, data, p.y, to_device(order),
                                        p.record)
        w = state.w
    else:
        F = X.n_features
        idx, idx_j, widths = _sorted_rows(X)
        sq = to_device(widths, p.dtype)
        n = len(idx)
        size = -(-min(CHUNK_VISITS, n * p.epochs) // p.block) * p.block
        # the examples in file order: the epochs compute their visits (no stream held)
        in_file_order = ((n * p.epochs, size) if not p.shuffle
                         and n * p.epochs + size < FILE_ORDER_VISITS else None)
        # the rare features' conjunctions go through the examples that share one (`_rare`)
        # where C is concrete: their keys are then known, the support vectors' (a vmapped
        # grid of C keeps every conjunction as a weight: one key set for the grid)
        if is_traced(p.C) or p.degree < 2:
            N = F
        elif n_common is not None:
            N = min(F, int(n_common))
        else:
            N = rare_features(idx, idx < F, F, dense_features(F, p.degree))
        # the conjunctions of one example only go through it, as the rare ones (`_rare`),
        # where C is concrete (their weights are then known) and every id can be kept
        private = not is_traced(p.C) and keeps_ids(n, p.epochs)
        # every feature dense where its slots are few enough to count and the rows hold
        # at most DENSE_HELD_SHARE of them (no table, no rare part), else the budget's N
        every = (_every_feature_held(X, idx_j, p.degree) if N < F and n_common is None
                 and not is_traced(p.C) else None)
        if every is not None:
            common, N = every, F
        else:
            common = common_part(X, p.degree, F, below=N, shared=private)
            if not is_traced(p.C):
                common = _held_dense(common, idx_j)
        # the freed pages of the phases whose temporaries are largest (the table's build,
        # the rare pairs, the epochs' ids) go back to the system (`_memory`): each costs
        # first touches later, so not after every phase
        release_freed_memory()
        kept = kept_ids(common, idx_j, p.epochs)
        if private and kept is None:  # (the ids too many to keep: every conjunction a key)
            private = False
            common = _held_dense(common_part(X, p.degree, F, below=N), idx_j)
        own = private_counts(common, kept, idx) if private and kept is not None else None
        if kept is not None:  # every id is kept: the epochs never search the table
            common = common.unsearched()
        pages = None
        if kept is not None:
            stream = _stream(p.orders, size)  # (once for both; dropped before the rare part)
            if worth_paging(common, idx, *stream, p.block):
                # rows narrower than the common width: their live ids packed, once for the
                # epochs
                pages = row_pages(common, kept, idx, *stream, p.block, IDS_BYTES)
                if pages is not None:
                    kept = None
            del stream
        # where pages are not used, every row's ids computed once, when they fit
        row_ids = (kept_row_ids(common, kept, idx) if kept is not None and pages is None
                   else None)
        if row_ids is not None:
            kept = None
        rare = rare_part(idx, F, N, p.degree, own) if N < F or own is not None else None
        release_freed_memory()  # (before the epochs' weights and program)
        state = learner.init(common.size, dtype=p.dtype)
        order = mask = None
        if in_file_order is None:
            order, mask = map(shared_on_cpu, _stream(p.orders, size))
        out = _run_conjunctions(learner, common, state, idx_j, sq, p.y, order, mask, p.record,
                                kept, p.block, rare, pages, in_file_order, row_ids)
        del order, mask
        del kept, pages, row_ids  # (the ids are the largest array of a fit)
        release_freed_memory()
        state, ms, upds = out[:3]
        alpha = None if rare is None else np.asarray(out[3])
        del rare, out

        def rare_weights() -> tuple[np.ndarray, np.ndarray]:
            # the rare and private conjunctions' weights, from α
            assert alpha is not None
            return rare_conjunctions(
                idx, alpha, F, common.n_dense if private else N, p.degree,
                np.asarray(common.keys, np.int64) if private else None)

        # the fit's weights (in its layout) handed over, freed once merged: the model's
        # are `w`
        fit_w = [state.w]
        del state
        keys, w = _model_weights(common, lambda: dense_seen(common, idx_j), fit_w,
                                 None if alpha is None else rare_weights)
    host_w = host_array(w)
    if host_w is not None:  # on the host: no programs to compile
        if p.exact:  # (in place of the counts: held once)
            scaled = aligned_empty(host_w.shape, p.dtype)
            np.divide(host_w, SCALE, out=scaled, casting="unsafe")
            host_w = scaled
            w = shared_on_cpu(scaled)
        code = to_device(np.int32(RESULTS.successful if np.all(np.isfinite(host_w))
                                  else RESULTS.nonfinite))
    else:
        w = w.astype(p.dtype) / SCALE if p.exact else w
        code = jnp.where(jnp.all(jnp.isfinite(w)), RESULTS.successful, RESULTS.nonfinite)
    model = ConjunctionModel(w, keys, degree=1 if linear else p.degree, linear=linear,
                             n_features=X.n_features, ids=X.ids)
    return _Run(model, ms, upds, code, stats={} if linear else {"n_common": N})


DENSE_HELD_SHARE = 0.5  # the most of the dense slots held for weights to be kept for those only
# ... and the largest degree: a dense id's rank costs two reads, and a row has C(w, d) of them
# (UD at d = 3: the epochs 5.98-6.41 CPU s against 5.48-5.60, and a 0.39 s pass, for 26 MB
# less: docs/results.md, "Issue 34, thirteenth steps")
DENSE_HELD_DEGREE = 2


# ... and, at those degrees, the most dense slots for every feature to be dense (the slots
# then cost a bit and a share of a rank each, and one byte while `dense_seen` counts them:
# 16 MB at most): conj-2's 5,000 features at d = 2 (12.5M slots), not UD's 19,451 (189M)
DENSE_HELD_SLOTS = 1 << 24


def _every_feature_held(X: SparseRows, idx: Array, degree: int) -> CommonPart | None:
    """The common part with every feature dense and weights for the slots that the training
    rows `idx` hold only (`CommonPart.compacted`), where the degree is at most
    DENSE_HELD_DEGREE, the slots at most DENSE_HELD_SLOTS and the held ones at most
    DENSE_HELD_SHARE of them; else None. Then no conjunction is searched and no feature is
    rare (`_rare`): on conj-2 at d = 2 the fit took 0.61–0.69 CPU s against 0.68–0.89 with
    the rare part, and its process peaked lower (docs/results.md, "Issue 34, fourteenth
    steps")."""
    F = X.n_features
    if degree > DENSE_HELD_DEGREE or n_conjunctions(F, degree) > DENSE_HELD_SLOTS:
        return None
    every = _held_dense(common_part(X, degree, F, n_dense=F), idx)
    return every if every.dense_bits is not None else None  # (compacted, or too many held)


def _held_dense(common: CommonPart, idx: Array) -> CommonPart:
    """`common` with weights for the dense slots that the training rows `idx` hold only
    (`CommonPart.compacted`), where those are at most DENSE_HELD_SHARE of them. No update
    writes another slot's weight (no training row holds its conjunction), so the model is
    the same; on UD at d = 2 the fit's dense weights are 0.41M instead of 4.19M (3.1
    against 32 MB), for one pass over the rows (`dense_seen`, ~0.05–0.08 CPU s there) and
    two more reads per dense id in the epochs. Degree DENSE_HELD_DEGREE at most."""
    if not common.n_dense or common.degree > DENSE_HELD_DEGREE:
        return common
    held = dense_seen(common, idx)
    if held.sum() > DENSE_HELD_SHARE * len(held):
        return common
    return common.compacted(held)


def _sorted_rows(X: SparseRows) -> tuple[np.ndarray, Array, np.ndarray]:
    """The rows' feature ids ascending, padding (values 0) as `n_features`, on the host and
    as a JAX array of the same memory, and `[n]` each row's features (its nonzero values).
    Rows already so (every value nonzero, ids ascending: a renumbered data set's full rows)
    are `X.indices` itself, no copy."""
    F = X.n_features
    indices, val = np.asarray(X.indices), np.asarray(X.values)
    present = val != 0
    widths = np.sum(present, axis=1)
    if (isinstance(X.indices, jax.Array) and X.indices.dtype == jnp.int32
            and not is_traced(X.indices) and np.all(widths == present.shape[1])
            and np.all(indices[:, 1:] > indices[:, :-1])):
        return indices, X.indices, widths
    idx = aligned_empty(val.shape, np.int32)
    np.copyto(idx, np.where(present, indices, F), casting="unsafe")
    idx.sort(axis=1)
    return idx, shared_on_cpu(idx), widths


def _model_weights(common: CommonPart, seen: Callable[[], np.ndarray], fit_w: list[Array],
                   rare: Callable[[], tuple[np.ndarray, Any]] | None = None
                   ) -> tuple[np.ndarray, Array]:
    """(sorted keys, weights and the sink's 0 last) of the conjunction model from a fit's
    weights in `common`'s layout (`fit_w`: a list holding them, emptied here so that they
    are freed once read, where the caller keeps no other reference; at d = 3 on UD they
    are 52 MB): the table's conjunctions, the dense ones, and the
    (keys, weights) `rare()` returns (`_rare.rare_conjunctions`; computed when merged, and
    held by no caller), when given; the three key sets are
    disjoint. Concrete weights: only the conjunctions whose weight is not 0 (no others move
    a margin; most of a fit's never were in an updated example), merged on the host (no
    program to compile). Traced weights (one grid of C, one key set): every table
    conjunction, and the dense ones that occur in the training rows (`seen()`, `[offset]`
    flags, only then computed)."""
    table = np.asarray(common.keys, np.int64)
    first = int(np.searchsorted(table, 0))  # an empty table's one key is -1
    table = table[first:]
    w = fit_w.pop()
    host_w = host_array(w)
    if host_w is not None:
        # (handed over in a list that no name here holds: its callee frees them)
        held = [host_w]
        del w, host_w
        return _host_model_weights(common, table, held, first, rare)
    rare_keys = rare_w = None
    if rare is not None:
        rare_keys, rare_w = rare()
        rare_keys = np.asarray(rare_keys, np.int64)
    dense = np.flatnonzero(seen())
    more = [dense_keys_of(dense, common.n_dense, common.degree, common.n_common + 1)
            if common.n_dense else np.zeros(0, np.int64)]
    if rare_keys is not None:
        more.append(rare_keys)
    extra = np.concatenate(more)
    order = np.argsort(extra, kind="stable")
    extra = extra[order]
    # the table is sorted: the others go in at their places (no sort of the whole)
    where, rest = _merge_places(table, extra)
    keys = np.empty(len(rest), np.int64)
    keys[where] = extra
    keys[rest] = table
    kept = np.flatnonzero(rest)
    more_w = [w[jnp.asarray(dense.astype(np.int32))]] + (
        [] if rare_w is None else [jnp.asarray(rare_w, w.dtype)])
    out = jnp.zeros((len(keys) + 1,), w.dtype)
    out = out.at[jnp.asarray(kept)].set(
        w[common.offset + first:common.size]).at[jnp.asarray(where)].set(
        jnp.concatenate(more_w)[jnp.asarray(order)])
    return keys, out


def _host_model_weights(common: CommonPart, table: np.ndarray, fit_w: list[np.ndarray],
                        first: int, rare: Callable[[], tuple[np.ndarray, Any]] | None
                        ) -> tuple[np.ndarray, Array]:
    """`_model_weights` of concrete weights (`fit_w`, handed over as there): each key set's
    live conjunctions (weight not 0), merged two sorted sets at a time into the model's
    arrays, each temporary dropped once used (at d = 3 on UD the merge once held ~265 MB
    of temporaries); the fit's weights are dropped before the rare conjunctions are
    computed."""
    host_w = fit_w.pop()
    dtype = host_w.dtype
    dense = np.flatnonzero(host_w[:common.offset] != 0)
    dense_w = host_w[dense]
    dense_k = (dense_keys_of(common.dense_slots()[dense], common.n_dense, common.degree,
                             common.n_common + 1)
               if common.n_dense else np.zeros(0, np.int64))
    del dense
    order = np.argsort(dense_k, kind="stable")
    dense_k, dense_w = dense_k[order], dense_w[order]
    del order
    table_w = host_w[common.offset + first:common.size]
    live = np.flatnonzero(table_w != 0)
    keys, weights = _merged(table[live], table_w[live], dense_k, dense_w, sink=rare is None)
    if rare is None:
        return keys, shared_on_cpu(weights)
    del live, table_w, dense_k, dense_w, host_w
    release_freed_memory()  # (the fit's weights: before the rare conjunctions' temporaries)
    rare_keys, rare_w = rare()  # (their weights are not 0)
    keys, out = _merged(keys, weights, np.asarray(rare_keys, np.int64),
                        np.asarray(rare_w).astype(dtype, copy=False), sink=True)
    return keys, shared_on_cpu(out)


def _merge_places(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where two sorted, disjoint key sets go in their sorted merge: b's places, and a mask
    of a's (the others)."""
    at = np.searchsorted(a, b)
    at += np.arange(len(b), dtype=at.dtype)  # b's places among all
    rest = np.ones(len(a) + len(b), bool)
    rest[at] = False
    return at, rest


def _merged(a: np.ndarray, a_w: np.ndarray, b: np.ndarray, b_w: np.ndarray, *,
            sink: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted, disjoint key sets with their weights, as one sorted set. `sink`: the
    weights in a 64-byte-aligned buffer with one more entry, the model's sink, 0 (what
    `shared_on_cpu` shares without a copy)."""
    at, rest = _merge_places(a, b)
    keys = np.empty(len(rest), np.int64)
    dtype = np.result_type(a_w, b_w)
    weights = aligned_empty((len(rest) + 1,), dtype) if sink else np.empty(len(rest), dtype)
    keys[at] = b
    weights[at] = b_w
    del at
    keys[rest] = a
    weights[:len(rest)][rest] = a_w
    if sink:
        weights[-1] = 0
    return keys, weights


_LEARNERS = {"kernel": _fit_kernel, "block": _fit_kernel, "splitting": _fit_split,
             "slicing": _fit_split, "explicit": _fit_explicit, "linear": _fit_explicit}
