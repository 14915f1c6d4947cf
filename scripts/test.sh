#!/usr/bin/env bash
# Install (if needed), lint (ruff), type-check (pyright) and run the test suite. Arguments go
# to pytest, e.g. `-m slow`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh dev,vectors,ds,plot,docs
.venv/bin/ruff check .
.venv/bin/pyright
rc=0
.venv/bin/python -m pytest "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; treating that as a failure" >&2
    exit 1
fi
exit "$rc"
