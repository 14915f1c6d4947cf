"""One file format for every jkern model and projector: `save(path, obj)` / `load(path)`.

A model file is a zip (an `.npz`: `numpy.load` reads its arrays) holding `header.json` and one
`.npy` member per array. The header names the format and its version, the jkern version that
wrote it, and a recursive spec of the object: jkern Modules by their public class name (looked
up in a registry of jkern's own classes, never imported by name), arrays by member name with
their dtype and shape, trees as Penn text, and every other field as a JSON value whose Python
type survives the round trip (`classes=(1, -1)` stays ints, `("a", "b")` strings). Objects are
rebuilt field by field without running `__init__`, so every array is bit-identical; their
`__check_init__` checks still run. Loading never unpickles and never executes code named by the
file. See docs/save.md.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import os
import struct
import sys
import tempfile
import tokenize
import zipfile
import zlib
from collections.abc import Callable
from typing import Any, BinaryIO

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._solution import Solution
from ._sparse import FeatureIds
from ._validate import is_traced
from ._version import __version__
from .errors import InputError, JkernError, ModelFileError
from .trees._penn import parse_penn
from .trees._svmlight import Example
from .trees._tree import Tree

FORMAT = "jkern.model"
VERSION = 2  # 1: the `jkern train` files of jkern 0.1 (`jkern.model/1`, read by _load_legacy)
HEADER = "header.json"
_STAMP = (1980, 1, 1, 0, 0, 0)  # fixed member times: the same object gives the same bytes
_PUBLIC = ("jkern.kernels", "jkern.svm", "jkern.kda", "jkern.ds", "jkern.pa", "jkern.trees",
           "jkern.data", "jkern")
_EXTRA = {"equinox.nn.Linear": eqx.nn.Linear, "jkern.trees.Example": Example}
# What a file may make `load` read (docs/save.md, "Limits"), checked on the zip entries before
# any member is read: header.json at most MAX_HEADER_BYTES, and every member together at most
# MAX_EXPANSION times the file's size (at least MIN_BUDGET bytes), each `.npy` member exactly
# the size its own header's shape and dtype give.
MAX_HEADER_BYTES = 256 * 2**20
MAX_EXPANSION = 100
MIN_BUDGET = 4 * 2**20

try:
    from lzma import LZMAError as _LZMAError
except ImportError:  # pragma: no cover - a Python without lzma reads no LZMA member either
    _LZMAError = zlib.error


class _Corrupt(Exception):
    """Raised while decoding; becomes a `ModelFileError` naming the file."""


class _NeedsX64(InputError):
    """A 64-bit array while JAX's 64-bit mode is off: the one `InputError` of `load` that
    is no `ModelFileError` (the file is fine; the session is not set up for it)."""


def write_atomic(path: str | os.PathLike[str], write: Callable[[BinaryIO], Any]) -> None:
    """Call `write` on a temporary binary file in `path`'s folder, then move it to `path`.

    The data is flushed and fsynced before `os.replace`, so `path` holds either its old
    content or the complete new file; a failed write leaves no partial file behind.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_matrix(path: str | os.PathLike[str], matrix: Any) -> None:
    """Write a matrix as `.npy` or `.tsv` (by the suffix), atomically (`write_atomic`).

    TSV values round-trip exactly: 17 significant digits for float64, 9 for float32.
    """
    matrix = np.asarray(matrix)
    if str(path).lower().endswith(".npy"):
        write_atomic(path, lambda f: np.save(f, matrix, allow_pickle=False))
        return
    spec = ".9g" if matrix.dtype == np.float32 else ".17g"
    text = "".join("\t".join(format(float(x), spec) for x in row) + "\n" for row in matrix)
    write_atomic(path, lambda f: f.write(text.encode("ascii")))


# --------------------------------------------------------------------------- the registry


