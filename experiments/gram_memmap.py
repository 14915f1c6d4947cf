"""A Gram matrix larger than memory wants: 20,000 trees written block by block to a .npy file.

The trees are every real corpus the shared data folder has, in this order, cut to `--trees`:
TREC train and test (5,901 constituency parses), UD EWT dev and test as GRCT and as LCT
dependency trees (2 x 4,078), the SRL boundary sample (5,000), then Python stdlib-function
ASTs. `jkern.gram(kernel, trees, out=np.lib.format.open_memmap(...))` writes the Gram into the
file block by block (the upper triangle, then the lower one mirrored in bands); the script
reports wall and CPU seconds, the peak RSS of the whole process beside its RSS before the
Gram (the trees and JAX), and checks sampled rows of the file against Gram blocks computed
directly (and the file's symmetry).

    python experiments/gram_memmap.py --data-dir ../shared/data --out-dir /tmp/memmap
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import numpy as np
from _common import parse_args, parser, write_result

SMOKE = {"trees": 600, "check_rows": 8}


def corpus(data_dir: str, n: int) -> tuple[list, dict[str, int]]:
    """The first `n` trees of the sources in order, and how many each gave."""
    from jkern.data import load_stdlib_functions, load_trec
    from jkern.trees import grct, lct, read_conllu, read_trees

    trec_train, trec_test = load_trec(data_dir, "train"), load_trec(data_dir, "test")
    ud = Path(data_dir) / "ud-english-ewt"
    sentences = [s for part in ("dev", "test")
                 for s in read_conllu(ud / f"en_ewt-ud-{part}.conllu")]
    sources = [
        ("trec", lambda: list(trec_train.trees) + list(trec_test.trees)),
        ("ud-grct", lambda: [grct(s) for s in sentences]),
        ("ud-lct", lambda: [lct(s) for s in sentences]),
        ("boundary", lambda: read_trees(Path(data_dir) / "srl" / "boundary_5000.dat")),
        ("stdlib-ast", lambda: list(load_stdlib_functions(max_per_package=None).trees)),
    ]
    trees: list = []
    counts: dict[str, int] = {}
    for name, load in sources:
        if len(trees) >= n:
            break
        part = load()[: n - len(trees)]
        trees += part
        counts[name] = len(part)
    if len(trees) < n:
        raise SystemExit(f"the data has {len(trees)} trees, fewer than --trees {n}")
    return trees, counts


def rss_mb() -> float:
    """Current resident set size (MB), from /proc."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def main(argv=None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--trees", type=int, default=20_000, help="number of trees (default 20000)")
    ap.add_argument("--kernel", default="sst", choices=["sst", "ptk5"],
                    help="SST (lam 0.4) or PTK (lam = mu = 0.4, max_subseq 5)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--check-rows", type=int, default=64,
                    help="rows of the file checked against directly computed blocks")
    ap.add_argument("--gram-file", default=None,
                    help="the .npy to write (default <out-dir>/gram_memmap.npy, deleted after)")
    args = parse_args(ap, argv, "gram_memmap", SMOKE)

    import jax

    jax.config.update("jax_enable_x64", True)
    import jkern

    trees, counts = corpus(args.data_dir, args.trees)
    kernel = jkern.SST(0.4) if args.kernel == "sst" else jkern.PTK(0.4, 0.4, max_subseq=5)
    n = len(trees)
    path = Path(args.gram_file or Path(args.out_dir) / "gram_memmap.npy")
    path.parent.mkdir(parents=True, exist_ok=True)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, n))
    before = rss_mb()
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    stats: dict = {}
    jkern.gram(kernel, trees, out=out, dtype="float64", threads=args.threads, stats=stats,
               progress=sys.stderr.isatty())
    out.flush()
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage.ru_utime + usage.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    peak = usage.ru_maxrss / 1024
    del out
    # Check: sampled rows against direct blocks, and symmetry, read back from the file.
    gram = np.load(path, mmap_mode="r")
    rows = np.unique(np.linspace(0, n - 1, args.check_rows).astype(np.int64))
    want = np.asarray(jkern.gram(kernel, [trees[i] for i in rows], trees, dtype="float64",
                                 threads=args.threads))
    got = np.asarray(gram[rows])
    rel = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300)))
    symmetric = bool(np.array_equal(got, np.asarray(gram[:, rows]).T))
    size_mb = path.stat().st_size / 2**20
    del gram
    if args.gram_file is None:
        path.unlink()
    row = {"trees": n, "sources": counts, "kernel": args.kernel, "threads": args.threads,
           "seconds": round(seconds, 2), "cpu_s": round(cpu, 2),
           "rss_before_mb": round(before, 1), "peak_rss_mb": round(peak, 1),
           "output_mb": round(size_mb, 1), "programs": stats["programs"],
           "delta_entries": stats["delta_entries"], "checked_rows": len(rows),
           "max_rel_diff": rel, "symmetric": symmetric}
    print(f"{n} trees {counts}, {args.kernel}, {args.threads} threads: {seconds:.1f} s wall, "
          f"{cpu:.1f} CPU-s; output {size_mb:,.0f} MB on disk; RSS {before:,.0f} MB before "
          f"the Gram, peak {peak:,.0f} MB; {len(rows)} rows checked against direct blocks: "
          f"max rel diff {rel:.1e}, symmetric {symmetric}", flush=True)
    if rel > 1e-9 or not symmetric:
        print("CHECK FAILED", file=sys.stderr)
        return 1
    out_json = write_result(args.out_dir, "gram_memmap", [row], argv)
    print(f"wrote {out_json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
