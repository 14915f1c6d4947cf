"""`processes=` beyond `gram` (issue 35): a Nyström projector's fit (W = K(L, L)) and
embedding (K(x, L)), and a kernel SVM's prediction-time columns K(x, support), shared among
the processes of a `jax.distributed` job.

Two local processes (`test_devices.run_two_processes`) run `compute` with `processes=True`;
both must return, bit for bit, what one process computes with the same options and no
`processes` (a block's values do not depend on the process that computed it), each having
computed only a share of the blocks.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_devices import WORKER_PREAMBLE, run_two_processes, small_trees

WORKER = WORKER_PREAMBLE + textwrap.dedent(
    """
    import numpy as np
    import jkern
    from jkern.errors import InputError
    from test_processes_nystrom import compute, kernel_and_data

    kernel, train, test, _ = kernel_and_data()
    refused = []
    # processes that draw other landmarks (a key per process) are refused, all of them, and
    # stay in step: the calls below still meet
    try:
        jkern.fit_nystrom(kernel, train, landmarks=6, key=jax.random.PRNGKey(process_id),
                          dtype="float64", processes=True)
    except InputError as err:
        refused.append(str(err))
    own = jkern.fit_nystrom(kernel, train, landmarks=6, key=jax.random.PRNGKey(process_id),
                            dtype="float64")
    try:
        own.embed(test, dtype="float64", processes=True)
    except InputError as err:
        refused.append(str(err))
    results, stats = compute(True, out_dir / f"shared.npy")
    np.savez(out_dir / f"process{process_id}.npz", **results)
    print("STATS " + json.dumps(stats))
    print("REFUSED " + json.dumps(refused))
    """
)


def kernel_and_data():
    """The kernel, 40 training trees, 20 test trees and ±1 labels: the same in every
    process."""
    import jkern

    trees = small_trees(60)
    train, test = trees[:40], trees[40:]
    sizes = np.array([len(t) for t in train])
    y = np.where(sizes > np.median(sizes), 1, -1)
    return jkern.Normalized(jkern.PTK(0.4, 0.3)), train, test, y


def compute(processes: bool, shared: Path) -> tuple[dict, dict]:
    """Everything the processes compute together (with `processes=True`) or one process
    alone (False): the arrays, and this process's work counters."""
    import jax
    import jax.numpy as jnp

    import jkern

    kernel, train, test, y = kernel_and_data()
    opts = {"dtype": "float64", "block_size": 4, "processes": processes}
    out, work = {}, {}
    # Nyström: one key in every process, so the same landmarks; W and K(x, L) in row blocks
    fit_stats, embed_stats = {}, {}
    proj = jkern.fit_nystrom(kernel, train, landmarks=12, key=jax.random.PRNGKey(3),
                             stats=fit_stats, **opts)
    out["projection"] = np.asarray(proj.projection)
    out["embedding"] = np.asarray(proj.embed(train + test, stats=embed_stats, **opts))
    work["fit"] = [fit_stats["blocks"], fit_stats["node_pairs"]]
    work["embed"] = [embed_stats["blocks"], embed_stats["node_pairs"]]
    # a raw kernel's K(x, L) written into one file every process opened
    raw = jkern.fit_nystrom(jkern.SST(0.4), train, landmarks=10, key=jax.random.PRNGKey(4),
                            **opts)
    if not shared.exists():
        np.lib.format.open_memmap(shared, mode="w+", dtype=np.float64, shape=(60, 10))
    target = np.lib.format.open_memmap(shared, mode="r+")
    raw.columns(train + test, dtype="float64", block_size=4, processes=processes and "shared",
                out=target)
    out["shared_columns"] = np.array(target)
    # KSVM: the training Gram, the prediction columns K(test, train) and the decision values
    gram = jnp.asarray(kernel.gram(train, **opts))
    model = jkern.svm.ksvm(gram, y, C=1.0).model
    columns = jnp.asarray(kernel.gram(test, train, **opts))
    out["columns"] = np.asarray(columns)
    out["decision"] = np.asarray(model.decision_function(columns))
    # ... and through the expansion over the support trees, K(test, support) on one forest
    expansion_stats = {}
    out["expansion"] = np.asarray(model.expand(kernel, train).decision_function(
        test, block_size=3, processes=processes, stats=expansion_stats))
    work["expansion"] = [expansion_stats["delta_evals"]]
    return out, work


def test_nystrom_and_ksvm_columns_shared_among_two_processes(tmp_path):
    outputs = run_two_processes(WORKER, tmp_path, timeout=240)
    lines = [dict(line.split(" ", 1) for line in out.splitlines()
                  if line.startswith(("STATS ", "REFUSED "))) for out in outputs]
    alone, work = compute(False, tmp_path / "alone.npy")
    for i, line in enumerate(lines):
        got = np.load(tmp_path / f"process{i}.npz")
        assert sorted(got.files) == sorted(alone), got.files
        for name, value in alone.items():
            assert np.array_equal(got[name], value), (name, i)
        refused = json.loads(line["REFUSED"])
        assert len(refused) == 2, refused
        assert "different landmarks" in refused[0] and "key" in refused[0]
        assert "different Nystrom projectors" in refused[1]
    shares = [json.loads(line["STATS"]) for line in lines]
    for part in ("fit", "embed", "expansion"):
        mine = [s[part][-1] for s in shares]  # node pairs (Delta evaluations) per process
        # each process did some of the work, less than one process alone does
        assert all(0 < m < work[part][-1] for m in mine), (part, mine, work[part])
    # the raw kernel's blocks, each computed once: the fit's W, the expansion's block
    for part in ("fit", "expansion"):
        assert sum(s[part][-1] for s in shares) == work[part][-1], (part, shares, work)


def test_processes_option_of_projectors_and_expansions():
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    import jkern
    from jkern.errors import InputError

    kernel, train, test, y = kernel_and_data()
    train, test, y = train[:10], test[:4], y[:10]
    proj = jkern.fit_nystrom(kernel, train, landmarks=4, key=jax.random.PRNGKey(0),
                             dtype="float64", processes=True)
    # one process (no jax.distributed): every block computed here, the same values
    same = jkern.fit_nystrom(kernel, train, landmarks=4, key=jax.random.PRNGKey(0),
                             dtype="float64")
    assert np.array_equal(np.asarray(proj.projection), np.asarray(same.projection))
    assert np.array_equal(np.asarray(proj.embed(test, dtype="float64", processes=True)),
                          np.asarray(same.embed(test, dtype="float64")))
    gram = jnp.asarray(kernel.gram(train, dtype="float64"))
    model = jkern.svm.ksvm(gram, y).model.expand(kernel, train)
    assert np.array_equal(np.asarray(model.decision_function(test, processes=True)),
                          np.asarray(model.decision_function(test)))
    with pytest.raises(InputError, match="False, True or 'shared'"):
        proj.embed(test, processes="all")
    with pytest.raises(InputError, match="False, True or 'shared'"):
        jkern.fit_nystrom(kernel, train, landmarks=4, key=jax.random.PRNGKey(0),
                          processes="all")
    with pytest.raises(InputError, match="processes=True"):
        model.decision_function(test, processes="shared")
    with pytest.raises(InputError, match="under jit/grad/vmap"):
        eqx.filter_jit(lambda p: p.embed(test, processes=True))(proj)
