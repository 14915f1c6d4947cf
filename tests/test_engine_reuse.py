"""The engine's bounded work: self-kernels computed from the node pairs within a tree only,
normalized blocks on one prepared forest, Gram matrices written into a caller's array (a
memory map too), compiled programs reused across calls, and the compilation cache on by
default (with its opt-out)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_rel, load_corpus

import jkern
from jkern.errors import InputError

F64 = {"dtype": "float64"}


@pytest.fixture(scope="module")
def corpus(shared_data):
    return load_corpus(shared_data)


def kernels(corpus):
    from jkern.data import tree_words  # SPTK with made-up vectors for the words

    words = tree_words(corpus["all"])
    vectors = np.random.default_rng(0).normal(size=(len(words), 8))
    return {
        "st": jkern.ST(0.4),
        "sst": jkern.SST(0.4),
        "sst-bow": jkern.SSTBow(0.4),
        "ptk": jkern.PTK(0.4, 0.4),
        "ptk-5": jkern.PTK(0.5, 0.3, max_subseq=3),
        "sptk": jkern.SPTK(words, vectors, 0.4, 0.4, threshold=0.2),
    }


@pytest.mark.parametrize("name", ["st", "sst", "sst-bow", "ptk", "ptk-5", "sptk"])
def test_self_kernels_equal_the_gram_diagonal(corpus, name):
    k = kernels(corpus)[name]
    trees = corpus["all"]
    g = np.asarray(jkern.gram(k, trees, **F64))
    # several tree blocks, halved to fit the buffer: the same numbers
    prepared = k.prepare(trees, dtype="float64")
    for block in (1, 7, 512):
        d = np.asarray(prepared.diag(np.arange(len(trees)), block_size=block))
        assert_rel(d, np.diag(g), 1e-12, f"{name} diag, blocks of {block}")
    assert_rel(k.diag(trees, **F64), np.diag(g), 1e-12, f"{name} kernel.diag")
    # and far fewer Delta entries than a square block of the same trees
    diag_entries = prepared.counts.delta_entries
    square = k.prepare(trees[:64], dtype="float64")
    square.block(np.arange(64), np.arange(64))
    assert diag_entries < square.counts.delta_entries * 3 * len(trees) / 64


def test_normalized_block_on_one_forest_matches_separate_jobs(corpus):
    trees = corpus["all"]
    a, b = trees[:30], trees[30:]
    for base in (jkern.SST(0.4), jkern.PTK(0.4, 0.4)):
        raw = np.asarray(jkern.gram(base, a, b, **F64))
        da = np.diag(np.asarray(jkern.gram(base, a, **F64)))
        db = np.diag(np.asarray(jkern.gram(base, b, **F64)))
        want = raw / np.sqrt(da[:, None] * db[None, :])
        got = np.asarray(jkern.gram(jkern.Normalized(base), a, b, **F64))
        assert_rel(got, want, 1e-12, "normalized block")
        g, d1, d2 = base.gram_and_diag(a, b, **F64)
        assert_rel(d1, da, 1e-12, "gram_and_diag d1")
        assert_rel(d2, db, 1e-12, "gram_and_diag d2")


@pytest.mark.parametrize("name", ["sst", "ptk", "sptk"])
def test_a_tall_cross_block_is_computed_as_its_transpose(corpus, name):
    """More rows than columns: the engine row-blocks the columns against the rows (fewer
    Delta entries, the larger side planned once) and hands back the transpose: the same
    numbers as the other orientation, bit for bit, and as a reference-checked square Gram."""
    k = kernels(corpus)[name]
    trees = corpus["all"]
    tall, short = trees, trees[:17]
    got = np.asarray(jkern.gram(k, tall, short, **F64))
    assert got.shape == (len(tall), len(short))
    np.testing.assert_array_equal(got, np.asarray(jkern.gram(k, short, tall, **F64)).T)
    assert_rel(got, np.asarray(jkern.gram(k, trees, **F64))[:, :17], 1e-12, name)
    # the Delta work is the transposed orientation's, less than the tall side's in row
    # blocks of 32 (the least a default row block holds)
    def entries(rows, cols, **options):
        prepared = k.prepare(tall, dtype="float64")
        prepared.block(rows, cols, **options)
        return prepared.counts.delta_entries

    everything, first = np.arange(len(tall)), np.arange(17)
    assert entries(everything, first) == entries(first, everything)
    assert entries(everything, first) < entries(everything, first, block_size=32)


def test_gram_into_a_memory_mapped_npy(corpus, tmp_path):
    trees = corpus["all"]
    k = jkern.Normalized(jkern.PTK(0.4, 0.4))
    want = np.asarray(jkern.gram(k, trees, **F64))
    path = tmp_path / "gram.npy"
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64,
                                    shape=(len(trees), len(trees)))
    got = jkern.gram(k, trees, out=out, **F64)
    assert got is out
    out.flush()
    np.testing.assert_array_equal(np.load(path), want)  # the same arithmetic, in place
    small_blocks = np.empty_like(want)  # other blocks: other summation orders
    assert_rel(jkern.gram(k, trees, out=small_blocks, block_size=16, **F64), want, 1e-12,
               "blocks of 16")
    # a cross block, a raw tree kernel, a sum with a vector-free constant
    cross = np.empty((10, len(trees)))
    np.testing.assert_array_equal(
        jkern.gram(k, trees[:10], trees, out=cross, **F64),
        np.asarray(jkern.gram(k, trees[:10], trees, **F64)))
    total = jkern.SST(0.4) + 1.0
    summed = np.empty((len(trees), len(trees)))
    np.testing.assert_array_equal(jkern.gram(total, trees, out=summed, **F64),
                                  np.asarray(jkern.gram(total, trees, **F64)))


def test_out_is_checked(corpus):
    trees = corpus["ref"][:5]
    k = jkern.SST(0.4)
    with pytest.raises(InputError, match="shape"):
        jkern.gram(k, trees, out=np.empty((4, 5)), **F64)
    with pytest.raises(InputError, match="rounded"):
        jkern.gram(k, trees, out=np.empty((5, 5), np.float32), **F64)
    with pytest.raises(InputError, match="NumPy"):
        jkern.gram(k, trees, out=[[0.0] * 5] * 5, **F64)
    ro = np.empty((5, 5))
    ro.flags.writeable = False
    with pytest.raises(InputError, match="read-only"):
        jkern.gram(k, trees, out=ro, **F64)


PROGRAM_COUNTS = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import jkern
from jkern.data import load_trec
from jkern.trees import without_leaves
trec = load_trec(sys.argv[1], "train").trees[:40]
trees = trec + [without_leaves(t) for t in trec]
k = jkern.Normalized(jkern.PTK(0.35, 0.45))
counts = []
for args in ((trees[:60],), (trees[:60],), (trees[60:], trees[:60])):
    stats = {}
    jkern.gram(k, *args, stats=stats, dtype="float64")
    counts.append(stats["programs"])
print("COUNTS " + json.dumps(counts))
"""


