"""Benchmark: a KDA hyperparameter grid trained as one vmapped program vs one fit after another.

Data: TREC question classification (5,401 training parses), normalized PTK (λ = μ = 0.4),
Nyström with `m` uniformly sampled landmarks (m = 100 and 1,000); the kernel columns
K(train, landmarks) are computed once through the forest engine and shared by both sides.
Grid: 8 configurations, dropout {0, 0.2, 0.4, 0.6} x λ {0, 1e-4}, each with its own seed; the
paper's network (two hidden layers of width m, Adam 1e-3, batches of 256), a fixed number of
epochs (no early stopping, so both sides do the same work), float32.

  grid:   `jkern.kda.fit_grid`: the 8 members stacked, one compiled program, one shared
          batch order (`data_key`);
  script: the same 8 configurations one after another as a training script is written: for
          each, its own compiled step (`eqx.filter_jit` of `train_step` with that
          configuration's λ), driven by a Python loop over epochs and batches (the batches of
          `jkern.kda.epoch_batches`, so the results equal the grid's members);
  fits:   `jkern.kda.fit` per configuration (one compiled while-loop program, reused: compile
          excluded) — the strongest sequential baseline, reported beside the target.
Median of --repeats runs each (the first, compiling call of grid and fits reported
separately; the script's per-configuration compiles are part of what it costs).
Ratio = script seconds / grid seconds (target >= 2 at m = 100); fits / grid is printed too.
Parameters of every member are compared across the three.

    python experiments/bench_kda.py --data-dir ../shared/data [--out-dir docs/results]
"""

from __future__ import annotations

import functools
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)  # the Gram in float64; the networks train in float32

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from _common import DROPOUTS, L2S, parse_args, parser, plot_bars, trec, tree_kernel, write_result

import jkern
from jkern import kda

# --smoke: an evenly spread 100 training parses, 20 landmarks, 2 epochs, one timed run each
SMOKE = {"max_train": 100, "landmarks": "20", "epochs": "2", "repeats": 1}


def columns(trees, m: int, key):
    """Kernel columns K(train, landmarks) and the projector's H, float32."""
    kernel = tree_kernel("ptk")
    projector = jkern.fit_nystrom(kernel, trees, landmarks=m, key=key, dtype="float64")
    c = jkern.gram(kernel, trees, list(projector.landmarks), dtype="float64", block_size=256)
    return np.asarray(c, np.float32), np.asarray(projector.projection, np.float32)


def timed(fn, repeats: int, warmup: bool = True) -> tuple[float, list[float], float, object]:
    """Median seconds of `repeats` calls (after one first call, timed apart, if `warmup`;
    otherwise the first call is one of the runs)."""
    first = float("nan")
    if warmup:
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        first = time.perf_counter() - t0
    runs = []
    for _ in range(repeats + (0 if warmup else 1)):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn())
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), runs, first, out


