"""Scheduling Gram blocks: row blocks over host threads, JAX devices and `jax.distributed`
processes (`_processes.py`), assembled on the host.

Each row block is one `GramEngine.block` call (planning on the host, recurrences compiled);
blocks run on `threads` host threads, so one block's numpy planning overlaps another's
compiled recurrences (both release the GIL). Finished blocks are copied straight into the
output array (a NumPy array, or the caller's `out`, e.g. a memory-mapped `.npy`), so a Gram
matrix costs its output plus one block's working set per thread. A block's values do not
depend on the thread or device that computed it, so neither does the Gram matrix.
"""

from __future__ import annotations

import concurrent.futures
import mmap
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._memory import release_freed_memory
from .._validate import aligned_empty, positive_int, shared_on_cpu
from ..errors import InputError
from ._base import check_out
from ._budget import (
    BYTES_PER_DIAG_PAIR,
    BYTES_PER_ENTRY,
    MIN_SLOTS,
    Budget,
    block_bytes,
    check_block,
    check_matrix,
    memory_budget,
)
from ._engine import MAX_BUFFER, GramEngine
from ._processes import (
    barrier,
    block_owners,
    check_local,
    check_same_call,
    gather_rows,
    processes_mode,
)
from ._recurrences import Params, batch_size, params_traced


def _aligned_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialized host array on a 64-byte boundary (XLA's CPU alignment), so that
    `_as_jax` can hand it to JAX without a copy. Large ones are anonymous mappings backed by
    huge pages where the system allows: first-touching a fresh Gram matrix page by page
    costs several times more than the values it holds."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    if size >= _HUGE and hasattr(mmap, "MADV_HUGEPAGE"):
        region = mmap.mmap(-1, size)
        try:
            region.madvise(mmap.MADV_HUGEPAGE)
        except OSError:
            pass
        return np.frombuffer(region, dtype, int(np.prod(shape))).reshape(shape)
    return aligned_empty(shape, dtype)


# Host arrays at least this large (bytes) are mapped with huge pages (`_aligned_empty`).
_HUGE = 1 << 22


def _as_jax(result: np.ndarray) -> jax.Array:
    """The finished host array as a JAX array: shared, not copied, when JAX computes on the
    CPU (a Gram matrix then costs its size once, not twice)."""
    return shared_on_cpu(result)


def _run_blocks(jobs: list[Callable[[], None]], threads: int, progress: bool) -> None:
    t0 = time.perf_counter()
    if threads <= 1 or len(jobs) <= 1:
        for done, job in enumerate(jobs):
            job()
            if progress:
                _progress(done + 1, len(jobs), time.perf_counter() - t0)
        return
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(job) for job in jobs]
        for done, fut in enumerate(concurrent.futures.as_completed(futures)):
            fut.result()
            if progress:
                _progress(done + 1, len(jobs), time.perf_counter() - t0)


def _devices(devices: Sequence[Any] | None, traced: bool) -> list[Any] | None:
    if devices is None:
        return None
    devices = list(devices)
    if not devices:
        raise InputError("devices must name at least one JAX device")
    if traced:
        raise InputError("devices= shards concrete Gram blocks; under jit/grad/vmap the "
                         "blocks run in the tracing thread: leave devices unset there")
    check_local(devices)
    return devices


