"""Probe: the TREC training Gram (PTK / SST, float32) on one device at several block sizes
and host thread counts, with `gram(..., stats=)`'s split of each steady call (host phases
against compiled programs). The device benchmark's H200 run (docs/results/device_bench_h200.json)
found the programs' time on the GPU above a 16-core CPU's; this asks whether fewer, larger
blocks or more host threads change that.

    python experiments/probes/device/gram_blocks.py --data-dir DIR --out FILE.json
        [--configs ptk:0:2,ptk:4096:8] [--budget 200]

A config is kernel:block_size:threads (block_size 0 = the default). The JSON is rewritten
after every config, so a run stopped early keeps what it measured."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # experiments/_common

import jax
from _common import trec, tree_kernel

import jkern

KEEP = ("forest_seconds", "setup_seconds", "columns_seconds", "layout_seconds",
        "pairs_seconds", "contract_seconds", "assemble_seconds", "other_seconds",
        "host_seconds", "program_seconds", "host_cpu_seconds", "seconds")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default="ptk:0:2,ptk:0:8,ptk:2048:8,ptk:8192:8,sst:0:8")
    ap.add_argument("--budget", type=float, default=200.0)
    args = ap.parse_args()
    ends = time.perf_counter() + args.budget
    trees = trec(args.data_dir, None)[0].trees
    result = {"device": jax.devices()[0].device_kind, "jax": jax.__version__,
              "trees": len(trees), "runs": []}
    for config in args.configs.split(","):
        name, block, threads = config.split(":")
        options = {"threads": int(threads)}
        if int(block):
            options["block_size"] = int(block)
        kernel = tree_kernel(name)
        row = {"config": config}
        for call in ("first", "steady"):
            if time.perf_counter() > ends:
                row["note"] = "budget spent"
                break
            stats: dict = {}
            t0 = time.perf_counter()
            g = jax.block_until_ready(jkern.gram(kernel, trees, dtype="float32", stats=stats,
                                                 **options))
            row[f"{call}_s"] = round(time.perf_counter() - t0, 3)
            row[f"{call}_split"] = {k: round(float(stats[k]), 3) for k in KEEP if k in stats}
            row["gram_sum"] = float(g.sum())
        result["runs"].append(row)
        print(json.dumps(row), flush=True)
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
