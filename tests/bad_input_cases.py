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


def _ds_with(e1_token: str) -> str:
    """A ds-wordnet folder (`model.ds`): one pair (dog, pet), one mention 'dog , pet' whose
    e1_token column holds `e1_token`."""
    import gzip
    import os
    import tempfile

    root = os.path.join(tempfile.mkdtemp(), "model.ds")
    os.mkdir(root)
    for name, text in (("relations.txt", "NA\nhypernym\n"),
                       ("pairs.tsv", "pair\te1\te2\tsplit\trelations\tmentions\n"
                                     "0\tdog\tpet\ttrain\tNA\t1\n")):
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write(text)
    with gzip.open(os.path.join(root, "mentions.tsv.gz"), "wt", encoding="utf-8") as f:
        f.write("pair\te1\te2\tsplit\te1_token\te2_token\tsentence\n"
                f"0\tdog\tpet\ttrain\t{e1_token}\t2\tdog , pet\n")
    return root


def _saved_ksvm() -> str:
    """A temporary `model.npz` holding `svm.ksvm(GRAM, LABELS).model`."""
    import os
    import tempfile

    import jax.numpy as jnp

    import jkern
    from jkern import svm

    path = os.path.join(tempfile.mkdtemp(), "model.npz")
    jkern.save(path, svm.ksvm(jnp.asarray(GRAM), LABELS).model)
    return path


def _with_member(path: str, name: str, data: bytes) -> str:
    """The model file `path` again, its member `name` holding `data` (a tampered file)."""
    import zipfile

    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members[name] = data
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for n, content in members.items():
            z.writestr(n, content)
    return path


def _tampered(member: str, value: float) -> str:
    """`model.npz`, a saved `svm.ksvm(GRAM, LABELS).model` whose array `member` has its first
    entry set to `value` (the zip rewritten, as a file altered on disk)."""
    import io
    import zipfile

    path = _saved_ksvm()
    with zipfile.ZipFile(path) as z:
        a = np.load(io.BytesIO(z.read(f"{member}.npy")))
    a.reshape(-1)[0] = value
    buffer = io.BytesIO()
    np.save(buffer, a)
    return _with_member(path, f"{member}.npy", buffer.getvalue())


def _claiming(shape: tuple[int, ...]) -> str:
    """`model.npz`, a saved KSVM model whose `coef.npy` header claims `shape` (its 4 values
    unchanged)."""
    import io
    import zipfile

    path = _saved_ksvm()
    with zipfile.ZipFile(path) as z:
        data = z.read("coef.npy")
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False,
                                                  "shape": shape})
    return _with_member(path, "coef.npy", buffer.getvalue() + data[-32:])


def _header_of(text: bytes) -> str:
    """`model.npz`, a saved KSVM model whose `header.json` is `text` (deflated)."""
    return _with_member(_saved_ksvm(), "header.json", text)


def _blank_header(megabytes: int) -> str:
    """`model.npz`, a saved KSVM model whose `header.json` is `megabytes` MB of blanks,
    deflated (a file of a few hundred KiB; written a MB at a time)."""
    import zipfile

    path = _saved_ksvm()
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist() if n != "header.json"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("header.json", "w", force_zip64=True) as m:
            for _ in range(megabytes):
                m.write(b" " * 10**6)
        for name, content in members.items():
            z.writestr(name, content)
    return path


def _with_nan(model: object, field: str) -> object:
    """`model` with the first entry of its array `field` set to NaN (in memory)."""
    import equinox as eqx

    return eqx.tree_at(lambda m: getattr(m, field), model,
                       replace_fn=lambda a: a.at[(0,) * a.ndim].set(np.nan))


