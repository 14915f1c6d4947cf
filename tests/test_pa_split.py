"""jkern.pa's kernel splitting and kernel slicing modes: the reference PA-I's updates bit for
bit (exact mode) at d = 1, 2, 3 on random, synthetic and boundary vectors, for several N."""

from __future__ import annotations

from math import comb

import jax
import jax.numpy as jnp
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
from jkern.pa._table import conjunction_coefficients

EPOCHS = 3
MODES = ("splitting", "slicing")


def _dataset(name: str) -> tuple[SparseRows, np.ndarray, int | None]:
    """(X, y, N) of a small test set: N = 3 on random rows, 15 of the 300 synthetic
    features, opal's rule on the first boundary lines (which renumber themselves)."""
    if name == "random":
        X, y = _random_binary(7)
        return X, y, 3
    if name == "synthetic":
        train, _ = conjunctive_concepts(300, 0, key=1, n_features=300, n_frequent=20,
                                        degree=2)
        return train.features, train.labels, 15
    path = require(SHARED_DATA / "srl" / "boundary_5000.dat")
    data = parse_sparse_lines(path.read_text(encoding="utf-8").splitlines()[:80],
                              source=str(path))
    return data.features, data.labels, None


SLOW = pytest.mark.slow
CASES = [("random", 1), ("random", 2), ("random", 3), ("synthetic", 2), ("boundary", 3),
         pytest.param("synthetic", 1, marks=SLOW), pytest.param("synthetic", 3, marks=SLOW),
         pytest.param("boundary", 1, marks=SLOW), pytest.param("boundary", 2, marks=SLOW)]


@pytest.mark.parametrize(("dataset", "degree"), CASES)
def test_modes_match_reference(dataset, degree):
    """Splitting and slicing give the reference's updates, margins and alpha bit for bit
    (the full 3 x 3 matrix with -m slow)."""
    X, y, n_common = _dataset(dataset)
    ref = pa_reference(_rows(X), y.tolist(), degree=degree, epochs=EPOCHS, exact=True)
    assert 0 < sum(ref.updated) < len(ref.updated)
    walked = {}
    for mode in MODES:
        sol = fit(X, y, degree=degree, epochs=EPOCHS, mode=mode, record=True,
                  n_common=n_common, block_size=7, key=None)
        _check_same(sol, ref, atol=0)  # bit for bit
        walked[mode] = int(sol.stats["walked"])
    if dataset == "synthetic":  # cached prefixes: fewer index entries than splitting's walk
        assert walked["slicing"] < walked["splitting"]


def test_every_feature_rare_or_common():
    # N = 0: the kernel part only; None: opal's rule (here every feature is common)
    X, y = _random_binary(2)
    ref = pa_reference(_rows(X), y.tolist(), degree=2, epochs=EPOCHS, exact=True)
    for mode, n_common in (("splitting", 0), ("slicing", 0), ("slicing", None)):
        sol = fit(X, y, degree=2, epochs=EPOCHS, mode=mode, record=True, n_common=n_common,
                  key=None)
        _check_same(sol, ref, atol=0)
        seen = frequency_order(X).n_features  # the features that occur
        assert sol.stats["n_common"] == (seen if n_common is None else n_common)
    assert int(sol.stats["walked"]) == 0


@pytest.mark.parametrize("degree", [2, 3])
def test_a_budget_too_small_for_one_common_feature(degree):
    """opal's rule under a budget that holds not even one feature's conjunctions picks N = 0
    with its table (∅ alone) already built: ∅ stays in the table (it once was dropped with
    the dense conjunctions, though N = 0 has none, and the updates departed)."""
    X, y = _random_binary(2)
    ref = pa_reference(_rows(X), y.tolist(), degree=degree, epochs=EPOCHS, exact=True)
    for mode in MODES:
        sol = fit(X, y, degree=degree, epochs=EPOCHS, mode=mode, record=True,
                  memory_budget=1, key=None)
        assert sol.stats["n_common"] == 0
        _check_same(sol, ref, atol=0)


def test_float_arithmetic_and_textbook_step():
    X, y = _random_binary(4)
    rows = _rows(X)
    ref = pa_reference(rows, y.tolist(), degree=2, epochs=EPOCHS)
    sol = fit(X, y, degree=2, epochs=EPOCHS, mode="splitting", record=True, n_common=4,
              exact=False, key=None)
    _check_same(sol, ref)  # margins to 1e-9
    book = pa_reference(rows, y.tolist(), degree=2, epochs=EPOCHS, step="textbook",
                        exact=True)
    sol = fit(X, y, degree=2, epochs=EPOCHS, mode="slicing", record=True, n_common=2,
              textbook=True, key=None)
    _check_same(sol, book, atol=0)


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
    want = fit(X, y, degree=3, epochs=EPOCHS, mode="kernel", key=None).model
    model = fit(X, y, degree=3, epochs=EPOCHS, mode="slicing", n_common=5, key=None).model
    np.testing.assert_array_equal(np.asarray(model.alpha), np.asarray(want.alpha))
    def rows(m):  # each support vector's features, as a sorted row (-1: padding)
        return np.sort(np.where(np.asarray(m.values) != 0, np.asarray(m.indices), -1), axis=1)

    np.testing.assert_array_equal(rows(model), rows(want))
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
              memory_budget=1 << 12, key=None)
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
            fit(X, [1, -1], mode=mode, key=None)
    X, y = _random_binary(11, n=30)
    with pytest.raises(InputError, match="capacity=3"):
        fit(X, y, capacity=3, mode="slicing", n_common=2, key=None)


def test_explicit_mode_in_chunks_of_visits(monkeypatch):
    import jkern.pa._fit as fit_module
    import jkern.pa._slice as slice_module

    monkeypatch.setattr(fit_module, "CHUNK_VISITS", 16)  # 150 visits: 10 chunks, padded
    # and every example's conjunction ids searched once in chunks of 16 rows (kept_ids)
    monkeypatch.setattr(slice_module, "CHUNK_VISITS", 16)
    X, y = _random_binary(3)
    ref = pa_reference(_rows(X), y.tolist(), degree=3, epochs=EPOCHS, exact=True)
    sol = fit(X, y, degree=3, epochs=EPOCHS, mode="explicit", record=True, key=None)
    _check_same(sol, ref, alpha=False, atol=0)
    for mode in MODES:  # splitting and slicing on the kept ids, in file and shuffled order
        sol = fit(X, y, degree=3, epochs=EPOCHS, mode=mode, record=True, n_common=3, key=None)
        _check_same(sol, ref, atol=0)
    orders = fit(X, y, degree=3, epochs=EPOCHS, mode="block", shuffle=True,
                 key=jax.random.key(5)).stats["order"]
    shuffled = pa_reference(_rows(X), y.tolist(), degree=3, epochs=EPOCHS, exact=True,
                            orders=np.asarray(orders).tolist())
    for mode in ("splitting", "explicit"):
        sol = fit(X, y, degree=3, epochs=EPOCHS, mode=mode, record=True, n_common=3,
                  shuffle=True, key=jax.random.key(5))
        assert np.asarray(sol.stats["updated"]).reshape(-1).tolist() == shuffled.updated
    path = require(SHARED_DATA / "srl" / "boundary_5000.dat")
    data = parse_sparse_lines(path.read_text(encoding="utf-8").splitlines()[:60])
    ref = pa_reference(_rows(data.features), data.labels.tolist(), degree=3, epochs=2,
                       exact=True)
    sol = fit(data.features, data.labels, degree=3, epochs=2, mode="explicit", record=True,
              key=None)
    _check_same(sol, ref, alpha=False, atol=0)


