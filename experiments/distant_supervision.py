"""Distant supervision on ds-wordnet: Grave (2014)'s relaxation vs Mintz SVMs and a pair logreg.

Grave's convex relaxation with lexical, degree-2, SVD and tree-kernel features, against
per-relation SVMs on mentions (Mintz) and a pair-level bag-of-words logistic regression.

Train on the train split's pairs (WordNet relations as the knowledge base), score every
(test pair, relation != NA) and rank them all: held-out area under the precision-recall
curve, average precision, precision at the top 100, 200, 500 (`jkern.ds.held_out`; 6,776
positive facts among 19,984 x 10 items on the full test split). Mention scores become pair
scores by --aggregate (max by default: Mintz 2009, Riedel 2010, Grave 2014). Rows:

- grave / linear: the relaxation (`jkern.ds.fit`, --method (default hybrid), --lam, --mu,
  --tol, --max-iter) on the
  lexical mention features (`jkern.ds.lexical_features`: Mintz-style, nouns left out; a
  vocabulary fit on the training mentions, rows L2-normalized).
- grave / poly(min,max): the lexical columns kept when their document frequency (training
  mentions holding them) is in [min, max], rows renormalized, then every row's degree-2
  products added and renormalized (Madaan & Hajra's Algorithm 1 and Table 1), one row per
  --poly-cutoffs entry. The cut-offs are absolute counts, as in the report: on a subset of the
  training pairs the same numbers prune relatively less.
- grave / svd(F): the lexical features (pruned to --svd-cutoff) projected onto their top F
  right singular vectors (--svd-rank; randomized, `jkern.ds.randomized_svd_projection`;
  the report's Algorithm 2): dense [N, F] rows of norm <= 1.
- grave / ptk-path+linear: each mention's shortest dependency path between its nouns (spaCy,
  `jkern.ds.dependency_paths`) embedded by Nystrom (`jkern.fit_nystrom`, --path-kernel:
  normalized PTK, lambda = mu = 0.4, by default; --landmarks sampled uniformly from the training
  mentions' paths), beside the lexical features as the block pair (SparseRows, dense). The
  normalized kernel gives embeddings of norm <= 1 (the projection of a unit vector onto the
  landmarks' span), like the unit lexical rows; the blocks are scaled by sqrt(1 - w) and
  sqrt(w), w = --path-weight (default 0.5), so the relaxation's kernel is
  (1 - w) cos_lexical + w PTK~ and every row keeps norm <= 1.
- mintz / linear: every training mention labelled with all its pair's KB relations; one binary
  linear SVM per relation (`jkern.svm.dcd` on the sparse lexical rows, +1 when the mention's
  pair holds it, else -1; --svm-loss, --svm-C, bias 1), mention scores aggregated per pair.
- logreg-pair / bow: one vector per pair, the bag of words of all its mentions' sentences
  (the two nouns left out unless --bow-entities; --bow binary or tf counts; L2-normalized),
  one-vs-rest scikit-learn LogisticRegression per relation (--logreg-C), scores the predicted
  probabilities. Without scikit-learn the row is skipped with a note.

Seconds are the training's: the row's training features (the lexical features, pruning,
expansion, SVD, Nystrom fit and training embedding) plus the fit, compilation included;
test features and scoring are not counted. Parsing is timed apart (`parse_seconds`, the read
of the cached parses when they are cached). Derived data is cached under --cache-dir (never
the repository): spaCy parses (--parse-cache-dir, default <cache-dir>/parses) and the
Nystrom embeddings, whose cached files keep the seconds they took, reported again on a cached
run (`embedding_cached`: true). --max-train-pairs / --max-test-pairs keep an evenly spread
subset of the pairs (with all their mentions); --parse-scope split parses every sentence of
a split (one cache file per split, shared by every subset) instead of the selected ones.

The JSON's rows have `model`, `features`, `auc`, `average_precision`, `p_at_100/200/500`,
`seconds`, `n_features`, and for the relaxation `gap`, `iterations`, `status` and
`sigma_max_sq`; `curves` holds each row's precision-recall curve (from the top of the ranking,
at ~600 of its thresholds) that the PNG draws.

    python experiments/distant_supervision.py --cache-dir /tmp/ds-cache
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
from _common import parse_args, parser, pyplot, spread, tree_kernel, write_result

import jkern
from jkern import ds
from jkern._sparse import matmul  # X @ V for SparseRows (randomized_svd_projection's advice)
from jkern.data import DsMentions, DsSplit, load_ds_wordnet
from jkern.errors import InputError
from jkern.svm import dcd

ROWS = ("linear", "poly", "svd", "path", "mintz", "logreg")

# --smoke: 300 training and 300 test pairs, every row tiny (one poly cut-off, rank 20, 20
# landmarks, few solver iterations)
SMOKE = {"max_train_pairs": 300, "max_test_pairs": 300, "poly_cutoffs": "2:1000",
         "svd_rank": 20, "landmarks": 20, "max_iter": 300, "svm_max_iter": 50}


class Part(NamedTuple):
    """A split cut to some of its pairs, and its mentions' indexes in the whole split."""

    split: DsSplit
    index: np.ndarray


