"""Helpers shared by several test modules (not a test module itself: test modules import from
here, never from each other)."""

from __future__ import annotations

import collections
import os
import re
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
import reference_kernels as R
from data_paths import require
from hypothesis import HealthCheck, settings

from jkern.kernels import kernel_by_name
from jkern.svm import LinearSVM
from jkern.trees import Tree, grct, lct, parse_penn, read_conllu

N_TREC, N_UD = 150, 4  # the shared corpus: TREC questions and UD sentences

# Fuzz profiles (`@pytest.mark.parametrize("profile", PROFILES)`, then `@profile` on the
# `@given` check): a few derandomized examples in the default suite, JKERN_FUZZ_EXAMPLES
# (default 200) under `-m slow`. The short one keeps shapes fixed where a learner compiles
# (every new shape is a compilation: seconds each).
SHORT = settings(max_examples=8, deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=int(os.environ.get("JKERN_FUZZ_EXAMPLES", "200")),
                deadline=None, database=None, suppress_health_check=list(HealthCheck))
PROFILES = [pytest.param(SHORT, id="short"),
            pytest.param(LONG, id="long", marks=pytest.mark.slow)]


# --------------------------------------------------------------------------- kernels

def read_tsv(path: Path) -> list[dict[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]


def load_corpus(shared_data: Path) -> dict[str, list[Tree]]:
    """The corpus shared by the kernel tests: ref trees, TREC questions, UD GRCT/LCT trees."""
    ref = [parse_penn(r["tree"]) for r in read_tsv(require(R.REF_DIR / "trees50.tsv"))]
    trec_path = require(shared_data / "trec" / "qc_train.tsv")
    with open(trec_path, encoding="utf-8") as f:
        next(f)
        trec = [parse_penn(next(f).rstrip("\n").split("\t")[2]) for _ in range(N_TREC)]
    sentences = read_conllu(require(shared_data / "ud-english-ewt" / "en_ewt-ud-dev.conllu"))
    short = [s for s in sentences if 5 <= len(s) <= 12][:N_UD]
    ud = [grct(s) for s in short] + [lct(s) for s in short]
    return {"ref": ref, "trec": trec, "ud": ud, "all": ref + trec + ud}


def assert_rel(got, want, rtol, what=""):
    """|got - want| <= rtol |want| everywhere (so a 0 must come out exactly 0)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want)
    bad = np.argwhere(err > rtol * np.abs(want))
    if len(bad):
        i = tuple(bad[0])
        pytest.fail(f"{what}: {len(bad)} entries off by more than {rtol} relative; first at "
                    f"{i}: got {got[i]!r}, want {want[i]!r}")


def make_kernel(name: str, lam: float, mu: float | None = None, max_subseq: int | None = None):
    """The jkern kernel of one setting, named as the oracle's (`R.kernel_function`), from the
    library's registry."""
    names = {"ST": "st", "SST": "sst", "SST_BOW": "sst-bow", "PTK": "ptk"}
    if name == "PTK":
        return kernel_by_name("ptk", lam=lam, mu=mu, max_subseq=max_subseq)
    return kernel_by_name(names[name], lam=lam)


def _lexical(label: str, leaves: set[str]) -> tuple[str, str] | None:
    if "::" in label:
        lemma, _, pos = label.rpartition("::")
        return lemma, pos
    return (label, "") if label in leaves else None


def word_sigma(vectors: np.ndarray, threshold: float, leaves: set[str], vocab: list[str],
               gamma: float | None = None):
    """Word similarity written from the definition: same PoS, then the thresholded cosine or
    exp(-gamma |u - v|^2 / 2) of the unit vectors of `vocab`."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    row = {w: i for i, w in enumerate(vocab)}

    def sigma(a: str, b: str) -> float:
        if a == b:
            return 1.0
        la, lb = _lexical(a, leaves), _lexical(b, leaves)
        if la is None or lb is None or la[1] != lb[1] or la[0] not in row or lb[0] not in row:
            return 0.0
        cos = float(unit[row[la[0]]] @ unit[row[lb[0]]])
        if gamma is not None:
            return float(np.exp(-gamma / 2 * np.sum((unit[row[la[0]]] - unit[row[lb[0]]]) ** 2)))
        return min(cos, 1.0) if cos >= threshold else 0.0

    return sigma


# --------------------------------------------------------------------------- linear SVMs

_LEAF = re.compile(r"\(([^()\s]+) ([^()\s]+)\)")


def _read_questions(path):
    labels, tokens = [], []
    with open(path, encoding="utf-8") as f:
        header = next(f).rstrip("\n").split("\t")
        assert header == ["coarse", "fine", "tree"], header
        for line in f:
            coarse, _, tree = line.rstrip("\n").split("\t", 2)
            labels.append(coarse)
            tokens.append([word.lower() for _, word in _LEAF.findall(tree)])
    return np.array(labels), tokens


def word_features(tokens, test_tokens, size: int):
    """Binary features of the `size` most frequent lowercase tokens of `tokens` (ties by
    spelling), for the training and the test questions."""
    counts = collections.Counter(t for ts in tokens for t in set(ts))
    vocab = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size]]
    where = {w: j for j, w in enumerate(vocab)}

    def features(toks):
        F = np.zeros((len(toks), len(vocab)))
        for i, ts in enumerate(toks):
            F[i, [where[t] for t in ts if t in where]] = 1.0
        return F

    return features(tokens), features(test_tokens)


def _as_model(coef, intercept, classes=None):
    return LinearSVM(w=jnp.asarray(coef), b=jnp.asarray(intercept), classes=classes)


def _linear_svc(**kw):
    from sklearn.svm import LinearSVC

    return LinearSVC(dual=True, tol=1e-6, max_iter=100_000, random_state=0, **kw)


# --------------------------------------------------------------------------- head rules

def projective_single_root(tokens) -> bool:
    """One root, and no two arcs cross (head rules over a tree give projective arcs)."""
    if sum(t.head == 0 for t in tokens) != 1:
        return False
    spans = [tuple(sorted((t.id, t.head))) for t in tokens if t.head]
    return not any(a < c < b < d for a, b in spans for c, d in spans)
