"""Sharding Gram blocks and cutting-plane margins over several devices (`devices=`) and
Gram blocks over the processes of a `jax.distributed` job (`processes=`).

JAX fixes its device list at start-up, so the check runs in a fresh interpreter with two
host CPU devices (XLA's --xla_force_host_platform_device_count): every result computed with
`devices=jax.devices()` must equal the single-device one, and both devices must have run
blocks. The process check starts two local processes joined by `jax.distributed.initialize`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import jkern
    from jkern.data import load_trec
    from jkern.kernels._engine import GramEngine
    from jkern.kernels._schedule import compute_gram
    from jkern.svm import cpa
    from jkern.trees import Forest

    devices = jax.devices()
    train = load_trec(sys.argv[1], "train")
    pick = np.random.default_rng(1).permutation(len(train.trees))[:160]
    trees = [train.trees[i] for i in pick]
    y = np.where(np.asarray(train.coarse)[pick] == "LOC", 1, -1)
    out = {"devices": len(devices)}

    base = jkern.PTK(0.4, 0.4)
    forest = Forest.build(trees)
    engine = GramEngine(forest, base.match_plan(forest), "float64")
    rows, cols = np.arange(100), np.arange(100, 160)
    one = np.asarray(compute_gram(engine, base.params(), rows, cols, block_size=16))
    many = np.asarray(compute_gram(engine, base.params(), rows, cols, block_size=16,
                                   devices=devices))
    out["gram_max_abs_diff"] = float(np.max(np.abs(one - many)))
    out["gram_scale"] = float(np.max(np.abs(one)))
    out["engine_devices"] = len(engine._dev_on)
    sym = np.asarray(compute_gram(engine, base.params(), rows, None, block_size=16))
    sym_many = np.asarray(compute_gram(engine, base.params(), rows, None, block_size=16,
                                       devices=devices))
    out["symmetric_max_abs_diff"] = float(np.max(np.abs(sym - sym_many)))

    kernel = jkern.Normalized(jkern.SST(0.4))
    out["kernel_gram_max_abs_diff"] = float(np.max(np.abs(
        np.asarray(kernel.gram(trees[:50], trees[50:90], block_size=8))
        - np.asarray(kernel.gram(trees[:50], trees[50:90], block_size=8, devices=devices)))))
    fits = {}
    for name, devs in (("one", None), ("many", devices)):
        fits[name] = cpa(trees, y, kernel=kernel, C=30.0, sample=64, mode="forest",
                         block_size=16, key=jax.random.PRNGKey(2), max_iter=30, devices=devs)
    a, b = fits["one"], fits["many"]
    out["same_support"] = a.model.support == b.model.support
    out["same_iterations"] = len(a.stats["history"]) == len(b.stats["history"])
    out["coef_max_abs_diff"] = float(np.max(np.abs(np.asarray(a.model.coef)
                                                   - np.asarray(b.model.coef))))
    out["same_delta_evals"] = a.stats["delta_evals"] == b.stats["delta_evals"]
    test = train.trees[:40]
    out["decision_max_abs_diff"] = float(np.max(np.abs(
        np.asarray(a.model.decision_function(test, block_size=8))
        - np.asarray(a.model.decision_function(test, block_size=8, devices=devices)))))
    print("RESULT " + json.dumps(out))
    """
)


def test_gram_and_cpa_margins_shard_over_two_devices(shared_data, tmp_path):
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2")
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    script = tmp_path / "shard_check.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(shared_data)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    out = json.loads(line[len("RESULT "):])
    assert out["devices"] == 2
    assert out["engine_devices"] == 2  # both devices computed blocks
    assert out["gram_scale"] > 1.0
    # The same compiled recurrences on each device: the same numbers.
    assert out["gram_max_abs_diff"] <= 1e-12 * out["gram_scale"]
    assert out["symmetric_max_abs_diff"] <= 1e-12 * out["gram_scale"]
    assert out["kernel_gram_max_abs_diff"] <= 1e-12
    assert out["same_support"] and out["same_iterations"] and out["same_delta_evals"]
    assert out["coef_max_abs_diff"] <= 1e-12
    assert out["decision_max_abs_diff"] <= 1e-12