def _jkern_cli(command: str) -> object:
    """`jkern <command>`, run in a temporary folder holding `trees.tsv` (the four trees,
    labelled) and `model.npz` (a `jkern train --algo ksvm -k sst` model of them); raises
    the error the command reports on its one `jkern: error:` line (a `CLIError`)."""
    import os
    import shlex
    import tempfile

    import jkern
    from jkern.cli import build_parser

    folder, cwd = tempfile.mkdtemp(), os.getcwd()
    with open(os.path.join(folder, "trees.tsv"), "w", encoding="utf-8") as f:
        f.write("".join(f"{y:+d} |BT| {t} |ET|\n" for y, t in zip(LABELS, TREES)))
    jkern.save(os.path.join(folder, "model.npz"),
               jkern.train_kernel_svm(jkern.SST(0.4), _trees(), LABELS).model)
    os.chdir(folder)
    try:
        args = build_parser().parse_args(shlex.split(command))
        return args._run(args)
    finally:
        os.chdir(cwd)


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
                     file_with=_file_with, npy_bytes=_npy_bytes, ds_with=_ds_with)
        from jkern.sklearn import KernelSVC

        issue32: dict[str, object] = dict(
            tampered=_tampered, claiming=_claiming, header_of=_header_of,
            blank_header=_blank_header, with_nan=_with_nan, jkern_cli=_jkern_cli,
            KernelSVC=KernelSVC)
        # the code is this module's own text, shown in the docs
        return eval(code, {**scope, **issue32})

    return run


