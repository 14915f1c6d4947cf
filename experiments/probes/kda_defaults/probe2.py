"""Dev-split rules: test accuracy of the model early stopping returns.
usage: probe2.py DATASET"""
import os
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jkern import kda
from jkern.data import stratified_split

name = sys.argv[1]
d = np.load(pathlib.Path(os.environ.get("KDA_PROBE_CACHE", "/tmp/kda_probe_cache")) / f"{name}.npz")
c, ct, h, y, yt = (jnp.asarray(d["c"], jnp.float32), jnp.asarray(d["ct"], jnp.float32),
                   jnp.asarray(d["h"], jnp.float32), d["y"], d["yt"])
classes = tuple(sorted(set(y.tolist())))
binary = len(classes) == 2

def score(pred):
    acc = float(np.mean(pred == yt))
    if not binary:
        return f"{acc:.3f}"
    pos = classes[-1]
    tp = np.sum((pred == pos) & (yt == pos)); p = np.sum(pred == pos); r = np.sum(yt == pos)
    return f"{acc:.3f}/F1 {2 * tp / max(p + r, 1):.3f}"

def run(tag, frac, dropouts, l2, patience_steps, max_steps, epochs=None, patience=None):
    fit_i, dev_i = stratified_split(y, frac, seed=0)
    bpe = -(-len(fit_i) // 256)
    epochs = epochs or -(-max_steps // bpe)
    patience = patience or -(-patience_steps // bpe)
    dr = jnp.asarray(dropouts, jnp.float32)
    t0 = time.time()
    models = kda.init_grid(h, classes, key=jax.random.PRNGKey(1), dropout=dr)
    g = kda.fit_grid(c[fit_i], y[fit_i], models=models, c_dev=c[dev_i], y_dev=y[dev_i],
                     keys=jax.random.split(jax.random.PRNGKey(2), len(dropouts)),
                     l2=jnp.full(len(dropouts), l2, jnp.float32), epochs=epochs,
                     patience=patience, data_key=jax.random.PRNGKey(3))
    best = np.nanmax(np.asarray(g.stats["dev_accuracy"]), axis=1)
    k = int(np.argmax(best))
    m = kda.grid_member(g, k).model
    ep = np.asarray(g.stats["best_epoch"])
    print(f"{tag}: dev {len(dev_i)}, picked d={dropouts[k]} (dev {best[k]:.3f}, best epochs "
          f"{ep.tolist()} x {bpe} steps) -> test {score(np.asarray(m.predict(ct)))} "
          f"[{time.time()-t0:.0f}s]", flush=True)

run("current (dev .1, 500 ep, patience 20 ep)", 0.1, [0.2], 1e-4, 0, 0, epochs=500, patience=20)
run("dev .1, patience 200 steps, max 2000 steps", 0.1, [0.2], 1e-4, 200, 2000)
run("dev .2, patience 200 steps, max 2000 steps", 0.2, [0.2], 1e-4, 200, 2000)
run("grid d{0,.2,.5}, dev .1, patience 200 steps", 0.1, [0.0, 0.2, 0.5], 1e-4, 200, 2000)
