"""Kernel base class and kernel algebra (sum, product, scaling, normalization)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._validate import resolve_dtype as resolve_dtype  # the kernels' dtype rule, one home
from ..errors import InputError

# The options `gram` forwards to the tree-kernel engine. Algebra passes them to both sides, so
# every kernel accepts them (a kernel that has no use for one ignores it); anything else is a
# TypeError. `out` (an array the Gram matrix is written into) is the combining kernel's own.
GRAM_OPTIONS = ("progress", "block_size", "threads", "devices", "processes", "stats", "out",
                "max_memory")


def check_options(kernel: Any, options: dict[str, Any]) -> None:
    """TypeError naming any option that no kernel takes."""
    unknown = sorted(set(options) - set(GRAM_OPTIONS))
    if unknown:
        raise TypeError(f"{type(kernel).__name__}.gram() got unknown option(s) {unknown}; "
                        f"kernels take {', '.join(GRAM_OPTIONS)}")


def check_out(out: Any, shape: tuple[int, int], dtype: Any) -> np.ndarray:
    """`out`, checked as the target of a `shape` Gram matrix computed in `dtype`."""
    if not isinstance(out, np.ndarray):
        raise InputError(f"out must be a NumPy array (or np.memmap), got {type(out).__name__}")
    if out.shape != shape:
        raise InputError(f"out has shape {out.shape}; this Gram matrix is {shape}")
    if out.dtype not in (np.float32, np.float64):
        raise InputError(f"out must be float32 or float64, got {out.dtype}")
    if np.dtype(out.dtype).itemsize < np.dtype(dtype).itemsize:
        raise InputError(f"out is {out.dtype} but the Gram matrix is computed in "
                         f"{np.dtype(dtype).name}: values would be rounded")
    if not out.flags.writeable:
        raise InputError("out is read-only")
    return out


def into_out(g: Any, out: np.ndarray | None) -> Any:
    """`g` itself, or written into the caller's `out` (checked), which is returned."""
    if out is None:
        return g
    if isinstance(g, jax.core.Tracer):
        raise InputError("out= takes concrete Gram matrices; under jit/grad/vmap leave it unset")
    check_out(out, tuple(g.shape), g.dtype)
    if g is not out:
        out[...] = np.asarray(g)
    return out


def _sides(options: dict[str, Any]) -> tuple[dict, dict, Callable[[], None]]:
    """The options of the two sides of a `Sum`/`Product` (no `out`: the sum writes that, so
    `processes="shared"` becomes True: each process gathers both sides, and all write the same
    sum): each side fills its own `stats` dict, and `merge()` adds their numbers into the
    caller's (a sum reports all its work)."""
    options = {k: v for k, v in options.items() if k != "out"}
    if options.get("processes") == "shared":
        options["processes"] = True
    stats = options.get("stats")
    if stats is None:
        return options, options, lambda: None
    first: dict = {}
    second: dict = {}

    def merge() -> None:
        for part in (first, second):
            for name, value in part.items():
                stats[name] = stats.get(name, 0) + value

    return {**options, "stats": first}, {**options, "stats": second}, merge


class AbstractKernel(eqx.Module):
    """A kernel: computes Gram blocks between two collections of inputs.

    Subclasses implement `gram(x1, x2=None, *, dtype=None)`; `x2=None` means `x1` against
    itself. Kernels compose: `k1 + k2`, `k1 * k2`, `2.0 * k`, `Normalized(k)`.
    """

    @abc.abstractmethod
    def gram(self, x1: Sequence[Any], x2: Sequence[Any] | None = None, *, dtype: Any = None,
             **options: Any) -> Float[Array, "n1 n2"]:
        raise NotImplementedError

    def diag(self, x: Sequence[Any], *, dtype: Any = None, **options: Any) -> Float[Array, " n"]:
        """Self-kernels K(x_i, x_i). Subclasses may override with something cheaper."""
        return jnp.diagonal(self.gram(x, None, dtype=dtype, **options))

    def gram_and_diag(self, x1: Sequence[Any], x2: Sequence[Any], *, dtype: Any = None,
                      **options: Any) -> tuple[Any, Any, Any]:
        """`(K(x1, x2), diag K(x1, x1), diag K(x2, x2))`: what normalizing a block needs.
        Tree kernels compute all three on one prepared forest; options as `gram`."""
        side = {k: v for k, v in options.items() if k not in ("out", "stats")}
        return (self.gram(x1, x2, dtype=dtype, **options), self.diag(x1, dtype=dtype, **side),
                self.diag(x2, dtype=dtype, **side))

    def __add__(self, other: Any) -> AbstractKernel:
        if isinstance(other, AbstractKernel):
            return Sum(self, other)
        if not _is_scalar(other):
            return NotImplemented
        if isinstance(other, (int, float)) and other == 0:
            return self  # sum([k1, k2]) starts from 0
        return Sum(self, Constant(other))

    def __radd__(self, other: Any) -> AbstractKernel:
        if not _is_scalar(other):
            return NotImplemented
        if isinstance(other, (int, float)) and other == 0:
            return self
        return Sum(Constant(other), self)

    def __mul__(self, other: Any) -> AbstractKernel:
        if isinstance(other, AbstractKernel):
            return Product(self, other)
        return Scaled(self, jnp.asarray(other))

    def __rmul__(self, other: Any) -> AbstractKernel:
        if isinstance(other, AbstractKernel):
            return Product(other, self)
        return Scaled(self, jnp.asarray(other))


