"""Sharing a Gram matrix's row blocks among the processes of a `jax.distributed` job.

Every process makes the same call; each computes the blocks `block_owners` gives it (on its
own devices), then the rows meet in one of two ways:

- `processes=True`: the rows travel to every process with `process_allgather` (JAX's
  collectives: gloo on CPU), in rounds of at most `ROUND_VALUES` values per process, so every
  process returns the whole matrix;
- `processes="shared"`: `out` is one memory-mapped file every process opened; each process
  writes its own rows and barriers (`sync_global_devices`) separate the writing, process 0's
  mirroring of a symmetric matrix, and the return. No matrix values pass through JAX.

A block's values do not depend on the process that computed it, so the matrix is the one a
single process computes, bit for bit.

Callers that hold more than the Gram (a Nyström projector's landmarks, a kernel expansion's
support inputs) check with `check_same` that every process holds the same ones: the Gram's own
check sees sizes and indices, not the trees behind them.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

from ..errors import InputError

# Values each process sends per gathering round (2^22: 32 MiB of float64): the extra memory of
# gathering is this times the process count, whatever the Gram's size.
ROUND_VALUES = 1 << 22


def shared_among(processes: Any, traced: bool) -> bool:
    """Whether a call with `processes` (checked: False, None, True or "shared"; not under a
    transformation) is shared among several processes: False in a one-process job."""
    if processes is None or processes is False:
        return False
    if processes is not True and processes != "shared":
        raise InputError(f"processes must be False, True or 'shared', got {processes!r}")
    if traced:
        raise InputError("processes= shares concrete Gram blocks among processes; under "
                         "jit/grad/vmap leave it unset")
    return jax.process_count() > 1


def processes_mode(processes: Any, out: Any, traced: bool) -> str | None:
    """`processes` checked: None (this process computes every block), "gather" or "shared".

    A one-process job (no `jax.distributed`, or one process) computes every block itself, so
    a script runs unchanged on a laptop and on a cluster."""
    several = shared_among(processes, traced)
    if processes is None or processes is False:
        return None
    if processes == "shared" and not isinstance(out, np.memmap):
        raise InputError("processes='shared' writes each process's rows into out=, a np.memmap "
                         "of one file that every process opened (e.g. np.lib.format.open_memmap "
                         "on a shared file system); without one use processes=True")
    if not several:
        return None
    return "gather" if processes is True else "shared"


def check_local(devices: list[Any]) -> None:
    """Refuses devices another process drives: blocks are computed where their process is."""
    me = jax.process_index()
    foreign = [d for d in devices if d.process_index != me]
    if foreign:
        raise InputError(f"devices= names {foreign}, devices of other processes; pass this "
                         f"process's own (jax.local_devices())")


def check_same_call(n: int, m: int, symmetric: bool, block_size: int | None, mode: str,
                    rows: np.ndarray, cols: np.ndarray | None, dtype: Any) -> None:
    """InputError unless every process asks for the same matrix: the block assignment and the
    gathering rounds are derived from these numbers, so a mismatch would mix up rows."""
    signature = np.array([n, m, symmetric, block_size or 0, mode == "shared",
                          np.dtype(dtype).itemsize,
                          zlib.crc32(np.ascontiguousarray(rows, np.int64).tobytes()),
                          0 if cols is None else
                          zlib.crc32(np.ascontiguousarray(cols, np.int64).tobytes())], np.uint32)
    every = np.asarray(multihost_utils.process_allgather(signature))
    differ = [p for p in range(len(every)) if not np.array_equal(every[p], signature)]
    if differ:
        raise InputError(f"processes=: process {jax.process_index()} and process(es) {differ} "
                         f"asked for different Gram matrices (sizes, indices, block_size, dtype "
                         f"or mode differ); every process must make the same call")


def fingerprint(values: Sequence[Any]) -> int:
    """A CRC-32 of `values` that is the same in every process that holds equal ones: arrays
    by dtype, shape and bytes, dataclasses (`Tree`, `Example`) field by field, anything else
    (tuples of labels, numbers) by its `repr`."""
    crc = 0
    stack = list(reversed(values))
    while stack:
        v = stack.pop()
        if isinstance(v, (np.ndarray, jax.Array)):
            a = np.ascontiguousarray(np.asarray(v))
            crc = zlib.crc32(f"{a.dtype.str}{a.shape}".encode(), crc)
            crc = zlib.crc32(a.tobytes(), crc)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            crc = zlib.crc32(type(v).__name__.encode(), crc)
            stack.extend(reversed([getattr(v, f.name) for f in dataclasses.fields(v)]))
        elif isinstance(v, (list, tuple)) and any(
                isinstance(e, (np.ndarray, jax.Array)) for e in v):
            crc = zlib.crc32(f"{type(v).__name__}{len(v)}".encode(), crc)
            stack.extend(reversed(v))
        else:
            crc = zlib.crc32(repr(v).encode(), crc)
    return crc


def check_same(what: str, values: Sequence[Any], advice: str) -> None:
    """InputError in every process unless all hold equal `values` (compared by `fingerprint`,
    one small all-gather): `what` names them, `advice` says what to do."""
    mine = np.array([fingerprint(values)], np.uint32)
    every = np.asarray(multihost_utils.process_allgather(mine)).reshape(-1)
    differ = [p for p in range(len(every)) if every[p] != mine[0]]
    if differ:
        raise InputError(f"processes=: process {jax.process_index()} and process(es) {differ} "
                         f"hold different {what}; {advice}")


def broadcast(tree: Any) -> Any:
    """`tree` (arrays of the same shapes in every process) as process 0 holds it, in every
    process: values derived in each process (an eigendecomposition) become one."""
    return multihost_utils.broadcast_one_to_all(tree)


def block_owners(spans: list[tuple[int, int]], m: int, symmetric: bool, count: int
                 ) -> list[int]:
    """The process of each row block: largest blocks first, each to the process with the
    fewest tree pairs so far (ties to the lowest index). Sizes only, so every process derives
    the same assignment."""
    pairs = [(e - s) * ((m - s) if symmetric else m) for s, e in spans]
    load = [0] * count
    owners = [0] * len(spans)
    for b in sorted(range(len(spans)), key=lambda b: (-pairs[b], b)):
        p = min(range(count), key=lambda p: (load[p], p))
        owners[b] = p
        load[p] += pairs[b]
    return owners


def _rounds(spans: list[tuple[int, int]], m: int, symmetric: bool, size: int
            ) -> list[list[tuple[int, int, int]]]:
    """One process's rows cut into gathering rounds of at most `size` values: each round a
    list of row ranges (s, e, first column). A row is never split (`size` >= m)."""
    rounds: list[list[tuple[int, int, int]]] = []
    current: list[tuple[int, int, int]] = []
    used = 0
    for s, e in spans:
        lo = s if symmetric else 0  # symmetric: the upper part only, `_mirror` does the rest
        width = m - lo
        r = s
        while r < e:
            take = min(e - r, (size - used) // width)
            if take == 0:
                rounds.append(current)
                current, used = [], 0
                continue
            current.append((r, r + take, lo))
            used += take * width
            r += take
    if current:
        rounds.append(current)
    return rounds


def gather_rows(result: np.ndarray, spans: list[tuple[int, int]], owners: list[int],
                symmetric: bool, release: Any) -> None:
    """Fills `result`'s rows computed by the other processes with theirs (every process calls
    it, with its own rows already in place). `release(result, s, e)` after rows s:e are
    written (a memory-mapped `result` drops them from memory)."""
    n, m = result.shape
    if n == 0 or m == 0:
        return
    count, me = jax.process_count(), jax.process_index()
    mine = [[spans[b] for b in range(len(spans)) if owners[b] == p] for p in range(count)]
    most = max(sum((e - s) * (m - (s if symmetric else 0)) for s, e in part) for part in mine)
    size = max(m, min(ROUND_VALUES, most))  # one round for a small matrix, one row at least
    plans = [_rounds(part, m, symmetric, size) for part in mine]
    send = np.zeros(size, result.dtype)
    for k in range(max(len(plan) for plan in plans)):
        pos = 0
        for s, e, lo in plans[me][k] if k < len(plans[me]) else []:
            values = result[s:e, lo:].ravel()
            send[pos:pos + len(values)] = values
            pos += len(values)
        received = np.asarray(multihost_utils.process_allgather(send))
        for p in range(count):
            if p == me or k >= len(plans[p]):
                continue
            pos = 0
            for s, e, lo in plans[p][k]:
                width = m - lo
                result[s:e, lo:] = received[p, pos:pos + (e - s) * width].reshape(e - s, width)
                pos += (e - s) * width
                release(result, s, e)


def barrier(name: str) -> None:
    """Waits until every process got here (`name` must be the same in all)."""
    multihost_utils.sync_global_devices(name)
