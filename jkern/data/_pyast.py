"""A corpus of real trees that every Python install has: the ASTs of standard-library functions."""

from __future__ import annotations

import ast
import pathlib
import sysconfig
import warnings
from collections.abc import Sequence
from typing import NamedTuple

from ..errors import InputError
from ..trees._tree import Tree

DEFAULT_PACKAGES: tuple[str, ...] = ("asyncio", "email", "http", "logging", "unittest", "xml")
"""Six standard-library packages of distinct styles (event loop and protocols, MIME parsing,
HTTP client/server, logging handlers, test framework, XML DOM/SAX/etree), each with more
than 200 functions in every CPython >= 3.11."""

DEFAULT_MAX_PER_PACKAGE = 150
DEFAULT_MIN_NODES = 10
DEFAULT_MAX_NODES = 400

# Directories whose files are the package's own test suite (moved out of the packages in 3.12+),
# skipped so the corpus means the same thing on every version.
_SKIP_DIRS = frozenset({"test", "tests", "idle_test", "__pycache__"})
# Fields that hold no structure: expression context (Load/Store/Del), `u"..."` markers, comments.
_SKIP_FIELDS = frozenset({"ctx", "kind", "type_comment"})


class StdlibData(NamedTuple):
    """Functions of the standard library as trees.

    Attributes:
        trees: one `Tree` per function (methods included; nested functions stay inside their
            enclosing function's tree).
        labels: the package each function comes from (e.g. `"email"`): the class label.
        names: qualified names, e.g. `"json.decoder.JSONDecoder.decode"`.
    """

    trees: list[Tree]
    labels: list[str]
    names: list[str]


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _constant_label(value: object) -> str:
    if value is None:
        return "None"
    if value is Ellipsis:
        return "Ellipsis"
    return type(value).__name__


def _child_items(node: ast.AST, identifiers: bool = True) -> list[ast.AST | str]:
    """The children of `node` in field order: AST nodes, or leaf labels (str)."""
    if isinstance(node, ast.Constant):
        return [_constant_label(node.value)]
    items: list[ast.AST | str] = []
    for field in node._fields:
        if field in _SKIP_FIELDS:
            continue
        value = getattr(node, field, None)
        if field == "body" and isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ):
            if value and _is_docstring(value[0]):
                value = value[1:]
        if isinstance(value, ast.AST):
            items.append(value)
        elif isinstance(value, str):  # identifiers: name, id, arg, attr, module, asname, ...
            if identifiers:
                items.append(value)
        elif isinstance(value, list):
            # Optional entries (`None` in kw_defaults or dict keys) are skipped; identifier
            # lists (Global.names, MatchClass.kwd_attrs) become leaves.
            items.extend(v for v in value
                         if isinstance(v, ast.AST) or (identifiers and isinstance(v, str)))
        # ints (ImportFrom.level, comprehension.is_async) and None are dropped.
    return items


def ast_to_tree(node: ast.AST, *, identifiers: bool = True) -> Tree:
    """Convert a Python AST node to a `Tree` (iteratively: no recursion limit).

    Internal nodes are labelled with the AST class name. An identifier field becomes a leaf
    child holding the identifier; a constant becomes a leaf holding its type name (`str`,
    `int`, ... not its value, to keep the vocabulary small). Expression contexts
    (`Load`/`Store`) and docstrings are skipped.

    Args:
        node: any `ast.AST`, typically a `FunctionDef`.
        identifiers: False drops the identifier leaves: the labels are then only AST class
            and constant type names (about 100), a corpus with few labels and much
            repetition, like XML trees of tags.

    Returns:
        The tree, in preorder.

    >>> fn = ast.parse("def f(x):\\n    '''doc'''\\n    return x + 1").body[0]
    >>> ast_to_tree(fn).to_penn()
    '(FunctionDef f(arguments (arg x))(Return (BinOp (Name x) Add(Constant int))))'
    >>> ast_to_tree(fn, identifiers=False).to_penn()
    '(FunctionDef (arguments arg)(Return (BinOp Name Add(Constant int))))'
    """
    labels: list[str] = []
    children: list[list[int]] = []
    stack: list[tuple[ast.AST | str, int]] = [(node, -1)]
    while stack:
        item, parent = stack.pop()
        i = len(labels)
        if isinstance(item, str):
            labels.append(item)
            kids: list[ast.AST | str] = []
        else:
            labels.append(type(item).__name__)
            kids = _child_items(item, identifiers)
        children.append([])
        if parent >= 0:
            children[parent].append(i)
        stack.extend((k, i) for k in reversed(kids))
    return Tree(tuple(labels), tuple(tuple(c) for c in children))


