"""The worker of `pa_poly.py --worker` (and `bench_pa.py`, `bench_pa_scaling.py`): one PA-I
model on one data set, in a process that imports what a user's PA-I script would (JAX,
`jkern.pa`, the data), not the experiments' shared helpers (`_common` loads every
experiment's imports and builds a kernel), so its process figures are a user's.
"""

from __future__ import annotations

import json
import resource
import time

import numpy as np
from _pa_data import pa_dataset

MODE_OF = {"pure": "kernel", "block": "block", "splitting": "splitting", "slicing": "slicing",
           "explicit": "explicit", "linear": "linear"}
KERNEL_MODELS = ("pure", "block", "splitting", "slicing")


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def worker(spec: dict) -> dict:
    """One model on one data set (run in its own process): the row's figures, and the
    updates and test margins written to `spec["trace"]` (for `same_model`); `spec["cpus"]`:
    run on that many CPUs (`jkern.limit_cpus`, set by `main` before JAX starts)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    from jkern.pa import fit, frequency_order

    def load(part: str):
        return pa_dataset(spec["dataset"], spec["data_dir"], spec["cache_dir"],
                          max_train=spec.get("max_train"), max_test=spec.get("max_test"),
                          n_train=spec.get("n_train", 50_000),
                          n_test=spec.get("n_test", 10_000), part=part)

    # the training set alone until the fit ends, as opal (which reads its test file after
    # training): the peak memory of training holds no test set
    train = load("train")
    order = frequency_order(train.features)  # opal's renumbering
    Xtr, _ = order.apply(train.features)
    # (the renumbered copy serves from here on: the original goes, as a user's would)
    ytr = train.labels
    del train
    # the features as read (float32 ones), the fit's arithmetic in float64 (`dtype=`): the
    # exact default, with no float64 copy of the training values
    model_name, degree = spec["model"], spec["degree"]
    before = _rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    row: dict = {}
    if model_name == "svm":
        Xte, yte = _test_set(load, order)
        margins, row = _svm(Xtr.astype(jnp.float64), ytr, Xte, degree, spec["svm_C"])
        updated = None
    else:
        sol = fit(Xtr, ytr, degree=degree, C=spec["C"], epochs=spec["epochs"],
                  mode=MODE_OF[model_name], n_common=spec.get("n_common"),
                  block_size=spec["block"], dtype=jnp.float64, throw=True, key=None)
        jax.block_until_ready(sol.model)
        updated = np.asarray(sol.stats["updated"])
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if model_name != "svm":
        Xte, yte = _test_set(load, order)
    if model_name != "svm":
        row.update(updates=int(updated.sum()), support_vectors=int(sol.stats["support_vectors"]))
        if "n_common" in sol.stats:
            row["n_common"] = int(sol.stats["n_common"])
        if model_name in KERNEL_MODELS:
            t1 = time.perf_counter()
            expanded = sol.model.expanded()
            row["expand_seconds"] = time.perf_counter() - t1
            margins = np.asarray(expanded.decision_function(Xte))
        if model_name in KERNEL_MODELS and spec.get("classify_timing", True):
            row["classify_us"] = 1e6 * _median_seconds(
                lambda: expanded.decision_function(Xte)) / len(yte)
        if model_name in KERNEL_MODELS and spec.get("pure_timing", True):
            head = Xte.rows(np.arange(min(2000, len(yte))))
            pure = np.asarray(sol.model.decision_function(head))
            row["classify_pure_us"] = 1e6 * _median_seconds(
                lambda: sol.model.decision_function(head)) / len(head)
            scale = max(1.0, float(np.abs(pure).max(initial=0)))
            row["expansion_error"] = float(np.abs(pure - margins[:len(head)]).max(initial=0)
                                           / scale)
        if model_name not in KERNEL_MODELS:
            margins = np.asarray(sol.model.decision_function(Xte))
    accuracy = float(np.mean(np.where(margins >= 0, 1, -1) == np.asarray(yte)))
    if spec.get("trace"):
        np.savez(spec["trace"], margins=margins,
                 **({} if updated is None else {"updated": np.packbits(updated)}))
    row.update(seconds=seconds, cpu_seconds=cpu, peak_mb=peak, fit_mb=max(0.0, peak - before),
               accuracy=accuracy, n_train=len(ytr), n_test=len(yte))
    return row


def _test_set(load, order):
    """The test set renumbered by the training's `order`, in float64, and its labels."""
    import jax.numpy as jnp

    test = load("test")
    Xte, _ = order.apply(test.features)
    return Xte.astype(jnp.float64), test.labels


def _median_seconds(call, repeats: int = 3) -> float:
    import jax

    jax.block_until_ready(call())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _svm(Xtr, ytr, Xte, degree: int, C: float):
    """DCD on the explicit degree-d map: feature U of x is sqrt(c_|U|) for each conjunction
    U ⊆ x of the training conjunctions (so φ(s)·φ(x) = (1 + s·x)^d)."""
    import jax
    import jax.numpy as jnp

    from jkern import SparseRows
    from jkern.pa import conjunction_table, expand
    from jkern.svm import dcd

    keys = conjunction_table(Xtr, degree)
    assert keys is not None

    def feature_map(X):
        e = expand(X, keys, degree=degree)
        return SparseRows(e.ids, jnp.sqrt(e.margin_coef), len(keys) + 1)

    sol = dcd(feature_map(Xtr), jnp.asarray(ytr, jnp.float64), C=C, loss="hinge", bias=None,
              tol=0.1, max_iter=100, key=jax.random.key(0))
    margins = np.asarray(sol.model.decision_function(feature_map(Xte)))
    return margins, {"conjunctions": len(keys), "epochs_run": int(sol.stats["epochs"])
                     if "epochs" in sol.stats else None}



def run_worker(spec_json: str) -> int:
    """`pa_poly.py --worker SPEC`: the spec's CPU limit first (`jkern.limit_cpus`, before
    JAX starts), then the row, printed as `RESULT {...}`."""
    spec = json.loads(spec_json)
    if spec.get("cpus"):
        from jkern import limit_cpus

        limit_cpus(int(spec["cpus"]))
    print("RESULT " + json.dumps(worker(spec)), flush=True)
    return 0
