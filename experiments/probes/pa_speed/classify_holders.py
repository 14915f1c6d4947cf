"""Issue 34 probe, kept as run: the split expanded model (pecco's PKE | SPLIT: the conjunctions
of the `common` most frequent model features expanded, the support vectors holding the
others visited) on UD's test rows, for the slicing models `classify.py` keeps in /tmp/pke:
per test row the model features, the expanded and the rare ones, the support vectors
visited, and µs per row (median of 3 calls after a warm-up) for each `common` given
(None: the default, every expanded conjunction at an arithmetic id; a number at or above
the model's features: the whole expansion, no support vector visited).

    taskset -c 1 python experiments/probes/pa_speed/classify_holders.py 3 150,220,None,400,100000
"""
# ruff: noqa
import sys, time
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from jkern._sparse import SparseRows
from jkern.pa._pke import expand_support_vectors

d = int(sys.argv[1])
commons = [None if c == "None" else int(c) for c in sys.argv[2].split(",")]
t = np.load("/tmp/pke/test_ud.npz"); s = np.load(f"/tmp/pke/sv_ud_d{d}.npz")
X = SparseRows(jnp.asarray(t["indices"]), jnp.asarray(t["values"]), int(t["n_features"]))
idx, present = np.asarray(t["indices"]), np.asarray(t["values"]) != 0
for c in commons:
    em = expand_support_vectors(s["indices"], s["values"], s["alpha"], d, int(s["n_features"]),
                                common=c)
    rank = np.asarray(em.rank)
    r = np.where(present, rank[np.where(present, idx, 0)], em.n_model)
    K, N = em.table.n_common, em.n_model
    model, expanded = (r < N).sum(1), (r < K).sum(1)
    visits = 0.0
    if em.rare is not None:
        start = np.asarray(em.rare.start)
        f = np.clip(r - K, 0, N - K - 1)
        visits = np.where((r >= K) & (r < N), start[f + 1] - start[f], 0).sum(1).mean()
    em.decision_function(X)
    ts = []
    for _ in range(3):
        t0 = time.perf_counter(); np.asarray(em.decision_function(X)); ts.append(time.perf_counter() - t0)
    print(f"d={d} common={c}: K={K} of N={N}, n_dense={em.table.n_dense}, {len(em.weights):,} "
          f"weights; a row: {model.mean():.2f} model features, {expanded.mean():.2f} expanded, "
          f"{(model - expanded).mean():.2f} rare, {visits:.2f} support vectors visited; "
          f"{1e6 * sorted(ts)[1] / len(idx):.2f} us/row", flush=True)
