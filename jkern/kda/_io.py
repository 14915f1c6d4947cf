"""Saving a trained KDA with its Nyström projector in one file: `save_kda` and `load_kda` wrap
`jkern.save` / `jkern.load`. `kda_from_arrays` reads the old `jkern-kda-1` arrays (old files);
`kda_arrays` writes them until the CLI writes with `jkern.save`."""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._io import load, save
from .._nystrom import Nystrom, NystromEnsemble
from .._pipeline import NystromModel
from ..errors import ModelFileError
from ._model import KDA

_FORMAT = "jkern-kda-1"


def kda_arrays(model: KDA, prefix: str = "kda.") -> dict[str, np.ndarray]:
    """The named arrays (with a JSON header) describing `model`, for `.npz` files.

    The labels must be JSON values (ints, floats, strings)."""
    classes = [c.item() if isinstance(c, np.generic) else c for c in model.classes]
    try:
        json.dumps(classes)
    except TypeError as e:
        raise TypeError(f"the model's classes must be JSON values to be saved: {e}") from None
    if model.nystrom.ndim != 2:
        raise ValueError("save one model, not a stacked grid (take grid_member(models, g))")
    leaves = jax.tree_util.tree_leaves(model)
    header = {"format": _FORMAT, "classes": classes,
              "hidden": [int(layer.weight.shape[0]) for layer in model.hidden],
              "train_nystrom": model.train_nystrom, "n_leaves": len(leaves)}
    arrays = {f"{prefix}leaf{i}": np.asarray(a) for i, a in enumerate(leaves)}
    arrays[f"{prefix}header"] = np.array(json.dumps(header))
    return arrays


def kda_from_arrays(data: Any, prefix: str = "kda.", source: str = "<arrays>") -> KDA:
    """The model `kda_arrays` described (`data`: a mapping such as an open `.npz`)."""
    if f"{prefix}header" not in data:
        raise ValueError(f"{source}: not a jkern KDA file")
    header = json.loads(str(data[f"{prefix}header"]))
    if header.get("format") != _FORMAT:
        raise ValueError(f"{source}: not a jkern KDA file (format {header.get('format')!r})")
    leaves = [jnp.asarray(data[f"{prefix}leaf{i}"]) for i in range(header["n_leaves"])]
    # the tree structure comes from a skeleton of the same configuration
    skeleton = KDA.init(jax.random.PRNGKey(0), leaves[0], header["classes"],
                        hidden=header["hidden"], train_nystrom=header["train_nystrom"],
                        dtype=leaves[0].dtype)
    template = jax.tree_util.tree_leaves(skeleton)
    if len(template) != len(leaves) or any(
            a.shape != b.shape for a, b in zip(template, leaves)):
        raise ValueError(f"{source}: the saved arrays do not fit a KDA of the saved "
                         "configuration")
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(skeleton), leaves)


def save_kda(path: str | os.PathLike[str], model: KDA,
             projector: Nystrom | NystromEnsemble | None = None) -> None:
    """`jkern.save(path, model)`, or with the projector whose landmarks give its input
    columns, `jkern.save(path, jkern.NystromModel(projector, model))`."""
    save(path, model if projector is None else NystromModel(projector, model))


def load_kda(path: str | os.PathLike[str]) -> tuple[KDA, Nystrom | NystromEnsemble | None]:
    """`(model, projector or None)` from a file of `save_kda` (or of `jkern.save` holding a
    KDA or a `NystromModel` with a KDA head; also the old `jkern-kda-1` files). Predictions
    of the reloaded model are bit-identical."""
    obj = load(path)
    if isinstance(obj, NystromModel) and isinstance(obj.head, KDA):
        return obj.head, obj.projector
    if isinstance(obj, KDA):
        return obj, None
    raise ModelFileError(f"{os.fspath(path)}: holds a {type(obj).__name__}, not a jkern KDA "
                         "model")
