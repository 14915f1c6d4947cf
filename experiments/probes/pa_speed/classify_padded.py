"""Issue 34 probe, kept as run: UD d = 3 classification (classify.py's slicing model in
/tmp/pke) with `table_margins` (packed searched conjunctions) or a padded variant that looks
up every one of a row's C(width, <= 3) conjunctions (`CommonPart.ids`: static slices, no
packing): µs per test row.

    taskset -c 1 python experiments/probes/pa_speed/classify_padded.py base --degrees 3
    taskset -c 1 python experiments/probes/pa_speed/classify_padded.py padded --degrees 3
"""
# ruff: noqa
import sys, runpy
from pathlib import Path
import jax, jax.numpy as jnp, numpy as np
import equinox as eqx
import jkern.pa._table as T
import jkern.pa._pke as P
from jkern.pa._table import conjunction_coefficients

@eqx.filter_jit
def padded_margins(rank, weights, table, n_features, idx, present, searched):
    N, W, d = table.n_common, table.width, table.degree
    coef = table.coefficients(jnp.zeros((table.n_ids,), jnp.int32), weights.dtype)
    def one(args):
        i, p = args
        known = p & (i >= 0) & (i < n_features)
        r = jnp.where(known, rank[jnp.where(known, i, 0)], N)
        r = jnp.sort(r, axis=1)[:, :W]
        ids = table.ids(r)
        w = weights[jnp.minimum(ids, table.size)]
        return jnp.sum(w * coef[None, :], axis=1)
    return jax.lax.map(one, (idx, present))

mode = sys.argv.pop(1)
if mode == "padded":
    P.table_margins = padded_margins
sys.argv = ["classify.py"] + sys.argv[1:]
runpy.run_path(str(Path(__file__).resolve().parent / "classify.py"), run_name="__main__")