def take_pairs(split: DsSplit, limit: int | None) -> Part:
    """An evenly spread `limit` of the split's pairs (all when None), with all their mentions,
    pairs renumbered 0..limit-1."""
    m = split.mentions
    if limit is None or limit >= split.n_pairs:
        return Part(split, np.arange(split.n_mentions))
    keep = spread(split.n_pairs, limit)
    new = np.full(split.n_pairs, -1, np.int64)
    new[keep] = np.arange(len(keep))
    sel = np.flatnonzero(new[m.mention_pair] >= 0)
    mentions = DsMentions([m.tokens[i] for i in sel], m.e1_token[sel], m.e2_token[sel],
                          new[m.mention_pair[sel]].astype(np.int32))
    return Part(dataclasses.replace(split, pairs=[split.pairs[i] for i in keep],
                                    pair_ids=split.pair_ids[keep],
                                    relations=split.relations[keep], mentions=mentions), sel)


def cutoff(text: str) -> tuple[int, int | None]:
    """`min:max` document-frequency cut-offs (`max` none/inf: no upper bound)."""
    lo, _, hi = text.partition(":")
    return int(lo), (None if hi.strip().lower() in ("", "none", "inf") else int(hi))


def cutoff_label(lo: int, hi: int | None) -> str:
    return f"{lo},{'inf' if hi is None else hi}"


# --------------------------------------------------------------------------- features


class Lexical(NamedTuple):
    train: jkern.SparseRows
    test: jkern.SparseRows
    seconds: float  # training side: features, vocabulary, matrix


def lexical(train: DsSplit, test: DsSplit, dtype: str) -> Lexical:
    t0 = time.perf_counter()
    m = train.mentions
    rows = ds.lexical_features(m.tokens, m.e1_token, m.e2_token)
    vocab = ds.FeatureVocabulary.fit(rows)
    x_train = vocab.transform(rows, dtype=dtype)
    seconds = time.perf_counter() - t0
    mt = test.mentions
    x_test = vocab.transform(ds.lexical_features(mt.tokens, mt.e1_token, mt.e2_token),
                             dtype=dtype)
    return Lexical(x_train, x_test, seconds)


def pruned(lex: Lexical, lo: int, hi: int | None):
    """(train, test, seconds of the training side) pruned to [lo, hi] and renormalized."""
    t0 = time.perf_counter()
    x, column_map = ds.prune_features(lex.train, lo, hi)
    x = ds.normalize_rows(x)
    seconds = time.perf_counter() - t0
    return x, ds.normalize_rows(ds.remap_columns(lex.test, column_map)), seconds


