"""`jkern.gram` for the tree kernels against SVM-Light-TK's values (../shared/ref), the
plain-Python oracle (tests/reference_kernels.py) and closed forms.

Every distinct forest (set of trees) and kernel family compiles its own XLA functions, so
the tests share one module-scoped corpus -- the 50 reference trees, 150 TREC questions and
a few UD sentences as GRCT/LCT trees -- and read blocks out of its Gram matrices.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
import reference_kernels as R
from data_paths import require
from helpers import N_TREC, assert_rel, load_corpus, make_kernel, read_tsv, word_sigma

import jkern
from jkern.errors import InputError
from jkern.trees import Tree, lct, parse_penn, read_conllu

LAM, MU = 0.4, 0.4
N_ORACLE_TREC = 40

# --------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def corpus(shared_data):
    return load_corpus(shared_data)


@pytest.fixture(scope="module")
def corpus_gram(corpus):
    """`corpus_gram(kernel)`: the float64 Gram of the whole corpus, cached per kernel."""
    cache: dict = {}

    def get(kernel):
        key = (type(kernel).__name__, float(getattr(kernel, "lam", 0)),
               float(getattr(kernel, "mu", 0)), getattr(kernel, "max_subseq", None))
        if key not in cache:
            cache[key] = np.asarray(jkern.gram(kernel, corpus["all"], dtype="float64"))
        return cache[key]

    return get


# --------------------------------------------------------------------------- 1. SVM-Light-TK

SETTINGS = R.SETTINGS


def _jkern_kernel(kernel: str, lam: float, mu: float, variant: str):
    return make_kernel(kernel, lam, mu, {"dist": 5, "exact": None}[variant])


@functools.lru_cache(maxsize=1)
def _ref_rows() -> dict[tuple, np.ndarray]:
    out: dict[tuple, list] = {}
    for r in read_tsv(R.REF_DIR / "ref_gram.tsv"):
        key = (r["kernel"], float(r["lambda"]), float(r["mu"]), r["variant"])
        out.setdefault(key, []).append(
            (int(r["i"]), int(r["j"]), float(r["raw"]), float(r["normalized"]))
        )
    return {k: np.array(v) for k, v in out.items()}


def test_corpus_reads_the_reference_trees(corpus):
    rows = read_tsv(R.REF_DIR / "trees50.tsv")
    assert [len(t) for t in corpus["ref"]] == [int(r["n_nodes"]) for r in rows]
    assert corpus["ref"] == R.read_ref_trees()  # jkern's parser == the oracle's reader


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(map(str, s)))
def test_gram_reproduces_svmlight_tk(corpus, corpus_gram, setting):
    require(R.REF_DIR / "ref_gram.tsv")
    rows = _ref_rows()[setting]
    assert len(rows) == 50 * 51 // 2
    i, j = rows[:, 0].astype(int), rows[:, 1].astype(int)
    k = _jkern_kernel(*setting)
    g = corpus_gram(k)  # the ref trees are the corpus' first 50
    assert_rel(g[i, j], rows[:, 2], 1e-9, f"raw {setting}")
    gn = np.asarray(jkern.gram(jkern.Normalized(k), corpus["all"], dtype="float64"))
    assert_rel(gn[i, j], rows[:, 3], 1e-9, f"normalized {setting}")


# --------------------------------------------------------------------------- 2. oracle


@functools.cache
def _oracle_gram(name: str, trees: tuple[Tree, ...], **kw) -> np.ndarray:
    f = R.kernel_function(name, **kw)
    n = len(trees)
    g = np.zeros((n, n))
    for a in range(n):
        for b in range(a, n):
            g[a, b] = g[b, a] = f(trees[a], trees[b])
    return g


def _oracle_trees(corpus) -> tuple[tuple[Tree, ...], np.ndarray]:
    """The first 40 TREC trees and the UD trees, and their rows in the corpus."""
    n_ref = len(corpus["ref"])
    idx = np.r_[n_ref : n_ref + N_ORACLE_TREC, n_ref + N_TREC : len(corpus["all"])]
    return tuple(corpus["all"][k] for k in idx), idx


@pytest.mark.parametrize(
    "name, kernel",
    [("ST", jkern.ST(LAM)), ("SST", jkern.SST(LAM)), ("SST_BOW", jkern.SSTBow(LAM)),
     ("PTK", jkern.PTK(LAM, MU))],
    ids=["ST", "SST", "SST_BOW", "PTK"],
)
def test_gram_matches_oracle_on_real_trees(corpus, corpus_gram, name, kernel):
    trees, idx = _oracle_trees(corpus)
    assert any("::" in lab for t in trees for lab in t.labels)  # lexical nodes present
    kw = {"lam": LAM} if name != "PTK" else {"lam": LAM, "mu": MU}
    want = _oracle_gram(name, trees, **kw)
    assert np.count_nonzero(want) > len(trees)  # plenty of off-diagonal matches
    assert_rel(corpus_gram(kernel)[np.ix_(idx, idx)], want, 1e-9, name)


def test_ptk_max_subseq_matches_oracle(corpus):
    # trees with at most 4 children per node: fewer shapes to compile, and the limit still
    # bites (3 against 3 children)
    trees = tuple(t for t in _oracle_trees(corpus)[0] if max(map(len, t.children)) <= 4)
    assert len(trees) >= 30 and any("::" in lab for t in trees for lab in t.labels)
    g = jkern.gram(jkern.PTK(0.6, 0.8, max_subseq=2), list(trees), dtype="float64")
    want = _oracle_gram("PTK", trees, lam=0.6, mu=0.8, max_subseq=2)
    assert_rel(g, want, 1e-9, "PTK max_subseq=2")
    exact = _oracle_gram("PTK", trees, lam=0.6, mu=0.8)
    assert np.any(np.abs(exact - want) > 1e-6 * exact)  # the limit does bite here


# --------------------------------------------------------------------------- 3. forest = pairs


@pytest.mark.parametrize(
    "kernel, n_pairs", [(jkern.SST(LAM), 3), (jkern.PTK(LAM, MU), 2)], ids=["SST", "PTK"]
)
def test_forest_gram_equals_pairwise_gram(corpus, corpus_gram, kernel, n_pairs):
    g = corpus_gram(kernel)
    _, idx = _oracle_trees(corpus)
    rng = np.random.default_rng(0)
    # pairs with shared structure (non-zero entries), one of them a tree with itself
    cand = [(a, b) for a in idx for b in idx if a < b and g[a, b] > 0]
    picks = [cand[k] for k in rng.choice(len(cand), n_pairs - 1, replace=False)]
    picks.append((idx[-1], idx[-1]))
    for a, b in picks:
        ta, tb = corpus["all"][a], corpus["all"][b]
        got = jkern.gram(kernel, [ta], [tb], dtype="float64")
        assert got.shape == (1, 1)
        assert_rel(got[0, 0], g[a, b], 1e-12, f"pair {(a, b)}")
        assert_rel(jkern.gram(kernel, [tb], dtype="float64")[0, 0], g[b, b], 1e-12,
                   f"self {b}")


def test_rectangular_gram_is_a_block_of_the_square_one(corpus, corpus_gram):
    # (SST only: the rectangular blocks are family-independent, and each family recompiles)
    kernel = jkern.SST(LAM)
    trees, g = corpus["all"], corpus_gram(kernel)
    cut = 70  # A + B is the corpus: the same forest as the square Gram
    ab = np.asarray(jkern.gram(kernel, trees[:cut], trees[cut:], dtype="float64"))
    assert ab.shape == (cut, len(trees) - cut)
    assert_rel(ab, g[:cut, cut:], 1e-12, "G[A, B]")
    ba = np.asarray(jkern.gram(kernel, trees[cut:], trees[:cut], dtype="float64"))
    assert_rel(ba, g[cut:, :cut], 1e-12, "G[B, A]")


def test_stats_counts_the_work(corpus):
    stats: dict = {}
    trees = corpus["all"]
    jkern.gram(jkern.SST(LAM), trees, dtype="float64", stats=stats)
    assert stats["trees"] == len(trees)
    assert stats["total_nodes"] == sum(len(t) for t in trees)
    assert 0 < stats["forest_nodes"] < stats["total_nodes"]  # shared subtrees stored once
    assert stats["delta_entries"] > 0 and stats["node_pairs"] > 0


def _engine_gram(kernel, trees, *, residual=None, threads=2, block_size=64):
    """The Gram matrix through the engine directly, optionally forcing PTK's residual mode."""
    import dataclasses

    from jkern.kernels._engine import GramEngine
    from jkern.kernels._schedule import compute_gram
    from jkern.trees import Forest

    forest = Forest.build(trees)
    plan = kernel.match_plan(forest)
    if residual is not None:
        plan = dataclasses.replace(plan, residual=residual)
    engine = GramEngine(forest, plan, jnp.float64)
    g = compute_gram(engine, kernel.params(), np.arange(len(trees)), None,
                     block_size=block_size, threads=threads)
    return np.asarray(g), engine.counts


