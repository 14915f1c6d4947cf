"""jkern.save / jkern.load: bit-identical round trips of every model, projector and kernel;
honest errors for foreign, truncated, tampered and other-version files; the old formats."""

from __future__ import annotations

import dataclasses
import json
import math
import zipfile

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern import kda
from jkern.errors import InputError, ModelFileError
from jkern.svm import KernelExpansion, KernelSVM, LinearSVM
from jkern.trees import Tree, parse_penn

TREES = [parse_penn(s) for s in (
    "(S (NP (D a) (N dog)) (VP (V runs)))", "(S (NP (D the) (N cat)) (VP (V sleeps)))",
    "(S (NP (N dogs)) (VP (V run) (ADV fast)))", "(SQ (WP what) (VP (V is) (NP (N it))))",
    "(SQ (WP who) (VP (V runs)))", "(S (NP (D a) (N cat)) (VP (V runs) (ADV fast)))",
    "(SQ (WP what) (VP (V runs)))", "(S (NP (N cats)) (VP (V sleep)))",
)]
WORDS = ["QUESTION", "QUESTION", "STATEMENT", "QUESTION", "STATEMENT", "STATEMENT",
         "QUESTION", "STATEMENT"]
LABELS = ["s", "s", "s", "q", "q", "s", "q", "s"]
INT_LABELS = [3, 3, 3, 1, 1, 3, 1, 7]


def assert_same(a, b, where="obj"):
    """`b` is `a`: same types all the way down, arrays bit for bit (dtype, shape, weak type,
    bytes, jax or numpy), static values equal and of the same Python type."""
    assert type(a) is type(b), f"{where}: {type(a)} vs {type(b)}"
    if isinstance(a, (jax.Array, np.ndarray)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), where
        assert getattr(a, "weak_type", False) == getattr(b, "weak_type", False), where
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), where
    elif dataclasses.is_dataclass(a) and not isinstance(a, Tree):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def round_trip(obj, tmp_path, name="m.npz"):
    path = tmp_path / name
    jkern.save(path, obj)
    again = jkern.load(path)
    assert_same(obj, again)
    return again


def same_values(f, g):
    assert np.asarray(f).tobytes() == np.asarray(g).tobytes()


# --------------------------------------------------------------------------- kernels

VOCAB = ["dog", "cat", "dogs", "runs"]
VECTORS = np.array([[1.0, 0.2, 0.0], [0.3, 1.0, 0.1], [0.9, 0.1, 0.2], [0.0, 0.0, 1.0]])


def _constant():
    constant = getattr(jkern.kernels, "Constant", None)
    if constant is None:
        pytest.skip("no jkern.kernels.Constant yet")
    return constant(2.5)


