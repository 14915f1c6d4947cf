"""Kernel-parameter grids (issue 35): `jax.vmap` and `jax.jit` over λ, μ and SPTK's
similarity parameters of `gram` run the engine once, on one plan, for the whole grid.

Each grid equals the Python loop of single Grams (float64, 1e-12 relative), emits no
warning (the engine's donated buffers never meet a transformation), and builds no more
XLA programs than one Gram does (`jkern.program_stats`, compiled or loaded from the cache).
Sizes stay small: 40 TREC parses.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_rel

import jkern
from jkern import _executables
from jkern.errors import InputError

N_TREES = 40
LAMS = (0.2, 0.4, 0.7)


@pytest.fixture(scope="module")
def trees(shared_data):
    with open(shared_data / "trec" / "qc_train.tsv", encoding="utf-8") as f:
        next(f)
        return [jkern.trees.parse_penn(next(f).rstrip("\n").split("\t")[2])
                for _ in range(N_TREES)]


@contextmanager
def strict():
    """Records every warning raised inside (none may be)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    assert not caught, [f"{w.category.__name__}: {w.message}" for w in caught]


def programs() -> int:
    return int(jkern.program_stats()["programs"])


def fresh_programs() -> None:
    """Forget the programs this process holds (they load again from the disk cache and are
    counted again)."""
    jax.clear_caches()
    _executables.clear_loaded()


def programs_of_one_gram(make, value, trees) -> int:
    """The programs one float64 Gram of `make(value)` builds from a process that holds
    none (the kernel made after the count starts: its checks build programs too)."""
    fresh_programs()
    before = programs()
    jax.block_until_ready(jkern.gram(make(value), trees, dtype="float64"))
    return programs() - before


def loop(make, values, trees, **kw):
    return np.stack([np.asarray(jkern.gram(make(v), trees, dtype="float64", **kw))
                     for v in values])


def test_ptk_lambda_grid_equals_the_loop_builds_no_more_programs_and_warns_not(trees):
    make = lambda lam: jkern.PTK(lam, 0.4)  # noqa: E731
    one = programs_of_one_gram(make, 0.4, trees)
    fresh_programs()
    before = programs()
    with strict():
        grid = jax.vmap(lambda lam: jkern.gram(make(lam), trees, dtype="float64"))(
            jnp.array(LAMS))
        grid = np.asarray(grid)
    built = programs() - before
    assert grid.shape == (len(LAMS), N_TREES, N_TREES)
    assert_rel(grid, loop(make, LAMS, trees), 1e-12, "vmapped PTK lam grid")
    assert 0 < built <= one, f"the grid built {built} programs, one Gram {one}"
    # a second grid: the same programs, nothing built
    before = programs()
    with strict():
        again = jax.vmap(lambda lam: jkern.gram(make(lam), trees, dtype="float64"))(
            jnp.array(LAMS[::-1]))
    assert programs() == before
    assert_rel(again, grid[::-1], 1e-12, "the grid again")


def test_jit_of_the_grid_equals_the_loop_and_adds_only_its_own_program(trees):
    make = lambda lam: jkern.PTK(lam, 0.4)  # noqa: E731
    one = programs_of_one_gram(make, 0.4, trees)
    fresh_programs()
    before = programs()
    with strict():
        grid = jax.jit(jax.vmap(lambda lam: jkern.gram(make(lam), trees, dtype="float64")))(
            jnp.array(LAMS))
        grid = np.asarray(grid)
    built = programs() - before
    assert_rel(grid, loop(make, LAMS, trees), 1e-12, "jit(vmap) PTK lam grid")
    assert built <= one + 1, f"jit(vmap) built {built} programs, one Gram {one} (+1: the jit's)"
    with strict():  # jit of a single Gram: the callback, the same values
        single = jax.jit(lambda lam: jkern.gram(make(lam), trees, dtype="float64"))(0.4)
    assert_rel(single, grid[1], 1e-12, "jit of one Gram")


def test_sst_lambda_grid_equals_the_loop(trees):
    make = jkern.SST
    with strict():
        grid = jax.vmap(lambda lam: jkern.gram(make(lam), trees, dtype="float64"))(
            jnp.array(LAMS))
    assert_rel(grid, loop(make, LAMS, trees), 1e-12, "vmapped SST lam grid")


def test_lambda_by_mu_grid_is_one_batch_and_equals_the_loop(trees):
    lams, mus = (0.3, 0.6), (0.2, 0.5)
    with strict():
        grid = jax.vmap(jax.vmap(
            lambda lam, mu: jkern.gram(jkern.PTK(lam, mu), trees, dtype="float64"),
            (None, 0)), (0, None))(jnp.array(lams), jnp.array(mus))
    assert grid.shape == (2, 2, N_TREES, N_TREES)
    for i, lam in enumerate(lams):
        for j, mu in enumerate(mus):
            assert_rel(grid[i, j], jkern.gram(jkern.PTK(lam, mu), trees, dtype="float64"),
                       1e-12, f"lam={lam} mu={mu}")


def _sptk_inputs(trees):
    """The trees' words with seeded vectors, close pairs among them (so the similarity
    matters)."""
    words = sorted({t.labels[i] for t in trees for i in range(len(t)) if t.is_leaf(i)})
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(words), 8))
    vectors[1::2] = vectors[::2][: len(vectors[1::2])] + 0.5 * vectors[1::2]
    return words, vectors


def test_sptk_similarity_grids_equal_the_loop(trees):
    words, vectors = _sptk_inputs(trees)
    by_gamma = lambda g: jkern.SPTK(words, vectors, 0.4, 0.4, gamma=g)  # noqa: E731
    by_threshold = lambda t: jkern.SPTK(words, vectors, 0.4, 0.4, threshold=t)  # noqa: E731
    for make, values in [(by_gamma, (0.5, 2.0, 8.0)), (by_threshold, (0.0, 0.3, 0.6))]:
        with strict():
            grid = jax.vmap(lambda v, make=make: jkern.gram(make(v), trees, dtype="float64"))(
                jnp.array(values))
        want = loop(make, values, trees)
        assert not np.allclose(want[0], want[-1])  # the parameter matters here
        assert_rel(grid, want, 1e-12, "vmapped SPTK similarity grid")


def test_normalized_cross_block_grid_equals_the_loop(trees):
    # Normalized's cross block takes both sides' self-kernels: the diagonal under vmap too
    make = lambda lam: jkern.Normalized(jkern.PTK(lam, 0.4))  # noqa: E731
    rows, cols = trees[:10], trees[10:]
    with strict():
        grid = jax.vmap(lambda lam: jkern.gram(make(lam), rows, cols, dtype="float64"))(
            jnp.array(LAMS))
    want = np.stack([np.asarray(jkern.gram(make(lam), rows, cols, dtype="float64"))
                     for lam in LAMS])
    assert_rel(grid, want, 1e-12, "vmapped normalized cross block")


def test_grad_through_a_grid_still_differentiates(trees):
    few = trees[:6]

    def total(lam):
        return jkern.gram(jkern.PTK(lam, 0.4), few, dtype="float64").sum()

    grads = jax.vmap(jax.grad(total))(jnp.array(LAMS))
    h = 1e-6
    for lam, got in zip(LAMS, np.asarray(grads)):
        fd = (float(total(lam + h)) - float(total(lam - h))) / (2 * h)
        assert float(got) == pytest.approx(fd, rel=1e-6)


def test_a_parameter_array_outside_a_transformation_is_refused(trees):
    with pytest.raises(InputError, match="vmap"):
        jkern.gram(jkern.PTK(jnp.array([0.2, 0.4]), 0.4), trees[:3])
