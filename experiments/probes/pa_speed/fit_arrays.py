"""Issue 34 probe, kept as run: the sizes of an explicit fit's main arrays (one fit, UD or
conj2, degree d): the table (`common_part`: keys, N, width, dense features, weights), the kept
ids, the rare part's pairs, the rare conjunctions and the model, each with its bytes (MiB).

    taskset -c 1 python experiments/probes/pa_speed/fit_arrays.py ud 3
"""
# ruff: noqa
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
from _pa_data import pa_dataset
from jkern.pa import fit, frequency_order
import jkern.pa._fit as F
def mib(x):
    return sum(l.nbytes for l in jax.tree_util.tree_leaves(x) if hasattr(l, "nbytes")) / 2**20
def wrap(name):
    f = getattr(F, name)
    def g(*a, **k):
        out = f(*a, **k)
        if hasattr(out, "_fields"):
            desc = {fld: getattr(getattr(out, fld), "shape", getattr(out, fld)) for fld in out._fields}
        elif hasattr(out, "n_common"):
            desc = dict(keys=out.keys.shape, N=out.n_common, width=out.width, n_dense=out.n_dense,
                        weights=out.size)
        elif isinstance(out, tuple):
            desc = [getattr(o, "shape", None) for o in out]
        else:
            desc = getattr(out, "shape", "")
        print(f"  {name:20s} {mib(out):8.1f} MiB {desc}", flush=True)
        return out
    setattr(F, name, g)
for n in ["common_part", "kept_ids", "private_counts", "row_pages", "rare_part", "rare_conjunctions", "_model_weights"]:
    wrap(n)
ds, d = sys.argv[1], int(sys.argv[2])
tr = pa_dataset(ds, str(Path(__file__).resolve().parents[4] / "shared" / "data"),
                "/tmp/jkern-pa-poly", part="train")
o = frequency_order(tr.features); X, _ = o.apply(tr.features)
print("features", X.n_features, "rows", X.indices.shape)
sol = fit(X, tr.labels, degree=d, C=1.0, epochs=10, mode="explicit", dtype=jnp.float64, key=None)