def test_ptk_residual_mode_equals_the_full_dp(corpus, corpus_gram):
    # PTK computes R = Delta - mu lam^2 only on internal pairs sharing a child key; the plain
    # mode runs the DP on every same-label pair. Same Gram, far fewer Delta evaluations.
    kernel = jkern.PTK(LAM, MU)
    full, full_counts = _engine_gram(kernel, corpus["all"], residual=False)
    resid, counts = _engine_gram(kernel, corpus["all"], residual=True)
    assert_rel(resid, full, 1e-12, "residual vs full DP")
    assert_rel(corpus_gram(kernel), full, 1e-12, "jkern.gram vs full DP")
    assert counts.constant_entries > 0
    assert counts.delta_entries + counts.constant_entries < full_counts.delta_entries
    assert counts.node_pairs == full_counts.node_pairs


def test_ptk_residual_mode_with_many_child_labels():
    # 300 labels: the child-key bitset is exact for the 64 most frequent keys and hashed for
    # the rest; collisions must only cost work, never values.
    rng = np.random.default_rng(7)

    def tree(depth):
        label = f"L{rng.integers(0, 300)}"
        if depth == 0 or rng.random() < 0.25:
            return label
        return (label, [tree(depth - 1) for _ in range(int(rng.integers(1, 6)))])

    trees = [Tree.from_nested(tree(3)) for _ in range(40)]
    kernel = jkern.PTK(0.7, 0.6)
    full, _ = _engine_gram(kernel, trees, residual=False, block_size=16)
    resid, _ = _engine_gram(kernel, trees, residual=True, block_size=16)
    assert_rel(resid, full, 1e-12, "residual vs full DP")
    for a, b in [(0, 1), (2, 2), (5, 9)]:
        want = R.ptk(trees[a], trees[b], 0.7, 0.6)
        assert_rel(resid[a, b], want, 1e-9, f"oracle {(a, b)}")


