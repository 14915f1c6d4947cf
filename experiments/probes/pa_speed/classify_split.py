"""Issue 34 probe, kept as run: the expanded model's classification (`table_margins`) of
UD's test rows split into its dense part (no searched conjunction: `searched` bounds 0) and
the whole, µs per row on one core, for the models `classify.py` keeps in `--models`; also
the searched conjunctions per row.

    taskset -c 0 python experiments/probes/pa_speed/classify_split.py 3 [--models /tmp/pke]
"""
# ruff: noqa
import sys, time
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from jkern._sparse import SparseRows
from jkern._validate import to_device
from jkern.pa._pke import expand_support_vectors
from jkern.pa._table import dense_layout, searched_bound, table_margins
d = int(sys.argv[1])
models = sys.argv[sys.argv.index("--models") + 1] if "--models" in sys.argv else "/tmp/pke"
t = np.load(f"{models}/test_ud.npz")
s = np.load(f"{models}/sv_ud_d{d}.npz")
em = expand_support_vectors(s["indices"], s["values"], s["alpha"], d, int(s["n_features"]))
F = em.n_model
rank = np.asarray(em.rank)
idx = np.asarray(t["indices"]); val = np.asarray(t["values"])
B = 4096; m = (len(idx) // B) * B
idx = idx[:m]; val = val[:m]
known = (val != 0) & (idx >= 0) & (idx < len(rank))
r = np.where(known, rank[np.where(known, idx, 0)], F)
width = int((r < F).sum(1).max())
table = em.table
W = table.width
print(f"model features {F}, dense {table.n_dense}, width {W}, table keys {table.keys.shape[0]:,}, window {table.window}")
ids = idx.reshape(-1, B, idx.shape[1]); pres = (val != 0).reshape(ids.shape)
bound = searched_bound(rank, table, len(rank), ids, pres)
rr = np.sort(r, axis=1)[:, :W]
a = (rr < F).sum(1); b = np.minimum((rr < table.n_dense).sum(1), a)
from math import comb
print("searched per row by size:", [float(np.mean([comb(x, j) - comb(y, j) for x, y in zip(a, b)])) for j in range(1, d + 1)],
      "dense per row:", float(np.mean([sum(comb(y, j) for j in range(1, d + 1)) for y in b])))
args = (to_device(rank), em.weights, table, len(rank), to_device(ids, jnp.int32), to_device(pres))
def timeit(name, searched):
    f = lambda: np.asarray(table_margins(*args, searched))
    out = f(); ts = []
    for _ in range(3):
        t0 = time.process_time(); f(); ts.append(time.process_time() - t0)
    print(f"{name:10s} {1e6 * sorted(ts)[1] / m:7.2f} us/row", flush=True)
    return out
timeit("dense", tuple(0 for _ in bound))
timeit("whole", bound)
# the same with the table's search replaced by position 0 (the packing, keys and sums only)
import dataclasses
from jkern.pa import _table as T
orig = T.CommonPart.search
T.CommonPart.search = lambda self, key, ok: jnp.zeros(key.shape, jnp.int32) + (jnp.sum(key) & 0)
table_margins = T.table_margins._plain  # traced afresh (the stored program is keyed by source)
timeit("no search", bound)
T.CommonPart.search = orig
