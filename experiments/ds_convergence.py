"""Convergence of the distant-supervision solvers on the full ds-wordnet training data.

Grave (2014)'s relaxation (`jkern.ds.fit`) on the lexical features of every training mention
(`jkern.ds.lexical_features`, vocabulary of the train split, unit-norm rows), float64, mu = 1,
for each configuration of --runs (`method:lam:max_iter:check_every:refine`, e.g.
`bcd:10:40:5:50` = block coordinate ascent at lam = 10, 40 sweeps, a check every 5, the
primal bound refined by 50 steps): the primal bound, dual value and relative gap at every
check, the seconds of the whole solve, and the held-out AUC of the model it returns
(max-aggregated pair scores on the test split). The solve stops at --tol or at max_iter.

    python experiments/ds_convergence.py [--runs fista:1:1000:250:0,bcd:1:40:5:0,...]
"""

from __future__ import annotations

import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
from _common import parse_args, parser, pyplot, write_result

from jkern import ds
from jkern.data import load_ds_wordnet

DEFAULT_RUNS = ("fista:1:1000:250:0,bcd:1:40:5:0,bcd:1:40:5:50,"
                "fista:10:1000:250:0,bcd:10:40:5:0,bcd:10:40:5:50")


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--runs", default=DEFAULT_RUNS,
                    help="comma-separated method:lam:max_iter:check_every:refine")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--max-train-pairs", type=int, default=None,
                    help="a seeded subset of the train pairs (default: all)")
    args = parse_args(ap, argv, "ds_convergence",
                      smoke={"runs": "fista:1:40:20:0,bcd:1:4:2:5", "max_train_pairs": 300})
    data = load_ds_wordnet(args.data_dir)
    train, test = data.train, data.test
    if args.max_train_pairs:
        train = train.sample(args.max_train_pairs, seed=0)
    m, mt = train.mentions, test.mentions
    rows_train = ds.lexical_features(m.tokens, m.e1_token, m.e2_token)
    vocab = ds.FeatureVocabulary.fit(rows_train)
    x = vocab.transform(rows_train, dtype="float64")
    x_test = vocab.transform(ds.lexical_features(mt.tokens, mt.e1_token, mt.e2_token),
                             dtype="float64")
    sigma_sq = float(ds.spectral_norm_sq(x))
    print(f"{train.n_mentions} train mentions, {train.n_pairs} pairs, {len(vocab)} features, "
          f"sigma_max(X)^2 = {sigma_sq:.1f}", flush=True)
    rows = []
    for spec in args.runs.split(","):
        method, lam, max_iter, check_every, refine = spec.split(":")
        t0 = time.perf_counter()
        sol = ds.fit(x, m.mention_pair, train.relations, lam=float(lam), mu=1.0, tol=args.tol,
                     method=method, max_iter=int(max_iter), check_every=int(check_every),
                     refine=int(refine), key=None)
        gap = float(sol.stats["gap"])
        seconds = time.perf_counter() - t0
        history = np.asarray(sol.stats["history"])
        history = history[~np.isnan(history[:, 0])]
        scores = sol.model.pair_scores(x_test, mt.mention_pair, test.n_pairs)
        figures = ds.held_out(scores, test.relations)
        row = {"model": "grave", "method": method, "lam": float(lam), "mu": 1.0,
               "max_iter": int(max_iter), "check_every": int(check_every),
               "refine": int(refine), "iterations": int(sol.stats["n_iter"]),
               "primal": float(sol.stats["primal"]), "dual": float(sol.stats["dual"]),
               "gap": gap, "seconds": seconds, "auc": figures["auc"],
               "p_at_100": figures["p_at_100"], "sigma_max_sq": sigma_sq,
               "history": history.tolist()}
        rows.append(row)
        print(f"{spec:22s} {row['iterations']:6d} iterations  primal {row['primal']:.6g}  "
              f"dual {row['dual']:.6g}  gap {gap:.3e}  {seconds:7.1f} s  AUC {row['auc']:.4f}",
              flush=True)
        for primal, dual, g, _ in history:
            print(f"    primal {primal:.6g}  dual {dual:.6g}  gap {g:.3e}")
    out = write_result(args.out_dir, "ds_convergence", rows, argv,
                       settings={"tol": args.tol, "features": len(vocab),
                                 "train_mentions": train.n_mentions})
    plot(rows, out.with_suffix(".png"))
    print(f"wrote {out}")
    return 0


def plot(rows: list[dict], path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        h = np.asarray(r["history"])
        if not len(h):
            continue
        checks = np.arange(1, len(h) + 1) * r["check_every"]
        ax.plot(checks / r["max_iter"], h[:, 2], "o-", ms=3,
                label=f"{r['method']} lam={r['lam']:g} refine={r['refine']} "
                      f"({r['seconds']:.0f} s)")
    ax.set_yscale("log")
    ax.set_xlabel("fraction of the iteration budget")
    ax.set_ylabel("relative duality gap")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