def test_ensure_room_keeps_the_index_and_makes_room():
    import jax.numpy as jnp

    from jkern.pa import SplitPA
    from jkern.pa._slice import ensure_room
    from jkern.pa._table import CommonPart

    common = CommonPart(jnp.zeros((1,), jnp.int32), 0, 0, 2)
    learner = SplitPA(jnp.asarray(1.0), common, n_features=3, slicing=True)
    state = learner.init(capacity=4, width=2, n_vectors=4,
                         post_start=np.array([0, 2, 3, 5]), n_nodes=1, n_events=4)
    # segments: f0 [0, 2) full, f1 [2, 3) empty, f2 [3, 5) one entry
    state = state._replace(post=jnp.asarray([7, 8, 0, 9, 0, 0, 0, 0], jnp.int32),
                           post_count=jnp.asarray([2, 0, 1], jnp.int32),
                           n_events=jnp.asarray(3, jnp.int32))
    grown = ensure_room(state, np.array([1, 1, 1]), 3)
    start = np.asarray(grown.post_start)
    count = np.asarray(grown.post_count)
    post = np.asarray(grown.post)
    assert np.all(start[1:] - start[:-1] >= count + 1)  # room for one more each
    assert post[start[0]:start[0] + 2].tolist() == [7, 8] and post[start[2]] == 9
    assert grown.events.shape[0] >= 6 and len(post) & (len(post) - 1) == 0  # powers of two
    same = ensure_room(grown, np.array([1, 1, 1]), 1)
    assert same.post is grown.post  # enough room: unchanged


@pytest.fixture(scope="module")
def ud_head():
    """The first 120 attachment examples of UD English EWT dev (issue 21's task), in opal's
    frequency order."""
    from jkern.data import attachment_examples
    from jkern.trees import read_conllu

    path = require(SHARED_DATA / "ud-english-ewt" / "en_ewt-ud-dev.conllu")
    sentences = read_conllu(path)[:12]
    data = attachment_examples(sentences, {}, window=5)
    X, _ = frequency_order(data.examples.features).apply(data.examples.features)
    keep = np.arange(min(120, len(data.examples.labels)))
    return X.rows(keep), data.examples.labels[keep]


@pytest.mark.parametrize(("dataset", "degree"), [
    ("ud", 1), ("ud", 2), ("ud", 3), ("synthetic", 2),
    pytest.param("synthetic", 1, marks=SLOW), pytest.param("synthetic", 3, marks=SLOW)])
def test_every_mode_matches_reference(ud_head, dataset, degree):
    """Acceptance line 1 on the UD task and the synthetic concepts (the boundary vectors:
    test_pa.py and above): every exact mode gives the reference's updates, margins and
    (kernel modes) alpha bit for bit; the linear mode its own reference's."""
    if dataset == "ud":
        X, y = ud_head
    else:
        train, _ = conjunctive_concepts(150, 0, key=2, n_features=200, n_frequent=15,
                                        degree=degree if degree > 1 else 2)
        X, y = train.features, train.labels
    assert 0 < int(np.sum(y > 0)) < len(y)
    ref = pa_reference(_rows(X), y.tolist(), degree=degree, epochs=EPOCHS, exact=True)
    assert 0 < sum(ref.updated) < len(ref.updated)
    for mode in ("kernel", "block", "splitting", "slicing", "explicit"):
        sol = fit(X, y, degree=degree, epochs=EPOCHS, mode=mode, record=True, block_size=8,
                  n_common=31 if mode in MODES else None, key=None)
        _check_same(sol, ref, alpha=mode != "explicit", atol=0)
    if degree == 1:
        lin = pa_reference(_rows(X), y.tolist(), epochs=EPOCHS, mode="linear", exact=True)
        sol = fit(X, y, epochs=EPOCHS, mode="linear", record=True, key=None)
        _check_same(sol, lin, alpha=False, support=False, atol=0)


def _check_search(part, keys: np.ndarray, absent_keys: np.ndarray) -> None:
    """`search` of a table that knows which keys are absent: an absent key gets the sink
    whatever `ok`; a present one its position where `ok`, else the sink."""
    ok = jnp.asarray(np.arange(len(absent_keys)) % 2 == 0)
    got = np.asarray(part.search(jnp.asarray(absent_keys), ok))
    assert np.all(got == len(keys))
    ok_np = np.arange(len(keys)) % 3 > 0
    got = np.asarray(part.search(jnp.asarray(keys), jnp.asarray(ok_np)))
    assert np.array_equal(got, np.where(ok_np, np.arange(len(keys)), len(keys)))


