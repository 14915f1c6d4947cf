"""Device benchmark (issue 35): jkern's main workloads, timed on whatever device JAX sees.

One command for a machine lent for a few minutes (a GPU, say); `scripts/device-bench.sh`
runs it. Workloads (`--workloads` picks some, in this order):

- `gram-{sst,ptk}-{float32,float64}`: the TREC training Gram (5,401 parses; normalized SST
  λ = 0.4, PTK λ = μ = 0.4), `jkern.gram`;
- `nystrom-ptk`: the Nyström block K(X, L), X the TREC training parses, L `--landmarks` of
  them (`jkern.fit_nystrom`, fitted untimed; `Nystrom.columns` timed), float32;
- `kda-grid` / `kda-loop`: 8 KDA configurations (dropout {0, 0.2, 0.4, 0.6} x λ {0, 1e-4})
  on those columns, `--kda-epochs` fixed epochs, float32: one vmapped program
  (`jkern.kda.init_grid` / `fit_grid`) against a Python loop of 8 `jkern.kda.fit`;
- `pa-grid`: PA-I in block mode, degree 2, a grid of 8 C values as one `jax.vmap` of
  `jkern.pa.fit`, on `--pa-examples` synthetic conjunctive-concept examples, float64;
- `ds-fista` / `ds-hybrid`: `jkern.ds.fit` at N = `--ds-mentions` (bench_ds.py's synthetic
  instance: d = 1,000 sparse features, 10 relations), relative gap 1e-6, float64.

Each is timed twice over: its first call (compilation included; without --xla-cache the
compiled-program cache is a fresh folder, as on a bare machine) and steady state, the median
of up to --repeats further calls, each waited for with `jax.block_until_ready`. --budget
bounds the whole run: a workload starts only while budget is left, and its repeats stop at
its share of what is left (at least one when its first call says it fits). The JSON
(`<out-dir>/device_bench.json`, or `device_bench_<tag>.json` with --tag) is rewritten after
every workload, so a run stopped early keeps what it measured; a workload that fails is
recorded with its error and the run goes on.

    bash scripts/device-bench.sh [--budget 360] [--workloads gram-ptk-float32,pa-grid]
        [--data-dir DIR] [--out-dir docs/results] [--tag h100]
"""

from __future__ import annotations

import atexit
import functools
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)  # the float64 rows; every workload names its dtype

import jax.numpy as jnp
import jaxlib.version
import numpy as np
from _common import (
    DROPOUTS,
    DS_FEATURES,
    DS_PER_ROW,
    L2S,
    ds_instance,
    parse_args,
    parser,
    trec,
    tree_kernel,
    write_result,
)

import jkern
from jkern import ds, kda, pa

NAME = "device_bench"
WORKLOADS = ("gram-sst-float32", "gram-sst-float64", "gram-ptk-float32", "gram-ptk-float64",
             "nystrom-ptk", "kda-grid", "kda-loop", "pa-grid", "ds-fista", "ds-hybrid")
