"""Train tree-kernel classifiers end to end on real trees: the exact kernel SVM, Nyström +
linear SVM, and the kernel-based deep architecture (Nyström layer + MLP).

Two corpora of real trees:
  stdlib  the abstract syntax trees of ~900 Python standard-library functions, labelled by
          the package they come from (asyncio, email, http, logging, unittest, xml). Needs
          nothing but Python itself. Seeded, stratified 80/20 split.
  trec    constituency parses of the UIUC/TREC questions, 6 coarse classes, official
          5,401/500 split, read from --data-dir (default ../shared/data).

The learners, all on a normalized tree kernel (PTK by default):
  KSVM         the exact kernel SVM on the Gram of the training trees (SMO, one-vs-rest):
               classifying a tree costs one kernel evaluation per support vector;
  Nystrom+DCD  a Nyström projection on `--landmarks` training trees, then linear SVMs by
               dual coordinate descent: a tree costs one evaluation per landmark;
  KDA          the same Nyström layer followed by an MLP (`jkern.train_kda`'s defaults:
               1,000 optimizer steps on every training tree, or early stopping on a 10%
               development part once that holds 200 trees): the same cost per tree.

It prints a table (test accuracy, training and prediction seconds, kernel evaluations per
test tree and the saving against KSVM), saves the Nyström model with `jkern.save`, loads it
back and classifies new inputs with it, and draws the table as a PNG (with matplotlib).

    python examples/classify_trees.py                      # stdlib corpus, PTK
    python examples/classify_trees.py --kernel sst --landmarks 100
    python examples/classify_trees.py --corpus trec --data-dir ../shared/data --n-train 2000
"""

from __future__ import annotations

import argparse
import ast
import collections
import pathlib
import sys
import tempfile
import time

import numpy as np

import jkern
from jkern.data import ast_to_tree, load_stdlib_functions, load_trec, stratified_split
from jkern.trees import parse_penn

REPO = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"

# New inputs for the reloaded model: functions and questions it has never seen.
NEW_FUNCTIONS = {
    "a coroutine": "async def fetch(reader):\n    data = await reader.read(100)\n"
                   "    await asyncio.sleep(0)\n    return data\n",
    "a log call": "def note(self, msg, *args):\n    if self.isEnabledFor(INFO):\n"
                  "        self._log(INFO, msg, args)\n",
    "a test": "def test_upper(self):\n    self.assertEqual('foo'.upper(), 'FOO')\n"
              "    self.assertTrue('FOO'.isupper())\n",
}
NEW_QUESTIONS = {
    "Who wrote Hamlet ?": "(ROOT (SBARQ (WHNP (WP Who))(SQ (VP (VBD wrote)(NP (NNP Hamlet))))"
                          "(. ?)))",
    "Where is Paris ?": "(ROOT (SBARQ (WHADVP (WRB Where))(SQ (VBZ is)(NP (NNP Paris)))(. ?)))",
    "How many moons does Mars have ?": "(ROOT (SBARQ (WHNP (WHADJP (WRB How)(JJ many))"
                                       "(NNS moons))(SQ (VBZ does)(NP (NNP Mars))(VP (VB have)))"
                                       "(. ?)))",
}


def cap(indices: list[int], n: int | None, rng: np.random.Generator) -> list[int]:
    """A seeded random subset of at most `n` indices (all of them when `n` is None)."""
    if n is None or n >= len(indices):
        return indices
    return sorted(rng.choice(indices, size=n, replace=False).tolist())


def load(args: argparse.Namespace, rng: np.random.Generator):
    """(train_trees, train_labels, test_trees, test_labels) of the chosen corpus."""
    if args.corpus == "stdlib":
        data = load_stdlib_functions()
        trees, labels = data.trees, data.labels
        tr, te = (ix.tolist() for ix in stratified_split(labels, 0.2, seed=args.seed))
        tr, te = cap(tr, args.n_train, rng), cap(te, args.n_test, rng)
        return ([trees[i] for i in tr], [labels[i] for i in tr],
                [trees[i] for i in te], [labels[i] for i in te])
    train = load_trec(args.data_dir, "train")
    test = load_trec(args.data_dir, "test")
    tr = cap(list(range(len(train.trees))), args.n_train, rng)
    te = cap(list(range(len(test.trees))), args.n_test, rng)
    return ([train.trees[i] for i in tr], [train.coarse[i] for i in tr],
            [test.trees[i] for i in te], [test.coarse[i] for i in te])


def new_inputs(corpus: str) -> dict[str, object]:
    """Names and trees of inputs no model has seen."""
    if corpus == "stdlib":
        return {name: ast_to_tree(ast.parse(src).body[0]) for name, src in NEW_FUNCTIONS.items()}
    return {name: parse_penn(text) for name, text in NEW_QUESTIONS.items()}


class Phase:
    """Prints what runs, then its seconds (progress for a run that takes minutes)."""

    def __init__(self, what: str, on: bool) -> None:
        self.what, self.on = what, on

    def __enter__(self) -> Phase:
        if self.on:
            print(f"  {self.what} ...", flush=True)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self.t0
        if self.on and exc[0] is None:
            print(f"  {self.what}: {self.seconds:.1f} s", flush=True)


