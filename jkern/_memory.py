"""Handing freed memory back to the system between the phases of long host work.

glibc keeps the pages of freed blocks in its arenas (one per thread that allocated: XLA's
worker threads each have theirs), and grows its mmap threshold after large frees, so
NumPy temporaries and XLA's buffers of one phase stay resident into the next: a PA-I fit's
resident memory crept up by ~200 MB of pages it no longer used, and its peak by ~60 MB
(issue 34). `release_freed_memory()` is glibc's `malloc_trim(0)`, which returns every
arena's free pages; elsewhere (musl, macOS, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable


def _malloc_trim() -> Callable[[], None]:
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def release() -> None:
        trim(0)

    return release


release_freed_memory: Callable[[], None] = _malloc_trim()