def test_gram_does_not_depend_on_threads(corpus):
    kernel = jkern.PTK(LAM, MU)
    one, _ = _engine_gram(kernel, corpus["all"], threads=1)
    two, _ = _engine_gram(kernel, corpus["all"], threads=2)
    np.testing.assert_array_equal(one, two)


# --------------------------------------------------------------------------- 4. SPTK

SPTK_TREES = [
    "(S (NP (DT the)(NN dog))(VP (VBZ barks)))",
    "(S (NP (DT a)(NN cat))(VP (VBZ meows)(ADVP (RB loudly))))",
    "(S (NP (DT the)(JJ big)(NN puppy))(VP (VBZ barks)(ADVP (RB softly))))",
    "(NP (DT the)(NN hound))",
    "(bark::v (root)(VERB)(dog::n (nsubj)(NOUN)(the::det (det)(DET))))",
    "(meow::v (root)(VERB)(cat::n (nsubj)(NOUN)(a::det (det)(DET)))(loudly::r (advmod)(ADV)))",
    "(bark::v (root)(VERB)(puppy::n (nsubj)(NOUN)(big::j (amod)(ADJ))))",
]
SPTK_VOCAB = ["dog", "cat", "puppy", "hound", "bark", "barks", "meow", "meows", "the", "a",
              "loudly", "softly"]  # "big" left out on purpose


@pytest.fixture(scope="module")
def sptk_trees(shared_data):
    trees = [parse_penn(s) for s in SPTK_TREES]
    short = [s for s in read_conllu(
        require(shared_data / "ud-english-ewt" / "en_ewt-ud-dev.conllu")) if len(s) <= 6][:2]
    trees += [lct(s) for s in short]
    leaves = {t.labels[i] for t in trees for i in range(len(t)) if t.is_leaf(i)}
    internal = {t.labels[i] for t in trees for i in range(len(t)) if not t.is_leaf(i)}
    assert not leaves & internal  # so the oracle's sigma can tell words by their label
    return trees, leaves


def _sptk_vectors(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(len(SPTK_VOCAB), len(SPTK_VOCAB)))
    for a, b in [("cat", "dog"), ("puppy", "dog"), ("hound", "dog"), ("meow", "bark"),
                 ("meows", "barks"), ("a", "the"), ("softly", "loudly")]:
        v[SPTK_VOCAB.index(a)] = v[SPTK_VOCAB.index(b)] + 0.8 * v[SPTK_VOCAB.index(a)]
    return v


