"""Cache Nyström columns for the KDA-defaults probe: c_train, c_test, H, labels."""
import os
import pathlib
import sys
import time

import jax
import numpy as np

import jkern
from jkern.data import load_stdlib_functions, load_trec, stratified_split
from jkern.trees import read_examples

CACHE = pathlib.Path(os.environ.get("KDA_PROBE_CACHE", "/tmp/kda_probe_cache"))
OUT = CACHE
OUT.mkdir(parents=True, exist_ok=True)
DATA = pathlib.Path(__file__).resolve().parents[4] / "shared" / "data"
D = DATA

def save(name, kernel, tr, ytr, te, yte, m, seed=0):
    t0 = time.time()
    key = jax.random.PRNGKey(seed)
    proj = jkern.fit_nystrom(kernel, tr, landmarks=m, key=jax.random.fold_in(key, 1), labels=list(ytr))
    c = np.asarray(proj.columns(tr), np.float64)
    ct = np.asarray(proj.columns(te), np.float64)
    np.savez(OUT / f"{name}.npz", c=c, ct=ct, h=np.asarray(proj.projection, np.float64),
             y=np.asarray(ytr), yt=np.asarray(yte))
    print(name, c.shape, ct.shape, f"{time.time()-t0:.1f}s", flush=True)

which = sys.argv[1:]
if "stdlib" in which:  # exactly the example's split and projector
    rng = np.random.default_rng(0)
    data = load_stdlib_functions()
    tr, te = (ix.tolist() for ix in stratified_split(data.labels, 0.2, seed=0))
    k = jkern.Normalized(jkern.kernels.kernel_by_name("ptk", lam=0.4, mu=0.4))
    save("stdlib_ptk200", k, [data.trees[i] for i in tr], [data.labels[i] for i in tr],
         [data.trees[i] for i in te], [data.labels[i] for i in te], 200)
if "trec" in which:
    train, test = load_trec(D, "train"), load_trec(D, "test")
    rng = np.random.default_rng(1)
    idx = rng.permutation(len(train.trees))
    for n, kname, m in ((1000, "ptk", 200), (240, "sst", 100)):
        sel = sorted(idx[:n].tolist())
        k = jkern.kernels.kernel_by_name(kname, lam=0.4, mu=0.4, normalize=True)
        save(f"trec{n}_{kname}{m}", k, [train.trees[i] for i in sel], [train.coarse[i] for i in sel],
             test.trees, test.coarse, m)
if "boundary" in which:
    ex = read_examples(D / "srl" / "boundary_5000.dat")
    trees = [e.trees[0] for e in ex]; y = np.array([1 if e.label > 0 else -1 for e in ex])
    tr, te = stratified_split(y, 0.2, seed=0)
    rng = np.random.default_rng(2)
    tr = np.sort(rng.permutation(tr)[:2000])
    k = jkern.kernels.kernel_by_name("ptk", lam=0.4, mu=0.4, normalize=True)
    save("boundary2000_ptk200", k, [trees[i] for i in tr], y[tr], [trees[i] for i in te], y[te], 200)
