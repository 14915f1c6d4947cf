"""The persistent XLA compilation cache: on at jkern's first computation, and used only where
it can be trusted.

A tree-kernel Gram compiles a small set of fixed-shape programs per kernel setting; compiling
them dominates short runs. With compiled programs cached on disk, every later process starts
warm. jkern's first computation (the first call of a jkern program: a kernel's Gram, a solver;
`ensure_default`) turns the cache on at `$JKERN_CACHE_DIR` (default
`$XDG_CACHE_HOME/jkern/xla`, else `~/.cache/jkern/xla`) unless `JKERN_NO_CACHE=1` is set or
the program has already chosen its own JAX cache directory (`jax_compilation_cache_dir`),
which is then left alone. Importing jkern changes no JAX setting. The tree-kernel recurrences
also keep their executables in its `jkern-executables` subfolder, so a later process skips
tracing and lowering them too (`jkern._executables`).

Trust (see `jkern._trust` and docs/bad-input.md): a cached program is machine code, so a
folder is used only if nobody but you (or root) can have written it: owned by you and not
writable by group or others, its parents likewise (or sticky, like /tmp), and every entry in it
yours. Otherwise, or when the folder cannot be created, the cache stays off with one
`jkern.errors.CacheWarning` and the job runs, compiling afresh. JAX fixes whether it uses its
cache at its first compilation: to cache a program that compiles JAX code before calling jkern,
call `jkern.enable_compilation_cache()` first.
"""

from __future__ import annotations

import errno
import functools
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from . import _trust
from .errors import CacheWarning

_lock = threading.Lock()
_enable_lock = threading.Lock()
_default_done = False
_warned: set[str] = set()


def default_cache_dir() -> Path:
    """`$JKERN_CACHE_DIR`, or `$XDG_CACHE_HOME/jkern/xla`, or `~/.cache/jkern/xla`: always a
    folder of the user's own, never a fixed shared path."""
    chosen = os.environ.get("JKERN_CACHE_DIR")
    if chosen:
        return Path(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "jkern" / "xla"


def warn_once(message: str) -> None:
    """One `CacheWarning` per distinct message in this process."""
    with _lock:
        if message in _warned:
            return
        _warned.add(message)
    warnings.warn(message, CacheWarning, stacklevel=3)


def trusted_dir(path: str | os.PathLike, *, create: bool = True,
                entries: bool = True) -> Path | None:
    """`path` if it may hold compiled programs (created private if missing and `create`),
    else None after one `CacheWarning` saying why and that the job runs without the cache.
    `entries`: also check every entry already in it."""
    where = Path(path)
    try:
        if create:
            _trust.make_private_dir(where)
        why = _trust.untrusted_dir_reason(where)
        if why is None and entries:
            why = _trust.checked_entries(where)
    except OSError as err:
        why = f"{where} cannot be used ({err.strerror or err})"
    if why is not None:
        warn_once(f"compilation cache not used: {why}; running without it (programs are "
                  f"compiled afresh). Pass a private folder in JKERN_CACHE_DIR, or set "
                  f"JKERN_NO_CACHE=1.")
        return None
    return where


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Cache compiled XLA programs under `path` (default `default_cache_dir()`), created
    readable by you alone. Returns the directory used, or None (with one `CacheWarning`) when
    it cannot be used or trusted (see the module docstring): the job then runs uncached. Call
    before the first computation."""
    import jax

    where = trusted_dir(path if path else default_cache_dir())
    if where is None:
        return None
    jax.config.update("jax_compilation_cache_dir", str(where))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return where


def disable_compilation_cache() -> None:
    """Stops caching compiled programs on disk (call before the first computation)."""
    import jax

    jax.config.update("jax_compilation_cache_dir", None)


def enable_default() -> Path | None:
    """The cache at the default place, unless opted out (`JKERN_NO_CACHE=1`) or the program
    set its own. Returns the directory, or None when left off."""
    import jax

    chosen = getattr(jax.config, "jax_compilation_cache_dir", None)
    if os.environ.get("JKERN_NO_CACHE") == "1" or chosen:
        return None
    return enable_compilation_cache()


def ensure_default() -> None:
    """What jkern's first computation does, once per process: `enable_default()`."""
    global _default_done
    if _default_done:
        return
    with _enable_lock:  # other threads wait until the cache is set, then compile
        if not _default_done:
            enable_default()
            _default_done = True


class _OnFirstCall:
    """A jitted function that runs `ensure_default` before each call (a flag test after the
    first): jkern's programs turn the default cache on when they first compute, not when
    imported. Other attributes (`lower`, `_cache_size`) are the jitted function's."""

    def __init__(self, jitted: Any) -> None:
        self._jitted = jitted
        functools.update_wrapper(self, jitted)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ensure_default()
        return self._jitted(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)


def jit(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """`jax.jit(fn, **options)` for jkern's programs (see `_OnFirstCall`); usable as
    `@jit` or `@functools.partial(jit, static_argnames=...)`."""
    import jax

    if fn is None:
        return functools.partial(jit, **options)
    return _OnFirstCall(jax.jit(fn, **options))


def filter_jit(fn: Callable[..., Any]) -> Any:
    """`equinox.filter_jit(fn)` for jkern's programs (see `_OnFirstCall`)."""
    import equinox as eqx

    return _OnFirstCall(eqx.filter_jit(fn))


def open_trusted(path: str | os.PathLike, *, what: str,
                 check_folder: bool = True) -> BinaryIO | None:
    """`path` opened for binary reading if it may be used as a cache entry (any of jkern's
    caches: stored executables, the parse cache): a regular file of yours that others cannot
    write, in a folder that passes `trusted_dir` (`check_folder`). Links are not followed and
    the checks are made on the opened file, so it cannot be swapped in between. None when it
    does not exist, or, after one `CacheWarning` naming `what`, when it fails."""
    where = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(where, flags)
    except FileNotFoundError:
        return None
    except OSError as err:
        why = ("a link, not a regular file" if err.errno == errno.ELOOP
               else err.strerror or str(err))
        warn_once(f"{what} {where} not used: {why}; computing it afresh")
        return None
    f = os.fdopen(fd, "rb")
    why = _trust.untrusted_entry_reason(os.fstat(fd),
                                        closed=_trust.closed_to_others(where.parent))
    if why is not None:
        f.close()
        warn_once(f"{what} {where} not used: {why}; computing it afresh")
        return None
    if check_folder and trusted_dir(where.parent, create=False, entries=False) is None:
        f.close()
        return None
    return f
