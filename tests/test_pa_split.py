"""jkern.pa's kernel splitting and kernel slicing modes: the reference PA-I's updates bit for
bit (exact mode) at d = 1, 2, 3 on random, synthetic and boundary vectors, for several N."""

from __future__ import annotations

import numpy as np
import pytest
from data_paths import SHARED_DATA, require
from pa_reference import pa_reference
from test_pa import _check_same, _random_binary, _rows

from jkern import SparseRows
from jkern.errors import InputError
from jkern.pa import (
    choose_n_common,
    conjunction_table,
    conjunctive_concepts,
    fit,
    frequency_order,
    parse_sparse_lines,
    prefix_nodes,
)

EPOCHS = 3
MODES = ("splitting", "slicing")


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_random_vectors_match_reference(degree):
    X, y = _random_binary(degree)
    ref = pa_reference(_rows(X), y.tolist(), degree=degree, epochs=EPOCHS, exact=True)
    assert 0 < sum(ref.updated) < len(ref.updated)
    # N = 0: every feature rare (kernel part only); N = 3: both parts; None: opal's rule
    for mode in MODES:
        for n_common in ((0, 3) if degree == 2 else (3,)) + ((None,) if mode == "slicing" and
                                                             degree == 2 else ()):
            sol = fit(X, y, degree=degree, epochs=EPOCHS, mode=mode, record=True,
                      n_common=n_common, block_size=7 if n_common == 3 else 32)
            _check_same(sol, ref, atol=0)  # bit for bit
            seen = frequency_order(X).n_features  # the features that occur
            assert sol.stats["n_common"] == (seen if n_common is None else n_common)


def test_float_arithmetic_and_textbook_step():
    X, y = _random_binary(4)
    rows = _rows(X)
    ref = pa_reference(rows, y.tolist(), degree=2, epochs=EPOCHS)
    book = pa_reference(rows, y.tolist(), degree=2, epochs=EPOCHS, step="textbook",
                        exact=True)
    sol = fit(X, y, degree=2, epochs=EPOCHS, mode="splitting", record=True, n_common=4,
              exact=False)
    _check_same(sol, ref)  # margins to 1e-9
    sol = fit(X, y, degree=2, epochs=EPOCHS, mode="slicing", record=True, n_common=4,
              exact=False, textbook=True)
    _check_same(sol, pa_reference(rows, y.tolist(), degree=2, epochs=EPOCHS,
                                  step="textbook"))
    sol = fit(X, y, degree=2, epochs=EPOCHS, mode="slicing", record=True, n_common=2,
              textbook=True)
    _check_same(sol, book, atol=0)


def test_synthetic_concepts_match_reference_and_slicing_reuses_margins():
    train, _ = conjunctive_concepts(400, 0, key=1, n_features=300, n_frequent=20, degree=2)
    X, y = train.features, train.labels
    for degree in (2, 3):
        ref = pa_reference(_rows(X), y.tolist(), degree=degree, epochs=EPOCHS, exact=True)
        walked = {}
        for mode in MODES:
            sol = fit(X, y, degree=degree, epochs=EPOCHS, mode=mode, record=True, n_common=15)
            _check_same(sol, ref, atol=0)
            walked[mode] = int(sol.stats["walked"])
        # the cached prefixes visit fewer index entries than splitting's full walk
        assert walked["slicing"] < walked["splitting"]


def test_boundary_vectors_match_reference():
    path = require(SHARED_DATA / "srl" / "boundary_5000.dat")
    lines = path.read_text(encoding="utf-8").splitlines()[:80]
    data = parse_sparse_lines(lines, source=str(path))
    X, y = data.features, data.labels  # the file's ids: the modes renumber themselves
    rows = _rows(X)
    for degree in (1, 2, 3):
        ref = pa_reference(rows, y.tolist(), degree=degree, epochs=2, exact=True)
        for mode in MODES:
            sol = fit(X, y, degree=degree, epochs=2, mode=mode, record=True,
                      n_common=7 if degree < 3 else None)
            _check_same(sol, ref, atol=0)


