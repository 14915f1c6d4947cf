"""Tree-kernel Grams under JAX transformations: a grid of parameters under `jax.vmap`, a
Gram inside `jax.jit`, gradients.

The engine plans a Gram on the host (which Delta entries, in which buffer slots, which
contraction items) and runs fixed-shape compiled programs (`_recurrences.py`) over the plan.
Only the parameters (lam, mu, SPTK's threshold, gamma and word vectors) enter those
programs, so a transformation over them need not retrace the engine:

- `jax.vmap` over the parameters (a grid): a custom batching rule receives the P values at
  once and runs the engine once, on one plan, with a `[P]` axis inside its programs (the
  buffer is `[P, slots]`, the contraction target `[P, cells]`). Under an eager `vmap` the
  values are concrete, so the rule calls the engine directly: the grid builds as many
  programs as one Gram (batched ones), warm from the compilation cache like any other, and
  no transformation ever sees the engine's buffers (no donation warnings).
- `jax.jit` (and `jit` of a `vmap`): the Gram is a host callback (`jax.pure_callback`) to
  the same engine; the jitted program holds the callback, not the engine.
- Differentiation (`grad`, `jvp`): a custom JVP whose rule runs the engine inline, traced,
  as before (`compute_gram`'s traced path): the only route that retraces the recurrences.

Nested `vmap`s (a lam x mu grid) fold into one batch of their product. The batched values
reach the engine in its convention (`_recurrences.param_axes`): every scalar parameter a
`[P]` array, the word vectors `[P, V, d]` where they are batched, else shared.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap

from .._validate import is_traced
from ._recurrences import Params

OVERFLOW = (
    "tree kernel values overflowed {dtype} (inf/NaN in the Gram matrix): big trees or lam/mu "
    "near 1 give huge self-kernels. Compute in float64 (dtype='float64', CLI --dtype float64) "
    "and normalize (Normalized(kernel), CLI --normalize) if you need float32-sized values."
)

# host(params): the engine's value for concrete parameters: `shape`, or `[P, *shape]` for a
# batch of P values in the engine's convention (`_recurrences.batch_size`).
Host = Callable[[Params], Any]


@dataclasses.dataclass(frozen=True, eq=False)
class _Call:
    """One Gram computation over traced parameters: how to run it, and the parameters'
    pytree structure and the rank of each leaf for a single value."""

    host: Host
    inline: Callable[[Params], Any]
    tree: Any
    base: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: Any


def over_params(host: Host, inline: Callable[[Params], Any], params: Params,
                shape: tuple[int, ...], dtype: Any) -> jax.Array:
    """The engine's `shape` result for traced `params` (see the module docstring).

    Args:
        host: runs the engine on concrete parameters (one value each, or a batch).
        inline: runs the engine on traced parameters (for differentiation).
        params: the kernel's resolved parameters, some of them traced.
        shape: the result's shape for one parameter value.
        dtype: the result's dtype.
    """
    leaves, tree = jax.tree_util.tree_flatten(params)
    call = _Call(host, inline, tree, tuple(jnp.ndim(x) for x in leaves), tuple(shape),
                 jnp.dtype(dtype))
    fn = jax.custom_jvp(_batched(call, (), (False,) * len(leaves)))
    fn.defjvp(lambda primals, tangents: _jvp(call, primals, tangents))
    return fn(*leaves)


def _jvp(call: _Call, primals, tangents):
    """Derivatives: the engine inline (traced), its values checked for overflow."""

    def run(*leaves):
        return finite_traced(call.inline(call.tree.unflatten(leaves)), call.dtype)

    return jax.jvp(run, primals, tangents)


def finite_traced(g: jax.Array, dtype: Any) -> jax.Array:
    """`g`, with an equinox runtime error when it holds inf/NaN (tree-kernel overflow)."""
    return eqx.error_if(g, ~jnp.all(jnp.isfinite(g)),
                        OVERFLOW.format(dtype=jnp.dtype(dtype).name))


def check_finite(g: np.ndarray, dtype: Any) -> None:
    """Raises `FloatingPointError` when the concrete `g` holds inf/NaN."""
    if not np.isfinite(g).all():
        raise FloatingPointError(OVERFLOW.format(dtype=jnp.dtype(dtype).name))


def _batched(call: _Call, lead: tuple[int, ...], stacked: tuple[bool, ...]):
    """The result for parameter leaves of which those flagged `stacked` carry the leading
    batch axes `lead` (a `lead + shape` result): a host callback, with a batching rule
    that adds the new axis to the batch instead of tracing the engine."""

    @custom_vmap
    def fn(*leaves):
        out = jax.ShapeDtypeStruct(lead + call.shape, call.dtype)
        g = jax.pure_callback(lambda *xs: _host(call, lead, stacked, False, xs), out, *leaves,
                              vmap_method="sequential")
        return finite_traced(g, call.dtype)

    @fn.def_vmap
    def rule(axis_size: int, in_batched: list[bool], *leaves):
        concrete = not any(is_traced(x) for x in leaves)
        xp = np if concrete else jnp
        new_lead = (axis_size, *lead)
        out_leaves, out_stacked = [], []
        for x, batched, was, rank in zip(leaves, in_batched, stacked, call.base):
            x = np.asarray(x) if concrete else x
            if batched and not was:  # [axis, *base] -> [axis, *lead, *base]
                x = xp.broadcast_to(x.reshape((axis_size,) + (1,) * len(lead) + x.shape[1:]),
                                    new_lead + x.shape[1:])
            elif was and not batched:
                x = xp.broadcast_to(x, (axis_size, *x.shape))
            elif not was and not batched and rank == 0:  # scalars: always one per value
                x = xp.broadcast_to(x, new_lead)
            out_leaves.append(x)
            out_stacked.append(batched or was or rank == 0)
        if concrete:  # an eager vmap: the engine runs now, once for the whole batch
            g = _host(call, new_lead, tuple(out_stacked), True, out_leaves)
            return (g if isinstance(g, jax.Array) else jax.device_put(g)), True
        return _batched(call, new_lead, tuple(out_stacked))(*out_leaves), True

    return fn


def _host(call: _Call, lead: tuple[int, ...], stacked: tuple[bool, ...], check: bool,
          leaves) -> Any:
    """Runs the engine on concrete leaves: the batch axes `lead` folded into one of
    `prod(lead)` values; the result unfolded. `check`: raise on overflow here (else the
    traced caller's `finite_traced` does)."""
    batch = math.prod(lead) if lead else None
    values = []
    for x, st in zip(leaves, stacked):
        x = np.asarray(x)
        if batch is not None and st:
            x = np.ascontiguousarray(x.reshape((batch,) + x.shape[len(lead):]))
        values.append(jax.device_put(x))  # (jnp.asarray compiles a program per shape)
    if check:
        g = call.host(call.tree.unflatten(values))
    else:  # a callback: JAX sets the default device to the callback's (the host's CPU)
        with jax.default_device(None):
            g = call.host(call.tree.unflatten(values))
    if check:
        check_finite(np.asarray(g), call.dtype)
    if len(lead) > 1:
        g = np.asarray(g).reshape(lead + call.shape)
    return g if check else np.asarray(g, call.dtype)