def plot(rows: list[dict], path: pathlib.Path) -> str:
    """The table as two bar charts (accuracy, seconds); a note when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed (pip install -e '.[plot]'): no PNG written"
    names = [r["learner"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    a.bar(names, [r["accuracy"] for r in rows], color="tab:blue")
    a.set_ylabel("test accuracy")
    a.set_ylim(0, 1)
    b.bar(names, [r["train_s"] for r in rows], color="tab:orange", label="training")
    b.bar(names, [r["predict_s"] for r in rows], bottom=[r["train_s"] for r in rows],
          color="tab:green", label="prediction")
    b.set_ylabel("seconds")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"plot: {path}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=["stdlib", "trec"], default="stdlib",
                   help="the trees (default stdlib)")
    p.add_argument("--data-dir", type=pathlib.Path, default=DEFAULT_DATA_DIR,
                   help="shared data folder holding trec/ (for --corpus trec; default "
                        "../shared/data)")
    p.add_argument("--kernel", choices=["st", "sst", "ptk"], default="ptk",
                   help="the tree kernel, normalized (default ptk)")
    p.add_argument("--lam", type=float, default=0.4, help="decay λ (default 0.4)")
    p.add_argument("--mu", type=float, default=0.4, help="PTK vertical decay μ (default 0.4)")
    p.add_argument("--C", type=float, default=10.0, help="the SVMs' C (default 10)")
    p.add_argument("--landmarks", type=int, default=200,
                   help="Nyström landmarks, stratified by class (default 200)")
    p.add_argument("--epochs", type=int, default=None,
                   help="KDA epochs at most (default: the library's rule, see docs/kda.md)")
    p.add_argument("--n-train", type=int, default=None, help="cap on training trees")
    p.add_argument("--n-test", type=int, default=None, help="cap on test trees")
    p.add_argument("--seed", type=int, default=0, help="split, landmarks and KDA (default 0)")
    p.add_argument("--out-dir", type=pathlib.Path,
                   default=pathlib.Path(tempfile.gettempdir()) / "jkern-example",
                   help="where the model and the plot go (default: a jkern-example folder "
                        "in the temporary directory)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    on = not args.quiet

    import jax

    rng = np.random.default_rng(args.seed)
    try:
        train, y_train_list, test, y_test_list = load(args, rng)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    y_test = np.array(y_test_list)
    n_tr, n_te = collections.Counter(y_train_list), collections.Counter(y_test_list)
    nodes = sum(len(t) for t in train) + sum(len(t) for t in test)
    print(f"corpus {args.corpus}: {len(train)} train and {len(test)} test trees, "
          f"{nodes / (len(train) + len(test)):.1f} nodes on average")
    print(f"\n{'class':<12}{'train':>7}{'test':>7}")
    for c in sorted(set(n_tr) | set(n_te)):
        print(f"{c:<12}{n_tr[c]:>7}{n_te[c]:>7}")

    kernel = jkern.Normalized(jkern.kernels.kernel_by_name(args.kernel, lam=args.lam,
                                                           mu=args.mu))
    print(f"\nkernel {args.kernel} (λ={args.lam}"
          + (f", μ={args.mu}" if args.kernel == "ptk" else "") + ", normalized)")
    key = jax.random.PRNGKey(args.seed)
    rows: list[dict] = []

    def record(name: str, model, fit: Phase, evals: int) -> None:
        with Phase(f"{name}: classifying the test trees", on) as pred_phase:
            pred = np.asarray(model.predict(test))
        rows.append({"learner": name, "accuracy": float(np.mean(pred == y_test)),
                     "train_s": fit.seconds, "predict_s": pred_phase.seconds,
                     "evals": evals})

    print("\ntraining")
    with Phase("KSVM: Gram of the training trees, SMO", on) as fit:
        ksvm = jkern.train_kernel_svm(kernel, train, y_train_list, C=args.C).model
    record("KSVM", ksvm, fit, ksvm.n_support)
    with Phase(f"Nystrom+DCD: {args.landmarks} landmarks, embedding, DCD", on) as fit:
        projector = jkern.fit_nystrom(kernel, train, landmarks=args.landmarks,
                                      key=jax.random.fold_in(key, 1), labels=y_train_list)
        nystrom = jkern.train_nystrom_svm(projector, train, y_train_list, C=args.C,
                                          key=jax.random.fold_in(key, 2)).model
    record("Nystrom+DCD", nystrom, fit, projector.n_landmarks)
    with Phase("KDA: the same landmarks, MLP", on) as fit:
        kda = jkern.train_kda(projector, train, y_train_list, key=jax.random.fold_in(key, 3),
                              epochs=args.epochs).model
    record("KDA", kda, fit, projector.n_landmarks)

    base = rows[0]["evals"]
    print(f"\n{'learner':<13}{'accuracy':>9}{'train s':>9}{'predict s':>10}"
          f"{'evals/tree':>11}{'saving':>8}")
    for r in rows:
        saving = f"{1 - r['evals'] / base:.0%}" if base else "-"
        print(f"{r['learner']:<13}{r['accuracy']:>9.3f}{r['train_s']:>9.1f}"
              f"{r['predict_s']:>10.1f}{r['evals']:>11}{saving:>8}")
    print("(evals/tree: kernel evaluations to classify one tree: support vectors for KSVM, "
          "landmarks for the Nyström models; saving: against KSVM)")

    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / "nystrom_dcd.npz"
    jkern.save(path, nystrom)
    reloaded = jkern.load(path)
    same = np.array_equal(np.asarray(reloaded.predict(test)), np.asarray(nystrom.predict(test)))
    print(f"\nsaved the Nystrom+DCD model to {path}; reloaded, it gives the same predictions "
          f"on the {len(test)} test trees: {'yes' if same else 'NO'}")
    inputs = new_inputs(args.corpus)
    labels = np.asarray(reloaded.predict(list(inputs.values())))
    for name, label in zip(inputs, labels):
        print(f"  {name!r:<38} -> {label}")
    print(plot(rows, args.out_dir / "example.png"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