def test_sptk_with_orthogonal_or_unused_vectors_is_ptk(sptk_trees):
    trees, _ = sptk_trees
    ptk = np.asarray(jkern.gram(jkern.PTK(LAM, MU), trees, dtype="float64"))
    n = len(SPTK_VOCAB)
    identity = jkern.SPTK(SPTK_VOCAB, np.eye(n), LAM, MU)
    assert_rel(jkern.gram(identity, trees, dtype="float64"), ptk, 1e-12, "identity vectors")
    unused = jkern.SPTK([f"zz{k}" for k in range(n)], _sptk_vectors(1), LAM, MU, threshold=0.3)
    assert_rel(jkern.gram(unused, trees, dtype="float64"), ptk, 1e-12, "vocabulary unused")


def test_sptk_matches_oracle_with_word_similarities(sptk_trees):
    trees, leaves = sptk_trees
    vectors, threshold = _sptk_vectors(), 0.3
    k = jkern.SPTK(SPTK_VOCAB, vectors, LAM, MU, threshold=threshold)
    g = np.asarray(jkern.gram(k, trees, dtype="float64"))
    sigma = word_sigma(vectors, threshold, leaves, SPTK_VOCAB)
    n = len(trees)
    want = np.array([[R.sptk(trees[a], trees[b], LAM, MU, sigma) for b in range(n)]
                     for a in range(n)])
    assert_rel(g, want, 1e-9, "SPTK")
    ptk = np.array([[R.ptk(trees[a], trees[b], LAM, MU) for b in range(n)] for a in range(n)])
    assert np.all(want >= ptk) and np.sum(want > ptk * (1 + 1e-9)) >= 6  # smoothing matters


@pytest.mark.parametrize("gamma", [0.5, 3.0])
def test_sptk_gaussian_similarity_matches_oracle(sptk_trees, gamma):
    # The oracle writes sigma as exp(-gamma |u - v|^2 / 2) on unit vectors, the engine as
    # exp(gamma (cos - 1)): equal for unit vectors, computed independently.
    trees, leaves = sptk_trees
    vectors = _sptk_vectors()
    k = jkern.SPTK(SPTK_VOCAB, vectors, LAM, MU, gamma=gamma)
    g = np.asarray(jkern.gram(k, trees, dtype="float64"))
    sigma = word_sigma(vectors, 0.0, leaves, SPTK_VOCAB, gamma=gamma)
    n = len(trees)
    want = np.array([[R.sptk(trees[a], trees[b], LAM, MU, sigma) for b in range(n)]
                     for a in range(n)])
    assert_rel(g, want, 1e-9, f"SPTK gamma={gamma}")


def test_sptk_gaussian_similarity_is_positive_semidefinite(sptk_trees):
    # Gaussian word similarity (PSD) makes SPTK PSD, whatever the vectors.
    trees, _ = sptk_trees
    for seed in range(3):
        vectors = np.random.default_rng(seed).normal(size=(len(SPTK_VOCAB), 4))
        gauss = jkern.Normalized(jkern.SPTK(SPTK_VOCAB, vectors, LAM, MU, gamma=0.3))
        g = np.asarray(jkern.gram(gauss, trees, dtype="float64"))
        assert np.linalg.eigvalsh(g).min() > -1e-12


def test_sptk_gaussian_similarity_tends_to_ptk(sptk_trees):
    trees, _ = sptk_trees
    ptk = np.asarray(jkern.gram(jkern.PTK(LAM, MU), trees, dtype="float64"))
    sharp = jkern.SPTK(SPTK_VOCAB, _sptk_vectors(), LAM, MU, gamma=1e6)
    assert_rel(jkern.gram(sharp, trees, dtype="float64"), ptk, 1e-12, "gamma -> infinity")


@pytest.mark.parametrize("kwargs,match", [({"gamma": 0.0}, "gamma must be > 0"),
                                          ({"gamma": 2.0, "threshold": 0.3}, "threshold")])
def test_sptk_gaussian_similarity_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jkern.SPTK(["dog"], np.ones((1, 2)), LAM, MU, **kwargs)


