#!/usr/bin/env bash
# The device benchmark (issue 35): jkern's main workloads timed on whatever device JAX sees
# (see experiments/device_bench.py and docs/performance.md). Arguments are passed through,
# e.g.  bash scripts/device-bench.sh --smoke --out-dir /tmp/db
#       bash scripts/device-bench.sh --data-dir .device-data --tag h100
# The JSON goes to docs/results/device_bench.json unless --out-dir is given (a --smoke run
# without --out-dir writes to a fresh temporary folder instead). Python: .venv/bin/python
# (scripts/setup.sh makes it); where there is none (a lent GPU machine, whose python3 has
# JAX with CUDA), $JKERN_PYTHON or python3, with this checkout's jkern on the path.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ -n "${JKERN_PYTHON:-}" ]; then
    python="$JKERN_PYTHON"
elif [ -x .venv/bin/python ]; then
    python=.venv/bin/python
else
    python=python3
    echo "device-bench: no .venv/bin/python here, using $(command -v python3)" >&2
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # jkern from this checkout, installed or not
PYTHONUNBUFFERED=1 exec "$python" experiments/device_bench.py "$@"
