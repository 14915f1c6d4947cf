"""Settings for every test and doctest (tests/ and the library's docstrings): JAX raises on
implicit rank promotion (a shape bug, not a broadcast, in this code base), and a seeded key
fixture. float64 is switched on in tests/conftest.py only, so `pytest jkern` runs the
doctests in JAX's default float32 as a user would."""

from __future__ import annotations

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def key() -> jax.Array:
    """A fixed PRNG key: tests are deterministic."""
    return jax.random.key(0)
