"""Readers of the file formats before `jkern.save`'s (docs/save.md, "Old files"): the
`jkern.nystrom/1` projector files, the `jkern-kda-1` KDA files and the `jkern.model/1` files of
`jkern train`, read into today's objects. Nothing writes these formats any more."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._nystrom import Nystrom, NystromEnsemble
from ._pipeline import NystromModel
from .errors import InputError, ModelFileError
from .kda._model import KDA
from .kernels import _base, _tree_kernels, _vector
from .svm._dcd import LinearSVM
from .svm._expansion import KernelExpansion
from .trees._penn import parse_penn

_KERNELS = {
    cls.__name__: cls
    for module in (_base, _tree_kernels, _vector)
    for cls in vars(module).values()
    if isinstance(cls, type) and issubclass(cls, _base.AbstractKernel)
    and not cls.__name__.startswith("Abstract")
}


_OLD = {  # format: (what it is, what to do when it no longer loads)
    "jkern.nystrom/1": ("Nyström projector file", "refit the projector"),
    "jkern-kda-1": ("KDA file", "retrain the model"),
    "jkern.model/1": ("`jkern train` model file", "retrain the model"),
}


def load_legacy(source: str) -> Any:
    """A file of the formats before this one, as the objects of today (docs/save.md)."""

    with np.load(source, allow_pickle=False) as data:
        old = "jkern-kda-1" if "kda.header" in data.files else json.loads(
            str(data["header"])).get("format")
        if old not in _OLD:
            raise ModelFileError(f"{source}: not a jkern model file (truncated or corrupt): "
                                 f"unknown format {old!r}")
        try:
            if old == "jkern.nystrom/1":
                return _projector_from_arrays(data, source=source)
            if old == "jkern-kda-1":
                model = _kda_from_arrays(data, source=source)
                if "nystrom.header" not in data.files:
                    return model
                return NystromModel(_projector_from_arrays(data, "nystrom.", source), model)
            return _old_cli_model(data, source)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
            what, todo = _OLD[old]
            raise ModelFileError(f"{source}: an old jkern {what} (format {old}) that this jkern "
                                 f"cannot read ({err}); {todo}") from err


def _old_cli_model(data: Any, source: str) -> Any:
    """A `jkern train` file of jkern 0.1: `NystromModel` (dcd, kda) or `KernelExpansion`
    (ksvm, cpa; those files kept no training indices, so `support` counts 0, 1, ...)."""
    algo = json.loads(str(data["header"]))["algo"]
    classes = tuple(str(c) for c in data["classes"])
    if algo in ("dcd", "kda"):
        projector = _projector_from_arrays(data, "projector/", source)
        head = (LinearSVM(w=jnp.asarray(data["w"]), b=jnp.asarray(data["b"]), classes=classes)
                if algo == "dcd" else _kda_from_arrays(data, "kda/", source))
        return NystromModel(projector, head)
    if algo not in ("ksvm", "cpa"):
        raise InputError(f"unknown algorithm {algo!r}")
    kernel = _kernel_from_spec(json.loads(str(data["kernel_spec"])), data)
    support = tuple(parse_penn(str(s), source=f"{source}:support_trees")
                    for s in data["support_trees"])
    return KernelExpansion(kernel, jnp.asarray(data["coef"]), jnp.asarray(data["intercept"]),
                           tuple(range(len(support))), support, classes)


def _kernel_from_spec(spec: dict[str, Any], arrays: Any) -> _base.AbstractKernel:
    """The kernel `kernel_to_spec` described (`arrays`: a mapping such as an open `.npz`)."""
    cls = _KERNELS.get(str(spec.get("type")))
    if cls is None:
        raise InputError(f"unknown kernel type {spec.get('type')!r} in saved spec")
    kernel = object.__new__(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    if set(spec["fields"]) != names:
        raise InputError(f"saved {cls.__name__} has fields {sorted(spec['fields'])}, "
                         f"expected {sorted(names)}")
    for name, entry in spec["fields"].items():
        if "type" in entry:
            value: Any = _kernel_from_spec(entry, arrays)
        elif "array" in entry:
            value = jnp.asarray(arrays[entry["array"]])
        elif "tuple" in entry:
            value = tuple(entry["tuple"])
        else:
            value = entry["value"]
        object.__setattr__(kernel, name, value)
    return kernel


def _projector_from_arrays(data: Any, prefix: str = "", source: str = "<arrays>"
                          ) -> Nystrom | NystromEnsemble:
    """The projector `projector_arrays` described (`data`: a mapping such as an open `.npz`
    of the old `jkern.nystrom/1` format)."""
    key = f"{prefix}header"
    if key not in data:
        raise ModelFileError(f"{source}: not a jkern Nyström projector file")
    header = json.loads(str(data[key]))
    if header.get("format") != "jkern.nystrom/1":
        raise ModelFileError(f"{source}: not a jkern Nyström projector file")
    members = []
    for e, spec in enumerate(header["kernels"]):
        landmarks = tuple(parse_penn(str(s), source=f"{source}:landmark")
                          for s in data[f"{prefix}m{e}.landmarks"])
        members.append(Nystrom(_kernel_from_spec(spec, data), landmarks,
                               jnp.asarray(data[f"{prefix}m{e}.projection"])))
    return NystromEnsemble(tuple(members)) if header["ensemble"] else members[0]


def _kda_from_arrays(data: Any, prefix: str = "kda.", source: str = "<arrays>") -> KDA:
    """The model `kda_arrays` described (`data`: a mapping such as an open `.npz`)."""
    if f"{prefix}header" not in data:
        raise ModelFileError(f"{source}: not a jkern KDA file")
    header = json.loads(str(data[f"{prefix}header"]))
    if header.get("format") != "jkern-kda-1":
        raise ModelFileError(f"{source}: not a jkern KDA file (format {header.get('format')!r})")
    leaves = [jnp.asarray(data[f"{prefix}leaf{i}"]) for i in range(header["n_leaves"])]
    # the tree structure comes from a skeleton of the same configuration, built abstractly:
    # shapes only, so widths the file merely claims allocate nothing
    skeleton = jax.eval_shape(lambda: KDA.init(
        leaves[0], header["classes"], key=jax.random.PRNGKey(0), hidden=header["hidden"],
        train_nystrom=header["train_nystrom"], dtype=leaves[0].dtype))
    template = jax.tree_util.tree_leaves(skeleton)
    if len(template) != len(leaves) or any(
            a.shape != b.shape for a, b in zip(template, leaves)):
        raise InputError(f"{source}: the saved arrays do not fit a KDA of the saved "
                         "configuration")
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(skeleton), leaves)
