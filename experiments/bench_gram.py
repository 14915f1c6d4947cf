"""Benchmark suite: tree-kernel Gram matrices, jkern beside SVM-Light-TK, whole processes.

Every run is a fresh process (this script with `--worker`), measured from outside: wall
seconds, CPU seconds (user + sys) and peak RSS of the whole process (Python, JAX and reading
the trees included, as a user meets them; jkern and SVM-Light-TK read the same file of the
workload's trees, written once by the parent), plus what the worker reports: the seconds of the
Gram computation itself, the XLA programs it built (compiled, or loaded from the persistent
cache), the Delta entries computed and the Gram sum. Warm runs share a compilation cache
filled by one unmeasured run first; cold runs each start from an empty one.

Host apart from programs: the worker times reading the trees file (`read s`), and the Gram's
`stats` split its thread-seconds (summed over the block threads) into host work (`host s`:
the forest, then planning: the kernel's plan of the forest, column sides, row layout and
entry buckets, pair finding, contraction indices, assembling the matrix) and compiled
programs (`program s`: building them on a first call, dispatching them, waiting for them);
`host %` is host s / (host s + program s), for the first Gram and for the calls again
(jkern/kernels/_timing.py says what each phase holds). The programs run on JAX's threads, so
`host CPU %` divides the host phases' CPU seconds by the process's over the Gram: on a busy
machine it moves less than the wall-clock split.

Workloads (`--workloads`, comma-separated; default all but the long exact-PTK/SPTK ones):
    trec-sst, trec-ptk5, trec-ptk, trec-sptk   TREC 5,401 training parses, full Gram
    boundary-sst, boundary-ptk5                SRL boundary_5000 (lexicalized)
    boundary-unlex-sst, boundary-unlex-ptk5    the same without the words
    ast-sst, ast-ptk5                          the stdlib ASTs of the main example, 720^2
    ast-sst-cross, ast-ptk5-cross              its 180 x 720 cross block
    ud-ptk5                                    UD EWT dev+test as GRCT trees (4,078)
    nystrom-ptk5                               K(X, L): 5,401 TREC trees x 1,000 landmarks
    small-10, small-100, small-1000            the first N TREC trees, PTK (max_subseq 5),
                                               each with a warm and a cold cache
SST lam = 0.4; PTK lam = mu = 0.4 (ptk5: max_subseq 5, SVM-Light-TK's as distributed);
float64 throughout.

Competitor: `--svmlight-tk DIR`, a folder with `tk_gram` (and `tk_gram_exact`, PTK without
the length-5 cap), a small harness built against SVM-Light-TK 1.5's public source (never
committed; see docs/performance.md). It runs on the same trees, alternating with jkern, one
thread. Its Gram sum is compared with jkern's. Without it, the figures recorded in issue 19
are printed beside (`recorded_tk_cpu_s`).

    python experiments/bench_gram.py --data-dir ../shared/data --svmlight-tk /work/tk/harness
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import parse_args, parser, pyplot, write_result

from jkern.kernels._timing import HOST_PHASES

# name: (source, kernel, block). block: "square", "cross" (first rows against the rest).
WORKLOADS = {
    "trec-sst": ("trec", "sst", "square"),
    "trec-ptk5": ("trec", "ptk5", "square"),
    "trec-ptk": ("trec", "ptk", "square"),
    "trec-sptk": ("trec", "sptk", "square"),
    "boundary-sst": ("boundary", "sst", "square"),
    "boundary-ptk5": ("boundary", "ptk5", "square"),
    "boundary-unlex-sst": ("boundary-unlex", "sst", "square"),
    "boundary-unlex-ptk5": ("boundary-unlex", "ptk5", "square"),
    "ast-sst": ("ast-train", "sst", "square"),
    "ast-ptk5": ("ast-train", "ptk5", "square"),
    "ast-sst-cross": ("ast", "sst", "cross"),
    "ast-ptk5-cross": ("ast", "ptk5", "cross"),
    "ud-ptk5": ("ud", "ptk5", "square"),
    "nystrom-ptk5": ("nystrom", "ptk5", "cross"),
    "small-10": ("trec-10", "ptk5", "square"),
    "small-100": ("trec-100", "ptk5", "square"),
    "small-1000": ("trec-1000", "ptk5", "square"),
}
SLOW = ("trec-ptk", "trec-sptk")
# Issue 19's recorded SVM-Light-TK CPU seconds (whole process, this 2-core machine kind under
# load, 2026-11-23), printed when no local build is given.
RECORDED_TK_CPU_S = {"trec-sst": 30.6, "trec-ptk5": 90.6, "trec-ptk": 76.8,
                     "boundary-sst": 15.9, "ast-sst": 0.67, "ast-ptk5": 5.5,
                     "ast-sst-cross": 0.45, "ast-ptk5-cross": 3.2, "small-100": 0.017}
SMOKE = {"workloads": "small-10,small-100", "repeats": 1, "threads": "2"}


# --------------------------------------------------------------------------- the worker
def load_trees(source: str, data_dir: str):
    """(trees, n_rows): the trees of a workload; a cross block is trees[:n_rows] against
    trees[n_rows:], a square one uses n_rows = len(trees)."""
    import numpy as np

    from jkern.data import load_stdlib_functions, load_trec, stratified_split
    from jkern.trees import grct, read_conllu, read_trees, without_leaves

    if source.startswith("trec"):
        trees = load_trec(data_dir, "train").trees
        n = int(source.split("-")[1]) if "-" in source else len(trees)
        return trees[:n], n
    if source.startswith("boundary"):
        trees = read_trees(Path(data_dir) / "srl" / "boundary_5000.dat")
        if source == "boundary-unlex":
            trees = [without_leaves(t) for t in trees]
        return trees, len(trees)
    if source.startswith("ast"):  # the main example's split (seed 0)
        data = load_stdlib_functions()
        train, test = stratified_split(data.labels, 0.2, seed=0)
        tr = [data.trees[i] for i in train]
        if source == "ast-train":
            return tr, len(tr)
        return [data.trees[i] for i in test] + tr, len(test)
    if source == "ud":
        ud = Path(data_dir) / "ud-english-ewt"
        sentences = [s for part in ("dev", "test")
                     for s in read_conllu(ud / f"en_ewt-ud-{part}.conllu")]
        trees = [grct(s) for s in sentences]
        return trees, len(trees)
    if source == "nystrom":  # all training trees against 1,000 spread landmarks
        trees = load_trec(data_dir, "train").trees
        pick = np.random.default_rng(0).permutation(len(trees))[:1000]
        return trees + [trees[i] for i in pick], len(trees)
    raise ValueError(source)


def process_age() -> float:
    """Seconds since this process started (Linux /proc, 10 ms resolution)."""
    start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def make_kernel(name: str, trees):
    import jkern

    if name == "sst":
        return jkern.SST(0.4)
    if name == "ptk5":
        return jkern.PTK(0.4, 0.4, max_subseq=5)
    if name == "ptk":
        return jkern.PTK(0.4, 0.4)
    if name == "sptk":  # GloVe 6B 50-d for the words of the trees, Gaussian similarity
        from jkern.data import glove_6b_50d, tree_words

        vocab, vectors = glove_6b_50d().for_words(tree_words(trees))
        return jkern.SPTK(vocab, vectors, 0.4, 0.4, gamma=3.0)
    raise ValueError(name)


# In-process repeats of a workload's Gram (`again`): at most this many, while their seconds
# add up to less than this.
AGAIN_REPEATS, AGAIN_SECONDS = 7, 3.0


def worker(name: str, trees_file: str, n_rows: int, threads: int, again: bool = True) -> None:
    """One measured process: reads the workload's trees from `trees_file` (the file
    SVM-Light-TK reads, so both tools start from the same text), computes the Gram block,
    prints its figures as one RESULT line."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import numpy as np

    import jkern

    _, kernel_name, block = WORKLOADS[name]
    t0 = time.perf_counter()
    trees = jkern.read_trees(trees_file)
    read_seconds = time.perf_counter() - t0
    kernel = make_kernel(kernel_name, trees)
    stats: dict = {}
    t0 = time.perf_counter()
    if block == "square":
        g = jkern.gram(kernel, trees, dtype="float64", threads=threads, stats=stats)
    else:
        g = jkern.gram(kernel, trees[:n_rows], trees[n_rows:], dtype="float64",
                       threads=threads, stats=stats)
    g = np.asarray(g)
    seconds = time.perf_counter() - t0
    built = jkern.program_stats()  # every program the Gram needs is built by now
    # the whole process so far (start-up, data, kernel, Gram): what a user's run costs
    usage = resource.getrusage(resource.RUSAGE_SELF)
    first = {"cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024,
             "wall_s": process_age()}
    # the same call again in this process: every program built, the engine's work alone;
    # the median of up to AGAIN_REPEATS calls, as many as fit in AGAIN_SECONDS after the
    # first (a Gram of a tenth of a second is otherwise mostly this machine's noise)
    seconds_again = None
    split_again: dict = {}
    if again:
        times: list[float] = []
        splits: list[dict] = []
        while not times or (len(times) < AGAIN_REPEATS and sum(times) < AGAIN_SECONDS):
            again_stats: dict = {}
            t0 = time.perf_counter()
            if block == "square":
                second = jkern.gram(kernel, trees, dtype="float64", threads=threads,
                                    stats=again_stats)
            else:
                second = jkern.gram(kernel, trees[:n_rows], trees[n_rows:], dtype="float64",
                                    threads=threads, stats=again_stats)
            np.asarray(second)
            times.append(time.perf_counter() - t0)
            splits.append(seconds_split(again_stats))
            del second
        seconds_again = float(np.median(times))
        # each phase's median over the calls (the phases of one call need not be the
        # median call's)
        split_again = {k: float(np.median([s[k] for s in splits])) for k in splits[0]}
    out = {"gram_seconds": seconds, "gram_seconds_again": seconds_again, "first": first,
           "gram_sum": float(g.sum()), "shape": list(g.shape),
           "programs": stats["programs"], "delta_entries": stats["delta_entries"],
           "constant_entries": stats["constant_entries"], "node_pairs": stats["node_pairs"],
           "trees": stats["trees"], "forest_nodes": stats["forest_nodes"],
           "total_nodes": stats["total_nodes"], "read_seconds": read_seconds,
           "split": seconds_split(stats), "split_again": split_again, **built}
    print("RESULT " + json.dumps(out), flush=True)


