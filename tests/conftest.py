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


@pytest.fixture(scope="module")
def nlp():
    """spaCy's small English pipeline (the `ds` extra); skips when it is not installed."""
    spacy = pytest.importorskip("spacy")
    from jkern.trees._spacy import _load_model

    try:
        return _load_model(spacy)
    except ImportError as err:
        pytest.skip(str(err))


@pytest.fixture(autouse=True, scope="module")
def _free_compiled_programs():
    """Drop the compiled programs a test module leaves behind (JAX's caches and jkern's
    in-memory executables) once it ends. XLA's CPU compiler maps memory for every program
    it keeps, and one process running the whole suite otherwise reaches the kernel's limit
    of memory mappings (vm.max_map_count, 65,530 by default): the next compile then fails
    ("Failed to materialize symbols") and the process crashes. Programs come back from
    the on-disk cache when a later module needs them."""
    yield
    import gc

    if os.environ.get("JKERN_TEST_MAPS"):
        with open("/proc/self/maps") as f:
            print(f"\n[memory mappings before: {sum(1 for _ in f)}]")

    from jkern import _executables

    jax.clear_caches()
    _executables.clear_loaded()
    gc.collect()
    if os.environ.get("JKERN_TEST_MAPS"):
        with open("/proc/self/maps") as f:
            print(f"[memory mappings after: {sum(1 for _ in f)}]")


@pytest.fixture
def cache_at(tmp_path):
    """JAX's compilation cache (and so jkern's executables) moved to a fresh folder."""
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "xla"))
    yield tmp_path / "xla"
    jax.config.update("jax_compilation_cache_dir", before)
