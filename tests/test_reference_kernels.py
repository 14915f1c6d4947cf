"""Check the plain-Python oracle (tests/reference_kernels.py) against SVM-Light-TK values
and against itself (brute-force vs dynamic-programming child sums, SPTK vs PTK)."""

from __future__ import annotations

import collections
import functools
import itertools
import math
import os
import random
from pathlib import Path

import pytest
import reference_kernels as R

from jkern.trees._tree import Tree

# --------------------------------------------------------------------------- ref data

SETTINGS = R.SETTINGS


def _require_ref() -> Path:
    """The ref directory, or skip (fail when JKERN_REQUIRE_DATA=1) when it is missing."""
    needed = [R.REF_DIR / "trees50.tsv", R.REF_DIR / "ref_gram.tsv"]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        msg = f"reference data missing: {', '.join(missing)}"
        if os.environ.get("JKERN_REQUIRE_DATA") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return R.REF_DIR


@functools.lru_cache(maxsize=1)
def _load_ref():
    ref = _require_ref()
    trees = R.read_ref_trees(ref / "trees50.tsv")
    rows: dict[tuple, list[tuple[int, int, float, float]]] = collections.defaultdict(list)
    with open(ref / "ref_gram.tsv", encoding="utf-8") as f:
        header = next(f).rstrip("\n").split("\t")
        col = {name: k for k, name in enumerate(header)}
        for line in f:
            x = line.rstrip("\n").split("\t")
            key = (
                x[col["kernel"]],
                float(x[col["lambda"]]),
                float(x[col["mu"]]),
                x[col["variant"]],
            )
            i, j = int(x[col["i"]]), int(x[col["j"]])
            rows[key].append((i, j, float(x[col["raw"]]), float(x[col["normalized"]])))
    return trees, dict(rows)


@pytest.fixture(scope="module")
def ref():
    return _load_ref()


def _kernel_for(kernel: str, lam: float, mu: float, variant: str):
    """A cached 2-tree kernel function for one ref setting (Trees are hashable)."""
    max_subseq = {"dist": 5, "exact": None}[variant]
    return functools.lru_cache(maxsize=None)(R.kernel_function(kernel, lam, mu, max_subseq))


def test_reader_matches_ref_file(ref):
    trees, _ = ref
    assert len(trees) == 50
    lines = (R.REF_DIR / "trees50.tsv").read_text(encoding="utf-8").splitlines()[1:]
    for t, line in zip(trees, lines):
        text = line.split("\t")[4]
        assert t.to_penn() == text  # Tree's own writer reproduces the file exactly
    # edge cases from the synthetic section
    assert trees[40] == Tree(("A", "b"), ((1,), ()))
    assert trees[46].labels == ("NP", "DT", "the", "dog")
    assert trees[46].children == ((1, 3), (2,), (), ())
    assert max(len(c) for c in trees[47].children) == 12
    assert "PRP$" in trees[49].labels and "-NONE-" in trees[49].labels
    assert "``" in trees[49].labels and "''" in trees[49].labels


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(map(str, s)))
def test_ref_gram_all_pairs(ref, setting):
    trees, rows = ref
    pairs = rows[setting]
    assert len(pairs) == 50 * 51 // 2
    k = _kernel_for(*setting)
    bad_raw, bad_norm = [], []
    for i, j, raw, norm in pairs:
        got = k(trees[i], trees[j])
        if not math.isclose(got, raw, rel_tol=1e-9, abs_tol=0.0):
            bad_raw.append((i, j, got, raw))
        got_n = R.normalized(k, trees[i], trees[j])
        if abs(got_n - norm) > 1e-9:
            bad_norm.append((i, j, got_n, norm))
    assert not bad_raw, f"{len(bad_raw)} raw mismatches, first: {bad_raw[:5]}"
    assert not bad_norm, f"{len(bad_norm)} normalized mismatches, first: {bad_norm[:5]}"


