"""Plain-Python reference ("oracle") implementations of the tree kernels.

This module is deliberately independent of the fast JAX engine: it imports nothing from
`jkern` except the `Tree` value type, has its own bracket reader, and spells every kernel
out as the textbook node-pair recursion.  Clarity beats speed; it is meant for trees up to
~100 nodes and ~12 children per node.

Semantics follow /work/shared/ref/README.md (the SVM-Light-TK 1.5 reference values):

* A kernel is ``K(T1, T2) = sum over node pairs (n1, n2) of Delta(n1, n2)``.
* ST / SST nodes are the *internal* nodes only.  Two nodes match iff their *productions*
  are equal, where a production is ``(label, ((child label, child is leaf), ...))`` -- so a
  node over the word ``arg`` and a node over an internal node ``arg`` do NOT match.
  - ST  (subtree kernel):    Delta = lam * prod_j Delta(child_j pair)      over non-leaf children
  - SST (Collins-Duffy):     Delta = lam * prod_j (1 + Delta(child_j pair)) over non-leaf children
  (an empty product is 1, so a matching preterminal pair scores lam).
* SST_BOW: SST plus, for every pair of leaves with equal labels, lam (leaves are extra nodes
  of the sum; they do not change their parents' Delta).
* PTK nodes include leaves; two nodes match iff their labels are equal.
  Delta(n1, n2) = mu * (lam^2 + sum over pairs of equal-length child index subsequences I1, I2
  of lam^(gaps(I1) + gaps(I2)) * prod_k Delta(c1[I1_k], c2[I2_k])),
  gaps(I) = I_last - I_first + 1 - |I| (only *skipped* children are charged), so a leaf pair
  scores mu * lam^2.  ``max_subseq=p`` limits |I| <= p (SVM-Light-TK as distributed: p = 5).
* SPTK (Croce et al. 2011): Delta = mu * sigma(label1, label2) * (lam^2 + same sum), with a
  user similarity ``sigma(a, b) -> float in [0, 1]`` (0 = no match).  With the exact-match
  sigma it is PTK.

The PTK child-subsequence sum is implemented twice -- by brute-force enumeration
(``method="brute"``) and by Moschitti's (2006) DPS/DP recurrences (``method="dp"``).
Delta values are computed bottom-up over node pairs (children before parents, iteratively),
so deep trees need no recursion.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path

from data_paths import REF_DIR

from jkern.trees._tree import Tree

Sigma = Callable[[str, str], float]


# --------------------------------------------------------------------------- helpers


def _postorder(t: Tree) -> list[int]:
    """Node indices with every child before its parent (iterative)."""
    order: list[int] = []
    stack = [(0, False)]
    while stack:
        i, expanded = stack.pop()
        if expanded:
            order.append(i)
        else:
            stack.append((i, True))
            stack.extend((c, False) for c in reversed(t.children[i]))
    return order


def _is_leaf(t: Tree, i: int) -> bool:
    return len(t.children[i]) == 0


def production(t: Tree, i: int) -> tuple[str, tuple[tuple[str, bool], ...]]:
    """The production at node i: (label, ((child label, child is leaf), ...))."""
    return (t.labels[i], tuple((t.labels[c], _is_leaf(t, c)) for c in t.children[i]))


def exact_sigma(a: str, b: str) -> float:
    """The exact label-match similarity: SPTK with this sigma is PTK."""
    return 1.0 if a == b else 0.0


# --------------------------------------------------------------------------- ST / SST


def _stk_deltas(t1: Tree, t2: Tree, lam: float, plus_one: bool) -> dict[tuple[int, int], float]:
    """Delta over all pairs of internal nodes (0 where productions differ)."""
    delta: dict[tuple[int, int], float] = {}
    post1 = [i for i in _postorder(t1) if not _is_leaf(t1, i)]
    post2 = [j for j in _postorder(t2) if not _is_leaf(t2, j)]
    prods2 = {j: production(t2, j) for j in post2}
    for i in post1:  # children of i come earlier in post1, so their pairs are done
        p1 = production(t1, i)
        for j in post2:
            if prods2[j] != p1:
                delta[i, j] = 0.0
                continue
            value = lam
            for c1, c2 in zip(t1.children[i], t2.children[j]):
                if _is_leaf(t1, c1):  # same production => c2 is a leaf too
                    continue
                d = delta[c1, c2]
                value *= (1.0 + d) if plus_one else d
            delta[i, j] = value
    return delta


def st(t1: Tree, t2: Tree, lam: float) -> float:
    """Subtree kernel (ST): counts shared complete subtrees, decayed by lam per node."""
    return float(sum(_stk_deltas(t1, t2, lam, plus_one=False).values()))


def sst(t1: Tree, t2: Tree, lam: float) -> float:
    """Subset-tree kernel (SST, Collins & Duffy 2002) with decay lam."""
    return float(sum(_stk_deltas(t1, t2, lam, plus_one=True).values()))


def sst_bow(t1: Tree, t2: Tree, lam: float) -> float:
    """SST plus lam for every pair of equal-label leaves (SVM-Light-TK ``-F 2``)."""
    leaves1 = [t1.labels[i] for i in range(len(t1)) if _is_leaf(t1, i)]
    leaves2 = [t2.labels[j] for j in range(len(t2)) if _is_leaf(t2, j)]
    bow = sum(lam for a in leaves1 for b in leaves2 if a == b)
    return sst(t1, t2, lam) + float(bow)


# --------------------------------------------------------------------------- PTK / SPTK


def _gaps(idx: tuple[int, ...]) -> int:
    """Number of children skipped inside the index subsequence idx."""
    return idx[-1] - idx[0] + 1 - len(idx)


def child_sum_brute(
    d: Callable[[int, int], float], n1: int, n2: int, lam: float, max_subseq: int | None = None
) -> float:
    """Sum over equal-length index subsequences I1 of range(n1), I2 of range(n2) of
    lam^(gaps(I1)+gaps(I2)) * prod_k d(I1[k], I2[k]), by explicit enumeration."""
    top = min(n1, n2) if max_subseq is None else min(n1, n2, max_subseq)
    total = 0.0
    for p in range(1, top + 1):
        for i1 in itertools.combinations(range(n1), p):
            for i2 in itertools.combinations(range(n2), p):
                prod = 1.0
                for a, b in zip(i1, i2):
                    prod *= d(a, b)
                    if prod == 0.0:
                        break
                if prod != 0.0:
                    total += lam ** (_gaps(i1) + _gaps(i2)) * prod
    return total


def child_sum_dp(
    d: Callable[[int, int], float], n1: int, n2: int, lam: float, max_subseq: int | None = None
) -> float:
    """The same sum as `child_sum_brute`, by Moschitti's (2006) DPS/DP recurrences.

    DPS_p[i][j] = sum over pairs of length-p subsequences of the first i / j children that
    END at child i / child j (1-based) of lam^(internal gaps) * prod Delta:
        DPS_1[i][j] = d(i, j)
        DPS_p[i][j] = d(i, j) * DP_{p-1}[i-1][j-1]
    DP_p[i][j] = sum_{i'<=i, j'<=j} lam^((i-i') + (j-j')) * DPS_p[i'][j']  (the trailing
    distance to (i, j) is exactly the gap the next chosen pair (i+1, j+1) will see):
        DP_p[i][j] = DPS_p[i][j] + lam*DP_p[i-1][j] + lam*DP_p[i][j-1] - lam^2*DP_p[i-1][j-1]
    The answer is sum_p sum_{i,j} DPS_p[i][j].
    """
    top = min(n1, n2) if max_subseq is None else min(n1, n2, max_subseq)
    if top == 0:
        return 0.0
    dd = [[0.0] * (n2 + 1) for _ in range(n1 + 1)]  # 1-based d
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            dd[i][j] = d(i - 1, j - 1)
    total = 0.0
    dps = [row[:] for row in dd]  # p = 1
    dp: list[list[float]] = []  # DP_{p-1}: set at the end of each pass
    for p in range(1, top + 1):
        if p > 1:
            new = [[0.0] * (n2 + 1) for _ in range(n1 + 1)]
            for i in range(1, n1 + 1):
                for j in range(1, n2 + 1):
                    new[i][j] = dd[i][j] * dp[i - 1][j - 1]
            dps = new
        total += sum(sum(row) for row in dps)
        dp = [[0.0] * (n2 + 1) for _ in range(n1 + 1)]
        for i in range(1, n1 + 1):
            for j in range(1, n2 + 1):
                dp[i][j] = (
                    dps[i][j]
                    + lam * dp[i - 1][j]
                    + lam * dp[i][j - 1]
                    - lam * lam * dp[i - 1][j - 1]
                )
    return total


_CHILD_SUMS = {"dp": child_sum_dp, "brute": child_sum_brute}


def _ptk_deltas(
    t1: Tree,
    t2: Tree,
    lam: float,
    mu: float,
    sigma: Sigma,
    max_subseq: int | None,
    method: str,
) -> dict[tuple[int, int], float]:
    """Delta over all pairs of nodes (leaves included), children before parents."""
    if method not in _CHILD_SUMS:
        raise ValueError(f"method must be 'dp' or 'brute', not {method!r}")
    child_sum = _CHILD_SUMS[method]
    if max_subseq is not None and max_subseq < 1:
        raise ValueError("max_subseq must be >= 1 or None")
    lam2 = lam * lam
    delta: dict[tuple[int, int], float] = {}
    post1 = _postorder(t1)
    post2 = _postorder(t2)
    for i in post1:
        kids1 = t1.children[i]
        for j in post2:
            s = float(sigma(t1.labels[i], t2.labels[j]))
            if s == 0.0:
                delta[i, j] = 0.0
                continue
            kids2 = t2.children[j]
            inner = lam2
            if kids1 and kids2:
                inner += child_sum(
                    lambda a, b, k1=kids1, k2=kids2: delta[k1[a], k2[b]],
                    len(kids1),
                    len(kids2),
                    lam,
                    max_subseq,
                )
            delta[i, j] = mu * s * inner
    return delta


def sptk(
    t1: Tree,
    t2: Tree,
    lam: float,
    mu: float,
    sigma: Sigma,
    max_subseq: int | None = None,
    method: str = "dp",
) -> float:
    """Smoothed partial tree kernel (Croce, Moschitti & Basili 2011)."""
    return float(sum(_ptk_deltas(t1, t2, lam, mu, sigma, max_subseq, method).values()))


def ptk(
    t1: Tree,
    t2: Tree,
    lam: float,
    mu: float,
    max_subseq: int | None = None,
    method: str = "dp",
) -> float:
    """Partial tree kernel (Moschitti 2006) with gap-only lam decay and depth decay mu."""
    return sptk(t1, t2, lam, mu, exact_sigma, max_subseq=max_subseq, method=method)


def kernel_function(name: str, lam: float, mu: float | None = None,
                    max_subseq: int | None = None) -> Callable[[Tree, Tree], float]:
    """The oracle of one setting (`name` in ST, SST, SST_BOW, PTK) as a two-tree function."""
    if name == "PTK":
        return lambda a, b: ptk(a, b, lam, mu, max_subseq=max_subseq)
    f = {"ST": st, "SST": sst, "SST_BOW": sst_bow}[name]
    return lambda a, b: f(a, b, lam)


# --------------------------------------------------------------------------- normalization


def normalized(kfun: Callable[..., float], t1: Tree, t2: Tree, **kw) -> float:
    """k(t1, t2) / sqrt(k(t1, t1) k(t2, t2)); 0 when a self-kernel is 0."""
    k11 = kfun(t1, t1, **kw)
    k22 = kfun(t2, t2, **kw)
    if k11 == 0.0 or k22 == 0.0:
        return 0.0
    return kfun(t1, t2, **kw) / math.sqrt(k11 * k22)


# --------------------------------------------------------------------------- bracket reader


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    word: list[str] = []
    for ch in text:
        if ch in "()" or ch.isspace():
            if word:
                out.append("".join(word))
                word = []
            if ch in "()":
                out.append(ch)
        else:
            word.append(ch)
    if word:
        out.append("".join(word))
    return out


def parse_bracket(text: str) -> Tree:
    """Parse one Penn-bracket tree such as ``(S (NP (DT the) dog))`` into a `Tree`.

    Every ``(`` opens an internal node whose label is the next token; a bare token is a
    leaf.  A lone bare token is a one-node tree.  Nodes are numbered in preorder.
    """
    toks = _tokens(text)
    if not toks:
        raise ValueError("empty tree text")
    labels: list[str] = []
    children: list[list[int]] = []
    stack: list[int] = []  # open internal nodes
    pos = 0

    def new_node(label: str) -> int:
        k = len(labels)
        labels.append(label)
        children.append([])
        if stack:
            children[stack[-1]].append(k)
        return k

    while pos < len(toks):
        tok = toks[pos]
        if tok == "(":
            if pos + 1 >= len(toks) or toks[pos + 1] in "()":
                raise ValueError(f"missing label after '(' in {text!r}")
            if labels and not stack:
                raise ValueError(f"more than one tree in {text!r}")
            stack.append(new_node(toks[pos + 1]))
            pos += 2
        elif tok == ")":
            if not stack:
                raise ValueError(f"unbalanced ')' in {text!r}")
            stack.pop()
            pos += 1
        else:
            if labels and not stack:
                raise ValueError(f"more than one tree in {text!r}")
            new_node(tok)
            pos += 1
    if stack:
        raise ValueError(f"unbalanced '(' in {text!r}")
    return Tree(tuple(labels), tuple(tuple(c) for c in children))


def read_ref_trees(path: Path | None = None) -> list[Tree]:
    """The 50 reference trees of trees50.tsv, in id order (checks n_nodes)."""
    path = REF_DIR / "trees50.tsv" if path is None else Path(path)
    trees: dict[int, Tree] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    col = {name: k for k, name in enumerate(header)}
    for line in lines[1:]:
        if not line.strip():
            continue
        fields = line.split("\t")
        t = parse_bracket(fields[col["tree"]])
        if len(t) != int(fields[col["n_nodes"]]):
            raise ValueError(f"tree {fields[col['id']]}: {len(t)} nodes, file says "
                             f"{fields[col['n_nodes']]}")
        trees[int(fields[col["id"]])] = t
    return [trees[k] for k in sorted(trees)]


# The settings of ../shared/ref/ref_gram.tsv, shared by the tests that read it.
SETTINGS = [  # (kernel, lambda, mu, variant) exactly as in ref_gram.tsv
    ("ST", 0.4, 0.4, "dist"),
    ("ST", 1.0, 0.4, "dist"),
    ("SST", 0.4, 0.4, "dist"),
    ("SST", 1.0, 0.4, "dist"),
    ("SST_BOW", 0.4, 0.4, "dist"),
    ("PTK", 0.4, 0.4, "dist"),
    ("PTK", 0.4, 0.4, "exact"),
    ("PTK", 1.0, 1.0, "dist"),
    ("PTK", 1.0, 1.0, "exact"),
    ("PTK", 0.8, 0.6, "exact"),
]


# --------------------------------------------------------------------------- CSPTK
#
# Compositionally smoothed PTK (issue 33), written from its definition alone: PTK's recursion
# (`sptk` above) with a node similarity that looks at the node's label AND whether it is a
# leaf (a plain constituency leaf is a word; an internal node with the same label is not).
#
# * compositional node `rel<h::hp,m::mp>` (the regex below; lemma = part before the LAST
#   `::`): group (rel, hp, mp); sigma = 1 on equal labels, else sim(cos(c1, c2)) when both
#   have a composed vector c = A unit(v[h]) + B unit(v[m]) (both words in the vocabulary with
#   non-zero vectors, |c| > 0), else 0.
# * lexical node (a non-compositional label `lemma::pos`, or a plain leaf): group pos ("" for
#   a plain leaf); sigma = 1 on equal labels, else sim(cos) of the two unit word vectors when
#   both lemmas have a vector: in the vocabulary with a non-zero row (a zero vector counts as
#   none, as for the composition; it matters for the Gaussian sim, exp(-gamma) at cos 0).
# * any other node: sigma = 1 on equal labels, else 0.
# * sim(cos) = exp(gamma (min(cos, 1) - 1)) when gamma is given, else clip(cos, 0, 1) when
#   cos >= threshold and 0 otherwise.

import re  # noqa: E402  (this section is self-contained)

import numpy as np  # noqa: E402

COMPOSITIONAL_LABEL = re.compile(
    r"^(?P<rel>[^<>]+)<(?P<head>.+::[^:,<>]+),(?P<mod>.+::[^:,<>]+)>$")

NodeSigma = Callable[[str, bool, str, bool], float]


def split_compositional(label: str) -> tuple[str, str, str, str, str] | None:
    """`(rel, head lemma, head pos, modifier lemma, modifier pos)` of a compositional label
    `rel<h::hp,m::mp>`, None for any other label."""
    m = COMPOSITIONAL_LABEL.match(label)
    if m is None:
        return None
    h_lemma, _, h_pos = m.group("head").rpartition("::")
    m_lemma, _, m_pos = m.group("mod").rpartition("::")
    return m.group("rel"), h_lemma, h_pos, m_lemma, m_pos


def csptk_node_kind(label: str, is_leaf: bool) -> tuple[str, tuple, tuple[str, ...]] | None:
    """How CSPTK matches a node: `("comp", group, (head lemma, modifier lemma))`,
    `("lex", (pos,), (lemma,))`, or None for an exact-match-only node."""
    comp = split_compositional(label)
    if comp is not None:
        rel, h, hp, m, mp = comp
        return "comp", (rel, hp, mp), (h, m)
    if "::" in label:
        lemma, _, pos = label.rpartition("::")
        return "lex", (pos,), (lemma,)
    if is_leaf:
        return "lex", ("",), (label,)
    return None


def csptk_sigma(
    vocab,
    vectors,
    A=None,
    B=None,
    gamma: float | None = None,
    threshold: float = 0.0,
) -> NodeSigma:
    """CSPTK's node similarity `sigma(label1, is_leaf1, label2, is_leaf2)` from the words
    `vocab` (one per row of `vectors`, `[len(vocab), d]`) -- or a `{word: vector}` mapping
    as `vocab` with `vectors=None` -- and the composition matrices A, B (`[d, d]`, default
    identity)."""
    if vectors is None:
        words = list(vocab)
        table = np.array([np.asarray(vocab[w], np.float64) for w in words], np.float64)
        table = table.reshape(len(words), -1)
    else:
        words = list(vocab)
        table = np.asarray(vectors, np.float64)
    d = table.shape[1] if table.ndim == 2 else 0
    row = {w: k for k, w in enumerate(words)}
    a = np.eye(d) if A is None else np.asarray(A, np.float64)
    b = np.eye(d) if B is None else np.asarray(B, np.float64)

    def unit(w: str) -> np.ndarray | None:
        """The unit vector of w (zeros for a zero vector); None when w has no row."""
        k = row.get(w)
        if k is None:
            return None
        v = table[k]
        n = math.sqrt(float(v @ v))
        return v / n if n > 0 else np.zeros_like(v)

    def composed(h: str, m: str) -> np.ndarray | None:
        uh, um = unit(h), unit(m)
        if uh is None or um is None or not uh.any() or not um.any():
            return None
        c = a @ uh + b @ um
        return c if math.sqrt(float(c @ c)) > 0 else None

    def sim(x: np.ndarray, y: np.ndarray) -> float:
        nx, ny = math.sqrt(float(x @ x)), math.sqrt(float(y @ y))
        cos = float(x @ y) / (nx * ny) if nx > 0 and ny > 0 else 0.0
        if gamma is not None:
            return math.exp(gamma * (min(cos, 1.0) - 1.0))
        return min(max(cos, 0.0), 1.0) if cos >= threshold else 0.0

    cache: dict[tuple[str, bool, str, bool], float] = {}

    def sigma(l1: str, leaf1: bool, l2: str, leaf2: bool) -> float:
        if l1 == l2:
            return 1.0
        key = (l1, leaf1, l2, leaf2)
        if key in cache:
            return cache[key]
        k1, k2 = csptk_node_kind(l1, leaf1), csptk_node_kind(l2, leaf2)
        value = 0.0
        if k1 is not None and k2 is not None and k1[0] == k2[0] and k1[1] == k2[1]:
            if k1[0] == "comp":
                c1, c2 = composed(*k1[2]), composed(*k2[2])
                if c1 is not None and c2 is not None:
                    value = sim(c1, c2)
            else:
                u1, u2 = unit(k1[2][0]), unit(k2[2][0])
                if u1 is not None and u2 is not None and u1.any() and u2.any():
                    value = sim(u1, u2)
        cache[key] = value
        return value

    return sigma


def csptk(
    t1: Tree,
    t2: Tree,
    lam: float,
    mu: float,
    vocab=(),
    vectors=None,
    A=None,
    B=None,
    gamma: float | None = None,
    threshold: float = 0.0,
    max_subseq: int | None = None,
    method: str = "dp",
    sigma: NodeSigma | None = None,
) -> float:
    """Compositionally smoothed partial tree kernel of two trees (CGRCTs, or any trees).

    `vocab`/`vectors` as in `csptk_sigma` (an empty vocabulary gives PTK); pass a prebuilt
    `sigma = csptk_sigma(...)` to reuse its cache over many pairs."""
    if sigma is None:
        if vectors is None and not isinstance(vocab, dict):
            vocab, vectors = [], np.zeros((0, 0))
        sigma = csptk_sigma(vocab, vectors, A, B, gamma=gamma, threshold=threshold)
    # `sptk` hands its sigma two labels; give every node a unique label "1:i" / "2:j" so the
    # similarity can see the node's real label and whether it is a leaf.
    n1 = [(t1.labels[i], t1.is_leaf(i)) for i in range(len(t1))]
    n2 = [(t2.labels[j], t2.is_leaf(j)) for j in range(len(t2))]
    s1 = Tree(tuple(f"1:{i}" for i in range(len(t1))), t1.children)
    s2 = Tree(tuple(f"2:{j}" for j in range(len(t2))), t2.children)

    def by_node(a: str, b: str) -> float:
        (l1, f1), (l2, f2) = n1[int(a[2:])], n2[int(b[2:])]
        return sigma(l1, f1, l2, f2)

    return sptk(s1, s2, lam, mu, by_node, max_subseq=max_subseq, method=method)


def csptk_gram(trees, lam: float, mu: float, vocab=(), vectors=None, **kw) -> np.ndarray:
    """The Gram matrix of `csptk` over `trees` (upper triangle computed, mirrored)."""
    if vectors is None and not isinstance(vocab, dict):
        vocab, vectors = [], np.zeros((0, 0))
    sig_kw = {k: kw.pop(k) for k in ("A", "B", "gamma", "threshold") if k in kw}
    sigma = csptk_sigma(vocab, vectors, **sig_kw)
    n = len(trees)
    g = np.zeros((n, n))
    for a in range(n):
        for b in range(a, n):
            g[a, b] = g[b, a] = csptk(trees[a], trees[b], lam, mu, sigma=sigma, **kw)
    return g
