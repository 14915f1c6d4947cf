"""The documentation site builds in strict mode (issue 22): every page, link, API reference
(generated from the docstrings) and tutorial, whose code runs during the build on small
real data. A broken example, link or docstring reference fails this test, so CI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from data_paths import SHARED_DATA, require

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))


def test_every_tutorial_is_in_the_nav_and_runs_code():
    nav = (ROOT / "mkdocs.yml").read_text()
    assert len(TUTORIALS) >= 5
    for page in TUTORIALS:
        assert f"tutorials/{page.name}" in nav, page.name
        assert 'exec="on"' in page.read_text(), f"{page.name} runs no code during the build"


def test_the_site_builds_strict_with_every_tutorial_executed(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]')")
    require(SHARED_DATA / "trec")  # the tutorials read ../shared/data
    if ROOT.parent / "shared" != SHARED_DATA.parent:
        pytest.skip("the tutorials read ../shared/data beside the repository")
    site = tmp_path / "site"
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or "mkdocs"
    run = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-8000:]
    # the tutorials' output is in the pages: the code ran
    page = (site / "tutorials" / "question-classification" / "index.html").read_text()
    assert "accuracy" in page and "Traceback" not in page
    for tutorial in TUTORIALS:
        html = (site / "tutorials" / tutorial.stem / "index.html").read_text()
        assert "Traceback" not in html, tutorial.name
    api = (site / "api" / "kernels" / "index.html").read_text()
    assert "the one entry point" in api or "The Gram matrix" in api  # docstrings rendered