def poly_features(lex: Lexical, lo: int, hi: int | None):
    x, x_test, s_prune = pruned(lex, lo, hi)
    t0 = time.perf_counter()
    big, products = ds.polynomial_expansion(x)
    big = ds.normalize_rows(big)
    seconds = s_prune + time.perf_counter() - t0
    big_test = ds.normalize_rows(ds.polynomial_expansion(x_test, products=products)[0])
    return big, big_test, seconds


def svd_features(lex: Lexical, lo: int, hi: int | None, rank: int, key):
    x, x_test, s_prune = pruned(lex, lo, hi)
    rank = min(rank, *x.shape)
    t0 = time.perf_counter()
    v = ds.randomized_svd_projection(x, rank, key=key)
    z = jax.block_until_ready(matmul(x, v))
    seconds = s_prune + time.perf_counter() - t0
    return z, matmul(x_test, v), seconds


def scaled(x: jkern.SparseRows, factor: float) -> jkern.SparseRows:
    return jkern.SparseRows(x.indices, x.values * factor, x.n_features)


def path_trees(part: Part, whole: DsSplit, scope: str, cache: Path) -> tuple[list, float]:
    """The dependency-path tree of each mention of `part` and the seconds they took."""
    t0 = time.perf_counter()
    m = whole.mentions if scope == "split" else part.split.mentions
    trees = ds.dependency_paths(m.tokens, m.e1_token, m.e2_token, cache_dir=cache)
    if scope == "split":
        trees = [trees[i] for i in part.index.tolist()]
    return trees, time.perf_counter() - t0


def path_embedding(kernel, kernel_name: str, train_trees, test_trees, landmarks: int, seed: int,
                   dtype: str, cache: Path):
    """Nystrom embeddings of the training and test paths (cached under `cache`, keyed by the
    kernel, landmarks, seed, dtype and every tree). Returns (train, test, seconds of the fit
    and the training embedding, rank, whether read from the cache)."""
    h = hashlib.sha256(f"{kernel_name}|{kernel!r}|{landmarks}|{seed}|{dtype}".encode())
    for trees in (train_trees, test_trees):
        for t in trees:
            h.update(t.to_penn().encode() + b"\n")
        h.update(b"\x1e")
    path = cache / f"nystrom-{kernel_name}-{landmarks}-{h.hexdigest()[:24]}.npz"
    if path.is_file():
        with np.load(path) as z:
            return z["train"], z["test"], float(z["seconds"]), int(z["rank"]), True
    t0 = time.perf_counter()
    m = min(landmarks, len(train_trees))
    proj = jkern.fit_nystrom(kernel, train_trees, landmarks=m, key=jax.random.PRNGKey(seed),
                             dtype=dtype)
    x_train = np.asarray(proj.embed(train_trees, dtype=dtype))
    seconds = time.perf_counter() - t0
    x_test = np.asarray(proj.embed(test_trees, dtype=dtype))
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.npz")
    np.savez(tmp, train=x_train, test=x_test, seconds=seconds, rank=x_train.shape[1])
    tmp.replace(path)
    return x_train, x_test, seconds, x_train.shape[1], False


# --------------------------------------------------------------------------- models


def grave(x_train, x_test, train: DsSplit, test: DsSplit, args, classes) -> tuple[dict, Any]:
    """Solves the relaxation; returns (solver figures, test pair scores)."""
    t0 = time.perf_counter()
    sol = ds.fit(x_train, train.mentions.mention_pair, train.relations, lam=args.lam,
                 mu=args.mu, tol=args.tol, max_iter=args.max_iter, classes=classes,
                 method=args.method, refine=args.refine, check_every=args.check_every,
                 dtype=args.dtype, key=None)
    jax.block_until_ready(sol.stats["primal"])
    seconds = time.perf_counter() - t0
    st = sol.stats
    fig = {"solve_seconds": seconds, "gap": float(st["gap"]),
           "iterations": int(st["n_iter"]), "status": jkern.RESULTS.message(int(sol.result)),
           "method": args.method, "lam": args.lam, "mu": args.mu}
    if "sigma_max_sq" in st:
        fig["sigma_max_sq"] = float(st["sigma_max_sq"])
    scores = sol.model.pair_scores(x_test, test.mentions.mention_pair, test.n_pairs,
                                   aggregate=args.aggregate)
    return fig, scores


