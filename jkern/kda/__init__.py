"""The kernel-based deep architecture: a Nyström layer and an MLP (Croce et al., ACL 2017).

`train` picks the training rules from the data (the defaults of `jkern.train_kda`, the
scikit-learn `KDAClassifier` and `jkern train --algo kda`); `fit` runs the paper's loop as told.
The training side (`train`, `fit`, `adam`, ...) imports optax; it loads on first use, so importing
jkern (or a KDA model) does not pay for optax in processes that never train one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .. import _startup as _startup  # the compilation cache, program counts
from ._model import KDA as KDA

if TYPE_CHECKING:  # the training side, for type checkers; loaded on first use below
    from ._recipe import development_split as development_split
    from ._recipe import train as train
    from ._train import adam as adam
    from ._train import default_data_key as default_data_key
    from ._train import epoch_batches as epoch_batches
    from ._train import fit as fit
    from ._train import fit_grid as fit_grid
    from ._train import grid_member as grid_member
    from ._train import init_grid as init_grid
    from ._train import init_opt_state as init_opt_state
    from ._train import loss_fn as loss_fn
    from ._train import train_step as train_step

# The one export list: every name but KDA lives in `_train` or `_recipe` (which imports optax).
__all__ = [
    "KDA",
    "adam",
    "default_data_key",
    "development_split",
    "epoch_batches",
    "fit",
    "fit_grid",
    "grid_member",
    "init_grid",
    "init_opt_state",
    "loss_fn",
    "train",
    "train_step",
]


def __getattr__(name: str) -> Any:
    if name in __all__:  # the training side (`_recipe` imports `_train`)
        for module in ("._recipe", "._train"):
            found = vars(importlib.import_module(module, __name__))
            if name in found:
                return found[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
