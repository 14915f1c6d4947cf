"""Where a PA-I fit's time goes (issue 34 probe, kept as run): one process on the UD
attachment task (or conj2), explicit mode, printing CPU seconds and peak RSS after each phase:
imports, loading, opal's frequency renumbering, then the fit's parts (the conjunction table,
the id search, the epochs) and the test set's margins.

    python experiments/probes/pa_speed/phases.py --degree 2 [--dataset ud] [--cache-dir /tmp/jkern-pa-poly]
"""

import time

T0, C0 = time.perf_counter(), time.process_time()

import argparse  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import pa_dataset  # noqa: E402

from jkern.pa import frequency_order  # noqa: E402
from jkern.pa._explicit import ExplicitPA  # noqa: E402
from jkern.pa._fit import _model_weights, _run_conjunctions, _stream, visit_orders  # noqa: E402
from jkern.pa._slice import CHUNK_VISITS, dense_seen, kept_ids  # noqa: E402
from jkern.pa._split import common_part  # noqa: E402


def mark(what: str, since: list) -> None:
    c = time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{what:22s} CPU {c - since[0]:6.2f} s   (total {c - C0:6.2f} s, wall "
          f"{time.perf_counter() - T0:6.2f} s)   peak RSS {rss:5.0f} MB", flush=True)
    since[0] = c


ap = argparse.ArgumentParser()
ap.add_argument("--dataset", default="ud")
ap.add_argument("--degree", type=int, default=2)
ap.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[4] / "shared" / "data"))
ap.add_argument("--cache-dir", default="/tmp/jkern-pa-poly")
ap.add_argument("--epochs", type=int, default=10)
ap.add_argument("--block", type=int, default=32)
ap.add_argument("--again", action="store_true", help="run the epochs twice (compile apart)")
args = ap.parse_args()
since = [C0]
mark("imports", since)
train, test = pa_dataset(args.dataset, args.data_dir, args.cache_dir)
mark("load", since)
order = frequency_order(train.features)
X, _ = order.apply(train.features)
Xte, _ = order.apply(test.features)
X, Xte = X.astype(jnp.float64).compact(sparse=True), Xte.astype(jnp.float64)
mark("renumber", since)
F = X.n_features
common = common_part(X, args.degree, F)
mark(f"table ({common.keys.shape[0]:,} keys, {common.offset:,} dense ids, "
     f"{common.probes} probes)", since)
val = np.asarray(X.values)
idx = jnp.asarray(np.sort(np.where(val != 0, np.asarray(X.indices), F), axis=1), jnp.int32)
kept = kept_ids(common, idx, args.epochs)
if kept is not None:
    kept.block_until_ready()
mark("id search", since)
learner = ExplicitPA(jnp.float64(1.0), degree=args.degree, exact=True)
state = learner.init(common.size, dtype=jnp.float64)
n = len(val)
size = -(-min(CHUNK_VISITS, n * args.epochs) // args.block) * args.block
visits, mask = _stream(visit_orders(n, args.epochs, False, None), size)
sq = jnp.asarray(np.sum(val != 0, axis=1), jnp.float64)
y = jnp.asarray(train.labels, jnp.float64)
state, _, upds = _run_conjunctions(learner, common, state, idx, sq, y, jnp.asarray(visits),
                                   jnp.asarray(mask), False, kept, args.block)
print("updates", int(np.asarray(upds).sum()))
mark("epochs (+ compile)", since)
if args.again:  # the same run once more: the compiled program's own time
    state2 = learner.init(common.size, dtype=jnp.float64)
    state2, _, upds2 = _run_conjunctions(learner, common, state2, idx, sq, y,
                                         jnp.asarray(visits), jnp.asarray(mask), False, kept,
                                         args.block)
    assert int(np.asarray(upds2).sum()) == int(np.asarray(upds).sum())
    mark("epochs again", since)
keys, w = _model_weights(common, lambda: dense_seen(common, idx), [state.w])
w = w.astype(jnp.float64) / 2.0**32
mark(f"model ({len(keys):,} keys)", since)
from jkern.pa import ConjunctionModel  # noqa: E402

model = ConjunctionModel(w, keys, degree=args.degree, linear=False, n_features=F, ids=X.ids)
m = np.asarray(model.decision_function(Xte))
print("test accuracy", float(np.mean(np.where(m >= 0, 1, -1) == np.asarray(test.labels))))
mark("test margins", since)