def test_sptk_equals_ptk_when_a_word_is_also_a_label():
    # (. ?) and (. .): the word "." and the PoS node "." share a label, as in real parses;
    # likewise a GRCT relation node "nsubj" and an LCT leaf "nsubj".
    trees = [parse_penn("(S (NP (NN dogs))(. .))"), parse_penn("(S (NP (NN cats))(. ?))")]
    ptk = jkern.gram(jkern.PTK(LAM, MU), trees, dtype="float64")
    sptk = jkern.gram(jkern.SPTK(["dogs", "cats"], np.eye(2), LAM, MU), trees,
                      dtype="float64")
    assert_rel(sptk, ptk, 1e-12, "SPTK vs PTK")


def test_sptk_with_empty_vocabulary_is_ptk():
    trees = [parse_penn("(S (NP (NN dogs))(VP bark))"), parse_penn("(S (NP (NN cats))(VP bark))")]
    ptk = jkern.gram(jkern.PTK(LAM, MU), trees, dtype="float64")
    sptk = jkern.gram(jkern.SPTK([], np.zeros((0, 3)), LAM, MU), trees, dtype="float64")
    assert_rel(sptk, ptk, 1e-12, "SPTK vs PTK")


# --------------------------------------------------------------------------- 5. overflow


def _clauses(n: int) -> Tree:
    """A right-branching chain of n clauses `(S (NP (DT the)(NN dog))(VP (VBZ barks)) S)`."""
    text = "(S (NP (DT the)(NN dog))(VP (VBZ barks)))"
    for _ in range(n - 1):
        text = f"(S (NP (DT the)(NN dog))(VP (VBZ barks)){text})"
    return parse_penn(text)


def test_float32_overflow_raises_and_float64_is_finite():
    tree = _clauses(48)
    assert len(tree) >= 400
    k = jkern.PTK(1.0, 1.0)
    with pytest.raises(FloatingPointError, match="float64"):
        jkern.gram(k, [tree], dtype="float32")
    g = np.asarray(jkern.gram(k, [tree], dtype="float64"))
    assert np.isfinite(g).all() and g[0, 0] > np.finfo(np.float32).max
    assert jkern.gram(jkern.Normalized(k), [tree], dtype="float64")[0, 0] == 1.0


# --------------------------------------------------------------------------- 6. huge inputs


def _ptk_wide_closed_form(n: int, lam: float, mu: float) -> float:
    """PTK self-kernel of `(A w0 ... w{n-1})` (distinct leaves): only I1 = I2 matches."""
    x, acc, s = mu * lam**2, 0.0, 0.0
    for _ in range(n):  # f(i) = x (1 + sum_{j<i} lam^(2 (i-j-1)) f(j)), s = sum f
        f = x * (1 + acc)
        s += f
        acc = lam**2 * acc + f
    return n * mu * lam**2 + mu * (lam**2 + s)


def _chain_closed_form(n: int, lam: float, mu: float, kind: str) -> float:
    """Self-kernel of the unary chain `(A (A ... (A a)))` with n A nodes."""
    if kind == "PTK":  # nodes at heights 0 (leaf a) .. n; equal heights / min height m
        eq, ne, total = mu * lam**2, 0.0, mu * lam**2
        for m in range(1, n + 1):
            eq, ne = mu * (lam**2 + eq), mu * (lam**2 + ne)
            total += eq + 2 * (n - m) * ne
        return total
    # SST: heights 1 (A -> word a) .. n (A -> node A); height 1 only matches height 1
    eq, ne, total = lam, 0.0, lam
    for m in range(2, n + 1):
        eq, ne = lam * (1 + eq), lam * (1 + ne)
        total += eq + 2 * (n - m) * ne
    return total


def _chain(n: int) -> Tree:
    return Tree(("A",) * n + ("a",), tuple((i + 1,) for i in range(n)) + ((),))


def _wide_leaves(n: int) -> Tree:
    return Tree.from_nested(("A", [f"w{i}" for i in range(n)]))


def _wide_preterminals(n: int) -> Tree:
    return Tree.from_nested(("A", [("B", ["b"])] * n))


def test_closed_forms_match_oracle():
    for n in (1, 2, 7):
        t = _wide_leaves(n)
        assert R.ptk(t, t, 0.5, 0.7) == pytest.approx(_ptk_wide_closed_form(n, 0.5, 0.7),
                                                      rel=1e-12)
    for n in (1, 2, 3, 12):
        t = _chain(n)
        assert R.ptk(t, t, 0.5, 0.7) == pytest.approx(
            _chain_closed_form(n, 0.5, 0.7, "PTK"), rel=1e-12)
        assert R.sst(t, t, 0.5) == pytest.approx(_chain_closed_form(n, 0.5, 0.7, "SST"),
                                                 rel=1e-12)


