"""The compilation cache's trust model (issue 32): nothing planted in a cache folder runs, a
folder someone else can write is not used (one warning, the job still runs), importing jkern
changes no JAX setting, and no jkern module unpickles anything."""

from __future__ import annotations

import ast
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_executables import _args, _scaled_sum

import jkern
from jkern import _trust
from jkern._executables import StoredProgram, executables_dir
from jkern.errors import CacheWarning

REPO = Path(__file__).resolve().parents[1]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

_GRAM = """
import json, sys, jax
jax.config.update("jax_enable_x64", True)
import numpy as np, jkern
trees = [jkern.trees.parse_penn(t) for t in ("(S (A a) (B b))", "(S (A a))", "(S (B c))")]
g = np.asarray(jkern.gram(jkern.PTK(0.4, 0.4), trees, dtype="float64", threads=1))
print(json.dumps({"gram": g.tolist(), "cache": jax.config.jax_compilation_cache_dir,
                  **jkern.program_stats()}))
"""


def _run(code: str, cache: Path | str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "JKERN_NO_CACHE"}
    env.update(JKERN_CACHE_DIR=str(cache), **extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, cwd=REPO)


def _cache_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CacheWarning" in line]


def _gram(cache: Path | str) -> dict:
    import json

    out = _run(_GRAM, cache)
    assert out.returncode == 0, out.stderr[-3000:]
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "stderr": out.stderr}


