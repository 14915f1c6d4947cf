"""Every learner matches docs/learners.md, read off the functions themselves (issue 36):

- **signatures**: the data, then the labels, positional; everything else keyword-only; `key`
  keyword-only with no default wherever the learner can draw random numbers (none where it
  cannot: `ksvm`); `dtype=None` and `throw=False`;
- **results**: a `jkern.Solution` (an int32 `result`, a dict of `stats`) whose model has the
  one prediction surface: `decision_function`, `predict` and `classes`;
- **keys**: no key is passed to two consumers (a test reads jkern/, experiments/ and
  examples/ with `ast`; docs/learners.md, "Keys").

Tiny problems: one compile per learner.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import Solution, ds, kda, pa, svm
from jkern.trees import parse_penn

ROOT = Path(__file__).resolve().parents[1]

# name -> (function, its positional parameters: data then labels, whether it can draw)
LEARNERS = {
    "svm.dcd": (svm.dcd, ("X", "y"), True),
    "svm.ksvm": (svm.ksvm, ("gram", "y"), False),
    "svm.cpa": (svm.cpa, ("x", "y"), True),
    "kda.fit": (kda.fit, ("c", "y"), True),
    "pa.fit": (pa.fit, ("X", "y"), True),
    # distant supervision: the labels are the mentions' pairs and the KB's relations
    "ds.fit": (ds.fit, ("x", "mention_pair", "relations"), True),
    "ds.train_extractor": (ds.train_extractor,
                           ("tokens", "e1_token", "e2_token", "mention_pair", "relations"),
                           True),
}
# What is not there yet, and why (each an expected failure that must not start passing
# unnoticed: strict).
PENDING: dict[str, str] = {}


def _param(name: str):
    marks = ([pytest.mark.xfail(strict=True, reason=PENDING[name])] if name in PENDING
             else [])
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(LEARNERS), ids=list(LEARNERS))
def test_data_first_then_keyword_only(name):
    learner, positional, _ = LEARNERS[name]
    params = inspect.signature(learner).parameters.values()
    given = tuple(p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL))
    assert given == positional, f"{name} takes {given} positionally"
    for p in params:
        if p.name not in positional:
            assert p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD), f"{name}: {p.name} is {p.kind}"


@pytest.mark.parametrize("name", [_param(n) for n in LEARNERS])
def test_key_is_keyword_only_and_required_where_the_learner_can_draw(name):
    learner, _, draws = LEARNERS[name]
    params = inspect.signature(learner).parameters
    if not draws:
        assert "key" not in params, f"{name} draws nothing but takes a key"
        return
    key = params.get("key")
    assert key is not None and key.kind is key.KEYWORD_ONLY, f"{name}: key is not keyword-only"
    assert key.default is inspect.Parameter.empty, f"{name}: key defaults to {key.default!r}"


@pytest.mark.parametrize("name", list(LEARNERS), ids=list(LEARNERS))
def test_dtype_none_and_throw_false(name):
    params = inspect.signature(LEARNERS[name][0]).parameters
    for option, default in (("dtype", None), ("throw", False)):
        if name == "ds.train_extractor" and option == "throw":
            continue  # a solver option: passed through to ds.fit
        p = params.get(option)
        assert p is not None and p.kind is p.KEYWORD_ONLY and p.default is default, \
            f"{name}: {option}"


# Functions that draw but are not learners (a model's initialisation, samplers) and the
# learners' grid variants: the data first, their keys keyword-only without a default.
# name -> (function, its positional parameters, its key parameters)
DRAWERS = {
    "kda.fit_grid": (kda.fit_grid, ("c", "y"), ("keys",)),
    "kda.init_grid": (kda.init_grid, ("nystrom", "classes"), ("key",)),
    "kda.KDA.init": (kda.KDA.init, ("nystrom", "classes"), ("key",)),
    "select_landmarks": (jkern.select_landmarks, ("n", "m"), ("key",)),
    "svm.draw_sample": (svm.draw_sample, ("n", "r", "importance"), ("key",)),
}


@pytest.mark.parametrize("name", list(DRAWERS), ids=list(DRAWERS))
def test_functions_that_draw_take_data_first_and_keys_keyword_only(name):
    function, positional, keys = DRAWERS[name]
    params = inspect.signature(function).parameters
    given = tuple(p.name for p in params.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL))
    assert given == positional, f"{name} takes {given} positionally"
    for k in keys:
        p = params.get(k)
        assert p is not None and p.kind is p.KEYWORD_ONLY, f"{name}: {k} is not keyword-only"
        assert p.default is inspect.Parameter.empty, f"{name}: {k} defaults to {p.default!r}"


def test_the_grid_learner_is_the_learner_over_a_leading_axis():
    """`kda.fit_grid` takes `kda.fit`'s arguments (the model and key as stacked `models` and
    `keys`), with its defaults, and returns a `Solution` with a leading grid axis."""
    single = inspect.signature(kda.fit).parameters
    grid = inspect.signature(kda.fit_grid).parameters
    renamed = {"model": "models", "key": "keys"}
    for name, p in single.items():
        if name in ("progress",):
            continue  # one fit's progress lines
        q = grid.get(renamed.get(name, name))
        assert q is not None, f"fit_grid has no {renamed.get(name, name)}"
        assert q.kind is p.kind, f"fit_grid: {q.name} is {q.kind}, fit's is {p.kind}"
        if name not in ("l2",):  # one λ per member: required
            assert q.default == p.default, f"fit_grid: {q.name} defaults to {q.default!r}"
    x = np.array([[1.0, 0.2], [0.8, -0.1], [-1.0, 0.3], [-0.7, -0.4]])
    y = np.array([1, 1, 0, 0])
    models = kda.init_grid(jnp.eye(2), (0, 1), key=jax.random.key(0), dropout=[0.0, 0.1],
                           hidden=(3,))
    sol = kda.fit_grid(x, y, models=models, keys=jax.random.split(jax.random.key(1), 2),
                       l2=jnp.array([0.0, 1e-3]), epochs=2, batch_size=4)
    assert isinstance(sol, Solution) and sol.result.shape == (2,)
    member = kda.grid_member(sol, 1)
    assert member.model.classes == (0, 1) and len(member.model.predict(x)) == 4
    # one scalar penalty serves every member: the same fit as the penalty repeated
    same = kda.fit_grid(x, y, models=models, keys=jax.random.split(jax.random.key(1), 2),
                        l2=1e-3, epochs=2, batch_size=4)
    repeated = kda.fit_grid(x, y, models=models, keys=jax.random.split(jax.random.key(1), 2),
                            l2=jnp.array([1e-3, 1e-3]), epochs=2, batch_size=4)
    leaves = jax.tree_util.tree_leaves
    for a, b in zip(leaves(same.model), leaves(repeated.model)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# --------------------------------------------------------------------------- fits


def _tiny_fits():
    """name -> (the learner's solution, the input its model scores)."""
    key = jax.random.key(0)
    x = np.array([[1.0, 0.2], [0.8, -0.1], [-1.0, 0.3], [-0.7, -0.4], [0.9, 0.5],
                  [-0.8, 0.1]])
    y = np.array([1, 1, -1, -1, 1, -1])
    trees = [parse_penn(t) for t in ("(S (A a))", "(S (B b))", "(S (A a)(B b))", "(S (C c))")]
    rows = jkern.SparseRows.from_rows([{0: 1, 1: 1}, {0: 1}, {1: 1, 2: 1}, {2: 1}])
    net = kda.KDA.init(jnp.eye(2), (0, 1), key=key, hidden=(3,))
    relations = np.array([[True], [False], [True]])
    return {
        "svm.dcd": (svm.dcd(x, y, key=key), x),
        "svm.ksvm": (svm.ksvm(x @ x.T, y), x @ x.T),
        "svm.cpa": (svm.cpa(trees, [1, -1, 1, -1], kernel=jkern.SST(0.4), key=None), trees),
        "kda.fit": (kda.fit(x, (y > 0).astype(int), model=net, key=key, epochs=2,
                            batch_size=4), x),
        "pa.fit": (pa.fit(rows, [1, 1, -1, -1], epochs=2, key=None), rows),
        "pa.fit linear": (pa.fit(rows, [1, 1, -1, -1], epochs=2, mode="linear", key=None), rows),
        "ds.fit": (ds.fit(x, np.array([0, 0, 1, 1, 2, 2]), relations, method="fista",
                          max_iter=50, key=None), x),
    }


@pytest.fixture(scope="module")
def fits():
    return _tiny_fits()


FITTED = ["svm.dcd", "svm.ksvm", "svm.cpa", "kda.fit", "pa.fit", "pa.fit linear", "ds.fit"]
NO_CLASSES: dict[str, str] = {}  # a model without `classes`, and why (none now)


@pytest.mark.parametrize("name", FITTED)
def test_a_solution_with_the_one_prediction_surface(fits, name):
    sol, x = fits[name]
    assert isinstance(sol, Solution)
    assert np.asarray(sol.result).dtype == np.int32 and np.ndim(sol.result) == 0
    assert isinstance(sol.stats, dict) and sol.stats
    n = len(x) if not hasattr(x, "shape") else x.shape[0]
    assert np.shape(sol.model.decision_function(x))[0] == n
    assert len(np.asarray(sol.model.predict(x))) == n


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=NO_CLASSES[n])]
                 if n in NO_CLASSES else [], id=n) for n in FITTED])
