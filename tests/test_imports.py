"""The package's import structure: no cycles between jkern modules, every module importable on
its own, the command line on top (nothing in the library imports it), and data flowing one way
(DESIGN.md): every module on a floor, no import running back up the floors, no learner reading
another learner's private modules, `data/` importing no learner."""

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


def _python(code: str) -> subprocess.CompletedProcess:
    """`code` run by a fresh interpreter, which must exit 0 (its stderr's end otherwise)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


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
    assert _python(code).stdout.startswith("ok")


def test_imports_leave_the_garbage_collector_as_they_found_it():
    # `jkern.pa` and the public names import with the cyclic collector paused
    # (`_loading.collector_paused`): on again after, and still off where the caller had
    # turned it off; an import that fails turns it back on too
    code = (
        "import gc, sys\n"
        "import jkern.pa\n"
        "on = gc.isenabled()\n"
        "gc.disable()\n"
        "jkern.SparseRows\n"
        "off = not gc.isenabled()\n"
        "gc.enable()\n"
        "from jkern._loading import collector_paused\n"
        "try:\n"
        "    with collector_paused():\n"
        "        assert not gc.isenabled()\n"
        "        import jkern._no_such_module\n"
        "except ImportError:\n"
        "    pass\n"
        "print(on, off, gc.isenabled())\n"
    )
    assert _python(code).stdout.split() == ["True", "True", "True"]


# The floors, bottom to top (DESIGN.md: text -> trees -> forest -> Delta -> Gram / Nystrom ->
# learner -> metrics; the command line on top). A module imports only from its own floor or
# below. Every module must be on one: a new top-level module is placed here on purpose.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("jkern", "jkern.errors", "jkern._version", "jkern._kernel_names", "jkern._trust",
              "jkern._cpus",
              "jkern._cache", "jkern._programs", "jkern._startup", "jkern._executable_file",
              "jkern._executables", "jkern._validate", "jkern._solution", "jkern._sparse",
              "jkern._rows", "jkern._labels", "jkern._progress", "jkern._unique", "jkern._memory",
              "jkern._loading", "jkern.metrics")),
    ("trees", ("jkern.trees",)),
    ("kernels", ("jkern.kernels",)),
    ("data", ("jkern.data",)),
    ("learners", ("jkern.svm", "jkern.kda", "jkern.pa", "jkern.ds")),
    ("pipelines", ("jkern._nystrom", "jkern._pipeline", "jkern._train_trees", "jkern._legacy",
                   "jkern._io", "jkern.io", "jkern.sklearn", "jkern._api")),
    ("command line", ("jkern.cli", "jkern.__main__")),
]
LEARNERS = ("jkern.svm", "jkern.kda", "jkern.pa", "jkern.ds")


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def floor_of(name: str) -> int | None:
    """The floor of module `name` (its package's, for a module inside a package)."""
    found = [(len(p), i) for i, (_, members) in enumerate(FLOORS) for p in members
             if (_within(name, p) if p != "jkern" else name == "jkern")]
    return max(found)[1] if found else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` for every import of a module on a higher floor than the importer's."""
    bad = []
    for name, deps in sorted(graph.items()):
        for dep in sorted(deps):
            a, b = floor_of(name), floor_of(dep)
            if a is not None and b is not None and b > a:
                bad.append(f"{name} ({FLOORS[a][0]}) -> {dep} ({FLOORS[b][0]})")
    return bad


def private_learner_imports(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` where a learner's module imports another learner's private module."""
    bad = []
    for name, deps in sorted(graph.items()):
        mine = next((p for p in LEARNERS if _within(name, p)), None)
        if mine is None:
            continue
        for dep in sorted(deps):
            theirs = next((p for p in LEARNERS if _within(dep, p)), None)
            if theirs is not None and theirs != mine and any(
                    part.startswith("_") and not part.startswith("__")
                    for part in dep.split(".")[2:]):
                bad.append(f"{name} -> {dep}")
    return bad


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_module_is_on_a_floor():
    missing = sorted(name for name in _modules() if floor_of(name) is None)
    assert not missing, f"place these on a floor (tests/test_imports.py FLOORS): {missing}"


def test_no_import_runs_back_up_the_floors():
    bad = upward_imports(_graph())
    assert not bad, "\n".join(bad)


def test_no_learner_imports_another_learners_private_modules():
    bad = private_learner_imports(_graph())
    assert not bad, "\n".join(bad)


def test_data_never_imports_a_learner():
    graph = _graph()
    bad = [f"{name} -> {dep}" for name, deps in sorted(graph.items())
           if _within(name, "jkern.data") for dep in sorted(deps)
           if any(_within(dep, p) for p in LEARNERS)]
    assert not bad, "\n".join(bad)


def test_the_rules_fail_on_what_issue_36_found():
    """Each rule on the edges it was written against (as they were before issue 36)."""
    found = {"jkern._validate": {"jkern.kernels._base"},
             "jkern.ds._bcd": {"jkern.svm._rows"},
             "jkern.data._attachment": {"jkern.pa"}}
    assert upward_imports(found) == [
        "jkern._validate (base) -> jkern.kernels._base (kernels)",
        "jkern.data._attachment (data) -> jkern.pa (learners)"]
    assert private_learner_imports(found) == ["jkern.ds._bcd -> jkern.svm._rows"]
    # a learner's public package is another learner's to use; its own modules, its own
    assert private_learner_imports({"jkern.ds._fit": {"jkern.svm", "jkern.ds._bcd"}}) == []


def _reexports(path: Path) -> set[str]:
    """The public names an `__init__.py` re-exports as `from .x import name as name`
    (those under `if TYPE_CHECKING:` included: the lazily loaded names)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            found |= {a.asname for a in node.names
                      if a.asname == a.name and not a.name.startswith("_")}
    return found


def _exported(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                  for t in node.targets)):
            return ast.literal_eval(node.value)
    return None