class _Planted:
    """A pickle that runs a shell command when loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_import_changes_no_jax_setting_and_the_first_computation_turns_the_cache_on(tmp_path):
    code = ("import jax, jkern, jkern.kernels, jkern.svm, jkern.kda, jkern.pa, jkern.ds\n"
            "jkern.SST\n"
            "print(jax.config.jax_compilation_cache_dir)\n"
            "jkern.SST(0.4).gram([jkern.trees.parse_penn('(S (A a))')])\n"
            "print(jax.config.jax_compilation_cache_dir)\n")
    out = _run(code, tmp_path / "xla")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["None", str(tmp_path / "xla")]
    assert (tmp_path / "xla").is_dir()
    assert (tmp_path / "xla").stat().st_mode & 0o077 == 0  # created private
    out = _run(code, tmp_path / "xla", JKERN_NO_CACHE="1")
    assert out.stdout.split() == ["None", "None"]


def test_a_planted_pickle_never_runs(tmp_path):
    cache = tmp_path / "xla"
    first = _gram(cache)
    store = cache / "jkern-executables"
    stored = sorted(store.glob("*.jkx"))
    assert stored, "the first run stores its executables"
    marker = tmp_path / "planted-command-ran"
    planted = pickle.dumps(_Planted(marker))
    for path in stored:  # every stored program, and the old pickle format beside it
        path.write_bytes(planted)
        path.with_suffix(".bin").write_bytes(planted)
    second = _gram(cache)
    assert not marker.exists()
    assert second["gram"] == first["gram"]
    assert second["loaded"] == 0  # compiled afresh, the planted files dropped
    assert not any(p.exists() and p.read_bytes() == planted for p in stored)
    assert not marker.exists()


def test_a_folder_others_can_write_is_not_used_and_the_job_runs(tmp_path):
    cache = tmp_path / "shared-xla"
    cache.mkdir()
    cache.chmod(0o777)
    got = _gram(cache)
    assert got["cache"] is None
    assert len(_cache_warnings(got["stderr"])) == 1
    assert "writable by group or others" in got["stderr"]
    assert list(cache.iterdir()) == []  # nothing written there either
    want = _gram(tmp_path / "private")
    assert want["cache"] == str(tmp_path / "private")
    assert got["gram"] == want["gram"]


def test_entry_modes_do_not_matter_inside_a_folder_closed_to_others(tmp_path):
    folder = tmp_path / "closed"
    folder.mkdir(mode=0o700)
    (folder / "entry").write_bytes(b"x")
    (folder / "entry").chmod(0o666)  # e.g. umask 000: nobody else can reach it anyway
    assert _trust.untrusted_entries(folder) is None
    folder.chmod(0o755)
    assert "writable by group or others" in (_trust.untrusted_entries(folder) or "")


def test_a_parent_others_can_write_without_the_sticky_bit_is_not_trusted(tmp_path):
    parent = tmp_path / "open"
    (parent / "xla").mkdir(parents=True)
    parent.chmod(0o777)
    assert "a folder above it" in (_trust.untrusted_dir_reason(parent / "xla") or "")
    parent.chmod(0o777 | 0o1000)  # sticky, like /tmp: others cannot rename our folder
    assert _trust.untrusted_dir_reason(parent / "xla") is None


@pytest.mark.skipif(not IS_ROOT, reason="needs root to give a folder to another user")
def test_a_folder_or_entry_of_another_user_is_not_used(tmp_path):
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    assert "belongs to another user" in (_trust.untrusted_dir_reason(cache) or "")
    got = _gram(cache)
    assert got["cache"] is None and len(_cache_warnings(got["stderr"])) == 1
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o700)
    (ours / "entry").write_bytes(b"x")
    os.chown(ours / "entry", 65534, 65534)
    assert "belongs to another user" in (_trust.untrusted_entries(ours) or "")
    got = _gram(ours)  # JAX's own cache is refused for an entry it did not write
    assert got["cache"] is None and len(_cache_warnings(got["stderr"])) == 1


@pytest.mark.parametrize("tamper", ["writable by others", "a link", "bit flip", "truncated"])
def test_an_untrusted_or_damaged_entry_is_not_loaded(cache_at, tamper, tmp_path):
    StoredProgram(_scaled_sum, static_argnames=("times",))(*_args(), times=3)
    (path,) = executables_dir().glob("_scaled_sum-*.jkx")
    data = path.read_bytes()
    if tamper == "writable by others":  # in a folder others can enter (0700 would hide it)
        path.parent.chmod(0o755)
        path.chmod(0o666)
    elif tamper == "a link":
        elsewhere = tmp_path / "elsewhere.jkx"
        elsewhere.write_bytes(data)
        path.unlink()
        path.symlink_to(elsewhere)
    elif tamper == "bit flip":
        flipped = bytearray(data)
        flipped[len(flipped) // 2] ^= 0x40
        path.write_bytes(bytes(flipped))
    else:
        path.write_bytes(data[: len(data) // 2])
    loaded_before = jkern.program_stats()["loaded"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = StoredProgram(_scaled_sum, static_argnames=("times",))(*_args(), times=3)
    np.testing.assert_array_equal(np.asarray(got), 1.5 * np.arange(4.0))
    assert jkern.program_stats()["loaded"] == loaded_before
    if tamper in ("writable by others", "a link"):
        assert any(issubclass(w.category, CacheWarning) for w in caught)


def test_the_command_line_runs_with_one_warning_where_the_cache_folder_is_unusable(tmp_path):
    trees = tmp_path / "trees.txt"
    trees.write_text("(S (A a) (B b))\n(S (A a))\n")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    for cache in (not_a_folder / "x", "/etc/passwd/x"):
        out = _run("import sys; from jkern.cli import main; "
                   f"sys.exit(main(['gram', '-k', 'sst', {str(trees)!r}, '--out', "
                   f"{str(tmp_path / 'g.npy')!r}]))", cache)
        assert out.returncode == 0, out.stderr
        lines = [x for x in out.stderr.splitlines() if x.startswith("jkern: warning:")]
        assert len(lines) == 1 and "compilation cache not used" in lines[0]
        assert np.load(tmp_path / "g.npy").shape == (2, 2)
        (tmp_path / "g.npy").unlink()


def test_the_default_cache_folder_is_the_users_own(monkeypatch, tmp_path):
    from jkern._cache import default_cache_dir

    monkeypatch.delenv("JKERN_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_cache_dir() == Path.home() / ".cache" / "jkern" / "xla"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "jkern" / "xla"
    common = (REPO / "experiments" / "_common.py").read_text()
    assert "jkern-smoke-xla" not in common  # no fixed shared path for smoke runs


_UNPICKLERS = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "shelve", "marshal",
               "joblib"}


def test_no_jkern_module_unpickles_or_evaluates_anything():
    for path in sorted((REPO / "jkern").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            else:
                names = set()
            assert not names & _UNPICKLERS, f"{path}:{node.lineno} imports {names}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("eval", "exec"), f"{path}:{node.lineno}"
            if isinstance(node, ast.keyword) and node.arg == "allow_pickle":
                assert isinstance(node.value, ast.Constant) and node.value.value is False, \
                    f"{path}:{node.lineno}: allow_pickle must be False"


def test_a_cache_file_of_another_kind_is_used_only_if_trusted(tmp_path):
    # the rule for jkern's other caches (the spaCy parse cache of `jkern.trees`)
    from jkern._cache import open_trusted

    def trusted_file(path) -> bool:
        f = open_trusted(path, what="cache file")
        if f is not None:
            f.close()
        return f is not None

    folder = tmp_path / "parses"
    folder.mkdir(mode=0o755)
    entry = folder / "spacy-x.npz"
    entry.write_bytes(b"x")
    entry.chmod(0o644)
    assert trusted_file(entry)
    entry.chmod(0o666)
    with pytest.warns(CacheWarning, match="not used"):
        assert not trusted_file(entry)
    entry.chmod(0o644)
    link = folder / "spacy-y.npz"
    link.symlink_to(entry)
    with pytest.warns(CacheWarning, match="not a regular file"):
        assert not trusted_file(link)
    assert not trusted_file(folder / "absent.npz")


def _count_walks(monkeypatch) -> list[int]:
    walks = [0]
    walk = _trust._walk

    def counted(path):
        walks[0] += 1
        return walk(path)

    monkeypatch.setattr(_trust, "_walk", counted)
    return walks


def test_a_stamp_spares_the_walk_until_the_folder_changes(tmp_path, monkeypatch):
    """A closed folder whose entries were all checked is stamped; the next check reads the
    stamp instead of every entry, and any entry added, removed or renamed (the folder's
    ctime), or a chmod of the folder, means a full check again."""
    walks = _count_walks(monkeypatch)
    folder = tmp_path / "xla"
    (folder / "sub").mkdir(mode=0o700, parents=True)
    folder.chmod(0o700)
    (folder / "sub" / "entry").write_bytes(b"x")
    assert _trust.checked_entries(folder) is None and walks[0] == 1
    assert (folder / _trust.STAMP).is_file()
    assert _trust.checked_entries(folder) is None and walks[0] == 1  # the stamp matched
    (folder / "new").write_bytes(b"y")  # an entry added: the folder's ctime moved
    assert _trust.checked_entries(folder) is None and walks[0] == 2
    assert _trust.checked_entries(folder) is None and walks[0] == 2
    (folder / "sub" / "deeper").write_bytes(b"z")  # in a subfolder: its ctime is recorded too
    assert _trust.checked_entries(folder) is None and walks[0] == 3
    folder.chmod(0o711)  # not closed to others: every check walks, and no stamp is read
    assert _trust.checked_entries(folder) is None and walks[0] == 4
    assert _trust.checked_entries(folder) is None and walks[0] == 5
    folder.chmod(0o700)
    assert _trust.checked_entries(folder) is None and walks[0] == 6
    # a stamp others could write is not read (and not rewritten): every check walks
    (folder / _trust.STAMP).chmod(0o666)
    assert _trust.checked_entries(folder) is None and walks[0] == 7
    assert _trust.checked_entries(folder) is None and walks[0] == 8
    # a damaged stamp is no stamp
    (folder / _trust.STAMP).chmod(0o600)
    (folder / _trust.STAMP).write_bytes(b"[[1, 2")
    assert _trust.checked_entries(folder) is None and walks[0] == 9
    assert _trust.checked_entries(folder) is None and walks[0] == 9


@pytest.mark.skipif(not IS_ROOT, reason="needs root to give an entry to another user")
def test_an_entry_planted_after_the_stamp_is_found(tmp_path):
    """Planting needs the folder open for a while: the entry (and the chmods) move the
    folder's ctime, so the stamp no longer matches and the full check finds the entry."""
    folder = tmp_path / "xla"
    folder.mkdir(mode=0o700)
    (folder / "entry").write_bytes(b"x")
    assert _trust.checked_entries(folder) is None
    folder.chmod(0o777)
    (folder / "planted").write_bytes(b"evil")
    os.chown(folder / "planted", 65534, 65534)
    folder.chmod(0o700)
    assert "belongs to another user" in (_trust.checked_entries(folder) or "")
    # a stamp that is not ours is never read; the walk names it
    (folder / "planted").unlink()
    os.chown(folder / _trust.STAMP, 65534, 65534)
    assert "belongs to another user" in (_trust.checked_entries(folder) or "")
