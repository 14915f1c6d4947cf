"""The package's import structure: no cycles between jkern modules, every module importable on
its own, and the command line on top (nothing in the library imports it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jkern"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The jkern modules `name` imports, at module level or inside functions (relative
    imports resolved; `from pkg import x` is an import of `pkg.x` when that is a module;
    imports for type checking only are left out)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # imports under `if TYPE_CHECKING:` never run: annotations only
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and getattr(block.test, "id", None) == "TYPE_CHECKING"
                   for stmt in block.body for n in ast.walk(stmt)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state and (found := visit(v)):
                return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_no_import_cycles():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # A package's __init__ re-exports its children; a child that imports its own package
    # (not a sibling module) would close a loop through it. Those edges are what we check.
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_library_never_imports_the_command_line():
    modules = _modules()
    for name, path in modules.items():
        if name == "jkern.cli" or name.startswith("jkern.cli.") or name == "jkern.__main__":
            continue
        cli = {m for m in _imports(name, path, modules) if m.startswith("jkern.cli")}
        assert not cli, f"{name} imports {sorted(cli)}"


def test_trees_never_import_the_learners():
    # data flows one way: text -> trees -> kernels -> learners (trees/ parses with spaCy for ds/)
    modules = _modules()
    above = ("jkern.ds", "jkern.svm", "jkern.kda", "jkern.pa", "jkern.kernels", "jkern.cli")
    for name, path in modules.items():
        if name == "jkern.trees" or name.startswith("jkern.trees."):
            bad = {m for m in _imports(name, path, modules) if m.startswith(above)}
            assert not bad, f"{name} imports {sorted(bad)}"


def test_every_module_imports_alone():
    # One fresh interpreter per module would cost a JAX import each; instead one interpreter
    # imports each module after dropping every jkern module from sys.modules.
    code = (
        "import importlib, sys\n"
        f"names = {sorted(_modules())!r}\n"
        "for name in names:\n"
        "    for m in [m for m in sys.modules if m == 'jkern' or m.startswith('jkern.')]:\n"
        "        del sys.modules[m]\n"
        "    importlib.import_module(name)\n"
        "print('ok', len(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("ok")
