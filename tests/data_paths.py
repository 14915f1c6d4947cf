"""Where the real data lives, and the one rule for when it is missing: skip, or fail under
JKERN_REQUIRE_DATA=1 (CI), so data-dependent tests never pass by being skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The shared directory beside the repository (override: JKERN_SHARED=/path/to/shared).
SHARED = Path(os.environ.get("JKERN_SHARED")
              or Path(__file__).resolve().parents[1].parent / "shared")
SHARED_DATA = SHARED / "data"
REF_DIR = SHARED / "ref"


def require(path: Path) -> Path:
    """`path` if it exists (file or directory); otherwise skip, or fail under CI."""
    if path.exists():
        return path
    msg = f"{path} is missing"
    if os.environ.get("JKERN_REQUIRE_DATA") == "1":
        pytest.fail(msg + " (JKERN_REQUIRE_DATA=1)")
    pytest.skip(msg)
