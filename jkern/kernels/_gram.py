"""`gram`: the one entry point from a kernel and inputs to a Gram matrix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxtyping import Array, Float

from ..errors import InputError
from ._base import AbstractKernel


def gram(kernel: AbstractKernel, x1: Sequence[Any], x2: Sequence[Any] | None = None, *,
         dtype: Any = None, **options: Any) -> Float[Array, "n1 n2"]:
    """The Gram matrix `K[i, j] = kernel(x1[i], x2[j])` (`x2=None`: `x1` against itself).

    Args:
        kernel: any jkern kernel (tree, vector, or an algebraic combination).
        x1: trees, `Example`s, or `[n, d]` arrays for vector kernels.
        x2: the same kinds of inputs, or None for `x1` against itself.
        dtype: float32 or float64 (needs JAX x64); default JAX's default float.
        **options: tree-kernel options: `progress=True` (bar on stderr), `block_size`,
            `threads` (host threads, default 2), `devices` (JAX devices of this process),
            `processes` (True: share the row blocks among the processes of a
            `jax.distributed` job, each gets the whole matrix), `stats` (dict receiving work
            counters), `out` (an array to write the matrix into).

    >>> import jkern
    >>> texts = ["(S (NP (NN a))(VP (VB b)))", "(S (NP (NN a)))"]
    >>> trees = [jkern.trees.parse_penn(s) for s in texts]
    >>> jkern.gram(jkern.SST(lam=1.0), trees).tolist()
    [[15.0, 3.0], [3.0, 6.0]]
    """
    if not isinstance(kernel, AbstractKernel):
        raise InputError(f"expected a jkern kernel, got {type(kernel).__name__}")
    return kernel.gram(x1, x2, dtype=dtype, **options)
