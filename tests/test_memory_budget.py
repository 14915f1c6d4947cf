"""Issue 32: a job's size is checked before its work. A tree whose node pairs would not fit
the memory budget is refused with a `MemoryBudgetError` (how big, what to pass), not ended by
a MemoryError or the OOM killer; within the budget the values are the unbudgeted ones."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jkern
from jkern.cli import main
from jkern.errors import InputError, MemoryBudgetError
from jkern.kernels._budget import headroom, memory_budget, parse_size
from jkern.trees import parse_penn

# a 2,000-node chain of one label: 4 M node pairs with itself (about 200 MiB to compute)
CHAIN_TEXT = "(A " * 1999 + "x" + ")" * 1999
CHAIN = parse_penn(CHAIN_TEXT)
# 700 nodes: 490,000 pairs, about 31 MiB with the smallest Delta buffer
SHORT = parse_penn("(A " * 699 + "x" + ")" * 699)
SMALL = [parse_penn(t) for t in ("(S (A a))", "(S (B b))", "(S (A a)(B b))", "(S (C c))")]


@pytest.mark.parametrize("kernel", [jkern.SST(0.4), jkern.PTK(0.4, 0.4),
                                    jkern.Normalized(jkern.SST(0.4))],
                         ids=["sst", "ptk", "normalized"])
def test_a_tree_past_the_budget_is_refused_and_within_it_computed(kernel):
    with pytest.raises(MemoryBudgetError, match=r"tree 0 \(0-based\) of the 1 given "
                       r"\(2,000 nodes\) has 3,99\d,\d+ node pairs") as info:
        kernel.gram([CHAIN], max_memory="4M")
    err = info.value
    assert isinstance(err, InputError) and isinstance(err, MemoryError)
    assert err.budget == 4 << 20 and err.needed > 100 << 20 and err.index == 0
    assert "max_memory=" in str(err) and "JKERN_MAX_MEMORY" in str(err)
    assert "\n" not in str(err)
    with pytest.raises(MemoryBudgetError):
        kernel.gram([SHORT], max_memory="16M")
    within = np.asarray(kernel.gram([SHORT], max_memory="64M"))
    np.testing.assert_array_equal(within, np.asarray(kernel.gram([SHORT],
                                                                 max_memory="unlimited")))
    assert np.isfinite(within).all() and within[0, 0] > 0


def test_self_kernels_and_cross_blocks_are_checked_too():
    with pytest.raises(MemoryBudgetError, match="node pairs"):
        jkern.SST(0.4).diag([CHAIN], max_memory="4M")
    with pytest.raises(MemoryBudgetError, match="node pairs"):  # found in the block itself
        jkern.SST(0.4).gram([CHAIN], [CHAIN, SMALL[0]], max_memory="4M")


def test_the_environment_variable_sets_the_budget(monkeypatch):
    monkeypatch.setenv("JKERN_MAX_MEMORY", "4M")
    with pytest.raises(MemoryBudgetError, match=r"JKERN_MAX_MEMORY=4M"):
        jkern.SST(0.4).gram([CHAIN])
    assert jkern.SST(0.4).gram([SHORT], max_memory="64M")[0, 0] > 0  # the option wins
    monkeypatch.setenv("JKERN_MAX_MEMORY", "lots")
    with pytest.raises(InputError, match="JKERN_MAX_MEMORY must be a size"):
        jkern.SST(0.4).gram(SMALL)


def test_a_gram_matrix_past_the_budget_is_refused():
    with pytest.raises(MemoryBudgetError, match=r"the 4 x 4 Gram matrix takes 1\d+ bytes.*out="):
        jkern.SST(0.4).gram(SMALL, max_memory=50)
    out = np.zeros((4, 4))  # written into the caller's array: not held twice
    jkern.SST(0.4).gram(SMALL, out=out, max_memory=9 << 20)
    np.testing.assert_array_equal(out, np.asarray(jkern.SST(0.4).gram(SMALL)))


def test_nystrom_landmarks_past_the_budget_are_refused():
    with pytest.raises(MemoryBudgetError, match=r"3 landmarks: W = K\(L, L\) and its eigen"):
        jkern.fit_nystrom(jkern.SST(0.4), SMALL, landmarks=3, key=jax.random.key(0),
                          max_memory=100)


def test_a_small_budget_splits_blocks_with_the_same_values():
    rng = np.random.default_rng(0)
    texts = []
    for _ in range(80):  # short chains (the programs the tests above built): two blocks
        depth = int(rng.integers(2, 40))
        labels = [f"L{rng.integers(3)}" for _ in range(depth)]
        texts.append("".join(f"({lab} " for lab in labels) + f"w{rng.integers(2)}" + ")" * depth)
    trees = [parse_penn(t) for t in texts]
    for kernel in (jkern.SST(0.4), jkern.PTK(0.4, 0.4), jkern.Normalized(jkern.SST(0.4))):
        stats: dict = {}
        # 8 MiB of it is the smallest Delta buffer: the rest holds a few rows' pairs
        small = np.asarray(kernel.gram(trees, max_memory="10M", stats=stats, threads=1))
        default = np.asarray(kernel.gram(trees, threads=1))
        np.testing.assert_allclose(small, default, rtol=1e-13)
        assert stats["blocks"] > 2


def test_sizes_and_defaults():
    assert parse_size("8G") == 8 << 30 and parse_size("512m") == 512 << 20
    assert parse_size("1.5GiB") == 3 << 29 and parse_size(1000) == 1000
    assert parse_size("2 MB") == 2 << 20 and parse_size("unlimited") is None
    for bad in ("0", -1, "lots", "8X", float("nan"), True):
        with pytest.raises(InputError):
            parse_size(bad)
    room = headroom()
    assert room is None or room > 0
    budget = memory_budget()
    assert budget is None or budget.limit >= 1 << 30  # the default never refuses small jobs
    with pytest.raises(InputError, match="max_memory must be"):
        jkern.SST(0.4).gram(SMALL, max_memory="-3G")


def test_the_cli_relays_it_as_one_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "chain.txt"
    path.write_text(CHAIN_TEXT + "\n(A y)\n")
    monkeypatch.setenv("JKERN_MAX_MEMORY", "4M")
    code = main(["gram", "--kernel", "sst", "--no-progress", "--out",
                 str(tmp_path / "g.npy"), str(path)])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("jkern: error: tree 0 (0-based) of the 2 given (2,000 nodes)")
    assert "JKERN_MAX_MEMORY=4M" in err[0]


def test_vector_kernels_densify_the_ids_in_use_and_check_the_matrix():
    from jkern.trees._svmlight import parse_svmlight_line

    # a feature id of 3e9 made a [n, 3e9] dense matrix (44.7 GiB for two examples)
    far = [parse_svmlight_line("1 |BT| (S a) |ET| 3000000000:1 5:2 |EV|"),
           parse_svmlight_line("-1 |BT| (S b) |ET| 1:1 5:1 |EV|")]
    near = [parse_svmlight_line("1 |BT| (S a) |ET| 7:1 5:2 |EV|"),
            parse_svmlight_line("-1 |BT| (S b) |ET| 1:1 5:1 |EV|")]
    for kernel in (jkern.Linear(), jkern.RBF(0.5)):
        np.testing.assert_allclose(np.asarray(kernel.gram(far)), np.asarray(kernel.gram(near)),
                                   rtol=1e-15)
    with pytest.raises(MemoryBudgetError, match="3 distinct feature ids"):
        jkern.Linear().gram(far, max_memory=40)
    with pytest.raises(MemoryBudgetError, match=r"the 3,000 x 3,000 Gram matrix takes"):
        jkern.RBF(0.5).gram(list(np.ones((3000, 2))), max_memory="1M")


def test_a_pa_block_size_past_the_data_costs_nothing():
    from jkern.pa import fit

    x = jkern.SparseRows.from_rows([{0: 1.0}, {1: 1.0}, {0: 1.0, 2: 1.0}, {1: 1.0, 3: 1.0}])
    y = [1, -1, 1, -1]
    for mode in ("block", "splitting"):  # 10**9 once allocated 16 GB / 7.5 GiB
        huge = fit(x, y, mode=mode, block_size=10**9, epochs=2, key=None)
        whole = fit(x, y, mode=mode, block_size=8, epochs=2, key=None)
        np.testing.assert_array_equal(np.asarray(huge.model.predict(x)),
                                      np.asarray(whole.model.predict(x)))
        np.testing.assert_array_equal(huge.stats["updates"], whole.stats["updates"])


def test_a_50000_deep_tree_reads_and_builds_without_recursion():
    from jkern.trees._forest import Forest

    text = "(A " * 49_999 + "x" + ")" * 49_999
    tree = parse_penn(text)  # iterative readers: no RecursionError
    assert len(tree) == 50_000 and tree.to_penn() == text
    forest = Forest.build([tree, parse_penn("(A (A x))")])  # one level per height
    assert forest.n_nodes == 50_000 and int(forest.height.max()) == 49_999
    assert forest.tree_nodes(1)[0].tolist() == [0, 1, 2]  # shared with the chain's bottom
