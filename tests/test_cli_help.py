"""`jkern` read once: every option and positional of every command says what it does and its
default, `train --help` names every learner, `--threads` follows the machine, and `--help` /
`--version` answer without importing JAX."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jkern.cli import build_parser, main
from jkern.cli._common import default_threads

ROOT = Path(__file__).resolve().parents[1]


def _commands(parser: argparse.ArgumentParser, prog: str = "jkern"):
    """`(command line, parser)` of every (sub)command."""
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{prog} {name}")


def _arguments():
    """`(command, action)` of every option and positional a user types."""
    for prog, parser in _commands(build_parser()):
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction,
                                   argparse._SubParsersAction)):
                continue
            yield prog, action


def _renderings(value: object) -> set[str]:
    """How a help text may write a default value (`1e-05` also as `1e-5`)."""
    if isinstance(value, float):
        texts = {format(value, "g"), str(value), format(value, ".0e")}
        return texts | {t.replace("e-0", "e-") for t in texts}
    return {str(value)}


ARGUMENTS = [pytest.param(action, id=f"{prog}:{(action.option_strings or [action.dest])[0]}")
             for prog, action in _arguments()]


@pytest.mark.parametrize("action", ARGUMENTS)
def test_every_argument_has_help_with_its_default(action):
    text = " ".join((action.help or "").split())
    assert len(text) >= 10, "no help text"
    if not action.option_strings:  # a positional: required unless optional (nargs="?")
        if action.nargs == "?":
            assert "default" in text
        return
    assert "default" in text or "(required" in text, text
    if action.required:
        assert "required" in text, text
    default = action.default
    if default is not None and not isinstance(default, bool):
        assert any(r in text for r in _renderings(default)), (default, text)


def test_the_walk_sees_every_command():
    progs = {prog for prog, _ in _commands(build_parser())}
    assert {"jkern gram", "jkern nystrom fit", "jkern nystrom embed", "jkern train",
            "jkern predict", "jkern convert", "jkern ds train", "jkern ds predict",
            "jkern pa train", "jkern pa predict"} <= progs


def test_train_help_lists_every_learner_and_requires_one(capsys):
    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    parser = dict(_commands(build_parser()))["jkern train"]
    algo = next(a for a in parser._actions if "--algo" in a.option_strings)
    names = list(algo.choices or ())
    assert set(names) == {"ksvm", "dcd", "kda", "cpa"}
    for name in names:
        assert f"{name}:" in text
    assert "required, no default" in text
    # the summary of `jkern --help` names them too
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    assert all(name in top for name in names)


def test_train_without_algo_is_a_clear_usage_error(tmp_path, capsys):
    trees = tmp_path / "t.dat"
    trees.write_text("1 |BT| (S (A a)) |ET|\n-1 |BT| (S (B b)) |ET|\n")
    assert main(["train", str(trees), "--kernel", "sst", "--out", str(tmp_path / "m.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jkern: error: choose the learner, --algo")
    assert all(name in err[0] for name in ("ksvm", "dcd", "kda", "cpa"))
    assert not (tmp_path / "m.npz").exists()


def test_cpa_C_is_explained_in_its_own_help():
    parser = dict(_commands(build_parser()))["jkern train"]
    c = next(a for a in parser._actions if "--C" in a.option_strings)
    text = " ".join((c.help or "").split())
    assert "1-slack" in text and "n times SVM-light's -c" in text and "--c-light" in text


def test_threads_default_to_the_usable_cores():
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default_threads() == expected
    found = [(prog, a) for prog, a in _arguments() if "--threads" in a.option_strings]
    assert {prog for prog, _ in found} == {"jkern gram", "jkern nystrom fit",
                                           "jkern nystrom embed", "jkern train",
                                           "jkern predict"}
    for prog, action in found:
        assert action.default == expected, prog
        assert f"here {expected}" in (action.help or ""), prog


def test_progress_flag_on_every_command_with_long_phases():
    found = {prog for prog, a in _arguments() if "--progress" in a.option_strings}
    assert found == {"jkern gram", "jkern nystrom fit", "jkern nystrom embed", "jkern train",
                     "jkern predict", "jkern parse"}
    args = build_parser().parse_args(["predict", "m.npz", "t.txt", "--out", "p.tsv"])
    assert args.progress is None  # unset: on when stderr is a terminal (not in tests)
    args = build_parser().parse_args(["predict", "m.npz", "t.txt", "--out", "p.tsv",
                                      "--no-progress"])
    assert args.progress is False


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["train", "--help"],
                                  ["gram", "--help"]])
def test_help_and_version_do_not_import_jax(argv):
    code = ("import sys\nfrom jkern.cli import main\n"
            f"code = main({argv!r})\n"
            "assert code == 0, code\n"
            "heavy = sorted(m for m in ('jax', 'jaxlib', 'numpy', 'equinox') if m in sys.modules)\n"
            "print('heavy:', heavy, file=sys.stderr)\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_version_answers_in_under_0_3_s():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(3):  # the best of three: a loaded machine slows some runs down
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "jkern", "--version"], capture_output=True,
                              text=True, cwd=ROOT, env=env, timeout=60)
        times.append(time.perf_counter() - t0)
        assert done.returncode == 0 and done.stdout.startswith("jkern "), done.stderr
    assert min(times) < 0.3, times


def test_kernel_help_lists_the_registry_a_kernel_a_line(capsys):
    """`--kernel`'s help names every kernel of `jkern.KERNEL_NAMES` with its one-line meaning,
    each on a line of its own (the registry is the one list: a new kernel shows up here)."""
    from jkern import KERNEL_MEANINGS, KERNEL_NAMES

    for argv in (["gram", "--help"], ["train", "--help"]):
        assert main(argv) == 0
        lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
        for name in KERNEL_NAMES:
            assert KERNEL_MEANINGS[name] and "\n" not in KERNEL_MEANINGS[name], name
            first = next((i for i, line in enumerate(lines) if line.startswith(f"{name}: ")),
                         None)
            assert first is not None, (argv, name)
            assert lines[first].split()[1] == KERNEL_MEANINGS[name].split()[0], lines[first]