def test_programs_are_reused_across_calls_and_blocks(shared_data):
    # a fresh process: the counts do not depend on what other tests compiled before
    env = {**os.environ, "JKERN_NO_CACHE": "1"}
    proc = subprocess.run([sys.executable, "-c", PROGRAM_COUNTS, str(shared_data)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("COUNTS "))
    first, again, cross = json.loads(line[len("COUNTS "):])
    assert first > 0
    assert again == 0  # every program of the setting is already built
    # the block and both diagonals on one forest, with the padding of the square Gram: only
    # arity-class pairs the square Gram did not meet, and the normalization, compile anything
    assert cross <= first // 2


def _cache_dir_of(env: dict) -> str:
    # the first computation turns the cache on (importing jkern does not: test_cache_trust)
    code = ("import jax, jkern; jkern.SST(0.4).gram([jkern.trees.parse_penn('(S (A a))')]); "
            "print(jax.config.jax_compilation_cache_dir)")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_compilation_cache_is_on_by_default_with_an_opt_out(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("JKERN_NO_CACHE",)}
    env["JKERN_CACHE_DIR"] = str(tmp_path / "xla")
    assert _cache_dir_of(env) == str(tmp_path / "xla")
    assert (tmp_path / "xla").is_dir()
    assert _cache_dir_of({**env, "JKERN_NO_CACHE": "1"}) == "None"


def test_subsets_of_a_prepared_collection_reuse_its_forest(corpus):
    trees = corpus["ref"][:30]
    k = jkern.PTK(0.4, 0.4)
    prepared = k.prepare(trees, dtype="float64")
    forest = prepared.forest
    stats: dict = {}
    got = jkern.gram(k, prepared[:10], prepared[5:20], stats=stats, **F64)
    assert prepared.forest is forest and stats["trees"] == 30  # the collection's forest
    assert_rel(got, jkern.gram(k, trees[:10], trees[5:20], **F64), 1e-12, "cross block")
    rows = np.array([3, 17, 29, 0])
    assert_rel(jkern.gram(k, prepared[rows], **F64), jkern.gram(k, [trees[i] for i in rows],
                                                                   **F64), 1e-12, "square")
    assert_rel(k.diag(prepared[rows], **F64), k.diag([trees[i] for i in rows], **F64), 1e-12,
               "diag")
    norm = jkern.Normalized(k)
    assert_rel(jkern.gram(norm, prepared[20:], prepared[:20], **F64),
               jkern.gram(norm, trees[20:], trees[:20], **F64), 1e-12, "normalized")
    # the counters are this call's, not the collection's running totals
    again: dict = {}
    jkern.gram(k, prepared[:10], prepared[5:20], stats=again, **F64)
    assert again["delta_entries"] == stats["delta_entries"] > 0
    # another kernel, or another dtype, reads the trees as a plain sequence
    assert_rel(jkern.gram(jkern.SST(0.4), prepared[:10], **F64),
               jkern.gram(jkern.SST(0.4), trees[:10], **F64), 1e-12, "other kernel")
    f32 = np.asarray(jkern.gram(k, prepared[:10], dtype="float32"))
    assert f32.dtype == np.float32 and f32.shape == (10, 10)
    assert len(prepared[2:5]) == 3 and prepared[2:5][1] is trees[3]


def test_suffix_column_sides_equal_fresh_ones(corpus):
    # a symmetric Gram's blocks take their columns as suffixes of the first block's
    import dataclasses

    trees = corpus["all"][:120]
    for kernel in (jkern.SST(0.4), jkern.PTK(0.4, 0.4), jkern.PTK(0.4, 0.4, max_subseq=3)):
        engine = kernel.prepare(trees, dtype="float64").engine
        every = np.arange(len(trees))
        base = engine._make_columns(every)
        for k in (0, 1, 5, 60, len(trees) - 1):
            derived, fresh = engine._suffix_columns(base, k), engine._make_columns(every[k:])
            for field in dataclasses.fields(derived):
                a, b = getattr(derived, field.name), getattr(fresh, field.name)
                assert a.dtype == b.dtype and np.array_equal(a, b), (field.name, k)
