"""Issue 34 probe, kept as run: the expanded model's classification of UD's test set, µs per
example (median of 3 calls after a warm-up), for the slicing models at d = 2 and d = 3
(trained once and kept in `--models`, as support vectors; the test rows too).

    python experiments/probes/pa_speed/classify.py [--models /tmp/pke] [--degrees 2,3]
"""
# ruff: noqa
import argparse, sys, time
from pathlib import Path
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import pa_dataset
from jkern.pa import fit, frequency_order
from jkern._sparse import SparseRows
from jkern.pa._pke import expand_support_vectors

ap = argparse.ArgumentParser()
ap.add_argument("--models", default="/tmp/pke")
ap.add_argument("--degrees", default="2,3")
ap.add_argument("--data-dir", default="/work/shared/data")
ap.add_argument("--cache-dir", default="/tmp/jkern-pa-poly")
args = ap.parse_args()
out = Path(args.models); out.mkdir(parents=True, exist_ok=True)
degrees = [int(d) for d in args.degrees.split(",")]
if not (out / "test_ud.npz").exists() or any(not (out / f"sv_ud_d{d}.npz").exists() for d in degrees):
    train, test = pa_dataset("ud", args.data_dir, args.cache_dir)
    order = frequency_order(train.features)
    Xtr, _ = order.apply(train.features); Xte, _ = order.apply(test.features)
    Xtr, Xte = Xtr.astype(jnp.float64), Xte.astype(jnp.float64)
    np.savez(out / "test_ud.npz", indices=np.asarray(Xte.indices), values=np.asarray(Xte.values),
             n_features=Xte.n_features, labels=np.asarray(test.labels))
    for d in degrees:
        m = fit(Xtr, train.labels, degree=d, C=1.0, epochs=10, mode="slicing", block_size=32, key=None).model
        np.savez(out / f"sv_ud_d{d}.npz", indices=np.asarray(m.indices), values=np.asarray(m.values),
                 alpha=np.asarray(m.alpha), n_features=m.n_features)
t = np.load(out / "test_ud.npz")
X = SparseRows(jnp.asarray(t["indices"]), jnp.asarray(t["values"]), int(t["n_features"]))
for d in degrees:
    s = np.load(out / f"sv_ud_d{d}.npz")
    t0 = time.perf_counter()
    em = expand_support_vectors(s["indices"], s["values"], s["alpha"], d, int(s["n_features"]))
    print(f"d={d} expand {time.perf_counter()-t0:.2f} s, {em.weights.shape[0]:,} weights, N={em.n_model}", flush=True)
    m = np.asarray(em.decision_function(X))
    ts = []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        np.asarray(em.decision_function(X)); ts.append((time.perf_counter() - t0, time.process_time() - c0))
    w, c = sorted(ts)[1]
    acc = np.mean(np.where(m >= 0, 1, -1) == t["labels"])
    print(f"d={d} {1e6*w/len(m):.2f} us/example wall, {1e6*c/len(m):.2f} CPU; acc {acc:.4f}", flush=True)
