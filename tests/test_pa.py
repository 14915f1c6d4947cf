"""jkern.pa: every PA-I mode against the plain-Python reference (tests/pa_reference.py), the
optax-shaped learner under jit/scan/vmap, capacity overflow, the sparse-line reader, the
frequency renumbering and the synthetic generator."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from data_paths import SHARED_DATA, require
from pa_reference import pa_reference

import jkern
from jkern import RESULTS, SparseRows
from jkern.errors import InputError
from jkern.pa import (
    ExpandedModel,
    Instance,
    KernelPA,
    SupportVectorModel,
    conjunction_coefficients,
    conjunctive_concepts,
    fit,
    frequency_order,
    parse_sparse_lines,
    read_sparse,
    unique_rows,
)
from jkern.pa._kernel import CHUNK
from jkern.pa._pke import RareSupport, expand_support_vectors
from jkern.pa._table import DENSE_IDS
from jkern.trees import TreeParseError

EPOCHS = 3


def _rows(X: SparseRows) -> list[dict[int, float]]:
    return [{int(i): float(v) for i, v in zip(r, vv) if v != 0}
            for r, vv in zip(np.asarray(X.indices), np.asarray(X.values))]


def _random_binary(seed: int, n: int = 50, d: int = 24, k: int = 6,
                   real: bool = False) -> tuple[SparseRows, np.ndarray]:
    """Sparse vectors with repeats (shared support vectors) and an empty one; labels from a
    hidden degree-2 rule with noise."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1)
    rows = []
    for _ in range(n):
        feats = set(rng.choice(d, size=rng.integers(1, k + 1), p=p / p.sum()).tolist())
        rows.append({f: (float(rng.choice([0.5, 1.0, 2.0])) if real else 1.0) for f in feats})
    rows[7] = dict(rows[3])  # a repeated vector
    rows[20] = dict(rows[3])
    rows[11] = {}  # an empty vector
    y = np.array([1 if ((0 in r) and (1 in r)) or (2 in r) else -1 for r in rows])
    y[rng.random(n) < 0.1] *= -1
    return SparseRows.from_rows(rows, n_features=d), y


def _check_same(sol, ref, *, alpha: bool = True, support: bool = True,
                atol: float = 1e-9) -> None:
    """The same updates, margins and weights as the reference: bit for bit (atol=0) in
    exact mode, to `atol` in float mode."""
    updated = np.asarray(sol.stats["updated"]).reshape(-1)
    assert np.array_equal(updated, np.asarray(ref.updated)), "update sequences differ"
    np.testing.assert_allclose(np.asarray(sol.stats["margins"]).reshape(-1), ref.margins,
                               rtol=0, atol=atol)
    if support:
        assert int(sol.stats["support_vectors"]) == len(ref.support)
    if alpha:
        np.testing.assert_allclose(np.asarray(sol.model.alpha), ref.alpha, rtol=0, atol=atol)


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_modes_match_reference(degree):
    X, y = _random_binary(degree)
    ref = pa_reference(_rows(X), y.tolist(), degree=degree, epochs=EPOCHS, exact=True)
    assert 0 < sum(ref.updated) < len(ref.updated)
    for mode in ("kernel", "block", "explicit"):
        sol = fit(X, y, degree=degree, epochs=EPOCHS, mode=mode, record=True, block_size=8,
                  key=None)
        assert int(sol.result) == RESULTS.successful
        _check_same(sol, ref, alpha=mode != "explicit", atol=0)  # bit for bit
    if degree == 2:
        lin = pa_reference(_rows(X), y.tolist(), epochs=EPOCHS, mode="linear", exact=True)
        sol = fit(X, y, epochs=EPOCHS, mode="linear", record=True, key=None)
        _check_same(sol, lin, alpha=False, support=False, atol=0)
        # float arithmetic: the same updates on a short run, margins to 1e-9
        ref = pa_reference(_rows(X), y.tolist(), degree=2, epochs=EPOCHS)
        for mode in ("kernel", "block", "explicit"):
            sol = fit(X, y, degree=2, epochs=EPOCHS, mode=mode, record=True, block_size=8,
                      exact=False, key=None)
            _check_same(sol, ref, alpha=mode != "explicit")
    # the support vectors are the reference's, in order of first update
    sol = fit(X, y, degree=degree, epochs=EPOCHS, mode="block", block_size=16, key=None)
    got = [tuple((int(i), float(v)) for i, v in zip(r, vv) if v != 0)
           for r, vv in zip(np.asarray(sol.model.indices), np.asarray(sol.model.values))]
    assert got == [tuple(sorted(s)) for s in ref.support]


