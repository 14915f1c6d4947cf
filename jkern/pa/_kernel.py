"""Kernel PA-I with a polynomial kernel, in the optax shape: `init` -> state, `update` -> state.

The model is a support set S with weights α; the margin of x is

    m(x) = Σ_{s∈S} α_s (1 + s·x)^d.

One rule for every mode (opal's PA-I, Crammer et al. 2006), one tie rule — update iff
y·m ≤ 1 + TIE_EPS (ε = 1e-9; opal: y·m ≤ 1) — in one of two arithmetics:

- exact (`exact=True`; binary features, float64): α is an int64 count of 2^-32 and every
  kernel value (1 + s·x)^d a whole number, so a margin is an integer sum that every mode
  (every summation order, block or explicit expansion, splitting and slicing) gets bit for
  bit; the tie rule is evaluated exactly (y·m ≤ 2^32 + TIE_TICKS counts: a margin of exactly
  1 updates, as in opal), and Δα = y·round(τ·2^32), τ computed in float64 from the exact
  margin. This is what makes the modes the same model at full size: in floats, opal's large
  steps (τ divides by |x|, not K(x, x)) amplify rounding differences by ~10x every few
  hundred updates, so runs in different summation orders part ways after a few thousand
  examples.
- float (`exact=False`; real values, float32): the tie rule in floats, so a margin that is 1
  in real arithmetic but 1 ± 1e-13 after rounding updates in every mode. Modes agree while
  their rounding differences stay below ε (short runs; not guaranteed on long ones).
- margins in (1, 1 + ε] step by 0 (their loss is 0) but still count as updates.
- τ = clip((1 − y·m) / |x|, 0, C) with |x| = Σ_f x_f² (the number of active features of a
  binary vector: opal's rule, which does not divide by K(x, x)); `textbook=True` divides by
  K(x, x) = (1 + |x|)^d. An empty x (|x| = 0) steps by C when its loss is > 0.
- the update adds y·τ to the weight of the support vector equal to x: identical vectors share
  one support vector, found through the vector id `uid` each example carries
  (`unique_rows`); a new vector takes the next free slot.

Two ways to compute the same updates share one state:

- `update` (pure kernel): one example; its margin against every support vector, in chunks of
  `CHUNK` support vectors (only the chunks in use are visited).
- `update_block` (exact block mode): B examples. Their margins against the model at the block
  start in one batched computation ([chunk, k] gathers of B-wide rows), their B × B kernel
  matrix, then a sequential scan over the block that adds the corrections
  Σ_{j<t, j updated in the block} Δα_j k(x_j, x_t); the weights are written back at the end.

The support vectors live in fixed-capacity padded buffers. An update that needs a new slot
when all are taken sets `overflow` and is not applied: the state is then no longer the PA-I
model, and `fit` raises (never a silent truncation).

Later (issue 21): kernel splitting (explicit weights for conjunctions of the N most frequent
features, an inverted index for the rest) and kernel slicing (partial margins cached per
frequency-ordered prefix) as further margin computations over this same state.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

TIE_EPS = 1e-9
FIXED_BITS = 32
SCALE = 2**FIXED_BITS  # exact mode: α is an int64 count of 2^-32
TIE_TICKS = int(TIE_EPS * SCALE)  # TIE_EPS in counts of 2^-32 (4): the exact tie rule
CHUNK = 256  # support vectors per margin chunk


class Instance(NamedTuple):
    """One sparse example (or, with a leading axis, a block of them).

    Attributes:
        indices: `[k]` feature ids (padding: any id, with value 0).
        values: `[k]` feature values.
        uid: id of the distinct feature vector (equal vectors, equal ids; `unique_rows`),
            in `[0, n_vectors)`.
    """

    indices: Int[Array, "*block k"]
    values: Float[Array, "*block k"]
    uid: Int[Array, "*block"]


class KernelState(NamedTuple):
    """The support set and the work buffers of kernel PA-I.

    Attributes:
        sv_indices: `[capacity, k]` feature ids of the support vectors (slot order = order
            of their first update).
        sv_values: `[capacity, k]` their values (0 in unused slots and padding).
        alpha: `[capacity]` their weights.
        slot: `[n_vectors]` the slot of each vector id, -1 when it is not a support vector.
        n_sv: number of slots in use.
        n_updates: number of updates so far.
        overflow: an update needed a slot beyond the capacity (then not applied).
        scratch: `[n_features, block]` zeros between steps: the dense copy of the examples.
    """

    sv_indices: Int[Array, "cap k"]
    sv_values: Float[Array, "cap k"]
    alpha: Float[Array, " cap"]
    slot: Int[Array, " u"]
    n_sv: Int[Array, ""]
    n_updates: Int[Array, ""]
    overflow: Bool[Array, ""]
    scratch: Float[Array, "f b"]


def chunk_margins(sv_indices: Int[Array, "cap k"], sv_values: Float[Array, "cap k"],
                  alpha: Float[Array, " cap"], n_sv: Any, dense: Float[Array, "f b"],
                  degree: int) -> Float[Array, " b"]:
    """Σ_i α_i (1 + s_i·x_b)^d for each column x_b of `dense`, over the chunks of `CHUNK`
    support vectors that hold the first `n_sv` slots."""
    cap = sv_indices.shape[0]
    size = min(CHUNK, cap)
    if cap % size:  # a trimmed model: pad to whole chunks (α = 0)
        pad = size - cap % size
        sv_indices = jnp.pad(sv_indices, ((0, pad), (0, 0)))
        sv_values = jnp.pad(sv_values, ((0, pad), (0, 0)))
        alpha = jnp.pad(alpha, (0, pad))

    def body(c, acc):
        start = c * size
        idx = jax.lax.dynamic_slice_in_dim(sv_indices, start, size)
        val = jax.lax.dynamic_slice_in_dim(sv_values, start, size)
        a = jax.lax.dynamic_slice_in_dim(alpha, start, size)
        k = kernel_values(jnp.einsum("ck,ckb->cb", val, dense[idx]), degree, a.dtype)
        return acc + jnp.sum(a[:, None] * k, axis=0)

    n_chunks = (n_sv + size - 1) // size
    return jax.lax.fori_loop(0, n_chunks, body, jnp.zeros((dense.shape[1],), alpha.dtype))


def kernel_values(dots: Array, degree: int, dtype: Any) -> Array:
    """(1 + dots)^d as `dtype`: exact integers for an integer `dtype` (binary features:
    the dots are whole numbers, and (1 + dots)^d < 2^53 is exact in float64)."""
    k = (1 + dots) ** degree
    return jnp.round(k).astype(dtype) if jnp.issubdtype(dtype, jnp.integer) else k


def kernel_int(dots: Array, degree: int, dtype: Any) -> Array:
    """(1 + dots)^d for integer counts `dots`, in `dtype`."""
    return (1 + dots.astype(dtype)) ** degree


def decide(m: Array, y: Array, sq_norm: Array, C: Array, degree: int, textbook: bool
           ) -> tuple[Bool[Array, ""], Array, Float[Array, ""]]:
    """PA-I's rule on a margin: (update?, Δα = y·τ in `m`'s dtype, the margin as a float).

    One tie rule in both arithmetics: update iff y·m <= 1 + TIE_EPS. Exact mode (`m` an
    int64 count of 2^-32) evaluates it exactly (y·m <= 2^32 + TIE_TICKS counts) and steps
    by Δα = y·round(τ·2^32); float mode in `m`'s dtype."""
    fdt = sq_norm.dtype
    if jnp.issubdtype(m.dtype, jnp.integer):
        yi = jnp.round(y).astype(m.dtype)
        ym = yi * m
        upd = ym <= SCALE + TIE_TICKS
        loss = (SCALE - ym).astype(fdt) / SCALE
        tau = step_size(loss, sq_norm, jnp.asarray(C, fdt), degree, textbook)
        return upd, yi * jnp.round(tau * SCALE).astype(m.dtype), m.astype(fdt) / SCALE
    y = jnp.asarray(y, m.dtype)
    ym = y * m
    upd = ym <= 1 + TIE_EPS
    tau = step_size(1 - ym, sq_norm, jnp.asarray(C, m.dtype), degree, textbook)
    return upd, y * tau, m


