"""Kernel properties: symmetry, PSD, normalization, the kernel algebra, gradients, vmap,
jit round-trips, no recompilation, and a hypothesis check against the oracle."""

from __future__ import annotations

from contextlib import contextmanager

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_kernels as R

# The same corpus as test_kernels.py: the same forest, so the compiled functions are shared.
from data_paths import require
from helpers import assert_rel, load_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jkern
from jkern.trees import Example, Tree, parse_penn, parse_svmlight_line

LAM, MU = 0.4, 0.4
KERNELS = {"SST": jkern.SST(LAM), "PTK": jkern.PTK(LAM, MU)}

SMALL = [  # at most 2 children per node: few shapes to compile
    "(S (NP (DT the)(NN dog))(VP (VBZ barks)(NP (DT a)(NN cat))))",
    "(S (NP (DT a)(NN dog))(VP (VBZ sees)(NP (DT the)(NN cat))))",
    "(S (NP (NN dogs))(VP (VBP bark)))",
    "(dog)",  # a one-node tree: no SST node, self-kernel 0
]


@pytest.fixture(scope="module")
def corpus(shared_data):
    return load_corpus(shared_data)["all"]


@pytest.fixture(scope="module")
def grams(corpus):
    return {name: np.asarray(jkern.gram(k, corpus, dtype="float64"))
            for name, k in KERNELS.items()}


@pytest.fixture(scope="module")
def small():
    return [parse_penn(s) for s in SMALL]


# --------------------------------------------------------------------------- 8. symmetry, PSD


@pytest.mark.parametrize("name", KERNELS)
def test_gram_is_symmetric_psd_and_normalizes_into_unit_interval(corpus, grams, name):
    g = grams[name]
    assert np.array_equal(g, g.T)
    assert np.linalg.eigvalsh(g).min() >= -1e-9 * np.abs(g).max()
    d = np.diag(g)
    gn = np.asarray(jkern.gram(jkern.Normalized(KERNELS[name]), corpus, dtype="float64"))
    assert np.array_equal(gn, gn.T)
    assert gn.min() >= 0 and gn.max() <= 1
    ok = d > 0
    assert np.all(np.diag(gn)[ok] == 1.0)  # exactly 1
    assert np.all(gn[~ok] == 0) and np.all(gn[:, ~ok] == 0)
    want = np.where(np.outer(ok, ok), g / np.sqrt(np.outer(np.where(ok, d, 1),
                                                           np.where(ok, d, 1))), 0)
    np.fill_diagonal(want, ok.astype(float))
    assert_rel(gn, want, 1e-12, "normalized")
    assert np.linalg.eigvalsh(gn).min() >= -1e-9


def test_zero_self_kernel_normalizes_to_zero(small):
    g = np.asarray(jkern.gram(jkern.SST(LAM), small, dtype="float64"))
    assert g[3, 3] == 0 and np.all(np.diag(g)[:3] > 0)
    gn = np.asarray(jkern.gram(jkern.Normalized(jkern.SST(LAM)), small, dtype="float64"))
    assert np.all(np.isfinite(gn)) and np.all(gn[3] == 0) and np.all(gn[:, 3] == 0)
    np.testing.assert_array_equal(np.diag(gn), [1, 1, 1, 0])


# --------------------------------------------------------------------------- 9. algebra


def test_sum_product_scaling_normalized_sum(corpus, grams):
    sst, ptk = KERNELS["SST"], KERNELS["PTK"]
    gs, gp = grams["SST"], grams["PTK"]
    f64 = {"dtype": "float64"}
    assert isinstance(sst + ptk, jkern.kernels.Sum)
    assert_rel(jkern.gram(sst + ptk, corpus, **f64), gs + gp, 1e-12, "sum")
    assert_rel(jkern.gram(sst * ptk, corpus, **f64), gs * gp, 1e-12, "product")
    assert_rel(jkern.gram(0.3 * sst, corpus, **f64), 0.3 * gs, 1e-12, "c * k")
    assert_rel(jkern.gram(sst * 0.3, corpus, **f64), 0.3 * gs, 1e-12, "k * c")
    d = np.diag(gs + gp)
    assert_rel(jkern.gram(jkern.Normalized(sst + ptk), corpus, **f64),
               (gs + gp) / np.sqrt(np.outer(d, d)), 1e-12, "Normalized(sum)")


@pytest.fixture(scope="module")
def srl(shared_data):
    path = require(shared_data / "srl" / "boundary_5000.dat")
    with open(path, encoding="utf-8") as f:
        exs = [parse_svmlight_line(next(f).rstrip("\n"), source=str(path), line=k + 1)
               for k in range(30)]
    dim = 1 + max(i for e in exs for i, _ in e.vectors[0])
    x = np.zeros((len(exs), dim))
    for r, e in enumerate(exs):
        for i, v in e.vectors[0]:
            x[r, i] = v
    return exs, x


