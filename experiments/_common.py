"""What the experiment scripts share (they import this module and never each other).

- The command line every script has: `--data-dir`, `--out-dir` and `--smoke` (`parser`,
  `parse_args`); `--smoke` swaps in a tiny size that runs end to end in seconds and writes
  to a fresh temporary folder (never to docs/results).
- The result file every experiment writes (schema in ../shared/DESIGN.md:
  `{"experiment": name, "environment": {...}, "rows": [...], ...}` as `<out-dir>/<name>.json`)
  and its plot (`write_result`, `pyplot`, `plot_lines`, `plot_bars`).
- Data: TREC and the SRL boundary sample (optionally an evenly spread subset), cached Gram
  matrices, the stratified held-out split (`jkern.data.stratified_split`).
- Kernels by name (`tree_kernel`, through `jkern.kernels.kernel_by_name`), the QC model
  selection (`run_ksvm`, `run_dcd`), the KDA grid, the tree shapes, and the one-vs-rest /
  cutting-plane helpers of the imbalance scripts.
Everything takes explicit arguments; nothing reads a script's argparse namespace.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _pa_data import PA_DATASETS as PA_DATASETS  # PA-I's data sets (light, for its workers)
from _pa_data import pa_dataset as pa_dataset

import jkern
from jkern._cache import enable_compilation_cache
from jkern.data import TrecData, glove_6b_50d, load_trec, stratified_split, tree_words
from jkern.kernels import kernel_by_name
from jkern.metrics import accuracy, binary_prf
from jkern.svm import cpa, dcd_ovr, ksvm_ovr, svm_light_C
from jkern.trees import cgrct, grct, head_dependencies, lct, loct, pos_leaves, read_examples

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO.parent / "shared" / "data"
RESULTS_DIR = REPO / "docs" / "results"

# --------------------------------------------------------------------------- command line


def parser(doc: str | None, *, data_help: str | None = None) -> argparse.ArgumentParser:
    """An argument parser (described by the first line of `doc`) with the flags every
    experiment takes: --data-dir, --out-dir and --smoke."""
    ap = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    ap.add_argument("--data-dir", default=str(DATA_DIR),
                    help=data_help or f"the shared data folder (default {DATA_DIR})")
    ap.add_argument("--out-dir", default=None,
                    help=f"where <script>.json (and its PNG) go (default {RESULTS_DIR}; with "
                         "--smoke a fresh temporary folder)")
    ap.add_argument("--smoke", action="store_true",
                    help="a tiny size that runs end to end in seconds (a check of the script, "
                         "not a result); flags given explicitly still apply")
    return ap


def parse_args(ap: argparse.ArgumentParser, argv: Sequence[str] | None, name: str,
               smoke: dict[str, Any]) -> argparse.Namespace:
    """Parse `argv`; under --smoke the `smoke` values replace the defaults (explicit flags
    still win). Resolves --out-dir: docs/results by default, a fresh temporary folder under
    --smoke (which refuses docs/results: smoke figures are no results), and, under --smoke
    with a --cache-dir flag left unset, a cache folder inside it. A smoke run also keeps its
    compiled XLA programs on disk (`$JKERN_CACHE_DIR`, default the user's own
    `~/.cache/jkern/xla`; off, with a warning, where that folder is not private)."""
    args = ap.parse_args(argv)
    if args.smoke:
        ap.set_defaults(**smoke)
        args = ap.parse_args(argv)
    if args.out_dir is None:
        args.out_dir = (tempfile.mkdtemp(prefix=f"jkern-smoke-{name}-") if args.smoke
                        else str(RESULTS_DIR))
    if args.smoke and Path(args.out_dir).resolve() == RESULTS_DIR.resolve():
        ap.error(f"--smoke writes smoke-size figures: give an --out-dir other than {RESULTS_DIR}")
    if args.smoke and getattr(args, "cache_dir", "") is None:
        args.cache_dir = str(Path(args.out_dir) / "cache")
    if args.smoke:
        # compiled programs dominate a smoke run: keep them on disk for the next one
        xla = enable_compilation_cache()  # $JKERN_CACHE_DIR or the user's own cache folder
        print(f"smoke run ({name}): outputs in {args.out_dir} (compiled programs cached in "
              f"{xla})", flush=True)
    return args


# --------------------------------------------------------------------------- result files


def environment(argv: Sequence[str] | None, **extra: Any) -> dict[str, Any]:
    """Versions, devices, date and the command line of this run."""
    return {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "numpy": np.__version__,
        **extra,
        "devices": [str(d) for d in jax.devices()],
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "commit": git_commit(),
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None
                                                        else sys.argv[1:])]),
    }


def git_commit() -> str | None:
    """The jkern checkout's commit (with `+dirty` when its tracked files differ), or None
    outside a git checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=30, check=True)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def carry_over(path: str | Path, rows: list[dict], key) -> tuple[list[dict], dict, dict]:
    """The rows of an earlier result file (`path`) that this run did not produce (by `key(row)`),
    the `merged_from` record of that file (its command, date, settings and own merges), and
    the earlier file itself."""
    earlier = json.loads(Path(path).read_text())
    produced = {key(r) for r in rows}
    kept = [r for r in earlier["rows"] if key(r) not in produced]
    merged = {"command": earlier["environment"]["command"],
              "date": earlier["environment"]["date"],
              "settings": earlier.get("settings"),
              "merged_from": earlier.get("merged_from")}
    return kept, merged, earlier


