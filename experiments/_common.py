"""What the experiment scripts share (they import this module and never each other): the
result file every experiment writes (schema in ../shared/DESIGN.md:
`{"experiment": name, "environment": {...}, "rows": [...], ...}` as `<out-dir>/<name>.json`),
cached Gram matrices, the question-classification data, split and model selection, the
tree shapes, and the imbalanced-data helpers."""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jkern
from jkern.data import load_trec, stratified_split
from jkern.kernels import kernel_by_name
from jkern.metrics import accuracy, binary_prf
from jkern.svm import cpa, dcd_ovr, ksvm_ovr, svm_light_C
from jkern.trees import grct, head_dependencies, lct, loct, pos_leaves


def environment(argv: list[str] | None, **extra: Any) -> dict[str, Any]:
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
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None
                                                        else sys.argv[1:])]),
    }


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


def write_result(out_dir: str | Path, name: str, rows: list[dict], argv: list[str] | None,
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


def cached_grams(kernel, train, test, cache: Path | None, tag: str):
    """(train Gram, test-vs-train block, seconds) in float64; read from / written to
    `cache/qc_<tag>_{train,test}.npy` when a cache folder is given (seconds None when read)."""
    import time


    if cache is not None:
        paths = cache / f"qc_{tag}_train.npy", cache / f"qc_{tag}_test.npy"
        if all(p.is_file() for p in paths):
            return np.load(paths[0]), np.load(paths[1]), None
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

    idx = np.asarray(jkern.select_landmarks(key, len(trees), m))
    proj = jkern.projector_from_gram(kernel, [trees[i] for i in idx], g_train[np.ix_(idx, idx)])
    h = np.asarray(proj.projection)
    return idx, np.pad(h, ((0, 0), (0, m - h.shape[1])))


# --------------------------------------------------------------------------- from qc

KERNELS = {name: (lambda name=name: kernel_by_name(name, normalize=True))
           for name in ("sst", "ptk")}  # normalized, lam = mu = 0.4


KSVM_C = (1.0, 3.0, 10.0, 30.0)


# Normalized tree kernels give small embedding values: the linear models want large C.
DCD_C = (10.0, 30.0, 100.0)


def qc_data(args):
    """TREC train/test, their coarse labels, the stratified 20% held-out split of the training
    indices (seed 0: the split every QC experiment picks its hyperparameters on) and the Gram
    cache folder (None without --cache-dir)."""
    train, test = load_trec(args.data_dir, "train"), load_trec(args.data_dir, "test")
    y_train, y_test = np.asarray(train.coarse), np.asarray(test.coarse)
    fit, held = stratified_split(y_train, 0.2, seed=0)
    cache = Path(args.cache_dir) if args.cache_dir else None
    return train, test, y_train, y_test, fit, held, cache


def run_ksvm(g_train, g_test, y_train, y_test, fit, held):
    scores = {}
    for c in KSVM_C:
        model = ksvm_ovr(g_train[np.ix_(fit, fit)], y_train[fit], C=c).model
        scores[c] = accuracy(y_train[held], model.predict(g_train[np.ix_(held, fit)]))
    best = max(KSVM_C, key=lambda c: (scores[c], -c))
    model = ksvm_ovr(g_train, y_train, C=best).model
    return model, best, scores


def run_dcd(x_train, x_test, y_train, y_test, fit, held, key):
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


# --------------------------------------------------------------------------- from qc_kda

DROPOUTS = (0.0, 0.2, 0.4, 0.6)


L2S = (0.0, 1e-4)


# --------------------------------------------------------------------------- from qc_shapes

SHAPES = {"grct": grct, "lct": lct, "loct": loct}


def shaped(trees, shape: str, kernel: str, semantic: bool = True):
    if shape == "ct":
        return [pos_leaves(t, lowercase=True) for t in trees] if kernel == "sptk" else trees
    return [SHAPES[shape](head_dependencies(t, semantic=semantic)) for t in trees]


# --------------------------------------------------------------------------- from imbalance

J_GRID = (1.0, 2.0, 3.0, 4.0, 5.0, 10.0)


def f1_of(y, pred) -> float:
    return binary_prf(y, pred, positive=1)[2]


def fit_cpa(trees, y, gram, c_light, j, args, seed):
    """uSVM (j None) or uSVM+j; the margins are read off the cached Gram matrix (`gram=`),
    which trains the same model as computing them (tests/test_cpa.py) in far less time."""
    # SVM-light's C (and -j) as the 1-slack C: c_light * sum of the importance weights, the
    # problem uSVM+j's rejection-sampled planes estimate (n * c_light when j is None)
    cw = None if j is None else {1: j, -1: 1.0}
    return cpa(trees, y, kernel=KERNEL, C=svm_light_C(c_light, y, class_weight=cw),
               sample=args.sample, epsilon=args.epsilon, confirm=args.confirm,
               class_weight=cw, max_iter=args.max_iter, key=jax.random.PRNGKey(seed),
               gram=gram, qp_tol=args.qp_tol)


def seeds_of(args) -> list[int]:
    return [args.seed + k for k in range(args.seeds)]


def held_out_f1(trees, y, g_fit, g_held, y_held, c_light, j, args) -> float:
    """Held-out F1 of a cutting-plane model, averaged over the sampling seeds."""
    return float(np.mean([f1_of(y_held, predict_cpa(fit_cpa(trees, y, g_fit, c_light, j, args,
                                                            seed), g_held))
                          for seed in seeds_of(args)]))


def predict_cpa(res, k_rows):
    """Labels from `k_rows[i, k] = K(x_i, train_k)` over the fit's training examples."""
    support = np.asarray(res.model.support, np.int64)
    f = k_rows[:, support] @ np.asarray(res.model.coef)
    return np.where(f >= 0, 1, -1)


KERNEL = kernel_by_name("sst", normalize=True)


@functools.lru_cache(maxsize=1)
def trec_data(data_dir: str, cache_dir: str | None):
    """TREC train/test and their SST Grams, loaded (or computed) once per process for all
    six classes."""
    train, test = load_trec(Path(data_dir), "train"), load_trec(Path(data_dir), "test")
    cache = Path(cache_dir) if cache_dir else None
    g_tr, g_te, _ = cached_grams(KERNEL, train.trees, test.trees, cache, "sst")
    return train, test, g_tr, g_te


def one_vs_rest(train, test, name: str) -> tuple[np.ndarray, np.ndarray]:
    """+1 / -1 labels of TREC class `name` against the rest, for the training and test sets."""
    return (np.where(np.asarray(train.coarse) == name, 1, -1),
            np.where(np.asarray(test.coarse) == name, 1, -1))
