"""Opt-in persistent XLA compilation cache.

A tree-kernel Gram compiles one fixed-shape recurrence per arity bucket; compiling dominates
short runs. Caching compiled programs on disk makes every later process start warm.
"""

from __future__ import annotations

import os
from pathlib import Path


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Cache compiled XLA programs under `path` (default `$JKERN_CACHE_DIR` or
    `~/.cache/jkern/xla`). Returns the directory used. Call before the first computation.
    """
    import jax

    where = Path(path or os.environ.get("JKERN_CACHE_DIR") or Path.home() / ".cache/jkern/xla")
    where.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(where))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return where
