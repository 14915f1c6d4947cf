"""`jkern ds train|predict`: distant-supervision relation extraction (Grave 2014's convex
relaxation, `jkern.ds`) on a folder in the ds-wordnet layout."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ._common import (
    EXIT_COMPUTE,
    EXIT_OK,
    CLIError,
    add_dtype_argument,
    add_encoding_argument,
    add_quiet_argument,
    add_seed_argument,
    check_output_path,
    compute_errors,
    input_errors,
    output_errors,
    positive_float,
    positive_int,
    say,
    setup_jax,
)

SUMMARY = "distant-supervision relation extraction (Grave 2014) on ds-wordnet data"

AGGREGATES = ("max", "mean", "noisy_or")
TOP = (100, 200, 500)


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    sub.required = True
    data_help = ("a folder in the ds-wordnet layout (relations.txt, pairs.tsv, "
                 "mentions.tsv.gz), or the data folder that holds ds-wordnet/")

    train = sub.add_parser("train", help="train a relation extractor on a split's pairs",
                           description="train a relation extractor (lexical features + the "
                                       "convex relaxation) on the pairs of a split")
    train.add_argument("data", metavar="DATA", help=data_help)
    train.add_argument("--out", "-o", required=True, metavar="MODEL.npz",
                       help="the relation extractor, for `jkern ds predict` (required)")
    train.add_argument("--split", choices=("train", "test"), default="train",
                       help="the pairs to train on (default train)")
    solver = train.add_argument_group("solver (jkern.ds.fit; unset: the library's defaults)")
    solver.add_argument("--lam", type=positive_float, default=None, metavar="L",
                        help="ridge regularization lambda > 0 (default 1)")
    solver.add_argument("--mu", type=positive_float, default=None, metavar="M",
                        help="cost of a violated KB constraint mu > 0 (default 1)")
    solver.add_argument("--tol", type=positive_float, default=None, metavar="T",
                        help="stop at this relative duality gap (default 1e-4)")
    solver.add_argument("--max-iter", type=positive_int, default=None, metavar="N",
                        help="most solver steps (fista, default 20000), sweeps (bcd, "
                             "default 2000) or cycles (hybrid, default 100)")
    solver.add_argument("--method", choices=("fista", "bcd", "hybrid"), default=None,
                        help="hybrid (default): a preconditioned primal phase and bcd "
                             "sweeps in cycles; fista: accelerated projected gradient; bcd: "
                             "exact block coordinate ascent (docs/distant_supervision.md)")
    solver.add_argument("--refine", type=int, default=None, metavar="R",
                        help="steps choosing the labelling behind each check's primal bound "
                             "(default 0 for fista, 30 for bcd and hybrid)")
    solver.add_argument("--require-converged", action="store_true",
                        help="fail (exit 1, no model written) unless the gap reached --tol "
                             "(default off: warn and save the model)")
    feats = train.add_argument_group("features (jkern.ds.train_extractor)")
    feats.add_argument("--min-count", type=positive_int, default=None, metavar="A",
                       help="drop features seen in fewer than A training mentions (default: "
                            "keep them all)")
    feats.add_argument("--max-count", type=positive_int, default=None, metavar="B",
                       help="drop features seen in more than B training mentions (default: "
                            "keep them all)")
    feats.add_argument("--poly", action="store_true",
                       help="add the degree-2 products of each mention's features (default "
                            "off)")
    feats.add_argument("--svd", type=positive_int, default=None, metavar="F",
                       help="project the features on their top F singular vectors "
                            "(randomized, seeded by --seed; default: no projection)")
    train.add_argument("--max-pairs", type=positive_int, default=None, metavar="N",
                       help="train on a random subset of N pairs of the split, with all "
                            "their mentions (seeded by --seed; default: all pairs)")
    add_seed_argument(train, "seed of --max-pairs and --svd")
    add_dtype_argument(train, "precision of the features and the solve (default float64)")
    add_quiet_argument(train, "no summary line on stderr (warnings still print; default off)")
    add_encoding_argument(train)
    train.set_defaults(_action=run_train)

    predict = sub.add_parser("predict", help="rank a split's (pair, relation) candidates",
                             description="score every (pair, relation other than NA) of a "
                                         "split with a model from `jkern ds train` and write "
                                         "them ranked by score")
    predict.add_argument("model", metavar="MODEL.npz", help="a model from `jkern ds train`")
    predict.add_argument("data", metavar="DATA", help=data_help)
    predict.add_argument("--out", "-o", required=True, metavar="RANKED.tsv",
                         help="e1, e2, relation, score, in_kb; highest score first "
                              "(required)")
    predict.add_argument("--split", choices=("train", "test"), default="test",
                         help="the pairs to score (default test)")
    predict.add_argument("--aggregate", choices=AGGREGATES, default="max",
                         help="a pair's score from its mentions' (default max)")
    predict.add_argument("--evaluate", action="store_true",
                         help="print the held-out figures against the split's KB relations "
                              "on stdout: auc, average_precision, p_at_100/200/500 (default "
                              "off)")
    predict.add_argument("--max-pairs", type=positive_int, default=None, metavar="N",
                         help="score a random subset of N pairs of the split (seeded by "
                              "--seed; default: all pairs)")
    add_seed_argument(predict, "seed of --max-pairs")
    add_quiet_argument(predict, "no summary line on stderr (default off)")
    add_encoding_argument(predict)
    predict.set_defaults(_action=run_predict)


def run(args: argparse.Namespace) -> int:
    return args._action(args)


def _data_files(data: str) -> list[str]:
    """The files `load_ds_wordnet` may read under DATA (in DATA/ds-wordnet/ or DATA/): what
    --out must not be."""
    import os

    from jkern.data import DS_WORDNET_FILES

    return [os.path.join(root, name) for root in (os.path.join(data, "ds-wordnet"), data)
            for name in DS_WORDNET_FILES]


def _load_split(args: argparse.Namespace) -> tuple[tuple[str, ...], Any]:
    """The relation names and the (sampled) split of DATA; bad data is an input error."""
    from jkern.data import load_ds_wordnet

    with input_errors():
        data = load_ds_wordnet(args.data, encoding=args.encoding)
        split = data.split(args.split)
        if args.max_pairs is not None:
            split = split.sample(args.max_pairs, seed=args.seed)
    if split.n_pairs == 0:
        raise CLIError(f"{args.data}: the {args.split} split has no pairs with mentions")
    return data.relation_names, split


def _counts(split: Any, what: str) -> str:
    return f"{split.n_mentions} mentions of {split.n_pairs} {what} pairs"


# --------------------------------------------------------------------------- train


def run_train(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    out = check_output_path(args.out, (".npz",), inputs=_data_files(args.data))
    if (args.min_count is not None and args.max_count is not None
            and args.min_count > args.max_count):
        raise CLIError(f"--min-count {args.min_count} is above --max-count {args.max_count}")
    setup_jax(args.dtype)
    import jax

    import jkern
    from jkern import RESULTS

    names, split = _load_split(args)
    m = split.mentions
    solver = {name: value for name, value in (("lam", args.lam), ("mu", args.mu),
                                              ("tol", args.tol), ("max_iter", args.max_iter),
                                              ("method", args.method),
                                              ("refine", args.refine))
              if value is not None}
    with compute_errors(), input_errors():  # input errors (a flag against the data): exit 2
        sol = jkern.ds.train_extractor(
            m.tokens, m.e1_token, m.e2_token, m.mention_pair, split.relations, classes=names,
            min_count=args.min_count, max_count=args.max_count, polynomial=args.poly,
            svd_rank=args.svd, key=jax.random.PRNGKey(args.seed), dtype=args.dtype,
            **solver)
    result = int(sol.result)
    gap, n_iter = float(sol.stats["gap"]), int(sol.stats["n_iter"])
    where = f"relative gap {gap:.3g} after {n_iter} iterations"
    if result == RESULTS.nonfinite:
        raise CLIError(f"the solver failed: {RESULTS.message(result)}; no model written",
                       EXIT_COMPUTE)
    if result != RESULTS.successful:
        advice = "raise --max-iter or --tol"
        if args.require_converged:
            raise CLIError(f"the solver did not converge ({where}): {advice}; no model "
                           "written (--require-converged)", EXIT_COMPUTE)
        print(f"jkern: warning: the solver did not converge ({where}): {advice}; the model "
              "is saved anyway", file=sys.stderr)
    with output_errors():
        jkern.save(out, sol.model)  # the RelationExtractor
    info = sol.stats  # the solve's figures and the feature counts
    features = f"{info['features']} features"
    for key, what in (("features_pruned", "pruned"), ("features_expanded", "expanded"),
                      ("features_projected", "projected")):
        if key in info:
            features += f" -> {info[key]} {what}"
    state = "converged" if result == RESULTS.successful else "NOT converged"
    say(args, f"ds train: {_counts(split, args.split)}, {len(names) - 1} relations, "
              f"{features}; {where} ({state}; solve {info['solve_seconds']:.2f} s) -> "
              f"{args.out} in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK


# --------------------------------------------------------------------------- predict


def run_predict(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    check_output_path(args.out, (".tsv",), inputs=(args.model, *_data_files(args.data)))
    setup_jax("float64")  # the file's arrays load at their saved precision
    import jkern
    from jkern.io import write_atomic

    with input_errors():
        extractor = jkern.load(args.model)
    if not isinstance(extractor, jkern.ds.RelationExtractor):
        raise CLIError(f"{args.model}: not a relation extractor from `jkern ds train` (a "
                       f"{type(extractor).__name__})")
    names, split = _load_split(args)
    classes = tuple(str(c) for c in extractor.classes)
    if classes != names:
        raise CLIError(f"{args.model} was trained for the classes {', '.join(classes)}, but "
                       f"{args.data} lists {', '.join(names)}")
    if args.evaluate and split.n_facts == 0:
        raise CLIError(f"--evaluate: the {args.split} split's pairs hold no KB relation to "
                       "evaluate against")
    m = split.mentions
    with compute_errors(), input_errors():
        scores = extractor.pair_scores(m.tokens, m.e1_token, m.e2_token, m.mention_pair,
                                       split.n_pairs, aggregate=args.aggregate)
        try:
            checked = jkern.finite_values(scores, "scores")
        except jkern.errors.NumericalError as err:
            raise CLIError(f"{err}; no output written", EXIT_COMPUTE) from err
        ranked = jkern.ds.rank_pairs(checked, split.relations)  # highest score first
    digits = ".17g" if scores.dtype == "float64" else ".9g"
    rows = ["e1\te2\trelation\tscore\tin_kb\n"]
    for p, k, score, in_kb in zip(ranked.pair.tolist(), ranked.relation.tolist(),
                                  ranked.score.tolist(), ranked.in_kb.tolist()):
        e1, e2 = split.pairs[p]
        rows.append(f"{e1}\t{e2}\t{names[k + 1]}\t{format(score, digits)}\t{int(in_kb)}\n")
    figures = None
    if args.evaluate:
        with compute_errors(), input_errors():
            figures = jkern.ds.held_out(checked, split.relations, top=TOP)
    text = "".join(rows)
    with output_errors():
        write_atomic(args.out, lambda f: f.write(text.encode("utf-8")))
    if figures is not None:
        for key in ("auc", "average_precision", *(f"p_at_{k}" for k in TOP)):
            print(f"{key}\t{figures[key]:.4f}")
        print(f"facts\t{figures['facts']}\nitems\t{figures['items']}")
    say(args, f"ds predict: {_counts(split, args.split)}, {len(ranked.pair)} (pair, relation) "
              f"scores, aggregate {args.aggregate} -> {args.out} in "
              f"{time.perf_counter() - t0:.2f} s")
    return EXIT_OK
