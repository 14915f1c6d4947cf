"""The engine's host sides, each against its plain definition: where a Gram's seconds go
(`stats`: host phases apart from compiled programs), the pairs found from distinct child-key
bitsets, the entries' bucket order, and the contraction's int32 items read in place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from helpers import load_corpus

import jkern
from jkern.kernels import _pairs
from jkern.kernels._layout import CLASSES
from jkern.kernels._timing import HOST_PHASES
from jkern.trees._forest import concat_ranges

F64 = {"dtype": "float64"}


@pytest.fixture(scope="module")
def corpus(shared_data):
    return load_corpus(shared_data)


def test_gram_stats_split_host_seconds_from_program_seconds(corpus):
    trees = corpus["trec"]
    kernel = jkern.PTK(0.4, 0.4)
    stats: dict = {}
    jkern.gram(kernel, trees, stats=stats, threads=1, **F64)
    phases = [stats[f"{p}_seconds"] for p in HOST_PHASES]
    assert min(phases) >= 0
    assert stats["host_seconds"] == pytest.approx(sum(phases))
    for name in ("forest", "pairs", "layout", "contract"):
        assert stats[f"{name}_seconds"] > 0, name
    assert stats["program_seconds"] > 0
    # one thread: its phases are at most the call, and its CPU at most the process's
    assert stats["host_seconds"] + stats["program_seconds"] <= stats["seconds"] * 1.01 + 1e-3
    assert 0 < stats["host_cpu_seconds"] <= stats["cpu_seconds"] * 1.01 + 1e-3
    # a collection prepared before the call: no forest, no set-up in its seconds
    prepared = kernel.prepare(trees, **F64)
    again: dict = {}
    kernel.gram(prepared[:], stats=again, **F64)
    assert again["forest_seconds"] == 0 and again["setup_seconds"] == 0
    assert again["program_seconds"] > 0


def test_pairs_from_bitset_classes_equal_every_pair_tested(corpus, monkeypatch):
    # PTK's residual mode: the pairs sharing a child key, whichever path finds them
    trees = corpus["all"]
    engine = jkern.PTK(0.4, 0.4).prepare(trees, **F64).engine
    finder = engine.pair_finder
    cols = engine.layout.columns(np.arange(20, len(trees)))
    rows, r_key, _, _ = engine.layout.rows(engine.layout.occurrences(np.arange(60))[0], cols)
    args = (rows, r_key, cols.members, cols.group_start, cols.group_len)
    by_key = np.argsort(r_key, kind="stable")
    r_len = cols.group_len[r_key[by_key]]
    want_r = np.repeat(by_key, r_len)
    want_m = concat_ranges(cols.group_start[r_key[by_key]], r_len)
    hit = finder.share_child_key(rows[want_r], cols.members[want_m])
    assert 0 < hit.sum() < len(hit)
    for dense, chunk in ((1, 64), (1, 1 << 20), (1 << 62, 1 << 20)):
        monkeypatch.setattr(_pairs, "_DENSE_GROUP", dense)  # 1: every group by classes
        monkeypatch.setattr(_pairs, "_PAIR_CHUNK", chunk)
        ri, midx = finder.pairs(*args)
        assert ri.dtype == np.int32 and midx.dtype == np.int32
        np.testing.assert_array_equal(ri, want_r[hit])
        np.testing.assert_array_equal(midx, want_m[hit])


@pytest.mark.parametrize("kernel", [jkern.SST(0.4), jkern.PTK(0.4, 0.4)], ids=["sst", "ptk"])
def test_entries_come_children_first_in_buckets(corpus, kernel):
    trees = corpus["all"]
    engine = kernel.prepare(trees, **F64).engine
    layout = engine.layout
    cols = layout.columns(np.arange(len(trees)))
    rows, r_key, r_off, _ = layout.rows(layout.occurrences(np.arange(50))[0], cols)
    ri, midx = engine.pair_finder.pairs(rows, r_key, cols.members, cols.group_start,
                                        cols.group_len)
    slots = (r_off - cols.group_start[r_key])[ri] + midx
    entries, bucket, cuts = layout.order(rows, ri, cols.members, midx, slots)
    # the plain definition: a stable sort by (height, q's class, v's class)
    q, v = rows[ri], cols.members[midx]
    order = np.lexsort((layout.aclass[v], layout.aclass[q], layout.forest.height[q]))
    host = np.empty((3, len(ri)), np.int32)
    entries(host, 0, len(ri))
    np.testing.assert_array_equal(host, np.stack([q, v, slots])[:, order])
    n_cls = len(CLASSES)
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        part = np.s_[a:b]
        assert len(np.unique(layout.forest.height[host[0, part]])) == 1
        assert (layout.aclass[host[0, part]] == bucket[k] // n_cls % n_cls).all()
        assert (layout.aclass[host[1, part]] == bucket[k] % n_cls).all()
    assert cuts[-1] == len(ri)


def test_contraction_items_read_in_place_equal_plain_ones(corpus):
    engine = jkern.PTK(0.4, 0.4).prepare(corpus["ref"], **F64).engine
    rng = np.random.default_rng(0)
    n, n_rows, n_members = 5000, 40, 70
    idx = rng.integers(2, 1000, n).astype(np.int32)
    ri = rng.integers(0, n_rows, n).astype(np.int32)
    midx = rng.integers(0, n_members, n).astype(np.int32)
    r_seg = (rng.integers(0, 30, n_rows) * 50).astype(np.int32)
    r_w = rng.integers(1, 5, n_rows).astype(np.int32)
    m_tree = rng.integers(0, 50, n_members).astype(np.int32)
    m_count = rng.integers(1, 4, n_members).astype(np.int32)
    buf = jnp.asarray(rng.random(1 << 12))
    contraction = engine.contraction
    fast = contraction.scatter_pairs(jnp.zeros(1 << 12), buf, idx, ri, midx,
                                     (r_seg, r_w, m_tree, m_count))
    plain = contraction.scatter(jnp.zeros(1 << 12), buf, idx, r_seg[ri] + m_tree[midx],
                                r_w[ri].astype(np.int64) * m_count[midx])
    np.testing.assert_array_equal(np.asarray(fast), np.asarray(plain))


@pytest.mark.slow
def test_bench_gram_reports_host_and_program_seconds(shared_data, tmp_path):
    script = Path(__file__).resolve().parents[1] / "experiments" / "bench_gram.py"
    proc = subprocess.run([sys.executable, str(script), "--smoke", "--workloads", "small-10",
                           "--threads", "1", "--data-dir", str(shared_data), "--out-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "bench_gram.json").read_text())["rows"]
    for row in rows:
        assert row["host_s"] > 0 and row["program_s"] > 0, row
        assert 0 < row["host_share"] < 1 and 0 < row["again_host_share"] < 1
    table = (tmp_path / "bench_gram.md").read_text()
    assert "| host s (forest + planning) | program s | host % |" in table
    assert len(table.strip().splitlines()) == 2 + len(rows)