def _registry() -> tuple[dict[str, type], dict[type, str]]:
    """`(name -> class, class -> canonical name)`: the concrete `equinox.Module` classes that
    jkern's public packages export (under every public name), plus `_EXTRA`."""
    by_name: dict[str, type] = dict(_EXTRA)
    canonical: dict[type, str] = {cls: name for name, cls in _EXTRA.items()}
    # `jkern` loads each public name on first use: the whole public surface now
    importlib.import_module("jkern._api")
    for package in _PUBLIC:
        module = sys.modules.get(package)
        if module is None:
            continue
        # `jkern`'s names come from `dir`; the subpackages' own lazy names (kda's training
        # functions) are no classes to find, and are not loaded for nothing.
        names = dir(module) if package == "jkern" else list(vars(module))
        for attr in sorted(n for n in names if not n.startswith("_")):
            cls = getattr(module, attr)
            if (isinstance(cls, type) and issubclass(cls, eqx.Module)
                    and cls.__module__.startswith("jkern.")
                    and not cls.__name__.startswith("Abstract") and not inspect.isabstract(cls)):
                by_name[f"{package}.{attr}"] = cls
                canonical.setdefault(cls, f"{package}.{attr}")
    return by_name, canonical


# --------------------------------------------------------------------------- save


def save(path: str | os.PathLike[str], obj: Any) -> None:
    """Write a jkern model, projector or kernel to `path` (atomically; any file name).

    `obj` is an instance of a class that jkern exports (kernels, `Nystrom`,
    `NystromEnsemble`, `NystromModel`, `KDA`, `LinearSVM`, `KernelSVM`, `KernelExpansion`,
    ...) whose fields are arrays, jkern Modules, trees, or JSON values (ints, floats, strings,
    bools, None, and tuples, lists and string-keyed dicts of them). `load(path)` gives it
    back with bit-identical arrays.

    >>> import equinox as eqx, jkern, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "k.npz")
    >>> kernel = jkern.Normalized(jkern.PTK(0.4, 0.3))
    >>> jkern.save(path, kernel)
    >>> bool(eqx.tree_equal(jkern.load(path), kernel))
    True
    """
    _, canonical = _registry()
    if type(obj) not in canonical:
        raise InputError(f"cannot save a {type(obj).__module__}.{type(obj).__qualname__}: "
                         "jkern.save takes jkern models, projectors and kernels")
    arrays: dict[str, np.ndarray] = {}
    spec = _encode(obj, "", arrays, canonical)
    header = {"format": FORMAT, "version": VERSION, "jkern": __version__, "object": spec}
    text = json.dumps(header, ensure_ascii=False, allow_nan=False, indent=1).encode("utf-8")

    def write(f: BinaryIO) -> None:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            z.writestr(zipfile.ZipInfo(HEADER, _STAMP), text, zipfile.ZIP_DEFLATED)
            for name, a in arrays.items():
                with z.open(zipfile.ZipInfo(f"{name}.npy", _STAMP), "w", force_zip64=True) as m:
                    np.lib.format.write_array(m, a, allow_pickle=False)

    write_atomic(path, write)


def _join(where: str, name: Any) -> str:
    return f"{where}.{name}" if where else str(name)


def _encode(value: Any, where: str, arrays: dict[str, np.ndarray],
            canonical: dict[type, str], finite: bool = True) -> Any:
    """The JSON spec of `value`; its arrays go into `arrays` under their field path. `finite`:
    float arrays must be finite (all but a `Solution`'s stats, which pad with NaN)."""
    kind = type(value)
    if is_traced(value):
        raise InputError(f"cannot save {where}: it is traced (save outside jit/vmap/grad)")
    if isinstance(value, (jax.Array, np.ndarray)):
        a = np.asarray(value)
        if a.dtype.kind not in "biufcUS" or np.dtype(a.dtype.str) != a.dtype:
            raise InputError(f"cannot save {where}: arrays of dtype {a.dtype} are not supported")
        if finite and a.dtype.kind in "fc" and not np.isfinite(a).all():
            raise InputError(f"cannot save {where}: it holds NaN or inf values (a model with "
                             "non-finite parameters scores NaN; jkern.load refuses such files)")
        name = where
        while name in arrays:  # a dict key with a dot may repeat a field path
            name += "_"
        arrays[name] = a
        node = {"array": name, "dtype": a.dtype.str, "shape": list(a.shape),
                "jax": isinstance(value, jax.Array)}
        if getattr(value, "weak_type", False):
            node["weak"] = True
        return node
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biufU":
            raise InputError(f"cannot save {where}: numpy scalars of dtype {value.dtype}")
        return {"scalar": _encode(value.item(), where, arrays, canonical, finite),
                "dtype": value.dtype.str}
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if kind is FeatureIds:  # a model's column labels (int64, saved as an array)
        return {"feature_ids": _encode(value.array, where, arrays, canonical)}
    if kind is Tree:
        penn = value.to_penn()
        if parse_penn(penn) != value:
            raise InputError(f"cannot save {where}: tree {penn!r} does not survive Penn text "
                             "(labels with spaces or brackets)")
        return {"tree": penn}
    if kind in (tuple, list):
        return {kind.__name__: [_encode(v, _join(where, i), arrays, canonical, finite)
                                for i, v in enumerate(value)]}
    if kind is dict and all(type(k) is str for k in value):
        return {"dict": {k: _encode(v, _join(where, k), arrays, canonical, finite)
                         for k, v in value.items()}}
    if kind in canonical:
        return {"class": canonical[kind],
                "fields": {f.name: _encode(getattr(value, f.name), _join(where, f.name), arrays,
                                           canonical, finite and not _stats(kind, f.name))
                           for f in dataclasses.fields(value)}}
    raise InputError(f"cannot save {where or 'the object'}: a {kind.__module__}."
                     f"{kind.__qualname__} is not an array, a jkern class, a tree or a JSON value")