def test_every_model_says_its_classes(fits, name):
    model = fits[name][0].model
    assert hasattr(model, "classes"), f"{type(model).__name__} has no classes"


def test_train_extractor_returns_a_solution():
    tokens = [["a", "is", "b"], ["c", "of", "d"], ["e", "is", "f"], ["g", "of", "h"]]
    sol = ds.train_extractor(tokens, [0, 0, 0, 0], [2, 2, 2, 2], np.arange(4),
                             np.array([[1], [0], [1], [0]], bool), key=None,
                             classes=("NA", "is_a"), max_iter=20)
    assert isinstance(sol, Solution) and isinstance(sol.model, ds.RelationExtractor)
    assert sol.stats["features"] > 0 and "gap" in sol.stats and "solve_seconds" in sol.stats
    assert sol.model.classes == ("NA", "is_a")
    assert len(sol.model.predict(tokens, [0] * 4, [2] * 4)) == 4


def test_one_vs_rest_stats_carry_a_leading_class_axis():
    """`train_cutting_plane` as every one-vs-rest result: `[k]` results, `[k, ...]` stats (a
    list of k where the classes differ in shape); two classes: `cpa`'s own."""
    trees = [parse_penn(t) for t in ("(S (A a))", "(S (B b))", "(S (A a)(B b))", "(S (C c))",
                                     "(S (C c)(A a))", "(S (B b)(C c))")]
    key = jax.random.key(0)
    sol = jkern.train_cutting_plane(jkern.SST(0.4), trees, ["a", "b", "a", "c", "c", "b"],
                                    key=key, C=5.0, max_iter=20)
    assert sol.result.shape == (3,) and sol.model.classes == ("a", "b", "c")
    assert np.shape(sol.stats["delta_evals"]) == (3,) and np.shape(sol.stats["seconds"]) == (3,)
    assert len(sol.stats["history"]) == 3 and len(sol.stats["alpha"]) == 3
    binary = jkern.train_cutting_plane(jkern.SST(0.4), trees, [1, -1, 1, -1, 1, -1], key=key,
                                       C=5.0, max_iter=20)
    assert np.ndim(binary.result) == 0
    assert isinstance(binary.stats["history"][0], svm.CPAIteration)