PHASES = HOST_PHASES  # the Gram's host phases, as `jkern.kernels._timing` names them
PLAN_PHASES = PHASES[1:]


def seconds_split(stats: dict) -> dict:
    """A Gram's thread-seconds (summed over its block threads) out of its `stats`: each
    host phase (`<phase>_s`), `host_s` (all of them: forest and planning), `program_s`
    (compiled programs: building them, dispatching them, waiting for them) and `host_share`,
    host_s / (host_s + program_s); in CPU seconds, `gram_cpu_s` (the process over the call),
    `host_cpu_s` (the threads in host phases) and `host_cpu_share`, their ratio (programs
    run on JAX's threads, so the rest is theirs)."""
    out = {f"{p}_s": float(stats[f"{p}_seconds"]) for p in PHASES}
    host, program = float(stats["host_seconds"]), float(stats["program_seconds"])
    cpu, host_cpu = float(stats["cpu_seconds"]), float(stats["host_cpu_seconds"])
    out.update(host_s=host, program_s=program,
               host_share=host / (host + program) if host + program > 0 else 0.0,
               gram_cpu_s=cpu, host_cpu_s=host_cpu,
               host_cpu_share=host_cpu / cpu if cpu > 0 else 0.0)
    return out


# --------------------------------------------------------------------------- the parent
def run_measured(cmd: list[str], env: dict, one_core: bool) -> tuple[dict, str]:
    """`cmd` in a fresh process: wall, CPU (user + sys) and peak RSS from wait4."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        core = min(os.sched_getaffinity(0))
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=err,
            preexec_fn=(lambda: os.sched_setaffinity(0, {core})) if one_core else None)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    if status != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (status {status}):\n{errors[-3000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024}, text


def tk_penn(tree) -> str:
    """The tree in a bracketing SVM-Light-TK reads as the same tree. Its parser takes a bare
    word as everything up to the next ")" (spaces included) and only as a node's last child,
    so `(VB ask a)` would become one leaf "ask a" and `(BinOp (Name x) Add (Constant int))`
    is rejected; a leaf that is not its parent's last child is written `(w)`, which both
    tools read as a leaf."""
    out: list[str] = []
    stack = [(0, True)]
    while stack:
        node, last = stack.pop()
        if node == -1:
            out.append(")")
            continue
        kids = tree.children[node]
        space = "" if node == 0 else " "
        if not kids:
            out.append(f"{space}{tree.labels[node]}" if last and node != 0
                       else f"{space}({tree.labels[node]})")
            continue
        out.append(f"{space}({tree.labels[node]}")
        stack.append((-1, True))
        stack.extend((k, i == len(kids) - 1) for i, k in reversed(list(enumerate(kids))))
    return "".join(out)


def write_tk_file(trees, path: Path) -> None:
    with open(path, "w") as f:
        for t in trees:
            f.write(f"1 |BT| {tk_penn(t)} |ET|\n")


def tk_command(tk_dir: Path, kernel: str, data: Path, n_rows: int, n: int) -> list[str]:
    binary = tk_dir / ("tk_gram_exact" if kernel == "ptk" else "tk_gram")
    name = {"sst": "sst", "ptk5": "ptk", "ptk": "ptk"}[kernel]
    cmd = [str(binary), "--kernel", name, "--lambda", "0.4", "--mu", "0.4"]
    if n_rows != n:
        cmd += ["--rows", str(n_rows)]
    return cmd + [str(data)]


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--workloads", default=",".join(w for w in WORKLOADS if w not in SLOW),
                    help=f"comma-separated, from: {', '.join(WORKLOADS)}")
    ap.add_argument("--threads", default="1,2", help="jkern thread counts to run (1: pinned "
                                                     "to one core)")
    ap.add_argument("--repeats", type=int, default=3, help="measured runs per setting")
    ap.add_argument("--svmlight-tk", default=None,
                    help="folder with the tk_gram / tk_gram_exact harness binaries")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-threads", type=int, default=2, help=argparse.SUPPRESS)
    ap.add_argument("--worker-once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker-trees", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-rows", type=int, default=0, help=argparse.SUPPRESS)
    args = parse_args(ap, argv, "bench_gram", SMOKE)
    if args.worker:
        worker(args.worker, args.worker_trees, args.worker_rows, args.worker_threads,
               again=not args.worker_once)
        return 0

    names = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    threads = [int(t) for t in args.threads.split(",")]
    tk_dir = Path(args.svmlight_tk) if args.svmlight_tk else None
    import jkern

    scratch = Path(tempfile.mkdtemp(prefix="jkern-bench-"))
    warm_cache = scratch / "xla-warm"
    rows = []
    try:
        for name in names:
            source, kernel, _ = WORKLOADS[name]
            variants = ["warm", "cold"] if name.startswith("small-") else ["warm"]
            # one file of the trees that both tools read (checked to read back as the same
            # trees): the measured processes do the same input work
            trees, n_rows = load_trees(source, args.data_dir)
            data = scratch / f"{name}.dat"
            write_tk_file(trees, data)
            if jkern.read_trees(data) != list(trees):
                raise RuntimeError(f"{name}: the trees file does not read back as its trees")
            tk_cmd = (None if tk_dir is None
                      else tk_command(tk_dir, kernel, data, n_rows, len(trees)))
            for t in threads:
                for variant in variants:
                    rows.append(measure(name, t, variant, args, warm_cache, scratch,
                                        data, n_rows, tk_cmd))
                    print_row(rows[-1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = write_result(args.out_dir, "bench_gram", rows, argv)
    write_table(rows, out.with_suffix(".md"))
    plot(rows, out.with_suffix(".png"))
    return 0


def measure(name, threads, variant, args, warm_cache, scratch, data, n_rows, tk_cmd) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name,
           "--worker-threads", str(threads), "--worker-trees", str(data),
           "--worker-rows", str(n_rows), "--data-dir", args.data_dir,
           "--out-dir", str(scratch)]
    env = dict(os.environ)
    env.pop("JKERN_NO_CACHE", None)
    env["JKERN_CACHE_DIR"] = str(warm_cache)
    if variant == "warm":
        run_measured(cmd, env, threads == 1)  # fills the cache; not measured
    runs, tk_runs, result, tk_error = [], [], {}, ""
    for r in range(args.repeats):
        if variant == "cold":
            env["JKERN_CACHE_DIR"] = str(scratch / f"xla-cold-{name}-{threads}-{r}")
        whole, text = run_measured(cmd, env, threads == 1)
        result = json.loads(next(x for x in text.splitlines() if x.startswith("RESULT "))[7:])
        # CPU and peak RSS up to the end of the first Gram (the worker computes it a second
        # time after that, in the same process, for `gram_again_s`)
        runs.append({**result["first"], "process_wall_s": whole["wall_s"],
                     "gram_s": result["gram_seconds"],
                     "gram_again_s": result["gram_seconds_again"],
                     # building the programs: tracing, lowering, compiling or loading them
                     "programs_s": result["trace_seconds"] + result["lower_seconds"]
                     + result["compile_seconds"] + result["load_seconds"],
                     # reading the trees file (before the Gram, so outside its split)
                     "read_s": result["read_seconds"],
                     "split": result["split"], "split_again": result["split_again"]})
        if tk_cmd is not None and threads == 1 and variant == "warm" and not tk_error:
            try:
                usage, text = run_measured(tk_cmd, dict(os.environ), True)
                tk_runs.append({**usage, **json.loads(text.strip().splitlines()[-1])})
            except (RuntimeError, ValueError, IndexError) as e:  # e.g. trees it cannot parse
                tk_error = str(e).splitlines()[0][:300]
    row = {
        "workload": name, "threads": threads, "cache": variant, "repeats": args.repeats,
        "wall_s": median_of(runs, "wall_s"), "cpu_s": median_of(runs, "cpu_s"),
        "gram_s": median_of(runs, "gram_s"), "gram_again_s": median_of(runs, "gram_again_s"),
        "programs_s": median_of(runs, "programs_s"),
        "read_s": median_of(runs, "read_s"),
        # host and program thread-seconds of the first Gram and of the calls again
        **{k: statistics.median(r["split"][k] for r in runs) for k in runs[0]["split"]},
        **{f"again_{k}": statistics.median(r["split_again"][k] for r in runs)
           for k in runs[0]["split_again"]},
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "programs": result["programs"], "delta_entries": result["delta_entries"],
        "constant_entries": result["constant_entries"], "node_pairs": result["node_pairs"],
        "trees": result["trees"], "forest_nodes": result["forest_nodes"],
        "shape": result["shape"], "gram_sum": result["gram_sum"],
        "runs": runs,
    }
    rows_n, cols_n = result["shape"]
    pairs = rows_n * (rows_n + 1) // 2 if WORKLOADS[name][2] == "square" else rows_n * cols_n
    row["tree_pairs"] = pairs
    row["us_per_pair_again"] = 1e6 * row["gram_again_s"] / pairs
    if tk_error:
        row["tk_error"] = tk_error
        print(f"{name}: SVM-Light-TK failed: {tk_error}", flush=True)
    if tk_runs:
        tk_cpu = median_of(tk_runs, "cpu_s")
        row.update(tk_cpu_s=tk_cpu, tk_wall_s=median_of(tk_runs, "wall_s"),
                   tk_peak_rss_mb=max(r["peak_rss_mb"] for r in tk_runs),
                   tk_gram_sum=tk_runs[-1]["sum"],
                   sum_rel_diff=abs(tk_runs[-1]["sum"] - row["gram_sum"])
                   / max(abs(row["gram_sum"]), 1e-300),
                   cpu_ratio=row["cpu_s"] / tk_cpu if tk_cpu > 0 else None)
    elif name in RECORDED_TK_CPU_S:
        row.update(recorded_tk_cpu_s=RECORDED_TK_CPU_S[name],
                   cpu_ratio_vs_recorded=row["cpu_s"] / RECORDED_TK_CPU_S[name])
    return row


def print_row(row: dict) -> None:
    tk = ""
    if "tk_cpu_s" in row:
        tk = (f" | SVM-Light-TK {row['tk_cpu_s']:.2f} CPU-s, {row['tk_peak_rss_mb']:.0f} MB, "
              f"ratio {row['cpu_ratio']:.2f}, sums rel diff {row['sum_rel_diff']:.1e}")
    elif "recorded_tk_cpu_s" in row:
        tk = (f" | recorded SVM-Light-TK {row['recorded_tk_cpu_s']} CPU-s, ratio "
              f"{row['cpu_ratio_vs_recorded']:.2f}")
    print(f"{row['workload']:<20} threads {row['threads']} {row['cache']:<4}: wall "
          f"{row['wall_s']:.2f} s, CPU {row['cpu_s']:.2f} s, Gram {row['gram_s']:.2f} s "
          f"(building programs {row['programs_s']:.2f} s; again in-process "
          f"{row['gram_again_s']:.2f} s, "
          f"{row['us_per_pair_again']:.2f} us/pair), "
          f"peak RSS {row['peak_rss_mb']:.0f} MB, {row['programs']} programs, "
          f"{row['delta_entries']:,} Delta entries{tk}", flush=True)
    print(f"{'':<20} reading {row['read_s']:.2f} s; Gram thread-s: host {row['host_s']:.2f} "
          f"(forest {row['forest_s']:.2f}, planning {plan_s(row):.2f}: {phases(row)}), "
          f"programs {row['program_s']:.2f}, host {100 * row['host_share']:.0f}% (CPU: "
          f"{row['host_cpu_s']:.2f} of {row['gram_cpu_s']:.2f} s, "
          f"{100 * row['host_cpu_share']:.0f}%); again: host {row['again_host_s']:.2f} "
          f"({phases(row, 'again_')}), programs {row['again_program_s']:.2f}, host "
          f"{100 * row['again_host_share']:.0f}% (CPU: {row['again_host_cpu_s']:.2f} of "
          f"{row['again_gram_cpu_s']:.2f} s, {100 * row['again_host_cpu_share']:.0f}%)",
          flush=True)


def plan_s(row: dict, prefix: str = "") -> float:
    """Planning thread-seconds: the host phases after the forest."""
    return sum(row[f"{prefix}{p}_s"] for p in PLAN_PHASES)


def phases(row: dict, prefix: str = "") -> str:
    return ", ".join(f"{p} {row[f'{prefix}{p}_s']:.2f}" for p in PLAN_PHASES)


def write_table(rows: list[dict], path: Path) -> None:
    head = ("| workload | threads | cache | wall s | CPU s | Gram s | programs s | again s "
            "| µs/pair | read s | host s (forest + planning) | program s | host % | host CPU % "
            "| again host s | again program s | again host % | again host CPU % "
            "| peak RSS MB | programs | Delta entries | SVM-Light-TK CPU s | CPU ratio |\n"
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
            "|---:|---:|---:|---:|---:|---:|---:|\n")
    lines = []
    for r in rows:
        tk = r.get("tk_cpu_s", r.get("recorded_tk_cpu_s"))
        ratio = r.get("cpu_ratio", r.get("cpu_ratio_vs_recorded"))
        mark = "" if "tk_cpu_s" in r or tk is None else " (recorded)"
        lines.append(f"| {r['workload']} | {r['threads']} | {r['cache']} | {r['wall_s']:.2f} "
                     f"| {r['cpu_s']:.2f} | {r['gram_s']:.2f} | {r['programs_s']:.2f} "
                     f"| {r['gram_again_s']:.2f} "
                     f"| {r['us_per_pair_again']:.2f} | {r['read_s']:.2f} "
                     f"| {r['host_s']:.2f} ({r['forest_s']:.2f} + {plan_s(r):.2f}) "
                     f"| {r['program_s']:.2f} | {100 * r['host_share']:.0f} "
                     f"| {100 * r['host_cpu_share']:.0f} "
                     f"| {r['again_host_s']:.2f} | {r['again_program_s']:.2f} "
                     f"| {100 * r['again_host_share']:.0f} "
                     f"| {100 * r['again_host_cpu_share']:.0f} "
                     f"| {r['peak_rss_mb']:.0f} "
                     f"| {r['programs']} | {r['delta_entries']:,} "
                     f"| {'' if tk is None else f'{tk:.3g}{mark}'} "
                     f"| {'' if ratio is None else f'{ratio:.2f}'} |")
    path.write_text(head + "\n".join(lines) + "\n")
    print(f"wrote {path}")


def plot(rows: list[dict], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    have = [r for r in rows if r.get("cpu_ratio", r.get("cpu_ratio_vs_recorded"))]
    if not have:
        return
    # One horizontal bar per run, top to bottom in the table's order; side-by-side runs dark,
    # ratios to the recorded figures (another load, another day) light.
    fig, ax = plt.subplots(figsize=(7, 0.28 * len(have) + 1.2))
    pos = list(range(len(have)))[::-1]
    local = ["tk_cpu_s" in r for r in have]
    ax.barh(pos, [r.get("cpu_ratio", r.get("cpu_ratio_vs_recorded")) for r in have],
            color=["tab:blue" if x else "lightsteelblue" for x in local])
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")  # small jobs sit two decades above the large Grams
    ax.set_yticks(pos, [f"{r['workload']}  {r['threads']}t {r['cache']}" for r in have],
                  fontsize=7)
    ax.set_xlabel("whole-process CPU seconds, jkern / SVM-Light-TK (log; <1: jkern cheaper)")
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color="tab:blue"),
                       plt.Rectangle((0, 0), 1, 1, color="lightsteelblue")],
              labels=["side by side, this run", "vs issue 19's recorded figure"],
              fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
