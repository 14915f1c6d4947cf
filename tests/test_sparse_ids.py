"""Issue 32: sparse feature ids are labels (int64 in, dense int32 columns inside: memory by
the distinct features, models map new rows' ids onto their columns), and finite feature
values whose squares overflow are refused by every learner that takes raw values."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import SparseRows, svm
from jkern.data import SparseExamples
from jkern.errors import InputError, ModelFileError
from jkern.pa import fit, parse_sparse_lines, read_sparse, write_sparse
from jkern.trees import TreeParseError

LINES = ["+1 1:1 2:1", "-1 2:1 3:1", "+1 1:1 3:1 4:1", "-1 3:1", "+1 1:1 4:1", "-1 2:1 4:1 3:1"]
KERNEL_MODES = ("kernel", "block", "splitting", "slicing", "explicit")


def _relabel(lines: list[str], ids: dict[int, int]) -> list[str]:
    out = []
    for line in lines:
        label, *feats = line.split()
        out.append(" ".join([label] + [f"{ids[int(f.split(':')[0])]}:{f.split(':')[1]}"
                                       for f in feats]))
    return out


def test_id_past_int32_is_its_own_feature_not_a_wrapped_one():
    train = parse_sparse_lines(LINES)
    # 4294967297 = 2^32 + 1 wrapped to 1 in int32; the model never saw it: it counts nothing
    big = parse_sparse_lines(["+1 4294967297:1 2:1"]).features
    one = parse_sparse_lines(["+1 1:1 2:1"]).features
    two = parse_sparse_lines(["+1 2:1"]).features
    assert big.ids is not None and big.ids.array.tolist() == [2, 4294967297]
    for mode in (*KERNEL_MODES, "linear"):
        model = fit(train.features, train.labels, mode=mode, epochs=3, throw=True, key=None).model
        m_big, m_one, m_two = (float(model.decision_function(x)[0]) for x in (big, one, two))
        assert m_big == m_two and m_big != m_one, mode
    # the same through from_rows
    model = fit(SparseRows.from_rows([{1: 1.0, 2: 1.0}, {2: 1.0, 3: 1.0}]), [1, -1], key=None).model
    assert float(model.decision_function(SparseRows.from_rows([{2**32 + 1: 1.0}]))[0]) == \
        float(model.decision_function(SparseRows.from_rows([{}], n_features=1))[0])


@pytest.mark.parametrize("mode", [*KERNEL_MODES, "linear"])
def test_model_is_the_model_of_densely_renumbered_ids(mode, tmp_path):
    sparse_ids = {1: 7, 2: 2**22, 3: 10**18, 4: 2**63 - 1}
    dense_ids = {1: 1, 2: 2, 3: 3, 4: 4}
    a = parse_sparse_lines(_relabel(LINES, sparse_ids))
    b = parse_sparse_lines(_relabel(LINES, dense_ids))
    assert a.features.n_features == 4  # by the distinct features, not the largest id
    ma = fit(a.features, a.labels, mode=mode, epochs=4, throw=True, key=None).model
    mb = fit(b.features, b.labels, mode=mode, epochs=4, throw=True, key=None).model
    test = ["+1 1:1 4:1 5:1", "-1 3:1", "+1 2:1 1:1 3:1", "-1 6:1"]
    ta = parse_sparse_lines(_relabel(test, {**sparse_ids, 5: 5, 6: 2**40})).features
    tb = parse_sparse_lines(_relabel(test, {**dense_ids, 5: 5, 6: 6})).features
    np.testing.assert_array_equal(np.asarray(ma.decision_function(ta)),
                                  np.asarray(mb.decision_function(tb)))
    # save / load keeps the id -> column map
    path = tmp_path / "m.npz"
    jkern.save(path, ma)
    back = jkern.load(path)
    assert back.ids == ma.ids and back.ids is not None
    np.testing.assert_array_equal(np.asarray(back.decision_function(ta)),
                                  np.asarray(ma.decision_function(ta)))
    if mode == "block":
        e = ma.expanded()
        jkern.save(path, e)
        np.testing.assert_array_equal(np.asarray(jkern.load(path).decision_function(ta)),
                                      np.asarray(mb.decision_function(tb)))


_MEMORY = r"""
import resource, sys
import jax
jax.config.update("jax_enable_x64", True)
from jkern.pa import fit, parse_sparse_lines

