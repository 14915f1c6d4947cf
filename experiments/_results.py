"""The result file every experiment writes (schema in ../shared/DESIGN.md):
`{"experiment": name, "environment": {...}, "rows": [...], ...}` as `<out-dir>/<name>.json`."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np


def environment(argv: list[str] | None, **extra: Any) -> dict[str, Any]:
    """Versions, devices, date and the command line of this run."""
    return {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "numpy": np.__version__,
        **extra,
        "devices": [str(d) for d in jax.devices()],
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None
                                                        else sys.argv[1:])]),
    }


def carry_over(path: str | Path, rows: list[dict], key) -> tuple[list[dict], dict, dict]:
    """The rows of an earlier result file (`path`) that this run did not produce (by `key(row)`),
    the `merged_from` record of that file (its command, date, settings and own merges), and
    the earlier file itself."""
    earlier = json.loads(Path(path).read_text())
    produced = {key(r) for r in rows}
    kept = [r for r in earlier["rows"] if key(r) not in produced]
    merged = {"command": earlier["environment"]["command"],
              "date": earlier["environment"]["date"],
              "settings": earlier.get("settings"),
              "merged_from": earlier.get("merged_from")}
    return kept, merged, earlier


def write_result(out_dir: str | Path, name: str, rows: list[dict], argv: list[str] | None,
                 *, environment_extra: dict[str, Any] | None = None,
                 **sections: Any) -> Path:
    """Writes `<out_dir>/<name>.json` and returns its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = {"experiment": name, "environment": environment(argv, **(environment_extra or {})),
              **sections, "rows": rows}
    path = out / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def print_accuracy_table(rows: list[dict]) -> None:
    """The model / kernel / landmarks / accuracy ± std / saving table of the QC experiments."""
    print("\nmodel  kernel  landmarks  accuracy        saving")
    for r in rows:
        lm = "-" if r["landmarks"] is None else r["landmarks"]
        print(f"{r['model']:5s}  {r['kernel']:6s}  {lm!s:>9}  {100 * r['accuracy']:5.1f} ± "
              f"{100 * r['accuracy_std']:3.1f}    {100 * r['saving']:5.1f}%")


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None (with a note) when it is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install -e '.[plot]'): no PNG written")
        return None
    return plt


def cached_grams(kernel, train, test, cache: Path | None, tag: str):
    """(train Gram, test-vs-train block, seconds) in float64; read from / written to
    `cache/qc_<tag>_{train,test}.npy` when a cache folder is given (seconds None when read)."""
    import time

    import jkern

    if cache is not None:
        paths = cache / f"qc_{tag}_train.npy", cache / f"qc_{tag}_test.npy"
        if all(p.is_file() for p in paths):
            return np.load(paths[0]), np.load(paths[1]), None
    t0 = time.perf_counter()
    g_train = np.asarray(jkern.gram(kernel, train, dtype="float64", block_size=256))
    g_test = np.asarray(jkern.gram(kernel, test, train, dtype="float64", block_size=256))
    seconds = time.perf_counter() - t0
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(paths[0], g_train)
        np.save(paths[1], g_test)
    return g_train, g_test, seconds


def padded_projection(kernel, trees, g_train, m: int, key):
    """The landmark sampling of `key` (uniform, `m` of `trees`) and its Nyström H built from the
    cached training Gram, padded with zero columns to m: the rank kept varies between
    samplings, one shape keeps one compiled program per landmark count. Returns (landmark
    indices, H `[m, m]` float64)."""
    import jkern

    idx = np.asarray(jkern.select_landmarks(key, len(trees), m))
    proj = jkern.projector_from_gram(kernel, [trees[i] for i in idx], g_train[np.ix_(idx, idx)])
    h = np.asarray(proj.projection)
    return idx, np.pad(h, ((0, 0), (0, m - h.shape[1])))
