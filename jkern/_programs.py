"""Counting the XLA programs jkern's computations build (compiled, or loaded from the
persistent compilation cache), and the seconds spent tracing, lowering and compiling them.

A listener on JAX's monitoring events, installed once; the counters are process-wide (a
computation running at the same time in another thread adds to them too).
"""

from __future__ import annotations

import threading
from typing import Any

import jax

_COMPILE = "/jax/core/compile/backend_compile_duration"
_TRACE = "/jax/core/compile/jaxpr_trace_duration"
_LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"

_lock = threading.Lock()
_totals = {"programs": 0, "compile_seconds": 0.0, "trace_seconds": 0.0, "lower_seconds": 0.0,
           "loaded": 0, "load_seconds": 0.0}
_installed = False


def _listener(event: str, duration_secs: float, **_: Any) -> None:
    if event == _COMPILE:
        with _lock:
            _totals["programs"] += 1
            _totals["compile_seconds"] += duration_secs
    elif event == _TRACE:
        with _lock:
            _totals["trace_seconds"] += duration_secs
    elif event == _LOWER:
        with _lock:
            _totals["lower_seconds"] += duration_secs


def count_loaded(seconds: float) -> None:
    """One program loaded from jkern's executable store (`_executables`): built, without
    tracing, lowering or compiling."""
    with _lock:
        _totals["programs"] += 1
        _totals["loaded"] += 1
        _totals["load_seconds"] += seconds


def install() -> None:
    """Starts counting (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    jax.monitoring.register_event_duration_secs_listener(_listener)


def program_stats() -> dict[str, float]:
    """Programs built so far in this process (`programs`: compiled, loaded from JAX's
    persistent cache, or loaded as executables from jkern's store, `loaded` of them), and
    seconds spent tracing, lowering and compiling (or loading from JAX's cache) them, and
    loading executables.

    >>> import jkern
    >>> sorted(jkern.program_stats())
    ['compile_seconds', 'load_seconds', 'loaded', 'lower_seconds', 'programs', 'trace_seconds']
    """
    install()
    with _lock:
        return dict(_totals)
