"""`jkern nystrom fit|embed`, `jkern train`, `jkern predict`: projectors and models from the
command line (see docs/cli.md). Errors follow `jkern gram`'s rules: one line, exit 2 for
usage/input problems, 1 for computation/output problems."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from .cli import (
    EXIT_COMPUTE,
    EXIT_OK,
    EXIT_USAGE,
    CLIError,
    _os_message,
    _positive_float,
    _positive_int,
    add_kernel_arguments,
    check_kernel_arguments,
    input_errors,
    kernel_from_arguments,
    read_trees_or_exit,
    setup_jax,
    write_matrix,
)

_MODEL_FORMAT = "jkern.model/1"


# --------------------------------------------------------------------------- inputs


def read_labels(path: str, column: str | None) -> list[str]:
    """Labels of a tree file: SVM-Light-TK lines' labels, or a TSV column (`column`)."""
    from jkern.trees._io import read_examples_any
    from jkern.trees._penn import read_lines

    with input_errors():
        lines = read_lines(path)
        header = lines[0].rstrip("\n").split("\t") if lines else []
        if "tree" in header:
            name = column or ("label" if "label" in header else None)
            if name is None or name not in header:
                raise CLIError(f"{path}: name the label column with --label-column "
                               f"(columns: {', '.join(header)})")
            at = header.index(name)
            return [line.rstrip("\n").split("\t")[at] for line in lines[1:] if line.strip()]
        examples = read_examples_any(path)
    if not any("|BT|" in line or "|ET|" in line for line in lines):
        raise CLIError(f"{path}: no labels (use SVM-Light-TK lines or a TSV with a label "
                       "column)")
    return [format(e.label, "g") for e in examples]


def _out_npz(out: str) -> Path:
    path = Path(out)
    if path.suffix.lower() != ".npz":
        raise CLIError(f"--out {out}: use a .npz file name")
    if not path.parent.is_dir():
        raise CLIError(f"--out {out}: directory {str(path.parent)!r} does not exist")
    return path


def _save_npz(path: Path, arrays: dict) -> None:
    import os
    import tempfile

    import numpy as np

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load_npz(path: str):
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except OSError as err:
        raise CLIError(_os_message(err), EXIT_USAGE) from err
    except ValueError as err:
        raise CLIError(f"{path}: not a .npz file ({err})", EXIT_USAGE) from err


def _gram_options(args) -> dict[str, Any]:
    return {"dtype": args.dtype, "threads": args.threads,
            "progress": not args.quiet and sys.stderr.isatty()}


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64",
                   help="kernel computation precision (default float64)")
    p.add_argument("--threads", type=_positive_int, default=2, metavar="N",
                   help="host threads computing Gram blocks (default 2)")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary line on stderr")


def _say(args, text: str) -> None:
    if not args.quiet:
        print(f"jkern: {text}", file=sys.stderr)


# --------------------------------------------------------------------------- nystrom


