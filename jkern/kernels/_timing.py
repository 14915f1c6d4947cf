"""Where a tree-kernel Gram's seconds go: host phases apart from compiled programs.

Every engine keeps a `Seconds` (`GramEngine.seconds`); the Gram path wraps its phases in
`seconds.phase(name)`. Phases nest, and time goes to the innermost one only, so the phases of
a thread add up to its time in them (a block's Python glue, outside any named phase, stays
with the enclosing "other"). Blocks run on several threads: the seconds are thread-seconds,
summed over threads. `gram(..., stats=stats)` reports the difference over its call
(`report`).

Phases:
    forest    building the forest (`Forest.build`, or `Forest.extend`).
    setup     the kernel's plan of the forest (`match_plan`) and the engine's per-forest
              arrays (arity classes, child-key bitsets, the padded device copies).
    columns   a block's column side (its column trees' nodes grouped by match key).
    layout    a block's rows: their buffer slots, and the Delta entries ordered into buckets
              (height level, arity-class pair); sizing blocks (`block_slots`).
    pairs     finding the node pairs whose Delta must be computed.
    contract  the contraction's index arrays, and spreading the shared rows into the block.
    assemble  copying finished blocks into the Gram matrix, mirroring it.
    other     the rest of the block threads' time (Python glue between the phases).
    program   compiled programs: calling them, the transfers they read, and waiting for
              their results. On a CPU the programs run on the same cores as the host phases
              (JAX's dispatch may return before a program ends, so a host phase that follows
              can overlap it: the program's part is then counted where the thread waits).
              No synchronization is added for the count: the block's existing wait (its
              values read on the host) ends its programs.

Each phase also counts the CPU seconds of the thread in it (`time.thread_time`), which a busy
machine inflates less than wall seconds. A program's own CPU seconds are not among them (JAX
runs programs on threads of its own): `gram` reports the process's CPU seconds over the call
beside (`cpu_seconds`), so a program's share is what the host phases leave of those.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

HOST_PHASES: tuple[str, ...] = ("forest", "setup", "columns", "layout", "pairs", "contract",
                                "assemble", "other")
PHASES: tuple[str, ...] = (*HOST_PHASES, "program")


class Seconds:
    """Thread-seconds per phase, wall-clock and CPU (the thread's own), added up over calls
    (thread-safe)."""

    def __init__(self) -> None:
        self._totals: dict[str, float] = dict.fromkeys(
            [*PHASES, *(f"{name}_cpu" for name in PHASES)], 0.0)
        self._lock = threading.Lock()
        self._local = threading.local()

    def add(self, name: str, seconds: float, cpu: float | None = None) -> None:
        """Adds to phase `name` (`cpu`: its CPU seconds, by default all of `seconds`)."""
        with self._lock:
            self._totals[name] += seconds
            self._totals[f"{name}_cpu"] += seconds if cpu is None else cpu

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Times the block as `name`; an enclosing phase of this thread pauses meanwhile."""
        stack = self._local.__dict__.setdefault("stack", [])
        now, cpu = time.perf_counter(), time.thread_time()
        if stack:
            outer = stack[-1]
            self.add(outer[0], now - outer[1], cpu - outer[2])
        stack.append([name, now, cpu])
        try:
            yield
        finally:
            now, cpu = time.perf_counter(), time.thread_time()
            _, since, cpu_since = stack.pop()
            self.add(name, now - since, cpu - cpu_since)
            if stack:
                stack[-1][1:] = [now, cpu]

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self._totals)


def report(now: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """The `stats` entries for the seconds between two snapshots: `<phase>_seconds` per
    phase, `host_seconds` (all host phases), `program_seconds`, and `host_cpu_seconds`, the
    CPU seconds of the threads in the host phases."""
    spent = {name: now[name] - before.get(name, 0.0) for name in now}
    out = {f"{name}_seconds": spent[name] for name in HOST_PHASES}
    out["host_seconds"] = sum(spent[name] for name in HOST_PHASES)
    out["program_seconds"] = spent["program"]
    out["host_cpu_seconds"] = sum(spent[f"{name}_cpu"] for name in HOST_PHASES)
    return out
