"""Sharding Gram blocks and cutting-plane margins over several devices (`devices=`).

JAX fixes its device list at start-up, so the check runs in a fresh interpreter with two
host CPU devices (XLA's --xla_force_host_platform_device_count): every result computed with
`devices=jax.devices()` must equal the single-device one, and both devices must have run
blocks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
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
