"""Memory budgets: a Gram job's size is checked before its work (issue 32).

A tree kernel compares every pair of nodes that can match (same production for ST/SST, same
label for PTK), so the work between two trees grows with the product of their sizes, and the
engine holds a block's Delta entries at once: one 50,000-node chain of a single label is 2.5
billion node pairs, 130 GiB of working memory. Each block's working set is estimated from its
pair counts (and a Gram matrix from its shape) before anything is allocated, and a job past
the budget is refused with a `MemoryBudgetError` that says how big it is, instead of ending
in a MemoryError or the kernel's OOM killer.

The budget is `max_memory=` (a `gram` option: bytes, or a size such as "8G"), else the
environment variable `JKERN_MAX_MEMORY` (the same forms; "unlimited" turns the check off),
else half of the memory this process can still take, and at least 1 GiB: the least of the
system's available memory (`MemAvailable` in /proc/meminfo), the address-space limit
(`RLIMIT_AS`, `ulimit -v`) less the process's mapped size, and its cgroup's memory limit less
the cgroup's usage. Each block's working set and the Gram matrix are checked against it
apart (half: the other half leaves room for both, and for a second thread's block).
"""

from __future__ import annotations

import numbers
import os
import re

from ..errors import InputError, MemoryBudgetError

ENV = "JKERN_MAX_MEMORY"
# Working set per Delta entry of a Gram block, besides its buffer: the (row, member, slot)
# index arrays and their sorting and planning temporaries (measured on single-label chains,
# SST and PTK, float64: 54 bytes an entry with the buffer, 2 to 36 M entries).
BYTES_PER_ENTRY = 48
# The same for a block of self-kernels (`GramEngine._diag`), per pair of nodes within a tree
# (it lists every occurrence pair before keeping the distinct ones: measured 139 bytes with
# the buffer).
BYTES_PER_DIAG_PAIR = 144
# The default budget never falls below this: blocks are at most a few hundred MB, so a
# machine short of memory for a moment does not refuse ordinary jobs.
_FLOOR = 1 << 30
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)


