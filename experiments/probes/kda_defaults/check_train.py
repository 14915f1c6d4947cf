"""kda.train (new defaults) vs DCD on cached Nyström columns: test accuracy / F1."""
import os
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jkern import kda
from jkern.svm import dcd_ovr

for name in sys.argv[1:]:
    d = np.load(pathlib.Path(os.environ.get("KDA_PROBE_CACHE", "/tmp/kda_probe_cache")) / f"{name}.npz")
    c, ct, h = (jnp.asarray(d[k], jnp.float32) for k in ("c", "ct", "h"))
    y, yt = d["y"], d["yt"]
    t0 = time.time()
    sol = kda.train(c, y, h, key=jax.random.PRNGKey(0))
    acc = np.mean(np.asarray(sol.model.predict(ct)) == yt)
    tr = np.mean(np.asarray(sol.model.predict(c)) == y)
    s = {k: (np.asarray(v).tolist() if np.ndim(v) == 0 else None) for k, v in sol.stats.items()}
    print(f"{name}: KDA defaults test {acc:.3f} (train {tr:.3f}) {time.time()-t0:.0f}s "
          f"steps {s['steps']} dev {s['dev_size']}", flush=True)
    z, zt = c @ h, ct @ h
    for C in (1.0, 10.0):
        m = dcd_ovr(z, y, C=C, key=jax.random.PRNGKey(0)).model
        print(f"   DCD C={C}: test {np.mean(np.asarray(m.predict(zt)) == yt):.3f}")