# --------------------------------------------------------------------------- keys

# jax.random functions that draw from (or split) the key they are given first
SAMPLERS = {"split", "permutation", "choice", "normal", "uniform", "bernoulli", "randint",
            "bits", "categorical", "gumbel", "truncated_normal", "shuffle", "exponential"}
LEAVES = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _consumers(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, int, tuple]]:
    """(key name, line, branch path) for every call in `func`'s own body that consumes a key
    held in a name: `f(..., key=k)`, or `jax.random.<sampler>(k, ...)`. The path says which
    side of each `if` the call is on: calls on two sides of one `if` never both run."""
    found: list[tuple[str, int, tuple]] = []

    def block(stmts: list[ast.stmt], path: tuple) -> None:
        for i, stmt in enumerate(stmts):
            # what follows an `if` whose body leaves runs only when the test failed
            if (isinstance(stmt, ast.If) and not stmt.orelse and stmt.body
                    and isinstance(stmt.body[-1], LEAVES)):
                visit(stmt, path)
                block(stmts[i + 1:], (*path, (id(stmt), 1)))
                return
            visit(stmt, path)

    def visit(node: ast.AST, path: tuple) -> None:
        if node is not func and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda, ast.ClassDef)):
            return  # a nested function has its own keys
        if isinstance(node, (ast.If, ast.IfExp)):
            visit(node.test, path)
            for side, body in enumerate((node.body, node.orelse)):
                branch = (*path, (id(node), side))
                if isinstance(body, list):
                    block(body, branch)
                else:
                    visit(body, branch)
            return
        if isinstance(node, ast.Call):
            names = [k.value.id for k in node.keywords
                     if k.arg == "key" and isinstance(k.value, ast.Name)]
            callee = ast.unparse(node.func)
            if (callee.startswith(("jax.random.", "random."))
                    and callee.rsplit(".", 1)[-1] in SAMPLERS and node.args
                    and isinstance(node.args[0], ast.Name)):
                names.append(node.args[0].id)
            found.extend((n, node.lineno, path) for n in names)
        for child in ast.iter_child_nodes(node):
            visit(child, path)

    block(func.body, ())
    return found