def test_ref_dist_vs_exact_differ_only_for_wide_nodes(ref):
    """`dist` (p = 5) and `exact` differ exactly where both trees have a >5-child node;
    the truncation is at 5, not 4 or 6."""
    trees, rows = ref
    d = {(i, j): r for i, j, r, _ in rows[("PTK", 0.4, 0.4, "dist")]}
    e = {(i, j): r for i, j, r, _ in rows[("PTK", 0.4, 0.4, "exact")]}
    wide = {k for k, t in enumerate(trees) if max(len(c) for c in t.children) > 5}
    for ij in d:
        if not (ij[0] in wide and ij[1] in wide):
            assert d[ij] == pytest.approx(e[ij], rel=1e-12)
    assert any(not math.isclose(d[ij], e[ij], rel_tol=1e-9) for ij in d)
    for p in (4, 6):
        mism = [
            ij
            for ij in d
            if not math.isclose(R.ptk(trees[ij[0]], trees[ij[1]], 0.4, 0.4, max_subseq=p), d[ij],
                                rel_tol=1e-9)
        ]
        assert mism, f"max_subseq={p} unexpectedly reproduces the dist variant"


# --------------------------------------------------------------------------- hand anchors


def _t(text: str) -> Tree:
    return R.parse_bracket(text)


def test_parse_bracket_edge_cases():
    assert _t("(S (NP (DT the) dog))") == Tree(("S", "NP", "DT", "the", "dog"),
                                               ((1,), (2, 4), (3,), (), ()))
    assert _t("word") == Tree(("word",), ((),))
    assert _t("(A)") == Tree(("A",), ((),))
    assert _t("(X (PRP$ my)(`` ``)(-NONE- *T*-1))").labels == (
        "X", "PRP$", "my", "``", "``", "-NONE-", "*T*-1")
    for bad in ["", "(A b", "A b)", "(A b)(B c)", "( (A b))"]:
        with pytest.raises(ValueError):
            _t(bad)


def test_st_sst_hand_values():
    lam = 0.4
    t = _t("(NP (DT the) dog)")  # mixed leaf / internal children
    # nodes NP, DT; DT-DT = lam; NP-NP = lam * Delta(DT,DT) (ST) or lam*(1+lam) (SST)
    assert R.st(t, t, lam) == pytest.approx(lam + lam * lam, rel=1e-15)
    assert R.sst(t, t, lam) == pytest.approx(lam + lam * (1 + lam), rel=1e-15)
    # leaves "the", "dog" add lam each to SST_BOW
    assert R.sst_bow(t, t, lam) == pytest.approx(R.sst(t, t, lam) + 2 * lam, rel=1e-15)
    # a lone leaf has no internal node
    assert R.sst(_t("a"), _t("a"), lam) == 0.0
    assert R.sst_bow(_t("a"), _t("a"), lam) == pytest.approx(lam)
    # a subtree mismatch deep down kills ST but not SST
    a, b = _t("(S (NP (DT the)))"), _t("(S (NP (DT a)))")
    assert R.st(a, b, 1.0) == 0.0
    # DT-DT: DT->the vs DT->a differ: 0.  NP-NP: same production NP->DT: ST 1*0 = 0,
    # SST 1*(1+0) = 1.  S-S: ST 0, SST 1*(1+1) = 2.  Total SST = 3.
    assert R.sst(a, b, 1.0) == pytest.approx(3.0, rel=1e-15)


def test_production_distinguishes_leaf_children():
    """(arg (arg self)) vs (arg arg): node over a node vs node over a word never match."""
    a, b = _t("(arg (arg self))"), _t("(arg arg)")
    assert R.production(a, 0) != R.production(b, 0)
    assert R.st(a, b, 0.4) == 0.0  # SVM-Light-TK would say 0.4 here
    assert R.sst(a, b, 0.4) == 0.0
    # PTK only looks at labels: arg-arg matches everywhere.
    assert R.ptk(a, b, 0.4, 0.4) > 0.0


