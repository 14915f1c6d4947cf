"""Variable-length work packed into a fixed number of slots, for jitted programs whose shapes
are static: owner i (a row, a row's position, ...) has `count[i]` items, laid out owner after
owner in `size` slots (a bound on the total)."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Int


def packed_slots(count: Int[Array, " n"], size: int) -> tuple[Array, Array, Array]:
    """(owner, place, live), each `[size]`: each slot's owner, its place among that owner's
    items, and whether it holds one (the slots past the total do not; their owner is
    clamped to the last). An owner is found by a scatter of the owners' ends and a running
    sum, not a binary search per slot."""
    ends = jnp.cumsum(count)
    q = jnp.arange(size, dtype=ends.dtype)
    ended = jnp.zeros((size + 1,), jnp.int32).at[jnp.minimum(ends, size)].add(1)
    owner = jnp.minimum(jnp.cumsum(ended[:size]), count.shape[0] - 1)
    return owner, q - (ends[owner] - count[owner]), q < ends[-1]