class Budget:
    """A memory budget: `limit` bytes, and where it came from (`source`, for the messages).

    The default budget (`floor` set) reads the system's figures only when a job comes near
    its floor: every smaller job fits whatever they say, and reading them costs a
    millisecond, more than a small Gram.
    """

    def __init__(self, limit: int | None, source: str, floor: int = 0) -> None:
        self._limit = limit
        self._source = source
        self.floor = floor

    @property
    def limit(self) -> int:
        if self._limit is None:
            room = headroom()
            if room is None:  # nothing known: no limit
                self._limit, self._source = 1 << 62, "the default: no memory figures found"
            else:
                self._limit = max(room // 2, self.floor)
                self._source = f"the default: half of the {human(room)} this process can " \
                               "still take"
        return self._limit

    @property
    def source(self) -> str:
        _ = self.limit
        return self._source

    def fits(self, need: float) -> bool:
        """Whether `need` bytes are within the budget."""
        return need <= self.floor or need <= self.limit

    def __repr__(self) -> str:
        return f"Budget({self._limit!r}, {self._source!r})"


def parse_size(value: object, what: str = "max_memory") -> int | None:
    """Bytes from an int, or a string such as "512M", "8G", "1.5GiB" (powers of 1,024);
    None for "unlimited"/"none"/"off"."""
    if isinstance(value, bool):
        raise InputError(f"{what} must be a size in bytes or a string such as '8G', got {value!r}")
    if isinstance(value, numbers.Real):  # (numpy numbers too)
        size = float(value)
        if not 0 < size < float("inf"):
            raise InputError(f"{what} must be a positive size in bytes, got {value!r}")
        return max(1, int(size))
    if isinstance(value, str):
        if value.strip().lower() in ("unlimited", "none", "off"):
            return None
        match = _SIZE.fullmatch(value)
        if match and float(match.group(1)) > 0:
            return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    raise InputError(f"{what} must be a size such as 8G, 512M or a number of bytes (or "
                     f"'unlimited'), got {value!r}")


def memory_budget(max_memory: object = None) -> Budget | None:
    """The budget of a job: `max_memory`, else `JKERN_MAX_MEMORY`, else the default (see
    the module's docstring); None when the check is off."""
    if max_memory is not None:
        limit = parse_size(max_memory)
        return None if limit is None else Budget(limit, f"max_memory={max_memory!r}")
    env = os.environ.get(ENV, "").strip()
    if env:
        limit = parse_size(env, ENV)
        return None if limit is None else Budget(limit, f"{ENV}={env}")
    return Budget(None, "the default", floor=_FLOOR)


def headroom() -> int | None:
    """Bytes this process can still allocate, as far as the system says (None: unknown)."""
    known = [b for b in (_available(), _address_space_left(), _cgroup_left()) if b is not None]
    return min(known) if known else None


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _field(text: str | None, name: str) -> int | None:
    """The number after `name` in a `/proc` or cgroup key-value file."""
    for line in (text or "").splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2 and parts[0] == name and parts[1].isdigit():
            return int(parts[1])
    return None


def _available() -> int | None:
    kb = _field(_read("/proc/meminfo"), "MemAvailable")
    if kb is not None:
        return kb * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _address_space_left() -> int | None:
    try:
        import resource
    except ImportError:  # not on a Unix
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    mapped = _field(_read("/proc/self/status"), "VmSize")
    return max(0, soft - (mapped or 0) * 1024)


def _cgroup_left() -> int | None:
    """The cgroup's memory limit less its usage (reclaimable file pages not counted as
    used), cgroup v2 or v1; None without a limit."""
    own = "/"
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        if line.startswith("0::"):
            own = line[3:].strip() or "/"
    for base in {f"/sys/fs/cgroup{own.rstrip('/')}", "/sys/fs/cgroup"}:
        limit = (_read(f"{base}/memory.max") or "").strip()
        if limit.isdigit():
            used = int((_read(f"{base}/memory.current") or "0").strip() or 0)
            used -= _field(_read(f"{base}/memory.stat"), "inactive_file") or 0
            return max(0, int(limit) - used)
    v1 = "/sys/fs/cgroup/memory"
    limit = (_read(f"{v1}/memory.limit_in_bytes") or "").strip()
    if limit.isdigit() and int(limit) < 1 << 60:
        used = int((_read(f"{v1}/memory.usage_in_bytes") or "0").strip() or 0)
        used -= _field(_read(f"{v1}/memory.stat"), "total_inactive_file") or 0
        return max(0, int(limit) - used)
    return None


def human(n: float) -> str:
    """Bytes for a person: 18.6 GiB."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# The smallest Delta buffer (`_engine._MIN_BUFFER`), in slots.
MIN_SLOTS = 1 << 20


def _ladder(n: int, least: int = MIN_SLOTS) -> int:
    size = least
    while size < n:
        size *= 2
    return size


def block_bytes(entries: int, slots: int, cells: int, itemsize: int,
                per_entry: int = BYTES_PER_ENTRY) -> int:
    """A Gram block's working set: `entries` Delta entries (or, for self-kernels, node pairs
    within trees) to plan and compute, a buffer of `slots` values, and `cells` values of the
    block itself (its scatter target and the result)."""
    return entries * per_entry + _ladder(slots) * itemsize + 2 * cells * itemsize


_RAISE = ("raise the budget with max_memory= (a gram option, e.g. max_memory='64G') or the "
          f"environment variable {ENV} if the machine has the memory")


def check_block(budget: Budget | None, *, entries: int, slots: int, cells: int,
                itemsize: int, per_entry: int = BYTES_PER_ENTRY, tree: str = "",
                index: int | None = None) -> None:
    """Refuses (`MemoryBudgetError`) a block whose working set passes the budget. `tree`
    names the tree at fault when known ("tree 3 (0-based) of the 10 given (50,000 nodes)"),
    `index` its position."""
    if budget is None:
        return
    need = block_bytes(entries, slots, cells, itemsize, per_entry)
    if budget.fits(need):
        return
    where = f"{tree} has" if tree else "a Gram block of these trees has"
    raise MemoryBudgetError(
        f"{where} {max(entries, slots):,} node pairs to compare (nodes that can match: same "
        f"production or label), about {human(need)} of working memory, over the memory "
        f"budget of {human(budget.limit)} ({budget.source}); the work grows with the "
        f"product of two trees' sizes: split or leave out the largest trees, or {_RAISE}",
        needed=need, budget=budget.limit, node_pairs=max(entries, slots), index=index)


def check_matrix(budget: Budget | None, n: int, m: int, itemsize: int,
                 what: str = "Gram matrix", hint: str = "") -> None:
    """Refuses a dense n x m matrix held in memory (a Gram matrix, or `what`) past the
    budget; `hint` says what to do instead (default: a tree kernel's Gram matrix)."""
    if budget is None:
        return
    need = n * m * itemsize
    if budget.fits(need):
        return
    hint = hint or ("pass out= a memory-mapped array (numpy.lib.format.open_memmap) to write "
                    "it to disk block by block, compute it in parts (rows of x1 at a time)")
    raise MemoryBudgetError(
        f"the {n:,} x {m:,} {what} takes {human(need)} ({8 * itemsize}-bit values), over the "
        f"memory budget of {human(budget.limit)} ({budget.source}): {hint}, or {_RAISE}",
        needed=need, budget=budget.limit)


def check_landmarks(budget: Budget | None, m: int, itemsize: int) -> None:
    """Refuses `m` Nystrom landmarks whose W = K(L, L) and its eigendecomposition (about five
    m x m matrices: W, its copy, the eigenvectors, the solver's workspace) pass the budget."""
    need = 5 * m * m * itemsize
    if budget is None or budget.fits(need):
        return
    raise MemoryBudgetError(
        f"{m:,} landmarks: W = K(L, L) and its eigendecomposition take about {human(need)} "
        f"(five {m:,} x {m:,} matrices), over the memory budget of {human(budget.limit)} "
        f"({budget.source}): use fewer landmarks (a few thousand usually suffice), or "
        f"{_RAISE}", needed=need, budget=budget.limit)
