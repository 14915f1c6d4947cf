#!/usr/bin/env bash
# Create .venv (if absent) and install jkern editable with the extras named by the first
# argument (default: plot, what the main example needs). Idempotent.
# Sourced by scripts/test.sh (dev,vectors,ds,plot,docs: the test tools, linters, word vectors,
# spaCy, matplotlib and the docs site's builder) and scripts/example.sh (plot); can also be
# run on its own.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extras="${1:-plot}"

if [ ! -x .venv/bin/python ]; then
    if command -v python3.11 >/dev/null 2>&1; then
        py=python3.11
    else
        py=python3
    fi
    echo "setup: creating .venv with $py" >&2
    "$py" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[$extras]"
# An editable install leaves jkern's bytecode uncompiled, and where PYTHONDONTWRITEBYTECODE
# is set every process then compiles jkern's modules again (up to ~0.15 s, issue 34):
# compiled once here, as a regular install's pip does (a later edit is compiled as usual).
.venv/bin/python -m compileall -q jkern >/dev/null