# --------------------------------------------------------------------------- load


def load(path: str | os.PathLike[str]) -> Any:
    """The object `save` wrote to `path` (also reads the previous formats: docs/save.md).

    What a file may make it read is bounded before any member is read (docs/save.md,
    "Limits"): `header.json` at most `MAX_HEADER_BYTES` (256 MiB), all members together at
    most `MAX_EXPANSION` (100) times the file's size (at least `MIN_BUDGET`, 4 MiB), each
    array member exactly what its `.npy` header's shape says; a header nested deeper than
    Python's recursion limit is a corrupt file too. Arrays holding NaN or inf are refused
    (but in a `Solution`'s stats): a model with non-finite parameters would score NaN.

    Raises:
        ModelFileError: `path` is not a jkern model file (truncated, corrupt, tampered, not
            a zip, past the limits above, non-finite parameters) or was written in another
            version of the format.
        InputError: the file holds 64-bit arrays and JAX's 64-bit mode is off.
        OSError: `path` cannot be opened.
    """
    source = os.fspath(path)
    with open(source, "rb") as f:  # OSError: the path cannot be opened
        return _load_open(f, source, os.fstat(f.fileno()).st_size)


def _load_open(f: BinaryIO, source: str, size: int) -> Any:
    """`load` of the open file `f` of `size` bytes named `source`."""
    try:
        with zipfile.ZipFile(f) as z:
            _check_members(z, source, size)
            names = set(z.namelist())
            if HEADER not in names:
                if {"header.npy", "kda.header.npy"} & names:
                    from ._legacy import load_legacy

                    return load_legacy(source)
                raise _Corrupt(f"no {HEADER}")
            header = json.loads(_read_header(z).decode("utf-8"))
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise _Corrupt(f"{HEADER} does not name the {FORMAT} format")
            if header.get("version") != VERSION:
                raise ModelFileError(
                    f"{source}: written by jkern file format {header.get('version')} (jkern "
                    f"{header.get('jkern', '?')}); this jkern reads format {VERSION}")
            by_name, _ = _registry()
            return _decode(header["object"], "", _Reader(z, source), by_name)
    except (ModelFileError, _NeedsX64):
        raise
    except JkernError as err:  # a value of the file failed one of jkern's checks: altered
        raise ModelFileError(f"{source}: not a jkern model file (truncated or corrupt): "
                             f"{err}") from err
    except RecursionError as err:  # json.loads or the decoding of a deeply nested header
        raise ModelFileError(f"{source}: not a jkern model file (truncated or corrupt): "
                             f"{HEADER} is nested too deeply") from err
    except (_Corrupt, zipfile.BadZipFile, zlib.error, _LZMAError, struct.error, EOFError,
            OSError, ValueError, KeyError, TypeError, IndexError, AttributeError,
            ArithmeticError, RuntimeError,  # RuntimeError: an encrypted member
            tokenize.TokenError) as err:  # numpy's parser of a damaged .npy header
        detail = f": {err}" if isinstance(err, _Corrupt) else f" ({type(err).__name__}: {err})"
        raise ModelFileError(f"{source}: not a jkern model file (truncated or corrupt)"
                             f"{detail}") from err


