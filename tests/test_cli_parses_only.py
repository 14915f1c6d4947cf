"""The command line parses arguments and calls the public library, nothing more (DESIGN.md:
"cli/: argument parsing only, ... calling the public library"). Every module under jkern/cli/
is read with `ast` and held to two rules, each of which a test below shows can fail:

1. **Public imports only.** No import of a private jkern module (`jkern._io`,
   `jkern.trees._io`, `from jkern import _cache`, `from .. import _progress`) and no
   attribute `jkern._x`; the CLI's own modules (`jkern.cli._common`, `from . import _gram`)
   are its business. What a command needs from the library is public (docs/api).
2. **No computation on arrays.** The arrays a command meets come from library calls, and it
   only passes them on or converts them for output (`.tolist()`, `.shape`, `.dtype`,
   `float(x)`). Statically, that means:
   - no import of numpy, scipy or a JAX submodule, and from `jax` only what sets a command
     up: `jax.config.update`, `jax.random.PRNGKey` / `key` / `split` (a key per consumer,
     docs/learners.md), `jax.devices`;
   - no call of an array method that computes (`ARRAY_METHODS`: reductions, sorts, reshapes,
     `where`, `astype`, ...), on anything;
   - no multi-axis or `None`/`...` indexing (`a[:, 1:]`, `a[i, k]`) outside annotations;
   - no `@`, and other arithmetic (`+ - * / // % **`, bitwise, unary minus) only where an
     operand is evidently a Python number or text: a literal (number, string, f-string,
     list or tuple display), or a call of `len`, `int`, `float`, `str` or `time.perf_counter`
     (`time.perf_counter() - t0`, `len(names) - 1`, `"a" + b`). `x - y` of two names is
     refused: it may be arrays. (A literal operand is taken as evidence: `x / 2` of an array
     would slip through, but not the indexing, reduction or import that produced `x`.)

Builtins over Python collections (`sorted` of label names, `sum` of lengths) are allowed: they
are how a command words its summary line, not array computation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[1] / "jkern" / "cli"

ARRAY_MODULES = ("numpy", "scipy", "jax.numpy", "jax.lax", "jax.scipy", "jax.nn", "jax.ops")
JAX_ALLOWED = {"jax.config.update", "jax.random.PRNGKey", "jax.random.key", "jax.random.split",
               "jax.devices"}
ARRAY_METHODS = {
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "bincount", "clip",
    "count_nonzero", "cumprod", "cumsum", "diff", "divmod", "dot", "flatten", "isfinite",
    "isnan", "matmul", "max", "mean", "min", "nanmax", "nanmean", "nanmin", "nansum",
    "nonzero", "prod", "ravel", "repeat", "reshape", "round", "searchsorted",
    "sort", "squeeze", "std", "sum", "swapaxes", "take", "tile", "transpose", "unique", "var",
    "where",
}
SCALAR_CALLS = {"len", "int", "float", "str", "time.perf_counter"}
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
              ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)


def _private(dotted: str) -> bool:
    """Whether a jkern module path (or `module.name`) names something private outside the CLI
    (a part `_x`, not a dunder)."""
    parts = dotted.split(".")
    if parts[0] != "jkern" or parts[:2] == ["jkern", "cli"]:
        return False
    return any(p.startswith("_") and not p.startswith("__") for p in parts[1:])


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` of a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation (`tuple[str, ...]` is a type, not indexing)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                      args.kwarg]:
                if a is not None and a.annotation is not None:
                    roots.append(a.annotation)
            if node.returns is not None:
                roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for root in roots for n in ast.walk(root)}


def _scalar(node: ast.AST, aliases: dict[str, str]) -> bool:
    """Whether `node` is evidently a Python number or text (or a list/tuple display)."""
    if isinstance(node, (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.ListComp)):
        return True
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Constant):
            return True  # a method of a literal: ", ".join(...)
        name = _dotted(node.func)
        if name is not None:
            head, _, rest = name.partition(".")
            name = ".".join(filter(None, [aliases.get(head, head), rest]))
        return name in SCALAR_CALLS
    if isinstance(node, ast.BinOp):
        return _scalar(node.left, aliases) and _scalar(node.right, aliases)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.operand, ast.Constant)
    return False


def violations(source: str, module: str) -> list[str]:
    """What breaks the two rules in the source of `module` (`jkern.cli.<name>`), as
    `line: problem` strings."""
    tree = ast.parse(source)
    package = module if module == "jkern.cli" else module.rpartition(".")[0]
    found: list[str] = []
    aliases: dict[str, str] = {}  # local name -> the module it is bound to

    def bad(node: ast.AST, what: str) -> None:
        found.append(f"{module}:{getattr(node, 'lineno', '?')}: {what}")

    def check_module(node: ast.AST, name: str) -> None:
        if _private(name):
            bad(node, f"imports the private {name}")
        if any(name == m or name.startswith(m + ".") for m in ARRAY_MODULES):
            bad(node, f"imports {name} (array computation belongs in the library)")
        elif name.startswith("jax.") and name not in JAX_ALLOWED:
            bad(node, f"imports {name} (from JAX only {sorted(JAX_ALLOWED)})")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                check_module(node, alias.name)
                aliases[alias.asname or alias.name.partition(".")[0]] = (
                    alias.name if alias.asname else alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "jax" or base.startswith("jax."):
                bad(node, f"imports from {base} (use `import jax` and "
                          f"{sorted(JAX_ALLOWED)})")
            check_module(node, base)
            for alias in node.names:
                check_module(node, f"{base}.{alias.name}")
                aliases[alias.asname or alias.name] = f"{base}.{alias.name}"

    annotations = _annotation_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Attribute) and not isinstance(getattr(node, "ctx", None),
                                                               ast.Store):
            name = _dotted(node)
            if name is not None:
                head, _, rest = name.partition(".")
                full = f"{aliases.get(head, head)}.{rest}"
                if full.startswith("jkern.") and _private(full):
                    bad(node, f"uses the private {full}")
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name is not None:
                head, _, rest = name.partition(".")
                full = ".".join(filter(None, [aliases.get(head, head), rest]))
                if full.startswith("jax.") and full not in JAX_ALLOWED:
                    bad(node, f"calls {full} (from JAX only {sorted(JAX_ALLOWED)})")
            # a method of a value (not a function of an imported module: math.isfinite)
            if (isinstance(node.func, ast.Attribute) and node.func.attr in ARRAY_METHODS
                    and (name is None or name.partition(".")[0] not in aliases)):
                bad(node, f"calls .{node.func.attr}() (array computation)")
        elif isinstance(node, ast.Subscript):
            index = node.slice
            parts = index.elts if isinstance(index, ast.Tuple) else [index]
            if isinstance(index, ast.Tuple) or any(
                    isinstance(p, ast.Constant) and p.value in (None, Ellipsis) for p in parts):
                bad(node, "multi-axis or None/... indexing (array computation)")
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                bad(node, "matrix product @ (array computation)")
            elif isinstance(node.op, ARITHMETIC) and not (
                    _scalar(node.left, aliases) or _scalar(node.right, aliases)):
                bad(node, f"arithmetic {ast.unparse(node)!r} without a literal or "
                          "len/int/float/str/time.perf_counter operand (may be arrays)")
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.op, ast.MatMult) or (
                    isinstance(node.op, ARITHMETIC) and not _scalar(node.value, aliases)):
                bad(node, f"arithmetic {ast.unparse(node)!r} (may be arrays)")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Invert)):
            if not isinstance(node.operand, ast.Constant):
                bad(node, f"unary {ast.unparse(node)!r} (may be arrays)")
    return found


def _cli_modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(CLI.rglob("*.py")):
        parts = ["jkern", "cli", *path.relative_to(CLI).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def test_the_walk_sees_every_command_module():
    names = {name for name, _ in _cli_modules()}
    assert {"jkern.cli", "jkern.cli._common", "jkern.cli._gram", "jkern.cli._nystrom",
            "jkern.cli._train", "jkern.cli._predict", "jkern.cli._convert", "jkern.cli._parse",
            "jkern.cli._ds", "jkern.cli._pa"} <= names


@pytest.mark.parametrize("module, path", _cli_modules(), ids=[m for m, _ in _cli_modules()])
def test_cli_module_parses_and_calls_the_public_library(module, path):
    problems = violations(path.read_text(encoding="utf-8"), module)
    assert not problems, "\n".join(problems)


# What the rules caught in the CLI before they existed (issue 36): each must fail.
CAUGHT = [
    ("from jkern._io import write_atomic", "private jkern._io"),
    ("from jkern.trees._io import located_trees", "private jkern.trees._io"),
    ("from .._train_trees import positive_class", "private jkern._train_trees"),
    ("from jkern import _cache", "private jkern._cache"),
    ("import jkern\njkern._progress.phase(True, 'x')", "private jkern._progress"),
    ("import numpy as np", "imports numpy"),
    ("from jax import numpy as jnp", "imports from jax"),
    ("import jax.numpy as jnp", "imports jax.numpy"),
    ("import jax\njax.numpy.argsort(x)", "calls jax.numpy.argsort"),
    ("order = scores.ravel()", ".ravel()"),
    ("ok = values.all()", ".all()"),
    ("c = conv.reshape(-1).tolist()", ".reshape()"),
    ("diff = scores[:, pos] - scores[:, 1 - pos]", "multi-axis"),
    ("x = scores[..., 0]", "multi-axis"),
    ("v = diff / d", "arithmetic"),
    ("v = -scores", "unary"),
    ("g = a @ b", "matrix product"),
    ("total += values", "arithmetic"),
]


@pytest.mark.parametrize("source, expected", CAUGHT, ids=[c[0] for c in CAUGHT])
def test_the_rules_fail_on_what_they_forbid(source, expected):
    problems = violations(source, "jkern.cli._example")
    assert any(expected in p for p in problems), problems


ALLOWED = [
    "from ._common import say\nfrom . import _gram\nfrom jkern.cli._common import CLIError",
    "import jax\nkey = jax.random.PRNGKey(0)\njax.config.update('jax_enable_x64', True)",
    "import jkern\nm = jkern.io.write_atomic\nv = jkern.metrics.accuracy(a, b)",
    "import time\nt = time.perf_counter() - t0\nn = len(names) - 1\ns = 'a' + b\nk = best + 1",
    "rows = [str(v) for v in values.tolist()]\nshape = x.shape[1]\nfirst = names[:5]",
    "def f(x: tuple[str, ...]) -> dict[str, int | None]:\n    y: list[tuple[int, int]] = []",
    "from jkern import __version__",
]


@pytest.mark.parametrize("source", ALLOWED)
def test_the_rules_let_parsing_code_through(source):
    assert violations(source, "jkern.cli._example") == []