@pytest.mark.parametrize("mode", ["kernel", pytest.param("block", marks=pytest.mark.slow),
                                  "splitting", pytest.param("slicing", marks=pytest.mark.slow),
                                  "explicit", "linear"])
def test_shuffled_and_averaged_match_reference(mode):
    X, y = _random_binary(21, n=40)
    key = jax.random.key(3)
    sol = fit(X, y, degree=2, epochs=EPOCHS, mode=mode, shuffle=True, key=key, average=True,
              record=True, block_size=4)
    orders = np.asarray(sol.stats["order"])
    assert all(sorted(o.tolist()) == list(range(len(y))) for o in orders)
    assert not np.array_equal(orders[0], orders[1])  # a new permutation each epoch
    ref_mode = "linear" if mode == "linear" else "kernel"
    ref = pa_reference(_rows(X), y.tolist(), degree=2, epochs=EPOCHS, exact=True,
                       orders=orders.tolist(), mode=ref_mode, average=True)
    assert np.asarray(sol.stats["updated"]).reshape(-1).tolist() == ref.updated
    np.testing.assert_array_equal(np.asarray(sol.stats["margins"]).reshape(-1), ref.margins)
    # the averaged model: its decision values are the reference's averaged weights'
    D = np.asarray(X.todense())
    if mode == "linear":
        w = np.zeros(X.n_features)
        for f, v in ref.w.items():
            w[f] = v
        want = D @ w
    else:
        S = np.zeros((len(ref.support), X.n_features))
        for r, sv in enumerate(ref.support):
            for f, v in sv:
                S[r, f] = v
        want = ((1 + D @ S.T) ** 2) @ np.asarray(ref.alpha)
    np.testing.assert_allclose(np.asarray(sol.model.decision_function(X)), want, rtol=1e-9,
                               atol=1e-9)
    plain = fit(X, y, degree=2, epochs=EPOCHS, mode=mode, shuffle=True, key=key)
    assert np.array_equal(np.asarray(plain.stats["updated"]), np.asarray(sol.stats["updated"]))
    with pytest.raises(InputError, match="key"):
        fit(X, y, mode=mode, shuffle=True, key=None)


def test_real_values_and_textbook_step():
    X, y = _random_binary(5, real=True)
    rows = _rows(X)
    for step in ("opal", "textbook"):
        ref = pa_reference(rows, y.tolist(), degree=2, epochs=EPOCHS, step=step)
        for mode in ("kernel", "block"):
            sol = fit(X, y, degree=2, epochs=EPOCHS, mode=mode, record=True, block_size=5,
                      textbook=step == "textbook", key=None)
            _check_same(sol, ref)
    with pytest.raises(InputError, match="binary"):
        fit(X, y, mode="explicit", key=None)
    with pytest.raises(InputError, match="exact=True"):
        fit(X, y, exact=True, key=None)


def test_linear_mode_matches_reference():
    X, y = _random_binary(6, real=True)
    ref = pa_reference(_rows(X), y.tolist(), epochs=EPOCHS, mode="linear")
    sol = fit(X, y, epochs=EPOCHS, mode="linear", record=True, key=None)
    _check_same(sol, ref, alpha=False, support=False)
    w = np.zeros(X.n_features)
    for f, v in ref.w.items():
        w[f] = v
    np.testing.assert_allclose(np.asarray(sol.model.weights)[:-1], w, atol=1e-12)


