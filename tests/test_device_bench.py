"""The device benchmark's one command (scripts/device-bench.sh, issue 35) runs at its --smoke
size on whatever device JAX sees here and writes one JSON with every workload timed and the
device named (the slow tier: it compiles every workload's programs)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("gram-sst-float32", "gram-sst-float64", "gram-ptk-float32", "gram-ptk-float64",
             "nystrom-ptk", "kda-grid", "kda-loop", "pa-grid", "ds-fista", "ds-hybrid")


def finite_seconds(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def test_smoke_run_times_every_workload_and_names_the_device(shared_data: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(["bash", "scripts/device-bench.sh", "--smoke", "--data-dir",
                           str(shared_data), "--out-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    files = list(out.glob("*.json"))
    assert [f.name for f in files] == ["device_bench.json"]
    result = json.loads(files[0].read_text())

    env = result["environment"]
    for key in ("device_kind", "platform", "jax", "jaxlib", "platform_version"):
        assert isinstance(env[key], str) and env[key], key
    assert result["complete"] is True

    rows = {row["workload"]: row for row in result["rows"]}
    assert sorted(rows) == sorted(WORKLOADS)
    for name, row in rows.items():
        assert "error" not in row and "skipped" not in row, (name, row)
        assert finite_seconds(row["first_s"]), (name, row)
        assert finite_seconds(row["steady_s"]), (name, row)
        assert row["steady_runs"] and all(map(finite_seconds, row["steady_runs"])), name
    assert finite_seconds(result["comparisons"]["kda_loop_over_grid"])
    # the printed table names every workload
    for name in WORKLOADS:
        assert name in proc.stdout
