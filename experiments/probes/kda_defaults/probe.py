"""KDA-defaults probe: test-accuracy curves over optimizer steps (fit_grid, test set as the
'dev' set only to RECORD the curve, never to pick), DCD on the same Nyström features.

usage: probe.py DATASET [scale] [lr] [steps]"""
import os
import pathlib
import math
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jkern import kda
from jkern.svm import dcd_ovr

name = sys.argv[1]
scale = sys.argv[2] if len(sys.argv) > 2 else "1"
lr = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-3
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 4000
d = np.load(pathlib.Path(os.environ.get("KDA_PROBE_CACHE", "/tmp/kda_probe_cache")) / f"{name}.npz")
c, ct, h, y, yt = (jnp.asarray(d["c"], jnp.float32), jnp.asarray(d["ct"], jnp.float32),
                   jnp.asarray(d["h"], jnp.float32), d["y"], d["yt"])
classes = tuple(sorted(set(y.tolist())))
z, zt = c @ h, ct @ h
n = len(y)
binary = len(classes) == 2

def score(pred):
    acc = float(np.mean(pred == yt))
    if not binary:
        return f"{acc:.3f}"
    pos = classes[-1]
    tp = np.sum((pred == pos) & (yt == pos)); p = np.sum(pred == pos); r = np.sum(yt == pos)
    f1 = 2 * tp / max(p + r, 1)
    return f"{acc:.3f}/F1 {f1:.3f}"

if scale == "1" and lr == 1e-3:
    for C in (1.0, 10.0):
        m = dcd_ovr(z, y, C=C, key=jax.random.PRNGKey(0)).model
        print(f"{name} DCD C={C}: test {score(np.asarray(m.predict(zt)))}", flush=True)

# embedding scale
rms = float(jnp.sqrt(jnp.mean(z ** 2)))
if scale == "1":
    s = 1.0
elif scale == "rms":  # one scalar: unit mean-square embedding entries on the training set
    s = 1.0 / rms
elif scale == "sqrtm":
    s = math.sqrt(h.shape[1])
else:
    s = float(scale)
print(f"embedding rms {rms:.4f}, scale {s:.3f}, lr {lr}", flush=True)
hs = h * s
batch = 256
bpe = -(-n // batch)
epochs = -(-steps // bpe)

dropouts = [float(v) for v in os.environ.get("DROPOUTS", "0,0.2,0.5").split(",")]
l2s = [float(v) for v in os.environ.get("L2S", "0,1e-4,1e-3").split(",")]
dr = jnp.asarray([a for a in dropouts for _ in l2s], jnp.float32)
l2 = jnp.asarray([b for _ in dropouts for b in l2s], jnp.float32)
t0 = time.time()
models = kda.init_grid(hs, classes, key=jax.random.PRNGKey(1), dropout=dr)
opt = kda.adam(lr)
grid = kda.fit_grid(c, y, models=models, c_dev=ct, y_dev=yt,
                    keys=jax.random.split(jax.random.PRNGKey(2), len(dr)),
                    l2=l2, epochs=epochs, optimizer=opt, data_key=jax.random.PRNGKey(3))
acc = np.asarray(grid.stats["dev_accuracy"])
print(f"grid {len(dr)} x {epochs} epochs ({bpe} steps/epoch): {time.time()-t0:.1f}s")
marks = [s_ for s_ in (25, 50, 100, 200, 300, 500, 1000, 2000, 3000, 4000, 6000, 8000) if s_ <= steps]
print("dropout l2      " + " ".join(f"{m_:>6}" for m_ in marks) + "   (test acc after N steps)")
for g in range(len(dr)):
    row = [acc[g, min(epochs, -(-m_ // bpe)) - 1] for m_ in marks]
    print(f"{float(dr[g]):<7.2f} {float(l2[g]):<7.0e} " + " ".join(f"{v:6.3f}" for v in row))