def test_ptk_hand_values():
    lam, mu = 0.5, 0.7
    leaf = mu * lam**2
    assert R.ptk(_t("b"), _t("b"), lam, mu) == pytest.approx(leaf, rel=1e-15)
    assert R.ptk(_t("b"), _t("c"), lam, mu) == 0.0
    # (X a b c) vs (X a c): pairs a-a, c-c (leaves) and X-X.
    # X-X = mu*(lam^2 + [a-a] + [c-c] + lam^gaps((0,2))+gaps((0,1)) * [a-a][c-c])
    #     = mu*(lam^2 + 2 leaf + lam^1 * leaf^2)       (one skipped child, b)
    xx = mu * (lam**2 + 2 * leaf + lam * leaf**2)
    got = R.ptk(_t("(X a b c)"), _t("(X a c)"), lam, mu)
    assert got == pytest.approx(2 * leaf + xx, rel=1e-14)
    for m in ("dp", "brute"):
        again = R.ptk(_t("(X a b c)"), _t("(X a c)"), lam, mu, method=m)
        assert again == pytest.approx(got, rel=1e-14)
    # max_subseq=1 drops the length-2 term
    xx1 = mu * (lam**2 + 2 * leaf)
    assert R.ptk(_t("(X a b c)"), _t("(X a c)"), lam, mu, max_subseq=1) == pytest.approx(
        2 * leaf + xx1, rel=1e-14)
    # an internal node and a leaf with the same label match (lam^2 term only)
    assert R.ptk(_t("(, ,)"), _t(","), lam, mu) == pytest.approx(2 * leaf, rel=1e-15)
    with pytest.raises(ValueError):
        R.ptk(_t("a"), _t("a"), lam, mu, method="nope")


def test_normalized_zero_self_kernel():
    a, b = _t("a"), _t("(A b)")
    assert R.normalized(R.sst, a, b, lam=0.4) == 0.0
    assert R.normalized(R.sst, b, b, lam=0.4) == pytest.approx(1.0)


# --------------------------------------------------------------------------- self-consistency


def _random_tree(rng: random.Random, n_max: int, max_kids: int, labels: str, words: str) -> Tree:
    """A random tree with at most ~n_max nodes, <= max_kids children per node."""
    nested_count = [1]

    def build(depth: int):
        if depth > 4 or nested_count[0] >= n_max or rng.random() < 0.3:
            return rng.choice(words)
        k = rng.randint(1, max_kids)
        kids = []
        for _ in range(k):
            nested_count[0] += 1
            kids.append(build(depth + 1))
        return (rng.choice(labels), kids)

    root_kids = [build(1) for _ in range(rng.randint(1, max_kids))]
    return Tree.from_nested((rng.choice(labels), root_kids))


def test_child_sum_brute_vs_dp_random_matrices():
    rng = random.Random(1234)
    for _ in range(300):
        n1, n2 = rng.randint(0, 7), rng.randint(0, 7)
        lam = rng.choice([0.3, 0.5, 1.0, 1.7])
        m = [[rng.choice([0.0, 0.0, rng.uniform(0.1, 2.0)]) for _ in range(n2)] for _ in range(n1)]
        d = lambda a, b, m=m: m[a][b]  # noqa: E731
        for p in (None, 1, 2, 3, 5):
            b = R.child_sum_brute(d, n1, n2, lam, p)
            g = R.child_sum_dp(d, n1, n2, lam, p)
            assert g == pytest.approx(b, rel=1e-12, abs=1e-300), (n1, n2, lam, p)


def test_ptk_brute_vs_dp_random_trees():
    rng = random.Random(42)
    for k in range(60):
        a = _random_tree(rng, 25, 6, "ABC", "xyz")
        b = _random_tree(rng, 25, 6, "ABC", "xyz")
        lam, mu = rng.choice([(0.4, 0.4), (1.0, 1.0), (0.8, 0.6), (1.3, 0.9)])
        for p in (None, 1, 2, 3):
            dp = R.ptk(a, b, lam, mu, max_subseq=p, method="dp")
            br = R.ptk(a, b, lam, mu, max_subseq=p, method="brute")
            assert dp == pytest.approx(br, rel=1e-12), (k, p)
        # symmetry
        assert R.ptk(b, a, lam, mu) == pytest.approx(R.ptk(a, b, lam, mu), rel=1e-12)


def test_ptk_brute_vs_dp_on_ref_trees(ref):
    trees, _ = ref
    small = [k for k, t in enumerate(trees) if max(len(c) for c in t.children) <= 8]
    rng = random.Random(7)
    pairs = [(i, i) for i in (31, 33, 42)] + [tuple(rng.sample(small, 2)) for _ in range(40)]
    for i, j in pairs:
        for p in (None, 5):
            dp = R.ptk(trees[i], trees[j], 0.4, 0.4, max_subseq=p)
            br = R.ptk(trees[i], trees[j], 0.4, 0.4, max_subseq=p, method="brute")
            assert dp == pytest.approx(br, rel=1e-12), (i, j, p)