def key_reuse(source: str) -> list[str]:
    """`line, line: function: key` for every key passed to two consumers that can both run."""
    out = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        seen = _consumers(func)
        for i, (name, line, path) in enumerate(seen):
            for other, first, before in seen[:i]:
                sides, theirs = dict(path), dict(before)
                exclusive = any(k in theirs and theirs[k] != v for k, v in sides.items())
                if other == name and not exclusive:
                    out.append(f"{first}, {line}: {func.name}: key {name!r}")
    return out


def _sources() -> list[Path]:
    return [p for folder in ("jkern", "experiments", "examples")
            for p in sorted((ROOT / folder).rglob("*.py")) if "probes" not in p.parts]


def test_no_key_is_passed_to_two_consumers():
    bad = [f"{p.relative_to(ROOT)}:{problem}" for p in _sources()
           for problem in key_reuse(p.read_text(encoding="utf-8"))]
    assert not bad, ("split the key (one per consumer, docs/learners.md 'Keys'):\n"
                     + "\n".join(bad))


CAUGHT = [  # `jkern train --algo dcd` before issue 36: landmarks and DCD from one key
    """
def run(args):
    key = jax.random.PRNGKey(args.seed)
    if args.projector is None:
        proj = jkern.fit_nystrom(kernel, trees, landmarks=args.landmarks, key=key)
    sol = jkern.train_nystrom_svm(proj, trees, labels, key=key)
""",
    """
def f(key, n):
    order = jax.random.permutation(key, n)
    return dcd(x, y, key=key), order
""",
]
ALLOWED = [
    """
def run(args):
    k_landmarks, k_learner = jax.random.split(jax.random.PRNGKey(args.seed))
    proj = jkern.fit_nystrom(kernel, trees, landmarks=args.landmarks, key=k_landmarks)
    sol = jkern.train_nystrom_svm(proj, trees, labels, key=k_learner)
""",
    """
def run(args, key):
    if args.algo == "dcd":
        return train_nystrom_svm(proj, trees, labels, key=key)
    else:
        return train_cutting_plane(kernel, trees, labels, key=key)
""",
    """
def select(key, n, m, labels=None):
    if labels is None:
        return jax.random.choice(key, n, (m,))
    keys = jax.random.split(key, 3)
""",
    """
def fit(key):
    return cpa(x, y, key=jax.random.fold_in(key, 1)), cpa(x, y, key=jax.random.fold_in(key, 2))
""",
]


@pytest.mark.parametrize("source", CAUGHT)
def test_the_key_rule_fails_on_a_shared_key(source):
    assert key_reuse(source)


@pytest.mark.parametrize("source", ALLOWED)
def test_the_key_rule_lets_split_and_exclusive_keys_through(source):
    assert key_reuse(source) == []
