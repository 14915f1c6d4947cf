"""`jkern.limit_cpus` and `jkern pa train|predict --cpus`: the process runs on N CPUs when the
limit comes before JAX's first computation (checked in fresh processes: the limit changes the
whole process), and is refused, changing nothing, after it or for a bad N."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern.cli import main
from jkern.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
HAS_AFFINITY = hasattr(os, "sched_setaffinity")
TRAIN = "+1 1:1 2:1 5:1\n+1 1:1 3:1\n-1 2:1 3:1\n-1 3:1 4:1\n+1 1:1 4:1 5:1\n-1 2:1 4:1\n"
TEST = "+1 1:1 5:1\n-1 3:1 9:1\n+1 1:1 2:1 3:1\n-1 4:1\n"


def _fresh(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args] if not code else
                          [sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


@pytest.mark.parametrize("n", [0, -1, True, 1.5, "2", None])
def test_a_bad_n_is_refused(n):
    with pytest.raises(InputError, match="n must be an int >= 1"):
        jkern.limit_cpus(n)  # pyright: ignore[reportArgumentType]


@pytest.mark.skipif(not HAS_AFFINITY, reason="no CPU affinity on this platform")
def test_after_the_first_computation_it_is_refused_and_changes_nothing():
    float(jnp.ones(3).sum())  # JAX's backend has started in this process
    before = os.sched_getaffinity(0)
    with pytest.raises(InputError, match="before JAX's first computation"):
        jkern.limit_cpus(1)
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not HAS_AFFINITY, reason="no CPU affinity on this platform")
def test_in_a_fresh_process_the_limit_holds_and_jax_computes():
    code = ("import os, jax.numpy as jnp, jkern\n"
            "n = jkern.limit_cpus(1)\n"
            "print(n, len(os.sched_getaffinity(0)), float(jnp.arange(4.0).sum()))\n"
            "try:\n"
            "    jkern.limit_cpus(1)\n"
            "except jkern.errors.InputError:\n"
            "    print('refused')\n")
    done = _fresh(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "1", "6.0", "refused"]


@pytest.mark.skipif(not HAS_AFFINITY, reason="no CPU affinity on this platform")
def test_cli_cpus_trains_the_same_model(tmp_path, capsys):
    (tmp_path / "train.svm").write_text(TRAIN)
    (tmp_path / "test.svm").write_text(TEST)
    model, pred, pred1 = tmp_path / "m.npz", tmp_path / "p.tsv", tmp_path / "p1.tsv"
    # in this process JAX has started: --cpus is the library's one-line error, exit 2, no file
    code = main(["pa", "train", str(tmp_path / "train.svm"), "--out", str(model),
                 "--mode", "explicit", "--cpus", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "before JAX's first computation" in err[0], err
    assert not model.exists()
    # a fresh `jkern` process runs on one CPU and trains the model of an unlimited run
    done = _fresh("", "-m", "jkern", "pa", "train", str(tmp_path / "train.svm"), "--out",
                  str(model), "--mode", "explicit", "--cpus", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    done = _fresh("", "-m", "jkern", "pa", "predict", str(model), str(tmp_path / "test.svm"),
                  "--out", str(pred1), "--cpus", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert main(["pa", "train", str(tmp_path / "train.svm"), "--out",
                 str(tmp_path / "m0.npz"), "--mode", "explicit"]) == 0
    assert main(["pa", "predict", str(tmp_path / "m0.npz"), str(tmp_path / "test.svm"),
                 "--out", str(pred)]) == 0
    np.testing.assert_array_equal(np.loadtxt(pred1), np.loadtxt(pred))
