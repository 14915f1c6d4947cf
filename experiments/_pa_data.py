"""The PA-I data sets of the experiments (issue 21), with light imports: a PA-I worker process
(`_pa_worker`) loads them without `_common`'s imports.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

PA_DATASETS = ("ud", "conj2", "conj3", "boundary")


def pa_dataset(name: str, data_dir: str | Path, cache_dir: str | Path | None, *,
               max_train: int | None = None, max_test: int | None = None,
               n_train: int = 50_000, n_test: int = 10_000, seed: int = 0,
               part: str | None = None):
    """(train, test) `jkern.pa.SparseExamples` of a PA-I data set, in the file's ids:

    - `ud`: UD English EWT attachment, window 5, dev as train, test as test
      (`jkern.data.load_ud_attachment`; cached as `.npz` in `cache_dir`);
    - `conj2` / `conj3`: `jkern.pa.conjunctive_concepts` of degree 2 / 3 (`n_train`,
      `n_test`, key `seed`);
    - `boundary`: `srl/boundary_5000.dat`, the first 4,000 lines as train, the last 1,000 as
      test.

    `max_train` / `max_test` keep the first rows (a stream's prefix). `ud`, `conj2` and
    `conj3` are kept as `.npz` in `cache_dir` (then read as a user reads a data file; made
    again where missing). `part` (`"train"` or `"test"`): that set alone, read alone from a
    kept file (a worker reads its test set after training, as opal does: the training's peak
    memory does not hold it)."""
    from jkern.data import load_ud_attachment
    from jkern.pa import conjunctive_concepts, read_sparse

    if name in ("ud", "conj2", "conj3"):
        stem = ("ud_attachment_w5" if name == "ud"
                else f"{name}_{n_train}_{n_test}_seed{seed}")
        path = None if cache_dir is None else Path(cache_dir) / f"{stem}.npz"
        sets = _read_sets(path, part)
        if sets is None:
            if name == "ud":
                data = load_ud_attachment(data_dir)
                sets = [data.train.examples, data.test.examples]
            else:
                sets = list(conjunctive_concepts(n_train, n_test, key=seed,
                                                 degree=int(name[-1])))
            _write_sets(path, sets)
    elif name == "boundary":
        from jkern.pa import SparseExamples

        data = read_sparse(Path(data_dir) / "srl" / "boundary_5000.dat")
        sets = [data.features.rows(np.arange(4000)), data.features.rows(np.arange(4000, len(
            data.labels)))]
        sets = [SparseExamples(sets[0], data.labels[:4000]),
                SparseExamples(sets[1], data.labels[4000:])]
    else:
        raise ValueError(f"unknown data set {name!r}; one of {PA_DATASETS}")
    from jkern.pa import SparseExamples

    out = []
    for ex, limit in zip(sets, (max_train, max_test)):
        if ex is not None and limit is not None and limit < len(ex.labels):
            ex = SparseExamples(ex.features.rows(np.arange(limit)), ex.labels[:limit])
        out.append(ex)
    if part is not None:
        return out[("train", "test").index(part)]
    return out[0], out[1]




def _read_sets(path: Path | None, part: str | None = None):
    """The [train, test] `SparseExamples` kept at `path` (arrays only; with `part`, the
    other is None and not read), or None."""
    if path is None or not path.is_file():
        return None
    import jax

    import jkern
    from jkern.pa import SparseExamples

    # (device_put, not jnp.asarray: the latter compiles a copy program per shape)
    with np.load(path, allow_pickle=False) as z:
        return [SparseExamples(jkern.SparseRows(jax.device_put(z[f"{s}_idx"]),
                                                jax.device_put(z[f"{s}_val"]),
                                                int(z["n_features"])), z[f"{s}_y"])
                if part in (None, s) else None for s in ("train", "test")]


def _write_sets(path: Path | None, sets) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez(tmp, n_features=sets[0].features.n_features,
             **{f"{s}_{part}": np.asarray(a) for s, e in zip(("train", "test"), sets)
                for part, a in (("idx", e.features.indices), ("val", e.features.values),
                                ("y", e.labels))})
    tmp.replace(path)  # never a partial file