def mintz(lex: Lexical, train: DsSplit, test: DsSplit, args) -> tuple[dict, Any]:
    """One binary linear SVM per relation on the mentions labelled by their pair's relations."""
    held = train.relations[train.mentions.mention_pair]  # [N, K]
    key = jax.random.PRNGKey(args.seed)
    t0 = time.perf_counter()
    models, epochs, converged = [], 0, 0
    for k in range(held.shape[1]):
        y = jnp.asarray(np.where(held[:, k], 1.0, -1.0), args.dtype)
        sol = dcd(lex.train, y, C=args.svm_C, loss=args.svm_loss, max_iter=args.svm_max_iter,
                  key=jax.random.fold_in(key, k), dtype=args.dtype)
        models.append(sol.model)
        epochs += int(sol.stats["n_iter"])
        converged += bool(sol.converged)
    jax.block_until_ready(models[-1].w)
    seconds = time.perf_counter() - t0
    mention = jnp.stack([mod.decision_function(lex.test) for mod in models], axis=1)
    scores = ds.aggregate_pairs(mention, test.mentions.mention_pair, test.n_pairs,
                                aggregate=args.aggregate)
    return {"solve_seconds": seconds, "iterations": epochs,
            "status": f"{converged}/{held.shape[1]} relations converged"}, scores


def pair_bow(split: DsSplit, vocab: dict[str, int] | None, *, tf: bool, entities: bool):
    """`[P, V]` CSR bag of words of each pair's mentions (L2-normalized rows) and the
    vocabulary (fit here when `vocab` is None; unknown words are dropped otherwise)."""
    import scipy.sparse as sp

    fit = vocab is None
    vocab = {} if vocab is None else vocab
    rows: list[int] = []
    cols: list[int] = []
    m = split.mentions
    for toks, a, b, p in zip(m.tokens, m.e1_token.tolist(), m.e2_token.tolist(),
                             m.mention_pair.tolist()):
        for j, tok in enumerate(toks):
            if not entities and j in (a, b):
                continue
            w = ds.normalize_word(tok)
            c = vocab.setdefault(w, len(vocab)) if fit else vocab.get(w, -1)
            if c >= 0:
                rows.append(p)
                cols.append(c)
    x = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(split.n_pairs, len(vocab)))
    x.sum_duplicates()
    if not tf:
        x.data[:] = 1.0
    row = np.repeat(np.arange(split.n_pairs), np.diff(x.indptr))
    norm = np.sqrt(np.bincount(row, weights=x.data ** 2, minlength=split.n_pairs))
    x.data /= norm[row]  # every stored entry's row has a norm > 0
    return x, vocab


def logreg(train: DsSplit, test: DsSplit, args) -> tuple[dict, Any] | None:
    try:
        linear_model = importlib.import_module("sklearn.linear_model")
    except ImportError:
        print("scikit-learn not installed (pip install -e '.[test]'): logreg-pair row skipped")
        return None
    t0 = time.perf_counter()
    tf = args.bow == "tf"
    x, vocab = pair_bow(train, None, tf=tf, entities=args.bow_entities)
    feature_seconds = time.perf_counter() - t0
    x_test, _ = pair_bow(test, vocab, tf=tf, entities=args.bow_entities)
    t0 = time.perf_counter()
    scores = np.zeros((test.n_pairs, train.relations.shape[1]))
    for k in range(train.relations.shape[1]):
        y = train.relations[:, k]
        if y.all() or not y.any():  # one class only: a constant score
            scores[:, k] = float(y.any())
            continue
        model = linear_model.LogisticRegression(C=args.logreg_C, max_iter=1000)
        model.fit(x, y.astype(int))
        scores[:, k] = model.predict_proba(x_test)[:, 1]
    return {"feature_seconds": feature_seconds, "solve_seconds": time.perf_counter() - t0,
            "n_features": len(vocab)}, scores


