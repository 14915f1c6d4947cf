"""Progress on stderr for the long phases of training on trees (`progress=True`).

Between jitted programs only, never inside them: a phase line when a phase starts and one
with its wall time when it ends, one line per cutting-plane iteration, and a count of the
items done (parsing sentences), each rewritten in place on a terminal. The Gram engine draws
its own bar of row blocks (`jkern.kernels`).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any


def say(text: str) -> None:
    """One progress line on stderr."""
    sys.stderr.write(f"jkern: {text}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def phase(on: bool, what: str) -> Iterator[None]:
    """`what ...` when the block starts and `what: S s` when it ends (when `on`)."""
    if not on:
        yield
        return
    say(f"{what} ...")
    t0 = time.perf_counter()
    yield
    say(f"{what}: {time.perf_counter() - t0:.1f} s")


def rewrite(text: str) -> None:
    """`text` as a progress line on stderr: rewritten in place on a terminal (end the run of
    such lines with `end_line`), a line of its own otherwise."""
    sys.stderr.write(f"\r{text}\033[K" if sys.stderr.isatty() else f"{text}\n")
    sys.stderr.flush()


def cpa_iterations(on: bool, what: str, epsilon: float,
                   then: Callable[[Any], None] | None = None) -> Callable[[Any], None] | None:
    """A `cpa(callback=...)` reporting each iteration (when `on`): one line rewritten in
    place on a terminal, a line each otherwise; then it calls `then` (the caller's own
    callback, if any). End the run with `end_line`."""
    if not on:
        return then
    t0 = time.perf_counter()
    count = [0]

    def report(it: Any) -> None:
        count[0] += 1
        rewrite(f"jkern: {what}: iteration {count[0]}, {it.planes} planes, violation "
                f"{it.violation:.3g} over slack {it.slack:.3g} (stops within {epsilon:g}), "
                f"{time.perf_counter() - t0:.1f} s")
        if then is not None:
            then(it)

    return report


def end_line(on: bool) -> None:
    """Ends the line `rewrite` rewrote in place on a terminal (when `on`)."""
    if on and sys.stderr.isatty():
        sys.stderr.write("\n")
        sys.stderr.flush()


def counter(on: bool, what: str, total: int, unit: str) -> Callable[[int], None]:
    """A `tick(done)` reporting `done` of `total` `unit` (when `on`): one line rewritten in
    place on a terminal, otherwise a line each time another tenth is done; the call with
    `done == total` ends the line."""
    if not on:
        return lambda done: None
    t0 = time.perf_counter()
    tty = sys.stderr.isatty()
    shown = [-1]

    def tick(done: int) -> None:
        tenth = 10 * done // max(total, 1)
        if not tty and tenth == shown[0] and done < total:
            return
        shown[0] = tenth
        rewrite(f"jkern: {what}: {done:,}/{total:,} {unit}, {time.perf_counter() - t0:.1f} s")
        end_line(done >= total)

    return tick
