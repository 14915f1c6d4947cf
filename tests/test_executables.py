"""Compiled programs kept on disk as executables (`jkern._executables`): a later process (here:
a fresh `StoredProgram`, or a fresh interpreter) loads them instead of tracing, lowering and
compiling; a damaged file is compiled again; traced calls and an opted-out cache take the
plain `jax.jit` path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jkern
from jkern._executables import StoredFilterProgram, StoredProgram, executables_dir
from jkern.pa._explicit import ExplicitState

REPO = Path(__file__).resolve().parents[1]


def _scaled_sum(buf, x, scale, *, times):
    for _ in range(times):
        buf = buf + scale * x
    return buf


def _args():
    return jnp.zeros(4), jnp.arange(4.0), 0.5


def test_a_fresh_program_loads_the_stored_executable(cache_at):
    first = StoredProgram(_scaled_sum, static_argnames=("times",), donate_argnums=(0,))
    want = np.asarray(first(*_args(), times=3))
    files = sorted(executables_dir().glob("_scaled_sum-*.jkx"))
    assert len(files) == 1
    loaded_before = jkern.program_stats()["loaded"]
    again = StoredProgram(_scaled_sum, static_argnames=("times",), donate_argnums=(0,))
    got = np.asarray(again(*_args(), times=3))
    assert jkern.program_stats()["loaded"] == loaded_before + 1
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, 1.5 * np.arange(4.0))
    # another static argument or shape is another program, not the stored one
    np.testing.assert_array_equal(np.asarray(again(*_args(), times=2)), np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(again(jnp.zeros(3), jnp.ones(3), 2.0, times=1)),
                                  np.full(3, 2.0))
    assert len(list(executables_dir().glob("_scaled_sum-*.jkx"))) == 3


class _Pair(NamedTuple):  # not jkern's: a file cannot name it
    total: jax.Array
    steps: jax.Array | None


class _Stepper(eqx.Module):
    scale: jax.Array
    times: int = eqx.field(static=True)


def _stepped(stepper, x, record):
    out = x
    for _ in range(stepper.times):
        out = out + stepper.scale * x
    # a jkern NamedTuple result: the file describes it by name
    return ExplicitState(out, out * 2 if record else None)


def _paired(stepper, x):
    return _Pair(x * stepper.scale, None)


def test_a_filter_program_stores_modules_statics_and_named_results(cache_at):
    """`StoredFilterProgram`: arrays anywhere in the arguments are inputs, static fields and
    other leaves are part of the program; a fresh one loads the file and rebuilds the
    NamedTuple result; another static value is another program."""
    first = StoredFilterProgram(_stepped)
    want = first(_Stepper(jnp.float64(0.5), 3), jnp.arange(4.0), True)
    assert isinstance(want, ExplicitState) and want.n_updates is not None
    np.testing.assert_array_equal(np.asarray(want.w), 2.5 * np.arange(4.0))
    assert len(list(executables_dir().glob("_stepped-*.jkx"))) == 1
    loaded_before = jkern.program_stats()["loaded"]
    got = StoredFilterProgram(_stepped)(_Stepper(jnp.float64(0.5), 3), jnp.arange(4.0), True)
    assert jkern.program_stats()["loaded"] == loaded_before + 1
    assert isinstance(got, ExplicitState) and got.n_updates is not None
    np.testing.assert_array_equal(np.asarray(got.n_updates), np.asarray(want.n_updates))
    # another static field, another plain leaf: other programs, other answers
    again = StoredFilterProgram(_stepped)
    np.testing.assert_array_equal(
        np.asarray(again(_Stepper(jnp.float64(0.5), 1), jnp.arange(4.0), True).w),
        1.5 * np.arange(4.0))
    assert again(_Stepper(jnp.float64(0.5), 3), jnp.arange(4.0), False).n_updates is None
    assert len(list(executables_dir().glob("_stepped-*.jkx"))) == 3
    # a result type of another package: run, not stored (no class is looked up by a
    # name from outside jkern)
    paired = StoredFilterProgram(_paired)(_Stepper(jnp.float64(2.0), 1), jnp.arange(3.0))
    assert isinstance(paired, _Pair)
    np.testing.assert_array_equal(np.asarray(paired.total), 2.0 * np.arange(3.0))
    assert not list(executables_dir().glob("_paired-*.jkx"))


def _shifted(state, x):
    return ExplicitState(state.w + x, state.n_updates + 1)


def test_a_filter_program_donates_the_arguments_it_names(cache_at):
    """`stored_filter_jit(donate=(0,))`: the first argument's arrays serve the results, both
    when compiled and when loaded from its file (the donated input is deleted); the others
    are kept; the answers are the undonated program's."""
    from jkern._executables import stored_filter_jit

    for _ in range(2):  # compiled and stored, then loaded by a fresh program
        loaded_before = jkern.program_stats()["loaded"]
        program = stored_filter_jit(donate=(0,))(_shifted)
        state = ExplicitState(jnp.arange(5.0) + 0.0, jnp.zeros((), jnp.int32))
        x = jnp.ones(5)
        got = program(state, x)
        np.testing.assert_array_equal(np.asarray(got.w), np.arange(5.0) + 1)
        assert int(got.n_updates) == 1
        assert state.w.is_deleted() and not x.is_deleted()
    assert jkern.program_stats()["loaded"] == loaded_before + 1
    assert len(list(executables_dir().glob("_shifted-*.jkx"))) == 1
    # the plain decorator donates nothing
    state = ExplicitState(jnp.arange(5.0) + 0.0, jnp.zeros((), jnp.int32))
    StoredFilterProgram(_shifted)(state, jnp.ones(5))
    assert not state.w.is_deleted()


