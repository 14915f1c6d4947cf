"""The kernel spec of the old file formats (`jkern.nystrom/1`, `jkern.model/1`).

`jkern.save` / `jkern.load` (jkern/_io.py) now save kernels with everything else.
`kernel_from_spec` reads the kernels of old files; `kernel_to_spec` stays only until the CLI
writes with `jkern.save`. A kernel Module is rebuilt field by field, without running
`__init__` again, so the reloaded kernel has bit-identical parameters.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from . import _base, _tree_kernels, _vector

_CLASSES = {
    cls.__name__: cls
    for module in (_base, _tree_kernels, _vector)
    for cls in vars(module).values()
    if isinstance(cls, type) and issubclass(cls, _base.AbstractKernel)
    and not cls.__name__.startswith("Abstract")
}


def kernel_to_spec(kernel: _base.AbstractKernel, prefix: str = "kernel"):
    """`(spec, arrays)`: a JSON-able description and the array leaves it names.

    >>> import jkern
    >>> spec, arrays = kernel_to_spec(jkern.Normalized(jkern.PTK(0.4, 0.3)))
    >>> spec["type"], spec["fields"]["kernel"]["type"], sorted(arrays)
    ('Normalized', 'PTK', ['kernel.kernel.lam', 'kernel.kernel.mu'])
    """
    name = type(kernel).__name__
    if _CLASSES.get(name) is not type(kernel):
        raise TypeError(f"cannot save a kernel of type {name}: not a jkern kernel class")
    fields: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for field in dataclasses.fields(kernel):
        value = getattr(kernel, field.name)
        path = f"{prefix}.{field.name}"
        if isinstance(value, _base.AbstractKernel):
            fields[field.name], sub = kernel_to_spec(value, path)
            arrays.update(sub)
        elif hasattr(value, "shape") and hasattr(value, "dtype"):
            arrays[path] = np.asarray(value)
            fields[field.name] = {"array": path}
        elif isinstance(value, tuple):
            fields[field.name] = {"tuple": list(value)}
        elif value is None or isinstance(value, (bool, int, float, str)):
            fields[field.name] = {"value": value}
        else:
            raise TypeError(f"cannot save field {path} of type {type(value).__name__}")
    return {"type": name, "fields": fields}, arrays


def kernel_from_spec(spec: dict[str, Any], arrays: Any) -> _base.AbstractKernel:
    """The kernel `kernel_to_spec` described (`arrays`: a mapping such as an open `.npz`)."""
    cls = _CLASSES.get(str(spec.get("type")))
    if cls is None:
        raise ValueError(f"unknown kernel type {spec.get('type')!r} in saved spec")
    kernel = object.__new__(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    if set(spec["fields"]) != names:
        raise ValueError(f"saved {cls.__name__} has fields {sorted(spec['fields'])}, "
                         f"expected {sorted(names)}")
    for name, entry in spec["fields"].items():
        if "type" in entry:
            value: Any = kernel_from_spec(entry, arrays)
        elif "array" in entry:
            value = jnp.asarray(arrays[entry["array"]])
        elif "tuple" in entry:
            value = tuple(entry["tuple"])
        else:
            value = entry["value"]
        object.__setattr__(kernel, name, value)
    return kernel