def test_sptk_exact_sigma_equals_ptk(ref):
    trees, _ = ref
    rng = random.Random(3)
    eq = lambda x, y: 1.0 if x == y else 0.0  # noqa: E731  (a user-supplied callable)
    pairs = [(i, j) for i in range(50) for j in range(i, 50)]
    for i, j in rng.sample(pairs, 200) + [(47, 47), (31, 31)]:
        for p in (None, 5):
            a = R.sptk(trees[i], trees[j], 0.4, 0.4, eq, max_subseq=p)
            b = R.ptk(trees[i], trees[j], 0.4, 0.4, max_subseq=p)
            assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), (i, j, p)


def _word_sigma(trees: list[Tree]):
    """Cosine of fixed random 8-d vectors for leaf words (thresholded at 0.2); exact label
    match for everything else (including a leaf against an internal node)."""
    rng = random.Random(99)
    words = sorted({t.labels[i] for t in trees for i in range(len(t)) if t.is_leaf(i)})
    vec = {w: [rng.gauss(0, 1) for _ in range(8)] for w in words}
    internal = {t.labels[i] for t in trees for i in range(len(t)) if not t.is_leaf(i)}

    def sigma(x: str, y: str) -> float:
        if x == y:
            return 1.0
        if x in vec and y in vec and x not in internal and y not in internal:
            u, v = vec[x], vec[y]
            c = sum(p * q for p, q in zip(u, v)) / math.sqrt(
                sum(p * p for p in u) * sum(q * q for q in v))
            return c if c >= 0.2 else 0.0
        return 0.0

    return sigma


def test_sptk_real_similarity_brute_vs_dp(ref):
    trees, _ = ref
    sigma = _word_sigma(trees)
    words = [t.labels[i] for t in trees for i in range(len(t)) if t.is_leaf(i)]
    assert any(0.0 < sigma(a, b) < 1.0 for a, b in itertools.product(words[:40], words[:40]))
    small = [k for k, t in enumerate(trees) if max(len(c) for c in t.children) <= 8]
    rng = random.Random(11)
    pairs = [tuple(rng.sample(small, 2)) for _ in range(40)] + [(5, 5), (42, 42), (0, 2)]
    n_smoothed = 0
    for i, j in pairs:
        a, b = trees[i], trees[j]
        for lam, mu, p in ((0.4, 0.4, None), (1.0, 1.0, 5), (0.8, 0.6, None)):
            dp = R.sptk(a, b, lam, mu, sigma, max_subseq=p)
            br = R.sptk(a, b, lam, mu, sigma, max_subseq=p, method="brute")
            assert dp == pytest.approx(br, rel=1e-12), (i, j, lam, mu, p)
            plain = R.ptk(a, b, lam, mu, max_subseq=p)
            assert dp >= plain * (1 - 1e-12)  # sigma >= exact match => SPTK >= PTK
            n_smoothed += dp > plain * (1 + 1e-9)
            assert R.sptk(b, a, lam, mu, sigma, max_subseq=p) == pytest.approx(dp, rel=1e-12)
    assert n_smoothed > 0  # the similarity actually changed some values


def test_sptk_random_trees_with_graded_sigma():
    """Labels with a graded similarity on internal nodes as well (not only leaves)."""
    rng = random.Random(5)
    sim = {("A", "B"): 0.5, ("B", "C"): 0.25, ("x", "y"): 0.7}

    def sigma(p: str, q: str) -> float:
        if p == q:
            return 1.0
        return sim.get((p, q), sim.get((q, p), 0.0))

    for _ in range(40):
        a = _random_tree(rng, 20, 5, "ABC", "xyz")
        b = _random_tree(rng, 20, 5, "ABC", "xyz")
        for p in (None, 2):
            dp = R.sptk(a, b, 0.6, 0.8, sigma, max_subseq=p)
            br = R.sptk(a, b, 0.6, 0.8, sigma, max_subseq=p, method="brute")
            assert dp == pytest.approx(br, rel=1e-12)
