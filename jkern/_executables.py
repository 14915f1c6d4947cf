"""Compiled programs kept on disk as executables, so a new process skips tracing and lowering.

JAX's persistent compilation cache saves XLA's compile step, but its key is the lowered
program: every new process still traces and lowers each program to find it, and for the
tree-kernel recurrences that is most of a warm run (issue 19: ~85% of a small job). A
`StoredProgram` is `jax.jit(fn)` whose compiled executables are also written, serialized,
next to that cache (`<jax_compilation_cache_dir>/jkern-executables`), under a key made of
what fixes the program without tracing it: the function, its static arguments, the
structure, shapes, dtypes and placement of its array arguments, the JAX/jaxlib versions, the
backend, the x64 flag, and a digest of jkern's own source (any edit to jkern invalidates every
entry). A later process with the same key loads the executable and calls it directly.

Nothing changes where the cache is off (`JKERN_NO_CACHE=1`, `jkern.disable_compilation_cache()`)
or the arguments are traced (jit/grad/vmap of a kernel), and in a multi-process
`jax.distributed` job (its executables are tied to the job's global device set): the call is the
plain `jax.jit` one.
A file that fails to load (damaged, truncated, another build) is dropped and the program
compiled again. Only fresh compiles are stored (see `_load_or_compile`).

No pickle: a file is JSON metadata, the executable's own bytes and a SHA-256 digest checked
before anything is deserialized (`jkern._executable_file`). A stored executable is machine
code, so files are read only from a folder that passes the cache's trust check (`jkern._trust`:
yours, not writable by others) and only if each file is yours and not writable by others;
else the program is compiled as if the cache were off, with one `CacheWarning`. Delete the
folder to reclaim the space of old jkern builds' entries.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
import types
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jaxlib.version
import numpy as np

from . import _cache, _programs, _trust
from . import _executable_file as _file
from . import _startup as _startup  # program counts
from ._validate import is_traced

_SUBDIR = "jkern-executables"
_source_digest: str | None = None
_digest_lock = threading.Lock()


def _jkern_source_digest() -> str:
    """SHA-256 over jkern's Python sources (path and bytes), computed once per process."""
    global _source_digest
    with _digest_lock:
        if _source_digest is None:
            root = Path(__file__).resolve().parent
            h = hashlib.sha256()
            for path in sorted(root.rglob("*.py")):
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())
            _source_digest = h.hexdigest()
        return _source_digest


_trusted: dict[str, Path | None] = {}


def executables_dir() -> Path | None:
    """Where executables are kept: beside JAX's persistent compilation cache, or None when
    that cache is off or its folder fails the trust check (`jkern._trust`; one warning)."""
    chosen = getattr(jax.config, "jax_compilation_cache_dir", None)
    if not chosen:
        return None
    if chosen not in _trusted:
        root = _cache.trusted_dir(chosen, entries=False)
        _trusted[chosen] = None if root is None else root / _SUBDIR
    return _trusted[chosen]


_MAX_FILE_BYTES = 1 << 31


def _read_trusted(path: Path) -> bytes | None:
    """The bytes of `path` if it is a trusted cache entry (`_cache.open_trusted`; the folder
    was checked by `executables_dir`) of at most `_MAX_FILE_BYTES`, else None."""
    f = _cache.open_trusted(path, what="stored executable", check_folder=False)
    if f is None:
        return None
    with f:
        if os.fstat(f.fileno()).st_size > _MAX_FILE_BYTES:
            _cache.warn_once(f"stored executable {path} not used: larger than "
                             f"{_MAX_FILE_BYTES} bytes; the program is compiled instead")
            return None
        return f.read(_MAX_FILE_BYTES + 1)


def _leaf_signature(leaf: Any) -> tuple:
    """What of an argument leaf the compiled program depends on."""
    if isinstance(leaf, jax.Array):
        return (leaf.shape, leaf.dtype, leaf.weak_type,
                leaf.sharding if leaf.committed else None)
    if isinstance(leaf, (np.ndarray, np.generic)):
        return (leaf.shape, leaf.dtype)
    if isinstance(leaf, (bool, int, float, complex)):  # weakly typed scalars
        return (type(leaf),)
    raise TypeError(f"no signature for an argument of type {type(leaf).__name__}")


_HITS = "/jax/compilation_cache/cache_hits"
_thread = threading.local()
_listening = False


def _on_event(event: str, **_: Any) -> None:
    if event == _HITS:
        _thread.cache_hits = getattr(_thread, "cache_hits", 0) + 1


def _cache_hits() -> int:
    """JAX persistent-cache hits so far in this thread (JAX records them in the compiling
    thread)."""
    global _listening
    with _digest_lock:
        if not _listening:
            jax.monitoring.register_event_listener(_on_event)
            _listening = True
    return getattr(_thread, "cache_hits", 0)