def test_tie_at_margin_one_updates_with_a_zero_step():
    # after x1 = {0} (alpha = 1), the empty vector has margin exactly 1: an update, tau = 0
    X = SparseRows.from_rows([{0: 1.0}, {}, {1: 1.0}], n_features=2)
    y = np.array([1, 1, -1])
    ref = pa_reference(_rows(X), y.tolist(), degree=2, epochs=1, exact=True)
    assert ref.updated == [True, True, True] and ref.alpha[1] == 0.0
    assert ref.margins[1] == 1.0
    for mode in ("kernel", "block", "explicit"):
        sol = fit(X, y, degree=2, epochs=1, mode=mode, record=True, key=None)
        _check_same(sol, ref, alpha=mode != "explicit", atol=0)


def test_decision_function_is_the_kernel_expansion():
    X, y = _random_binary(8)
    sol = fit(X, y, degree=3, epochs=EPOCHS, mode="block", key=None)
    D = np.asarray(X.todense())
    S = np.zeros((len(sol.model.alpha), X.n_features))
    rows = np.arange(S.shape[0])[:, None]
    np.add.at(S, (rows, np.asarray(sol.model.indices)), np.asarray(sol.model.values))
    want = ((1 + D @ S.T) ** 3) @ np.asarray(sol.model.alpha)
    np.testing.assert_allclose(np.asarray(sol.model.decision_function(X, block=7)), want,
                               rtol=1e-12)
    explicit = fit(X, y, degree=3, epochs=EPOCHS, mode="explicit", key=None).model
    np.testing.assert_allclose(np.asarray(explicit.decision_function(X)), want, rtol=1e-10)
    assert np.array_equal(np.asarray(explicit.predict(X)), np.where(want >= 0, 1, -1))


def test_update_in_scan_and_jit_without_recompiling():
    X, y = _random_binary(9, n=30)
    uids, n_vec = unique_rows(X)
    learner = KernelPA(jnp.asarray(1.0), degree=2)
    state0 = learner.init(capacity=n_vec, width=X.indices.shape[1], n_features=X.n_features,
                          n_vectors=n_vec)
    data = Instance(X.indices, X.values, jnp.asarray(uids))

    @jax.jit
    def run(state, data, y):
        def body(s, t):
            x = jax.tree.map(lambda a: a[t], data)
            return learner.update(s, x, y[t]), None
        return jax.lax.scan(body, state, jnp.tile(jnp.arange(len(y)), 2))[0]

    state = run(state0, data, jnp.asarray(y, jnp.float64))
    sol = fit(X, y, degree=2, epochs=2, mode="kernel", key=None)
    k = int(state.n_sv)
    np.testing.assert_allclose(np.asarray(state.alpha[:k]), np.asarray(sol.model.alpha),
                               atol=1e-12)
    assert not bool(state.overflow) and not np.any(np.asarray(state.scratch))
    update = jax.jit(KernelPA.update)
    x0 = jax.tree.map(lambda a: a[0], data)
    update(learner, state0, x0, 1.0)
    update(KernelPA(jnp.asarray(0.5), degree=2), state, x0, -1.0)
    assert update._cache_size() == 1  # pyright: ignore[reportAttributeAccessIssue]


def test_vmap_over_C_equals_a_loop():
    X, y = _random_binary(10, n=30)
    Cs = jnp.asarray([0.05, 0.3, 1.0])
    for mode in ("block", "explicit"):
        grid = jax.vmap(lambda c, mode=mode: fit(X, y, C=c, degree=2, epochs=2, mode=mode,
                                                 record=True, key=None))(Cs)
        assert grid.result.shape == (3,)
        for i, c in enumerate(Cs.tolist()):
            one = fit(X, y, C=c, degree=2, epochs=2, mode=mode, record=True, key=None)
            assert np.array_equal(np.asarray(grid.stats["updated"][i]),
                                  np.asarray(one.stats["updated"]))
            np.testing.assert_allclose(np.asarray(grid.stats["margins"][i]),
                                       np.asarray(one.stats["margins"]), atol=1e-12)
            if mode == "block":
                k = len(one.model.alpha)
                np.testing.assert_allclose(np.asarray(grid.model.alpha[i, :k]),
                                           np.asarray(one.model.alpha), atol=1e-12)
                assert not np.any(np.asarray(grid.model.alpha[i, k:]))
            np.testing.assert_allclose(np.asarray(grid.model.decision_function(X))[:, i],
                                       np.asarray(one.model.decision_function(X)), atol=1e-9)
    # averaged PA-I under vmap, too
    grid = jax.vmap(lambda c: fit(X, y, C=c, degree=2, epochs=2, mode="block",
                                  average=True, key=None))(Cs)
    for i, c in enumerate(Cs.tolist()):
        one = fit(X, y, C=c, degree=2, epochs=2, mode="block", average=True, key=None)
        np.testing.assert_allclose(np.asarray(grid.model.decision_function(X))[:, i],
                                   np.asarray(one.model.decision_function(X)), atol=1e-9)


