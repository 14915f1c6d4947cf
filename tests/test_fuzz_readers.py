"""Reader fuzzing (issue 32): every reader that takes a user's file is given arbitrary bytes,
fully random and near-valid (valid files with random mutations, deep nesting, huge numbers,
NUL bytes, invalid UTF-8, `\\r`, very long tokens). Each either gives a result or raises a
`jkern.errors` exception that names the file (`TreeParseError`s at a line and column inside
it), never another exception type (IndexError, a bare ValueError, RecursionError,
UnicodeDecodeError, OverflowError, MemoryError), and allocates at most ~1 KiB per input
byte (64 MiB for the inputs under 64 KiB here; tracemalloc). A few examples each by default
(`helpers.PROFILES`); `-m slow` runs the long profile (JKERN_FUZZ_EXAMPLES, default 200).
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import resource
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import PROFILES
from hypothesis import example, given
from hypothesis import strategies as st

import jkern
from jkern.errors import JkernError
from jkern.trees import (
    TreeParseError,
    grct,
    lct,
    loct,
    parse_penn,
    read_conllu,
    read_examples,
    read_examples_any,
    read_labels,
    read_penn,
    read_trees,
    rewrite_trees,
    tree_file_format,
)

MiB = 1 << 20


def _bound(size: int) -> int:
    """The most a reader may allocate for an input of `size` bytes."""
    return max(64 * MiB, 1024 * size)


def _max_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _read(fn, path: Path | None, size: int):
    """fn() under tracemalloc: its result, or None when it raised a jkern error naming `path`
    (a `TreeParseError` at a line and column of it). Any other exception propagates (the
    example fails), and so does a peak allocation past `_bound(size)`: Python's and numpy's
    (tracemalloc), or any (the process's peak resident memory, JAX's buffers included)."""
    rss = _max_rss()
    tracemalloc.start()
    try:
        try:
            return fn()
        except JkernError as err:
            if path is not None:
                _located(err, path)
            return None
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak <= _bound(size), f"peak allocation {peak / MiB:.1f} MiB for {size} bytes"
        grew = _max_rss() - rss
        assert grew <= _bound(size), f"peak memory grew {grew / MiB:.1f} MiB for {size} bytes"


@pytest.fixture(autouse=True, scope="module")
def _warm_jax():
    """JAX's start (its runtime, a first array) grows the process once: not in any reader."""
    jkern.SparseRows.from_rows([{1: 1.0}]).todense().block_until_ready()


def _located(err: JkernError, path: Path) -> None:
    assert str(path) in str(err), f"the error does not name the file: {err}"
    if isinstance(err, TreeParseError) and err.source == str(path):
        lines = path.read_bytes().split(b"\n")
        assert 1 <= err.line <= len(lines), err
        assert 1 <= err.column <= len(lines[err.line - 1]) + 1, err


# --------------------------------------------------------------------------- bytes

# Bytes and tokens that readers trip on: NUL, invalid UTF-8 (a lone continuation byte, a
# truncated sequence, a surrogate, an overlong form), a BOM, line breaks that
# str.splitlines sees but `\n` readers do not, markers, digits that are not ASCII, numbers
# past every integer width and float range, and long runs.
SPECIAL = [b"\x00", b"\xff", b"\x80", b"\xc3", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf",
           b"\xef\xbb\xbf", b"\r", b"\r\n", b"\n", b"\n\n", b"\t", b" ", b"\x0b", b"\x0c",
           b"\x1c", b"\x85", "\u2028".encode(), b"(", b")", b"()", b"( (", b"|BT|", b"|ET|",
           b"|BV|", b"|EV|", b"#", b":", b"::", b"_", b"-", b"0", b"-1", b"+1", b"1e999",
           b"-1e999", b"1e-999", b"nan", b"inf", b"-0", "²".encode(), "٣".encode(),
           b"2147483648", b"4294967296", b"9223372036854775808", b"1" + b"0" * 400,
           b"9" * 5000, b"x" * 70_000, b"(" * 3000, b")" * 3000, b"\"", b"'", b"\\",
           b"NA", b"train", b"test", b"tree", b"label"]