def _check_members(z: zipfile.ZipFile, source: str, size: int) -> None:
    """The limits of `load`, from the zip entries of a file of `size` bytes, before any
    member's data is read: a member's data never exceeds its entry's `file_size` (zipfile
    stops there, and fails the CRC on a short one), so bounding the entries bounds what
    reading them allocates."""
    budget = max(MIN_BUDGET, MAX_EXPANSION * size)
    total = 0
    for info in z.infolist():
        if info.compress_size > size:
            raise _Corrupt(f"member {info.filename!r} claims {info.compress_size:,} bytes in a "
                           f"file of {size:,}")
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise _Corrupt(f"stored member {info.filename!r} claims {info.file_size:,} bytes "
                           f"in {info.compress_size:,}")
        if info.filename == HEADER and info.file_size > MAX_HEADER_BYTES:
            raise ModelFileError(f"{source}: {HEADER} is {info.file_size:,} bytes; jkern.load "
                                 f"reads at most {MAX_HEADER_BYTES:,} (MAX_HEADER_BYTES)")
        total += info.file_size
    if total > budget:
        raise ModelFileError(
            f"{source}: its members expand to {total:,} bytes; jkern.load reads at most "
            f"{MAX_EXPANSION} times the file's {size:,} bytes (at least {MIN_BUDGET:,}): a "
            "zip bomb or a damaged file")
    for info in z.infolist():
        if info.filename.endswith(".npy"):
            _check_npy(z, info)


