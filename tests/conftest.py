"""Shared test setup: float64 on, and the real data beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import pytest

jax.config.update("jax_enable_x64", True)
# Compiled recurrences are cached on disk: the CLI's subprocess test and later runs start warm.
if os.environ.get("JKERN_NO_CACHE") != "1":
    from jkern._cache import enable_compilation_cache

    enable_compilation_cache(Path(__file__).resolve().parents[1] / ".jax_cache")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data`; skips when missing, fails instead under JKERN_REQUIRE_DATA=1."""
    if SHARED_DATA.is_dir():
        return SHARED_DATA
    msg = f"shared data not found at {SHARED_DATA}"
    if os.environ.get("JKERN_REQUIRE_DATA") == "1":
        pytest.fail(msg + " (JKERN_REQUIRE_DATA=1)")
    pytest.skip(msg)