def test_capacity_overflow_is_an_error_never_a_truncation():
    X, y = _random_binary(11, n=30)
    with pytest.raises(InputError, match="capacity=3"):
        fit(X, y, capacity=3, mode="kernel", key=None)
    grid = jax.vmap(lambda c: fit(X, y, C=c, capacity=3, mode="block", key=None))(
        jnp.asarray([1.0]))
    assert grid.result.tolist() == [RESULTS.capacity_exceeded]


@pytest.mark.parametrize("dense_ids", [0, 12, DENSE_IDS])
@pytest.mark.parametrize("degree", [1, 2, 3])
def test_expanded_model_is_the_kernel_expansion(degree, dense_ids, tmp_path):
    X, y = _random_binary(9, n=60)
    model = fit(X, y, degree=degree, epochs=EPOCHS, mode="block", key=None).model
    # the conjunctions of the most frequent features at arithmetic ids, the rest in the
    # table: none (0), some (12 ids), all (every feature of this small set)
    fast = expand_support_vectors(np.asarray(model.indices), np.asarray(model.values),
                                  np.asarray(model.alpha), degree, model.n_features,
                                  dense_ids=dense_ids)
    n_dense = fast.table.n_dense
    if dense_ids == 0:
        assert n_dense == 0
    elif dense_ids == 12:
        assert 0 < n_dense < fast.n_model
    else:
        assert n_dense == fast.n_model
        fast = model.expanded()
    # test rows: narrower than the model's widest (the enumeration pads them), one empty,
    # one with features no support vector holds and ids the model never saw
    T = SparseRows.from_rows([{0: 1, 2: 1}, {}, {1: 1, 3: 1, 5: 1, 30: 1}, {23: 1, 31: 1},
                              dict.fromkeys(range(0, 24, 2), 1.0)], n_features=32)
    D = np.asarray(T.todense())[:, :X.n_features]
    S = np.zeros((len(model.alpha), X.n_features))
    np.add.at(S, (np.arange(S.shape[0])[:, None], np.asarray(model.indices)),
              np.asarray(model.values))
    want = ((1 + D @ S.T) ** degree) @ np.asarray(model.alpha)
    for rows in (T, X):
        np.testing.assert_allclose(np.asarray(fast.decision_function(rows, block=2)),
                                   np.asarray(model.decision_function(rows)), rtol=0, atol=0)
    np.testing.assert_allclose(np.asarray(fast.decision_function(T)), want, rtol=1e-12)
    jkern.save(tmp_path / "fast.jkm", fast)
    back = jkern.load(tmp_path / "fast.jkm")
    np.testing.assert_array_equal(np.asarray(back.predict(T)), np.asarray(fast.predict(T)))
    with pytest.raises(InputError, match="binary"):
        fast.decision_function(SparseRows.from_rows([{0: 0.5}], n_features=24))


