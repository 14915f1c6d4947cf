"""jkern: kernel methods over structured linguistic data, in JAX.

`import jkern` is light: the public names (one list, `jkern/_api.py`) load on first use
(PEP 562), so the `jkern` command's `--help` and `--version` never import JAX. `jkern.<name>`
imports the module that defines the name (and what it needs), not the library whole: a PA-I
script that uses `jkern.SparseRows` and `jkern.pa` never imports the tree kernels. The list is
read from `_api.py`'s source (its `from .module import name as name` lines), so it stays the
one list; `from jkern._api import *` still loads everything. The kernel names (`KERNEL_NAMES`,
`PARTIAL_TREE_KERNELS`, `WORD_VECTOR_KERNELS`) are plain tuples, here at once, and
`KERNEL_MEANINGS` a line on each.
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

    _public: dict[str, tuple[str, str | None]] | None = None

    def _where() -> dict[str, tuple[str, str | None]]:
        """Each public name's (module, attribute; None for a subpackage), from the
        re-exports in `_api.py`'s source, parsed once (it is not imported)."""
        global _public
        if _public is None:
            import ast
            from pathlib import Path

            source = (Path(__file__).resolve().parent / "_api.py").read_text(encoding="utf-8")
            found: dict[str, tuple[str, str | None]] = {}
            for node in ast.parse(source).body:
                if isinstance(node, ast.ImportFrom) and node.level == 1:
                    for alias in node.names:
                        public = alias.asname or alias.name
                        if public.startswith("_"):
                            continue
                        found[public] = ((f".{alias.name}", None) if node.module is None
                                         else (f".{node.module}", alias.name))
            _public = found
        return _public

    def __getattr__(name: str) -> Any:
        # private and dunder names (`_api` itself, pickle/copy probes) never load anything
        if name.startswith("_") or name not in _where():
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        module, attribute = _where()[name]
        from ._loading import collector_paused

        with collector_paused():  # (an import frees nothing: no collector passes)
            importlib.import_module("._startup", __name__)  # what loading jkern does once
            value = importlib.import_module(module, __name__)
        if attribute is not None:
            value = getattr(value, attribute)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*_where(), *(n for n in globals() if n.startswith("__"))})