def compute_gram(
    engine: GramEngine,
    params: Params,
    rows: np.ndarray,
    cols: np.ndarray | None,
    *,
    block_size: int | None = None,
    progress: bool = False,
    threads: int = 2,
    devices: Sequence[Any] | None = None,
    processes: bool | str = False,
    out: np.ndarray | None = None,
    max_memory: int | str | None = None,
) -> Any:
    """The Gram matrix of trees `rows` against `cols` (None: `rows` against itself, symmetric).

    Returns a JAX array, or `out` (filled in place) when given. Under a JAX transformation
    (traced parameters: grad, vmap, jit) blocks run in the calling thread, where the trace
    lives, and are assembled with JAX operations.

    With `devices` (JAX devices, e.g. `jax.devices()`), the row blocks are spread over them:
    block b runs on `devices[b % len(devices)]`, with at least one host thread per device.

    With `processes` (True or "shared") in a `jax.distributed` job, every process makes the
    same call and computes its share of the row blocks (on its own `devices`, local ones
    only); with True every process returns the whole matrix (gathered), with "shared" each
    writes its rows into `out`, a memory-mapped file they all opened (`_processes.py`).

    `max_memory` (bytes, or a size such as "8G"; default `JKERN_MAX_MEMORY`, else half the
    memory the process can take, `_budget.py`): the Gram matrix (unless written into `out`)
    and each block's working set must fit it, checked before the work; else
    `MemoryBudgetError`.

    Concrete parameters with a batch axis (`batch_size`, made by `_traced.py` for a `jax.vmap`
    over the kernel's parameters) give the `[P, n, m]` Grams of the P values, from one plan
    and one pass over the blocks (not with `out` or `processes`).
    """
    n = len(rows)
    symmetric = cols is None
    m = n if symmetric else len(cols)
    if block_size is not None:  # (a negative one left the matrix unwritten)
        block_size = positive_int("block_size", block_size)
    traced = params_traced(params)
    devices = _devices(devices, traced)
    mode = processes_mode(processes, out, traced)
    batch = None if traced else batch_size(params)
    lead = () if batch is None else (batch,)
    if batch is not None and (out is not None or mode is not None):
        raise InputError("a batch of kernel parameters (jax.vmap over them) gives its Grams as "
                         "one array: leave out= and processes= unset")
    transposed = _transposed(n, m, symmetric, block_size, mode, out)
    if transposed:  # row blocks of the m trees against the n: the Gram's column blocks
        assert cols is not None
        rows, cols = cols, rows
    spans = row_blocks(m, n, False, None) if transposed else row_blocks(n, m, symmetric,
                                                                        block_size)
    budget = memory_budget(max_memory)
    if out is None:
        check_matrix(budget, n, m, engine.dtype.itemsize * (batch or 1))
    if symmetric:  # a tree too large alone: refused at once, named, before any block runs
        check_trees(engine, budget, rows)
    params_on: dict[Any, Params] = {None: params}
    # each thread holds a block in memory: no more of them than cores (threads=1000 once
    # meant a thousand blocks at once), and one per device at least
    threads = min(threads, _cores())
    if devices is not None:
        threads = max(threads, len(devices))
        # The parameters (SPTK's word vectors among them) go to each device once, not per block.
        params_on = {d: jax.device_put(params, d) for d in devices}

    def block(b: int, s: int, e: int) -> tuple[jax.Array, int]:
        """The padded block of rows s:e (against rows[s:] when symmetric), on device b's
        (b counts this process's blocks)."""
        col_ids = rows[s:] if cols is None else cols
        device = None if devices is None else devices[b % len(devices)]
        return engine.block(rows[s:e], col_ids, params_on[device], device, budget), len(col_ids)

    if traced:
        if out is not None:
            raise InputError("out= takes concrete Gram matrices; under jit/grad/vmap leave it "
                             "unset")
        parts = []
        for b, (s, e) in enumerate(spans):
            part, width = block(b, s, e)
            parts.append(part[: e - s, :width])
        if not parts:
            return jnp.zeros((n, m), engine.dtype)
        if not symmetric:
            whole = jnp.concatenate(parts, axis=0)
            return whole.T if transposed else whole
        upper = jnp.concatenate(
            [jnp.pad(p, ((0, 0), (s, 0))) for (s, _), p in zip(spans, parts)], axis=0)
        return jnp.triu(upper) + jnp.triu(upper, 1).T

    result = (_aligned_empty((*lead, n, m), engine.dtype) if out is None
              else check_out(out, (n, m), engine.dtype))
    phase = engine.seconds.phase

    def place(b: int, s: int, e: int) -> None:
        """Rows s:e as one block, or (when its buffer would pass MAX_BUFFER slots, or its
        working set the memory budget) as two halves, each a block of its own: a block's
        working set stays bounded (a single row past the budget is refused)."""
        if e - s > 1 and _too_big(engine, budget, rows[s:e],
                                  rows[s:] if cols is None else cols, batch or 1):
            mid = (s + e) // 2
            place(b, s, mid)
            place(b, mid, e)
            return
        part, width = block(b, s, e)
        with phase("program"):
            values = np.asarray(part)[..., : e - s, :width]  # waits for the block
        with phase("assemble"):
            if transposed:  # the block holds columns s:e of the Gram
                result[..., :, s:e] = np.swapaxes(values, -1, -2)
            else:  # symmetric: rows s:e against s: (the upper triangle; `_mirror` the rest)
                result[..., s:e, s if symmetric else 0:] = values
            del part, values
            release_pages(result, s, e)
            release_freed_memory()

    def job(b: int, s: int, e: int) -> Callable[[], None]:
        def run() -> None:
            with phase("other"):  # what the phases inside leave: the block's Python glue
                place(b, s, e)
        return run

    if spans:  # the first block is about as large as any (as many tree pairs): its buffer
        # size, fixed before the threads start, serves them all, so the compiled programs do
        # not depend on which thread got there first
        e = spans[0][1]
        engine.reserve(min(engine.block_slots(rows[:e], rows if cols is None else cols),
                           MAX_BUFFER))

    mine = spans
    if mode is not None:
        check_same_call(n, m, symmetric, block_size, mode, rows, cols, engine.dtype)
        owners = block_owners(spans, m, symmetric, jax.process_count())
        mine = [span for span, owner in zip(spans, owners) if owner == jax.process_index()]
    _run_blocks([job(b, s, e) for b, (s, e) in enumerate(mine)], threads, progress)
    if mode == "gather":
        gather_rows(result, spans, owners, symmetric, release_pages)
    if mode == "shared":
        # every process's rows are in the file (each block was flushed when written) before
        # process 0 mirrors them, and the mirror is in before anyone returns
        barrier("jkern.compute_gram: rows written")
        if symmetric and jax.process_index() == 0:
            _mirror(result)
            release_pages(result)
        barrier("jkern.compute_gram: matrix complete")
        release_pages(result)  # pages mapped before the mirror are read again from the file
    elif symmetric:
        with phase("assemble"):
            for one in (result,) if batch is None else result:
                _mirror(one)
    return result if out is not None else _as_jax(result)


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def _too_big(engine: GramEngine, budget: Budget | None, rows: np.ndarray,
             cols: np.ndarray, batch: int = 1) -> bool:
    """Whether the block of `rows` against `cols` (for `batch` parameter values) is past
    MAX_BUFFER slots or the budget."""
    slots = engine.block_slots(rows, cols)
    return slots > MAX_BUFFER or (budget is not None and not budget.fits(block_bytes(
        slots, slots, len(rows) * len(cols), engine.dtype.itemsize * batch)))