@pytest.mark.parametrize("common", [0, 1, 5, None, 1000])
@pytest.mark.parametrize("degree", [1, 2, 3])
def test_split_expanded_model_is_the_kernel(degree, common, tmp_path):
    """Only the `common` most frequent features' conjunctions expanded, the support vectors
    holding the others visited (`RareSupport`): the same margins as the pure kernel, exactly,
    and as a dense NumPy kernel; rows whose rare features share support vectors (each counted
    once), rows with rare features only, a batch with no model feature at all."""
    X, y = _random_binary(13, n=70)
    model = fit(X, y, degree=degree, epochs=EPOCHS, mode="block", key=None).model
    fast = expand_support_vectors(np.asarray(model.indices), np.asarray(model.values),
                                  np.asarray(model.alpha), degree, model.n_features,
                                  dense_ids=12, common=common)
    N = fast.n_model
    K = fast.table.n_common
    assert K == (min(N, common) if common is not None else fast.table.n_dense)
    assert (fast.rare is None) == (K == N)
    rank = np.asarray(fast.rank)
    rare_feats = [int(f) for f in np.flatnonzero((rank >= K) & (rank < N))]
    T = SparseRows.from_rows([
        dict.fromkeys(rare_feats[:4], 1.0),  # rare features only
        dict.fromkeys(range(0, 24, 2), 1.0),  # common and rare, several in one vector
        {}, {30: 1.0, 31: 1.0}], n_features=32)
    only_unknown = SparseRows.from_rows([{30: 1.0}, {}], n_features=32)
    S = np.zeros((len(model.alpha), 32))
    np.add.at(S, (np.arange(S.shape[0])[:, None], np.asarray(model.indices)),
              np.asarray(model.values))
    for rows in (T, X, only_unknown):
        got = np.asarray(fast.decision_function(rows, block=3))
        np.testing.assert_array_equal(got, np.asarray(model.decision_function(rows)))
        D = np.zeros((len(rows), 32))
        D[:, :rows.n_features] = np.asarray(rows.todense())
        want = ((1 + D @ S.T) ** degree) @ np.asarray(model.alpha)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    jkern.save(tmp_path / "split.jkm", fast)
    back = jkern.load(tmp_path / "split.jkm")
    np.testing.assert_array_equal(np.asarray(back.decision_function(T)),
                                  np.asarray(fast.decision_function(T)))
    with pytest.raises(InputError, match="common"):
        expand_support_vectors(np.asarray(model.indices), np.asarray(model.values),
                               np.asarray(model.alpha), degree, model.n_features, common=-1)
    with pytest.raises(InputError, match="outside jit"):  # sized on the host
        eqx.filter_jit(lambda m: m.decision_function(T))(fast)
    if fast.rare is not None:  # a damaged index is refused, not read clamped
        r = fast.rare
        with pytest.raises(InputError, match="damaged"):
            RareSupport(r.features, r.alpha, r.start, r.holders + len(r.alpha), r.n_common,
                        r.n_model)


def test_classifier_is_the_expanded_model_where_it_is_exact():
    """`SupportVectorModel.classifier()`: the expanded model for binary support vectors with
    exact weights (the same margins, bit for bit), the model itself for real values, inexact
    weights or a vmapped batch."""
    X, y = _random_binary(14, n=60)
    model = fit(X, y, degree=3, epochs=EPOCHS, mode="block", key=None).model
    fast = model.classifier()
    assert isinstance(fast, ExpandedModel)
    np.testing.assert_array_equal(np.asarray(fast.decision_function(X)),
                                  np.asarray(model.decision_function(X)))
    real, yr = _random_binary(14, n=60, real=True)
    real_model = fit(real, yr, degree=2, epochs=2, mode="block", key=None).model
    assert real_model.classifier() is real_model
    inexact = eqx.tree_at(lambda m: m.alpha, model, model.alpha + 2.0 ** -40)
    assert inexact.classifier() is inexact  # (its expansion could round differently)
    grid = jax.vmap(lambda c: fit(X, y, C=c, degree=2, epochs=2, mode="block", key=None))(
        jnp.asarray([0.5, 1.0])).model
    assert grid.classifier() is grid


def test_save_load_round_trip(tmp_path):
    X, y = _random_binary(12, n=30)
    for mode in ("block", "explicit", "linear"):
        model = fit(X, y, degree=2, epochs=2, mode=mode, key=None).model
        jkern.save(tmp_path / f"{mode}.jkm", model)
        back = jkern.load(tmp_path / f"{mode}.jkm")
        assert type(back) is type(model)
        np.testing.assert_array_equal(np.asarray(back.decision_function(X)),
                                      np.asarray(model.decision_function(X)))