def test_a_filter_program_with_an_argument_it_cannot_describe_is_not_stored(cache_at):
    """A leaf whose repr could name two different values (here an arbitrary object in a
    static field) takes the plain filter_jit path: nothing stored, the same answer."""

    class Opaque:
        pass

    class Holder(eqx.Module):
        tag: object = eqx.field(static=True)

    def add(h, x):
        return x + 1.0

    got = StoredFilterProgram(add)(Holder(Opaque()), jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(got), np.arange(3.0) + 1)
    assert not list(executables_dir().glob("add-*.jkx"))


def test_a_damaged_file_is_compiled_again_and_replaced(cache_at):
    StoredProgram(_scaled_sum, static_argnames=("times",))(*_args(), times=3)
    (path,) = executables_dir().glob("_scaled_sum-*.jkx")
    path.write_bytes(b"not an executable")
    loaded_before = jkern.program_stats()["loaded"]
    got = StoredProgram(_scaled_sum, static_argnames=("times",))(*_args(), times=3)
    np.testing.assert_array_equal(np.asarray(got), 1.5 * np.arange(4.0))
    assert jkern.program_stats()["loaded"] == loaded_before
    # dropped, and stored again unless JAX served the program from its own cache
    assert not path.exists() or path.read_bytes() != b"not an executable"


def test_traced_calls_and_an_opted_out_cache_store_nothing(cache_at):
    program = StoredProgram(_scaled_sum, static_argnames=("times",))
    traced = jax.jit(lambda s: program(jnp.zeros(4), jnp.arange(4.0), s, times=2).sum())
    assert float(traced(1.0)) == 12.0
    assert float(jax.grad(lambda s: program(jnp.zeros(4), jnp.arange(4.0), s,
                                            times=2).sum())(1.0)) == 12.0
    assert not executables_dir().exists()
    jax.config.update("jax_compilation_cache_dir", None)
    assert executables_dir() is None
    np.testing.assert_array_equal(np.asarray(program(*_args(), times=1)), 0.5 * np.arange(4.0))


_GRAM_RUN = """
import json, jax
jax.config.update("jax_enable_x64", True)
import numpy as np, jkern
trees = jkern.read_trees({path!r})
g = np.asarray(jkern.gram(jkern.PTK(0.4, 0.4, max_subseq=5), trees, dtype="float64", threads=1))
print(json.dumps({{"gram": g.tolist(), **jkern.program_stats()}}))
"""


def test_a_second_process_loads_every_recurrence_and_gets_the_same_gram(tmp_path):
    path = tmp_path / "trees.txt"
    path.write_text("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))\n"
                    "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps) (ADVP (RB here))))\n"
                    "(NP (DT the) (NN cat))\n")
    env = {**os.environ, "JKERN_CACHE_DIR": str(tmp_path / "xla")}
    env.pop("JKERN_NO_CACHE", None)

    def run() -> dict:
        out = subprocess.run([sys.executable, "-c", _GRAM_RUN.format(path=str(path))], env=env,
                             capture_output=True, text=True, timeout=300, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert first["loaded"] == 0 and first["programs"] > 0
    store = tmp_path / "xla" / "jkern-executables"
    stored = sorted(p.name for p in store.glob("*.jkx"))
    assert second["loaded"] == len(stored) > 0
    assert np.array_equal(np.asarray(second["gram"]), np.asarray(first["gram"]))
    # With the store gone but JAX's own cache full, the programs are compiled afresh and
    # stored again (an executable JAX loaded from its cache fails to run once re-serialized),
    # and the next process loads and runs them.
    shutil.rmtree(store)
    third, fourth = run(), run()
    assert sorted(p.name for p in store.glob("*.jkx")) == stored
    assert third["loaded"] == 0 and fourth["loaded"] == len(stored)
    for later in (third, fourth):
        assert np.array_equal(np.asarray(later["gram"]), np.asarray(first["gram"]))


_TWO_DEVICE_RUN = """
import json, jax, jax.numpy as jnp, numpy as np, jkern
from jkern._executables import StoredProgram
from tests.test_executables import _scaled_sum
program = StoredProgram(_scaled_sum, static_argnames=("times",))
out = {"devices": len(jax.devices())}
for device in jax.devices():
    with jax.default_device(device):
        got = program(jnp.zeros(4), jnp.arange(4.0), 0.5, times=3)
    out[str(device.id)] = [np.asarray(got).tolist(), [d.id for d in got.devices()]]
print(json.dumps({**out, **jkern.program_stats()}))
"""


def test_a_stored_program_loads_onto_its_own_device_among_several(tmp_path):
    # A one-device program stored by a process with two devices, then loaded by the next:
    # it must run on the device it was built for (JAX's loader would spread it over both).
    env = {**os.environ, "JKERN_CACHE_DIR": str(tmp_path / "xla"), "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "")
                         + " --xla_force_host_platform_device_count=2"),
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("JKERN_NO_CACHE", None)

    def run() -> dict:
        out = subprocess.run([sys.executable, "-c", _TWO_DEVICE_RUN], env=env, cwd=REPO,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert first["devices"] == second["devices"] == 2
    assert first["loaded"] == 0 and second["loaded"] == 2
    for device in ("0", "1"):
        assert second[device] == first[device] == [[0.0, 1.5, 3.0, 4.5], [int(device)]]
