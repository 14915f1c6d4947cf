"""The persistent XLA compilation cache, on by default.

A tree-kernel Gram compiles a small set of fixed-shape programs per kernel setting; compiling
them dominates short runs. With compiled programs cached on disk, every later process starts
warm. jkern's first use (`jkern.<name>`, or an import of a computing subpackage such as
`jkern.kernels` or `jkern.ds`; `_startup`) turns the cache on at `$JKERN_CACHE_DIR`
(default `~/.cache/jkern/xla`) unless `JKERN_NO_CACHE=1` is set or the program has already
chosen its own JAX cache directory (`jax_compilation_cache_dir`), which is then left alone.
The tree-kernel recurrences also keep their executables in its `jkern-executables`
subfolder, so a later process skips tracing and lowering them too (`jkern._executables`).
"""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """`$JKERN_CACHE_DIR`, or `~/.cache/jkern/xla`."""
    return Path(os.environ.get("JKERN_CACHE_DIR") or Path.home() / ".cache/jkern/xla")


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Cache compiled XLA programs under `path` (default `default_cache_dir()`). Returns the
    directory used. Call before the first computation."""
    import jax

    where = Path(path) if path else default_cache_dir()
    where.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(where))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return where


def disable_compilation_cache() -> None:
    """Stops caching compiled programs on disk (call before the first computation)."""
    import jax

    jax.config.update("jax_compilation_cache_dir", None)


def enable_default() -> Path | None:
    """What jkern's first use does (`_startup`): the cache at the default place, unless
    opted out or the program set its own. Returns the directory, or None when left off."""
    import jax

    chosen = getattr(jax.config, "jax_compilation_cache_dir", None)
    if os.environ.get("JKERN_NO_CACHE") == "1" or chosen:
        return None
    try:
        return enable_compilation_cache()
    except OSError:  # an unwritable home: run without the cache rather than fail
        return None