def _transposed(n: int, m: int, symmetric: bool, block_size: int | None, mode: str | None,
                out: np.ndarray | None) -> bool:
    """Whether an n x m cross block is computed as its transpose (the m trees as row blocks
    against the n as columns). Every row block shares one planned column side, and a larger
    collection shares more subtrees among its trees, so putting the larger side on the
    columns means fewer distinct node pairs per tree pair (the Nystrom block K(X, L) of the
    5,401 TREC trees against 1,000 landmarks: 3% fewer Delta entries). Not with a
    `block_size` (it counts the caller's rows), across processes (their row shares), or into
    a memory-mapped `out` (written and released row range by row range)."""
    return (not symmetric and n > m and block_size is None and mode is None
            and getattr(out, "_mmap", None) is None)


def _mirror(result: np.ndarray, band: int = 256) -> None:
    """Fills the strict lower triangle from the upper one (exact symmetry: the upper
    triangle wins), one `band` x `band` tile at a time: transposed tiles stay in cache, and
    a memory-mapped `result` holds only a few tiles' pages at once."""
    n = result.shape[0]
    for r0 in range(0, n, band):
        r1 = min(r0 + band, n)
        for c0 in range(0, r0, band):
            c1 = min(c0 + band, r0)
            result[r0:r1, c0:c1] = result[c0:c1, r0:r1].T
            release_pages(result, c0, c1)
        square = result[r0:r1, r0:r1]
        result[r0:r1, r0:r1] = np.triu(square) + np.triu(square, 1).T
        release_pages(result, r0, r1)


