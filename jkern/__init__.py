"""jkern: kernel methods over structured linguistic data, in JAX.

`import jkern` is light: the public names (one list, `jkern/_api.py`) load on first use
(PEP 562), so the `jkern` command's `--help` and `--version` never import JAX. The first
`jkern.<name>` imports the library whole, as `import jkern` used to; the kernel names
(`KERNEL_NAMES`, `PARTIAL_TREE_KERNELS`, `WORD_VECTOR_KERNELS`) are plain tuples, here at once,
and `KERNEL_MEANINGS` a line on each.
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._kernel_names import KERNEL_MEANINGS as KERNEL_MEANINGS
from ._kernel_names import KERNEL_NAMES as KERNEL_NAMES
from ._kernel_names import PARTIAL_TREE_KERNELS as PARTIAL_TREE_KERNELS
from ._kernel_names import WORD_VECTOR_KERNELS as WORD_VECTOR_KERNELS
from ._version import __version__ as __version__

if TYPE_CHECKING:  # the public surface, for type checkers and editors
    from ._api import *  # noqa: F403
else:  # hidden from type checkers, which then still flag unknown names

    def __getattr__(name: str) -> Any:
        # private and dunder names (`_api` itself, pickle/copy probes) never load the library
        if name.startswith("_"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        api = importlib.import_module("._api", __name__)
        if name in globals():  # a subpackage the library imported (`jkern.data`)
            return globals()[name]
        try:
            value = getattr(api, name)
        except AttributeError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        api = importlib.import_module("._api", __name__)
        return sorted({*globals(), *(n for n in vars(api) if not n.startswith("_"))})