def test_devices_rejected_under_tracing():
    import jax
    import numpy as np

    import jkern
    from jkern.kernels._engine import GramEngine
    from jkern.kernels._schedule import compute_gram
    from jkern.trees import Forest, parse_penn

    trees = [parse_penn("(S (NP (DT a) (NN b)) (VP (VB c)))"), parse_penn("(S (NP (NN b)))")]
    base = jkern.SST(0.4)
    forest = Forest.build(trees)
    engine = GramEngine(forest, base.match_plan(forest), "float64")

    def f(lam):
        params = base.params()._replace(lam=lam)
        return compute_gram(engine, params, np.arange(2), None, devices=jax.devices()).sum()

    with pytest.raises(ValueError, match="devices"):
        jax.grad(f)(0.4)
    with pytest.raises(ValueError, match="at least one"):
        compute_gram(engine, base.params(), np.arange(2), None, devices=[])


def test_processes_option_checked(tmp_path):
    import jax
    import numpy as np

    import jkern
    from jkern.errors import InputError
    from jkern.kernels._engine import GramEngine
    from jkern.kernels._schedule import compute_gram
    from jkern.trees import Forest

    trees = small_trees(6)
    base = jkern.SST(0.4)
    engine = GramEngine(Forest.build(trees), base.match_plan(Forest.build(trees)), "float64")

    def f(lam):
        params = base.params()._replace(lam=lam)
        return compute_gram(engine, params, np.arange(6), None, processes=True).sum()

    with pytest.raises(InputError, match="processes"):
        jax.grad(f)(0.4)
    with pytest.raises(InputError, match="False, True or 'shared'"):
        base.gram(trees, processes="all")
    with pytest.raises(InputError, match="np.memmap"):
        base.gram(trees, processes="shared", out=np.zeros((6, 6)))
    shared = np.lib.format.open_memmap(tmp_path / "k.npy", mode="w+", dtype=np.float64,
                                       shape=(6, 6))
    with pytest.raises(InputError, match="rewrites out= in place"):
        jkern.Normalized(base).gram(trees, processes="shared", out=shared)
    # one process (no jax.distributed): every block is computed here, the same matrix
    alone = np.asarray(base.gram(trees, dtype="float64", block_size=2))
    assert np.array_equal(np.asarray(base.gram(trees, dtype="float64", block_size=2,
                                               processes=True)), alone)
    base.gram(trees, dtype="float64", block_size=2, processes="shared", out=shared)
    assert np.array_equal(shared, alone)
    assert np.array_equal(np.asarray((base + base).gram(trees, dtype="float64", block_size=2,
                                                        processes="shared", out=shared)),
                          np.asarray((base + base).gram(trees, dtype="float64", block_size=2)))