def test_each_package_keeps_one_export_list():
    """`__all__` (what the API pages list) names exactly the re-exported names, once: no
    second list beside it (issue 36: `jkern.kda` kept three)."""
    for init in sorted(PACKAGE.rglob("__init__.py")):
        listed = _exported(init)
        if listed is None or init.parent.name == "cli":
            continue
        where = init.relative_to(PACKAGE.parent)
        assert len(listed) == len(set(listed)), f"{where}: a name listed twice"
        assert set(listed) == _reexports(init), (
            f"{where}: __all__ and the re-exports differ: "
            f"{sorted(set(listed) ^ _reexports(init))}")
        tree = ast.parse(init.read_text(encoding="utf-8"))
        lists = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name) and isinstance(n.value, (ast.List, ast.Tuple))
                 and t.id != "__all__"]
        assert not lists, f"{where}: a second list of names: {lists}"


def test_pa_exports_no_internals():
    import jkern.pa

    internals = {"CHUNK", "SCALE", "TIE_EPS", "TIE_TICKS", "GROUP"}
    assert not internals & set(jkern.pa.__all__)
    assert not internals & set(vars(jkern.pa))


def test_a_public_name_loads_its_own_module_only():
    """`jkern.<name>` imports the module defining the name, not the library whole: a PA-I
    script (`jkern.SparseRows`, `jkern.pa`) never imports the tree kernels or the SVMs; and
    every name of the one list (`_api.py`) is the object `_api` itself exports."""
    code = (
        "import sys, jkern\n"
        "X = jkern.SparseRows.from_rows([{0: 1.0}])\n"
        "fit = jkern.pa.fit\n"
        "heavy = [m for m in ('jkern.kernels', 'jkern.svm', 'jkern.kda', 'jkern._api')\n"
        "         if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "names = [n for n in dir(jkern) if not n.startswith('_')]\n"
        "values = {n: getattr(jkern, n) for n in names}\n"
        "import jkern._api as api\n"
        "public = [n for n in vars(api) if not n.startswith('_')]\n"
        "assert sorted(public) == sorted(names), set(public) ^ set(names)\n"
        "assert all(values[n] is getattr(api, n) for n in public)\n"
        "try:\n"
        "    jkern.no_such_name\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    _python(code)
