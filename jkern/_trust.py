"""Whether a folder or file on disk may be trusted with compiled code (the cache's trust model).

A compiled XLA executable is machine code: loading one from a place another user can write
runs their code. So jkern uses a cache folder only where nobody but the current user (or
root) can have put anything in it, the rule OpenSSH applies to `~/.ssh` (`StrictModes`):

- the folder is owned by the current user and is not writable by group or others;
- every folder above it is owned by the current user or root and is not writable by group or
  others, unless its sticky bit is set (like `/tmp`: others may add their own entries there
  but cannot rename or remove ours);
- each entry read from it is a regular file (not a link) owned by the current user and not
  writable by group or others (its mode does not matter inside a folder that group and
  others cannot enter at all, mode 0700, which is how jkern creates its folders: then nobody
  else can reach it, whatever the umask gave it).

Where the rule cannot be checked (no POSIX ownership, e.g. Windows) nothing is trusted.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def _me() -> int | None:
    geteuid = getattr(os, "geteuid", None)
    return geteuid() if geteuid is not None else None


def _describe(st: os.stat_result) -> str:
    return f"owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}"


def untrusted_dir_reason(path: str | os.PathLike) -> str | None:
    """None when `path` is an existing folder that only the current user (or root) can have
    written, by the rule above; else why not, in words."""
    me = _me()
    if me is None:
        return "file ownership cannot be checked on this platform"
    try:
        real = Path(os.path.realpath(path))
        st = os.stat(real)
    except OSError as err:
        return f"{path} cannot be read ({err.strerror or err})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{real} is not a folder"
    if st.st_uid != me:
        return f"{real} belongs to another user ({_describe(st)})"
    if st.st_mode & _WRITABLE_BY_OTHERS:
        return f"{real} is writable by group or others ({_describe(st)})"
    for above in real.parents:
        try:
            up = os.stat(above)
        except OSError as err:
            return f"{above} cannot be read ({err.strerror or err})"
        if up.st_uid not in (me, 0):
            return f"{above}, a folder above it, belongs to another user ({_describe(up)})"
        if up.st_mode & _WRITABLE_BY_OTHERS and not up.st_mode & stat.S_ISVTX:
            return (f"{above}, a folder above it, is writable by group or others without "
                    f"the sticky bit ({_describe(up)})")
    return None


def closed_to_others(folder: str | os.PathLike) -> bool:
    """Whether group and others have no access at all to `folder` (mode 0700 or tighter)."""
    try:
        return os.stat(folder).st_mode & 0o077 == 0
    except OSError:
        return False


def untrusted_entry_reason(st: os.stat_result, *, closed: bool = False) -> str | None:
    """None when a file with this `os.fstat`/`os.lstat` result may be read from a trusted
    folder: a regular file owned by the current user, not writable by group or others unless
    `closed` (its folder is closed to them, `closed_to_others`)."""
    me = _me()
    if me is None:
        return "file ownership cannot be checked on this platform"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != me:
        return f"belongs to another user ({_describe(st)})"
    if st.st_mode & _WRITABLE_BY_OTHERS and not closed:
        return f"writable by group or others ({_describe(st)})"
    return None


def untrusted_entries(path: str | os.PathLike) -> str | None:
    """None when every entry under the folder `path` (recursively, links not followed) is
    owned by the current user and not writable by group or others; else the first that is
    not, and why."""
    for root, dirs, files in os.walk(path):
        closed = closed_to_others(root)
        for name in dirs + files:
            entry = os.path.join(root, name)
            try:
                st = os.lstat(entry)
            except OSError:
                continue  # removed meanwhile
            if stat.S_ISDIR(st.st_mode):
                if st.st_uid != _me() or (st.st_mode & _WRITABLE_BY_OTHERS and not closed):
                    return (f"{entry}: a folder of another user or writable by others "
                            f"({_describe(st)})")
                continue
            why = untrusted_entry_reason(st, closed=closed)
            if why is not None:
                return f"{entry}: {why}"
    return None


def make_private_dir(path: str | os.PathLike) -> Path:
    """Creates `path` (and missing parents) readable and writable by the current user alone;
    an existing folder is left as it is (its trust is checked separately)."""
    where = Path(path)
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    return where