def test_tree_plus_vector_kernel_on_examples(srl):
    """SVM-Light-TK's `-C +` / `-C *`: a tree kernel on the tree, a vector kernel on the
    feature vector of the same examples."""
    exs, x = srl
    assert all(isinstance(e, Example) and len(e.trees) == 1 for e in exs)
    f64 = {"dtype": "float64"}
    sst = jkern.SST(LAM)
    gt = np.asarray(jkern.gram(sst, [e.trees[0] for e in exs], **f64))
    lin = x @ x.T
    assert_rel(jkern.gram(sst, exs, **f64), gt, 0, "trees of Examples")
    assert_rel(jkern.gram(sst + jkern.Linear(), exs, **f64), gt + lin, 1e-12, "SST + linear")
    assert_rel((sst + jkern.Linear()).diag(exs, **f64), np.diag(gt + lin), 1e-12, "diag")
    poly = jkern.Polynomial(2, 0.5, 1.0)
    assert_rel(jkern.gram(sst * poly, exs, **f64), gt * (0.5 * lin + 1) ** 2, 1e-12,
               "SST * poly")
    # rectangular: Normalized needs the self-kernels of both sides
    a, b = exs[:10], exs[10:]
    d = np.diag(gt)
    sq = (x[:10, None, :] - x[None, 10:, :]) ** 2
    want = gt[:10, 10:] / np.sqrt(np.outer(d[:10], d[10:])) + np.exp(-0.1 * sq.sum(-1))
    got = jkern.gram(jkern.Normalized(sst) + jkern.RBF(0.1), a, b, **f64)
    assert_rel(got, want, 1e-12, "Normalized(SST) + RBF, rectangular")


def test_vector_kernels_on_arrays():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    f64 = {"dtype": "float64"}
    assert_rel(jkern.gram(jkern.Linear(), a, b, **f64), a @ b.T, 1e-12, "linear")
    assert_rel(jkern.gram(jkern.Polynomial(3, 0.5, 2.0), a, b, **f64),
               (0.5 * a @ b.T + 2.0) ** 3, 1e-12, "poly")
    sq = ((a[:, None] - b[None]) ** 2).sum(-1)
    assert_rel(jkern.gram(jkern.RBF(0.7), a, b, **f64), np.exp(-0.7 * sq), 1e-12, "rbf")
    with pytest.raises(ValueError, match="same d"):
        jkern.gram(jkern.Linear(), a, b[:, :2])


# --------------------------------------------------------------------------- 10. gradients


def _central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_grad_of_normalized_ptk_entry_matches_finite_differences(small):
    def entry(lam, mu):
        return jkern.gram(jkern.Normalized(jkern.PTK(lam, mu)), small, dtype="float64")[0, 1]

    d_lam, d_mu = jax.grad(entry, argnums=(0, 1))(LAM, MU)
    fd_lam = _central(lambda p: float(entry(p, MU)), LAM)
    fd_mu = _central(lambda p: float(entry(LAM, p)), MU)
    assert abs(fd_lam) > 1e-3 and abs(fd_mu) > 1e-3  # real dependences, not 0 == 0
    assert float(d_lam) == pytest.approx(fd_lam, rel=1e-6)
    assert float(d_mu) == pytest.approx(fd_mu, rel=1e-6)


def test_grad_of_normalized_sst_entry_matches_finite_differences(small):
    def entry(lam):
        return jkern.gram(jkern.Normalized(jkern.SST(lam)), small, dtype="float64")[0, 1]

    fd = _central(lambda p: float(entry(p)), LAM)
    assert abs(fd) > 1e-3
    assert float(jax.grad(entry)(LAM)) == pytest.approx(fd, rel=1e-6)


def test_grad_of_raw_gram(small):
    def total(lam, mu):  # differentiated in both: the same traced shapes as above
        return jkern.gram(jkern.PTK(lam, mu), small, dtype="float64").sum()

    d_lam, d_mu = jax.grad(total, argnums=(0, 1))(LAM, MU)
    assert float(d_lam) == pytest.approx(_central(lambda p: float(total(p, MU)), LAM), rel=1e-6)
    assert float(d_mu) == pytest.approx(_central(lambda p: float(total(LAM, p)), MU), rel=1e-6)


# --------------------------------------------------------------------------- 11. vmap


