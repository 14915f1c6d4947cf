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
    return _walk(path)[0]


def _walk(path: str | os.PathLike) -> tuple[str | None, list[list]]:
    """(`untrusted_entries(path)`, the state of every folder walked, each taken before its
    entries were listed: `_folder_state`)."""
    me = _me()
    states = []
    try:
        states.append(_folder_state(path, ""))
    except OSError:
        pass  # (os.walk finds nothing either)
    for root, dirs, files in os.walk(path):
        closed = closed_to_others(root)
        for name in dirs + files:
            entry = os.path.join(root, name)
            try:
                st = os.lstat(entry)
            except OSError:
                continue  # removed meanwhile
            if stat.S_ISDIR(st.st_mode):
                if st.st_uid != me or (st.st_mode & _WRITABLE_BY_OTHERS and not closed):
                    return (f"{entry}: a folder of another user or writable by others "
                            f"({_describe(st)})"), states
                states.append([os.path.relpath(entry, path), *_state_of(st)])
                continue
            why = untrusted_entry_reason(st, closed=closed)
            if why is not None:
                return f"{entry}: {why}", states
    return None, states


# The stamp: walking every entry of a large cache folder costs a fraction of a second per
# process (24,000 entries: 0.24 s), and caches only grow. Where the folder is closed to others
# (mode 0700, how jkern creates it), only its owner or root can add, remove or rename entries
# in it, and any of those changes the ctime of the folder holding the entry, as does a chmod
# or chown of a folder (entry modes do not matter there, and only root can give an entry to
# another user). So after a full check finds every entry trusted, the folders' states
# (inode, ctime, mode, owner; taken before their entries were listed) are written to a
# stamp file in the folder, and a later check that finds the same states has nothing new to
# check. The stamp is read only if it is a regular file of ours that others cannot write;
# anything else, or any difference, means a full check (which then writes a new stamp).

STAMP = ".jkern-checked"


def checked_entries(path: str | os.PathLike) -> str | None:
    """`untrusted_entries(path)`, skipped where the folder is closed to others and its
    stamp (see above) matches its folders' states; a full check that finds nothing untrusted
    writes the stamp."""
    folder = Path(path)
    if not closed_to_others(folder):
        return untrusted_entries(folder)
    stamp = folder / STAMP
    recorded = _read_stamp(stamp)
    if recorded is not None:
        try:
            if recorded == [[r[0], *_folder_state(folder, r[0])[1:]] for r in recorded]:
                return None
        except (OSError, TypeError, IndexError):
            pass
    made = _stamp_file(stamp)  # (created before the states are taken: creating it changes them)
    why, states = _walk(folder)
    if why is None and made:
        _write_stamp(stamp, states)
    return why


def _state_of(st: os.stat_result) -> list:
    return [st.st_ino, st.st_ctime_ns, st.st_mode, st.st_uid]


def _folder_state(folder: str | os.PathLike, rel: str) -> list:
    st = os.lstat(os.path.join(folder, rel) if rel else folder)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{rel} is not a folder")
    return [rel, *_state_of(st)]


def _read_stamp(stamp: Path) -> list | None:
    """The stamp's folder states, if it is a regular file of ours others cannot write and
    holds a list of them (JSON data); else None."""
    import json

    try:
        fd = os.open(stamp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) |
                     getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if untrusted_entry_reason(os.fstat(fd)) is not None:
            return None
        try:
            states = json.loads(f.read(1 << 20))
        except (ValueError, OSError):
            return None
    ok = isinstance(states, list) and states and all(
        isinstance(r, list) and len(r) == 5 and isinstance(r[0], str) for r in states)
    return states if ok else None


def _stamp_file(stamp: Path) -> bool:
    """Whether the stamp exists as a regular file of ours (created empty, mode 0600, if
    missing)."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(stamp, flags, 0o600)
    except OSError:
        return False
    try:
        return untrusted_entry_reason(os.fstat(fd)) is None
    finally:
        os.close(fd)


def _write_stamp(stamp: Path, states: list[list]) -> None:
    """The states written into the existing stamp, in place (rewriting a file's contents
    leaves its folder's ctime as it was); a failure leaves no usable stamp, so the next
    check is a full one."""
    import json

    try:
        fd = os.open(stamp, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    with os.fdopen(fd, "wb") as f:
        if untrusted_entry_reason(os.fstat(fd)) is None:
            f.write(json.dumps(states).encode())


def make_private_dir(path: str | os.PathLike) -> Path:
    """Creates `path` (and missing parents) readable and writable by the current user alone;
    an existing folder is left as it is (its trust is checked separately)."""
    where = Path(path)
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    return where