def test_update_one_example_at_a_time_in_a_scan():
    import jax
    import jax.numpy as jnp

    from jkern.pa import SplitInstance, SplitPA, unique_rows
    from jkern.pa._split import common_part, posting_starts

    X, y = _random_binary(9, n=30)
    ref = pa_reference(_rows(X), y.tolist(), degree=2, epochs=2, exact=True)
    Xf, _ = frequency_order(X).apply(X)
    F, N = Xf.n_features, 4
    idx = np.where(np.asarray(Xf.values) != 0, np.asarray(Xf.indices), F)
    uids, n_vec = unique_rows(Xf)
    learner = SplitPA(jnp.asarray(1.0), common_part(Xf, 2, N), degree=2, exact=True,
                      n_features=F)
    state = learner.init(capacity=n_vec, width=idx.shape[1], n_vectors=n_vec,
                         post_start=posting_starts(Xf, np.arange(len(y)), N))
    data = SplitInstance(jnp.asarray(idx), jnp.asarray(uids), jnp.zeros_like(jnp.asarray(idx)))

    @jax.jit
    def run(state):
        def body(s, t):
            x = jax.tree.map(lambda a: a[t], data)
            s, m, upd = learner.step(s, x, jnp.asarray(y, jnp.float64)[t])
            return s, upd
        return jax.lax.scan(body, state, jnp.tile(jnp.arange(len(y)), 2))

    state, upds = run(state)
    assert np.asarray(upds).tolist() == ref.updated
    alpha = np.asarray(state.alpha[:int(state.n_sv)]) / 2**32
    np.testing.assert_array_equal(alpha, ref.alpha)


def test_model_uses_the_input_ids():
    X, y = _random_binary(8)
    want = fit(X, y, degree=3, epochs=EPOCHS, mode="kernel").model
    for mode in MODES:
        model = fit(X, y, degree=3, epochs=EPOCHS, mode=mode, n_common=5).model
        np.testing.assert_array_equal(np.asarray(model.alpha), np.asarray(want.alpha))
        np.testing.assert_array_equal(np.asarray(model.decision_function(X)),
                                      np.asarray(want.decision_function(X)))


def test_choose_n_common_halves_to_fit_the_budget():
    train, _ = conjunctive_concepts(200, 0, key=2, n_features=500, n_frequent=20)
    Xf, _ = frequency_order(train.features).apply(train.features)
    for budget in (1 << 12, 1 << 16, 1 << 30):
        n = choose_n_common(Xf, 2, budget)
        assert n == Xf.n_features or (n + 1) & n == 0  # every feature, or 2^i - 1
        size = len(conjunction_table(Xf, 2, n_common=n))  # pyright: ignore[reportArgumentType]
        assert size * 16 <= budget
        if n < Xf.n_features:
            bigger = min(2 * n + 1, Xf.n_features)
            assert len(conjunction_table(Xf, 2, n_common=bigger)) * 16 > budget  # pyright: ignore
    sol = fit(train.features, train.labels, degree=2, epochs=1, mode="splitting",
              memory_budget=1 << 12)
    assert sol.stats["n_common"] == choose_n_common(Xf, 2, 1 << 12)


def test_prefix_nodes_share_equal_prefixes():
    rows = np.array([[0, 2, 3, 9], [0, 2, 4, 9], [0, 2, 3, 9], [1, 2, 5, 6], [1, 9, 9, 9]])
    nodes, n = prefix_nodes(rows, 2, 9)
    assert n == 6 and nodes.shape == rows.shape
    assert np.all(nodes[:, :1] == n) and np.all(nodes[rows == 9] == n)  # not rare
    assert nodes[0].tolist() == nodes[2].tolist()  # equal rows, equal nodes
    assert nodes[0, 1] == nodes[1, 1] != nodes[3, 1]  # {0, 2} shared; {1, 2} differs
    assert len({nodes[0, 2], nodes[1, 2], nodes[3, 2], nodes[3, 3]}) == 4


def test_errors():
    X = SparseRows.from_rows([{0: 0.5, 1: 1.0}, {1: 1.0}])
    for mode in MODES:
        with pytest.raises(InputError, match="binary"):
            fit(X, [1, -1], mode=mode)
    X, y = _random_binary(11, n=30)
    with pytest.raises(InputError, match="capacity=3"):
        fit(X, y, capacity=3, mode="slicing", n_common=2)


def test_explicit_mode_in_chunks_of_visits(monkeypatch):
    import jkern.pa._fit as fit_module

    monkeypatch.setattr(fit_module, "CHUNK_VISITS", 16)  # 150 visits: 10 chunks, padded
    X, y = _random_binary(3)
    ref = pa_reference(_rows(X), y.tolist(), degree=3, epochs=EPOCHS, exact=True)
    sol = fit(X, y, degree=3, epochs=EPOCHS, mode="explicit", record=True)
    _check_same(sol, ref, alpha=False, atol=0)
    path = require(SHARED_DATA / "srl" / "boundary_5000.dat")
    data = parse_sparse_lines(path.read_text(encoding="utf-8").splitlines()[:60])
    ref = pa_reference(_rows(data.features), data.labels.tolist(), degree=3, epochs=2,
                       exact=True)
    sol = fit(data.features, data.labels, degree=3, epochs=2, mode="explicit", record=True)
    _check_same(sol, ref, alpha=False, atol=0)