def bench(train, y, classes, dropout, l2, m: int, epochs: int, repeats: int) -> dict:
    """One landmark count: the three sides, timed, and their members compared."""
    G = len(dropout)
    c, h = columns(train.trees, m, jax.random.PRNGKey(m))
    keys = jax.random.split(jax.random.PRNGKey(1), G)
    models = kda.init_grid(h, classes, key=jax.random.PRNGKey(0), dropout=dropout)
    singles = [kda.grid_member(models, g) for g in range(G)]
    options = dict(epochs=epochs, batch_size=256)

    data_key = jax.random.PRNGKey(2)
    n = len(y)
    yi = jnp.asarray(np.searchsorted(np.asarray(classes), y), jnp.int32)

    def grid():
        return kda.fit_grid(c, y, models=models, keys=keys, l2=l2, data_key=data_key,
                            **options)

    def fits():
        return [kda.fit(c, y, model=singles[g], key=keys[g], l2=l2[g], data_key=data_key,
                        **options).model for g in range(G)]

    def script():
        out = []
        for g in range(G):
            model = singles[g]
            step = eqx.filter_jit(functools.partial(kda.train_step, l2=l2[g],
                                                    embedded=True))
            opt_state = kda.init_opt_state(model, kda.adam())
            z = model.embed(jnp.asarray(c))
            for e in range(epochs):
                idx, weight, step_keys = kda.epoch_batches(n, 256, e, data_key, keys[g])
                for b in range(idx.shape[0]):
                    model, opt_state, _ = step(model, opt_state,
                                               (z[idx[b]], yi[idx[b]], weight[b]),
                                               step_keys[b])
            out.append(model)
        return out

    g_med, g_runs, g_first, g_out = timed(grid, repeats)
    f_med, f_runs, f_first, f_out = timed(fits, repeats)
    s_med, s_runs, _, s_out = timed(script, repeats - 1, warmup=False)
    diff = max(float(jnp.max(jnp.abs(a - b)))
               for g in range(G)
               for other in (f_out[g], s_out[g])
               for a, b in zip(jax.tree_util.tree_leaves(kda.grid_member(g_out, g).model),
                               jax.tree_util.tree_leaves(other)))
    acc = [float(np.mean(np.asarray(m_.predict(c)) == y)) for m_ in f_out]
    row = {"landmarks": m, "configurations": G, "epochs": epochs, "dtype": "float32",
           "grid_seconds": round(g_med, 3), "grid_runs": [round(t, 3) for t in g_runs],
           "grid_first_call_seconds": round(g_first, 3),
           "script_seconds": round(s_med, 3), "script_runs": [round(t, 3) for t in s_runs],
           "fits_seconds": round(f_med, 3), "fits_runs": [round(t, 3) for t in f_runs],
           "fits_first_call_seconds": round(f_first, 3),
           "ratio": round(s_med / g_med, 3), "ratio_fits": round(f_med / g_med, 3),
           "target_ratio": 2.0 if m == 100 else None,
           "max_abs_param_diff": diff, "train_accuracy": acc}
    print(f"m={m:5d}  {G} configs x {epochs} epochs: grid {g_med:.2f} s, script "
          f"{s_med:.2f} s (ratio {s_med / g_med:.2f}), fits {f_med:.2f} s (ratio "
          f"{f_med / g_med:.2f}); max |Δparam| {diff:.1e}", flush=True)
    return row


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--landmarks", default="100,1000")
    ap.add_argument("--epochs", default="20,3", help="epochs per landmark count")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training parses (default all)")
    args = parse_args(ap, argv, "bench_kda", SMOKE)

    train, _ = trec(args.data_dir, args.max_train)
    y = np.asarray(train.coarse)
    classes = tuple(sorted(set(y.tolist())))
    dropout = jnp.asarray([d for d in DROPOUTS for _ in L2S], jnp.float32)
    l2 = jnp.asarray([v for _ in DROPOUTS for v in L2S], jnp.float32)
    rows = []
    for m, epochs in zip([int(s) for s in args.landmarks.split(",")],
                         [int(s) for s in args.epochs.split(",")]):
        rows.append(bench(train, y, classes, dropout, l2, m, epochs, args.repeats))
    out = write_result(args.out_dir, "bench_kda", rows, argv,
                       settings={"dropouts": DROPOUTS, "l2": L2S, "batch_size": 256,
                                 "optimizer": "adam(1e-3)", "hidden": "2 x landmarks"})
    plot_bars(out.parent / "bench_kda.png",
              [f"{r['landmarks']} landmarks\n{r['epochs']} epochs" for r in rows],
              {"grid (fit_grid, one program)": [r["grid_seconds"] for r in rows],
               "script (a Python loop per configuration)": [r["script_seconds"] for r in rows],
               "fits (one kda.fit per configuration)": [r["fits_seconds"] for r in rows]},
              ylabel="seconds (median)", yscale="log",
              title=f"KDA grid of {rows[0]['configurations']} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