def _check_npy(z: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    """An `.npy` member's header: a plain dtype, and a shape whose bytes are the member's
    (a header claiming more allocates nothing: it is refused here)."""
    with z.open(info) as m:
        version = np.lib.format.read_magic(m)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(m)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(m)
        else:
            raise _Corrupt(f"member {info.filename!r}: .npy format {version} is not jkern's")
        start = m.tell()
    if dtype.hasobject or dtype.kind not in "biufcUS":
        raise _Corrupt(f"member {info.filename!r}: arrays of dtype {dtype} are not jkern's")
    nbytes = math.prod(int(n) for n in shape) * dtype.itemsize
    if min(shape, default=0) < 0 or start + nbytes != info.file_size:
        raise _Corrupt(f"member {info.filename!r}: its .npy header says {dtype}{list(shape)} "
                       f"({nbytes:,} bytes); the member holds {info.file_size - start:,}")


def _read_header(z: zipfile.ZipFile) -> bytes:
    """`header.json`'s bytes, read with a cap (its entry's size, checked by
    `_check_members`; zipfile stops there too)."""
    info = z.getinfo(HEADER)
    cap = min(info.file_size, MAX_HEADER_BYTES)
    with z.open(info) as m:
        data = m.read(cap + 1)
    if len(data) > cap:
        raise _Corrupt(f"{HEADER} is longer than its zip entry says")
    return data


class _Reader:
    """Arrays of an open model file, checked against the header's dtype and shape."""

    def __init__(self, z: zipfile.ZipFile, source: str):
        self.z, self.source = z, source
        self.read: set[str] = set()  # each member once: a header naming one twice is refused
        self.stats = 0  # > 0 inside a `Solution`'s stats, where NaN pads histories

    def array(self, node: dict, where: str) -> Any:
        name, dtype, shape = node["array"], np.dtype(node["dtype"]), tuple(node["shape"])
        if not isinstance(name, str) or name in self.read:
            raise _Corrupt(f"{where}: array {name!r} is named twice")
        self.read.add(name)
        try:
            member = self.z.open(f"{name}.npy")
        except KeyError:
            raise _Corrupt(f"{where}: array {name!r} is missing") from None
        with member:
            a = np.lib.format.read_array(member, allow_pickle=False)
        if a.dtype != dtype or a.shape != shape:
            raise _Corrupt(f"{where}: array {name!r} is {a.dtype}{list(a.shape)}, the header "
                           f"says {dtype}{list(shape)}")
        if not self.stats and a.dtype.kind in "fc" and not np.isfinite(a).all():
            raise ModelFileError(f"{self.source}: {where} (member {name}.npy) holds NaN or inf "
                                 "values; a model with non-finite parameters would score NaN "
                                 "(retrain it)")
        if not node.get("jax", False):
            return a
        if jax.dtypes.canonicalize_dtype(a.dtype) != a.dtype:
            raise _NeedsX64(
                f"{self.source}: {where} is {a.dtype}, which JAX truncates without 64-bit mode: "
                "call jax.config.update('jax_enable_x64', True) before jkern.load")
        if node.get("weak", False) and a.ndim == 0:
            weak = jnp.asarray(a.item())  # a weakly typed scalar, as jnp.asarray(2.0) is
            if weak.dtype == a.dtype:
                return weak
        return jnp.asarray(a)


def _decode(node: Any, where: str, reader: _Reader, by_name: dict[str, type]) -> Any:
    if node is None or type(node) in (bool, int, float, str):
        return node
    if not isinstance(node, dict):
        raise _Corrupt(f"{where}: unreadable entry {node!r:.60}")
    if "class" in node:
        return _decode_object(node, where, reader, by_name)
    if "array" in node:
        return reader.array(node, where)
    if "feature_ids" in node:
        ids = _decode(node["feature_ids"], where, reader, by_name)
        if not isinstance(ids, np.ndarray) or ids.dtype != np.int64 or ids.ndim != 1:
            raise _Corrupt(f"{where}: feature ids must be a 1-D int64 array")
        try:
            return FeatureIds(ids)
        except InputError as err:  # not increasing: the file was altered
            raise _Corrupt(f"{where}: {err}") from err
    if "tree" in node:
        try:
            return parse_penn(node["tree"], source=f"{reader.source}:{where}")
        except InputError as err:  # a tree the writer checked (or no text): altered
            raise _Corrupt(str(err)) from err
    if "tuple" in node or "list" in node:
        kind = tuple if "tuple" in node else list
        items = node[kind.__name__]
        if not isinstance(items, list):
            raise _Corrupt(f"{where}: unreadable {kind.__name__}")
        return kind(_decode(v, _join(where, i), reader, by_name) for i, v in enumerate(items))
    if "dict" in node:
        return {str(k): _decode(v, _join(where, k), reader, by_name)
                for k, v in node["dict"].items()}
    if "scalar" in node:
        dtype = np.dtype(node["dtype"])
        if dtype.kind not in "biufU":
            raise _Corrupt(f"{where}: numpy scalar of dtype {dtype}")
        return dtype.type(_decode(node["scalar"], where, reader, by_name))
    if "float" in node:
        value = float(node["float"])
        if math.isfinite(value):
            raise _Corrupt(f"{where}: finite floats are plain JSON numbers")
        return value
    raise _Corrupt(f"{where}: unreadable entry {node!r:.60}")


def _decode_object(node: dict, where: str, reader: _Reader, by_name: dict[str, type]) -> Any:
    """An instance of a registered class, its fields set without running `__init__`."""
    name = node["class"]
    cls = by_name.get(name) if isinstance(name, str) else None
    if cls is None:
        raise _Corrupt(f"{where or 'the object'}: {name!r} is not a jkern class")
    fields = node["fields"]
    known = {f.name: f for f in dataclasses.fields(cls)}
    if not isinstance(fields, dict) or set(fields) - set(known):
        raise _Corrupt(f"{where or name}: fields {sorted(fields)} do not fit {name}")
    obj = object.__new__(cls)
    for f in known.values():
        if f.name in fields:
            stats = _stats(cls, f.name)
            reader.stats += stats
            try:
                value = _decode(fields[f.name], _join(where, f.name), reader, by_name)
            finally:
                reader.stats -= stats
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            raise _Corrupt(f"{where or name}: field {f.name!r} of {name} is missing")
        object.__setattr__(obj, f.name, value)
    for kls in reversed(cls.__mro__):  # equinox runs every class's own check
        check = kls.__dict__.get("__check_init__")
        if check is not None:
            try:
                check(obj)
            except Exception as err:  # the file's values break the class's invariants
                raise _Corrupt(f"{where or name}: {err}") from err
    return obj


def _stats(cls: type, field: str) -> bool:
    """Whether `field` of `cls` is a `Solution`'s stats (histories padded with NaN: the one
    place where a saved float array may hold NaN or inf)."""
    return issubclass(cls, Solution) and field == "stats"