@st.composite
def mutated(draw, seed: bytes, max_ops: int = 4) -> bytes:
    """`seed` with up to `max_ops` edits: bit flips, inserted special or random bytes,
    deletions, truncation, and a chunk repeated many times."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(["flip", "insert", "insert", "delete", "truncate", "repeat"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            data[min(at, len(data) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.one_of(st.sampled_from(SPECIAL), st.binary(max_size=8)))
        elif op == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif op == "truncate":
            del data[at:]
        elif op == "repeat":
            chunk = data[at:at + draw(st.integers(1, 32))]
            data[at:at] = chunk * draw(st.sampled_from([2, 10, 1000]))
    return bytes(data[:200_000])


def raw_or_mutated(seeds: list[bytes]):
    """Fully random bytes, or one of `seeds` mutated."""
    return st.one_of(st.binary(max_size=256),
                     st.sampled_from(seeds).flatmap(lambda s: mutated(s)))


def _text(parts: list[str], crlf: bool) -> bytes:
    return ("\r\n" if crlf else "\n").join(parts).encode("utf-8") + b"\n"


# --------------------------------------------------------------------------- grammars

LABEL_TOKENS = ["S", "NP", "VP", "-NONE-", "PRP$", "*T*-1", "#", "é", "名詞", "x::n",
                "|BT|", "a" * 300, "\x00", "\u2028", "²", ":", "0", "1e999"]


@st.composite
def penn_tree(draw, depth: int = 3) -> str:
    """One tree in brackets: random labels, sometimes unbalanced, deep or wide."""
    shape = draw(st.sampled_from(["node", "node", "node", "deep", "wide", "wrapper"]))
    label = draw(st.sampled_from(LABEL_TOKENS))
    if shape == "deep" and depth == 3:
        n = draw(st.sampled_from([2, 100, 2000]))
        return "(A " * n + label + ")" * draw(st.sampled_from([n, n - 1, n + 1]))
    if shape == "wide" and depth == 3:
        return f"(S {'(A a)' * draw(st.sampled_from([3, 3000]))})"
    if depth == 0 or draw(st.booleans()):
        return label if draw(st.booleans()) else f"({label} w)"
    kids = " ".join(draw(st.lists(penn_tree(depth - 1), min_size=1, max_size=3)))
    tree = f"({label} {kids})"
    return f"( {tree})" if shape == "wrapper" else tree


@st.composite
def penn_file(draw) -> bytes:
    trees = draw(st.lists(penn_tree(), min_size=1, max_size=3))
    parts = [t.replace(" (", "\n  (", draw(st.integers(0, 2))) for t in trees]
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), "")
    return draw(mutated(_text(parts, draw(st.booleans())), max_ops=2))


NUMBERS = ["1", "+1", "-1", "0", "0.5", "-0", "1.5e3", "1e999", "1e-999", "nan", "inf", "",
           "²", "٣", "1_0", "01", "2147483648", "9223372036854775808", "9" * 5000, "x"]


@st.composite
def svmlight_line(draw) -> str:
    label = draw(st.sampled_from(NUMBERS))
    parts = [label]
    trees = draw(st.lists(penn_tree(1), max_size=2))
    if trees:
        parts += [f"|BT| {t}" for t in trees] + ["|ET|"]
    for k in range(draw(st.integers(0, 2))):
        if k:
            parts.append("|BV|")
        parts += [f"{draw(st.sampled_from(NUMBERS))}:{draw(st.sampled_from(NUMBERS))}"
                  for _ in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        parts.append("|EV|")
    if draw(st.booleans()):
        parts.append("# comment |BT|")
    return draw(st.sampled_from([" ", "\t", "  "])).join(parts)


@st.composite
def svmlight_file(draw) -> bytes:
    lines = draw(st.lists(svmlight_line(), min_size=1, max_size=4))
    return draw(mutated(_text(lines, draw(st.booleans())), max_ops=2))


@st.composite
def tsv_file(draw) -> bytes:
    header = draw(st.permutations(["label", "tree", "coarse"]))
    header = header[:draw(st.integers(1, 3))]
    if "tree" not in header:
        header.append("tree")
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = [draw(penn_tree(2)) if name == "tree" else draw(st.sampled_from(
            ["HUM", "+1", "", " ", "x" * 1000, "\x00"])) for name in header]
        rows.append("\t".join(row[:draw(st.integers(0, len(row)))] if draw(st.booleans())
                              else row))
    return draw(mutated(_text(["\t".join(header), *rows], draw(st.booleans())), max_ops=2))


IDS = ["0", "1-2", "1.1", "²", "٣", "01", "-1", "_", "", "9" * 5000, "18446744073709551616"]


@st.composite
def conllu_file(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            lines.append("# text = a sentence")
        n = draw(st.integers(1, 5))
        root = draw(st.integers(1, n))
        for k in range(1, n + 1):
            head = 0 if k == root else draw(st.integers(0, n + 1))
            fields = [str(k), "Dogs", "dog", "NOUN", "NNS", "_", str(head),
                      "root" if head == 0 else "nsubj", "_", "_"]
            if draw(st.integers(0, 5)) == 0:
                fields[draw(st.sampled_from([0, 6]))] = draw(st.sampled_from(IDS))
            if draw(st.integers(0, 5)) == 0:
                fields[draw(st.integers(1, 9))] = draw(st.sampled_from(
                    ["_", "", " ", "(", ")", "a b", "\x00", "x" * 1000]))
            lines.append("\t".join(fields))
        lines.append("")
    return draw(mutated(_text(lines, draw(st.booleans())), max_ops=2))


@st.composite
def sparse_file(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 3)) == 0:
            lines.append(draw(svmlight_line()))
            continue
        label = draw(st.sampled_from(["+1", "-1", "1", "-1.0", "0", "2", "nan", "+1e0"]))
        feats = [f"{draw(st.sampled_from(NUMBERS))}:{draw(st.sampled_from(NUMBERS))}"
                 for _ in range(draw(st.integers(0, 4)))]
        comment = draw(st.sampled_from(["", " # note", "#", " # 1:2 |BT|"]))
        lines.append(" ".join([label, *feats]) + comment)
    return draw(mutated(_text(lines, draw(st.booleans())), max_ops=2))


# --------------------------------------------------------------------------- tree readers


def _write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def _all_tree_readers(path: Path, encoding: str) -> None:
    """Every tree-file reader on `path`, each checked on its own."""
    size = path.stat().st_size
    trees = _read(lambda: read_trees(path, encoding=encoding), path, size)
    penn = _read(lambda: read_penn(path, encoding=encoding), path, size)
    if penn is not None:  # Penn trees print and read back as themselves
        assert [parse_penn(t.to_penn()) for t in penn] == penn
    for fn in (read_examples, read_examples_any, tree_file_format):
        _read(lambda fn=fn: fn(path, encoding=encoding), path, size)
    _read(lambda: read_labels(path, encoding=encoding), path, size)
    again = _read(lambda: rewrite_trees(path, lambda t: t, encoding=encoding), path, size)
    if again is not None and trees is not None:  # the rewritten file reads the same trees
        copy = path.with_name(f"again-{path.name}")
        copy.write_text(again, encoding="utf-8")
        assert read_trees(copy) == trees
    sentences = _read(lambda: read_conllu(path, encoding=encoding), path, size)
    for sentence in sentences or ():  # read_conllu checked them: every shape builds
        for shape in (grct, lct, loct):
            assert len(shape(sentence)) >= len(sentence)
    from jkern.pa import read_sparse

    data = _read(lambda: read_sparse(path, encoding=encoding), path, size)
    if data is not None:
        assert set(np.asarray(data.labels).tolist()) <= {-1, 1}


SEEDS = [b"(S (NP (DT the) (NN dog)) (VP (VBZ barks)))\n( (A b))\n",
         b"+1 |BT| (A b) |BT| (C d) |ET| 1:0.5 2:1 |BV| 7:2 |EV|\n-1 |BT| (A c) |ET|\n",
         b"label\ttree\nHUM\t(S (WP Who))\nLOC\t(S (WRB Where))\n",
         b"1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n",
         b"+1 1:1 3:0.5 # note\n-1 2:1\n"]


@pytest.mark.parametrize("profile", PROFILES)
def test_tree_readers_on_random_bytes(profile, tmp_path):
    @profile
    @given(raw_or_mutated(SEEDS), st.sampled_from(["utf-8", "latin-1"]))
    @example(b"(A \xff)\n", "utf-8")  # invalid UTF-8: located, no fallback
    @example(b"(A\x00 b)\r\n\r\n(B c)\r", "utf-8")
    @example(b"(" * 100_000, "latin-1")  # deep: the parser is iterative
    @example(b"+1 " + b"9" * 5000 + b":1\n", "utf-8")  # an index past int's digit limit
    def check(data, encoding):
        _all_tree_readers(_write(tmp_path, "in.txt", data), encoding)

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_penn_reader_on_near_valid_treebanks(profile, tmp_path):
    @profile
    @given(penn_file())
    def check(data):
        _all_tree_readers(_write(tmp_path, "tb.mrg", data), "utf-8")

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_svmlight_reader_on_near_valid_lines(profile, tmp_path):
    @profile
    @given(svmlight_file())
    @example(b"+1 |BT| (A b) |ET| 1:1 |EV|\n")  # a valid one, in every profile
    @example(b"1 1" + b"0" * 5000 + b":1\n")
    def check(data):
        path = _write(tmp_path, "train.dat", data)
        examples = _read(lambda: read_examples(path), path, len(data))
        for e in examples or ():
            assert all(i > 0 for v in e.vectors for i, _ in v)
        _all_tree_readers(path, "utf-8")

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_tsv_reader_on_near_valid_tables(profile, tmp_path):
    @profile
    @given(tsv_file())
    @example(b"label\ttree\nHUM\t(S (WP Who))\n")
    @example(b"label\ttree\n(S x)\n")  # a row without its label column
    def check(data):
        path = _write(tmp_path, "qc.tsv", data)
        trees = _read(lambda: read_trees(path), path, len(data))
        labels = _read(lambda: read_labels(path), path, len(data))
        if trees is not None and labels is not None:
            assert len(labels) == len(trees)
        _all_tree_readers(path, "utf-8")

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_conllu_reader_on_near_valid_sentences(profile, tmp_path):
    @profile
    @given(conllu_file())
    @example(SEEDS[3])
    @example(SEEDS[3].replace(b"\t2\tnsubj", b"\t" + b"9" * 5000 + b"\tnsubj"))
    @example(SEEDS[3].replace(b"1\tDogs", "²\tDogs".encode()))
    def check(data):
        _all_tree_readers(_write(tmp_path, "s.conllu", data), "utf-8")

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_sparse_reader_on_near_valid_lines(profile, tmp_path):
    from jkern.pa import read_sparse

    @profile
    @given(sparse_file())
    @example(b"+1 1:1 3:0.5 # note\n-1 2:1\n")
    @example(b"+1 2147483648:1\n")  # ids past int32
    @example(b"+1 9223372036854775808:1\n")  # past int64
    def check(data):
        path = _write(tmp_path, "d.svm", data)
        got = _read(lambda: read_sparse(path), path, len(data))
        if got is not None:
            idx = np.asarray(got.features.indices)
            assert idx.min(initial=0) >= 0 and idx.max(initial=0) < got.features.n_features
        _all_tree_readers(path, "utf-8")

    check()


# --------------------------------------------------------------------------- model files

TREES = [parse_penn(s) for s in ("(S (A a)(B b))", "(S (A b))", "(S (B a)(C c))", "(S (C a))")]


def _models() -> dict[str, Any]:
    """One object of each kind `jkern.save` writes, built directly (no training: nothing
    to compile) and tiny (cheap to mutate)."""
    from jkern import ds, kda, pa, svm

    rng = np.random.default_rng(0)
    kernel = jkern.Normalized(jkern.PTK(0.4, 0.4)) + 0.5 * jkern.SPTK(
        ["a", "b"], np.eye(2), 0.4, 0.5)
    proj = jkern.Nystrom(jkern.SST(0.4), tuple(TREES[:3]), jnp.asarray(rng.normal(size=(3, 2))))
    ksvm = svm.KernelSVM(jnp.asarray(rng.normal(size=4)), jnp.asarray(0.5), classes=(-1, 1))
    return {
        "kernel": kernel,
        "nystrom-svm": jkern.NystromModel(jkern.NystromEnsemble((proj, proj)), svm.LinearSVM(
            w=jnp.asarray(rng.normal(size=(3, 4))), b=jnp.zeros(3), classes=("a", 2, None))),
        "nystrom-kda": jkern.NystromModel(proj, kda.KDA.init(
            proj.projection, ("q", "s"), key=jax.random.PRNGKey(0), hidden=(3,))),
        "ksvm": ksvm,
        "expansion": svm.KernelExpansion(kernel, jnp.asarray([[0.5, -0.25]]), jnp.zeros(1),
                                         (0, 3), (TREES[0], TREES[3]), None),
        "solution": jkern.Solution(ksvm, jnp.asarray(0, jnp.int32),
                                   {"iterations": jnp.asarray(3), "a.b": np.zeros(2),
                                    "runs": [1, 2.5, "x", float("inf")]}),
        "pa": pa.SupportVectorModel(jnp.asarray([[1, 3], [2, 0]], jnp.int32),
                                    jnp.asarray([[1.0, 1.0], [1.0, 0.0]]),
                                    jnp.asarray([0.5, -1.0]), 2, 4),
        "relations": ds.RelationModel(jnp.asarray(rng.normal(size=(3, 2))), ("NA", "r1")),
    }


def _legacy(model: Any) -> dict[str, Any]:
    """The arrays of a `jkern-kda-1` file with its `jkern.nystrom/1` projector (the format
    of jkern 0.1, read by jkern._legacy) for a model of a flat kernel and a KDA head."""
    proj, net = model.projector, model.head
    leaves = jax.tree_util.tree_leaves(net)
    fields, arrays = {}, {}
    for f in dataclasses.fields(proj.kernel):
        value = getattr(proj.kernel, f.name)
        if isinstance(value, jax.Array):
            arrays[f"nystrom.m0.kernel.{f.name}"] = np.asarray(value)
            fields[f.name] = {"array": f"nystrom.m0.kernel.{f.name}"}
        else:
            fields[f.name] = {"value": value}
    spec = {"type": type(proj.kernel).__name__, "fields": fields}
    return {
        "nystrom.header": np.array(json.dumps({"format": "jkern.nystrom/1", "ensemble": False,
                                               "kernels": [spec]})),
        **arrays,
        "nystrom.m0.landmarks": np.array([t.to_penn() for t in proj.landmarks]),
        "nystrom.m0.projection": np.asarray(proj.projection),
        "kda.header": np.array(json.dumps({
            "format": "jkern-kda-1", "classes": list(net.classes), "hidden": [3],
            "train_nystrom": net.train_nystrom, "n_leaves": len(leaves)})),
        **{f"kda.leaf{i}": np.asarray(a) for i, a in enumerate(leaves)},
    }


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {name: z.read(name) for name in z.namelist()}


@pytest.fixture(scope="module")
def model_files(tmp_path_factory) -> dict[str, bytes]:
    """The bytes of a saved model file of each kind (and of an old-format file); each
    loads back."""
    folder = tmp_path_factory.mktemp("models")
    out = {}
    models = _models()
    for name, obj in models.items():
        jkern.save(folder / f"{name}.npz", obj)
        out[name] = (folder / f"{name}.npz").read_bytes()
    np.savez(folder / "legacy.npz", **_legacy(models["nystrom-kda"]))
    out["legacy"] = (folder / "legacy.npz").read_bytes()
    for name in out:
        jkern.load(folder / f"{name}.npz")  # every kind loads (and jkern is warm)
    return out


# JSON values put in place of a header entry: wrong types, numbers past every range,
# NaN, deep nesting, entries that name other classes, arrays or dtypes.
JSON_VALUES = [
    "null", "true", "0", "-1", "2147483648", "9223372036854775808", "1" + "0" * 400,
    "9" * 5000, "1e999", "-1e999", "NaN", "Infinity", "1e-999", "-0.0", '""', '"x"',
    '"' + "x" * 10_000 + '"', "[]", "{}", "[" * 3000 + "]" * 3000,
    '{"a":' * 3000 + "1" + "}" * 3000, '{"class": "jkern.SST", "fields": {}}',
    '{"class": "os.system", "fields": {}}', '{"class": "jkern.SST", "fields": []}',
    '{"array": "w", "dtype": "<f8", "shape": [1000000000000], "jax": true}',
    '{"array": "w", "dtype": "<f8", "shape": [-1]}', '{"array": "../x", "dtype": "<f8"}',
    '{"array": [], "dtype": [], "shape": 3}', '{"float": "1e400"}',
    '{"float": ' + "9" * 400 + "}", '{"float": "nan"}', '{"float": []}',
    '{"scalar": 1000, "dtype": "|i1"}', '{"scalar": ' + "9" * 30 + ', "dtype": "<i8"}',
    '{"scalar": 1e400, "dtype": "<f4"}', '{"scalar": "x", "dtype": "<U1"}',
    '{"scalar": 1, "dtype": "<U1000000000"}', '{"scalar": 1, "dtype": "|O"}',
    '{"scalar": 1, "dtype": "<M8[ns]"}', '{"tree": "(("}', '{"tree": 1}',
    '{"tree": "' + "(A " * 3000 + "x" + ")" * 3000 + '"}', '{"dict": []}',
    '{"dict": {"a": {"tuple": [1]}}}', '{"tuple": {}}', '{"list": [1, {"list": 2}]}',
    '"|O"', '"<V0"', '"|V1000000000000"', '"<U1000000000"', '"S0"', '"<f16"', '"<M8[ns]"',
    '"(2,)<f8"', '"[(\'a\', \'<f8\')]"', '"jkern.model"', "2", "1"]
SENTINEL = "\x00fuzz\x00"


def _json_slots(node, path=()):
    """Every position in a JSON document, as a key path."""
    yield path
    items = node.items() if isinstance(node, dict) else (
        enumerate(node) if isinstance(node, list) else ())
    for k, v in items:
        yield from _json_slots(v, (*path, k))


@st.composite
def mutated_json(draw, text: str) -> str:
    doc = json.loads(text)
    slots = list(_json_slots(doc))
    path = draw(st.sampled_from(slots))
    value = draw(st.sampled_from(JSON_VALUES))
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = SENTINEL
    return json.dumps(doc).replace(json.dumps(SENTINEL), value)


NPY_DESCR = ["'<f8'", "'<f4'", "'|b1'", "'<i4'", "'|O'", "'|V0'", "'<U1000000000'", "'S0'",
             "'<f16'", "[('a', '<f8')]", "'x'", "1"]
NPY_SHAPE = ["()", "(0,)", "(3,)", "(1000000000000,)", "(4611686018427387904, 4)", "(-1,)",
             "(3, 1000000000)", "(1.5,)", "'x'", "(" + "1, " * 64 + ")"]


@st.composite
def mutated_npy(draw, data: bytes) -> bytes:
    """A .npy member with another header (dtype, order, shape) before the same data."""
    try:
        stream = io.BytesIO(data)
        if np.lib.format.read_magic(stream) == (1, 0):
            np.lib.format.read_array_header_1_0(stream)
        else:
            np.lib.format.read_array_header_2_0(stream)
        body = data[stream.tell():]
    except Exception:  # an old-format string member, or already damaged
        body = data[-64:]
    header = (f"{{'descr': {draw(st.sampled_from(NPY_DESCR))}, 'fortran_order': "
              f"{draw(st.sampled_from(['False', 'True', '1']))}, 'shape': "
              f"{draw(st.sampled_from(NPY_SHAPE))}, }}").encode("latin-1")
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + body


def _is_json_member(name: str) -> bool:
    return name == "header.json" or name.endswith("header.npy")


@st.composite
def rebuilt_model(draw, files: dict[str, bytes]) -> bytes:
    """A model file of some kind rebuilt with edited members: its header JSON, an array's
    .npy header or bytes, members dropped, duplicated or added; stored or deflated."""
    members = _members(files[draw(st.sampled_from(sorted(files)))])
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(sorted(members)))
        op = draw(st.sampled_from(["json", "json", "npy", "bytes", "drop", "add"]))
        if op == "json" and _is_json_member(name):
            try:  # (unless an earlier edit damaged it)
                text = (members[name].decode() if name == "header.json"
                        else str(np.load(io.BytesIO(members[name]))))
                json.loads(text)
            except Exception:
                continue
            text = draw(mutated_json(text))
            if name == "header.json":
                members[name] = text.encode()
            else:
                buf = io.BytesIO()
                np.save(buf, np.array(text))
                members[name] = buf.getvalue()
        elif op == "npy" and name.endswith(".npy"):
            members[name] = draw(mutated_npy(members[name]))
        elif op == "bytes":
            members[name] = draw(mutated(members[name], max_ops=2))
        elif op == "drop":
            del members[name]
        elif op == "add":
            new = draw(st.sampled_from(["header.json", "header.npy", "kda.header.npy",
                                        "x.npy", "../evil.npy", "/abs.npy", "dir/"]))
            members[new] = draw(st.sampled_from([b"", b"{}", members.get(name, b"")]))
    buf = io.BytesIO()
    method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _load(tmp: Path, data: bytes):
    path = _write(tmp, "model.npz", data)
    return _read(lambda: jkern.load(path), path, len(data))


@pytest.mark.parametrize("profile", PROFILES)
def test_load_on_random_bytes(profile, tmp_path):
    @profile
    @given(st.one_of(st.binary(max_size=512),
                     st.binary(max_size=512).map(lambda b: b"PK\x03\x04" + b),
                     st.binary(max_size=64).map(lambda b: b"\x93NUMPY" + b)))
    @example(b"PK\x05\x06" + bytes(18))  # an empty zip
    def check(data):
        assert _load(tmp_path, data) is None

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_load_on_mutated_model_files(profile, tmp_path, model_files):
    """Bit flips, truncation, insertion and repeats in a saved file of each kind."""
    @profile
    @given(st.sampled_from(sorted(model_files)).flatmap(
        lambda kind: mutated(model_files[kind])))
    def check(data):
        _load(tmp_path, data)

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_load_on_rebuilt_model_files(profile, tmp_path, model_files):
    """Valid zips of edited members: tampered header JSON and .npy headers, random
    members."""
    @profile
    @given(rebuilt_model(model_files))
    def check(data):
        _load(tmp_path, data)

    check()


def _with_header(files: dict[str, bytes], kind: str, edit) -> bytes:
    members = _members(files[kind])
    members["header.json"] = edit(members["header.json"].decode()).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _first(node: Any, key: str) -> dict:
    """The first dict (preorder) of a JSON document that holds `key`."""
    return next(d for d in (_get(node, p) for p in _json_slots(node))
                if isinstance(d, dict) and key in d)


def _get(node: Any, path: tuple) -> Any:
    for k in path:
        node = node[k]
    return node


def _set_field(text: str, value: Any) -> str:
    """The header with the first field of its first object set to `value`."""
    doc = json.loads(text)
    fields = _first(doc, "fields")["fields"]
    fields[next(iter(fields))] = value
    return json.dumps(doc)


def _grow_shape(text: str) -> str:
    doc = json.loads(text)
    node = _first(doc, "array")
    node["shape"] = [10**12, *node["shape"]]
    return json.dumps(doc)


@pytest.mark.parametrize("edit", [
    pytest.param(lambda t: _set_field(t, {"float": 10**400}), id="float-past-range"),
    pytest.param(lambda t: _set_field(t, {"scalar": 10**30, "dtype": "<i8"}),
                 id="scalar-past-range"),
    pytest.param(lambda t: _set_field(t, {"scalar": 1, "dtype": "<U1000000000"}),
                 id="huge-scalar-dtype"),
    pytest.param(_grow_shape, id="huge-shape"),
    pytest.param(lambda t: t.replace('"object": ', '"object": ' + "[" * 100_000, 1),
                 id="deep-brackets"),
    pytest.param(lambda t: t + " " * 50_000_000, id="huge-deflated-header"),
])
def test_load_on_tampered_headers(edit, tmp_path, model_files):
    """Header edits the random search takes long to find, as explicit cases."""
    for kind in ("nystrom-svm", "kernel"):
        _load(tmp_path, _with_header(model_files, kind, edit))


@pytest.mark.parametrize("edit", [
    pytest.param({"hidden": [10**8]}, id="huge-hidden"),  # 6.5 GB and 70 s before the fix
    pytest.param({"hidden": [10**400]}, id="hidden-past-range"),
    pytest.param({"n_leaves": 10**9}, id="many-leaves"),
    pytest.param({"classes": [[1], {"a": 1}]}, id="unhashable-classes"),
    pytest.param({"train_nystrom": "yes", "hidden": 3}, id="wrong-types"),
])
def test_load_on_tampered_legacy_headers(edit, tmp_path, model_files):
    """An old-format KDA file whose header claims another configuration: refused, without
    building the configuration it claims."""
    members = _members(model_files["legacy"])
    header = json.loads(str(np.load(io.BytesIO(members["kda.header.npy"]))))
    buf = io.BytesIO()
    np.save(buf, np.array(json.dumps({**header, **edit})))
    members["kda.header.npy"] = buf.getvalue()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    assert _load(tmp_path, buf.getvalue()) is None


@pytest.mark.parametrize("profile", PROFILES)
def test_load_npy_members_with_huge_shapes(profile, tmp_path, model_files):
    """A .npy member whose header announces far more data than the file holds."""
    @profile
    @given(st.sampled_from(sorted(model_files)), st.data())
    def check(kind, data):
        members = _members(model_files[kind])
        arrays = sorted(n for n in members if n.endswith(".npy") and "header" not in n)
        name = data.draw(st.sampled_from(arrays))
        members[name] = data.draw(mutated_npy(members[name]))
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for n, b in members.items():
                z.writestr(n, b)
        _load(tmp_path, buf.getvalue())

    check()


# --------------------------------------------------------------------------- data sets

DS_FILES = {
    "relations.txt": b"NA\nhypernym\nmeronym\n",
    "pairs.tsv": b"pair\te1\te2\tsplit\trelations\tmentions\n"
                 b"0\tanimal\tdog\ttrain\thypernym\t1\n1\tcat\ttail\ttest\tNA\t1\n"
                 b"2\ta\tb\ttrain\thypernym,meronym\t2\n",
    "mentions.tsv": b"pair\te1\te2\tsplit\te1_token\te2_token\tsentence\n"
                    b"0\tanimal\tdog\ttrain\t4\t1\tthe dog is an animal\n"
                    b"1\tcat\ttail\ttest\t1\t3\tthe cat 's tail\n"
                    b"2\ta\tb\ttrain\t0\t2\ta and b\n2\ta\tb\ttrain\t2\t0\tb or a\n",
}


@pytest.mark.parametrize("profile", PROFILES)
def test_ds_wordnet_loader_on_mutated_files(profile, tmp_path):
    from jkern.data import load_ds_wordnet

    @profile
    @given(st.sampled_from(sorted(DS_FILES)).flatmap(
        lambda name: st.tuples(st.just(name), raw_or_mutated([DS_FILES[name]]))),
        st.booleans())
    @example(("mentions.tsv", DS_FILES["mentions.tsv"]), True)  # valid
    @example(("mentions.tsv", DS_FILES["mentions.tsv"].replace(b"\t4\t1\t", "\t²\t1\t".encode())),
             True)
    @example(("pairs.tsv", DS_FILES["pairs.tsv"].replace(b"\n0\t", b"\n" + b"9" * 30 + b"\t")),
             True)  # a pair id past int64
    @example(("relations.txt", b"NA\nhyper\xffnym\n"), True)
    @example(("mentions.tsv", b"\x1f\x8b\x08\x00" + bytes(20)), False)  # a broken gzip
    def check(edit, compress):
        name, data = edit
        files = {**DS_FILES, name: data}
        for n, b in files.items():
            if n == "mentions.tsv":
                b = gzip.compress(b, mtime=0) if compress or n != name else b
                n += ".gz"
            _write(tmp_path, n, b)
        size = sum(len(b) for b in files.values())
        got = _read(lambda: load_ds_wordnet(tmp_path), tmp_path, size)
        if got is not None:
            assert got.train.n_mentions + got.test.n_mentions > 0

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_trec_loader_on_mutated_files(profile, tmp_path):
    from jkern.data import load_trec

    seed = b"coarse\tfine\ttree\nHUM\tind\t(S (WP Who) (VBD won))\nLOC\tcity\t(S (WRB Where))\n"
    (tmp_path / "trec").mkdir()

    @profile
    @given(raw_or_mutated([seed]))
    @example(seed)
    def check(data):
        path = _write(tmp_path / "trec", "qc_train.tsv", data)
        got = _read(lambda: load_trec(tmp_path), path, len(data))
        if got is not None:
            assert len(got.trees) == len(got.coarse) == len(got.fine)

    check()


def _npy(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


VECTOR_SEEDS = {
    "v.txt": b"the 0.1 0.2 0.3\ncat 1 -2 3e-2\n",
    "w2v.txt": b"2 3\nthe 0.1 0.2 0.3\ncat 1 -2 3e-2\n",
    "v.txt.gz": gzip.compress(b"the 0.1 0.2\ncat 1 2\n", mtime=0),
    "m.npy": _npy(np.arange(6, dtype=np.float32).reshape(2, 3)),
    "vocab.txt": b"the\ncat\n",
}


@pytest.mark.parametrize("profile", PROFILES)
def test_word_vectors_loader_on_mutated_files(profile, tmp_path):
    from jkern.data import load_word_vectors

    @profile
    @given(st.sampled_from(sorted(VECTOR_SEEDS)).flatmap(
        lambda name: st.tuples(st.just(name), raw_or_mutated([VECTOR_SEEDS[name]]))),
        st.sampled_from(["auto", "glove", "word2vec"]))
    @example(("w2v.txt", b"2 " + b"9" * 5000 + b"\nthe 1\n"), "auto")
    @example(("m.npy", VECTOR_SEEDS["m.npy"][:-8]), "auto")  # truncated data
    @example(("vocab.txt", b"the\n\xffcat\n"), "auto")
    def check(edit, fmt):
        name, data = edit
        for n, b in {**VECTOR_SEEDS, name: data}.items():
            _write(tmp_path, n, b)
        if name in ("m.npy", "vocab.txt"):
            got = _read(lambda: load_word_vectors(tmp_path / "m.npy", format="npy",
                                                  vocab_path=tmp_path / "vocab.txt"),
                        tmp_path, len(data))
        else:
            got = _read(lambda: load_word_vectors(tmp_path / name, format=fmt), tmp_path,
                        len(data))
        if got is not None:
            assert len(got.words) == np.asarray(got.vectors).shape[0]

    check()


@pytest.mark.parametrize("profile", PROFILES)
def test_parse_cache_reader_on_mutated_files(profile, tmp_path):
    """`jkern.parse`'s on-disk cache of spaCy parses: a damaged one is an error that says to
    delete it."""
    from jkern.trees import _spacy

    toks = [["a", "dog"], ["it", "runs", "fast"]]
    buf = io.BytesIO()
    arrays: dict[str, Any] = {c: np.zeros(5, np.int32) for c in _spacy._COLUMNS}
    np.savez_compressed(buf, offsets=np.array([0, 2, 5]), head=np.array([1, 1, 1, 1, 1]),
                        tables=np.asarray(json.dumps({c: ["x"] for c in _spacy._COLUMNS})),
                        **arrays)
    seed = buf.getvalue()

    @profile
    @given(raw_or_mutated([seed]))
    @example(seed)
    def check(data):
        path = _write(tmp_path, "spacy-cache.npz", data)
        parsed = _read(lambda: _spacy._read_cache(path, toks), path, len(data))
        if parsed is not None:  # a cache that reads gives every sentence
            assert [len(parsed.sentence(i)) for i in range(len(toks))] == [2, 3]

    check()


# --------------------------------------------------------------------------- command line


def _cli(capsys, *argv) -> tuple[int, list[str]]:
    from jkern.cli import main

    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("profile", PROFILES)
def test_cli_reports_a_bad_input_file_in_one_line(profile, tmp_path, capsys, model_files):
    """`jkern convert` on a mutated tree file, `jkern predict` with a mutated model file and
    `jkern parse --labels` on mutated text ending in a line without its label: exit 0 (a
    conversion), or 2 with one `jkern: error:` line naming the file."""
    trees = _write(tmp_path, "ok.txt", b"(S (NP (DT the) (NN dog)) (VP (VBZ barks)))\n")

    @profile
    @given(st.one_of(penn_file(), tsv_file(), svmlight_file(), conllu_file()),
           st.sampled_from(["loct", "pos-leaves"]),
           st.sampled_from(sorted(model_files)).flatmap(
               lambda kind: mutated(model_files[kind][:len(model_files[kind]) // 2],
                                    max_ops=2)))
    def check(tree_file, shape, model):
        name = "in.conllu" if b"\tnsubj\t" in tree_file else "in.txt"
        src = _write(tmp_path, name, tree_file)
        code, err = _cli(capsys, "convert", "--shape", shape, src, "-o", tmp_path / "out.txt",
                         "-q")
        assert (code, err) == (0, []) or (code == 2 and len(err) == 1 and err[0].startswith(
            f"jkern: error: {src}")), (code, err)
        bad = _write(tmp_path, "model.npz", model)  # a half: never a whole model
        code, err = _cli(capsys, "predict", bad, trees, "-o", tmp_path / "p.tsv")
        assert code == 2 and len(err) == 1 and err[0].startswith(f"jkern: error: {bad}"), err
        text = _write(tmp_path, "text.txt", tree_file + b"\nno label\n")
        code, err = _cli(capsys, "parse", "--labels", text, "-o", tmp_path / "t.tsv", "-q")
        assert code == 2 and len(err) == 1 and err[0].startswith(f"jkern: error: {text}"), err

    check()