def write_result(out_dir: str | Path, name: str, rows: list[dict], argv: Sequence[str] | None,
                 *, environment_extra: dict[str, Any] | None = None,
                 **sections: Any) -> Path:
    """Writes `<out_dir>/<name>.json` and returns its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = {"experiment": name, "environment": environment(argv, **(environment_extra or {})),
              **sections, "rows": rows}
    path = out / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def print_accuracy_table(rows: list[dict]) -> None:
    """The model / kernel / landmarks / accuracy ± std / saving table of the QC experiments."""
    print("\nmodel  kernel  landmarks  accuracy        saving")
    for r in rows:
        lm = "-" if r["landmarks"] is None else r["landmarks"]
        print(f"{r['model']:5s}  {r['kernel']:6s}  {lm!s:>9}  {100 * r['accuracy']:5.1f} ± "
              f"{100 * r['accuracy_std']:3.1f}    {100 * r['saving']:5.1f}%")


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None (with a note) when it is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install -e '.[plot]'): no PNG written")
        return None
    return plt


def plot_lines(path: Path, series: dict[str, tuple[Sequence, Sequence]], *, xlabel: str,
               ylabel: str, title: str | None = None, xscale: str | None = None,
               hlines: dict[str, float] | None = None, markers_only: bool = False) -> None:
    """One line (or, `markers_only`, one set of points) per series `label: (x, y)`, and a
    dotted horizontal line per `hlines` entry; written to `path` (nothing without
    matplotlib)."""
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, (x, y) in series.items():
        ax.plot(list(x), list(y), "o" if markers_only else "o-", label=label)
    for label, value in (hlines or {}).items():
        ax.axhline(value, linestyle=":", color="gray")
        ax.annotate(label, (0.01, value), xycoords=("axes fraction", "data"), fontsize=7,
                    va="bottom")
    if xscale:
        ax.set_xscale(xscale)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_bars(path: Path, groups: Sequence[str], series: dict[str, Sequence[float]], *,
              ylabel: str, title: str | None = None, yscale: str | None = None) -> None:
    """Grouped bars: one group per `groups` entry, one bar per series `label: values`
    (NaN: no bar); written to `path` (nothing without matplotlib)."""
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(1.8 + 1.1 * len(groups), 3.8))
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(series))
    for k, (label, values) in enumerate(series.items()):
        ax.bar(x + (k - (len(series) - 1) / 2) * width, list(values), width, label=label)
    ax.set_xticks(x, list(groups), fontsize=7)
    ax.set_ylabel(ylabel)
    if yscale:
        ax.set_yscale(yscale)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- data


def spread(n: int, limit: int | None) -> np.ndarray:
    """`limit` indices evenly spread over range(n) (all n when `limit` is None or >= n): the
    subset a smoke run keeps, so it sees every part of a file, not just its head."""
    if limit is None or limit >= n:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, limit)).astype(np.int64))


def subset_folder(cache: Path | None, *sizes: int | None) -> Path | None:
    """The Gram cache folder of a run on a subset: `cache/subset_<sizes>` (the full data's
    cache files are never read or overwritten by a subset's)."""
    if cache is None or all(s is None for s in sizes):
        return cache
    return cache / ("subset_" + "x".join("all" if s is None else str(s) for s in sizes))


def trec(data_dir: str | Path, max_train: int | None = None,
         max_test: int | None = None) -> tuple[TrecData, TrecData]:
    """TREC train and test (`jkern.data.load_trec`), each cut to an evenly spread
    `max_train` / `max_test` questions when given."""
    out = []
    for split, limit in (("train", max_train), ("test", max_test)):
        data = load_trec(Path(data_dir), split)
        idx = spread(len(data.trees), limit).tolist()
        out.append(data if limit is None else TrecData(*([part[i] for i in idx]
                                                         for part in data)))
    return out[0], out[1]


# TREC's .label files are Latin-1 (train_5500.label holds one byte past ASCII, 0xF0 in
# "sister\xf0city"), not UTF-8: every reader names the encoding, never guesses it.
TREC_LABEL_ENCODING = "latin-1"


def read_trec_questions(path: str | Path, *, encoding: str = TREC_LABEL_ENCODING
                        ) -> tuple[list[str], list[str]]:
    """(questions, coarse labels) of a raw TREC file (`COARSE:fine question` lines, e.g.
    `trec/train_5500.label`), decoded strictly in `encoding` (a bad byte is an error at its
    file:line:column)."""
    from jkern.errors import InputError
    from jkern.trees import iter_lines

    texts, labels = [], []
    for n, line in iter_lines(path, encoding=encoding):
        if not line.strip():
            continue
        label, sep, text = line.partition(" ")
        coarse, colon, _ = label.partition(":")
        if not (sep and colon and text.strip()):
            raise InputError(f"{path}:{n}: expected 'COARSE:fine question', got {line[:60]!r}")
        texts.append(text.strip())
        labels.append(coarse)
    return texts, labels


def boundary_examples(data_dir: str | Path, max_examples: int | None = None):
    """The SRL boundary sample (`srl/boundary_5000.dat`): its trees and ±1 labels, cut to an
    evenly spread `max_examples` when given."""
    examples = read_examples(Path(data_dir) / "srl" / "boundary_5000.dat")
    examples = [examples[i] for i in spread(len(examples), max_examples).tolist()]
    return [e.trees[0] for e in examples], np.array([1 if e.label > 0 else -1
                                                     for e in examples])


def cached_grams(kernel, train, test, cache: Path | None, tag: str):
    """(train Gram, test-vs-train block, seconds) in float64; read from / written to
    `cache/qc_<tag>_{train,test}.npy` when a cache folder is given (seconds None when read)."""
    if cache is not None:
        paths = cache / f"qc_{tag}_train.npy", cache / f"qc_{tag}_test.npy"
        if all(p.is_file() for p in paths):
            g_train, g_test = np.load(paths[0]), np.load(paths[1])
            if g_train.shape != (len(train), len(train)) or g_test.shape != (len(test),
                                                                               len(train)):
                raise ValueError(f"{paths[0]} / {paths[1]} hold {g_train.shape} / "
                                 f"{g_test.shape} Gram matrices for {len(train)} training and "
                                 f"{len(test)} test trees: another data set's cache")
            return g_train, g_test, None
    t0 = time.perf_counter()
    g_train = np.asarray(jkern.gram(kernel, train, dtype="float64", block_size=256))
    g_test = np.asarray(jkern.gram(kernel, test, train, dtype="float64", block_size=256))
    seconds = time.perf_counter() - t0
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(paths[0], g_train)
        np.save(paths[1], g_test)
    return g_train, g_test, seconds


def padded_projection(kernel, trees, g_train, m: int, key):
    """The landmark sampling of `key` (uniform, `m` of `trees`) and its Nyström H built from the
    cached training Gram, padded with zero columns to m: the rank kept varies between
    samplings, one shape keeps one compiled program per landmark count. Returns (landmark
    indices, H `[m, m]` float64)."""

    idx = np.asarray(jkern.select_landmarks(len(trees), m, key=key))
    proj = jkern.projector_from_gram(kernel, [trees[i] for i in idx], g_train[np.ix_(idx, idx)])
    h = np.asarray(proj.projection)
    return idx, np.pad(h, ((0, 0), (0, m - h.shape[1])))


# --------------------------------------------------------------------------- kernels by name


@functools.lru_cache(maxsize=1)
def glove():
    """GloVe 6B 50-d (`jkern.data.glove_6b_50d`), read once per process."""
    return glove_6b_50d()


def tree_kernel(name: str, *, trees: Sequence | None = None, gamma: float | None = None,
           threshold: float | None = None, normalize: bool = True):
    """The tree kernel `name` of the experiments (λ = μ = 0.4, normalized unless told), from
    the library's registry. sptk's words are compared by their GloVe 6B 50-d vectors, looked
    up for the words of `trees`, by the Gaussian similarity of `gamma` or the cosine
    thresholded at `threshold`."""
    if name != "sptk":
        return kernel_by_name(name, lam=0.4, mu=0.4, normalize=normalize)
    if trees is None:
        raise ValueError("sptk needs the trees whose words get vectors (trees=)")
    vocab, vectors = glove().for_words(tree_words(trees))
    return kernel_by_name("sptk", lam=0.4, mu=0.4, vocab=vocab, vectors=vectors,
                          gamma=gamma, threshold=threshold, normalize=normalize)


# --------------------------------------------------------------------------- QC

# normalized SST (λ = 0.4) and PTK (λ = μ = 0.4)
KERNELS: dict[str, Callable[[], Any]] = {name: functools.partial(tree_kernel, name)
                                         for name in ("sst", "ptk")}


KSVM_C = (1.0, 3.0, 10.0, 30.0)


# Normalized tree kernels give small embedding values: the linear models want large C.
DCD_C = (10.0, 30.0, 100.0)


def qc_data(data_dir: str | Path, cache_dir: str | None, *, max_train: int | None = None,
            max_test: int | None = None):
    """TREC train/test (an evenly spread subset when `max_train` / `max_test` are given),
    their coarse labels, the stratified 20% held-out split of the training indices (seed 0:
    the split every QC experiment picks its hyperparameters on) and the Gram cache folder
    (None without a cache dir; a subset's own folder inside it for a subset)."""
    train, test = trec(data_dir, max_train, max_test)
    y_train, y_test = np.asarray(train.coarse), np.asarray(test.coarse)
    fit, held = stratified_split(y_train, 0.2, seed=0)
    cache = subset_folder(Path(cache_dir) if cache_dir else None, max_train, max_test)
    return train, test, y_train, y_test, fit, held, cache


def run_ksvm(g_train, g_test, y_train, y_test, fit, held):
    """One-vs-rest KSVM: C from KSVM_C by held-out accuracy (ties: the smaller C), then
    retrained on all of the training set. Returns (model, C, held-out accuracy per C)."""
    scores = {}
    for c in KSVM_C:
        model = ksvm_ovr(g_train[np.ix_(fit, fit)], y_train[fit], C=c).model
        scores[c] = accuracy(y_train[held], model.predict(g_train[np.ix_(held, fit)]))
    best = max(KSVM_C, key=lambda c: (scores[c], -c))
    model = ksvm_ovr(g_train, y_train, C=best).model
    return model, best, scores


def run_dcd(x_train, x_test, y_train, y_test, fit, held, key):
    """One-vs-rest DCD on embeddings: C from DCD_C by held-out accuracy (the grid as one
    vmapped program), retrained on all of the training set. Returns (test accuracy, C)."""
    cs = jnp.asarray(DCD_C)
    # the C grid as one program: vmap over C of the one-vs-rest fit
    models = jax.vmap(lambda c: dcd_ovr(x_train[fit], y_train[fit], C=c, key=key).model)(cs)
    held_acc = []
    for i in range(len(DCD_C)):
        model_i = jax.tree_util.tree_map(lambda a, i=i: a[i], models)
        held_acc.append(accuracy(y_train[held], model_i.predict(x_train[held])))
    best = DCD_C[int(np.argmax(held_acc))]
    model = dcd_ovr(x_train, y_train, C=best, key=key).model
    return accuracy(y_test, model.predict(x_test)), best


# --------------------------------------------------------------------------- KDA grid

DROPOUTS = (0.0, 0.2, 0.4, 0.6)


L2S = (0.0, 1e-4)


# --------------------------------------------------------------------------- tree shapes

SHAPES = {"grct": grct, "cgrct": cgrct, "lct": lct, "loct": loct}


def shaped(trees, shape: str, kernel: str, semantic: bool = True):
    """The trees a kernel runs on: constituency parses ("ct"; words marked by their
    preterminal for sptk) or the GRCT / CGRCT / LCT / LOCT of their head-rule dependency
    parses."""
    if shape == "ct":
        return [pos_leaves(t, lowercase=True) for t in trees] if kernel == "sptk" else trees
    return [SHAPES[shape](head_dependencies(t, semantic=semantic)) for t in trees]


# --------------------------------------------------------------------------- imbalance

J_GRID = (1.0, 2.0, 3.0, 4.0, 5.0, 10.0)

KERNEL = tree_kernel("sst")  # normalized SST, λ = 0.4


def f1_of(y, pred) -> float:
    return binary_prf(y, pred, positive=1)[2]


def fit_cpa(trees, y, gram, c_light, j, *, seed: int, sample: int, epsilon: float,
            confirm: int, max_iter: int, qp_tol: float):
    """uSVM (j None) or uSVM+j; the margins are read off the cached Gram matrix (`gram=`),
    which trains the same model as computing them (tests/test_cpa.py) in far less time."""
    # SVM-light's C (and -j) as the 1-slack C: c_light * sum of the importance weights, the
    # problem uSVM+j's rejection-sampled planes estimate (n * c_light when j is None)
    cw = None if j is None else {1: j, -1: 1.0}
    return cpa(trees, y, kernel=KERNEL, C=svm_light_C(c_light, y, class_weight=cw),
               sample=sample, epsilon=epsilon, confirm=confirm,
               class_weight=cw, max_iter=max_iter, key=jax.random.PRNGKey(seed),
               gram=gram, qp_tol=qp_tol)


def seeds_of(first: int, count: int) -> list[int]:
    """The sampling seeds first, first + 1, ..., first + count - 1."""
    return [first + k for k in range(count)]


def held_out_f1(trees, y, g_fit, g_held, y_held, c_light, j, *, seeds: Sequence[int],
                **cpa_options: Any) -> float:
    """Held-out F1 of a cutting-plane model, averaged over the sampling seeds (`cpa_options`:
    `fit_cpa`'s sample, epsilon, confirm, max_iter, qp_tol)."""
    return float(np.mean([f1_of(y_held, predict_cpa(fit_cpa(trees, y, g_fit, c_light, j,
                                                            seed=seed, **cpa_options), g_held))
                          for seed in seeds]))


def predict_cpa(res, k_rows):
    """Labels from `k_rows[i, k] = K(x_i, train_k)` over the fit's training examples."""
    support = np.asarray(res.model.support, np.int64)
    f = k_rows[:, support] @ np.asarray(res.model.coef)
    return np.where(f >= 0, 1, -1)


@functools.lru_cache(maxsize=1)
def trec_data(data_dir: str, cache_dir: str | None, max_train: int | None = None,
              max_test: int | None = None):
    """TREC train/test (or their evenly spread subsets) and their SST Grams, loaded (or
    computed) once per process for all six classes."""
    train, test = trec(data_dir, max_train, max_test)
    cache = subset_folder(Path(cache_dir) if cache_dir else None, max_train, max_test)
    g_tr, g_te, _ = cached_grams(KERNEL, train.trees, test.trees, cache, "sst")
    return train, test, g_tr, g_te


def one_vs_rest_labels(train, test, name: str) -> tuple[np.ndarray, np.ndarray]:
    """+1 / -1 labels of TREC class `name` against the rest, for the training and test sets."""
    return (np.where(np.asarray(train.coarse) == name, 1, -1),
            np.where(np.asarray(test.coarse) == name, 1, -1))


# --------------------------------------------------------------------------- processes


def run_process(cmd: list[str], timeout: float, *, env: dict | None = None
                ) -> tuple[dict, str, str, int]:
    """`cmd` in a fresh process: (figures, stdout, stderr, exit status); the figures are
    wall and CPU seconds (user + sys, every thread) from wait4, `finished` (False when it
    was stopped at `timeout`) and the peak RSS, `peak_mb`: the largest VmHWM of the process
    polled every 20 ms from /proc (wait4's ru_maxrss keeps the high-water mark of the
    forked parent across exec, so it would report at least this Python process's size),
    or wait4's figure where /proc is missing."""
    t0 = time.perf_counter()
    finished = True
    hwm = None
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        deadline = t0 + timeout
        status_file = Path(f"/proc/{proc.pid}/status")
        while True:
            try:
                for line in status_file.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        kb = int(line.split()[1])
                        hwm = kb if hwm is None else max(hwm, kb)
            except (OSError, ValueError, IndexError):
                pass
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                finished = False
                break
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    peak = (hwm if hwm is not None and Path("/proc/self/status").exists()
            else usage.ru_maxrss) / 1024
    figures = {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": peak,
               "finished": finished}
    return figures, text, errors, status


def run_measured(cmd: list[str], timeout: float, *, env: dict | None = None
                 ) -> tuple[dict, dict | None]:
    """`run_process`, and the JSON of the last `RESULT {...}` line of its stdout (None when
    it was stopped at `timeout` or failed; the failure's stderr tail is printed)."""
    figures, text, errors, status = run_process(cmd, timeout, env=env)
    lines = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
    if status != 0 or not lines:
        if figures["finished"]:
            print(f"  failed (status {status}): {errors[-2000:]}", flush=True)
        return figures, None
    return figures, json.loads(lines[-1][len("RESULT "):])


# the synthetic distant-supervision instance: features, features per mention, relations
DS_FEATURES, DS_PER_ROW, DS_RELATIONS = 1000, 20, 10


def ds_instance(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The synthetic distant-supervision instance of N mentions (`bench_ds.py`'s docstring;
    `device_bench.py` too) as plain arrays."""
    rng = np.random.default_rng(seed)
    p = max(1, n // 3)
    mention_pair = np.concatenate([np.arange(p), rng.integers(0, p, n - p)])
    relations = np.zeros((p, DS_RELATIONS), bool)
    positive = rng.random(p) < 0.3
    first = rng.integers(0, DS_RELATIONS, p)
    relations[positive, first[positive]] = True
    second = positive & (rng.random(p) < 0.1)
    relations[second, rng.integers(0, DS_RELATIONS, p)[second]] = True
    signal = rng.choice(DS_FEATURES, (DS_RELATIONS, 15), replace=False)
    cols = rng.integers(0, DS_FEATURES, (n, DS_PER_ROW))
    held = relations[mention_pair]
    for i in np.flatnonzero(held.any(axis=1)):
        r = rng.choice(np.flatnonzero(held[i]))
        cols[i, : DS_PER_ROW // 3] = rng.choice(signal[r], DS_PER_ROW // 3)
    return {"mention_pair": mention_pair, "relations": relations, "cols": cols}