# --------------------------------------------------------------------------- driver


def evaluate(row: dict, scores, relations, curves: dict) -> dict:
    r = ds.held_out(np.asarray(scores), relations)
    row.update({k: r[k] for k in ("auc", "average_precision", "p_at_100", "p_at_200",
                                  "p_at_500")})
    # the curve from the top of the ranking down, without the appended (recall 0,
    # precision 1) point; kept at ~600 thresholds, denser at the top
    recall, precision = r["recall"][-2::-1], r["precision"][-2::-1]
    n = len(recall)
    keep = np.unique(np.concatenate([np.geomspace(1, n, 300).astype(np.int64) - 1,
                                     spread(n, 300)])) if n else np.zeros(0, np.int64)
    curves[f"{row['model']} {row['features']}"] = {
        "recall": np.round(recall[keep], 5).tolist(),
        "precision": np.round(precision[keep], 5).tolist()}
    row["seconds"] = row.get("feature_seconds", 0.0) + row["solve_seconds"]
    print_row(row)
    return row


def print_header() -> None:
    print(f"\n{'model':12s} {'features':20s} {'n_feat':>8s} {'AUC':>6s} {'AP':>6s} "
          f"{'P@100':>6s} {'P@200':>6s} {'P@500':>6s} {'seconds':>8s} {'gap':>8s} "
          f"{'iters':>6s}", flush=True)


