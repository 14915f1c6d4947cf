"""How many CPUs this process computes on: `limit_cpus`.

XLA's CPU backend sizes its thread pool from the CPUs the process may run on when the backend
starts (its first computation). Programs made of long chains of small steps, such as PA-I's
epochs (a block's margins, then its in-block corrections, 6,000 times an epoch on the UD
task), gain nothing from the pool: each step is handed between threads, which burns CPU time
waiting and, on a busy machine, adds wall time too. On UD at d = 2 the explicit mode's epochs
took 1.66 CPU seconds on one CPU against 4.02 (2.28 wall) on two (docs/pa.md). Restricting
the process is the one knob JAX leaves: it has no per-program thread count.
"""

from __future__ import annotations

import numbers
import os

from .errors import InputError


def limit_cpus(n: int) -> int:
    """Run this process on at most `n` of the CPUs it may use now (starting from the one it
    last ran on, so that several processes limited alike spread out), so that XLA's CPU
    thread pool, sized when JAX's backend starts, has that many threads. Call it before the
    first JAX computation: after it the pool keeps its size and the call raises (nothing is
    changed). Affects the whole process, its other threads included (NumPy's, yours).
    Returns the number of CPUs the process now runs on.

    Raises `InputError` for an `n` that is not a positive int, where JAX's backend has
    already started, or on a platform without CPU affinity (`os.sched_setaffinity`: Linux
    has it; macOS and Windows do not).
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise InputError(f"n must be an int >= 1 (CPUs), got {n!r}")
    get = getattr(os, "sched_getaffinity", None)
    set_ = getattr(os, "sched_setaffinity", None)
    if get is None or set_ is None:
        raise InputError("limit_cpus needs os.sched_setaffinity (Linux); this platform has "
                         "none: run the process under a CPU limit of the system's instead")
    if _backend_started():
        raise InputError("limit_cpus must come before JAX's first computation: its CPU "
                         "backend has already started with a thread pool of its own size, "
                         "which a later limit does not change")
    cpus = sorted(get(0))
    if len(cpus) > n:
        now = _current_cpu()
        first = cpus.index(now) if now in cpus else 0
        set_(0, {cpus[(first + i) % len(cpus)] for i in range(int(n))})
    return len(get(0))


def _current_cpu() -> int | None:
    """The CPU this process last ran on (Linux: /proc/self/stat's 39th field), or None."""
    try:
        with open("/proc/self/stat") as f:
            stat = f.read()
        # the command name (field 2) is in parentheses and may hold spaces or parentheses
        return int(stat[stat.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def _backend_started() -> bool:
    """Whether JAX has started a backend (False where JAX is not even imported)."""
    import sys

    bridge = sys.modules.get("jax._src.xla_bridge")
    started = getattr(bridge, "backends_are_initialized", None)
    return bool(started()) if started is not None else False