def _renamed(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """A copy of `fn` under another name (same code, signature and closure)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__,
                              fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = name
    copy.__module__ = fn.__module__
    return copy


_PROGRAMS: weakref.WeakSet[StoredProgram] = weakref.WeakSet()


def clear_loaded() -> None:
    """Drop the executables every `StoredProgram` holds in memory (`jax.clear_caches()`
    drops JAX's): a long-lived process that compiles many programs (a test suite) frees
    their code this way. They load again from disk on their next call."""
    for program in list(_PROGRAMS):
        with program._lock:
            program._loaded.clear()


class StoredProgram:
    """`jax.jit(fn, static_argnames=..., donate_argnums=...)`, with its executables kept on
    disk (see the module docstring). Call it as the jitted function; static arguments are
    passed by keyword."""

    def __init__(self, fn: Callable[..., Any], *, static_argnames: Sequence[str] = (),
                 donate_argnums: Sequence[int] = ()) -> None:
        self._fn = fn
        self._static = tuple(static_argnames)
        self._donate = tuple(donate_argnums)
        self._jit = jax.jit(fn, static_argnames=self._static, donate_argnums=self._donate)
        self._loaded: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self._building: dict[Any, threading.Lock] = {}
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__wrapped__ = fn
        _PROGRAMS.add(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _cache.ensure_default()
        where = executables_dir()
        statics = {k: kwargs.pop(k) for k in self._static if k in kwargs}
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        if (where is None or jax.process_count() > 1
                or any(is_traced(x) for x in leaves)):
            return self._jit(*args, **kwargs, **statics)
        key = (tree, tuple(_leaf_signature(x) for x in leaves), tuple(sorted(statics.items())),
               # Context-managed flags, read as set for this thread; the stubs don't list them.
               str(jax.config.jax_default_device),  # pyright: ignore[reportAttributeAccessIssue]
               jax.config.jax_enable_x64)  # pyright: ignore[reportAttributeAccessIssue]
        compiled = self._built(key, lambda: self._load_or_compile(where, key, args, kwargs,
                                                                  statics))
        return compiled(*args, **kwargs)

    def _built(self, key: Any, build: Callable[[], Any]) -> Any:
        """The executable for `key`: held in memory, else `build()` once (one thread builds
        a program; others needing it wait for it)."""
        compiled = self._loaded.get(key)
        if compiled is None:
            with self._lock:
                building = self._building.setdefault(key, threading.Lock())
            with building:
                compiled = self._loaded.get(key)
                if compiled is None:
                    compiled = build()
                    self._loaded[key] = compiled
        return compiled

    def _load_or_compile(self, where: Path, key: tuple, args, kwargs, statics,
                         fn: Callable[..., Any] | None = None, in_tree: Any = None,
                         donate: tuple[int, ...] | None = None) -> Any:
        """`fn` (default: the wrapped function) compiled for `args`, `kwargs` (whose
        structure is `in_tree`, default `key[0]`), or loaded from its file."""
        fn = self._fn if fn is None else fn
        in_tree = key[0] if in_tree is None else in_tree
        backend = jax.devices()[0]
        digest = hashlib.sha256(repr((
            self._fn.__module__, self._fn.__qualname__, key, jax.__version__,
            jaxlib.version.__version__, backend.platform, backend.device_kind,
            os.environ.get("XLA_FLAGS", ""), _jkern_source_digest(), donate,
        )).encode()).hexdigest()
        path = where / f"{self._fn.__name__}-{digest[:40]}.jkx"
        data = _read_trusted(path)
        if data is not None:
            start = time.perf_counter()
            # Loaded onto the devices it was compiled for: by default JAX loads it onto
            # every local device, and with several (--xla_force_host_platform_device_count,
            # GPUs) a one-device program then expects one shard per device.
            by_id = {d.id: d for d in jax.local_devices()}
            try:
                compiled = _file.decode(data, digest, in_tree, by_id)
            except _file.Unusable:  # damaged, or from another build: compiled again below
                path.unlink(missing_ok=True)
            else:
                _programs.count_loaded(time.perf_counter() - start)
                return compiled
        # An executable JAX loaded from its own persistent cache does not survive a second
        # serialization (it fails when run: "Function ... not found"): only a fresh compile
        # is stored. The program is compiled under a name carrying jkern's source digest, so
        # JAX's cache keys it apart from the plain jit's and other jkern builds'; should JAX
        # still find it (our file was deleted), its entries of that name are dropped and it
        # is compiled afresh, and if JAX finds it all the same, it is used but not stored.
        # (A new jit object for the second try: JAX also memoizes compiles in memory.)
        name = f"{self._fn.__name__}_{_jkern_source_digest()[:16]}"
        for attempt in range(2):
            program = jax.jit(_renamed(fn, name), static_argnames=self._static,
                              donate_argnums=self._donate if donate is None else donate)
            hits = _cache_hits()
            compiled = program.lower(*args, **kwargs, **statics).compile()
            if _cache_hits() == hits:
                _store(compiled, in_tree, digest, where, path)
                break
            if attempt == 0:
                for entry in where.parent.glob(f"jit_{name}-*"):
                    entry.unlink(missing_ok=True)
        return compiled


def _store(compiled: Any, in_tree: Any, name: str, where: Path, path: Path) -> None:
    """Writes `compiled` to `path` whole, then renames it into place (a reader never sees
    half a file); a program that cannot be described exactly, or a read-only or full disk,
    leaves the program uncached."""
    described = _file.describe(compiled, in_tree)
    if described is None:
        return
    tmp = None
    try:
        data = _file.encode(name, *described)
        _trust.make_private_dir(where)
        if _trust.untrusted_dir_reason(where) is not None:
            return
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")  # mode 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        tmp = None
    except (OSError, _file.Unusable):
        pass
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


class _Unstorable(Exception):
    """An argument the stored key cannot describe exactly (the call is the plain one)."""


def _describe(x: Any) -> Any:
    """An exact, process-independent description of what of `x` a `filter_jit`-style program
    depends on: the shape, dtype and placement of its arrays, and the value of every other
    leaf and of every static field of its equinox Modules. Raises `_Unstorable` for a value
    whose repr could name two different things (an object that is not a plain number,
    string, bool or None)."""
    import dataclasses

    import equinox as eqx

    if isinstance(x, (jax.Array, np.ndarray, np.generic)):
        return ("array",) + _leaf_signature(x)
    if x is None or type(x) in (bool, int, float, str):
        return (type(x).__name__, x)
    if isinstance(x, eqx.Module):
        return (type(x).__module__, type(x).__qualname__,
                tuple((f.name, _describe(getattr(x, f.name))) for f in dataclasses.fields(x)))
    if isinstance(x, (tuple, list)):
        return (type(x).__module__, type(x).__qualname__, tuple(_describe(v) for v in x))
    raise _Unstorable(type(x).__name__)


def _is_input(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


class StoredFilterProgram(StoredProgram):
    """`equinox.filter_jit(fn)`, with its executables kept on disk like `StoredProgram`'s:
    the arrays anywhere in the (positional) arguments are the program's inputs, and every
    other leaf and every equinox static field is part of the program and of its key
    (`_describe`). Arguments it cannot describe exactly, traced ones, or the cache off:
    the plain `filter_jit` call. `fn` must return arrays (or None) only. `donate`: the
    positional arguments whose arrays are donated to the stored program (their buffers
    serve its results: a fit's state is not held twice; the plain call donates none)."""

    def __init__(self, fn: Callable[..., Any], donate: Sequence[int] = ()) -> None:
        super().__init__(fn)
        self._plain = _cache.filter_jit(fn)
        self._donate_args = tuple(donate)

    def __call__(self, *args: Any) -> Any:
        _cache.ensure_default()
        where = executables_dir()
        leaves, tree = jax.tree_util.tree_flatten(args)
        if (where is None or jax.process_count() > 1
                or any(is_traced(x) for x in leaves)):
            return self._plain(*args)
        try:
            desc = _describe(args)
        except _Unstorable:
            return self._plain(*args)
        key = (desc,
               str(jax.config.jax_default_device),  # pyright: ignore[reportAttributeAccessIssue]
               jax.config.jax_enable_x64)  # pyright: ignore[reportAttributeAccessIssue]
        inputs = [x for x in leaves if _is_input(x)]

        def build() -> Any:
            fixed = [None if _is_input(x) else x for x in leaves]  # (no arrays kept)
            wrapped = self._fn

            def program(*arrays):
                it = iter(arrays)
                full = [next(it) if v is None else v for v in fixed]
                return wrapped(*jax.tree_util.tree_unflatten(tree, full))

            in_tree = jax.tree_util.tree_structure((tuple(inputs), {}))
            return self._load_or_compile(where, key, tuple(inputs), {}, {}, fn=program,
                                         in_tree=in_tree, donate=self._donated(args))

        return self._built(key, build)(*inputs)

    def _donated(self, args: tuple) -> tuple[int, ...]:
        """The program's input positions (array leaves, in order) of the donated
        arguments."""
        out, at = [], 0
        for i, arg in enumerate(args):
            n = sum(1 for x in jax.tree_util.tree_leaves(arg) if _is_input(x))
            if i in self._donate_args:
                out.extend(range(at, at + n))
            at += n
        return tuple(out)


def stored_filter_jit(fn: Callable[..., Any] | None = None, *, donate: Sequence[int] = ()
                      ) -> Any:
    """Decorator form of `StoredFilterProgram` (`@stored_filter_jit`, or
    `@stored_filter_jit(donate=(i,))`)."""
    if fn is None:
        return lambda f: StoredFilterProgram(f, donate)
    return StoredFilterProgram(fn, donate)


def stored_program(*, static_argnames: Sequence[str] = (), donate_argnums: Sequence[int] = ()
                   ) -> Callable[[Callable[..., Any]], StoredProgram]:
    """Decorator form of `StoredProgram`."""
    return lambda fn: StoredProgram(fn, static_argnames=static_argnames,
                                    donate_argnums=donate_argnums)