def print_row(r: dict) -> None:
    gap = f"{r['gap']:.1e}" if r.get("gap") is not None else "-"
    it = str(r["iterations"]) if r.get("iterations") is not None else "-"
    print(f"{r['model']:12s} {r['features']:20s} {r.get('n_features', '-')!s:>8s} "
          f"{r['auc']:6.3f} {r['average_precision']:6.3f} {r['p_at_100']:6.2f} "
          f"{r['p_at_200']:6.2f} {r['p_at_500']:6.2f} {r['seconds']:8.1f} {gap:>8s} "
          f"{it:>6s}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--rows", default=",".join(ROWS),
                    help=f"which rows, comma-separated from {','.join(ROWS)}")
    ap.add_argument("--max-train-pairs", type=int, default=None,
                    help="an evenly spread N of the training pairs (default all)")
    ap.add_argument("--max-test-pairs", type=int, default=None,
                    help="an evenly spread N of the test pairs (default all)")
    ap.add_argument("--aggregate", choices=("max", "mean", "noisy_or"), default="max",
                    help="mention scores -> pair scores (grave and mintz rows)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    ap.add_argument("--seed", type=int, default=0, help="SVD, landmarks and DCD keys")
    g = ap.add_argument_group("the relaxation (grave rows)")
    g.add_argument("--lam", type=float, default=1.0, help="ridge lambda")
    g.add_argument("--mu", type=float, default=1.0, help="slack cost mu")
    g.add_argument("--tol", type=float, default=1e-4, help="relative duality gap")
    g.add_argument("--max-iter", type=int, default=None,
                   help="steps (fista), sweeps (bcd) or cycles (hybrid); default the "
                        "library's")
    g.add_argument("--method", choices=("fista", "bcd", "hybrid"), default="hybrid",
                   help="the relaxation's solver (hybrid: the one that reaches the gap on "
                        "the full training split)")
    g.add_argument("--refine", type=int, default=None,
                   help="steps choosing the labelling behind each primal bound (library "
                        "default)")
    g.add_argument("--check-every", type=int, default=None)
    g = ap.add_argument_group("features")
    g.add_argument("--poly-cutoffs", default="5:10000,10:10000,20:100000,5:1000",
                   help="min:max document-frequency cut-offs of the poly rows (max none: no "
                        "upper bound)")
    g.add_argument("--svd-rank", type=int, default=200)
    g.add_argument("--svd-cutoff", default="1:none",
                   help="min:max pruning before the SVD (default none)")
    g.add_argument("--path-kernel", choices=("ptk", "sst"), default="ptk",
                   help="normalized tree kernel of the paths (lambda = mu = 0.4)")
    g.add_argument("--landmarks", type=int, default=500)
    g.add_argument("--path-weight", type=float, default=0.5,
                   help="w: the path block scaled by sqrt(w), the lexical one by sqrt(1 - w)")
    g.add_argument("--bow", choices=("binary", "tf"), default="binary")
    g.add_argument("--bow-entities", action="store_true",
                   help="keep the two nouns in the pair bag of words")
    g = ap.add_argument_group("baselines")
    g.add_argument("--svm-C", type=float, default=1.0)
    g.add_argument("--svm-loss", choices=("hinge", "squared_hinge"), default="squared_hinge")
    g.add_argument("--svm-max-iter", type=int, default=1000, help="DCD epochs")
    g.add_argument("--logreg-C", type=float, default=1.0)
    g = ap.add_argument_group("caches")
    g.add_argument("--cache-dir", default=None,
                   help="derived data: parses and Nystrom embeddings (default "
                        "<tmp>/jkern-distant-supervision; never the repository)")
    g.add_argument("--parse-cache-dir", default=None,
                   help="spaCy parses (default <cache-dir>/parses)")
    g.add_argument("--parse-scope", choices=("selected", "split"), default="selected",
                   help="parse the selected mentions, or every mention of each split")
    args = parse_args(ap, argv, "distant_supervision", SMOKE)
    rows_wanted = [r for r in args.rows.split(",") if r]
    unknown = set(rows_wanted) - set(ROWS)
    if unknown:
        ap.error(f"unknown rows {sorted(unknown)}; choose from {','.join(ROWS)}")
    if not 0.0 < args.path_weight < 1.0:
        ap.error("--path-weight must be in (0, 1)")
    try:
        poly_cutoffs = [cutoff(t) for t in args.poly_cutoffs.split(",") if t]
        svd_cutoff = cutoff(args.svd_cutoff)
    except ValueError:
        ap.error("cut-offs are min:max pairs of integers (max none: no upper bound), e.g. "
                 "5:10000,20:none")
    cache = Path(args.cache_dir or Path(tempfile.gettempdir()) / "jkern-distant-supervision")
    parse_cache = Path(args.parse_cache_dir) if args.parse_cache_dir else cache / "parses"
    key = jax.random.PRNGKey(args.seed)

    t0 = time.perf_counter()
    data = load_ds_wordnet(args.data_dir)
    tr_part = take_pairs(data.train, args.max_train_pairs)
    te_part = take_pairs(data.test, args.max_test_pairs)
    train, test = tr_part.split, te_part.split
    classes = data.relation_names
    print(f"ds-wordnet ({time.perf_counter() - t0:.1f} s): train {train.n_pairs} pairs, "
          f"{train.n_mentions} mentions, {int(train.relations.any(axis=1).sum())} positive "
          f"pairs; test {test.n_pairs} pairs, {test.n_mentions} mentions, {test.n_facts} "
          f"facts", flush=True)
    lex = lexical(train, test, args.dtype)
    print(f"lexical features: {lex.train.n_features} columns ({lex.seconds:.1f} s)", flush=True)

    rows: list[dict] = []
    curves: dict[str, dict] = {}
    base = {"aggregate": args.aggregate}
    print_header()
    if "linear" in rows_wanted:
        fig, scores = grave(lex.train, lex.test, train, test, args, classes)
        rows.append(evaluate({"model": "grave", "features": "linear", **base,
                              "n_features": lex.train.n_features,
                              "feature_seconds": lex.seconds, **fig},
                             scores, test.relations, curves))
    if "poly" in rows_wanted:
        for lo, hi in poly_cutoffs:
            try:
                x, x_test, s = poly_features(lex, lo, hi)
            except InputError as err:  # nothing left to expand (a small subset)
                print(f"poly({cutoff_label(lo, hi)}) skipped: {err}", flush=True)
                continue
            fig, scores = grave(x, x_test, train, test, args, classes)
            rows.append(evaluate({"model": "grave", "features": f"poly({cutoff_label(lo, hi)})",
                                  **base, "min_count": lo, "max_count": hi,
                                  "n_features": x.n_features,
                                  "feature_seconds": lex.seconds + s, **fig},
                                 scores, test.relations, curves))
    if "svd" in rows_wanted:
        lo, hi = svd_cutoff
        x, x_test, s = svd_features(lex, lo, hi, args.svd_rank, jax.random.fold_in(key, 1))
        fig, scores = grave(x, x_test, train, test, args, classes)
        rows.append(evaluate({"model": "grave", "features": f"svd({x.shape[1]})", **base,
                              "min_count": lo, "max_count": hi, "n_features": x.shape[1],
                              "feature_seconds": lex.seconds + s, **fig},
                             scores, test.relations, curves))
    if "path" in rows_wanted:
        try:
            tr_trees, s_tr = path_trees(tr_part, data.train, args.parse_scope, parse_cache)
            te_trees, s_te = path_trees(te_part, data.test, args.parse_scope, parse_cache)
        except ImportError as err:
            print(f"{err}: {args.path_kernel}-path+linear row skipped")
        else:
            kernel = tree_kernel(args.path_kernel)
            e_tr, e_te, s, rank, cached = path_embedding(
                kernel, args.path_kernel, tr_trees, te_trees, args.landmarks, args.seed,
                args.dtype, cache)
            w = args.path_weight
            x = (scaled(lex.train, np.sqrt(1 - w)), jnp.asarray(e_tr * np.sqrt(w), args.dtype))
            x_test = (scaled(lex.test, np.sqrt(1 - w)),
                      jnp.asarray(e_te * np.sqrt(w), args.dtype))
            fig, scores = grave(x, x_test, train, test, args, classes)
            rows.append(evaluate({"model": "grave", "features": f"{args.path_kernel}-path+linear",
                                  **base, "kernel": args.path_kernel,
                                  "landmarks": args.landmarks, "rank": rank,
                                  "path_weight": w, "n_features": lex.train.n_features + rank,
                                  "parse_seconds": s_tr + s_te, "embedding_seconds": s,
                                  "embedding_cached": cached,
                                  "feature_seconds": lex.seconds + s, **fig},
                                 scores, test.relations, curves))
    if "mintz" in rows_wanted:
        fig, scores = mintz(lex, train, test, args)
        rows.append(evaluate({"model": "mintz", "features": "linear", **base,
                              "loss": args.svm_loss, "C": args.svm_C,
                              "n_features": lex.train.n_features,
                              "feature_seconds": lex.seconds, **fig},
                             scores, test.relations, curves))
    if "logreg" in rows_wanted:
        out = logreg(train, test, args)
        if out is not None:
            fig, scores = out
            rows.append(evaluate({"model": "logreg-pair", "features": "bow", "aggregate": None,
                                  "bow": args.bow, "C": args.logreg_C, **fig},
                                 scores, test.relations, curves))

    settings = {k: v for k, v in vars(args).items() if k not in ("data_dir", "out_dir")}
    settings.update(train_pairs=train.n_pairs, train_mentions=train.n_mentions,
                    test_pairs=test.n_pairs, test_mentions=test.n_mentions,
                    test_facts=test.n_facts)
    out = write_result(args.out_dir, "distant_supervision", rows, argv, settings=settings,
                       curves=curves)
    plot(curves, out.with_suffix(".png"), test)
    print(f"\nwrote {out}")
    return 0


def plot(curves: dict[str, dict], path: Path, test: DsSplit) -> None:
    plt = pyplot()
    if plt is None or not curves:
        return
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for label, c in curves.items():
        ax.plot(c["recall"], c["precision"], label=label, linewidth=1.2)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"ds-wordnet held-out: {test.n_pairs} test pairs, {test.n_facts} facts")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
