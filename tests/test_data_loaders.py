"""Loaders for real trees: the standard-library AST corpus and the TREC parses."""

from __future__ import annotations

import ast

import pytest

from jkern.data import (
    DEFAULT_PACKAGES,
    TREC_COARSE,
    ast_to_tree,
    load_stdlib_functions,
    load_trec,
)
from jkern.trees._tree import Tree


@pytest.fixture(scope="module")
def stdlib():
    return load_stdlib_functions()


# --- standard-library ASTs -------------------------------------------------------------


def test_stdlib_is_deterministic(stdlib):
    again = load_stdlib_functions()
    assert again.names == stdlib.names
    assert again.labels == stdlib.labels
    assert again.trees == stdlib.trees


def test_stdlib_default_corpus_shape(stdlib):
    n = len(stdlib.trees)
    assert 600 <= n <= 1500
    assert len(stdlib.labels) == len(stdlib.names) == n
    assert all(isinstance(t, Tree) for t in stdlib.trees)
    assert all(isinstance(label, str) for label in stdlib.labels)
    classes = set(stdlib.labels)
    assert len(classes) >= 4
    assert classes == set(DEFAULT_PACKAGES)
    assert all(10 <= len(t) <= 400 for t in stdlib.trees)
    assert all(t.labels[0] in ("FunctionDef", "AsyncFunctionDef") for t in stdlib.trees)
    assert all(
        name.split(".")[0] == label for name, label in zip(stdlib.names, stdlib.labels, strict=True)
    )


def test_stdlib_caps_and_balance():
    data = load_stdlib_functions(["json", "logging"], max_per_package=7)
    assert data.labels == ["json"] * 7 + ["logging"] * 7
    small = load_stdlib_functions(["logging"], max_per_package=None, min_nodes=20, max_nodes=50)
    assert len(small.trees) > 7
    assert all(20 <= len(t) <= 50 for t in small.trees)
    everything = load_stdlib_functions(["json"], max_per_package=None, min_nodes=1)
    assert len(everything.trees) > 7


def test_stdlib_bad_arguments():
    with pytest.raises(ValueError, match="max_per_package"):
        load_stdlib_functions(max_per_package=0)
    with pytest.raises(ValueError, match="min_nodes"):
        load_stdlib_functions(min_nodes=50, max_nodes=10)
    with pytest.raises(FileNotFoundError, match="no_such_package"):
        load_stdlib_functions(["no_such_package"])


def test_ast_to_tree_labels():
    src = 'async def f(a, *, b=None):\n    """Doc."""\n    y = g(a.x, "s", 2.0)\n    return y\n'
    tree = ast_to_tree(ast.parse(src).body[0])
    assert tree.labels[:2] == ("AsyncFunctionDef", "f")
    labels = set(tree.labels)
    assert {"arguments", "arg", "a", "b", "Call", "Attribute", "x", "str", "float"} <= labels
    assert "NoneType" not in labels and "None" in labels  # b=None
    assert not {"Load", "Store", "Expr", "s", "2.0"} & labels  # no ctx, docstring, values
    assert tree.to_penn().count("(Name y)") == 2


def test_ast_to_tree_deep_is_not_recursive():
    depth = 20_000  # far beyond Python's recursion limit
    expr: ast.expr = ast.Name(id="x", ctx=ast.Load())
    for _ in range(depth):
        expr = ast.UnaryOp(op=ast.USub(), operand=expr)
    tree = ast_to_tree(ast.Expression(body=expr))
    assert len(tree) == 1 + 2 * depth + 2
    assert tree.heights()[0] == depth + 2


# --- TREC -------------------------------------------------------------------------------


def test_trec_missing_dir_names_path(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        load_trec(tmp_path, "test")
    assert str(tmp_path / "trec" / "qc_test.tsv") in str(err.value)
    assert "--data-dir" in str(err.value)


def test_trec_bad_split(tmp_path):
    with pytest.raises(ValueError, match="split"):
        load_trec(tmp_path, "dev")  # type: ignore[arg-type]


def test_trec_malformed_row_names_line(tmp_path):
    (tmp_path / "trec").mkdir()
    (tmp_path / "trec" / "qc_test.tsv").write_text(
        "coarse\tfine\ttree\nHUM\tind\t(ROOT (NN x))\nHUM\tonly-two-fields\n"
    )
    with pytest.raises(ValueError, match=r"qc_test\.tsv:3"):
        load_trec(tmp_path, "test")


def test_trec_small_file(tmp_path):
    (tmp_path / "trec").mkdir()
    (tmp_path / "trec" / "qc_train.tsv").write_text(
        "coarse\tfine\ttree\nLOC\tcity\t(ROOT (SBARQ (WHNP (WP What))(. ?)))\n"
    )
    data = load_trec(tmp_path)
    assert data.coarse == ["LOC"] and data.fine == ["city"]
    assert data.trees[0] == Tree.from_nested(
        ("ROOT", [("SBARQ", [("WHNP", [("WP", ["What"])]), (".", ["?"])])])
    )


@pytest.mark.parametrize(("split", "size"), [("train", 5401), ("test", 500)])
def test_trec_real(shared_data, split, size):
    # `shared_data` (tests/conftest.py) skips when ../shared/data is missing, fails under
    # JKERN_REQUIRE_DATA=1.
    data = load_trec(shared_data, split)
    assert len(data.trees) == len(data.coarse) == len(data.fine) == size
    assert set(data.coarse) == set(TREC_COARSE)
    assert all(t.labels[0] == "ROOT" for t in data.trees)
    assert all(len(t) >= 3 for t in data.trees)


def test_stdlib_without_identifiers_keeps_structure_only():
    fn = ast.parse("def f(x, y):\n    return g(x).attr + 1").body[0]
    full, bare = ast_to_tree(fn), ast_to_tree(fn, identifiers=False)
    identifiers = {"f", "x", "y", "g", "attr"}
    assert identifiers <= set(full.labels)
    assert not identifiers & set(bare.labels)
    assert len(full) - len(bare) == 6  # f, x, y, g, x, attr
    data = load_stdlib_functions(["json"], max_per_package=None, identifiers=False)
    labels = {lab for t in data.trees for lab in t.labels}
    constants = {"str", "int", "float", "bytes", "complex", "bool", "None", "Ellipsis"}
    assert all(isinstance(getattr(ast, lab, None), type) or lab in constants for lab in labels)