# (the input, as code; the error expected)
CASES: list[tuple[str, str]] = [
    # binary learners and one class
    ("svm.ksvm(GRAM, [1, 1, 1, 1])", "InputError"),
    ("svm.cpa(trees, [1, 1, 1, 1], kernel=jkern.SST(0.4), key=key)", "InputError"),
    ("svm.dcd(np.ones((4, 2)), [-1, -1, -1, -1], key=key)", "InputError"),
    ("kda.fit(np.ones((4, 3)), [0, 0, 0, 0], model=kda.KDA.init(np.eye(3), (0, 1), key=key, "
     "hidden=(4,)), key=key)", "InputError"),
    # NaN and inf
    ("svm.ksvm(gram_with(np.nan), LABELS)", "InputError"),
    ("svm.ksvm(gram_with(np.inf), LABELS)", "InputError"),
    ("svm.dcd(poisoned(np.nan), LABELS, key=key)", "InputError"),
    ("jkern.RBF(0.5).gram(poisoned(np.inf))", "InputError"),
    ("kda.fit(poisoned(np.nan), [0, 1, 0, 1], model=kda.KDA.init(np.eye(3), (0, 1), key=key, "
     "hidden=(4,)), key=key)", "InputError"),
    # hyperparameters out of their domain
    ("jkern.SST(-1.0)", "InputError"),
    ("jkern.SST(0.0)", "InputError"),
    ("jkern.SST(float('nan'))", "InputError"),
    ("jkern.PTK(0.4, 5.0)", "InputError"),
    ("jkern.RBF(0.0)", "InputError"),
    ("jkern.Polynomial(0)", "InputError"),
    ("svm.ksvm(GRAM, LABELS, C=0.0)", "InputError"),
    ("svm.ksvm(GRAM, LABELS, C=float('inf'))", "InputError"),
    ("kda.fit(np.ones((4, 3)), [0, 1, 0, 1], model=kda.KDA.init(np.eye(3), (0, 1), key=key, "
     "hidden=(4,)), key=key, l2=float('nan'))", "InputError"),
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
    ("pa_fit(jkern.SparseRows.from_rows([{0: 0.5}, {1: 1.0}]), [1, -1], mode='splitting', "
     "key=None)", "InputError"),
    ("pa_fit(jkern.SparseRows.from_rows([{0: 1.0}, {1: 1.0}]), [1, 2], key=None)",
     "InputError"),
    # issue 32: text readers
    ("jkern.trees.read_trees(file_with(b'(NN caf\\xc3\\xa9)\\n(NN caf\\xe9)\\n', '.txt'))",
     "TreeParseError"),
    ("jkern.pa.read_sparse(file_with(b'+1 1:1 # caf\\xe9\\n', '.svm'))", "TreeParseError"),
    ("jkern.trees.read_trees(file_with(b'(A b)\\n', '.txt'), encoding='utf-16')", "InputError"),
    ("jkern.trees.read_labels(file_with(b'tree\\tlabel\\n(A b)\\tx\\n(A c)\\n', '.tsv'))",
     "TreeParseError"),
    ("jkern.data.load_ds_wordnet(ds_with(e1_token='\u00b2'))", "InputError"),
    ("jkern.data.load_word_vectors(file_with('\u00b2 2\\ncat 0.1 0.2\\n'.encode(), '.txt'), "
     "format='word2vec')", "InputError"),
    # issue 32: outputs and model files
    ("jkern_cli('gram -k sst trees.tsv --out trees.tsv')", "CLIError"),
    ("jkern_cli('predict model.npz trees.tsv --out trees.tsv')", "CLIError"),
    ("jkern.load(tampered('coef', np.nan))", "ModelFileError"),
    ("jkern.load(tampered('intercept', np.inf))", "ModelFileError"),
    ("jkern.load(blank_header(300))", "ModelFileError"),
    ("jkern.load(header_of(b'[' * 100_000 + b']' * 100_000))", "ModelFileError"),
    ("jkern.load(claiming((10**12,)))", "ModelFileError"),
    ("jkern.save(file_with(b''), with_nan(svm.ksvm(GRAM, LABELS).model, 'coef'))", "InputError"),
    ("with_nan(svm.ksvm(GRAM, LABELS).model, 'coef').predict(GRAM)", "InputError"),
    ("svm.ksvm(GRAM, LABELS).model.predict(gram_with(np.nan))", "InputError"),
    ("KernelSVC().predict(trees)", "NotFittedError"),
    # issue 32: sparse ids and overflow
    ("jkern.pa.parse_sparse_lines(['+1 9223372036854775808:1'])", "TreeParseError"),
    ("jkern.pa.parse_sparse_lines(['+1 -3:1'])", "TreeParseError"),
    ("jkern.pa.parse_sparse_lines(['+1 2.5:1'])", "TreeParseError"),
    ("jkern.SparseRows.from_rows([{2**64: 1.0}])", "InputError"),
    ("jkern.SparseRows.from_coo([0], [1.5], [1.0], (1, 3))", "InputError"),
    ("pa_fit(jkern.SparseRows.from_rows([{1: 1e200}, {2: 1.0}]), [1, -1], mode='kernel', "
     "key=None)", "InputError"),
    ("pa_fit(jkern.SparseRows.from_rows([{1: 1e200}, {2: 1.0}]), [1, -1], mode='block', "
     "key=None)", "InputError"),
    ("pa_fit(jkern.SparseRows.from_rows([{1: 1e100}, {2: 1.0}]), [1, -1], degree=3, "
     "key=None)", "InputError"),
    ("svm.dcd(poisoned(1e200), LABELS, key=key)", "InputError"),
    ("jkern.Polynomial(2).gram(poisoned(1e200))", "InputError"),
    # issue 32: sizes
    ("jkern.SST(0.4).gram([parse_penn('(A ' * 1999 + 'x' + ')' * 1999)], max_memory='4M')",
     "MemoryBudgetError"),
    ("jkern.PTK(0.4, 0.4).diag([parse_penn('(A ' * 1999 + 'x' + ')' * 1999)], "
     "max_memory='4M')", "MemoryBudgetError"),
    ("jkern.SST(0.4).gram(trees, max_memory=50)", "MemoryBudgetError"),
    ("jkern.SST(0.4).gram(trees, max_memory='lots')", "InputError"),
    ("jkern.SST(0.4).gram(trees, block_size=-1)", "InputError"),
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
