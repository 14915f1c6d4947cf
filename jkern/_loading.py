"""Importing jkern's computing modules with Python's cyclic garbage collector paused.

An import makes thousands of objects (classes, functions, equinox's generated methods) and
frees almost none, so the collector's passes during it find nothing; but each pass walks
every tracked object, and after JAX is imported a full one walks ~100,000 of them (~35 ms).
Paused for the import, `import jkern.pa` took 0.15–0.17 CPU s instead of 0.19–0.22 (issue
34: `docs/results.md`, "Issue 34, fourteenth steps"). The collector resumes when the import
ends, however it ends; nothing it would have freed is lost, only collected later.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off inside the block (when it was on), back on after it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
