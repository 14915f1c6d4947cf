"""Kernel learning by gradient (issue 33): the alignment objective against a plain NumPy
formula, and `learn_kernel` raising the alignment of a CSPTK on trees whose class is
carried by a head-modifier composition."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jkern
from jkern.errors import InputError
from jkern.kernels import alignment
from jkern.trees import Token, cgrct


def test_alignment_matches_its_definition():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 3))
    k = x @ x.T
    y = np.array([0, 1, 2, 0, 1, 2, 2])
    z = np.eye(3)[y]
    h = np.eye(7) - 1 / 7
    kc, yc = h @ k @ h, h @ z @ z.T @ h
    want = np.sum(kc * yc) / (np.linalg.norm(kc) * np.linalg.norm(yc))
    assert float(alignment(jax.numpy.asarray(k), jax.numpy.asarray(y), 3)) == pytest.approx(
        want, rel=1e-6)


def _sentence(subject: str, verb: str) -> list[Token]:
    return [Token(1, subject, subject, "NOUN", "NN", 2, "nsubj"),
            Token(2, verb, verb, "VERB", "VBZ", 0, "root")]


def test_learn_kernel_raises_the_alignment_and_keeps_the_kernel_type():
    # Class = which verb; the composed (verb, subject) pair carries it, the subject does not.
    subjects, verbs = ["dog", "cat", "cow", "pig"], ["bark", "run"]
    trees = [cgrct(_sentence(s, v)) for v in verbs for s in subjects]
    labels = [v for v in verbs for _ in subjects]
    rng = np.random.default_rng(1)
    vocab = subjects + verbs
    vectors = rng.normal(size=(len(vocab), 4))
    start = jkern.CSPTK(vocab, vectors, lam=0.4, mu=0.4, gamma=1.0)
    sol = jkern.learn_kernel(trees, labels, kernel=start, key=jax.random.key(0), steps=15,
                             batch_size=8, batches=1, learning_rate=0.1)
    assert bool(sol.converged)
    assert isinstance(sol.model, jkern.CSPTK)
    assert sol.stats["steps"] == 15
    assert sol.stats["final_alignment"] > sol.stats["initial_alignment"] + 0.01
    assert 0 < float(sol.model.lam) < 1 and 0 < float(sol.model.mu) < 1
    assert float(sol.model.gamma) > 0
    assert not np.allclose(np.asarray(sol.model.A), np.eye(4))


def test_learn_kernel_refuses_bad_input():
    trees = [cgrct(_sentence("dog", "bark"))] * 4
    k = jkern.CSPTK(["dog"], np.ones((1, 2)), gamma=1.0)
    key = jax.random.key(0)
    with pytest.raises(InputError, match="two classes"):
        jkern.learn_kernel(trees, [1, 1, 1, 1], kernel=k, key=key)
    with pytest.raises(InputError, match="one per tree"):
        jkern.learn_kernel(trees, [1, 2], kernel=k, key=key)
    with pytest.raises(InputError, match="gamma is learned only"):
        jkern.learn_kernel(trees, [1, 2, 1, 2], kernel=jkern.CSPTK(["dog"], np.ones((1, 2))),
                           key=key)
    with pytest.raises(InputError, match="not SST"):
        jkern.learn_kernel(trees, [1, 2, 1, 2], kernel=jkern.SST(), key=key)
    with pytest.raises(InputError, match="no trainable field"):
        jkern.learn_kernel(trees, [1, 2, 1, 2], kernel=jkern.PTK(), key=key, trainable=["A"])


def test_sptk_gradients_match_finite_differences():
    """d K / d (lam, mu, gamma) of a normalized SPTK entry against central differences."""
    import equinox as eqx

    trees = [jkern.trees.parse_penn("(S (NP (NN dog::NN))(VP (VBZ barks::VBZ)(NN cat::NN)))"),
             jkern.trees.parse_penn("(S (NP (NN cat::NN))(VP (VBZ runs::VBZ)))")]
    vocab = ["dog", "cat", "barks", "runs"]
    vectors = np.random.default_rng(3).normal(size=(4, 3))
    kernel = jkern.SPTK(vocab, vectors, lam=0.35, mu=0.45, gamma=1.5)

    def entry(k):
        return jkern.Normalized(k).gram(trees, dtype="float64")[0, 1]

    grads = eqx.filter_grad(entry)(kernel)
    eps = 1e-6
    for field in ("lam", "mu", "gamma"):
        def moved(d, field=field):
            return eqx.tree_at(lambda k: getattr(k, field), kernel,
                               getattr(kernel, field) + d)
        fd = (float(entry(moved(eps))) - float(entry(moved(-eps)))) / (2 * eps)
        assert float(getattr(grads, field)) == pytest.approx(fd, rel=1e-5, abs=1e-10), field