# The start of every worker that `run_two_processes` runs: its arguments (process id, the
# coordinator's port, the output folder, the tests folder) and `jax.distributed`'s set-up.
WORKER_PREAMBLE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import jax
    jax.config.update("jax_enable_x64", True)
    process_id, port, out_dir = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                               process_id=process_id, initialization_timeout=60)
    sys.path.insert(0, sys.argv[4])
    """
)

# Two processes of one `jax.distributed` job (`processes=`): each computes its share of the
# row blocks, and both must return the Gram matrix one process computes, bit for bit.
WORKER = WORKER_PREAMBLE + textwrap.dedent(
    """
    import numpy as np
    import jkern
    from jkern.kernels import _processes
    from test_devices import process_kernels, small_trees

    trees = small_trees()
    results, blocks = {}, {}
    for name, kernel in process_kernels().items():
        # PTK's rows travel in rounds of a few rows (SST's in one): both ways of gathering
        _processes.ROUND_VALUES = 100 if name == "ptk" else 1 << 22
        stats = {}
        results[f"{name}-square"] = np.asarray(
            kernel.gram(trees, dtype="float64", block_size=4, processes=True, stats=stats))
        blocks[name] = [stats["blocks"], stats["node_pairs"]]
        results[f"{name}-cross"] = np.asarray(kernel.gram(
            trees[:25], trees[25:], dtype="float64", block_size=3, processes=True))
        shared = np.lib.format.open_memmap(out_dir / f"shared-{name}.npy", mode="r+")
        kernel.gram(trees, dtype="float64", block_size=4, processes="shared", out=shared)
        results[f"{name}-shared"] = np.array(shared)
    np.savez(out_dir / f"process{process_id}.npz", **results)
    print("BLOCKS " + json.dumps(blocks))
    """
)

def small_trees(count: int = 40) -> list:
    """`count` random constituency-like trees (fixed seed): the same in every process."""
    import random

    from jkern.trees import parse_penn

    rng = random.Random(7)

    def node(depth: int) -> str:
        if depth >= 3 or rng.random() < 0.3:
            return f"({rng.choice('DNV')} {rng.choice('abcd')})"
        kids = " ".join(node(depth + 1) for _ in range(rng.randint(1, 3)))
        return f"({rng.choice('SNV')}P {kids})"

    return [parse_penn(f"(S {node(1)} {node(1)})") for _ in range(count)]


def process_kernels() -> dict:
    import jkern

    return {"sst": jkern.SST(0.4), "ptk": jkern.PTK(0.4, 0.3)}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two_processes(worker: str, tmp_path: Path, timeout: float = 120) -> list[str]:
    """Runs `worker` (Python source) as processes 0 and 1 of one `jax.distributed` job on
    127.0.0.1 (its arguments: the process id, the coordinator's port, `tmp_path` and this
    folder, to import helpers from) and returns their standard outputs; both must exit 0."""
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("JKERN_CACHE_DIR", str(REPO / ".jax_cache"))
    script = tmp_path / "process_worker.py"
    script.write_text(worker)
    port = str(_free_port())
    logs = [(tmp_path / f"process{i}.out", tmp_path / f"process{i}.err") for i in range(2)]
    workers = []
    for i, (out, err) in enumerate(logs):
        with open(out, "w") as stdout, open(err, "w") as stderr:
            workers.append(subprocess.Popen(
                [sys.executable, str(script), str(i), port, str(tmp_path),
                 str(Path(__file__).parent)], env=env, stdout=stdout, stderr=stderr))
    # A process that fails leaves the other waiting in a collective (until JAX's heartbeat
    # timeout): stop both at the first failure and show its error.
    deadline = time.monotonic() + timeout
    try:
        while any(w.poll() is None for w in workers) and time.monotonic() < deadline:
            if any(w.poll() not in (None, 0) for w in workers):
                break
            time.sleep(0.1)
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
            w.wait()
    failed = [i for i, w in enumerate(workers) if w.returncode != 0]
    assert not failed, "\n".join(  # -9: stopped (the other failed, or `timeout` passed)
        f"process {i} exited with {workers[i].returncode}:\n{logs[i][1].read_text()[-3000:]}"
        for i in failed)
    return [out.read_text() for out, _ in logs]


def test_gram_shared_among_two_processes(tmp_path):
    import numpy as np

    trees = small_trees()
    kernels = process_kernels()
    for name in kernels:
        np.lib.format.open_memmap(tmp_path / f"shared-{name}.npy", mode="w+",
                                  dtype=np.float64, shape=(len(trees), len(trees)))
    outputs = run_two_processes(WORKER, tmp_path)
    blocks = [json.loads(next(x for x in out.splitlines() if x.startswith("BLOCKS "))[7:])
              for out in outputs]
    for name, kernel in kernels.items():
        stats = {}
        square = np.asarray(kernel.gram(trees, dtype="float64", block_size=4, stats=stats))
        cross = np.asarray(kernel.gram(trees[:25], trees[25:], dtype="float64", block_size=3))
        for i in range(2):
            got = np.load(tmp_path / f"process{i}.npz")
            assert np.array_equal(got[f"{name}-square"], square), (name, i)
            assert np.array_equal(got[f"{name}-cross"], cross), (name, i)
            assert np.array_equal(got[f"{name}-shared"], square), (name, i)
        # each process computed some of the blocks, and together all of them, once
        assert all(b[name][0] > 0 for b in blocks), blocks
        assert [sum(b[name][k] for b in blocks) for k in (0, 1)] == [stats["blocks"],
                                                                    stats["node_pairs"]]
