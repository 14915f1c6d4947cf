"""Shared test setup: float64 on, and the real data beside the repository."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import pytest
from data_paths import SHARED_DATA, require

jax.config.update("jax_enable_x64", True)
# Compiled recurrences are cached on disk: the CLI's subprocess test and later runs start warm.
if os.environ.get("JKERN_NO_CACHE") != "1":
    from jkern._cache import enable_compilation_cache

    enable_compilation_cache(Path(__file__).resolve().parents[1] / ".jax_cache")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data`; skips when missing, fails instead under JKERN_REQUIRE_DATA=1."""
    return require(SHARED_DATA)
