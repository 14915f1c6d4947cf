#!/usr/bin/env bash
# Run the main example (tree classification on real trees). Arguments are passed through,
# e.g.  bash scripts/example.sh --corpus trec --kernel sst
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh plot  # explicit: a sourced script sees our arguments as its own
.venv/bin/python examples/classify_trees.py "$@"