KERNELS = {
    "st": lambda: jkern.ST(0.3),
    "sst": lambda: jkern.SST(0.4, tree_index=1),
    "sst-bow": lambda: jkern.SSTBow(0.5),
    "ptk": lambda: jkern.PTK(0.3, 0.6, max_subseq=3),
    "sptk": lambda: jkern.SPTK(VOCAB, VECTORS, 0.4, 0.5, threshold=0.2),
    "sptk-gamma": lambda: jkern.SPTK(VOCAB, VECTORS, gamma=2.0, max_subseq=2),
    "linear": lambda: jkern.Linear(vector_index=1),
    "polynomial": lambda: jkern.Polynomial(3, gamma=0.5, coef0=0.1),
    "rbf": lambda: jkern.RBF(0.7),
    "algebra": lambda: (jkern.Normalized(jkern.PTK(0.4, 0.3)) + 0.5 * jkern.SST(0.2)) * (
        jkern.Linear() * 2.0),
    "constant": _constant,
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel_round_trip(name, tmp_path):
    round_trip(KERNELS[name](), tmp_path)


def test_sptk_gram_after_round_trip(tmp_path):
    trees = [parse_penn(s) for s in ("(S (N dog::n) (V runs::v))", "(S (N cat::n) (V runs::v))")]
    vocab = ["dog", "cat", "runs"]
    kernel = jkern.SPTK(vocab, np.array([[1.0, 0.5], [0.8, 0.6], [0.0, 1.0]]), 0.4, 0.4)
    again = round_trip(kernel, tmp_path)
    same_values(again.gram(trees), kernel.gram(trees))


# --------------------------------------------------------------------------- projectors


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nystrom_round_trip(dtype, tmp_path):
    kernel = jkern.Normalized(jkern.PTK(0.4, 0.4))
    proj = jkern.fit_nystrom(kernel, TREES, landmarks=5, key=jax.random.PRNGKey(0),
                             labels=LABELS, dtype=dtype)
    assert proj.projection.dtype == jnp.dtype(dtype)
    again = round_trip(proj, tmp_path)
    same_values(again.embed(TREES, dtype=dtype), proj.embed(TREES, dtype=dtype))


def test_ensemble_round_trip(tmp_path):
    ens = jkern.fit_nystrom_ensemble(jkern.SST(0.4), TREES, landmarks=3, projections=2,
                                     key=jax.random.PRNGKey(1))
    again = round_trip(ens, tmp_path)
    same_values(again.embed(TREES), ens.embed(TREES))


# --------------------------------------------------------------------------- models


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_svm_round_trip(dtype, tmp_path):
    x = np.random.default_rng(0).normal(size=(30, 4)).astype(dtype)
    y = np.where(x[:, 0] + 0.3 * x[:, 1] > 0, 1, -1)
    binary = jkern.svm.dcd(x, y, C=1.0, key=jax.random.PRNGKey(0)).model
    assert binary.classes is None and binary.w.dtype == jnp.dtype(dtype)
    again = round_trip(binary, tmp_path, "b.npz")
    same_values(again.decision_function(x), binary.decision_function(x))
    for labels in (np.array(["c", "a", "b"])[(x[:, 1] > 0).astype(int) + (x[:, 2] > 0)],
                   np.array([5, -1, 2])[(x[:, 1] > 0).astype(int) + (x[:, 2] > 0)]):
        ovr = jkern.svm.dcd_ovr(x, labels, C=1.0, key=jax.random.PRNGKey(1)).model
        again = round_trip(ovr, tmp_path, "ovr.npz")
        assert again.classes == ovr.classes and len(again.classes) == 3
        assert [type(c) for c in again.classes] == [type(c) for c in ovr.classes]
        assert list(again.predict(x)) == list(ovr.predict(x))


@pytest.mark.filterwarnings("ignore:A JAX array is being set as static")  # numpy scalars
def test_static_values_keep_their_python_types(tmp_path):
    classes = (np.int64(3), np.str_("b"), np.float32(0.1), np.float64(-np.inf), 2.5, -0.0,
               float("inf"), True, None, "1", 1)
    model = LinearSVM(w=jnp.zeros((11, 2)), b=jnp.zeros(11), classes=classes)
    again = round_trip(model, tmp_path)
    assert [type(c) for c in again.classes] == [type(c) for c in classes]
    assert math.copysign(1.0, again.classes[5]) == -1.0


def test_kernel_svm_and_expansions_round_trip(tmp_path):
    kernel = jkern.Normalized(jkern.SST(0.4))
    g = kernel.gram(TREES)
    y = np.where(np.array(WORDS) == "QUESTION", 1, -1)
    binary = jkern.svm.ksvm(g, y, C=1.0).model
    same_values(round_trip(binary, tmp_path, "b.npz").decision_function(g),
                binary.decision_function(g))
    ovr = jkern.svm.ksvm_ovr(g, INT_LABELS, C=1.0).model
    assert ovr.classes == (1, 3, 7)
    again = round_trip(ovr, tmp_path, "ovr.npz")
    assert list(again.predict(g)) == list(ovr.predict(g))
    expansion = ovr.expand(kernel, TREES)
    again = round_trip(expansion, tmp_path, "exp.npz")
    same_values(again.decision_function(TREES), expansion.decision_function(TREES))


def test_cutting_plane_model_round_trip(tmp_path):
    y = np.where(np.array(WORDS) == "QUESTION", 1, -1)
    model = jkern.svm.cpa(TREES, y, kernel=jkern.Normalized(jkern.SST(0.4)), C=1.0, sample=8,
                          key=jax.random.PRNGKey(0)).model
    assert isinstance(model, KernelExpansion) and model.n_support > 0
    again = round_trip(model, tmp_path)
    same_values(again.decision_function(TREES), model.decision_function(TREES))
    assert list(again.predict(TREES)) == list(model.predict(TREES))


def _kda(projector, classes, dtype=None):
    return kda.KDA.init(projector.projection, classes, key=jax.random.PRNGKey(1), hidden=[6],
                        dropout=0.1, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kda_round_trip(dtype, tmp_path):
    kernel = jkern.Normalized(jkern.PTK(0.4, 0.4))
    projector = jkern.fit_nystrom(kernel, TREES, landmarks=4, key=jax.random.PRNGKey(0))
    model = _kda(projector, ("q", "s"), dtype)
    again = round_trip(model, tmp_path)
    c = kernel.gram(TREES, list(projector.landmarks))
    same_values(again(c), model(c))
    jkern.save(tmp_path / "k.npz", jkern.NystromModel(projector, model))  # one file
    assert_same(jkern.NystromModel(projector, model), jkern.load(tmp_path / "k.npz"))


def test_solution_round_trip(tmp_path):
    x = np.random.default_rng(0).normal(size=(20, 3))
    solution = jkern.svm.dcd(x, np.where(x[:, 0] > 0, 1, -1), C=1.0, key=jax.random.PRNGKey(0))
    round_trip(solution, tmp_path)
    stats = {"a.b": np.zeros(2), "a": {"b": np.ones(2)}, "runs": [1, 2.5, "x"]}
    round_trip(eqx.tree_at(lambda s: s.stats, solution, stats), tmp_path, "s.npz")


# --------------------------------------------------------------------------- NystromModel


def test_nystrom_model_with_a_linear_svm_head(tmp_path):
    proj = jkern.fit_nystrom(jkern.SST(0.4), TREES, landmarks=5, key=jax.random.PRNGKey(0))
    x = proj.embed(TREES)
    ovr = jkern.svm.dcd_ovr(x, LABELS, C=1.0, key=jax.random.PRNGKey(0)).model
    model = jkern.NystromModel(proj, ovr)
    f = model.decision_function(TREES)
    same_values(f, ovr.decision_function(x))
    assert list(model.predict(TREES)) == [("q", "s")[i] for i in np.argmax(f, axis=1)]
    assert model.classes == ("q", "s") and model.n_landmarks == 5
    again = round_trip(model, tmp_path)
    same_values(again.decision_function(TREES), f)
    # binary: +1 where f >= 0
    y = np.where(np.array(WORDS) == "QUESTION", 1, -1)
    binary = jkern.NystromModel(proj, jkern.svm.dcd(x, y, C=1.0, key=jax.random.PRNGKey(0)).model)
    f = binary.decision_function(TREES)
    assert f.shape == (len(TREES),)
    np.testing.assert_array_equal(binary.predict(TREES), np.where(f >= 0, 1, -1))
    round_trip(binary, tmp_path, "binary.npz")


def test_nystrom_model_with_a_kda_head_and_an_ensemble(tmp_path):
    kernel = jkern.Normalized(jkern.PTK(0.4, 0.4))
    proj = jkern.fit_nystrom(kernel, TREES, landmarks=4, key=jax.random.PRNGKey(0))
    net = _kda(proj, ("q", "s"))
    model = jkern.NystromModel(proj, net)
    c = kernel.gram(TREES, list(proj.landmarks))
    same_values(model.decision_function(TREES), net(c))
    assert list(model.predict(TREES)) == list(net.predict(c))
    round_trip(model, tmp_path)
    ens = jkern.fit_nystrom_ensemble(kernel, TREES, landmarks=3, projections=2,
                                     key=jax.random.PRNGKey(2))
    x = ens.embed(TREES)
    head = jkern.svm.dcd_ovr(x, INT_LABELS, C=1.0, key=jax.random.PRNGKey(0)).model
    model = jkern.NystromModel(ens, head)
    assert list(round_trip(model, tmp_path, "e.npz").predict(TREES)) == list(head.predict(x))


def test_nystrom_model_checks_its_parts():
    proj = jkern.fit_nystrom(jkern.SST(0.4), TREES, landmarks=4, key=jax.random.PRNGKey(0))
    with pytest.raises(InputError, match="the projector embeds in"):
        jkern.NystromModel(proj, LinearSVM(w=jnp.zeros(proj.rank + 1), b=jnp.zeros(())))
    with pytest.raises(InputError, match="takes 3 kernel columns; the projector has 4"):
        jkern.NystromModel(proj, kda.KDA.init(jnp.eye(3), (0, 1), key=jax.random.PRNGKey(0)))
    with pytest.raises(InputError, match="head must be a LinearSVM or a KDA"):
        jkern.NystromModel(proj, KernelSVM(jnp.zeros(3), jnp.zeros(())))


# --------------------------------------------------------------------------- what save refuses


def test_save_refuses_what_it_cannot_rebuild(tmp_path):
    path = tmp_path / "m.npz"
    with pytest.raises(InputError, match="jkern.save takes jkern models"):
        jkern.save(path, {"w": np.zeros(3)})
    odd = Tree(("S", "two words"), ((1,), ()))
    with pytest.raises(InputError, match="does not survive Penn text"):
        jkern.save(path, jkern.Nystrom(jkern.SST(0.4), (odd,), jnp.eye(1)))
    with pytest.raises(InputError, match="is traced"):
        jax.jit(lambda w: (jkern.save(path, LinearSVM(w=w, b=jnp.zeros(()))), w)[1])(
            jnp.zeros(2))
    assert not path.exists() and not list(tmp_path.iterdir())


def test_a_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    jkern.save(path, jkern.SST(0.4))
    before = path.read_bytes()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", fail)
    with pytest.raises(OSError, match="disk full"):
        jkern.save(path, jkern.SST(0.5))
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["m.npz"]


# --------------------------------------------------------------------------- honest errors

CORRUPT = "not a jkern model file \\(truncated or corrupt\\)"


def _saved(tmp_path):
    path = tmp_path / "model.npz"
    proj = jkern.fit_nystrom(jkern.SST(0.4), TREES, landmarks=3, key=jax.random.PRNGKey(0))
    jkern.save(path, proj)
    return path


def _rewrite(path, header=None, drop=()):
    """`path` again with another header and without the members `drop`."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist() if n not in drop}
    if header is not None:
        members["header.json"] = header if isinstance(header, bytes) else json.dumps(
            header).encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)


def _header(path):
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read("header.json"))


def _check_fails(path, message=CORRUPT):
    with pytest.raises(ModelFileError, match=f"^{path}: {message}"):
        jkern.load(path)


def test_foreign_and_truncated_files(tmp_path):
    path = _saved(tmp_path)
    data = path.read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 100):
        path.write_bytes(data[:cut])
        _check_fails(path)
    path.write_bytes(b"")
    _check_fails(path)
    path.write_text("label\ttree\n1\t(S (N dog))\n")
    _check_fails(path)
    np.save(tmp_path / "a.npy", np.arange(3))
    (tmp_path / "a.npy").rename(path)
    _check_fails(path)
    np.savez(path, w=np.zeros(3))
    _check_fails(path, f"{CORRUPT}: no header.json")
    with pytest.raises(FileNotFoundError):
        jkern.load(tmp_path / "missing.npz")


def test_a_damaged_member(tmp_path):
    path = _saved(tmp_path)
    data = bytearray(path.read_bytes())
    at = data.index(b"\x93NUMPY")  # the first array's bytes: the CRC no longer matches
    data[at + 200: at + 204] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))
    _check_fails(path)


@pytest.mark.parametrize("tamper, message", [
    (lambda h: b"{not json", CORRUPT),
    (lambda h: {**h, "format": "other"}, f"{CORRUPT}: header.json does not name"),
    (lambda h: {**h, "object": {"class": "os.system", "fields": {}}},
     f"{CORRUPT}: the object: 'os.system' is not a jkern class"),
    (lambda h: {**h, "object": {"class": "builtins.eval", "fields": {}}},
     f"{CORRUPT}: the object: 'builtins.eval' is not a jkern class"),
    (lambda h: {**h, "object": {**h["object"], "class": "jkern._io._Reader"}},
     f"{CORRUPT}: the object: 'jkern._io._Reader' is not a jkern class"),
    (lambda h: {**h, "object": {**h["object"], "class": "jkern.kernels.SST"}},
     f"{CORRUPT}: jkern.kernels.SST: fields"),
    (lambda h: _set(h, ["object", "fields", "projection", "shape"], [2, 2]),
     f"{CORRUPT}: projection: array 'projection' is float64\\[3, 3\\], the header says"),
    (lambda h: _set(h, ["object", "fields", "projection", "array"], "gone"),
     f"{CORRUPT}: projection: array 'gone' is missing"),
    (lambda h: _set(h, ["object", "fields", "landmarks"], {"tuple": [{"tree": "(S (N"}]}),
     CORRUPT),
    (lambda h: _set(h, ["object", "fields", "landmarks"], [1, 2]), f"{CORRUPT}: landmarks"),
    (lambda h: _set(h, ["object", "fields", "kernel", "fields", "lam"], {"what": 1}),
     f"{CORRUPT}: kernel.lam: unreadable entry"),
    (lambda h: {k: v for k, v in h.items() if k != "object"}, CORRUPT),
])
def test_tampered_headers(tamper, message, tmp_path):
    path = _saved(tmp_path)
    _rewrite(path, tamper(_header(path)))
    _check_fails(path, message)


def _set(header, keys, value):
    node = header
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    return header


def test_a_missing_array_member(tmp_path):
    path = _saved(tmp_path)
    _rewrite(path, drop=("projection.npy",))
    _check_fails(path, f"{CORRUPT}: projection: array 'projection' is missing")


def test_a_tampered_model_fails_its_own_checks(tmp_path):
    path = tmp_path / "m.npz"
    model = jkern.svm.ksvm_ovr(jkern.SST(0.4).gram(TREES), LABELS).model.expand(
        jkern.SST(0.4), TREES)
    jkern.save(path, model)
    header = _header(path)
    header["object"]["fields"]["support_inputs"]["tuple"].pop()
    _rewrite(path, header)
    _check_fails(path, f"{CORRUPT}: jkern.svm.KernelExpansion: coef has")


def test_other_format_versions(tmp_path):
    path = _saved(tmp_path)
    _rewrite(path, {**_header(path), "version": 3, "jkern": "9.1.0"})
    _check_fails(path, "written by jkern file format 3 \\(jkern 9.1.0\\); this jkern reads "
                       "format 2$")


def test_64_bit_arrays_need_64_bit_mode(tmp_path):
    path = _saved(tmp_path)
    with jax.enable_x64(False), pytest.raises(InputError, match="jax_enable_x64"):
        jkern.load(path)


def test_no_pickle_anywhere(tmp_path):
    path = tmp_path / "m.npz"
    jkern.save(path, LinearSVM(w=jnp.zeros((2, 3)), b=jnp.zeros(2), classes=("a", "b")))
    with np.load(path, allow_pickle=False) as data:  # plain .npy members and a JSON text
        assert sorted(data.files) == ["b", "header.json", "w"]
    bad = tmp_path / "bad.npz"
    np.savez(bad, w=np.array([object()], dtype=object))
    _rewrite(bad, {**_header(path), "object": {"class": "jkern.svm.LinearSVM", "fields": {
        "w": {"array": "w", "dtype": "|O", "shape": [1], "jax": False}}}})
    _check_fails(bad)


# --------------------------------------------------------------------------- old formats


def _old_kernel(kernel, prefix):
    """The `jkern.nystrom/1` spec of a kernel (as kernels/_spec.py wrote it)."""
    fields, arrays = {}, {}
    for f in dataclasses.fields(kernel):
        value, path = getattr(kernel, f.name), f"{prefix}.{f.name}"
        if isinstance(value, jkern.kernels.AbstractKernel):
            fields[f.name], sub = _old_kernel(value, path)
            arrays.update(sub)
        elif isinstance(value, jax.Array):
            arrays[path] = np.asarray(value)
            fields[f.name] = {"array": path}
        else:
            fields[f.name] = {"value": value}
    return {"type": type(kernel).__name__, "fields": fields}, arrays


def _old_projector(proj, prefix=""):
    spec, arrays = _old_kernel(proj.kernel, f"{prefix}m0.kernel")
    arrays[f"{prefix}m0.projection"] = np.asarray(proj.projection)
    arrays[f"{prefix}m0.landmarks"] = np.array([t.to_penn() for t in proj.landmarks])
    arrays[f"{prefix}header"] = np.array(json.dumps(
        {"format": "jkern.nystrom/1", "ensemble": False, "kernels": [spec]}))
    return arrays


def _old_kda(model, prefix):
    leaves = jax.tree_util.tree_leaves(model)
    arrays = {f"{prefix}leaf{i}": np.asarray(a) for i, a in enumerate(leaves)}
    arrays[f"{prefix}header"] = np.array(json.dumps({
        "format": "jkern-kda-1", "classes": list(model.classes),
        "hidden": [int(layer.weight.shape[0]) for layer in model.hidden],
        "train_nystrom": model.train_nystrom, "n_leaves": len(leaves)}))
    return arrays


@pytest.fixture(scope="module")
def old():
    kernel = jkern.Normalized(jkern.PTK(0.4, 0.4))
    proj = jkern.fit_nystrom(kernel, TREES, landmarks=4, key=jax.random.PRNGKey(0))
    return proj, _kda(proj, ("q", "s"))


def test_old_projector_and_kda_files_load(old, tmp_path):
    proj, net = old
    np.savez(tmp_path / "p.npz", **_old_projector(proj))
    assert_same(proj, jkern.load(tmp_path / "p.npz"))
    np.savez(tmp_path / "k.npz", **_old_kda(net, "kda."), **_old_projector(proj, "nystrom."))
    assert_same(jkern.NystromModel(proj, net), jkern.load(tmp_path / "k.npz"))
    np.savez(tmp_path / "k.npz", **_old_kda(net, "kda."))
    assert_same(net, jkern.load(tmp_path / "k.npz"))


def test_old_cli_model_files_load(old, tmp_path):
    proj, net = old
    classes = np.array(["q", "s"])
    header = {"header": np.array(json.dumps({"format": "jkern.model/1", "algo": "kda"})),
              "classes": classes}
    np.savez(tmp_path / "kda.npz", **header, **_old_projector(proj, "projector/"),
             **_old_kda(net, "kda/"))
    assert_same(jkern.NystromModel(proj, net), jkern.load(tmp_path / "kda.npz"))

    w, b = np.arange(2 * proj.rank, dtype=float).reshape(2, -1), np.array([0.5, -0.5])
    header["header"] = np.array(json.dumps({"format": "jkern.model/1", "algo": "dcd"}))
    np.savez(tmp_path / "dcd.npz", **header, **_old_projector(proj, "projector/"), w=w, b=b)
    model = jkern.load(tmp_path / "dcd.npz")
    assert_same(jkern.NystromModel(proj, LinearSVM(w=jnp.asarray(w), b=jnp.asarray(b),
                                                   classes=("q", "s"))), model)

    kernel = jkern.Normalized(jkern.SST(0.4))
    spec, arrays = _old_kernel(kernel, "kernel")
    coef, intercept = np.array([[0.5, -0.25], [-0.5, 0.25]]), np.zeros(2)
    header["header"] = np.array(json.dumps({"format": "jkern.model/1", "algo": "ksvm"}))
    np.savez(tmp_path / "ksvm.npz", **header, **arrays, kernel_spec=np.array(json.dumps(spec)),
             support_trees=np.array([TREES[0].to_penn(), TREES[3].to_penn()]), coef=coef,
             intercept=intercept)
    model = jkern.load(tmp_path / "ksvm.npz")
    expected = KernelExpansion(kernel, jnp.asarray(coef), jnp.asarray(intercept), (0, 1),
                               (TREES[0], TREES[3]), ("q", "s"))
    assert_same(expected, model)
    scores = np.asarray(kernel.gram(TREES, [TREES[0], TREES[3]])) @ coef.T
    np.testing.assert_allclose(model.decision_function(TREES), scores, rtol=1e-12, atol=1e-15)


def test_old_files_that_no_longer_fit_say_so(old, tmp_path):
    proj, _ = old
    arrays = _old_projector(proj)
    spec = json.loads(str(arrays["header"]))
    spec["kernels"][0]["fields"]["kernel"]["fields"]["colour"] = {"value": 1}
    arrays["header"] = np.array(json.dumps(spec))
    np.savez(tmp_path / "p.npz", **arrays)
    _check_fails(tmp_path / "p.npz", "an old jkern Nyström projector file \\(format "
                 "jkern.nystrom/1\\) that this jkern cannot read \\(.*\\); refit the projector")
    arrays["header"] = np.array(json.dumps({"format": "jkern.nystrom/9"}))
    np.savez(tmp_path / "p.npz", **arrays)
    _check_fails(tmp_path / "p.npz", f"{CORRUPT}: unknown format 'jkern.nystrom/9'")


def test_files_are_reproducible(tmp_path):
    model = LinearSVM(w=jnp.arange(6.0).reshape(2, 3), b=jnp.zeros(2), classes=(1, 2))
    jkern.save(tmp_path / "a.npz", model)
    jkern.save(tmp_path / "b.npz", eqx.tree_at(lambda m: m.w, model, jnp.arange(6.0).reshape(
        2, 3)))
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()


# --------------------------------------------------------------------------- issue 32: bounds

def _ksvm_file(tmp_path):
    path = tmp_path / "model.npz"
    jkern.save(path, jkern.svm.ksvm(np.eye(4) + 0.1, [1, -1, 1, -1]).model)
    return path


def _replace_member(path, name, data, compresslevel=None):
    """`path` again with member `name` holding `data` (bytes, or a callable writing them to
    the open member: a large one streamed)."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist() if n != name}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel) as z:
        with z.open(name, "w", force_zip64=True) as m:
            data(m) if callable(data) else m.write(data)
        for n, content in members.items():
            z.writestr(n, content)


def _npy(a):
    import io

    buffer = io.BytesIO()
    np.save(buffer, a)
    return buffer.getvalue()


@pytest.mark.parametrize("member, value", [("coef", np.nan), ("coef", -np.inf),
                                           ("intercept", np.nan)])
def test_a_model_file_with_non_finite_arrays_is_refused(tmp_path, member, value):
    path = _ksvm_file(tmp_path)
    a = np.asarray(getattr(jkern.load(path), member)).copy()
    a.reshape(-1)[-1] = value
    _replace_member(path, f"{member}.npy", _npy(a))
    _check_fails(path, f"{member} \\(member {member}.npy\\) holds NaN or inf values")


def test_save_refuses_non_finite_parameters_but_keeps_nan_in_solution_stats(tmp_path):
    model = jkern.svm.ksvm(np.eye(4) + 0.1, [1, -1, 1, -1]).model
    bad = eqx.tree_at(lambda m: m.coef, model, replace_fn=lambda c: c.at[0].set(jnp.nan))
    with pytest.raises(InputError, match="cannot save coef: it holds NaN or inf values"):
        jkern.save(tmp_path / "m.npz", bad)
    assert not (tmp_path / "m.npz").exists()
    # histories padded with NaN (kda's dev accuracy, ds's checks) are no parameters
    solution = jkern.Solution(model, jnp.zeros((), jnp.int32),
                              {"dev_accuracy": jnp.array([0.5, jnp.nan]), "gap": np.inf})
    jkern.save(tmp_path / "s.npz", solution)
    back = jkern.load(tmp_path / "s.npz")
    assert np.isnan(back.stats["dev_accuracy"][1]) and back.stats["gap"] == np.inf


def _peak_of_load(path):
    """(what `jkern.load(path)` raised, the peak memory it traced, in MiB)."""
    import tracemalloc

    tracemalloc.start()
    try:
        jkern.load(path)
    except ModelFileError as err:
        return err, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    raise AssertionError(f"{path} loaded")


def test_a_header_of_deflated_blanks_is_refused_without_reading_it(tmp_path):
    """Issue 32: 300 MB of deflated blanks in a 300 KiB file used to peak at 764 MiB. Past
    MAX_HEADER_BYTES (256 MiB), or past 100 times the file's size, nothing is read."""
    path = _ksvm_file(tmp_path)
    for megabytes, message in ((300, "header.json is 300,000,000 bytes; jkern.load reads at "
                                     "most 268,435,456 (MAX_HEADER_BYTES)"),
                               (100, "its members expand to 100,000,")):
        _replace_member(path, "header.json", lambda m, n=megabytes: [
            m.write(b" " * 10**6) for _ in range(n)], compresslevel=1)
        assert path.stat().st_size < 2 * 2**20
        err, peak = _peak_of_load(path)
        assert peak < 4, peak
        assert message in str(err), err
    assert "reads at most 100 times the file's" in str(err)


def _central_entry(data, name):
    """The offset of `name`'s central directory entry in the zip bytes `data`."""
    at = data.index(b"PK\x05\x06")  # end of central directory: where the directory starts
    at = int.from_bytes(data[at + 16: at + 20], "little")
    while data[at: at + 4] == b"PK\x01\x02":
        n, extra, comment = (int.from_bytes(data[at + k: at + k + 2], "little")
                             for k in (28, 30, 32))
        if data[at + 46: at + 46 + n] == name.encode():
            return at
        at += 46 + n + extra + comment
    raise KeyError(name)


def test_a_header_whose_entry_understates_its_size_is_read_no_further(tmp_path):
    """zipfile stops at the entry's size, then the CRC fails: a corrupt file, no blow-up."""
    path = _ksvm_file(tmp_path)
    _replace_member(path, "header.json", b" " * 50 * 10**6, compresslevel=1)
    data = bytearray(path.read_bytes())
    at = _central_entry(data, "header.json")
    assert int.from_bytes(data[at + 24: at + 28], "little") == 50 * 10**6
    data[at + 24: at + 28] = (1000).to_bytes(4, "little")  # the uncompressed size
    path.write_bytes(bytes(data))
    err, peak = _peak_of_load(path)
    assert peak < 4 and "Bad CRC-32" in str(err), (peak, err)


@pytest.mark.parametrize("text", [b"[" * 100_000 + b"]" * 100_000,
                                  b'{"format": "jkern.model", "version": 2, "object": '
                                  + b'{"tuple": [' * 5_000 + b"]}" * 5_000 + b"}"])
def test_a_deeply_nested_header_is_a_model_file_error(tmp_path, text):
    path = _ksvm_file(tmp_path)
    _replace_member(path, "header.json", text)
    _check_fails(path, f"{CORRUPT}: header.json is nested too deeply")


def test_an_array_header_claiming_a_huge_shape_allocates_nothing(tmp_path):
    import io

    path = _ksvm_file(tmp_path)
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**12,)})
    _replace_member(path, "coef.npy", buffer.getvalue() + bytes(32))
    err, peak = _peak_of_load(path)
    assert peak < 4, peak
    assert "its .npy header says float64[1000000000000]" in str(err)


def test_an_array_named_twice_is_refused(tmp_path):
    path = _ksvm_file(tmp_path)
    header = _header(path)
    header["object"]["fields"]["intercept"] = {**header["object"]["fields"]["coef"]}
    _rewrite(path, header)
    _check_fails(path, f"{CORRUPT}: intercept: array 'coef' is named twice")