def test_conjunction_coefficients_give_the_kernel():
    for d in (1, 2, 3, 4):
        c = conjunction_coefficients(d)
        for n in range(7):
            from math import comb
            assert sum(cj * comb(n, j) for j, cj in enumerate(c)) == (1 + n) ** d


def test_reader_and_errors(tmp_path):
    path = tmp_path / "train.svm"
    path.write_text("# header\n+1 3:1 1:1 # comment\n\n-1 2:0.5 5:0\n"
                    "1 |BT| (S (# #)) |ET| 4:1 |EV|\n", encoding="utf-8")
    data = read_sparse(path)
    assert data.labels.tolist() == [1, -1, 1]
    assert _rows(data.features) == [{1: 1.0, 3: 1.0}, {2: 0.5}, {4: 1.0}]
    bad = {
        "+1 1:1\n2 1:1\n": (2, r"label must be \+1 or -1"),
        "+1 1:1\n-1 1:x\n": (2, "bad feature"),
        "+1 1:1 1:1\n": (1, "appears twice"),
        "+1 1:1\n\n-1 0:1\n": (3, "must be positive"),
        "-1 1:1\n:1\n": (2, "label"),
    }
    for text, (line, problem) in bad.items():
        path.write_text(text, encoding="utf-8")
        with pytest.raises(TreeParseError, match=problem) as err:
            read_sparse(path)
        assert err.value.line == line and str(err.value).startswith(f"{path}:{line}:")
    path.write_text("# only a comment\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no examples"):
        read_sparse(path)


def test_frequency_order_ties_and_unseen_features():
    train = parse_sparse_lines(["+1 7:1 3:1 9:1", "-1 3:1 9:1", "+1 9:1 2:1"]).features
    order = frequency_order(train)
    # 9 (3 times), then 3 (twice), then 7 and 2 (once each: the larger id first)
    assert np.asarray(order.original).tolist() == [9, 3, 7, 2]
    X, dropped = order.apply(parse_sparse_lines(["+1 2:1 5:1 9:1 11:1"]).features)
    assert dropped == 2 and _rows(X) == [{0: 1.0, 3: 1.0}]
    assert np.asarray(X.indices)[0, :2].tolist() == [0, 3]  # most frequent first
    Xt, none = order.apply(train)
    assert none == 0 and np.asarray(Xt.indices)[0].tolist() == [0, 1, 2]


def test_frequency_order_apply_equals_the_coordinate_path():
    """`apply` sorts each row by its new ids; rows with a repeated column (a SparseRows
    built by hand) go through `from_coo` and are summed, as before."""
    rng = np.random.default_rng(5)
    rows = [{int(f): float(rng.integers(1, 3)) for f in rng.choice(40, rng.integers(0, 9),
                                                                    replace=False)}
            for _ in range(60)]
    train = SparseRows.from_rows(rows)
    order = frequency_order(train)
    ranks = {int(f): r for r, f in enumerate(np.asarray(order.original))}
    test = SparseRows.from_rows([{int(f): 1.0 for f in rng.choice(50, 6, replace=False)}
                                 for _ in range(20)])
    for X in (train, test):
        got, dropped = order.apply(X)
        want = [{ranks[f]: v for f, v in row.items() if f in ranks} for row in _rows(X)]
        assert _rows(got) == want
        assert dropped == sum(f not in ranks for row in _rows(X) for f in row)
        idx, val = np.asarray(got.indices), np.asarray(got.values)
        for i, v in zip(idx, val, strict=True):  # ascending, padding last
            k = int(np.sum(v != 0))
            assert np.all(np.diff(i[:k]) > 0) and np.all(v[k:] == 0)
    twice = SparseRows(jnp.asarray([[3, 3, 1]], jnp.int32), jnp.asarray([[1.0, 1.0, 1.0]]),
                       40)
    got, _ = order.apply(twice)
    assert _rows(got) == [{ranks[3]: 2.0, ranks[1]: 1.0}]