# the engine donates its buffers; under vmap JAX cannot reuse them and says so
@pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")
def test_vmap_over_lambda_equals_loop(small):
    lams = jnp.array([0.2, 0.4, 0.7])
    batched = jax.vmap(lambda lam: jkern.gram(jkern.SST(lam), small, dtype="float64"))(lams)
    assert batched.shape == (3, len(small), len(small))
    for k, lam in enumerate([0.2, 0.4, 0.7]):
        assert_rel(batched[k], jkern.gram(jkern.SST(lam), small, dtype="float64"), 1e-12,
                   f"lam={lam}")


# --------------------------------------------------------------------------- 12. jit, compiles

MODULES = {
    "ST": jkern.ST(0.3, tree_index=1),
    "SST": jkern.SST(0.5),
    "SSTBow": jkern.SSTBow(0.6),
    "PTK": jkern.PTK(0.3, 0.7, max_subseq=4),
    "SPTK": jkern.SPTK(["dog", "cat"], np.eye(2), 0.3, 0.7, threshold=0.2, max_subseq=3),
    "SPTK-gamma": jkern.SPTK(["dog", "cat"], np.eye(2), 0.3, 0.7, gamma=4.0),
    "Linear": jkern.Linear(),
    "Polynomial": jkern.Polynomial(3, 0.5, 2.0, vector_index=1),
    "RBF": jkern.RBF(0.7),
    "Normalized": jkern.Normalized(jkern.SST(0.5)),
    "Sum": jkern.SST(0.5) + jkern.Linear(),
    "Product": jkern.PTK(0.3, 0.7) * jkern.RBF(0.7),
    "Scaled": 0.25 * jkern.ST(0.3),
}


@pytest.mark.parametrize("name", MODULES)
def test_jit_round_trip(name):
    k = MODULES[name]
    back = eqx.filter_jit(lambda m: m)(k)
    assert type(back) is type(k)
    leaves, treedef = jax.tree_util.tree_flatten(k)
    leaves2, treedef2 = jax.tree_util.tree_flatten(back)
    assert treedef == treedef2  # same static config (max_subseq, vocab, degree, ...)
    assert len(leaves) == len(leaves2) and (leaves or name == "Linear")
    for a, b in zip(leaves, leaves2):
        assert isinstance(b, jax.Array) and a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["Linear", "Polynomial", "RBF"])
def test_vector_kernel_call_under_jit_equals_gram(name):
    k = MODULES[name]
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=(3, 4)))
    g = jkern.gram(k, x, dtype="float64")
    via_jit = jax.jit(lambda kk, a, b: kk(a, b))(k, x[0], x[2])
    assert float(via_jit) == pytest.approx(float(g[0, 2]), rel=1e-12)
    batched = jax.vmap(jax.vmap(k, (None, 0)), (0, None))(x, x)
    assert_rel(batched, g, 1e-12, "vmapped calls")


@contextmanager
def count_compiles():
    """Counts XLA compilations (backend compiles) inside the block."""
    events = []

    def listener(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def test_second_gram_with_new_parameters_does_not_recompile(corpus, small):
    for trees, make in [(small, lambda p: jkern.SST(p)),
                        (corpus, lambda p: jkern.PTK(p, 1 - p))]:
        first = jkern.gram(make(0.4), trees, dtype="float64")
        with count_compiles() as compiles:
            second = jkern.gram(make(0.55), trees, dtype="float64")
            jax.block_until_ready(second)
        assert not compiles, f"{len(compiles)} recompilations"
        assert not np.allclose(first, second)  # the new parameter was used
    with count_compiles() as compiles:  # the counter does see compilations
        jax.jit(lambda x: x * 3 + 1)(jnp.arange(7.0)).block_until_ready()
    assert compiles


# --------------------------------------------------------------------------- 13. hypothesis

_LEAVES = st.sampled_from(["a", "b", "A"])  # "A" also as a word: a leaf child != node child
_NESTED = st.recursive(
    _LEAVES,
    lambda kids: st.tuples(st.sampled_from(["A", "B"]), st.lists(kids, min_size=1, max_size=2)),
    max_leaves=7,
)


@settings(max_examples=15, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_NESTED.map(Tree.from_nested), min_size=2, max_size=4))
def test_random_trees_match_oracle(trees):
    n = len(trees)
    g = np.asarray(jkern.gram(jkern.SST(LAM), trees, dtype="float64"))
    want = np.array([[R.sst(a, b, LAM) for b in trees] for a in trees])
    assert_rel(g, want, 1e-9, "SST")
    g = np.asarray(jkern.gram(jkern.PTK(LAM, MU), trees, dtype="float64"))
    want = np.array([[R.ptk(a, b, LAM, MU) for b in trees] for a in trees])
    assert_rel(g, want, 1e-9, "PTK")
    assert g.shape == (n, n)
