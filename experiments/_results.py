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