def test_synthetic_concepts():
    a_train, a_test = conjunctive_concepts(300, 100, key=jax.random.key(3), n_features=200,
                                           n_frequent=15, degree=2, noise=0.0)
    b_train, _ = conjunctive_concepts(300, 100, key=jax.random.key(3), n_features=200,
                                      n_frequent=15, degree=2, noise=0.0)
    assert np.array_equal(np.asarray(a_train.features.indices),
                          np.asarray(b_train.features.indices))
    assert np.array_equal(a_train.labels, b_train.labels)
    assert 0.3 < np.mean(a_train.labels == 1) < 0.7
    assert np.all(np.asarray(a_train.features.values)[np.asarray(a_train.features.values)
                                                      != 0] == 1)
    acc = {}
    for mode, d in (("linear", 1), ("block", 2)):
        model = fit(a_train.features, a_train.labels, degree=d, epochs=5, mode=mode, key=None).model
        acc[mode] = np.mean(np.asarray(model.predict(a_test.features)) == a_test.labels)
    assert acc["block"] > acc["linear"]
    with pytest.raises(InputError):
        conjunctive_concepts(10, 0, key=0, noise=0.7)


def test_boundary_vectors_match_reference():
    path = require(SHARED_DATA / "srl" / "boundary_5000.dat")
    lines = path.read_text(encoding="utf-8").splitlines()[:120]
    data = parse_sparse_lines(lines, source=str(path))
    order = frequency_order(data.features)
    X, _ = order.apply(data.features)
    rows = _rows(X)
    for degree in (1, 2, 3):
        ref = pa_reference(rows, data.labels.tolist(), degree=degree, epochs=2, exact=True)
        for mode in ("kernel", "block", "explicit"):
            if mode == "explicit" and degree == 3:
                continue  # d = 3 explicit, in chunks of visits: tests/test_pa_split.py
            sol = fit(X, data.labels, degree=degree, epochs=2, mode=mode, record=True, key=None)
            _check_same(sol, ref, alpha=mode != "explicit", atol=0)


def test_margins_of_a_trimmed_model_span_several_chunks():
    # a fitted model keeps n_sv rows, not a multiple of the margin chunk
    rng = np.random.default_rng(13)
    n_sv, d = CHUNK + 45, 40
    idx = rng.integers(0, d, size=(n_sv, 5))
    val = (rng.random((n_sv, 5)) < 0.8).astype(np.float64)
    alpha = rng.normal(size=n_sv)
    model = SupportVectorModel(jnp.asarray(idx), jnp.asarray(val), jnp.asarray(alpha), 2, d)
    X = SparseRows.from_dense((rng.random((9, d)) < 0.2).astype(np.float64))
    S = np.zeros((n_sv, d))
    np.add.at(S, (np.arange(n_sv)[:, None], idx), val)
    want = ((1 + np.asarray(X.todense()) @ S.T) ** 2) @ alpha
    np.testing.assert_allclose(np.asarray(model.decision_function(X, block=4)), want,
                               rtol=1e-12)


@pytest.mark.parametrize("collide", [False, True])
def test_unique_rows_numbers_equal_vectors_alike(monkeypatch, collide):
    """Equal feature vectors (whatever the order of their entries) share an id, numbered by
    first occurrence; a hash collision between different rows (forced here) falls back to
    an exact comparison."""
    from jkern.pa import _data

    if collide:
        monkeypatch.setattr(_data, "_row_hashes", lambda w: np.zeros(len(w), np.uint64))
    rng = np.random.default_rng(3)
    rows = [{int(f): float(rng.integers(1, 3)) for f in rng.choice(6, rng.integers(0, 4),
                                                                    replace=False)}
            for _ in range(300)]
    rows += [dict(reversed(list(r.items()))) for r in rows[:50]]  # the same, reordered
    uids, n_vec = unique_rows(SparseRows.from_rows(rows))
    first: dict = {}
    want = [first.setdefault(tuple(sorted(r.items())), len(first)) for r in rows]
    assert uids.tolist() == want and n_vec == len(first)
