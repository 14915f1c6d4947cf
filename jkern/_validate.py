"""Trace-safe checks shared by the learners (docs/learners.md, "Validation").

A value known now (a Python number, a NumPy array, a concrete JAX array) is checked at once
and a bad one raises `InputError` naming the argument; a traced value (inside `jit`, `vmap`,
`grad`) is checked with `equinox.error_if`, so a `jax.vmap` over C never trips on a Python
`if`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .errors import InputError


def is_traced(x: Any) -> bool:
    """Whether `x` is a tracer (inside `jit`, `vmap`, `grad`): its value is not known now."""
    return isinstance(x, jax.core.Tracer)


def concrete(x: Any) -> np.ndarray | None:
    """`x` as a NumPy array if its value is known now (not a tracer), else None."""
    if is_traced(x):
        return None
    if isinstance(x, (list, tuple)) and any(is_traced(v) for v in x):
        return None
    try:
        return np.asarray(x)
    except Exception:  # an abstract value
        return None


def host_array(x: Any) -> np.ndarray | None:
    """`x` as a NumPy array when reading it costs no copy to the host and no program: a
    NumPy array, or a concrete JAX array on the CPU (a view of its buffer). None for tracers
    and for arrays on an accelerator (checked there, without a host copy)."""
    if isinstance(x, np.ndarray):
        return x
    if not isinstance(x, jax.Array) or is_traced(x):
        return None
    try:
        if not all(d.platform == "cpu" for d in x.devices()):
            return None
        return np.asarray(x)
    except Exception:  # deleted or not addressable: let the device path report it
        return None


def to_device(x: Any, dtype: Any = None) -> Array:
    """A host value as a JAX array of `dtype`, converted on the host and moved: no program.
    (`jnp.asarray` of a NumPy array compiles a small program per shape and dtype, a cost
    every new process pays again.)"""
    a = np.asarray(x) if dtype is None else np.asarray(x, dtype=jnp.dtype(dtype))
    return jax.device_put(a)


def aligned_empty(shape: Any, dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous host array on XLA's 64-byte boundary: once filled,
    `shared_on_cpu` hands it to JAX without a copy."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(size + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + size].view(dtype).reshape(shape)


def shared_on_cpu(host: np.ndarray) -> Array:
    """A finished host array as a JAX array: the same memory, not a copy, where JAX computes
    on the CPU and the array is C-contiguous on XLA's 64-byte boundary (a large result then
    costs its size once, not twice); else moved (`to_device`): a read-only array too (DLPack
    cannot mark the shared memory read-only)."""
    if (jax.default_backend() == "cpu" and host.flags.c_contiguous and host.flags.writeable
            and host.ctypes.data % 64 == 0):
        return jax.dlpack.from_dlpack(host)
    return to_device(host)


def in_domain(name: str, value: Any, dtype: Any, inside: Callable[[Any], Any], what: str, *,
              scalar: bool = True) -> Array:
    """`value` as `dtype`, required finite and `inside` (`what` says the domain: "must be a
    finite number > 0"). Concrete values are checked now (`InputError`), traced ones (a
    vmapped grid) by `eqx.error_if` when the program runs. `scalar`: refuse arrays (vmap
    over a grid instead)."""
    v = concrete(value)
    if v is not None:
        if scalar and v.ndim != 0:
            raise InputError(f"{name} must be a scalar (vmap over a grid of {name}), "
                             f"got shape {v.shape}")
        if not np.all(np.isfinite(v) & inside(v)):
            raise InputError(f"{name} {what}, got {v if v.ndim == 0 else v.tolist()}")
        return value if isinstance(value, jax.Array) and value.dtype == dtype else \
            to_device(v, dtype)
    value = jnp.asarray(value, dtype)
    return eqx.error_if(value, ~jnp.all(jnp.isfinite(value) & inside(value)), f"{name} {what}")


def positive(name: str, value: Any, dtype: Any) -> Array:
    """`value` as a `dtype` scalar, required finite and > 0 (e.g. C, a tolerance)."""
    return in_domain(name, value, dtype, lambda v: v > 0, "must be a finite number > 0")


def nonnegative(name: str, value: Any, dtype: Any) -> Array:
    """`value` as a `dtype` scalar, required finite and >= 0 (e.g. a kernel's coef0)."""
    return in_domain(name, value, dtype, lambda v: v >= 0, "must be a finite number >= 0")


def positive_int(name: str, value: Any) -> int:
    """A static positive integer option (max_iter, epochs, ...)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def resolve_dtype(dtype: Any) -> jnp.dtype:
    """The float dtype to compute in (None: JAX's default float, float64 under x64, else
    float32); float64 needs JAX's x64 mode."""
    if dtype is None:
        return jnp.zeros((), float).dtype  # float64 under x64, else float32
    dt = jnp.dtype(dtype)
    if dt == jnp.float64 and not jax.config.read("jax_enable_x64"):
        raise InputError(
            "float64 needs JAX's 64-bit mode: call jax.config.update('jax_enable_x64', True) "
            "before using jkern (the jkern CLI does this for --dtype float64)"
        )
    if dt not in (jnp.float32, jnp.float64):
        raise InputError(f"dtype must be float32 or float64, got {dt}")
    return dt


def float_dtype(requested: Any, data: Any = None) -> Any:
    """The dtype a learner computes in: `requested`, else the data's floating dtype, else
    JAX's default float (float64 under x64). float64 without x64 is an error."""
    if requested is None and data is not None:
        dt = jnp.asarray(data).dtype if not hasattr(data, "dtype") else data.dtype
        if jnp.issubdtype(dt, jnp.floating):
            requested = dt
    return resolve_dtype(requested)


def plus_minus_labels(name: str, y: Any, n: int, dtype: Any) -> Array:
    """±1 labels `[n]` as `dtype`; concrete labels must hold both -1 and +1."""
    yv = concrete(y)
    if yv is not None:
        if yv.shape != (n,):
            raise InputError(f"{name} must hold one label per example ([{n}]), got shape "
                             f"{yv.shape}")
        if not np.all((yv == 1) | (yv == -1)):
            bad = np.unique(yv[(yv != 1) & (yv != -1)])[:5]
            raise InputError(f"{name} must hold only -1 and +1 (use the one-vs-rest learner "
                             f"for other labels), got {bad.tolist()}")
        if not (np.any(yv == 1) and np.any(yv == -1)):
            held = f"only the label {int(yv[0]):+d}" if n else "no labels"
            raise InputError(f"{name} holds {held}: a binary learner needs examples of both "
                             "classes (+1 and -1)")
        return to_device(yv, dtype)
    y = jnp.asarray(y)
    if y.shape != (n,):
        raise InputError(f"{name} must hold one label per example ([{n}]), got shape {y.shape}")
    return y.astype(dtype)


def class_weights(class_weight: Mapping[Any, Any] | str | None, classes: Sequence[Any],
                  labels: Any = None) -> Any:
    """Per-class weights in `classes` order from `None` (all 1), a mapping `label -> weight`
    (absent labels weigh 1) or `"balanced"` (n / (n_classes * count), from concrete
    `labels`). Concrete weights must be finite and > 0; traced ones are left to the solver's
    `error_if`. Returns a list (entries may be tracers)."""
    if class_weight is None:
        return [1.0] * len(classes)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise InputError(f"class_weight must be a mapping label -> weight, 'balanced' or "
                             f"None, got {class_weight!r}")
        lab = concrete(labels)
        if lab is None:
            raise InputError("class_weight='balanced' needs concrete labels (not traced)")
        counts = np.array([np.sum(lab == c) for c in classes], np.float64)
        if np.any(counts == 0):
            raise InputError("class_weight='balanced': a class has no examples")
        return (len(lab) / (len(classes) * counts)).tolist()
    if not isinstance(class_weight, Mapping):
        raise InputError("class_weight must be a mapping label -> weight (e.g. {1: 5.0, "
                         f"-1: 1.0}}), 'balanced' or None, got {type(class_weight).__name__}")
    known = {_key(c) for c in classes}
    unknown = [k for k in class_weight if _key(k) not in known]
    if unknown:
        raise InputError(f"class_weight names labels that are not classes: {unknown[:5]} "
                         f"(classes: {list(classes)[:10]})")
    by_key = {_key(k): w for k, w in class_weight.items()}
    weights = [by_key.get(_key(c), 1.0) for c in classes]
    for c, w in zip(classes, weights):
        v = concrete(w)
        if v is not None and not (v.ndim == 0 and np.isfinite(v) and v > 0):
            raise InputError(f"class_weight[{c!r}] must be a finite number > 0, got {w!r}")
    return weights


def _key(label: Any) -> Any:
    """A hashable, type-tolerant key: 1, 1.0 and np.int64(1) name the same class."""
    if isinstance(label, (np.generic, np.ndarray)):
        label = label.item()
    if isinstance(label, (int, float)) and not isinstance(label, bool):
        return float(label)
    return label


def finite(name: str, x: Any) -> None:
    """Concrete `x` must hold only finite values (checked where it lives: no host copy)."""
    if is_traced(x):
        return
    host = host_array(x) if isinstance(x, jax.Array) else np.asarray(x)
    a, xp = (x, jnp) if host is None else (host, np)  # on the host: no program
    if a.dtype.kind in "fc" and not bool(xp.all(xp.isfinite(a))):
        raise InputError(f"{name} holds NaN or inf values")


def kernel_fits(name: str, x: Any, kxx: Callable[[Any], Any], kernel: str, *,
                label: Callable[[int, int], Any] | None = None) -> None:
    """Refuse rows whose kernel value with themselves overflows: `x` is `[n, k]` (each row's
    entries: a dense row, or a sparse row's values) and `kxx(sq)` the kernel at x = y from
    |x|^2 = Σ x_f^2, computed in x's dtype. By Cauchy-Schwarz |x·y| <= max(|x|^2, |y|^2),
    so when every row's k(x, x) is finite no kernel value between rows overflows; a row
    whose k(x, x) is inf (finite values whose squares overflow) is an `InputError` naming
    it, its largest entry (`label(row, entry)`, else the entry's position) and why.
    Traced `x` is not checked."""
    if is_traced(x):
        return
    host = host_array(x) if isinstance(x, jax.Array) else np.asarray(x)
    a, xp = (x, jnp) if host is None else (host, np)  # on the host: no program to compile
    if a.dtype.kind not in "fc" or a.ndim != 2 or a.size == 0:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        ok = xp.isfinite(kxx(xp.sum(a * a, axis=1)))
    if bool(xp.all(ok)):
        return
    i = int(np.flatnonzero(~np.asarray(ok))[0])
    row = np.asarray(a[i])
    j = int(np.argmax(np.abs(row)))
    feature = label(i, j) if label is not None else j
    with np.errstate(over="ignore"):
        sq = float(np.sum(row.astype(np.float64) ** 2))
    raise InputError(f"{name}: row {i} (0-based) has feature {feature} = {row[j]:.6g}, and "
                     f"{kernel} of the row with itself overflows {a.dtype} (|x|^2 = Σ x_f^2 "
                     f"is {sq:.3g}): rescale the "
                     "features (e.g. divide by their largest magnitude)")


_Model = TypeVar("_Model")


def finite_model(model: _Model) -> _Model:
    """`model`, whose floating parameters must be finite (every `decision_function` and
    projector `embed` starts here): a model holding NaN or inf scores NaN, which labels every
    input one class.
    Concrete arrays are checked now (`InputError` naming the field); traced ones (a vmapped
    batch of models, a jitted call) by `equinox.error_if` in the returned model, which the
    caller uses instead."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(model)
    floats = [(i, leaf) for i, (_, leaf) in enumerate(leaves)
              if isinstance(leaf, (jax.Array, np.ndarray)) and leaf.dtype.kind in "fc"]
    concrete = [leaf for _, leaf in floats if not is_traced(leaf)]
    on_host = [host_array(a) for a in concrete]
    # on the host, checked there (no program); else one reduction (one device sync) over
    # every concrete array; the field is looked up only when one of them is not finite
    if all(h is not None for h in on_host):
        bad = not all(np.all(np.isfinite(h)) for h in on_host if h is not None)
    else:
        bad = bool(concrete) and not bool(
            jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in concrete])))
    if bad:
        for i, leaf in floats:
            if not is_traced(leaf) and not np.all(np.isfinite(np.asarray(leaf))):
                raise InputError(_nonfinite_message(model, leaves[i][0]))
    traced = [(i, leaf) for i, leaf in floats if is_traced(leaf)]
    if not traced:
        return model
    checked = [leaf for _, leaf in leaves]
    for i, leaf in traced:
        checked[i] = eqx.error_if(leaf, ~jnp.all(jnp.isfinite(leaf)),
                                  _nonfinite_message(model, leaves[i][0]))
    return jax.tree_util.tree_unflatten(treedef, checked)


def _nonfinite_message(model: Any, path: Any) -> str:
    where = jax.tree_util.keystr(path).lstrip(".") or "its parameters"
    return (f"the {type(model).__name__} holds NaN or inf values in {where}: it would give "
            "NaN for every input (retrain or refit it)")