PA_GRID = (0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
DS_TOL = 1e-6
DS_MAX_ITER = {"fista": 1_000_000, "hybrid": 1_000}  # FISTA steps / hybrid cycles (bench_ds)

# --smoke: every workload at a tiny size (a check of the script, not a result)
SMOKE = {"max_trees": 40, "landmarks": 10, "kda_epochs": 2, "pa_examples": 200, "pa_epochs": 2,
         "ds_mentions": 300, "repeats": 2}


# --------------------------------------------------------------------------- timing


@dataclass
class Workload:
    """A zero-argument `call` to time, what it computes (`size`), and `summary`, which turns
    its output into a few numbers that say the result is sane (and comparable across
    devices)."""

    call: Callable[[], Any]
    dtype: str
    size: dict[str, Any]
    summary: Callable[[Any], dict[str, Any]]


def built_since(before: dict[str, float]) -> dict[str, float]:
    """Programs built since `before` (a `jkern.program_stats()`: compiled, or loaded from the
    cache, `programs_loaded` of them) and the seconds spent tracing, lowering, compiling and
    loading them."""
    now = jkern.program_stats()
    seconds = sum(now[k] - before[k] for k in
                  ("trace_seconds", "lower_seconds", "compile_seconds", "load_seconds"))
    return {"programs_built": int(now["programs"] - before["programs"]),
            "programs_loaded": int(now["loaded"] - before["loaded"]),
            "build_s": round(seconds, 4)}


def timed_call(call: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = jax.block_until_ready(call())
    return time.perf_counter() - t0, out


def time_workload(work: Workload, *, repeats: int, share_ends: float, budget_ends: float
                  ) -> tuple[dict[str, Any], Any]:
    """The first call, then steady calls: the first of them if the first call's time still
    fits before `budget_ends`, more (up to `repeats`) while their median fits before
    `share_ends`."""
    before = jkern.program_stats()
    first_s, out = timed_call(work.call)
    record: dict[str, Any] = {"first_s": first_s, **built_since(before)}
    runs: list[float] = []
    while len(runs) < repeats:
        expected = statistics.median(runs) if runs else first_s
        ends = share_ends if runs else budget_ends
        if time.perf_counter() + expected > ends:
            break
        seconds, out = timed_call(work.call)
        runs.append(seconds)
    record.update(steady_s=statistics.median(runs) if runs else None, steady_runs=runs)
    if not runs:
        record["note"] = "no steady call: the budget was spent"
    return record, out


# --------------------------------------------------------------------------- inputs


class Inputs:
    """The data every workload reads, loaded or computed on first use (untimed)."""

    def __init__(self, args):
        self.args = args

    @functools.cached_property
    def trec_train(self):
        train, _ = trec(self.args.data_dir, self.args.max_trees)
        return train

    @functools.cached_property
    def projector(self) -> jkern.Nystrom:
        trees = self.trec_train.trees
        return jkern.fit_nystrom(tree_kernel("ptk"), trees, key=jax.random.PRNGKey(0),
                                 landmarks=min(self.args.landmarks, len(trees)),
                                 dtype="float64")

    @functools.cached_property
    def columns(self) -> jax.Array:
        """K(TREC train, landmarks), float32: what the KDA workloads train on."""
        return jax.block_until_ready(self.projector.columns(self.trec_train.trees,
                                                            dtype="float32"))

    @functools.cached_property
    def kda_setup(self) -> dict[str, Any]:
        """The 8 stacked KDA models, their keys and penalties, and the shared batch order."""
        y = np.asarray(self.trec_train.coarse)
        dropout = jnp.asarray([d for d in DROPOUTS for _ in L2S], jnp.float32)
        h = jnp.asarray(self.projector.projection, jnp.float32)
        models = kda.init_grid(h, tuple(sorted(set(y.tolist()))), key=jax.random.PRNGKey(0),
                               dropout=dropout)
        return {"y": y, "models": models, "l2": jnp.asarray([v for _ in DROPOUTS for v in L2S],
                                                            jnp.float32),
                "keys": jax.random.split(jax.random.PRNGKey(1), len(dropout)),
                "data_key": jax.random.PRNGKey(2)}

    @functools.cached_property
    def pa_data(self):
        train, _ = pa.conjunctive_concepts(self.args.pa_examples, 0, key=0, dtype="float64")
        return train

    @functools.cached_property
    def ds_problem(self) -> dict[str, Any]:
        """bench_ds.py's synthetic instance of `--ds-mentions` mentions, features sparse."""
        n = self.args.ds_mentions
        instance = ds_instance(n)
        x = jkern.SparseRows.from_coo(np.repeat(np.arange(n), DS_PER_ROW),
                                      instance["cols"].ravel(),
                                      np.full(n * DS_PER_ROW, 1.0 / np.sqrt(DS_PER_ROW)),
                                      (n, DS_FEATURES))
        return {"x": x, "mention_pair": instance["mention_pair"],
                "relations": instance["relations"]}


# --------------------------------------------------------------------------- workloads


def gram_workload(inputs: Inputs, kernel_name: str, dtype: str) -> Workload:
    trees = inputs.trec_train.trees
    kernel = tree_kernel(kernel_name)
    block = {} if inputs.args.block_size is None else {"block_size": inputs.args.block_size}
    stats: dict[str, Any] = {}  # the last call's split: host phases against compiled programs

    def sanity(g) -> dict[str, Any]:
        split = {k: round(float(v), 4) for k, v in stats.items()
                 if k in ("host_seconds", "program_seconds", "host_cpu_seconds", "seconds",
                          "forest_seconds", "pairs_seconds", "contract_seconds")}
        return {"gram_sum": float(np.sum(g)), "last_call": split}

    return Workload(lambda: jkern.gram(kernel, trees, dtype=dtype, stats=stats, **block), dtype,
                    {"trees": len(trees)}, sanity)


def nystrom_workload(inputs: Inputs) -> Workload:
    projector, trees = inputs.projector, inputs.trec_train.trees
    return Workload(lambda: projector.columns(trees, dtype="float32"), "float32",
                    {"trees": len(trees), "landmarks": projector.n_landmarks,
                     "rank": projector.rank},
                    lambda c: {"columns_sum": float(jnp.sum(c))})


def kda_options(inputs: Inputs) -> dict[str, Any]:
    return {"epochs": inputs.args.kda_epochs, "batch_size": 256,
            "data_key": inputs.kda_setup["data_key"]}


def kda_size(inputs: Inputs) -> dict[str, Any]:
    setup = inputs.kda_setup
    return {"configurations": len(setup["keys"]), "examples": len(setup["y"]),
            "landmarks": int(setup["models"].nystrom.shape[1]), "epochs": inputs.args.kda_epochs}


def train_accuracy(models: list[kda.KDA], c: jax.Array, y: np.ndarray) -> list[float]:
    return [float(np.mean(np.asarray(model.predict(c)) == y)) for model in models]


def kda_grid_workload(inputs: Inputs) -> Workload:
    c, s = inputs.columns, inputs.kda_setup
    return Workload(
        lambda: kda.fit_grid(c, s["y"], models=s["models"], keys=s["keys"], l2=s["l2"],
                             **kda_options(inputs)),
        "float32", kda_size(inputs),
        lambda sol: {"train_accuracy": train_accuracy(
            [kda.grid_member(sol.model, g) for g in range(len(s["keys"]))], c, s["y"])})


def kda_loop_workload(inputs: Inputs) -> Workload:
    c, s = inputs.columns, inputs.kda_setup
    singles = [kda.grid_member(s["models"], g) for g in range(len(s["keys"]))]

    def loop():
        return [kda.fit(c, s["y"], model=model, key=s["keys"][g], l2=s["l2"][g],
                        **kda_options(inputs)).model for g, model in enumerate(singles)]

    return Workload(loop, "float32", kda_size(inputs),
                    lambda models: {"train_accuracy": train_accuracy(models, c, s["y"])})


def pa_grid_workload(inputs: Inputs) -> Workload:
    data, epochs = inputs.pa_data, inputs.args.pa_epochs
    grid = jnp.asarray(PA_GRID, jnp.float64)

    def fit_grid():
        return jax.vmap(lambda c: pa.fit(data.features, data.labels, C=c, degree=2,
                                         epochs=epochs, mode="block", dtype="float64",
                                         key=None))(grid)

    return Workload(fit_grid, "float64",
                    {"examples": len(data.labels), "degree": 2, "epochs": epochs,
                     "grid": list(PA_GRID)},
                    lambda sol: {"updates": np.asarray(sol.stats["updates"]).sum(-1).tolist(),
                                 "results": np.asarray(sol.result).tolist()})


def ds_workload(inputs: Inputs, method: str) -> Workload:
    p = inputs.ds_problem

    def solve():
        return ds.fit(p["x"], p["mention_pair"], p["relations"], lam=1.0, mu=1.0, tol=DS_TOL,
                      method=method, max_iter=DS_MAX_ITER[method], dtype="float64", key=None)

    return Workload(solve, "float64",
                    {"mentions": inputs.args.ds_mentions, "features": DS_FEATURES,
                     "tol": DS_TOL},
                    lambda sol: {"primal": float(sol.stats["primal"]),
                                 "gap": float(sol.stats["gap"]),
                                 "n_iter": int(sol.stats["n_iter"]),
                                 "result": jkern.RESULTS.message(int(sol.result))})


def build(name: str, inputs: Inputs) -> Workload:
    """The workload `name` (its inputs computed here, outside the timing)."""
    if name.startswith("gram-"):
        _, kernel_name, dtype = name.split("-")
        return gram_workload(inputs, kernel_name, dtype)
    if name.startswith("ds-"):
        return ds_workload(inputs, name.removeprefix("ds-"))
    return {"nystrom-ptk": nystrom_workload, "kda-grid": kda_grid_workload,
            "kda-loop": kda_loop_workload, "pa-grid": pa_grid_workload}[name](inputs)


# --------------------------------------------------------------------------- the run


def fresh_folder() -> str:
    """A temporary folder, removed when the process ends."""
    path = tempfile.mkdtemp(prefix="jkern-device-bench-xla-")
    atexit.register(shutil.rmtree, path, True)
    return path


def device_fields() -> dict[str, Any]:
    """The device JAX computes on, its platform and the versions of what drives it."""
    device = jax.devices()[0]
    return {"device_kind": device.device_kind, "platform": jax.default_backend(),
            "device_count": jax.device_count(), "jaxlib": jaxlib.version.__version__,
            "platform_version": device.client.platform_version}


def device_peak_bytes() -> int | None:
    """The device's peak memory in use so far (None where the backend does not say: CPU)."""
    stats = jax.devices()[0].memory_stats()
    return None if stats is None else stats.get("peak_bytes_in_use")


def run_one(name: str, inputs: Inputs, args, share_ends: float, budget_ends: float) -> dict:
    """One workload's row: its setup and timings, or the error that stopped it."""
    row: dict[str, Any] = {"workload": name}
    try:
        t0 = time.perf_counter()
        work = build(name, inputs)
        row.update(dtype=work.dtype, setup_s=time.perf_counter() - t0, **work.size)
        timing, out = time_workload(work, repeats=args.repeats, share_ends=share_ends,
                                    budget_ends=budget_ends)
        row.update(timing, **work.summary(out), device_peak_bytes=device_peak_bytes())
    except Exception as err:  # one failing workload (memory, say) must not lose the rest
        traceback.print_exc()
        row["error"] = f"{type(err).__name__}: {err}"[:2000]
    return row


def comparisons(rows: list[dict]) -> dict[str, float]:
    by_name = {r["workload"]: r for r in rows if r.get("steady_s")}
    if "kda-grid" in by_name and "kda-loop" in by_name:
        return {"kda_loop_over_grid": by_name["kda-loop"]["steady_s"]
                / by_name["kda-grid"]["steady_s"]}
    return {}


def fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}"


TABLE_HEAD = (f"{'workload':<18} {'dtype':<8} {'first s':>9} {'steady s':>9} {'runs':>4} "
              f"{'programs':>8}  note")


def table_line(r: dict) -> str:
    note = r.get("error") or r.get("skipped") or r.get("note") or ""
    return (f"{r['workload']:<18} {r.get('dtype', '-'):<8} {fmt(r.get('first_s')):>9} "
            f"{fmt(r.get('steady_s')):>9} {len(r.get('steady_runs', [])):>4} "
            f"{r.get('programs_built', '-'):>8}  {note[:60]}")


def print_table(rows: list[dict], device: dict[str, Any]) -> None:
    print(f"\n{device['device_kind']} ({device['platform']}, jax {jax.__version__})")
    print(TABLE_HEAD)
    for r in rows:
        print(table_line(r))
    for what, ratio in comparisons(rows).items():
        print(f"{what}: x{ratio:.2f}")


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help=f"comma-separated, from: {', '.join(WORKLOADS)}")
    ap.add_argument("--budget", type=float, default=360.0,
                    help="seconds for all workloads, setup included (default 360: with start-up "
                         "and the last workload's overrun, the run ends within 8 minutes)")
    ap.add_argument("--repeats", type=int, default=3, help="steady calls per workload (at most)")
    ap.add_argument("--max-trees", type=int, default=None,
                    help="an evenly spread N of the TREC training parses (default all 5,401)")
    ap.add_argument("--block-size", type=int, default=None,
                    help="the Gram's row block (default jkern's)")
    ap.add_argument("--landmarks", type=int, default=1000)
    ap.add_argument("--kda-epochs", type=int, default=20)
    ap.add_argument("--pa-examples", type=int, default=10_000)
    ap.add_argument("--pa-epochs", type=int, default=10)
    ap.add_argument("--ds-mentions", type=int, default=10_000)
    ap.add_argument("--xla-cache", default=None,
                    help="compiled-program cache folder (default: a fresh temporary one, so "
                         "first calls compile; --smoke: the user's cache)")
    ap.add_argument("--tag", default=None,
                    help="name the JSON device_bench_<tag>.json (e.g. the device: h100)")
    args = parse_args(ap, argv, NAME, SMOKE)
    names = [w for w in args.workloads.split(",") if w]
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    if args.xla_cache or not args.smoke:
        cache = jkern.enable_compilation_cache(args.xla_cache or fresh_folder())
        print(f"compiled programs cached in {cache}", flush=True)

    device = device_fields()
    print(f"device: {device}", flush=True)
    result_name = NAME if args.tag is None else f"{NAME}_{args.tag}"
    inputs = Inputs(args)
    start = time.perf_counter()
    budget_ends = start + args.budget
    rows: list[dict] = []
    for k, name in enumerate(names):
        now = time.perf_counter()
        if now >= budget_ends:
            rows.append({"workload": name, "skipped": "the budget was spent"})
        else:
            share_ends = now + (budget_ends - now) / (len(names) - k)
            rows.append(run_one(name, inputs, args, share_ends, budget_ends))
        print(table_line(rows[-1]), flush=True)
        path = write_result(args.out_dir, result_name, rows, argv, environment_extra=device,
                            settings=dict(vars(args)),
                            comparisons=comparisons(rows), complete=k == len(names) - 1,
                            seconds=time.perf_counter() - start)
    print_table(rows, device)
    print(f"\nwrote {path} ({time.perf_counter() - start:.0f} s)")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