@pytest.mark.parametrize("layout", ["cuckoo", "open", "hashed", "high_bits", "none"])
def test_common_part_finds_every_key_and_no_other(layout):
    """`CommonPart.find` gives each key's position in the sorted table: with cuckoo slots
    (`cuckooed()`, what `CommonPart.of` builds) and open slots (`opened()`, what it built
    before; `search` then also knows which keys are absent), with buckets by a hash of the
    key (`bucketed()`), with the high-bit buckets that tables saved before the hash carry,
    and with no buckets; an absent key lands on another key."""
    from jkern.pa import CommonPart

    rng = np.random.default_rng(7)
    # clustered keys, as conjunction keys of frequency-ordered features are
    keys = np.unique(np.concatenate([rng.integers(0, 5_000, 3_000),
                                     rng.integers(0, 2**40, 3_000)]))
    absent_keys = np.setdiff1d(keys + 1, keys)
    part = CommonPart(jnp.asarray(keys), 10, 3, 2)
    if layout == "cuckoo":
        part = part.cuckooed()
        assert part.cuckoo_keys is not None and part.slots is None
        S = part.cuckoo_keys.shape[0] - 1
        assert S >= len(keys) / 0.48
        if part.keys.dtype.itemsize == 8:  # any count of slots: no more than the load needs
            assert S == -(-len(keys) * 100 // 48)
        else:  # 32-bit keys: a power of two
            assert S & (S - 1) == 0
        # every key in one of its two slots, each slot holding at most one key
        slot_keys = np.asarray(part.cuckoo_keys)
        assert np.array_equal(np.sort(slot_keys[slot_keys >= 0]), keys)
        _check_search(part, keys, absent_keys)
        # ids by slot (a model's weights): the slot that holds the key, S where absent
        by_slot = part.cuckooed(by_slot=True)
        assert by_slot.n_table == S and by_slot.size == S
        got = np.asarray(by_slot.search(jnp.asarray(keys), jnp.ones(len(keys), bool)))
        assert np.array_equal(slot_keys[got], keys)
        got = np.asarray(by_slot.search(jnp.asarray(absent_keys), jnp.ones(len(absent_keys), bool)))
        assert np.all(got == S)
        # more keys than two choices can place in the slots first tried: more slots
        full = part.cuckooed(load=0.9)
        assert full.cuckoo_keys is not None and full.cuckoo_keys.shape[0] - 1 > 2 * len(keys)
        got = np.asarray(full.search(jnp.asarray(keys), jnp.ones(len(keys), bool)))
        assert np.array_equal(got, np.arange(len(keys)))
    elif layout == "open":
        part = part.opened()
        assert part.slots is not None and 1 <= part.window <= 16
        assert part.slots.shape[0] >= 2 * len(keys)  # load <= 0.5
        _check_search(part, keys, absent_keys)
    elif layout == "hashed":
        part = part.bucketed()
        assert part.hashed_keys is not None and part.probes <= 5
    elif layout == "high_bits":
        top = int(keys[-1]) + 1
        shift = max(0, (top - 1).bit_length() - (len(keys) - 1).bit_length())
        start = np.searchsorted(keys, np.arange(((top - 1) >> shift) + 2) << shift)
        part = CommonPart(part.keys, 10, 3, 2, jnp.asarray(start, jnp.int32), shift,
                          int(np.diff(start).max()).bit_length())
    absent = np.setdiff1d(np.concatenate([keys + 1, keys - 1, [2**41]]), keys)
    pos = np.asarray(part.find(jnp.asarray(keys)))
    assert np.array_equal(pos, np.arange(len(keys)))
    pos = np.asarray(part.find(jnp.asarray(absent)))
    assert not np.any(keys[pos] == absent)


@pytest.mark.parametrize("degree", [2, 3])
def test_kept_ids_give_dense_ids_and_search_the_rest(degree, monkeypatch):
    """`kept_ids` (more rows than one chunk of visits) keeps the searched conjunctions'
    ids only, row by row; `CommonPart.ids_from` computes the dense ones and reads those,
    giving what `CommonPart.ids` finds in one program. Conjunctions of the most frequent
    features get arithmetic ids, the others are searched; each id names the row's
    conjunction (a dense id its key in `dense_keys`, a table id its key in the table, the
    sink one the table lacks)."""
    import jkern.pa._table as table_module
    from jkern.pa._slice import CHUNK_VISITS, dense_seen, kept_ids
    from jkern.pa._split import common_part
    from jkern.pa._table import dense_keys

    # chunks' packed ids in slots of a small multiple: each chunk's spill past its own ids
    # is overwritten by the next chunk's
    monkeypatch.setattr(table_module, "PACKED_SLOTS", 256)
    rng = np.random.default_rng(degree)
    n, F = CHUNK_VISITS + 700, 60
    # frequency-ordered rows of 1..7 features, skewed towards the small ids
    rows = [np.unique(np.minimum(rng.geometric(0.08, rng.integers(1, 8)) - 1, F - 1))
            for _ in range(n)]
    X = SparseRows.from_rows([{int(f): 1.0 for f in r} for r in rows])
    Xf, _ = frequency_order(X).apply(X)
    N = Xf.n_features
    keys = conjunction_table(Xf.rows(np.arange(0, n, 3)), degree)  # a table of a third
    common = common_part(Xf, degree, N, keys, n_dense=9)
    assert common.n_dense == 9 and common.offset == sum(
        [1, 9, 36, 84][:degree + 1])
    val = np.asarray(Xf.values)
    idx = jnp.asarray(np.sort(np.where(val != 0, np.asarray(Xf.indices), N), axis=1),
                      jnp.int32)
    kept = kept_ids(common, idx, 2)
    assert kept is not None
    # one row's kept ids: its conjunctions whose largest feature is common but not dense
    r = np.asarray(idx)[:, :common.width]
    a, b = np.sum(r < N, axis=1), np.sum(r < 9, axis=1)
    count = sum(comb(int(x), j) - comb(int(z), j) for x, z in zip(a, b)
                for j in range(1, degree + 1))
    assert int(np.asarray(kept.start)[-1]) == count and count > 0
    got = np.asarray(jax.jit(lambda c, i, k: c.ids_from(i, k, jnp.arange(n)))(
        common, idx, kept))
    want = np.asarray(jax.jit(lambda c, i: c.ids(i))(common, idx))
    assert np.array_equal(got, want)
    key, ok, _ = (np.asarray(a) for a in common.keys_of(idx))
    table = np.asarray(common.keys)
    dense = dense_keys(9, degree, N + 1)
    is_dense, in_table = got < common.offset, (got >= common.offset) & (got < common.size)
    assert np.array_equal(dense[got[is_dense]], key[is_dense])
    assert np.array_equal(table[got[in_table] - common.offset], key[in_table])
    sink = ok & (got == common.size)
    assert not np.any(np.isin(key[sink], table)) and np.all(key[sink] >= (9 + 1))
    assert np.all(got[~ok] == common.size)
    assert is_dense.any() and in_table.any() and sink.any()
    # the dense conjunctions that occur
    seen = dense_seen(common, idx)
    assert np.array_equal(np.flatnonzero(seen), np.unique(got[is_dense]))


@pytest.mark.parametrize(("dataset", "degree"), [("random", 2), ("random", 3),
                                                 ("synthetic", 2), ("boundary", 3)])
def test_explicit_rare_split_matches_reference(dataset, degree):
    """Explicit mode with the rare features' conjunctions through the examples that share
    one (`_rare`): the reference's updates and margins bit for bit for N from 0 (every
    feature rare) up, and the model's margins on the training rows equal the reference
    model's (the rare conjunctions' weights rebuilt from α)."""
    X, y, _ = _dataset(dataset)
    ref = pa_reference(_rows(X), y.tolist(), degree=degree, epochs=EPOCHS, exact=True)
    Xf, _ = frequency_order(X).apply(X)
    whole = fit(Xf, y, degree=degree, epochs=EPOCHS, mode="explicit", record=True,
                block_size=7, key=None, n_common=10**6)
    want = np.asarray(whole.model.decision_function(Xf))
    for n_common in (0, 2, 5, 17):
        sol = fit(Xf, y, degree=degree, epochs=EPOCHS, mode="explicit", record=True,
                  block_size=7, key=None, n_common=n_common)
        assert sol.stats["n_common"] == min(n_common, Xf.n_features)
        _check_same(sol, ref, alpha=False, atol=0)  # bit for bit
        np.testing.assert_array_equal(np.asarray(sol.model.decision_function(Xf)), want)


@pytest.mark.parametrize(("at_once", "with_own"), [(1 << 20, False), (7, False), (7, True),
                                                   (1 << 20, True)])
def test_rare_part_pairs_and_coefficients(monkeypatch, at_once, with_own):
    """`rare_part` against a direct count over every pair of rows, its pairs built in one
    range of examples or in many (`PAIR_KEYS_AT_ONCE`), with examples' own counts added
    to their pairs with themselves (a new pair where an example holds no rare feature)."""
    import jkern.pa._rare as rare_module
    from jkern.pa._rare import rare_part

    monkeypatch.setattr(rare_module, "PAIR_KEYS_AT_ONCE", at_once)
    rng = np.random.default_rng(3)
    n, F, N, d = 40, 30, 12, 3
    rows = np.full((n, 6), F)
    for i in range(n):
        f = np.sort(rng.choice(F, size=rng.integers(1, 7), replace=False))
        rows[i, :len(f)] = f
    own = rng.integers(0, 3, n) * rng.integers(0, 2, n) if with_own else None
    rare = rare_part(rows, F, N, d, own)
    assert rare is not None
    start, partner, coef = (np.asarray(a) for a in rare[:3])
    for i in range(n):
        si = set(rows[i][rows[i] < F].tolist())
        got = dict(zip(partner[start[i]:start[i + 1]].tolist(),
                       coef[start[i]:start[i + 1]].tolist()))
        want = {}
        for j in range(n):
            sj = set(rows[j][rows[j] < F].tolist())
            a = len({f for f in si & sj if f < N})
            b = len(si & sj) - a
            if b:
                want[j] = (1 + a + b) ** d - (1 + a) ** d
        if own is not None and own[i]:
            want[i] = want.get(i, 0) + int(own[i])
        assert got == want
        assert start[i + 1] - start[i] <= rare.width
    if own is not None:
        assert any(own[i] and not any(f >= N for f in rows[i] if f < F) for i in range(n))


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("degree", [2, 3])
def test_distinct_keys_merged_in_value_ranges(monkeypatch, shared, degree):
    """`distinct_keys` with many small chunks, merged in a few value ranges (`_Ranges`):
    every conjunction of the rows' features (∅ included), or those of two rows or more."""
    from itertools import combinations

    import jkern.pa._explicit as explicit_module

    monkeypatch.setattr(explicit_module, "RANGES", 3)
    rng = np.random.default_rng(degree)
    F, n = 25, 300
    rows = [np.sort(rng.choice(F, rng.integers(1, 6), replace=False)) for _ in range(n)]
    X = SparseRows.from_rows([{int(f): 1.0 for f in r} for r in rows])
    base = F + 1
    keys, complete = explicit_module.distinct_keys(X, degree, base, F, chunk=97,
                                                   shared=shared)
    holders: dict[int, int] = {0: n}
    for r in rows:
        for j in range(1, degree + 1):
            for U in combinations(r.tolist(), j):
                key = sum((f + 1) * base ** i for i, f in enumerate(U))
                holders[key] = holders.get(key, 0) + 1
    want = sorted(k for k, c in holders.items() if c >= (2 if shared else 1))
    assert complete and keys.tolist() == want


@pytest.mark.parametrize(("n", "degree"), [(0, 2), (1, 3), (9, 3), (60, 2), (40, 3)])
def test_dense_keys_of_decodes_every_dense_id(n, degree):
    """`dense_keys_of` (the combinatorial number system decoded) names each dense id's
    conjunction as `dense_keys` (built size by size from the smaller keys) does."""
    from jkern.pa._table import dense_keys, dense_keys_of

    base = n + 1
    every = dense_keys(n, degree, base)
    ids = np.random.default_rng(n).permutation(len(every))
    assert np.array_equal(dense_keys_of(ids, n, degree, base), every[ids])


@pytest.mark.parametrize("n_common", [0, 3])
def test_kept_ids_without_a_table_keep_the_empty_conjunction(n_common):
    """No common feature (the table holds ∅ only) and every common conjunction dense (no
    table): `ids_from` over the kept ids gives `ids`' answer, ∅'s weight included."""
    from jkern.pa._slice import CHUNK_VISITS, kept_ids
    from jkern.pa._split import common_part

    rng = np.random.default_rng(n_common)
    n = CHUNK_VISITS + 100
    rows = [np.unique(rng.integers(0, 30, rng.integers(1, 6))) for _ in range(n)]
    X = SparseRows.from_rows([{int(f): 1.0 for f in r} for r in rows])
    Xf, _ = frequency_order(X).apply(X)
    common = common_part(Xf, 2, n_common)
    val = np.asarray(Xf.values)
    idx = jnp.asarray(np.sort(np.where(val != 0, np.asarray(Xf.indices), Xf.n_features),
                              axis=1), jnp.int32)
    kept = kept_ids(common, idx, 2)
    assert kept is not None
    got = np.asarray(jax.jit(lambda c, i, k: c.ids_from(i, k, jnp.arange(n)))(
        common, idx, kept))
    want = np.asarray(jax.jit(lambda c, i: c.ids(i))(common, idx))
    assert np.array_equal(got, want) and np.all(got[:, 0] == 0)


@pytest.mark.parametrize("degree", [2, 3])
def test_blocked_margins_of_narrow_rows_equal_the_expansion(degree):
    """Rows of at most 4 features (fewer triples than pairs of them): the model's blocked
    margins (`table_margins`) equal the sum over its host expansion (`expand`)."""
    rng = np.random.default_rng(degree)
    rows = [{int(f): 1.0 for f in rng.choice(6, rng.integers(1, 5), replace=False)}
            for _ in range(200)]
    X = SparseRows.from_rows(rows)
    y = np.where(rng.random(200) < 0.5, 1, -1)
    model = fit(X, y, degree=degree, mode="explicit", key=None).model
    e = model.expand(X)
    want = np.sum(np.asarray(e.margin_coef) * np.asarray(model.weights)[np.asarray(e.ids)],
                  axis=1)
    np.testing.assert_allclose(np.asarray(model.decision_function(X)), want, rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("degree", [2, 3])
def test_rare_conjunctions_sum_the_support_vectors_conjunctions_that_hold_a_rare_feature(degree):
    """`rare_conjunctions` (only the conjunctions whose largest feature is rare enumerated)
    against a plain loop over every combination of every row with α != 0."""
    import itertools

    from jkern.pa._rare import rare_conjunctions

    rng = np.random.default_rng(degree)
    F, N, n, k = 50, 20, 300, 9
    rows = [np.sort(rng.choice(F, rng.integers(0, k + 1), replace=False)) for _ in range(n)]
    padded = np.full((n, k), F)
    for i, r in enumerate(rows):
        padded[i, :len(r)] = r
    alpha = rng.integers(-3, 4, n)
    keys, w = rare_conjunctions(padded, alpha, F, N, degree)
    want: dict[int, int] = {}
    for r, a in zip(rows, alpha):
        for j in range(1, degree + 1):
            for combo in itertools.combinations(r.tolist(), j):
                if a and combo[-1] >= N:
                    key = sum((f + 1) * (F + 1) ** i for i, f in enumerate(combo))
                    want[key] = want.get(key, 0) + int(a)
    want = {key: v for key, v in want.items() if v}  # (weights 0 left out)
    assert keys.tolist() == sorted(want)
    assert w.tolist() == [want[key] for key in sorted(want)]


def test_explicit_mode_reads_binary_values_of_any_float_dtype():
    """Explicit mode reads only which entries are nonzero: float32 ones with dtype=float64
    give the float64 rows' model and updates exactly (no float64 copy of the values)."""
    X, y, _ = _dataset("synthetic")
    Xf, _ = frequency_order(X).apply(X)
    kw = dict(degree=3, epochs=EPOCHS, mode="explicit", block_size=7, key=None)
    want = fit(Xf.astype(jnp.float64), y, **kw)
    got = fit(Xf.astype(jnp.float32), y, dtype=jnp.float64, **kw)
    assert got.model.weights.dtype == jnp.float64
    assert np.array_equal(got.model.keys, want.model.keys)
    assert np.array_equal(np.asarray(got.model.weights), np.asarray(want.model.weights))
    assert np.array_equal(np.asarray(got.stats["updated"]), np.asarray(want.stats["updated"]))


@pytest.mark.parametrize(("dataset", "degree", "n_common"),
                         [("synthetic", 2, 10**6), ("synthetic", 3, 10**6), ("synthetic", 3, 40),
                          ("boundary", 3, 10**6), ("boundary", 3, 25)])
def test_explicit_private_conjunctions_go_through_their_example(monkeypatch, dataset, degree,
                                                                n_common):
    """The conjunctions that one training example alone holds (`_rare.private_counts`):
    not in the table, not weights in the epochs, but that example's pair with itself; the
    updates and margins are the reference's bit for bit, and the model (keys and weights)
    is the one of a fit that keeps them in the table."""
    from itertools import combinations

    import jkern.pa._fit as fit_module
    import jkern.pa._rare as rare_module
    import jkern.pa._slice as slice_module
    import jkern.pa._split as split_module

    X, y, _ = _dataset(dataset)
    Xf, _ = frequency_order(X).apply(X)
    ref = pa_reference(_rows(Xf), y.tolist(), degree=degree, epochs=EPOCHS, exact=True)
    kw = dict(degree=degree, epochs=EPOCHS, mode="explicit", record=True, block_size=7,
              key=None, n_common=n_common)
    whole = fit(Xf, y, **kw)  # one chunk of visits: the ids are searched, no split
    # the host phases a piece at a time (memory): the kept ids read, the pairs built and
    # the rare weights summed in small ranges
    monkeypatch.setattr(rare_module, "PRIVATE_IDS_AT_ONCE", 50)
    monkeypatch.setattr(rare_module, "PAIR_KEYS_AT_ONCE", 64)
    monkeypatch.setattr(rare_module, "RARE_KEYS_AT_ONCE", 32)
    monkeypatch.setattr(rare_module, "SUM_RANGES", 3)
    # the ids kept (chunks of 16 rows) and a table past the first 3 features (dense)
    monkeypatch.setattr(slice_module, "CHUNK_VISITS", 16)
    few = lambda n, d, budget=0: min(n, 3)  # noqa: E731
    monkeypatch.setattr(fit_module, "dense_features", few)
    monkeypatch.setattr(split_module, "dense_features", few)
    owns = []
    real = fit_module.private_counts
    monkeypatch.setattr(fit_module, "private_counts",
                        lambda *a: owns.append((a[0], real(*a))) or owns[-1][1])
    sol = fit(Xf, y, **kw)
    _check_same(sol, ref, alpha=False, atol=0)
    assert np.array_equal(sol.model.keys, whole.model.keys)
    assert np.array_equal(np.asarray(sol.model.weights), np.asarray(whole.model.weights))
    # own_t: Σ c_|U| over t's conjunctions of common features (below N), not all dense
    # (below 3), that no other example holds; and the table holds the others
    (common, own), = owns
    N = min(n_common, Xf.n_features)
    rows = [sorted(f for f in r if f < N) for r in _rows(Xf)]
    holders: dict[tuple[int, ...], int] = {}
    for r in rows:
        for j in range(1, degree + 1):
            for U in combinations(r, j):
                holders[U] = holders.get(U, 0) + (U[-1] >= 3)
    c = conjunction_coefficients(degree)
    want = [sum(c[len(U)] for j in range(1, degree + 1) for U in combinations(r, j)
                if U[-1] >= 3 and holders[U] == 1) for r in rows]
    assert np.array_equal(own, want) and 0 < sum(want)
    base = Xf.n_features + 1
    shared = sorted(sum((f + 1) * base ** i for i, f in enumerate(U))
                    for U, k in holders.items() if k > 1)
    table = np.asarray(common.keys, np.int64)
    assert np.array_equal(table[table > 0], shared)


@pytest.mark.parametrize(("dataset", "degree", "n_common", "exact"),
                         [("synthetic", 3, 10**6, True), ("boundary", 3, 25, True),
                          ("boundary", 2, 10**6, True), ("synthetic", 3, 10**6, False)])
def test_explicit_row_pages_hold_each_rows_live_ids(monkeypatch, dataset, degree, n_common,
                                                    exact):
    """The epochs read each row's live weight ids from its pages (`_pages.row_pages`) in
    place of the padded K ids: the pages hold exactly the row's ids that are not the sink,
    each page of one size; the updates and margins are the reference's (bit for bit in
    exact mode) and the model is the one of a fit without pages."""
    import jkern.pa._fit as fit_module
    import jkern.pa._pages as pages_module
    import jkern.pa._slice as slice_module

    X, y, _ = _dataset(dataset)
    Xf, _ = frequency_order(X).apply(X)
    ref = pa_reference(_rows(Xf), y.tolist(), degree=degree, epochs=EPOCHS, exact=exact)
    kw = dict(degree=degree, epochs=EPOCHS, mode="explicit", record=True, block_size=7,
              key=None, n_common=n_common, exact=exact)
    # the ids kept (chunks of 16 visits), pages built 16 rows at a time
    monkeypatch.setattr(slice_module, "CHUNK_VISITS", 16)
    monkeypatch.setattr(pages_module, "CHUNK_ROWS", 16)
    monkeypatch.setattr(fit_module, "worth_paging", lambda *a: False)
    plain = fit(Xf, y, **kw)
    monkeypatch.setattr(fit_module, "worth_paging", lambda *a: True)
    built = []
    real = fit_module.row_pages
    monkeypatch.setattr(fit_module, "row_pages",
                        lambda *a: built.append((a, real(*a))) or built[-1][1])
    sol = fit(Xf, y, **kw)
    assert len(built) == 1 and built[0][1] is not None
    if exact:
        _check_same(sol, ref, alpha=False, atol=0)
    else:  # float sums in another order (the fit without pages is as far from the reference)
        assert np.array_equal(np.asarray(sol.stats["updated"]).reshape(-1), ref.updated)
        np.testing.assert_allclose(np.asarray(sol.stats["margins"]).reshape(-1), ref.margins,
                                   rtol=1e-9)
    assert np.array_equal(sol.model.keys, plain.model.keys)
    np.testing.assert_allclose(np.asarray(sol.model.weights), np.asarray(plain.model.weights),
                               rtol=0 if exact else 1e-9, atol=0)
    # the pages against the padded ids, row by row
    (common, kept, idx, _, _, _, _), pages = built[0]
    ids = np.asarray(common.ids_from(jnp.asarray(idx, jnp.int32), kept,
                                     jnp.arange(len(idx), dtype=jnp.int32)))
    bounds = pages_module.size_bounds(common)
    page_ids, page_size = np.asarray(pages.ids), np.asarray(pages.size)
    start = np.asarray(pages.start)
    assert np.all(page_ids[-1] == common.size)
    for r in range(len(idx)):
        mine = slice(start[r], start[r + 1])
        for j in range(degree + 1):
            want = ids[r, bounds[j]:bounds[j + 1]]
            want = want[want < common.size]
            got = page_ids[mine][page_size[mine] == j].ravel()
            assert np.array_equal(got[got < common.size], want)
            assert len(got) == -(-len(want) // pages_module.PAGE) * pages_module.PAGE
    blocks = (np.diff(start)[:len(idx) // 7 * 7].reshape(-1, 7).sum(axis=1))
    assert pages.per_block >= blocks.max() and pages.per_block % 8 == 0


@pytest.mark.parametrize(("dataset", "degree", "n_common", "exact"),
                         [("synthetic", 2, 10**6, True), ("boundary", 3, 25, True),
                          ("synthetic", 2, 10**6, False)])
def test_explicit_row_ids_are_each_rows_ids(monkeypatch, dataset, degree, n_common, exact):
    """Where pages are not used, the epochs gather every row's ids computed once
    (`_pages.kept_row_ids`) when they fit ROW_IDS_BYTES: those are `CommonPart.ids_from`'s,
    row by row; the updates and margins are the reference's (bit for bit in exact mode) and
    the model is the one of a fit over a budget too small for them, which computes the
    dense ids at every visit."""
    import jkern.pa._fit as fit_module
    import jkern.pa._pages as pages_module
    import jkern.pa._slice as slice_module

    X, y, _ = _dataset(dataset)
    Xf, _ = frequency_order(X).apply(X)
    ref = pa_reference(_rows(Xf), y.tolist(), degree=degree, epochs=EPOCHS, exact=exact)
    kw = dict(degree=degree, epochs=EPOCHS, mode="explicit", record=True, block_size=7,
              key=None, n_common=n_common, exact=exact)
    monkeypatch.setattr(slice_module, "CHUNK_VISITS", 16)  # the ids kept, 16 rows a chunk
    monkeypatch.setattr(pages_module, "CHUNK_ROWS", 16)  # the row ids, 16 rows a program
    monkeypatch.setattr(fit_module, "worth_paging", lambda *a: False)
    built = []
    real = pages_module.kept_row_ids
    monkeypatch.setattr(fit_module, "kept_row_ids",
                        lambda *a: built.append((a, real(*a))) or built[-1][1])
    sol = fit(Xf, y, **kw)
    (common, kept, idx), ids = built[0]
    assert ids is not None and ids.shape == (len(idx), common.n_ids)
    want = np.asarray(common.ids_from(jnp.asarray(idx, jnp.int32), kept,
                                      jnp.arange(len(idx), dtype=jnp.int32)))
    assert np.array_equal(np.asarray(ids), want)
    # one byte short of them: none kept, the same fit
    monkeypatch.setattr(pages_module, "ROW_IDS_BYTES", ids.size * 4 - 1)
    plain = fit(Xf, y, **kw)
    assert built[-1][1] is None
    for got in (sol, plain):
        if exact:
            _check_same(got, ref, alpha=False, atol=0)
        else:  # float sums: the same terms, in the reference's order in neither (opal's
            # steps amplify the rounding: 6e-8 of margins near 10 here)
            assert np.array_equal(np.asarray(got.stats["updated"]).reshape(-1), ref.updated)
            np.testing.assert_allclose(np.asarray(got.stats["margins"]).reshape(-1),
                                       ref.margins, rtol=1e-7)
    # the same ids summed in the same order: the same weights, bit for bit, floats too
    assert np.array_equal(sol.model.keys, plain.model.keys)
    assert np.array_equal(np.asarray(sol.model.weights), np.asarray(plain.model.weights))


@pytest.mark.parametrize("dataset", ["synthetic", "boundary"])
def test_explicit_every_feature_dense_with_held_slots(monkeypatch, dataset):
    """At d = 2, where every feature's slots are few enough (DENSE_HELD_SLOTS) and the rows
    hold at most DENSE_HELD_SHARE of them, every feature is dense with weights for the held
    slots only (`_fit._every_feature_held`): no table and no rare part, N = F. The updates
    and margins are the reference's bit for bit and the model is that of the budget's N
    with a rare part (here 3 dense features)."""
    import jkern.pa._fit as fit_module
    import jkern.pa._slice as slice_module
    import jkern.pa._split as split_module

    X, y, _ = _dataset(dataset)
    Xf, _ = frequency_order(X).apply(X)
    ref = pa_reference(_rows(Xf), y.tolist(), degree=2, epochs=EPOCHS, exact=True)
    kw = dict(degree=2, epochs=EPOCHS, mode="explicit", record=True, block_size=7, key=None)
    monkeypatch.setattr(slice_module, "CHUNK_VISITS", 16)  # the ids kept
    few = lambda n, d, budget=0: min(n, 3)  # noqa: E731
    monkeypatch.setattr(fit_module, "dense_features", few)
    monkeypatch.setattr(split_module, "dense_features", few)
    monkeypatch.setattr(fit_module, "DENSE_HELD_SHARE", 1.0)  # (small data: most slots held)
    tried = []
    real = fit_module._every_feature_held
    monkeypatch.setattr(fit_module, "_every_feature_held",
                        lambda *a: tried.append(real(*a)) or tried[-1])
    rare_parts = []
    real_rare = fit_module.rare_part
    monkeypatch.setattr(fit_module, "rare_part",
                        lambda *a: rare_parts.append(real_rare(*a)) or rare_parts[-1])
    every = fit(Xf, y, **kw)
    assert tried[-1] is not None and rare_parts[-1] is None
    assert int(every.stats["n_common"]) == Xf.n_features
    common = tried[-1]
    assert common.n_dense == Xf.n_features and common.dense_bits is not None
    monkeypatch.setattr(fit_module, "DENSE_HELD_SLOTS", 0)  # the budget's N: a rare part
    split = fit(Xf, y, **kw)
    assert tried[-1] is None and rare_parts[-1] is not None
    assert int(split.stats["n_common"]) == 3
    for sol in (every, split):
        _check_same(sol, ref, alpha=False, atol=0)
    assert np.array_equal(every.model.keys, split.model.keys)
    assert np.array_equal(np.asarray(every.model.weights), np.asarray(split.model.weights))


def test_explicit_row_pages_in_a_grid(monkeypatch):
    """A vmapped grid of C reads the same pages (they do not depend on C): its weights are
    those of the grid without pages, bit for bit."""
    import jkern.pa._fit as fit_module
    import jkern.pa._pages as pages_module
    import jkern.pa._slice as slice_module

    X, y, _ = _dataset("synthetic")
    Xf, _ = frequency_order(X).apply(X)
    monkeypatch.setattr(slice_module, "CHUNK_VISITS", 16)
    monkeypatch.setattr(pages_module, "CHUNK_ROWS", 16)

    def grid():
        return np.asarray(jax.vmap(lambda c: fit(
            Xf, y, C=c, degree=3, epochs=EPOCHS, mode="explicit", block_size=7,
            key=None).model.weights)(jnp.asarray([0.5, 1.0])))

    monkeypatch.setattr(fit_module, "worth_paging", lambda *a: False)
    plain = grid()
    built = []
    real = fit_module.row_pages
    monkeypatch.setattr(fit_module, "row_pages", lambda *a: built.append(1) or real(*a))
    monkeypatch.setattr(fit_module, "worth_paging", lambda *a: True)
    assert np.array_equal(grid(), plain) and built


def _primitives_on(jaxpr, shape) -> set[str]:
    """The primitives anywhere in `jaxpr` (sub-jaxprs included) with an output of `shape`."""
    found = set()
    for eqn in jaxpr.eqns:
        if any(getattr(v.aval, "shape", None) == shape for v in eqn.outvars):
            found.add(eqn.primitive.name)
        for param in eqn.params.values():
            subs = param if isinstance(param, (list, tuple)) else [param]
            for sub in subs:
                inner = getattr(sub, "jaxpr", None)
                if inner is not None:
                    found |= _primitives_on(getattr(inner, "jaxpr", inner), shape)
    return found


def test_explicit_block_under_vmap_never_selects_the_weights():
    """Under `jax.vmap` over C, a block's weights are written, never selected: a `cond` on
    the block's updates would become a select of every member's weights at every block
    (a 4-value grid on 20,000 UD rows took 127 CPU s so, 0.61 without). `fit` sets
    `batched` where C is traced; the unbatched learner's jaxpr has that select."""
    from jkern.pa import ExpandedInstance, ExplicitPA, ExplicitState

    B, K, D = 4, 3, 50
    ids = jnp.asarray(np.arange(B * K).reshape(B, K) % (D - 1), jnp.int32)
    xs = ExpandedInstance(ids, jnp.ones((K,)), jnp.ones((K,)), jnp.full((B,), 2.0))
    rows = jnp.asarray(np.arange(B * 2).reshape(B, 2), jnp.int32)
    ys = jnp.asarray([1.0, -1.0, 1.0, -1.0])
    grid = jnp.asarray([0.5, 1.0])

    def weights_after(batched):
        def one(C, w):
            learner = ExplicitPA(C, degree=2, batched=batched)
            return learner.block_steps(ExplicitState(w, jnp.zeros((), jnp.int32)), xs, ys,
                                       rows, 100, jnp.ones((B,), bool))[0].w
        return jax.vmap(one)

    w = jnp.zeros((2, D))
    batched = jax.make_jaxpr(weights_after(True))(grid, w).jaxpr
    assert "select_n" not in _primitives_on(batched, (2, D))
    unbatched = jax.make_jaxpr(weights_after(False))(grid, w).jaxpr
    assert "select_n" in _primitives_on(unbatched, (2, D))
    # the two give the same weights
    np.testing.assert_array_equal(weights_after(True)(grid, w), weights_after(False)(grid, w))


def test_fit_sets_batched_where_C_is_traced(monkeypatch):
    import jkern.pa._fit as fit_module

    X, y, _ = _dataset("synthetic")
    seen = []
    real = fit_module._run_conjunctions
    monkeypatch.setattr(fit_module, "_run_conjunctions",
                        lambda learner, *a: seen.append(learner.batched) or real(learner, *a))
    fit(X, y, degree=2, epochs=1, mode="explicit", key=None)
    jax.vmap(lambda c: fit(X, y, C=c, degree=2, epochs=1, mode="explicit",
                           key=None).model.weights)(jnp.asarray([0.5, 1.0]))
    assert seen == [False, True]


@pytest.mark.parametrize("bitset_bytes", [0, 1 << 20])
def test_shared_common_counts_by_comparison_and_by_bitsets(monkeypatch, bitset_bytes):
    """`_rare._shared_common`: each pair's shared features below N, by k × k comparisons or
    (N / 64 words fewer, the bitsets fitting) by the popcount of the rows' bitsets; both
    against a count of set intersections."""
    import jkern.pa._rare as rare_module

    monkeypatch.setattr(rare_module, "BITSET_BYTES", bitset_bytes)
    rng = np.random.default_rng(3)
    n, k, F, below = 40, 12, 200, 150
    rows = np.sort(np.stack([rng.choice(F + 1, k, replace=False) for _ in range(n)]), axis=1)
    rows = np.where(rng.random((n, k)) < 0.2, F, rows)  # some absent positions (id F)
    rows.sort(axis=1)
    a, b = rng.integers(0, n, 500), rng.integers(0, n, 500)
    want = [len({f for f in rows[i] if f < below} & {f for f in rows[j] if f < below})
            for i, j in zip(a, b)]
    assert np.array_equal(rare_module._shared_common(rows, a, b, below), want)
    # the bitsets of rows ascending (one run a word) and of rows in any order
    words = -(-below // 64)
    want_bits = np.zeros((n, words), np.uint64)
    for i in range(n):
        for f in rows[i][rows[i] < below].tolist():
            want_bits[i, f // 64] |= np.uint64(1) << np.uint64(f % 64)
    assert np.array_equal(rare_module._bitsets(rows, below, words), want_bits)
    assert np.array_equal(rare_module._bitsets(rows[:, ::-1], below, words), want_bits)


def test_rare_coefficients_in_the_narrowest_integer_type():
    """`rare_part`'s coefficients are int16 where every one fits (a row's whole kernel
    value bounds them), int32 where an example's own count needs it; the pairs the same."""
    from jkern.pa._rare import rare_part

    rows = np.asarray([[0, 5, 9], [1, 5, 9], [2, 7, 10], [3, 7, 10]])
    small = rare_part(rows, 11, 5, 3)
    assert small is not None and np.asarray(small.coef).dtype == np.int16
    own = np.asarray([0, 40_000, 0, 0])
    wide = rare_part(rows, 11, 5, 3, own)
    assert wide is not None and np.asarray(wide.coef).dtype == np.int32
    start = np.asarray(wide.start)
    got = dict(zip(np.asarray(wide.partner)[start[1]:start[2]].tolist(),
                   np.asarray(wide.coef)[start[1]:start[2]].tolist()))
    # row 1 shares 5, 9 (rare: >= 5) with row 0, and with itself 1 (common) too
    assert got == {0: (1 + 2) ** 3 - 1, 1: (1 + 1 + 2) ** 3 - (1 + 1) ** 3 + 40_000}


def test_explicit_fit_of_full_sorted_rows_uses_them_in_place(monkeypatch):
    """Rows that are already sorted and full (a renumbered data set's) are the fit's rows
    as given (`_sorted_rows`: no copy); the same examples shuffled within their rows, or
    with a padding position, give the same model and updates bit for bit, and so does the
    epochs' visit stream held as an array (the path of shuffled orders) instead of computed
    in the program."""
    import jkern.pa._fit as fit_module

    rng = np.random.default_rng(5)
    n, F, k = 120, 40, 6
    idx = np.sort(np.stack([rng.choice(F, k, replace=False) for _ in range(n)]), axis=1)
    y = np.where(rng.random(n) < 0.5, 1, -1)
    full = SparseRows(jnp.asarray(idx, jnp.int32), jnp.ones((n, k)), F)
    host, same, widths = fit_module._sorted_rows(full)
    assert same is full.indices and np.array_equal(host, idx) and np.all(widths == k)
    shuffled = np.stack([rng.permutation(r) for r in idx])
    padded_idx = np.concatenate([shuffled, np.zeros((n, 1), np.int64)], axis=1)
    padded_val = np.concatenate([np.ones((n, k)), np.zeros((n, 1))], axis=1)
    padded = SparseRows(jnp.asarray(padded_idx, jnp.int32), jnp.asarray(padded_val), F)
    assert fit_module._sorted_rows(padded)[1] is not padded.indices

    def run(X):
        sol = fit(X, y, degree=3, epochs=EPOCHS, mode="explicit", record=True, block_size=8,
                  key=None, n_common=12)
        return (np.asarray(sol.model.decision_function(full)),
                np.asarray(sol.stats["updated"]), np.asarray(sol.stats["margins"]))

    want = run(full)
    assert want[1].sum() > 0
    for got in (run(padded), run(SparseRows(jnp.asarray(shuffled, jnp.int32),
                                            jnp.ones((n, k)), F))):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(fit_module, "FILE_ORDER_VISITS", 0)  # the stream as an array
    for a, b in zip(run(full), want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("wide", [False, True])
def test_host_slots_in_parts_equal_the_programs_slots(monkeypatch, wide):
    """The cuckoo table's host hashing (`_table._slot_of`, in place and a part of the keys
    at a time) gives the slots JAX computes for the same keys, so a table built on the host
    finds its keys in a program; built with small parts, the table is the same."""
    import jkern.pa._table as table_module

    rng = np.random.default_rng(11)
    dtype = np.int64 if wide else np.int32
    keys = np.unique(rng.integers(0, 2**40 if wide else 2**30, 5000)).astype(dtype)
    n_slots = 12_289 if wide else 1 << 14
    seed = table_module._SEEDS[1]
    whole = [table_module._slot_of(keys, n_slots, s) for s in (0, seed)]
    for got, s in zip(whole, (0, seed)):
        want = np.asarray(table_module._slot_of(jnp.asarray(keys), n_slots, s))
        np.testing.assert_array_equal(got, want)
    part = table_module.CommonPart(jnp.asarray(keys), 10**6, 3, 2)
    big = part.cuckooed()
    monkeypatch.setattr(table_module, "SLOTS_AT_ONCE", 7)
    for got, s in zip(whole, (0, seed)):
        np.testing.assert_array_equal(table_module._slot_of(keys, n_slots, s), got)
    small = part.cuckooed()
    np.testing.assert_array_equal(np.asarray(small.cuckoo_keys), np.asarray(big.cuckoo_keys))
    np.testing.assert_array_equal(np.asarray(small.cuckoo_pos), np.asarray(big.cuckoo_pos))
    found = np.asarray(small.search(jnp.asarray(keys), jnp.ones(len(keys), bool)))
    np.testing.assert_array_equal(found, np.arange(len(keys)))


@pytest.mark.parametrize("degree", [2, 3])
def test_dense_weights_for_the_held_slots_only(monkeypatch, degree):
    """A fit whose dense weights are kept for the slots its training rows hold only
    (`CommonPart.compacted`, a dense id then its slot's rank) makes the same updates,
    margins and model, bit for bit, as one with every dense slot; `dense_slots` gives each
    weight's arithmetic id back."""
    import jkern.pa._fit as fit_module
    from jkern.pa._table import CommonPart, n_conjunctions

    X, y, _ = _dataset("random")
    Xf, _ = frequency_order(X).apply(X)

    def run(share: float, max_degree: int):
        monkeypatch.setattr(fit_module, "DENSE_HELD_SHARE", share)
        monkeypatch.setattr(fit_module, "DENSE_HELD_DEGREE", max_degree)
        held = []
        orig = fit_module._held_dense
        monkeypatch.setattr(fit_module, "_held_dense",
                            lambda c, i: held.append(orig(c, i)) or held[-1])
        sol = fit(Xf, y, degree=degree, epochs=EPOCHS, mode="explicit", record=True,
                  block_size=7, key=None, n_common=9)
        return sol, held[-1]

    whole, part = run(-1.0, degree)
    assert part.dense_bits is None and part.n_dense > 0
    ranked, part = run(1.0, degree)
    assert part.dense_bits is not None
    S = n_conjunctions(part.n_dense, degree)
    assert 0 < part.offset == part.n_live < S
    slots = part.dense_slots()
    assert len(slots) == part.offset and np.all(np.diff(slots) > 0) and slots[-1] < S
    # each held slot's id is its rank; a slot not held has none
    plain = CommonPart.of(np.asarray(part.keys), part.n_common, part.width, degree,
                          n_dense=part.n_dense, below=part.below)
    ids = jnp.arange(S, dtype=jnp.int32)
    ranks = np.asarray(part._ranked(ids))
    assert np.array_equal(ranks[slots], np.arange(len(slots)))
    assert np.all(ranks[np.setdiff1d(np.arange(S), slots)] == -1)
    assert np.array_equal(np.asarray(plain._ranked(ids)), np.arange(S))
    for key in ("updated", "margins"):
        np.testing.assert_array_equal(np.asarray(ranked.stats[key]),
                                      np.asarray(whole.stats[key]))
    np.testing.assert_array_equal(np.asarray(ranked.model.keys), np.asarray(whole.model.keys))
    np.testing.assert_array_equal(np.asarray(ranked.model.weights),
                                  np.asarray(whole.model.weights))