def _is_scalar(x: Any) -> bool:
    """A number a kernel can be added to: a Python or NumPy number, or a 0-d array."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float, np.number)):
        return True
    return isinstance(x, (jax.Array, np.ndarray)) and x.ndim == 0


class Constant(AbstractKernel):
    """k(x, y) = c for every pair of inputs (c >= 0, finite): the constant term of a kernel
    sum, as in `SST(0.4) + 1.0`. `value` is an array leaf: it can be learned or vmapped.

    >>> import jkern
    >>> (jkern.SST(0.4) + 1.0).k2.gram([None, None]).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """

    value: Float[Array, ""]

    def __init__(self, value: Any = 1.0):
        if not isinstance(value, jax.core.Tracer):
            v = np.asarray(value)
            if v.ndim != 0 or not (np.isfinite(v) and v >= 0):
                raise InputError(f"a constant kernel's value must be a finite number >= 0, "
                                 f"got {value!r}")
        self.value = jnp.asarray(value, float)

    def gram(self, x1, x2=None, *, dtype=None, **options):
        check_options(self, options)
        dt = resolve_dtype(dtype)
        shape = (len(x1), len(x1) if x2 is None else len(x2))
        return into_out(jnp.broadcast_to(self.value.astype(dt), shape), options.get("out"))

    def diag(self, x, *, dtype=None, **options):
        check_options(self, options)
        return jnp.broadcast_to(self.value.astype(resolve_dtype(dtype)), (len(x),))


class Sum(AbstractKernel):
    """K = K1 + K2 (e.g. a tree kernel plus a vector kernel, SVM-Light-TK's `-C +`)."""

    k1: AbstractKernel
    k2: AbstractKernel

    def gram(self, x1, x2=None, *, dtype=None, **options):
        first, second, merge = _sides(options)
        g = (self.k1.gram(x1, x2, dtype=dtype, **first)
             + self.k2.gram(x1, x2, dtype=dtype, **second))
        merge()
        return into_out(g, options.get("out"))

    def diag(self, x, *, dtype=None, **options):
        return self.k1.diag(x, dtype=dtype, **options) + self.k2.diag(x, dtype=dtype, **options)

    def gram_and_diag(self, x1, x2, *, dtype=None, **options):
        first, second, merge = _sides(options)
        a = self.k1.gram_and_diag(x1, x2, dtype=dtype, **first)
        b = self.k2.gram_and_diag(x1, x2, dtype=dtype, **second)
        merge()
        return (into_out(a[0] + b[0], options.get("out")), a[1] + b[1], a[2] + b[2])


class Product(AbstractKernel):
    """K = K1 * K2, elementwise (SVM-Light-TK's `-C *`)."""

    k1: AbstractKernel
    k2: AbstractKernel

    def gram(self, x1, x2=None, *, dtype=None, **options):
        first, second, merge = _sides(options)
        g = (self.k1.gram(x1, x2, dtype=dtype, **first)
             * self.k2.gram(x1, x2, dtype=dtype, **second))
        merge()
        return into_out(g, options.get("out"))

    def diag(self, x, *, dtype=None, **options):
        return self.k1.diag(x, dtype=dtype, **options) * self.k2.diag(x, dtype=dtype, **options)

    def gram_and_diag(self, x1, x2, *, dtype=None, **options):
        first, second, merge = _sides(options)
        a = self.k1.gram_and_diag(x1, x2, dtype=dtype, **first)
        b = self.k2.gram_and_diag(x1, x2, dtype=dtype, **second)
        merge()
        return (into_out(a[0] * b[0], options.get("out")), a[1] * b[1], a[2] * b[2])


class Scaled(AbstractKernel):
    """K = c * K1 for a scalar weight c >= 0 (an array leaf: it can be learned)."""

    kernel: AbstractKernel
    weight: Float[Array, ""]

    def gram(self, x1, x2=None, *, dtype=None, **options):
        _whole_out(self, options)
        g = self.kernel.gram(x1, x2, dtype=dtype, **options)
        return _scale(g, self.weight)

    def diag(self, x, *, dtype=None, **options):
        d = self.kernel.diag(x, dtype=dtype, **options)
        return self.weight.astype(d.dtype) * d

    def gram_and_diag(self, x1, x2, *, dtype=None, **options):
        _whole_out(self, options)
        g, d1, d2 = self.kernel.gram_and_diag(x1, x2, dtype=dtype, **options)
        w = self.weight.astype(d1.dtype)
        return _scale(g, self.weight), w * d1, w * d2


def _whole_out(kernel: AbstractKernel, options: dict[str, Any]) -> None:
    """Refuses `processes="shared"` where `out` is rewritten in place after the Gram is in it
    (scaling, normalizing): every process would rewrite the one shared file, values already
    rewritten by another among them."""
    if options.get("processes") == "shared":
        raise InputError(f"{type(kernel).__name__} rewrites out= in place, which processes "
                         f"sharing one file cannot do; use processes=True (every process gets "
                         f"the whole matrix) and write it out from one process")


def _scale(g: Any, weight: jax.Array) -> Any:
    """weight * g; a NumPy `out` array is scaled in place, row chunk by row chunk."""
    if not isinstance(g, np.ndarray):
        return weight.astype(g.dtype) * g
    w = np.asarray(weight, g.dtype)
    for s in range(0, g.shape[0], ROW_CHUNK):
        g[s:s + ROW_CHUNK] *= w
    return g


# Rows per chunk when a NumPy `out` array is updated in place (a bounded working set).
ROW_CHUNK = 256


def _safe_normalize(g: jax.Array, d1: jax.Array, d2: jax.Array) -> jax.Array:
    """g / sqrt(d1 d2), 0 where a self-kernel is 0 (double where: finite gradients too)."""
    denom = d1[:, None] * d2[None, :]
    ok = denom > 0
    return jnp.where(ok, g / jnp.sqrt(jnp.where(ok, denom, 1)), 0)


class Normalized(AbstractKernel):
    """K(a, b) / sqrt(K(a, a) K(b, b)); 0 when either self-kernel is 0.

    >>> import jkern
    >>> t = jkern.trees.parse_penn("(S (NP (DT the)(NN dog))(VP (VBZ runs)))")
    >>> float(jkern.Normalized(jkern.SST(lam=0.4)).gram([t])[0, 0])
    1.0
    """

    kernel: AbstractKernel

    def gram(self, x1, x2=None, *, dtype=None, **options):
        _whole_out(self, options)
        if x2 is None:
            g = self.kernel.gram(x1, None, dtype=dtype, **options)
            if isinstance(g, np.ndarray):  # the caller's `out`
                d = np.diagonal(g).copy()
                return _normalize_rows(g, d, d, unit_diagonal=True)
            d = jnp.diagonal(g)
            out = _safe_normalize(g, d, d)
            # exact ones on the diagonal (where the self-kernel is not 0)
            return jnp.where(jnp.eye(g.shape[0], dtype=bool) & (d > 0)[:, None], 1, out)
        return self.gram_and_diag(x1, x2, dtype=dtype, **options)[0]

    def diag(self, x, *, dtype=None, **options):
        return _unit(self.kernel.diag(x, dtype=dtype, **options))

    def gram_and_diag(self, x1, x2, *, dtype=None, **options):
        _whole_out(self, options)
        g, d1, d2 = self.kernel.gram_and_diag(x1, x2, dtype=dtype, **options)
        if isinstance(g, np.ndarray):  # the caller's `out`
            g = _normalize_rows(g, np.asarray(d1), np.asarray(d2))
        else:
            g = _safe_normalize(g, d1, d2)
        return g, _unit(d1), _unit(d2)


def _unit(d: jax.Array) -> jax.Array:
    """A normalized kernel's self-kernels: 1, or 0 where the raw self-kernel is 0."""
    return jnp.where(d > 0, 1, 0).astype(d.dtype)


def _normalize_rows(g: np.ndarray, d1: np.ndarray, d2: np.ndarray, *,
                    unit_diagonal: bool = False) -> np.ndarray:
    """`_safe_normalize` (the same arithmetic) in place on a NumPy `out` array, row chunk by
    row chunk."""
    d1, d2 = d1.astype(g.dtype), d2.astype(g.dtype)
    for s in range(0, g.shape[0], ROW_CHUNK):
        part = g[s:s + ROW_CHUNK]
        denom = d1[s:s + ROW_CHUNK, None] * d2[None, :]
        ok = denom > 0
        part[...] = np.where(ok, part / np.sqrt(np.where(ok, denom, 1)), 0)
        if unit_diagonal:
            rows = np.arange(len(part))
            part[rows, rows + s] = np.where(d1[s:s + len(part)] > 0, 1, part[rows, rows + s])
    return g