def claim_slot(upd: Array, slot: Array, n_sv: Array, cap: int
               ) -> tuple[Array, Array, Array, Array]:
    """Where an update writes (the in-block scans of every mode share this): its vector's
    slot when it has one (`slot >= 0`), else the next free one, `n_sv`. An update that needs
    a new slot when all `cap` are taken is not applied and sets the overflow flag.

    Returns (applied, takes a new slot, target slot or `cap` when not applied, overflow)."""
    new = upd & (slot < 0)
    full = new & (n_sv >= cap)
    ok = upd & ~full
    target = jnp.where(ok, jnp.where(new, n_sv, slot), cap)
    return ok, new & ok, target, full


def step_size(loss: Array, sq_norm: Array, C: Array, degree: int, textbook: bool) -> Array:
    """τ = clip(loss / norm, 0, C), norm = |x| (opal) or (1 + |x|)^d (textbook); an empty
    vector steps by C when its loss is > 0."""
    norm = (1 + sq_norm) ** degree if textbook else sq_norm
    pos = norm > 0
    tau = jnp.clip(loss / jnp.where(pos, norm, 1), 0, C)
    return jnp.where(pos, tau, jnp.where(loss > 0, C, 0).astype(tau.dtype))


class KernelPA(eqx.Module):
    """Kernel PA-I with k(s, x) = (1 + s·x)^d (see the module docstring for the rule).

    `C` is an array leaf: `jax.vmap` over a learner with a batch of C trains a grid.

    Attributes:
        C: the aggressiveness bound (> 0).
        degree: d (static).
        textbook: divide the step by K(x, x) instead of |x| (static).
        exact: fixed-point α (int64 counts of 2^-32; needs x64 and binary features, and
            margins below 2^31 in magnitude) instead of floats (static).
    """

    C: Float[Array, ""]
    degree: int = eqx.field(static=True, default=2)
    textbook: bool = eqx.field(static=True, default=False)
    exact: bool = eqx.field(static=True, default=False)

    def init(self, *, capacity: int, width: int, n_features: int, n_vectors: int,
             block: int = 1, dtype: Any = None) -> KernelState:
        """An empty model: `capacity` support-vector slots (rounded up to a multiple of
        `CHUNK`) of `width` features, vector ids below `n_vectors`, ids below `n_features`,
        and scratch for blocks of `block` examples."""
        dtype = jnp.result_type(self.C) if dtype is None else dtype
        if capacity > CHUNK:
            capacity = -(-capacity // CHUNK) * CHUNK
        capacity = max(capacity, 1)
        return KernelState(
            sv_indices=jnp.zeros((capacity, width), jnp.int32),
            sv_values=jnp.zeros((capacity, width), dtype),
            alpha=jnp.zeros((capacity,), jnp.int64 if self.exact else dtype),
            slot=jnp.full((n_vectors,), -1, jnp.int32),
            n_sv=jnp.zeros((), jnp.int32),
            n_updates=jnp.zeros((), jnp.int32),
            overflow=jnp.zeros((), bool),
            scratch=jnp.zeros((n_features, block), dtype),
        )

    def _decide(self, m, y, sq_norm):
        """(update?, Δα, the margin as a float) for a margin m (see `decide`)."""
        return decide(m, y, sq_norm, self.C, self.degree, self.textbook)

    def margin(self, state: KernelState, x: Instance) -> Float[Array, ""]:
        """The margin of one example against the model (pure kernel)."""
        return self.step(state, x, jnp.ones((), state.alpha.dtype))[1]

    def step(self, state: KernelState, x: Instance, y: Any
             ) -> tuple[KernelState, Float[Array, ""], Bool[Array, ""]]:
        """One pure-kernel step: (new state, the margin before the step, updated?)."""
        cap = state.alpha.shape[0]
        # the example, dense, in the scratch column (reset to zeros below)
        scratch = state.scratch.at[x.indices, 0].add(x.values)
        m = chunk_margins(state.sv_indices, state.sv_values, state.alpha, state.n_sv,
                          scratch[:, :1], self.degree)[0]
        scratch = scratch.at[x.indices, 0].set(0)
        fdt = state.sv_values.dtype
        upd, dalpha, m = self._decide(m, jnp.asarray(y, fdt), jnp.sum(x.values * x.values))
        ok, new, target, full = claim_slot(upd, state.slot[x.uid], state.n_sv, cap)
        new_row = jnp.where(new, target, cap)
        state = KernelState(
            sv_indices=state.sv_indices.at[new_row].set(x.indices, mode="drop"),
            sv_values=state.sv_values.at[new_row].set(x.values.astype(fdt), mode="drop"),
            alpha=state.alpha.at[target].add(dalpha, mode="drop"),
            slot=state.slot.at[x.uid].set(jnp.where(ok, target, state.slot[x.uid])),
            n_sv=state.n_sv + new.astype(jnp.int32),
            n_updates=state.n_updates + ok.astype(jnp.int32),
            overflow=state.overflow | full,
            scratch=scratch,
        )
        return state, m, upd

    def update(self, state: KernelState, x: Instance, y: Any) -> KernelState:
        """One example (pure kernel): the state after PA-I's step on (x, y)."""
        return self.step(state, x, y)[0]

    def step_block(self, state: KernelState, xs: Instance, ys: Any, mask: Any = None
                   ) -> tuple[KernelState, Float[Array, " b"], Bool[Array, " b"]]:
        """B examples in order (exact block mode): (new state, margins, updated flags).

        `mask[t] = False` skips position t (padding). The scratch must have B columns."""
        B = xs.indices.shape[0]
        dt = state.alpha.dtype
        fdt = state.sv_values.dtype
        ys = jnp.asarray(ys, fdt)
        mask = jnp.ones((B,), bool) if mask is None else jnp.asarray(mask, bool)
        cols = jnp.arange(B)[:, None]
        dense = state.scratch.at[xs.indices, cols].add(xs.values)
        m0 = chunk_margins(state.sv_indices, state.sv_values, state.alpha, state.n_sv, dense,
                           self.degree)
        # K[j, t] = (1 + x_j·x_t)^d inside the block
        kbb = kernel_values(jnp.einsum("jk,jkt->jt", xs.values, dense[xs.indices]),
                            self.degree, dt)
        scratch = dense.at[xs.indices, cols].set(0)
        sq = jnp.sum(xs.values * xs.values, axis=1)
        cap = state.alpha.shape[0]

        def body(carry, t):
            dalpha, slot, n_sv, n_upd, overflow = carry
            upd, da, m = self._decide(m0[t] + jnp.sum(dalpha * kbb[:, t]), ys[t], sq[t])
            upd = upd & mask[t]
            uid = xs.uid[t]
            s = slot[uid]
            ok, new, target, full = claim_slot(upd, s, n_sv, cap)
            dalpha = dalpha.at[t].set(jnp.where(ok, da, 0))
            slot = slot.at[uid].set(jnp.where(ok, target, s))
            carry = (dalpha, slot, n_sv + new.astype(jnp.int32), n_upd + ok.astype(jnp.int32),
                     overflow | full)
            return carry, (m, upd, target, new)

        carry0 = (jnp.zeros((B,), dt), state.slot, state.n_sv, state.n_updates, state.overflow)
        (dalpha, slot, n_sv, n_upd, overflow), (ms, upds, targets, news) = jax.lax.scan(
            body, carry0, jnp.arange(B))
        new_rows = jnp.where(news, targets, cap)
        state = KernelState(
            sv_indices=state.sv_indices.at[new_rows].set(xs.indices, mode="drop"),
            sv_values=state.sv_values.at[new_rows].set(xs.values.astype(fdt), mode="drop"),
            alpha=state.alpha.at[targets].add(dalpha, mode="drop"),
            slot=slot, n_sv=n_sv, n_updates=n_upd, overflow=overflow,
            scratch=scratch,
        )
        return state, ms, upds

    def update_block(self, state: KernelState, xs: Instance, ys: Any,
                     mask: Any = None) -> KernelState:
        """B examples in order (exact block mode): the state after their PA-I steps."""
        return self.step_block(state, xs, ys, mask)[0]
