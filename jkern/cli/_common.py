"""What every command shares: the error type and exit codes, argument types, the kernel and
common flags (each declared once here: `--quiet`, `--seed`, `--dtype`, ...), and the readers
that turn bad input into exit-2 errors. Parsing only: the work is the library's public API
(imported inside functions, so `--help` stays light; the kernel names are plain tuples of
`jkern` itself). tests/test_cli_parses_only.py holds every module of the CLI to that."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from jkern import KERNEL_MEANINGS, KERNEL_NAMES, PARTIAL_TREE_KERNELS, WORD_VECTOR_KERNELS

EXIT_OK = 0
EXIT_COMPUTE = 1
EXIT_USAGE = 2

OUTPUT_SUFFIXES = (".npy", ".tsv")


class CLIError(Exception):
    """An error to report as one `jkern: error: ...` line, with an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, except that the line breaks a help text writes itself are
    kept: each of its lines is wrapped on its own, continuation lines indented (a list, one
    entry a line, as `--kernel`'s). Texts without a line break wrap as argparse wraps them."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        if "\n" not in text:
            return super()._split_lines(text, width)
        import textwrap

        lines: list[str] = []
        for line in text.splitlines():
            line = " ".join(line.split())
            lines.extend(textwrap.wrap(line, width, subsequent_indent="    ") or [""])
        return lines


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises `CLIError` instead of printing usage and exiting, and
    keeps the line breaks of help texts that write them (`HelpFormatter`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{message} (see '{self.prog} --help')", EXIT_USAGE)


# --------------------------------------------------------------------------- argument types


def _number(parse, ok, requirement: str):
    """An argparse type: `parse` the text, then require `ok` of the value."""
    noun = "an integer" if parse is int else "a number"

    def convert(text: str):
        try:
            x = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {noun}: {text!r}") from None
        if not ok(x):
            raise argparse.ArgumentTypeError(f"must be {requirement}, got {text!r}")
        return x

    return convert


positive_float = _number(float, lambda x: math.isfinite(x) and x > 0, "a finite number > 0")
finite_float = _number(float, math.isfinite, "finite")
positive_int = _number(int, lambda k: k >= 1, ">= 1")


# --------------------------------------------------------------------------- errors and I/O


def os_message(err: OSError) -> str:
    """`path: reason` for an OSError, without the `[Errno N]` noise."""
    reason = err.strerror or str(err)
    if err.filename is not None:
        return f"{err.filename}: {reason}"
    return reason


@contextlib.contextmanager
def input_errors() -> Iterator[None]:
    """Reading input inside this block: a malformed tree (`file:line:col: problem`), an
    unreadable file or an input error of the library becomes a usage error (exit 2)."""
    from jkern.errors import InputError
    from jkern.trees import TreeParseError

    try:
        yield
    except (TreeParseError, InputError) as err:
        raise CLIError(str(err), EXIT_USAGE) from err
    except OSError as err:
        raise CLIError(os_message(err), EXIT_USAGE) from err


@contextlib.contextmanager
def compute_errors() -> Iterator[None]:
    """Computing inside this block: the library's input errors (a tree a kernel cannot take,
    located at its file and line when `read_trees_or_exit` read it) become usage errors
    (exit 2), its numerical or other value errors (overflow) computation errors (exit 1)."""
    from jkern.errors import InputError, TreeInputError

    try:
        yield
    except TreeInputError as err:
        where = _TREE_LINES.get(id(err.tree)) if err.tree is not None else None
        message = str(err) if where is None else f"{where[0]}:{where[1]}: {err}"
        raise CLIError(message, EXIT_USAGE) from err
    except InputError as err:
        raise CLIError(str(err), EXIT_USAGE) from err
    except (FloatingPointError, ValueError, ArithmeticError) as err:
        raise CLIError(str(err), EXIT_COMPUTE) from err


@contextlib.contextmanager
def output_errors() -> Iterator[None]:
    """Writing output inside this block: an OSError becomes an output error (exit 1)."""
    try:
        yield
    except OSError as err:
        raise CLIError(os_message(err), EXIT_COMPUTE) from err


def read_trees_or_exit(path: str, encoding: str = "utf-8") -> list[Any]:
    """The trees of a file; exit 2 with `file:line:col: problem` on bad input (a byte not
    valid in `encoding` included)."""
    from jkern.trees import located_trees

    with input_errors():
        located = located_trees(path, encoding=encoding)
    if not located:
        raise CLIError(f"{path}: no trees in file")
    trees = [tree for _, tree in located]
    # the run's trees live as long as the command: their ids name them
    _TREE_LINES.update((id(tree), (path, line)) for line, tree in located)
    _KEPT.append(trees)
    return trees


# Where each tree read by `read_trees_or_exit` starts (file, line), by the tree's id; the
# trees are kept alive beside it so that no id is reused.
_TREE_LINES: dict[int, tuple[str, int]] = {}
_KEPT: list[list[Any]] = []


def read_labels_or_exit(path: str, column: str | None, encoding: str = "utf-8") -> list[str]:
    """The labels of a tree file (SVM-Light-TK labels or a TSV column); exit 2 without."""
    from jkern.trees import read_labels

    with input_errors():
        try:
            return read_labels(path, column, encoding=encoding)
        except ValueError as err:
            if "label column" in str(err):
                raise CLIError(f"{err}: use --label-column NAME") from err
            raise


def file_labels_or_none(path: str, column: str | None, encoding: str = "utf-8"
                        ) -> list[str] | None:
    """The labels of a tree file when it has some, found as `jkern train` finds them: the
    `column` given (then required), an SVM-Light-TK file's, or a TSV's `label` column; None
    for a file without (Penn trees, a TSV without a `label` column)."""
    if column is not None:
        return read_labels_or_exit(path, column, encoding)
    from jkern.errors import InputError
    from jkern.trees import TreeParseError, read_labels

    with input_errors():
        try:
            return read_labels(path, None, encoding=encoding)
        except TreeParseError:  # a bad byte, or a row without its label: bad input
            raise
        except InputError:  # no labels in the file
            return None


def check_output_path(out: str, suffixes: tuple[str, ...] | None = OUTPUT_SUFFIXES, *,
                      inputs: Iterable[str | os.PathLike[str] | None]) -> Path:
    """`--out`: a known suffix (any with `suffixes=None`), an existing folder, not a folder
    itself, and none of the command's `inputs` (the files it reads; None: a flag not given):
    the same file by `os.path.samefile`, through a symbolic or a hard link too, is a usage
    error before anything is read or written, so no command overwrites what it reads."""
    path = Path(out)
    for source in inputs:
        if source is not None and _same_file(path, source):
            raise CLIError(f"--out {out}: is the input file {os.fspath(source)}; writing it "
                           "would destroy the input: choose another output file")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        names = " or ".join(suffixes)
        raise CLIError(f"--out {out}: unknown output format {path.suffix or '(no suffix)'!r}; "
                       f"use a {names} file name")
    if not path.parent.is_dir():
        raise CLIError(f"--out {out}: directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise CLIError(f"--out {out}: is a directory")
    return path


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether `a` and `b` are one existing file (False when either cannot be examined)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # missing, unreadable, or a name with a NUL
        return False


def say(args: argparse.Namespace, text: str) -> None:
    """A summary line on stderr, unless --quiet."""
    if not args.quiet:
        print(f"jkern: {text}", file=sys.stderr)


def default_threads() -> int:
    """The cores this process may run on (`os.sched_getaffinity`, else `os.cpu_count()`)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def progress_on(args: argparse.Namespace) -> bool:
    """`--progress/--no-progress`; unset: on when stderr is a terminal and not --quiet."""
    if args.progress is not None:
        return bool(args.progress)
    return not args.quiet and sys.stderr.isatty()


def setup_jax(dtype: str) -> None:
    """float64 needs JAX's x64 mode, switched on before any array exists; the compile cache
    (off, with one warning line, where its folder cannot be created or trusted)."""
    import jax

    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    if os.environ.get("JKERN_NO_CACHE") != "1":
        import jkern

        jkern.enable_compilation_cache()


# --------------------------------------------------------------------------- shared flags


def add_kernel_arguments(p: argparse.ArgumentParser, required: bool = True) -> None:
    """The tree-kernel flags shared by the commands that build a kernel."""
    # one line per kernel of the registry (`jkern.KERNEL_NAMES`), each saying what it is
    p.add_argument("--kernel", "-k", required=required, choices=KERNEL_NAMES, metavar="NAME",
                   help="the tree kernel "
                        + ("(required; no default)" if required else
                           "(no default; required unless --projector gives one)") + ":\n"
                        + "\n".join(f"{name}: {KERNEL_MEANINGS[name]}" for name in KERNEL_NAMES))
    p.add_argument("--lam", type=positive_float, default=0.4, metavar="L",
                   help="lambda decay (default 0.4)")
    p.add_argument("--mu", type=positive_float, default=0.4, metavar="M",
                   help="mu decay of ptk/sptk/csptk (default 0.4; ignored by st/sst/sst-bow)")
    p.add_argument("--max-subseq", type=positive_int, default=None, metavar="K",
                   help="ptk/sptk/csptk: longest child subsequence (default: no limit, exact; "
                        "SVM-Light-TK as distributed uses 5; ignored by st/sst/sst-bow)")
    p.add_argument("--vectors", metavar="FILE",
                   help="sptk/csptk: word vectors in word2vec text format (required for "
                        "them; no default)")
    p.add_argument("--threshold", type=finite_float, default=None, metavar="T",
                   help="sptk/csptk: similarities below T count as 0 (default 0.0)")
    p.add_argument("--gamma", type=positive_float, default=None, metavar="G",
                   help="sptk/csptk: Gaussian similarity exp(G (cos - 1)) instead of the "
                        "thresholded cosine (positive definite; excludes --threshold; default: "
                        "off, the thresholded cosine)")
    p.add_argument("--normalize", action="store_true",
                   help="K(a,b)/sqrt(K(a,a) K(b,b)) (default off: raw values)")


def check_kernel_arguments(args: argparse.Namespace) -> None:
    """Usage checks of `add_kernel_arguments`' flags, before any work."""
    if args.kernel in WORD_VECTOR_KERNELS:
        if args.vectors is None:
            raise CLIError(f"--kernel {args.kernel} needs --vectors FILE (word2vec text format)")
        if args.gamma is not None and args.threshold is not None:
            raise CLIError("--threshold applies to the cosine similarity; --gamma replaces it")
    else:
        for flag, value in (("--vectors", args.vectors), ("--threshold", args.threshold),
                            ("--gamma", args.gamma)):
            if value is not None:
                raise CLIError(f"{flag} only applies to --kernel "
                               f"{' or '.join(WORD_VECTOR_KERNELS)}")


def kernel_from_arguments(args: argparse.Namespace) -> Any:
    """The kernel the flags describe, from the library's registry (the sptk vectors file is
    read here: exit 2 on a bad one)."""
    from jkern.kernels import kernel_by_name

    vocab = vectors = None
    if args.kernel in WORD_VECTOR_KERNELS:
        from jkern.data import load_word_vectors

        with input_errors():
            try:
                table = load_word_vectors(args.vectors, dtype="float64",
                                          encoding=args.encoding)
            except ValueError as err:  # a malformed file is bad input
                raise CLIError(str(err)) from err
        vocab, vectors = table.words, table.vectors
    with compute_errors():
        return kernel_by_name(args.kernel, lam=args.lam, mu=args.mu, max_subseq=args.max_subseq,
                              vocab=vocab, vectors=vectors, threshold=args.threshold,
                              gamma=args.gamma, normalize=args.normalize)


def kernel_name(args: argparse.Namespace) -> str:
    """How the summary line names the kernel."""
    parts = [f"lam={args.lam:g}"]
    if args.kernel in PARTIAL_TREE_KERNELS:
        parts.append(f"mu={args.mu:g}")
        parts.append(f"max_subseq={args.max_subseq}")
    if args.kernel in WORD_VECTOR_KERNELS:
        parts.append(f"threshold={args.threshold or 0.0:g}" if args.gamma is None
                     else f"gamma={args.gamma:g}")
    name = f"{args.kernel}({', '.join(parts)})"
    return f"normalized {name}" if args.normalize else name


def add_threads_argument(p: argparse.ArgumentParser) -> None:
    """--threads, defaulting to this machine's cores."""
    n = default_threads()
    p.add_argument("--threads", type=positive_int, default=n, metavar="N",
                   help="host threads computing Gram row blocks at once, each holding one "
                        f"block in memory (default: the cores this process may use, here {n}; "
                        "the result does not depend on it)")


def add_progress_argument(p: argparse.ArgumentParser) -> None:
    """--progress/--no-progress."""
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress on stderr for every long phase: Gram row blocks, solver "
                        "phases, cutting-plane iterations (default: on when stderr is a "
                        "terminal and not --quiet)")


def add_quiet_argument(p: argparse.ArgumentParser,
                       help: str = "no summary line on stderr (default off: one summary line)"
                       ) -> None:
    """--quiet/-q (`help`: what it silences, for a command whose summary says more)."""
    p.add_argument("--quiet", "-q", action="store_true", help=help)


def add_seed_argument(p: argparse.ArgumentParser, seeds: str, metavar: str | None = None
                      ) -> None:
    """--seed, an int defaulting to 0 (`seeds`: what it seeds, the help text)."""
    p.add_argument("--seed", type=int, default=0, metavar=metavar,
                   help=f"{seeds} (default 0)")


def add_dtype_argument(p: argparse.ArgumentParser, help: str) -> None:
    """--dtype float32|float64, defaulting to float64 (`help`: what it sets, with the
    default)."""
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64", help=help)


def encoding_name(text: str) -> str:
    """An argparse type: a known, ASCII-compatible text encoding (`--encoding`)."""
    from jkern.errors import InputError
    from jkern.trees import check_encoding

    try:
        check_encoding(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def add_encoding_argument(p: argparse.ArgumentParser) -> None:
    """--encoding, of every text file the command reads."""
    p.add_argument("--encoding", type=encoding_name, default="utf-8", metavar="ENC",
                   help="text encoding of the input files, e.g. latin-1 or cp1252; they are "
                        "decoded strictly, a byte not valid in it is an error at its "
                        "file:line:column (default utf-8; never guessed)")


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """--dtype, --encoding, --threads, --progress, --quiet."""
    add_dtype_argument(p, "kernel computation precision (default float64)")
    add_encoding_argument(p)
    add_threads_argument(p)
    add_progress_argument(p)
    add_quiet_argument(p)


def gram_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Gram options of `add_common_arguments`' flags."""
    return {"dtype": args.dtype, "threads": args.threads, "progress": progress_on(args)}
