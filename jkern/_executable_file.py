"""The file format of jkern's stored executables: no pickle, checked before anything is loaded.

A file is

    b"JKERNEXE" | format (1 byte) | header length (4 bytes, little-endian) | header | payload
    | SHA-256 of everything before it (32 bytes)

- the header is UTF-8 JSON describing what JAX needs around the executable to call it (the
  argument and result shapes, dtypes, devices and layouts, which arguments are donated or
  pruned, the result's tree structure) and the key of the program it was stored for;
- the payload is the compiled executable as XLA serializes it, its own bytes.

`read` checks the digest, then the header's key, before it deserializes the payload, and only
a program whose description is complete is stored (`describe` returns None for anything it
cannot describe exactly: effects, host callbacks, mutable state, shardings over several
devices, extended dtypes; those programs are simply not kept on disk). The digest detects a
damaged or truncated file; it does not make a planted file safe: that is the job of the
folder's trust check (`jkern._trust`), done before a file is opened.

Rebuilding JAX's executable object from the description uses two JAX internals (the unloaded
executable class and the device list), looked up once; if they change in a later JAX, storing
and loading switch themselves off and programs are compiled as usual.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import jax
import numpy as np
from jax.core import ShapedArray

MAGIC = b"JKERNEXE"
FORMAT = 1
MAX_HEADER_BYTES = 1 << 20
_DIGEST = 32
_PREFIX = struct.Struct("<8sBI")


class Unusable(Exception):
    """The file does not hold a usable executable for this key (the caller compiles)."""


_internals_cache: list[Any] = []


def _internals() -> tuple[Any, Any, Any] | None:
    """(UnloadedMeshExecutable, DeviceList, LoadedExecutable) from JAX, or None if this JAX
    does not have them as expected."""
    if not _internals_cache:
        try:
            import dataclasses
            import importlib

            pxla = importlib.import_module("jax._src.interpreters.pxla")
            xla_client = importlib.import_module("jax._src.lib").xla_client
            unloaded = pxla.UnloadedMeshExecutable
            ok = {f.name for f in dataclasses.fields(unloaded)} == _FIELDS
            found = (unloaded, xla_client.DeviceList, xla_client.LoadedExecutable) if ok else None
        except Exception:  # noqa: BLE001 - any change in JAX: store nothing
            found = None
        _internals_cache.append(found)
    return _internals_cache[0]


_FIELDS = {"xla_executable", "device_list", "backend", "input_avals", "input_shardings",
           "output_avals", "output_shardings", "committed", "name", "unordered_effects",
           "ordered_effects", "keepalive", "host_callbacks", "kept_var_idx", "mut",
           "xla_in_layouts", "dispatch_in_layouts", "xla_out_layouts", "all_args_info",
           "pgle_profiler"}


# ------------------------------------------------------------------ pieces of the description


def _aval(a: Any) -> dict:
    if type(a) is not ShapedArray or not isinstance(a.dtype, np.dtype):
        raise Unusable("not a plain array")
    return {"shape": [int(d) for d in a.shape], "dtype": a.dtype.name,
            "weak_type": bool(a.weak_type)}


def _make_aval(d: dict) -> Any:
    return ShapedArray(tuple(int(x) for x in d["shape"]), np.dtype(str(d["dtype"])),
                                bool(d["weak_type"]))


def _sharding(s: Any) -> dict:
    if type(s) is not jax.sharding.SingleDeviceSharding:
        raise Unusable("not a one-device sharding")
    (device,) = s.device_set
    return {"device": int(device.id), "memory_kind": s.memory_kind}


def _make_sharding(d: dict, devices: dict[int, Any]) -> Any:
    kind = d["memory_kind"]
    return jax.sharding.SingleDeviceSharding(devices[int(d["device"])],
                                             memory_kind=None if kind is None else str(kind))


def _layout(layout: Any) -> Any:
    if layout is None:
        return None
    from jax.experimental.layout import Layout

    if type(layout) is not Layout:
        raise Unusable("not a plain layout")
    tiling = layout.tiling
    return {"major_to_minor": [int(i) for i in layout.major_to_minor],
            "tiling": None if tiling is None else [[int(i) for i in t] for t in tiling],
            "sub_byte": int(layout.sub_byte_element_size_in_bits)}


def _make_layout(d: Any) -> Any:
    if d is None:
        return None
    from jax.experimental.layout import Layout

    tiling = d["tiling"]
    return Layout(tuple(int(i) for i in d["major_to_minor"]),
                  None if tiling is None else tuple(tuple(int(i) for i in t) for t in tiling),
                  int(d["sub_byte"]))


class _Leaf:
    pass


def _tree(node: Any) -> Any:
    """A JSON form of a pytree made of tuples, lists, dicts with string keys, None and leaves."""
    if isinstance(node, _Leaf):
        return "*"
    if node is None:
        return None
    if type(node) is tuple:
        return {"tuple": [_tree(c) for c in node]}
    if type(node) is list:
        return {"list": [_tree(c) for c in node]}
    if type(node) is dict and all(type(k) is str for k in node):
        return {"dict": [[k, _tree(v)] for k, v in node.items()]}
    if _is_jkern_named_tuple(type(node)):
        return {"named": f"{type(node).__module__}:{type(node).__qualname__}",
                "items": [_tree(c) for c in node]}
    raise Unusable("a result structure other than tuples, lists, dicts and jkern's "
                   "named tuples")


def _is_jkern_named_tuple(cls: Any) -> bool:
    """A NamedTuple class of jkern's own (rebuilt by name: no code of the file's runs)."""
    return (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")
            and (cls.__module__ == "jkern" or cls.__module__.startswith("jkern.")))


def _named_tuple_class(name: str) -> Any:
    """The jkern NamedTuple class `module:qualname`, looked up among modules already
    imported (nothing is imported or run on the file's word)."""
    import sys

    module, _, qualname = str(name).partition(":")
    cls: Any = sys.modules.get(module)
    for part in qualname.split("."):
        cls = getattr(cls, part, None)
    if cls is None or not _is_jkern_named_tuple(cls):
        raise Unusable(f"unknown result type {name!r}")
    return cls


def _make_tree(d: Any) -> Any:
    if d == "*":
        return 0
    if d is None:
        return None
    if "tuple" in d:
        return tuple(_make_tree(c) for c in d["tuple"])
    if "list" in d:
        return [_make_tree(c) for c in d["list"]]
    if "dict" in d:
        return {str(k): _make_tree(v) for k, v in d["dict"]}
    if "named" in d:
        cls = _named_tuple_class(d["named"])
        items = [_make_tree(c) for c in d["items"]]
        if len(items) != len(cls._fields):
            raise Unusable(f"{d['named']} has {len(cls._fields)} fields")
        return cls(*items)
    raise Unusable("unknown tree node")


# ------------------------------------------------------------------ describe and rebuild


def describe(compiled: Any, in_tree: Any) -> tuple[dict, bytes] | None:
    """(header, payload) for `compiled`, called with arguments of structure `in_tree`; None
    when it cannot be described exactly (then it is not stored)."""
    internals = _internals()
    if internals is None:
        return None
    unloaded_cls, _, loaded_cls = internals
    try:
        u: Any = getattr(compiled._executable, "_unloaded_executable", None)
        if (type(u) is not unloaded_cls or u.unordered_effects or u.ordered_effects
                or u.keepalive or u.host_callbacks or u.mut is not None
                or u.pgle_profiler is not None or compiled._params.const_args
                or compiled.in_tree != in_tree
                or any(x is not None for x in u.dispatch_in_layouts)
                or type(u.xla_executable) is not loaded_cls):
            return None
        args_flat = jax.tree_util.tree_leaves(compiled.args_info)
        out = jax.tree_util.tree_unflatten(
            compiled.out_tree, [_Leaf() for _ in range(compiled.out_tree.num_leaves)])
        header = {
            "name": str(u.name),
            "committed": bool(u.committed),
            "devices": [int(d.id) for d in u.device_list],
            "kept": sorted(int(i) for i in u.kept_var_idx),
            "inputs": [_aval(a) for a in u.input_avals],
            "input_shardings": [_sharding(s) for s in u.input_shardings],
            "input_layouts": [_layout(x) for x in u.xla_in_layouts],
            "outputs": [_aval(a) for a in u.output_avals],
            "output_shardings": [_sharding(s) for s in u.output_shardings],
            "output_layouts": [_layout(x) for x in u.xla_out_layouts],
            "args": [{**_aval(a._aval), "donated": bool(a.donated)} for a in args_flat],
            "no_kwargs": bool(compiled._no_kwargs),
            "out_tree": _tree(out),
        }
        # the description must give back exactly what it describes
        devices = {d.id: d for d in u.device_list}
        rebuilt = _fields(header, devices)
        if (rebuilt["input_avals"] != list(u.input_avals)
                or rebuilt["output_avals"] != list(u.output_avals)
                or rebuilt["input_shardings"] != list(u.input_shardings)
                or rebuilt["output_shardings"] != list(u.output_shardings)
                or rebuilt["xla_in_layouts"] != list(u.xla_in_layouts)
                or rebuilt["xla_out_layouts"] != list(u.xla_out_layouts)
                or rebuilt["kept_var_idx"] != set(u.kept_var_idx)
                or [a._aval for a in _args_info(header)] != [a._aval for a in args_flat]
                or jax.tree_util.tree_structure(_make_tree(header["out_tree"]))
                != compiled.out_tree):
            return None
        payload = u.xla_executable.client.serialize_executable(u.xla_executable)
    except (Unusable, AttributeError, TypeError, ValueError, KeyError):
        return None
    return header, bytes(payload)


def _fields(header: dict, devices: dict[int, Any]) -> dict[str, Any]:
    """The UnloadedMeshExecutable fields a header describes (all but the executable)."""
    return {
        "input_avals": [_make_aval(a) for a in header["inputs"]],
        "input_shardings": [_make_sharding(s, devices) for s in header["input_shardings"]],
        "output_avals": [_make_aval(a) for a in header["outputs"]],
        "output_shardings": [_make_sharding(s, devices) for s in header["output_shardings"]],
        "xla_in_layouts": [_make_layout(x) for x in header["input_layouts"]],
        "xla_out_layouts": [_make_layout(x) for x in header["output_layouts"]],
        "kept_var_idx": {int(i) for i in header["kept"]},
        "committed": bool(header["committed"]),
        "name": str(header["name"]),
    }


def _args_info(header: dict) -> list[Any]:
    return [jax.stages.ArgInfo(_make_aval(a), bool(a["donated"])) for a in header["args"]]


def encode(key: str, header: dict, payload: bytes) -> bytes:
    """The file's bytes for a described executable stored under `key`."""
    text = json.dumps({**header, "key": key, "payload_sha256":
                       hashlib.sha256(payload).hexdigest()}, separators=(",", ":")).encode()
    if len(text) > MAX_HEADER_BYTES:
        raise Unusable("header too large")
    body = _PREFIX.pack(MAGIC, FORMAT, len(text)) + text + payload
    return body + hashlib.sha256(body).digest()


def decode(data: bytes, key: str, in_tree: Any, devices: dict[int, Any]) -> Any:
    """The callable `jax.stages.Compiled` in the file `data`, stored under `key`, for
    arguments of structure `in_tree`, loaded onto its devices among `devices` (by id).
    Raises `Unusable` for anything else: the digest and the header are checked before the
    executable is deserialized."""
    internals = _internals()
    if internals is None:
        raise Unusable("this JAX cannot rebuild stored executables")
    unloaded_cls, device_list_cls, _ = internals
    if len(data) < _PREFIX.size + _DIGEST:
        raise Unusable("too short")
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise Unusable("digest mismatch: damaged or truncated")
    magic, version, size = _PREFIX.unpack_from(body)
    if magic != MAGIC or version != FORMAT or size > min(MAX_HEADER_BYTES,
                                                        len(body) - _PREFIX.size):
        raise Unusable("not a jkern executable of this format")
    try:
        header = json.loads(body[_PREFIX.size:_PREFIX.size + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise Unusable("unreadable header") from err
    payload = body[_PREFIX.size + size:]
    if (not isinstance(header, dict) or header.get("key") != key
            or header.get("payload_sha256") != hashlib.sha256(payload).hexdigest()):
        raise Unusable("stored for another program")
    try:
        chosen = [devices[int(i)] for i in header["devices"]]
        fields = _fields(header, devices)
        args_info = in_tree.unflatten(_args_info(header))
        out_tree = jax.tree_util.tree_structure(_make_tree(header["out_tree"]))
        device_list = device_list_cls(tuple(chosen))
        backend = chosen[0].client
        executable = backend.deserialize_executable(payload, executable_devices=device_list)
        n_in = len(fields["input_avals"])
        unloaded = unloaded_cls(
            xla_executable=executable, device_list=device_list, backend=backend,
            unordered_effects=[], ordered_effects=[], keepalive=[], host_callbacks=[],
            mut=None, dispatch_in_layouts=[None] * n_in, all_args_info=None,
            pgle_profiler=None, **fields)
        return jax.stages.Compiled(unloaded.load(), [], args_info, out_tree,
                                   no_kwargs=bool(header["no_kwargs"]))
    except Unusable:
        raise
    except Exception as err:  # noqa: BLE001 - another build, another device set: recompile
        raise Unusable(f"cannot be loaded here: {err}") from err
