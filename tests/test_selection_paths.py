"""No test-set selection in experiments/qc_acl17.py (issue 33), read statically in the default
tier (the slow tier runs the script twice with the test labels permuted,
tests/test_experiments.py::test_qc_acl17_selection_ignores_the_test_set): every hyperparameter
is chosen by a `select_*` function, no such function has a parameter that names the test side,
and no call of one passes an argument that mentions it."""

from __future__ import annotations

import ast
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "qc_acl17.py"
TEST_WORDS = ("test", "te", "y_te", "g_te", "x_te")


def _names(node: ast.AST) -> set[str]:
    """Every name and attribute an expression reads."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def _mentions_test(names: set[str]) -> set[str]:
    return {n for n in names if n in TEST_WORDS or "test" in n.lower()}


def test_selection_functions_never_see_the_test_set():
    tree = ast.parse(SCRIPT.read_text())
    selectors = {f.name: f for f in ast.walk(tree)
                 if isinstance(f, ast.FunctionDef) and f.name.startswith("select_")}
    assert {"select_kernel", "select_ksvm_c", "select_dcd_c", "select_kda"} <= set(selectors)
    for name, f in selectors.items():
        params = {a.arg for a in f.args.args + f.args.kwonlyargs}
        assert not _mentions_test(params), f"{name} takes {_mentions_test(params)}"
        # nor does its body reach a test-side name from an enclosing scope
        assert not _mentions_test(_names(f) - params), name
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)
             and isinstance(c.func, ast.Name) and c.func.id in selectors]
    assert len(calls) >= 4
    for call in calls:
        args = [*call.args, *(k.value for k in call.keywords)]
        leaked = set().union(*(_mentions_test(_names(a)) for a in args))
        assert not leaked, f"line {call.lineno}: {call.func.id} gets {leaked}"