def train(big):
    lines = [f"+1 1:1 {big}:1", f"-1 2:1 {big}:1", "+1 1:1 3:1", "-1 2:1"]
    data = parse_sparse_lines(lines)
    for mode in ("kernel", "block", "splitting", "slicing", "explicit", "linear"):
        model = fit(data.features, data.labels, mode=mode, epochs=2, throw=True,
                    key=None).model
        model.decision_function(data.features).block_until_ready()

train(4)  # compiled programs and the runtime: the baseline
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for big in sys.argv[1:]:
    train(int(big))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
"""


def test_large_ids_train_in_small_memory():
    """4 lines with id 2^22 peaked at 3.3 GiB, 2^31 asked 275 GB, 10^18 aborted in XLA."""
    out = subprocess.run([sys.executable, "-c", _MEMORY, str(2**22), str(2**31), str(10**18),
                          str(2**63 - 1)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    grown_mib = int(out.stdout.split()[-1])
    assert grown_mib < 200, f"peak memory grew by {grown_mib} MiB"


def test_reader_refuses_bad_ids_with_their_place(tmp_path):
    for text, problem in (("+1 9223372036854775808:1", "at most 2"),
                          ("+1 2:1 -3:1", "bad feature"), ("+1 1.5:1", "bad feature"),
                          ("+1 0:1", "positive")):
        with pytest.raises(TreeParseError, match=problem) as err:
            parse_sparse_lines(["-1 1:1", text], source="f.svm")
        assert str(err.value).startswith("f.svm:2:")
    # the largest int64 id is fine, and writes back as itself
    data = parse_sparse_lines(["+1 9223372036854775807:0.5 3:1"])
    assert data.features.ids is not None
    assert data.features.ids.array.tolist() == [3, 2**63 - 1]
    with pytest.raises(InputError, match="past 2"):  # id + 1 would not read back
        write_sparse(tmp_path / "o.svm", SparseExamples(data.features, data.labels))
    data = parse_sparse_lines(["+1 9223372036854775806:0.5 3:1"])
    write_sparse(tmp_path / "o.svm", SparseExamples(data.features, data.labels), offset=1)
    back = read_sparse(tmp_path / "o.svm").features
    assert back.ids is not None and back.ids.array.tolist() == [4, 2**63 - 1]


def test_from_coo_refuses_ids_that_are_not_int64():
    with pytest.raises(InputError, match="int64"):
        SparseRows.from_rows([{2**64: 1.0}])
    with pytest.raises(InputError, match="integers"):
        SparseRows.from_coo([0], [1.5], [1.0], (1, 3))
    X = SparseRows.from_coo([0, 0], [3, 2**40], [1.0, 2.0], (1, 2**41))
    assert X.n_features == 2 and X.ids is not None and X.ids.array.tolist() == [3, 2**40]
    np.testing.assert_array_equal(np.asarray(X.indices), [[0, 1]])


def test_old_model_files_without_ids_still_load(tmp_path):
    data = parse_sparse_lines(LINES)
    model = fit(data.features, data.labels, epochs=2, key=None).model
    assert model.ids is None
    path = tmp_path / "m.npz"
    jkern.save(path, model)
    # a file of the same format written before issue 32: the model has no `ids` field
    old = tmp_path / "old.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(old, "w") as dst:
        for item in src.infolist():
            raw = src.read(item)
            if item.filename == "header.json":
                header = json.loads(raw)
                del header["object"]["fields"]["ids"]
                raw = json.dumps(header).encode()
            dst.writestr(item, raw)
    back = jkern.load(old)
    assert back.ids is None
    np.testing.assert_array_equal(np.asarray(back.decision_function(data.features)),
                                  np.asarray(model.decision_function(data.features)))
    # feature ids altered in the file (not increasing): a ModelFileError
    sparse = parse_sparse_lines(_relabel(LINES, {1: 5, 2: 2**40, 3: 9, 4: 2**50}))
    jkern.save(path, fit(sparse.features, sparse.labels, epochs=2, key=None).model)
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            raw = src.read(item)
            if item.filename == "ids.npy":
                raw = raw[:-8] + np.int64(1).tobytes()
            dst.writestr(item, raw)
    with pytest.raises(ModelFileError, match="increasing"):
        jkern.load(bad)


def test_dcd_on_sparse_ids_maps_new_rows_by_id(tmp_path):
    rng = np.random.default_rng(0)
    ids = [3, 2**33, 10**15, 2**62]
    rows = [{ids[j]: float(rng.normal()) for j in range(4) if rng.random() < 0.7}
            for _ in range(30)]
    y = jnp.array([1 if sum(r.values()) > 0 else -1 for r in rows])
    Xs = SparseRows.from_rows(rows)
    assert Xs.n_features == 4
    dense = np.zeros((30, 4))
    for i, r in enumerate(rows):
        for j, f in enumerate(ids):
            dense[i, j] = r.get(f, 0.0)
    key = jax.random.key(0)
    ms = svm.dcd(Xs, y, key=key).model
    md = svm.dcd(jnp.asarray(dense), y, key=key).model
    test = SparseRows.from_rows([{2**62: 1.0, 7: 5.0}, {10**15: -2.0}])  # 7: never seen
    np.testing.assert_allclose(np.asarray(ms.decision_function(test)),
                               np.asarray(md.decision_function(
                                   jnp.array([[0, 0, 0, 1.0], [0, 0, -2.0, 0]]))))
    path = tmp_path / "svm.npz"
    jkern.save(path, ms)
    np.testing.assert_array_equal(np.asarray(jkern.load(path).decision_function(test)),
                                  np.asarray(ms.decision_function(test)))


# ------------------------------------------------------------------- values whose squares overflow


@pytest.mark.parametrize("mode", ["kernel", "block", "linear"])
def test_pa_refuses_values_whose_kernel_overflows(mode):
    X = SparseRows.from_rows([{1: 1.0, 2: 1.0}, {2: 1.0, 3: 1e200}, {1: 1.0}])
    with pytest.raises(InputError, match=r"row 1 .* feature 3 = 1e\+200.*overflows float64"):
        fit(X, [1, -1, 1], mode=mode, key=None)
    # 1e100: |x|^2 = 1e200 is fine for the linear kernel, (1 + 1e200)^2 is not
    X = SparseRows.from_rows([{1: 1.0}, {2: 1e100}])
    if mode == "linear":
        assert int(fit(X, [1, -1], mode=mode, key=None).result) == 0
    else:
        with pytest.raises(InputError, match=r"\(x·y \+ 1\)\^2"):
            fit(X, [1, -1], mode=mode, key=None)
        assert int(fit(X, [1, -1], mode=mode, degree=1, key=None).result) == 0


def test_other_learners_refuse_values_whose_squares_overflow():
    X = np.ones((4, 3))
    X[2, 1] = 1e200
    X = jnp.asarray(X)
    y = jnp.array([1, -1, 1, -1])
    key = jax.random.key(0)
    for run in (lambda: svm.dcd(X, y, key=key),
                lambda: svm.dcd(SparseRows.from_dense(X), y, key=key),
                lambda: jkern.Polynomial(2).gram(X), lambda: jkern.Linear().gram(X),
                lambda: jkern.RBF(0.5).gram(jnp.ones((2, 3)), X)):
        with pytest.raises(InputError, match="row 2 .* overflows float64"):
            run()
    # (x·y + 1)^3 overflows at |x|^2 = 2e120 although the values are modest
    with pytest.raises(InputError, match="Polynomial"):
        jkern.Polynomial(3).gram(jnp.full((2, 2), 1e60))
    assert np.isfinite(np.asarray(jkern.Polynomial(3).gram(jnp.full((2, 2), 1e40)))).all()


def test_kda_and_ds_refuse_values_whose_squares_overflow():
    from test_ds_relaxation import instance

    from jkern import ds, kda

    key = jax.random.key(0)
    c = jnp.ones((4, 3)).at[2, 1].set(1e200)
    with pytest.raises(InputError, match="row 2 .* overflows float64"):
        kda.fit(c, [0, 1, 0, 1], model=kda.KDA.init(jnp.eye(3), (0, 1), key=key, hidden=(4,)),
                key=key)
    x, mp, rel = instance(12, 30, 4, 2, sparse=False)
    x = np.array(x)
    x[3, 0] = 1e200
    with pytest.raises(InputError, match="row 3 .* overflows"):
        ds.fit(x, mp, rel, key=None)


def test_astype_converts_on_the_host_and_keeps_rows_of_that_dtype():
    """`SparseRows.astype`: the same rows, values converted; rows whose values already have
    the dtype are returned as they are (no second copy of a data set held for a fit)."""
    X = SparseRows.from_rows([{0: 1.0, 3: 2.5}, {1: 1.0}])
    assert X.astype(X.values.dtype) is X
    Y = X.astype(jnp.float16)
    assert Y.values.dtype == jnp.float16 and Y is not X
    assert np.array_equal(np.asarray(Y.values), np.asarray(X.values).astype(np.float16))
    assert np.array_equal(np.asarray(Y.indices), np.asarray(X.indices))