def test_ptk_wide_node_and_deep_chain():
    wide, chain = _wide_leaves(200), _chain(500)
    g = np.asarray(jkern.gram(jkern.PTK(LAM, MU), [wide, chain], dtype="float64"))
    assert_rel(g[0, 0], _ptk_wide_closed_form(200, LAM, MU), 1e-9, "wide")
    assert_rel(g[1, 1], _chain_closed_form(500, LAM, MU, "PTK"), 1e-9, "chain")
    # the wide root A matches every A of the chain, with no matching children
    assert_rel(g[0, 1], 500 * MU * LAM**2, 1e-9, "wide vs chain")


def _big_tree(shared_data: Path, n_nodes: int = 10_000) -> tuple[Tree, list[Tree]]:
    """TREC questions hung on a right-branching spine of DOC nodes, >= n_nodes in all."""
    parts, texts, total = [], [], 0
    with open(require(shared_data / "trec" / "qc_train.tsv"), encoding="utf-8") as f:
        next(f)
        for line in f:
            texts.append(line.rstrip("\n").split("\t")[2])
            parts.append(parse_penn(texts[-1]))
            total += len(parts[-1]) + 1
            if total >= n_nodes:
                break
    return parse_penn("".join(f"(DOC {t} " for t in texts) + ")" * len(texts)), parts


def test_sst_wide_node_deep_chain_and_10k_node_tree(shared_data):
    wide, chain = _wide_preterminals(200), _chain(500)
    big, parts = _big_tree(shared_data)
    assert len(big) >= 10_000 and max(big.heights()) > 300
    probes = parts[:20]
    g = np.asarray(jkern.gram(jkern.SST(LAM), [wide, chain, big, *probes], dtype="float64"))
    assert_rel(g[0, 0], 200 * 200 * LAM + LAM * (1 + LAM) ** 200, 1e-9, "wide")
    assert_rel(g[1, 1], _chain_closed_form(500, LAM, MU, "SST"), 1e-9, "chain")
    assert g[0, 1] == 0 and g[0, 2] == 0 and g[1, 2] == 0
    assert np.isfinite(g[2, 2]) and g[2, 2] > 0
    # DOC nodes match nothing in a question: K(big, q) = sum over the parts of K(part, q)
    parts_g = np.asarray(jkern.gram(jkern.SST(LAM), parts, probes, dtype="float64"))
    assert_rel(g[2, 3:], parts_g.sum(axis=0), 1e-9, "K(big, q)")
    assert_rel(g[3:, 3:], parts_g[:20], 1e-12, "K(part, q)")


# --------------------------------------------------------------------------- 7. errors


def test_non_tree_input_raises_type_error():
    t = parse_penn("(S (NP (NN a)))")
    with pytest.raises(InputError, match="Tree"):
        jkern.gram(jkern.SST(LAM), ["(S (NP (NN a)))"])
    with pytest.raises(InputError, match="item 1"):
        jkern.gram(jkern.PTK(LAM, MU), [t, 3])
    with pytest.raises(InputError, match="item 0"):
        jkern.gram(jkern.SST(LAM), [t], [None])
    with pytest.raises(InputError, match="kernel"):
        jkern.gram(R.sst, [t])


def test_bad_configuration_raises_value_error():
    with pytest.raises(ValueError, match="max_subseq"):
        jkern.PTK(LAM, MU, max_subseq=0)
    with pytest.raises(ValueError, match="vectors"):
        jkern.SPTK(["a", "b"], jnp.ones((3, 4)))
    with pytest.raises(ValueError, match="float32 or float64"):
        jkern.gram(jkern.SST(LAM), [parse_penn("(A b)")], dtype="int32")


def test_one_node_trees():
    leaf, pre = Tree(("a",), ((),)), parse_penn("(A a)")
    assert math.isclose(R.ptk(leaf, pre, LAM, MU), MU * LAM**2)
    g = jkern.gram(jkern.PTK(LAM, MU), [leaf, pre], dtype="float64")
    assert_rel(g, [[MU * LAM**2, MU * LAM**2], [MU * LAM**2, 2 * MU * LAM**2 + MU**2 * LAM**2]],
               1e-12, "PTK")