def _functions(module: ast.Module, prefix: str) -> list[tuple[str, ast.AST]]:
    """Functions and methods in source order, with qualified names; not nested functions."""
    found: list[tuple[str, ast.AST]] = []
    stack: list[tuple[ast.AST, str]] = [(module, prefix)]
    while stack:
        node, qual = stack.pop()
        kids = list(ast.iter_child_nodes(node))
        for child in reversed(kids):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((f"{qual}.{child.name}", child))
            elif isinstance(child, ast.ClassDef):
                stack.append((child, f"{qual}.{child.name}"))
            elif isinstance(child, ast.stmt):  # if/try/with blocks at module or class level
                stack.append((child, qual))
    found.sort(key=lambda f: (f[1].lineno, f[1].col_offset))  # type: ignore[attr-defined]
    return found


def _package_files(root: pathlib.Path, package: str) -> list[pathlib.Path]:
    pkg = root / package
    if not pkg.is_dir():
        raise FileNotFoundError(f"standard-library package {package!r} not found under {root}")
    return sorted(
        f for f in pkg.rglob("*.py") if not _SKIP_DIRS.intersection(f.relative_to(root).parts)
    )


def _spread(n: int, k: int) -> list[int]:
    """`k` indices spread evenly over `range(n)` (all of them when `k >= n`)."""
    if k >= n:
        return list(range(n))
    return [(j * n) // k for j in range(k)]


def load_stdlib_functions(
    packages: Sequence[str] = DEFAULT_PACKAGES,
    *,
    max_per_package: int | None = DEFAULT_MAX_PER_PACKAGE,
    min_nodes: int = DEFAULT_MIN_NODES,
    max_nodes: int = DEFAULT_MAX_NODES,
    identifiers: bool = True,
) -> StdlibData:
    """Load the ASTs of the standard library's functions, labelled by package.

    Files are read in sorted path order and functions in source order, so the corpus is
    deterministic for a given Python version (it changes with the standard library's source
    between versions). Functions with fewer than `min_nodes` or more than `max_nodes` tree
    nodes are dropped; then, when a package has more than `max_per_package`, that many are
    kept, spread evenly over the package (not just its first files), so classes are balanced.
    The defaults give 900 functions (150 per package) of 10-400 nodes.

    Args:
        packages: standard-library package names (directories under the stdlib path).
        max_per_package: cap on functions per package; `None` keeps all.
        min_nodes: smallest tree size kept.
        max_nodes: largest tree size kept.
        identifiers: keep identifier leaves (see `ast_to_tree`; sizes are counted on the
            trees as built, so False keeps a different set of functions).

    Returns:
        A `StdlibData` of trees, package labels and qualified names, grouped by package in
        the order of `packages`.

    >>> data = load_stdlib_functions(["json"], max_per_package=3)
    >>> len(data.trees), data.labels
    (3, ['json', 'json', 'json'])
    """
    if max_per_package is not None and max_per_package < 1:
        raise InputError(f"max_per_package must be >= 1 or None, got {max_per_package}")
    if min_nodes > max_nodes:
        raise InputError(f"min_nodes ({min_nodes}) is larger than max_nodes ({max_nodes})")
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    out = StdlibData([], [], [])
    for package in packages:
        kept: list[tuple[str, Tree]] = []
        for path in _package_files(root, package):
            rel = path.relative_to(root).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            with warnings.catch_warnings():  # e.g. invalid escape sequences in old code
                warnings.simplefilter("ignore", SyntaxWarning)
                module = ast.parse(path.read_bytes(), filename=str(path))
            for name, fn in _functions(module, ".".join(parts)):
                tree = ast_to_tree(fn, identifiers=identifiers)
                if min_nodes <= len(tree) <= max_nodes:
                    kept.append((name, tree))
        cap = len(kept) if max_per_package is None else max_per_package
        for j in _spread(len(kept), cap):
            name, tree = kept[j]
            out.trees.append(tree)
            out.labels.append(package)
            out.names.append(name)
    return out
