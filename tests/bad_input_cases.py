"""Bad inputs and what each gets (issue 23): one list, used by `tests/test_bad_input.py`
(every case raises its error) and by `experiments/bad_input_table.py`, which writes the
table of `docs/bad-input.md` from what the cases actually raise (a test checks that the
page is up to date).

A case is (the input, as the code a user would write; the exception class expected; a
callable that runs it). The callables build their own small data.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

GRAM = np.eye(4) + 0.1
LABELS = [1, -1, 1, -1]
TREES = ("(S (A a))", "(S (B b))", "(S (A a)(B b))", "(S (C c))")


def _trees():
    from jkern.trees import parse_penn

    return [parse_penn(t) for t in TREES]


def _key(seed: int = 0):
    import jax

    return jax.random.key(seed)


def _poisoned(value: float) -> np.ndarray:
    x = np.ones((4, 3))
    x[2, 1] = value
    return x


def _gram_with(value: float) -> np.ndarray:
    g = GRAM.copy()
    g[0, 1] = value
    return g


def _file_with(data: bytes, suffix: str = ".npz") -> str:
    """A temporary file holding `data` (a model file's name, foreign content)."""
    import os
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), f"model{suffix}")
    with open(path, "wb") as f:
        f.write(data)
    return path


def _npy_bytes() -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.ones(3))
    return buffer.getvalue()


def _wide(n: int) -> str:
    return "(S " + " ".join(f"(N w{i % 2})" for i in range(n)) + ")"


def _run(code: str) -> Callable[[], object]:
    """A callable running `code` (shown in the docs as it is) with the helpers above."""

    def run() -> object:
        import jax.numpy as jnp

        import jkern
        from jkern import kda, svm
        from jkern.pa import fit as pa_fit
        from jkern.trees import parse_penn

        scope = dict(jkern=jkern, svm=svm, kda=kda, pa_fit=pa_fit, parse_penn=parse_penn,
                     np=np, jnp=jnp, GRAM=GRAM, LABELS=LABELS, trees=_trees(), key=_key(),
                     poisoned=_poisoned, gram_with=_gram_with, wide=_wide,
                     file_with=_file_with, npy_bytes=_npy_bytes)
        return eval(code, scope)  # the code is this module's own text, shown in the docs

    return run


# (the input, as code; the error expected)
CASES: list[tuple[str, str]] = [
    # binary learners and one class
    ("svm.ksvm(GRAM, [1, 1, 1, 1])", "InputError"),
    ("svm.cpa(trees, [1, 1, 1, 1], kernel=jkern.SST(0.4))", "InputError"),
    ("svm.dcd(np.ones((4, 2)), [-1, -1, -1, -1], key=key)", "InputError"),
    ("kda.fit(kda.KDA.init(key, np.eye(3), (0, 1), hidden=(4,)), np.ones((4, 3)), [0, 0, 0, 0], "
     "key=key)", "InputError"),
    # NaN and inf
    ("svm.ksvm(gram_with(np.nan), LABELS)", "InputError"),
    ("svm.ksvm(gram_with(np.inf), LABELS)", "InputError"),
    ("svm.dcd(poisoned(np.nan), LABELS, key=key)", "InputError"),
    ("jkern.RBF(0.5).gram(poisoned(np.inf))", "InputError"),
    ("kda.fit(kda.KDA.init(key, np.eye(3), (0, 1), hidden=(4,)), poisoned(np.nan), "
     "[0, 1, 0, 1], key=key)", "InputError"),
    # hyperparameters out of their domain
    ("jkern.SST(-1.0)", "InputError"),
    ("jkern.SST(0.0)", "InputError"),
    ("jkern.SST(float('nan'))", "InputError"),
    ("jkern.PTK(0.4, 5.0)", "InputError"),
    ("jkern.RBF(0.0)", "InputError"),
    ("jkern.Polynomial(0)", "InputError"),
    ("svm.ksvm(GRAM, LABELS, C=0.0)", "InputError"),
    ("svm.ksvm(GRAM, LABELS, C=float('inf'))", "InputError"),
    ("kda.fit(kda.KDA.init(key, np.eye(3), (0, 1), hidden=(4,)), np.ones((4, 3)), [0, 1, 0, 1], "
     "key=key, l2=float('nan'))", "InputError"),
    ("jkern.fit_nystrom(jkern.SST(0.4), trees, landmarks=7, key=key)", "InputError"),
    # shapes and empty sets
    ("jkern.train_kda(jkern.fit_nystrom(jkern.SST(0.4), trees, landmarks=2, key=key), trees, "
     "[0, 1, 0, 1], key=key, dev_fraction=0.1)", "InputError"),
    ("svm.ksvm(GRAM, LABELS).model.predict(np.ones((2, 3)))", "InputError"),
    ("svm.ksvm(np.zeros((0, 0)), [])", "InputError"),
    # trees
    ("parse_penn(b'(A x)')", "InputError"),
    ("parse_penn('(S (A a)')", "TreeParseError"),
    ("jkern.PTK(0.1, 0.4).gram([parse_penn(wide(3000))])", "TreeInputError"),
    # model files
    ("jkern.load(file_with(b'hello'))", "ModelFileError"),
    ("jkern.load(file_with(npy_bytes()))", "ModelFileError"),
    ("jkern.load(file_with(b'PK\\x03\\x04' + bytes(40)))", "ModelFileError"),
    # PA-I
    ("pa_fit(jkern.SparseRows.from_rows([{0: 0.5}, {1: 1.0}]), [1, -1], mode='splitting')",
     "InputError"),
    ("pa_fit(jkern.SparseRows.from_rows([{0: 1.0}, {1: 1.0}]), [1, 2])", "InputError"),
]


def cases() -> list[tuple[str, str, Callable[[], object]]]:
    """(code, expected error class name, runner) for every case."""
    return [(code, error, _run(code)) for code, error in CASES]


def outcome(run: Callable[[], object]) -> tuple[str, str]:
    """(the exception class name, its message) that `run` raises; ("returned", "") if it
    returns."""
    import re

    try:
        run()
    except Exception as err:  # noqa: BLE001 - the table reports whatever is raised
        # temporary directories differ from run to run: name the file alone
        message = re.sub(r"\S*[/\\](model\.\w+)", r"\1", str(err).splitlines()[0])
        return type(err).__name__, message
    return "returned", ""