def configure_nystrom(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    sub.required = True
    fit = sub.add_parser("fit", help="fit a projector (landmarks + H) from trees",
                         description="fit a Nyström projector from trees")
    fit.add_argument("trees", metavar="TREES", help="training trees (landmarks come from them)")
    add_kernel_arguments(fit)
    fit.add_argument("--landmarks", "-l", type=_positive_int, required=True, metavar="M")
    fit.add_argument("--ensemble", type=_positive_int, default=1, metavar="E",
                     help="E independent projections, concatenated (default 1)")
    fit.add_argument("--stratify", action="store_true",
                     help="sample landmarks stratified by the file's labels")
    fit.add_argument("--label-column", metavar="NAME", help="TSV input: the label column")
    fit.add_argument("--seed", type=int, default=0, help="landmark sampling seed (default 0)")
    fit.add_argument("--rcond", type=_positive_float, default=1e-5,
                     help="drop eigen-components with s_i/s_0 below it (default 1e-5)")
    fit.add_argument("--out", "-o", required=True, metavar="FILE.npz")
    _common(fit)
    fit.set_defaults(_action=run_nystrom_fit)
    embed = sub.add_parser("embed", help="embed trees with a saved projector",
                           description="embed trees with a saved Nyström projector")
    embed.add_argument("projector", metavar="PROJECTOR.npz")
    embed.add_argument("trees", metavar="TREES")
    embed.add_argument("--out", "-o", required=True, metavar="FILE(.npy|.tsv)")
    _common(embed)
    embed.set_defaults(_action=run_nystrom_embed)


def run_nystrom(args) -> int:
    return args._action(args)


def run_nystrom_fit(args) -> int:
    t0 = time.perf_counter()
    check_kernel_arguments(args)
    out = _out_npz(args.out)
    setup_jax(args.dtype)
    import jax

    import jkern
    from jkern._nystrom import projector_arrays

    trees = read_trees_or_exit(args.trees)
    labels = read_labels(args.trees, args.label_column) if args.stratify else None
    kernel = kernel_from_arguments(args)
    if args.landmarks > len(trees):
        raise CLIError(f"--landmarks {args.landmarks}: the file has {len(trees)} trees")
    key = jax.random.PRNGKey(args.seed)
    options = dict(landmarks=args.landmarks, key=key, labels=labels, rcond=args.rcond,
                   **_gram_options(args))
    try:
        if args.ensemble > 1:
            proj = jkern.fit_nystrom_ensemble(kernel, trees, projections=args.ensemble,
                                              **options)
        else:
            proj = jkern.fit_nystrom(kernel, trees, **options)
    except (FloatingPointError, ValueError) as err:
        raise CLIError(str(err), EXIT_COMPUTE) from err
    _save_npz(out, projector_arrays(proj))
    rank = sum(m.rank for m in getattr(proj, "members", (proj,)))
    _say(args, f"nystrom fit: {proj.n_landmarks} landmarks, rank {rank} -> {args.out} in "
               f"{time.perf_counter() - t0:.2f} s")
    return EXIT_OK


def _projector(path: str):
    from jkern._nystrom import projector_from_arrays

    data = _load_npz(path)
    try:
        return projector_from_arrays(data, source=path)
    except ValueError as err:
        raise CLIError(str(err), EXIT_USAGE) from err


def run_nystrom_embed(args) -> int:
    t0 = time.perf_counter()
    from jkern.cli import _check_output_path

    out = _check_output_path(args.out)
    setup_jax(args.dtype)
    import numpy as np

    proj = _projector(args.projector)
    trees = read_trees_or_exit(args.trees)
    try:
        x = np.asarray(proj.embed(trees, **_gram_options(args)))
    except (FloatingPointError, ValueError) as err:
        raise CLIError(str(err), EXIT_COMPUTE) from err
    write_matrix(out, x)
    _say(args, f"nystrom embed: {x.shape[0]}x{x.shape[1]} -> {args.out} in "
               f"{time.perf_counter() - t0:.2f} s")
    return EXIT_OK


# --------------------------------------------------------------------------- train / predict


def configure_train(p: argparse.ArgumentParser) -> None:
    p.add_argument("trees", metavar="TREES", help="labelled training trees (SVM-Light-TK "
                   "lines, or a TSV with a tree column and a label column)")
    p.add_argument("--algo", choices=("dcd", "ksvm", "kda", "cpa"), default="dcd",
                   help="dcd: Nyström embedding + one-vs-rest linear SVMs by dual coordinate "
                        "descent (needs --projector or --landmarks); ksvm: one-vs-rest C-SVMs "
                        "on the full Gram matrix (SMO); kda: Nyström layer + MLP (the "
                        "kernel-based deep architecture; needs --projector or --landmarks); "
                        "cpa: cutting-plane SVMs with sampled cuts on the tree forest "
                        "(uSVM / SDAG+, uSVM+j with --j; a tree kernel)")
    p.add_argument("--projector", metavar="FILE.npz", help="dcd/kda: a projector from "
                   "`jkern nystrom fit` (else one is fitted with the kernel flags)")
    p.add_argument("--landmarks", "-l", type=_positive_int, metavar="M")
    p.add_argument("--seed", type=int, default=0)
    add_kernel_arguments(p, required=False)
    p.add_argument("--C", type=_positive_float, default=1.0, dest="C", help="SVM C (default 1)")
    p.add_argument("--label-column", metavar="NAME", help="TSV input: the label column")
    kda = p.add_argument_group("kda options")
    kda.add_argument("--hidden", default=None, metavar="W,W",
                     help="hidden-layer widths (default: two layers as wide as the landmarks)")
    kda.add_argument("--dropout", type=float, default=0.2, help="dropout rate (default 0.2)")
    kda.add_argument("--l2", type=float, default=1e-4, help="weight penalty λ (default 1e-4)")
    kda.add_argument("--epochs", type=_positive_int, default=500, help="default 500")
    kda.add_argument("--patience", type=_positive_int, default=20,
                     help="early stopping: epochs without a better dev accuracy (default 20)")
    kda.add_argument("--dev-fraction", type=float, default=0.1,
                     help="stratified part of the training trees held out for early stopping "
                          "(default 0.1)")
    cpa = p.add_argument_group("cpa options")
    cpa.add_argument("--sample", "-r", type=_positive_int, default=1000,
                     help="examples drawn per iteration (default 1000; >= the number of trees: "
                          "all of them, the exact cutting-plane algorithm)")
    cpa.add_argument("--epsilon", type=_positive_float, default=1e-3,
                     help="stop when no cutting plane is violated by more than this "
                          "(default 0.001)")
    cpa.add_argument("--confirm", type=_positive_int, default=1, metavar="K",
                     help="stop only when the --epsilon test passes on K consecutive samples "
                          "(default 1, the paper's rule; sampled tests often pass early)")
    cpa.add_argument("--j", type=_positive_float, default=None,
                     help="uSVM+j: draw the sample by cost-proportionate rejection sampling, "
                          "positive examples J times as likely to be kept as negative ones")
    cpa.add_argument("--c-light", type=_positive_float, default=None, metavar="C",
                     help="SVM-light's C instead of --C: the 1-slack C becomes C times the "
                          "number of trees, or with --j times the sum of the importance "
                          "weights (the same problem as SVM-light's -c C -j J)")
    cpa.add_argument("--max-iter", type=_positive_int, default=500,
                     help="most cutting-plane iterations (default 500)")
    cpa.add_argument("--cpa-mode", choices=("forest", "sdag+", "sdag", "usvm"),
                     default="forest", help="how margins are computed (same model, different "
                     "work; default forest: everything on one DAG)")
    cpa.add_argument("--devices", type=_positive_int, default=None, metavar="N",
                     help="shard the sample's margin blocks over the first N JAX devices "
                          "(e.g. GPUs; default: the default device only)")
    p.add_argument("--out", "-o", required=True, metavar="MODEL.npz")
    _common(p)


def _positive_class(classes) -> int:
    """Binary labels: the class that is +1 (numeric labels: the larger one; else the last)."""
    try:
        values = [float(c) for c in classes]
    except ValueError:
        return len(classes) - 1
    return int(max(range(len(classes)), key=lambda i: values[i]))


def _train_cpa(args, kernel, trees, labels):
    """One-vs-rest cutting-plane SVMs (one model for two classes): the ksvm arrays layout."""
    import jax
    import numpy as np

    import jkern

    devices = None
    if args.devices is not None:
        devices = jax.devices()[: args.devices]
        if len(devices) < args.devices:
            raise CLIError(f"--devices {args.devices}: JAX sees {len(devices)} device(s) "
                           f"({', '.join(str(d) for d in devices)})")
    classes = np.unique(labels)
    binary = len(classes) == 2
    targets = [_positive_class(classes)] if binary else list(range(len(classes)))
    models, iterations = [], []
    for ci in targets:
        y = np.where(labels == classes[ci], 1, -1)
        c = args.C if args.c_light is None else jkern.svm.svm_light_C(args.c_light, y, j=args.j)
        res = jkern.svm.cpa(kernel, trees, y, C=c, sample=args.sample,
                            epsilon=args.epsilon, confirm=args.confirm, j=args.j,
                            max_iter=args.max_iter,
                            mode=args.cpa_mode, key=jax.random.PRNGKey(args.seed),
                            dtype=args.dtype, threads=args.threads, devices=devices)
        models.append(res.model)
        iterations.append(len(res.history))
        if not res.model.converged:
            _say(args, f"warning: class {classes[ci]}: not converged in {args.max_iter} "
                       "iterations (raise --max-iter or --epsilon)")
    support = sorted(set().union(*[m.support for m in models]))
    col = {k: i for i, k in enumerate(support)}
    coef = np.zeros((len(classes), len(support)))
    for ci, m in zip(targets, models):
        for k, v in zip(m.support, np.asarray(m.coef)):
            coef[ci, col[k]] = v
    if binary:  # scores (-f, f): argmax picks the positive class where f > 0
        pos = targets[0]
        coef[1 - pos] = -coef[pos]
    note = f"{sum(iterations)} cutting-plane iterations"
    return support, coef, np.zeros(len(classes)), note


def _stratified_dev(labels, fraction: float, seed: int):
    """A stratified boolean dev mask over `labels` (at least one training tree per class)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    dev = np.zeros(len(labels), bool)
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        dev[idx[: min(int(round(fraction * len(idx))), len(idx) - 1)]] = True
    return dev


def _train_kda(args, proj, trees, labels):
    """A KDA on the projector's kernel columns; returns its arrays and a summary."""
    import jax
    import numpy as np

    import jkern
    from jkern import kda

    if not 0 <= args.dropout < 1:
        raise CLIError(f"--dropout {args.dropout}: use a rate in [0, 1)")
    if not 0 < args.dev_fraction < 1:
        raise CLIError(f"--dev-fraction {args.dev_fraction}: use a fraction in (0, 1)")
    hidden = None
    if args.hidden is not None:
        try:
            hidden = [int(w) for w in args.hidden.split(",")]
        except ValueError:
            raise CLIError(f"--hidden {args.hidden}: use comma-separated widths") from None
    if not isinstance(proj, jkern.Nystrom):
        raise CLIError("--algo kda needs a single projector (not an ensemble)")
    c = np.asarray(jkern.gram(proj.kernel, trees, list(proj.landmarks), **_gram_options(args)))
    dev = _stratified_dev(labels, args.dev_fraction, args.seed)
    key = jax.random.PRNGKey(args.seed)
    model = kda.KDA.init(jax.random.fold_in(key, 1), np.asarray(proj.projection, c.dtype),
                         sorted(np.unique(labels).tolist()), hidden=hidden,
                         dropout=args.dropout)
    result = kda.fit(model, c[~dev], labels[~dev], c[dev], labels[dev],
                     key=jax.random.fold_in(key, 2), l2=args.l2, epochs=args.epochs,
                     patience=args.patience)
    best = int(result.best_epoch)
    note = (f"best dev accuracy {float(result.dev_accuracy[best]):.4f} at epoch {best + 1} "
            f"of {int(result.n_epochs)}")
    return kda.kda_arrays(result.model, "kda/"), note


def run_train(args) -> int:
    t0 = time.perf_counter()
    out = _out_npz(args.out)
    nystrom = args.algo in ("dcd", "kda")
    if nystrom and args.projector is None and args.landmarks is None:
        raise CLIError(f"--algo {args.algo} needs --projector FILE or --landmarks M")
    if args.projector is None:
        if args.kernel is None:
            raise CLIError("give --kernel (or --projector FILE for --algo dcd/kda)")
        check_kernel_arguments(args)
    setup_jax(args.dtype)
    import jax
    import numpy as np

    import jkern
    from jkern._nystrom import projector_arrays
    from jkern.kernels._spec import kernel_to_spec

    trees = read_trees_or_exit(args.trees)
    labels = np.asarray(read_labels(args.trees, args.label_column))
    if len(labels) != len(trees):
        raise CLIError(f"{args.trees}: {len(trees)} trees but {len(labels)} labels")
    if len(np.unique(labels)) < 2:
        raise CLIError(f"{args.trees}: needs at least two classes")
    arrays: dict[str, Any] = {}
    note = ""
    try:
        if nystrom:
            if args.projector is not None:
                proj = _projector(args.projector)
            else:
                proj = jkern.fit_nystrom(kernel_from_arguments(args), trees,
                                         landmarks=min(args.landmarks, len(trees)),
                                         key=jax.random.PRNGKey(args.seed),
                                         **_gram_options(args))
            arrays.update(projector_arrays(proj, "projector/"))
            costs = proj.n_landmarks
        if args.algo == "kda":
            kda_arrays, note = _train_kda(args, proj, trees, labels)
            arrays.update(kda_arrays)
        elif args.algo == "dcd":
            from jkern.svm import dcd_ovr

            x = proj.embed(trees, **_gram_options(args))
            model = dcd_ovr(x, labels, C=args.C, key=jax.random.PRNGKey(args.seed))
            arrays["w"], arrays["b"] = np.asarray(model.w), np.asarray(model.b)
        else:
            kernel = kernel_from_arguments(args)
            if args.algo == "cpa":
                support, coef, intercept, note = _train_cpa(args, kernel, trees, labels)
            else:
                g = jkern.gram(kernel, trees, **_gram_options(args))
                model = jkern.svm.ksvm_ovr(g, labels, C=args.C)
                support = model.support
                coef = np.asarray(model.coef)[:, support]
                intercept = np.asarray(model.intercept)
            spec, karrays = kernel_to_spec(kernel)
            arrays.update(karrays)
            arrays["kernel_spec"] = np.array(json.dumps(spec))
            arrays["support_trees"] = np.array([trees[i].to_penn() for i in support], str)
            arrays["coef"] = coef
            arrays["intercept"] = intercept
            costs = len(support)
    except (FloatingPointError, ValueError) as err:
        raise CLIError(str(err), EXIT_COMPUTE) from err
    classes = np.unique(labels)
    arrays["header"] = np.array(json.dumps({"format": _MODEL_FORMAT, "algo": args.algo}))
    arrays["classes"] = classes.astype(str)
    _save_npz(out, arrays)
    what = "landmarks" if nystrom else "support vectors"
    _say(args, f"train {args.algo}: {len(trees)} trees, {len(classes)} classes, {costs} "
               f"{what} (kernel evaluations per prediction){', ' + note if note else ''} -> "
               f"{args.out} in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK


def configure_predict(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL.npz")
    p.add_argument("trees", metavar="TREES")
    p.add_argument("--out", "-o", required=True, metavar="FILE.tsv",
                   help="one line per tree: predicted label, then the decision values")
    p.add_argument("--label-column", metavar="NAME",
                   help="TSV input with labels: also report accuracy")
    _common(p)


def run_predict(args) -> int:
    t0 = time.perf_counter()
    if not args.out.lower().endswith(".tsv"):
        raise CLIError(f"--out {args.out}: use a .tsv file name")
    setup_jax(args.dtype)
    import jax.numpy as jnp
    import numpy as np

    import jkern
    from jkern._nystrom import projector_from_arrays
    from jkern.kernels._spec import kernel_from_spec
    from jkern.trees._penn import parse_penn

    data = _load_npz(args.model)
    if "header" not in data or json.loads(str(data["header"])).get("format") != _MODEL_FORMAT:
        raise CLIError(f"{args.model}: not a jkern model file (from `jkern train`)")
    algo = json.loads(str(data["header"]))["algo"]
    classes = data["classes"]
    trees = read_trees_or_exit(args.trees)
    try:
        if algo == "dcd":
            proj = projector_from_arrays(data, "projector/", source=args.model)
            x = proj.embed(trees, **_gram_options(args))
            scores = np.asarray(x @ jnp.asarray(data["w"]).T + jnp.asarray(data["b"]))
        elif algo == "kda":
            from jkern.kda import kda_from_arrays

            proj = projector_from_arrays(data, "projector/", source=args.model)
            net = kda_from_arrays(data, "kda/", source=args.model)
            c = jkern.gram(proj.kernel, trees, list(proj.landmarks), **_gram_options(args))
            scores = np.asarray(net(jnp.asarray(c, net.nystrom.dtype)))
        else:
            kernel = kernel_from_spec(json.loads(str(data["kernel_spec"])), data)
            support = [parse_penn(str(s)) for s in data["support_trees"]]
            k = jkern.gram(kernel, trees, support, **_gram_options(args))
            scores = np.asarray(k @ jnp.asarray(data["coef"]).T + jnp.asarray(data["intercept"]))
    except (FloatingPointError, ValueError) as err:
        raise CLIError(str(err), EXIT_COMPUTE) from err
    predicted = classes[np.argmax(scores, axis=1)]
    lines = ["\t".join(["label", *[f"score_{c}" for c in classes]])]
    lines += ["\t".join([str(p), *[format(float(v), ".17g") for v in row]])
              for p, row in zip(predicted, scores)]
    try:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as err:
        raise CLIError(_os_message(err), EXIT_COMPUTE) from err
    summary = f"predict {algo}: {len(trees)} trees -> {args.out}"
    if args.label_column is not None or "|BT|" in Path(args.trees).read_text(errors="replace"):
        gold = np.asarray(read_labels(args.trees, args.label_column))
        summary += f", accuracy {float(np.mean(gold == predicted)):.4f}"
    _say(args, f"{summary} in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK


COMMANDS = {
    "nystrom": ("fit a Nyström projector from trees, or embed trees with one",
                configure_nystrom, run_nystrom),
    "train": ("train a classifier on labelled trees (Nyström + DCD, or kernel SVM)",
              configure_train, run_train),
    "predict": ("classify trees with a model from `jkern train`", configure_predict,
                run_predict),
}
