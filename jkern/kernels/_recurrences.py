"""The compiled side of the forest engine: Delta recurrences and the block contraction.

Every function here is a fixed-shape jitted program. Its shapes come from the host planner
(`_engine.py`) on a few padded sizes, so a kernel setting compiles a small, bounded set of
programs (one per pair of padded arity classes present, plus a handful for buffers and the
contraction) and reuses them for every block and every call.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .._executables import stored_program
from .._validate import is_traced

# Child-pair grids up to this many cells get the unrolled subsequence DP.
_UNROLL = 64


class Params(NamedTuple):
    lam: Any
    mu: Any
    vectors: Any = None  # unit-norm word vectors [V, d] (SPTK)
    threshold: Any = None  # similarities below it count as 0 (SPTK)
    gamma: Any = None  # SPTK's Gaussian similarity exp(gamma (cos - 1)); None: thresholded cosine
    # CSPTK's composition matrices (A, B). The engine turns them into rows of `vectors` (one
    # per head-modifier pair of its forest, `GramEngine.resolve_params`) before any
    # recurrence reads them, so the recurrences see None here.
    composition: Any = None


def params_traced(params: Params) -> bool:
    """Whether the parameters are traced (grad, vmap, jit): blocks then run in the calling
    thread, where the trace lives, and loops need static trip counts."""
    return any(is_traced(x) for x in jax.tree_util.tree_leaves(params))


class DeviceForest(NamedTuple):
    arity: jax.Array
    child_start: jax.Array
    child_flat: jax.Array
    key: jax.Array
    label: jax.Array
    vec_index: jax.Array


def _children(dev: DeviceForest, nodes: jax.Array, width: int) -> tuple[jax.Array, jax.Array]:
    k = jnp.arange(width, dtype=jnp.int32)
    valid = k[None, :] < dev.arity[nodes][:, None]
    kids = dev.child_flat[dev.child_start[nodes][:, None] + k[None, :]]
    return jnp.where(valid, kids, 0), valid


def _subseq_sum(s: jax.Array, lam: jax.Array, max_subseq: int | None) -> jax.Array:
    """Sum over equal-length child subsequence pairs of lam^gaps * prod s[i_k, j_k].

    `s` is `[E, A, B]` (child-pair Deltas). No subtraction anywhere, so a float32 overflow
    shows up as inf, never as inf - inf = NaN.
    """
    _, a, b = s.shape
    jj = jnp.arange(b)
    # decay[j', j] = lam^(j - j') for j' <= j: a row-wise decayed cumulative sum as a matmul.
    decay_b = jnp.where(jj[:, None] <= jj[None, :],
                        lam ** jnp.maximum(jj[None, :] - jj[:, None], 0), 0)
    if (max_subseq is None or max_subseq >= min(a, b)) and a * b <= _UNROLL:
        # Small nodes: the same recurrence unrolled into one fused elementwise program
        # (a scan costs ~10x more per entry at these sizes on a CPU).
        p_prev, total = None, jnp.zeros(s.shape[:1], s.dtype)
        for i in range(a):
            p_row, run = [], None
            for j in range(b):
                x = s[:, i, j] if p_prev is None or j == 0 else s[:, i, j] * (1 + p_prev[j - 1])
                total = total + x
                run = x if run is None else x + lam * run
                p_row.append(run if p_prev is None else run + lam * p_prev[j])
            p_prev = p_row
        return total
    if max_subseq is None or max_subseq >= min(a, b):
        # X = S * (1 + shift(P)), P the 2-D decayed prefix sum of X, built row by row.
        def row(carry, s_row):
            p_prev, total = carry
            shifted = jnp.concatenate([jnp.zeros_like(p_prev[:, :1]), p_prev[:, :-1]], axis=1)
            x_row = s_row * (1 + shifted)
            p_row = x_row @ decay_b + lam * p_prev
            return (p_row, total + x_row.sum(axis=1)), None

        init = (jnp.zeros_like(s[:, 0, :]), jnp.zeros_like(s[:, 0, 0]))
        (_, total), _ = jax.lax.scan(row, init, jnp.swapaxes(s, 0, 1))
        return total
    ii = jnp.arange(a)
    decay_a = jnp.where(ii[:, None] >= ii[None, :],
                        lam ** jnp.maximum(ii[:, None] - ii[None, :], 0), 0)
    d = s
    total = d.sum(axis=(1, 2))
    for _ in range(1, max_subseq):
        p = jnp.einsum("ik,ekl,lj->eij", decay_a, d, decay_b)
        shifted = jnp.pad(p, ((0, 0), (1, 0), (1, 0)))[:, :a, :b]
        d = s * shifted
        total = total + d.sum(axis=(1, 2))
    return total


def _entry_values(buf, q, v, dev, row_off, pos, params: Params, *, plan_static, a_pad, b_pad):
    family, plus_one, max_subseq, smoothed, residual = plan_static
    dtype = buf.dtype
    lam = jnp.asarray(params.lam, dtype)
    if family == "aligned":
        if a_pad == 0:
            return jnp.broadcast_to(lam, q.shape)
        cq, valid = _children(dev, q, a_pad)
        cv, _ = _children(dev, v, a_pad)
        internal = valid & (dev.arity[cq] > 0)
        off, p = row_off[cq], pos[cv]
        ok = internal & (off >= 0) & (p >= 0) & (dev.key[cq] == dev.key[cv])
        s = jnp.where(ok, buf[jnp.where(ok, off + p, 0)], 0)
        factors = jnp.where(internal, (1 + s) if plus_one else s, 1)
        return lam * jnp.prod(factors, axis=1)
    mu = jnp.asarray(params.mu, dtype)
    if residual:
        # R(q, v) = mu * DP over child pairs, a child pair's Delta being mu lam^2 + its R
        # (R = 0 where it has no row: leaves, pairs never computed).
        cq, vq = _children(dev, q, a_pad)
        cv, vv = _children(dev, v, b_pad)
        off, p = row_off[cq], pos[cv]
        same = (vq[:, :, None] & vv[:, None, :]
                & (dev.key[cq][:, :, None] == dev.key[cv][:, None, :]))
        stored = same & (off >= 0)[:, :, None] & (p >= 0)[:, None, :]
        r = jnp.where(stored, buf[jnp.where(stored, off[:, :, None] + p[:, None, :], 0)], 0)
        s = jnp.where(same, buf[1] + r, 0)
        return mu * _subseq_sum(s, lam, max_subseq)
    if smoothed:
        iq, iv = dev.vec_index[q], dev.vec_index[v]
        vecs = params.vectors
        vq, vv = vecs[jnp.maximum(iq, 0)], vecs[jnp.maximum(iv, 0)]
        # Rows are unit vectors or 0; a zero row is a word (or head-modifier pair) without a
        # vector, compared by its label only, like one missing from the vocabulary.
        have = ((iq >= 0) & (iv >= 0) & (jnp.sum(vq * vq, axis=-1) > 0.5)
                & (jnp.sum(vv * vv, axis=-1) > 0.5))
        cos = jnp.sum(vq * vv, axis=-1).astype(dtype)
        if params.gamma is None:
            thr = jnp.asarray(params.threshold, dtype)
            sim = jnp.where(have & (cos >= thr), jnp.clip(cos, 0, 1), 0)
        else:  # None or not is pytree structure, so each variant compiles on its own
            gamma = jnp.asarray(params.gamma, dtype)
            sim = jnp.where(have, jnp.exp(gamma * (jnp.minimum(cos, 1) - 1)), 0)
        sigma = jnp.where(dev.label[q] == dev.label[v], 1, sim)
    else:
        sigma = jnp.ones(q.shape, dtype)
    if a_pad == 0 or b_pad == 0:
        return mu * sigma * lam**2
    cq, vq = _children(dev, q, a_pad)
    cv, vv = _children(dev, v, b_pad)
    off, p = row_off[cq], pos[cv]
    ok = (
        (vq & (off >= 0))[:, :, None]
        & (vv & (p >= 0))[:, None, :]
        & (dev.key[cq][:, :, None] == dev.key[cv][:, None, :])
    )
    s = jnp.where(ok, buf[jnp.where(ok, off[:, :, None] + p[:, None, :], 0)], 0)
    return mu * sigma * (lam**2 + _subseq_sum(s, lam, max_subseq))


def param_axes(params: Params) -> Params:
    """The `jax.vmap` axes of a batch of parameter values (`batch_size`): every scalar
    parameter carries the batch on its axis 0, the word vectors when they are `[P, V, d]`."""
    return Params(lam=0, mu=0,
                  vectors=None if params.vectors is None or params.vectors.ndim == 2 else 0,
                  threshold=None if params.threshold is None else 0,
                  gamma=None if params.gamma is None else 0)


def batch_size(params: Params) -> int | None:
    """P for a batch of P parameter values (lam `[P]`, the engine's convention, see
    `_traced.py`), None for one value."""
    return None if jnp.ndim(params.lam) == 0 else int(jnp.shape(params.lam)[0])


def fill_entries(buf, piece, start, count, dev, row_off, pos, params, *, plan_static, a_pad,
                 b_pad, sub, trips=None):
    """Delta entries piece[:, start:start+count] (rows q, columns v, buf slots) into buf.

    The entries are independent of each other (one height level, one arity-class pair), so
    they are computed `sub` at a time in a loop whose trip count is `count / sub`: one
    program serves any count, and the padding wasted on a bucket is less than `sub` entries.
    `piece` must extend at least `sub` entries past `start + count`. `trips` (static) fixes
    the trip count instead: a loop of known length, which reverse-mode differentiation needs
    (the caller passes it when the parameters are traced). A `[P, slots]` buffer holds a
    batch of P parameter values (`param_axes`): each entry is computed for all of them.
    """

    def values(buf, q, v, params):
        return _entry_values(buf, q, v, dev, row_off, pos, params, plan_static=plan_static,
                             a_pad=a_pad, b_pad=b_pad)

    if buf.ndim == 2:
        values = jax.vmap(values, in_axes=(0, None, None, param_axes(params)))

    def chunk(i, buf):
        first = start + i * sub
        part = jax.lax.dynamic_slice_in_dim(piece, first, sub, axis=1)
        live = jnp.arange(sub) < count - i * sub
        q = jnp.where(live, part[0], 0)
        v = jnp.where(live, part[1], 0)
        out = jnp.where(live, part[2], buf.shape[-1] - 1)  # the last slot takes padded writes
        return buf.at[..., out].set(values(buf, q, v, params).astype(buf.dtype))

    if trips is not None:
        return jax.lax.fori_loop(0, trips, chunk, buf)
    return jax.lax.fori_loop(0, (count + sub - 1) // sub, chunk, buf)


_FILL_STATIC = ("plan_static", "a_pad", "b_pad", "sub", "trips")
# The engine's own calls donate the buffer (updated in place); under a transformation
# (grad's primal and tangent, the inline engine of `_traced.py`) nothing is donated: JAX could
# not reuse the buffer there, and would say so with a warning.
fill_entries_traced = jax.jit(fill_entries, static_argnames=_FILL_STATIC)
fill_entries = stored_program(static_argnames=_FILL_STATIC, donate_argnums=(0,))(fill_entries)


@stored_program(static_argnames=("size", "dtype", "residual", "batch"))
def new_buffer(params, *, size, dtype, residual, batch=None):
    """A zeroed Delta buffer of `size` slots (residual mode: slot 1 holds mu lam^2);
    `[batch, size]` for a batch of parameter values."""
    buf = jnp.zeros(size if batch is None else (batch, size), dtype)
    if residual:
        buf = buf.at[..., 1].set(jnp.asarray(params.mu, dtype)
                                 * jnp.asarray(params.lam, dtype) ** 2)
    return buf


@stored_program(static_argnames=("shape", "dtype"))
def zeros(*, shape, dtype):
    """`jnp.zeros(shape, dtype)` as a stored program: a warm process loads it with the
    others instead of compiling the op."""
    return jnp.zeros(shape, dtype)


def accumulate(out, buf, items):
    """out[seg] += buf[idx] * weight for the contraction items `int32[3, n]` (idx, seg,
    weight) of one chunk (along the last axis: a batch's `[P, ...]` arrays too)."""
    weight = items[2].astype(out.dtype).reshape((1,) * (buf.ndim - 1) + (-1,))
    return out.at[..., items[1]].add(buf[..., items[0]] * weight)


accumulate_traced = jax.jit(accumulate)
accumulate = stored_program(donate_argnums=(0,))(accumulate)


def to_device(host: Any) -> jax.Array:
    """A host array on the default device (the thread's, see `GramEngine._on`): a plain
    transfer, several times cheaper than `jnp.asarray`'s conversion for large arrays."""
    return jax.device_put(host)
