"""Kernel algebra beyond + and *: constants and number + kernel, `sum()` of kernels, work
counters that add up over a sum, vector kernels that refuse unknown options, and the one
kernel-by-name registry."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jkern
from jkern.errors import InputError
from jkern.kernels import KERNEL_NAMES, Constant, Sum, kernel_by_name
from jkern.trees import parse_penn

TREES = [parse_penn(s) for s in ("(S (NP (DT the)(NN dog))(VP (VBZ barks)))",
                                 "(S (NP (DT a)(NN cat))(VP (VBZ sleeps)))",
                                 "(S (NP (NN dog))(VP (VBZ barks)))")]
F64 = {"dtype": "float64"}


def test_number_plus_kernel_adds_a_constant():
    sst = jkern.SST(0.4)
    g = np.asarray(jkern.gram(sst, TREES, **F64))
    for k in (sst + 1.5, 1.5 + sst, sst + jnp.asarray(1.5)):
        assert isinstance(k, Sum)
        np.testing.assert_array_equal(np.asarray(jkern.gram(k, TREES, **F64)), g + 1.5)
    # a rectangular block and the diagonal
    np.testing.assert_array_equal(np.asarray(jkern.gram(sst + 2.0, TREES[:1], TREES, **F64)),
                                  g[:1] + 2.0)
    np.testing.assert_array_equal(np.asarray((sst + 2.0).diag(TREES, **F64)), np.diag(g) + 2.0)


def test_sum_of_kernels_starts_from_zero():
    sst, ptk = jkern.SST(0.4), jkern.PTK(0.4, 0.4)
    assert sst + 0 is sst and 0 + sst is sst
    total = sum([sst, ptk])
    np.testing.assert_array_equal(np.asarray(jkern.gram(total, TREES, **F64)),
                                  np.asarray(jkern.gram(sst + ptk, TREES, **F64)))


def test_constant_on_any_input_and_under_jit_and_vmap():
    c = Constant(0.25)
    np.testing.assert_array_equal(np.asarray(c.gram(TREES, dtype="float64")),
                                  np.full((3, 3), 0.25))
    np.testing.assert_array_equal(np.asarray(c.gram(np.ones((2, 4)), np.ones((5, 4)))),
                                  np.full((2, 5), 0.25, np.float32))
    assert c.diag(TREES).shape == (3,)
    values = jnp.array([0.0, 1.0, 3.0])
    grams = jax.vmap(lambda v: jkern.gram(jkern.Linear() + Constant(v), jnp.eye(2)))(values)
    np.testing.assert_array_equal(np.asarray(grams),
                                  np.eye(2)[None] + np.asarray(values)[:, None, None])
    jitted = jax.jit(lambda k: k.gram(jnp.eye(3)))(Constant(2.0))
    np.testing.assert_array_equal(np.asarray(jitted), np.full((3, 3), 2.0, np.float32))


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), [1.0, 2.0]])
def test_constant_rejects_bad_values(value):
    with pytest.raises(InputError, match="finite number >= 0"):
        Constant(value)


def test_work_counters_add_up_over_a_sum_and_a_product():
    sst, ptk = jkern.SST(0.4), jkern.PTK(0.4, 0.4)
    alone: list[dict] = [{}, {}]
    jkern.gram(sst, TREES, stats=alone[0], **F64)
    jkern.gram(ptk, TREES, stats=alone[1], **F64)
    for combined in (sst + ptk, sst * ptk, jkern.Normalized(sst + ptk)):
        stats: dict = {}
        jkern.gram(combined, TREES, stats=stats, **F64)
        assert set(stats) == set(alone[0])
        for name in stats:
            if name.endswith("seconds"):  # where the time went (it varies): a sum's too
                assert stats[name] >= 0, (combined, name)
                continue
            assert stats[name] == alone[0][name] + alone[1][name], (combined, name)
    assert alone[0]["delta_entries"] > 0 and alone[1]["delta_entries"] > 0


def test_vector_kernels_take_the_gram_options_and_refuse_others():
    x = np.eye(3)
    for k in (jkern.Linear(), jkern.Polynomial(2), jkern.RBF(0.5), Constant(1.0)):
        k.gram(x, threads=2, block_size=8, progress=False, devices=None, stats={})
        with pytest.raises(TypeError, match="unknown option"):
            k.gram(x, thread=2)
        with pytest.raises(TypeError, match="unknown option"):
            k.diag(x, blocksize=8)
    # a sum forwards the tree kernel's options to the vector side
    ex = jkern.trees.parse_svmlight_line("1 |BT| (S (NP a)) |ET| 1:1.0 2:0.5")
    jkern.gram(jkern.SST(0.4) + jkern.Linear(), [ex, ex], threads=1, block_size=4)


def test_the_registry_builds_every_kernel_and_checks_its_options():
    expected = {"st": jkern.ST, "sst": jkern.SST, "sst-bow": jkern.SSTBow, "ptk": jkern.PTK}
    for name, cls in expected.items():
        k = kernel_by_name(name, lam=0.3, mu=0.2)
        assert type(k) is cls and float(k.lam) == 0.3
    assert kernel_by_name("ptk", mu=0.2, max_subseq=3).max_subseq == 3
    norm = kernel_by_name("sst", normalize=True)
    assert isinstance(norm, jkern.Normalized) and isinstance(norm.kernel, jkern.SST)
    vocab, vectors = ["dog", "cat"], np.eye(2)
    sptk = kernel_by_name("sptk", vocab=vocab, vectors=vectors)
    assert isinstance(sptk, jkern.SPTK) and float(sptk.threshold) == 0.0 and sptk.gamma is None
    assert float(kernel_by_name("sptk", vocab=vocab, vectors=vectors, gamma=2.0).gamma) == 2.0
    csptk = kernel_by_name("csptk", vocab=vocab, vectors=vectors, gamma=2.0, A=2 * np.eye(2))
    assert isinstance(csptk, jkern.CSPTK) and float(csptk.A[0, 0]) == 2.0
    assert float(csptk.B[0, 0]) == 1.0
    assert set(KERNEL_NAMES) == set(expected) | {"sptk", "csptk"}
    with pytest.raises(InputError, match="only applies to csptk"):
        kernel_by_name("sptk", vocab=vocab, vectors=vectors, A=np.eye(2))
    with pytest.raises(InputError, match="unknown tree kernel"):
        kernel_by_name("stk")
    with pytest.raises(InputError, match="word vectors"):
        kernel_by_name("sptk")
    with pytest.raises(InputError, match="only applies to sptk"):
        kernel_by_name("ptk", gamma=1.0)
    with pytest.raises(InputError, match="gamma replaces it"):
        kernel_by_name("sptk", vocab=vocab, vectors=vectors, threshold=0.3, gamma=1.0)