def release_pages(result: np.ndarray, start: int | None = None, stop: int | None = None
                  ) -> None:
    """For a memory-mapped `result`: writes the dirty pages of its rows `start:stop` (all
    rows by default) to the file and drops them from this process's memory (they are read
    back on demand), so a Gram larger than memory is written holding only a few blocks'
    pages. (Reading a page of a mapped file maps its neighbours too, so rows read are
    dropped as well as rows written.) A no-op for an ordinary array."""
    mm = getattr(result, "_mmap", None)
    if mm is None or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    if start is None or not result.flags.c_contiguous:
        mm.flush()
        mm.madvise(mmap.MADV_DONTNEED)
        return
    part = result[start:stop]
    base = np.frombuffer(mm, np.uint8).ctypes.data
    first = part.ctypes.data - base
    first -= first % mmap.PAGESIZE
    end = min(len(mm), -(-(part.ctypes.data - base + part.nbytes) // mmap.PAGESIZE)
              * mmap.PAGESIZE)
    if end > first:
        mm.flush(first, end - first)
        mm.madvise(mmap.MADV_DONTNEED, first, end - first)


# Tree pairs per row block when the caller leaves `block_size` unset: per-block costs (the
# column side's planning, bucket tails) are then spread over as many pairs in a cross block
# as in a square one, whatever the number of columns.
BLOCK_PAIRS = 1 << 19
_MIN_ROWS, _MAX_ROWS = 32, 256


def row_blocks(n: int, m: int, symmetric: bool, block_size: int | None) -> list[tuple[int, int]]:
    """Row spans (s, e) of the blocks of an n x m Gram (symmetric: rows s:e against s:).

    `block_size` rows each when given; otherwise about `BLOCK_PAIRS` tree pairs each (so a
    symmetric Gram's blocks grow as their column ranges shrink), between 32 and 256 rows,
    and at least two blocks from 64 rows up.
    The spans depend only on the sizes, never on the thread count, so neither do the Delta
    counts.
    """
    if block_size is not None:
        return [(s, min(s + block_size, n)) for s in range(0, n, block_size)]
    spans, s = [], 0
    while s < n:
        width = (n - s) if symmetric else m
        size = min(max(BLOCK_PAIRS // max(width, 1), _MIN_ROWS), _MAX_ROWS)
        if s == 0 and n >= 2 * _MIN_ROWS:  # two blocks at least: work for a second thread
            size = min(size, -(-n // 2))
        spans.append((s, min(s + size, n)))
        s += size
    return spans


def check_trees(engine: GramEngine, budget: Budget | None, trees: np.ndarray,
                per_entry: int = BYTES_PER_ENTRY) -> None:
    """Refuses (`MemoryBudgetError`, naming it) a tree whose node pairs with itself alone
    would not fit the budget. Only trees large enough to matter are counted."""
    if budget is None or not len(trees):
        return
    f = engine.forest
    size = np.diff(f.tree_ptr)[trees]  # distinct nodes: their square bounds the pairs
    itemsize = engine.dtype.itemsize
    bound = size.astype(np.float64) ** 2 * (per_entry + 2 * itemsize) + MIN_SLOTS * itemsize
    if budget.fits(float(bound.max())):
        return
    big = np.flatnonzero(bound > budget.limit)
    pairs = engine.self_pairs(trees[big])
    k = int(np.argmax(pairs))  # the largest: the first one refused
    i, t = int(big[k]), int(trees[big[k]])
    nodes = int(f.count[f.tree_ptr[t]:f.tree_ptr[t + 1]].sum())
    check_block(budget, entries=int(pairs[k]), slots=int(pairs[k]), cells=0,
                itemsize=engine.dtype.itemsize, per_entry=per_entry, index=i,
                tree=f"tree {i} (0-based) of the {len(trees):,} given ({nodes:,} nodes)")


def compute_diag(engine: GramEngine, params: Params, idx: np.ndarray, *,
                 block_size: int = 512, threads: int = 2,
                 max_memory: int | str | None = None) -> Any:
    """Self-kernels K(t, t) of the trees `idx` (a JAX array); only the node pairs that share a
    tree are computed. Blocks of at most `block_size` trees, halved until their buffer fits
    the one the engine already uses (the same compiled programs) and their working set
    `max_memory` (as `compute_gram`). A batch of parameter values gives `[P, len(idx)]`."""
    idx = np.asarray(idx, np.int64)
    batch = None if params_traced(params) else batch_size(params)
    lead = () if batch is None else (batch,)
    memory = memory_budget(max_memory)
    check_trees(engine, memory, idx, BYTES_PER_DIAG_PAIR)
    budget = max(engine.buffer_slots(), _DIAG_SLOTS)

    def fit(part: np.ndarray) -> list[np.ndarray]:
        if len(part) <= 1:
            return [part]
        slots = engine.diag_slots(part)  # (its pairs within trees are at most as many)
        if slots <= budget and (memory is None or memory.fits(block_bytes(
                slots, slots, 0, engine.dtype.itemsize * (batch or 1), BYTES_PER_DIAG_PAIR))):
            return [part]
        half = len(part) // 2
        return fit(part[:half]) + fit(part[half:])

    parts = [p for s in range(0, len(idx), block_size) for p in fit(idx[s:s + block_size])]
    if params_traced(params):
        values = [engine.diag_block(p, params, None, memory)[: len(p)] for p in parts]
        return jnp.concatenate(values) if values else jnp.zeros(0, engine.dtype)
    result = _aligned_empty((*lead, len(idx)), engine.dtype)
    offsets = np.cumsum([0] + [len(p) for p in parts])

    def job(k: int) -> Callable[[], None]:
        def run() -> None:
            part = parts[k]
            with engine.seconds.phase("other"):
                values = engine.diag_block(part, params, None, memory)
                with engine.seconds.phase("program"):  # waits for the block
                    values = np.asarray(values)
                result[..., offsets[k]:offsets[k + 1]] = values[..., : len(part)]
        return run

    _run_blocks([job(k) for k in range(len(parts))], threads, False)
    return _as_jax(result)


# Buffer slots a block of self-kernels may use when no Gram block has set the size yet.
_DIAG_SLOTS = 1 << 20


def _progress(done: int, total: int, elapsed: float) -> None:
    width = 30
    fill = width * done // total
    eta = elapsed / done * (total - done)
    sys.stderr.write(
        f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} blocks "
        f"{elapsed:6.1f}s elapsed, ~{eta:5.1f}s left"
    )
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()
