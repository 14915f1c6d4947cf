"""Every script in experiments/ runs end to end at its --smoke size (the slow tier).

Each runs as a user runs it, `python experiments/<script>.py --smoke`, in a subprocess from
another folder, with --data-dir the shared data and --out-dir a temporary folder; it must exit
0 and write `<out-dir>/<script>.json` with the DESIGN.md shape and at least one row. The
scripts share one compilation cache for the session (they compile the same programs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
# bad_input_table.py writes a docs page from the test cases (tests/test_bad_input.py checks
# it): a generator, not an experiment with results
GENERATORS = {"bad_input_table"}
SCRIPTS = sorted(p.stem for p in EXPERIMENTS.glob("*.py")
                 if not p.name.startswith("_") and p.stem not in GENERATORS)


@pytest.fixture(scope="module")
def xla_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compiled-program cache for all the scripts of this session."""
    return tmp_path_factory.mktemp("xla")


def run_script(path: str | Path, *args: object, cwd: Path, cache: Path,
               timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JKERN_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, str(path), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def check_result(out: Path, script: str, proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    path = out / f"{script}.json"
    assert path.is_file(), f"{script} wrote no {path.name}:\n{proc.stdout[-2000:]}"
    result = json.loads(path.read_text())
    assert result["experiment"] == script
    assert "--smoke" in result["environment"]["command"]
    assert result["rows"], f"{script}: no rows"
    assert all(isinstance(row, dict) and row for row in result["rows"])
    return result


def test_every_script_is_covered() -> None:
    assert len(SCRIPTS) >= 14, SCRIPTS
    for script in SCRIPTS:
        source = (EXPERIMENTS / f"{script}.py").read_text()
        assert "sys.path" not in source, f"{script} edits sys.path"
        assert "parse_args(ap, argv" in source, f"{script} does not take the common flags"


@pytest.mark.parametrize("script", SCRIPTS)
def test_smoke(script: str, shared_data: Path, tmp_path: Path, xla_cache: Path) -> None:
    out = tmp_path / "out"
    proc = run_script(EXPERIMENTS / f"{script}.py", "--smoke", "--data-dir", shared_data,
                      "--out-dir", out, cwd=tmp_path, cache=xla_cache)
    check_result(out, script, proc)


def test_smoke_from_the_experiments_folder(shared_data: Path, tmp_path: Path,
                                           xla_cache: Path) -> None:
    """`cd experiments && python X.py`: the script's folder is on the path, _common imports."""
    proc = run_script("imbalance_c_check.py", "--smoke", "--data-dir", shared_data,
                      "--out-dir", tmp_path, cwd=EXPERIMENTS, cache=xla_cache)
    check_result(tmp_path, "imbalance_c_check", proc)


def test_smoke_refuses_the_results_folder(tmp_path: Path, xla_cache: Path) -> None:
    """Smoke figures never land in docs/results (the committed full runs)."""
    results = EXPERIMENTS.parent / "docs" / "results"
    before = {p.name: p.stat().st_mtime_ns for p in results.iterdir()}
    proc = run_script(EXPERIMENTS / "nystrom_gap.py", "--smoke", "--out-dir", results,
                      cwd=tmp_path, cache=xla_cache, timeout=120)
    assert proc.returncode != 0
    assert "--out-dir" in proc.stderr
    assert {p.name: p.stat().st_mtime_ns for p in results.iterdir()} == before


def test_qc_acl17_selection_ignores_the_test_set(shared_data: Path, tmp_path: Path,
                                                 xla_cache: Path) -> None:
    """qc_acl17.py picks every hyperparameter on the training questions alone: run twice, the
    second time with the test labels permuted (its hidden --permute-test-labels), the
    `selection` block (each choice and every candidate's held-out score) is the same, while
    the test accuracies are not (the permutation took effect). Every row kind is there."""
    tiny = ["--smoke", "--data-dir", shared_data, "--sources", "shipped", "--max-train", 80,
            "--max-test", 30, "--landmarks", 20, "--samplings", 1, "--gammas", "1,3",
            "--epochs", 5, "--learn-steps", 1, "--learn-batch", 12,
            "--learned-sources", "shipped"]
    results = []
    for run, extra in (("plain", []), ("permuted", ["--permute-test-labels"])):
        out = tmp_path / run
        # learn_kernel compiles anew for each minibatch: minutes a step on a busy CPU
        proc = run_script(EXPERIMENTS / "qc_acl17.py", *tiny, *extra, "--out-dir", out,
                          cwd=tmp_path, cache=xla_cache, timeout=1800)
        results.append(check_result(out, "qc_acl17", proc))
    plain, permuted = results
    assert not plain["settings"]["permuted_test_labels"]
    assert permuted["settings"]["permuted_test_labels"]
    assert plain["selection"] == permuted["selection"]
    assert set(plain["selection"]) == {"sptk/shipped", "csptk/shipped",
                                       "csptk-learned/shipped"}
    for key, sel in plain["selection"].items():  # a choice and its candidates' scores
        assert set(sel["DCD"]["20"][0]["held_out_accuracy"]) == {"10", "30", "100"}, key
        assert len(sel["KDA"]["20"][0]["grid_held_out_accuracy"]) == 8, key
    assert set(plain["selection"]["sptk/shipped"]["kernel"]["held_out_accuracy"]) == {"1", "3"}
    kinds = {(r["model"], r["kernel"], r["source"]) for r in plain["rows"]}
    assert kinds == {(m, k, "shipped") for m in ("KSVM", "DCD", "KDA")
                     for k in ("sptk", "csptk", "csptk-learned")}
    accuracies = [[r["accuracy"] for r in res["rows"]] for res in results]
    assert accuracies[0] != accuracies[1]
