"""The `jkern` command line: `jkern gram ...` (see docs/cli.md for the full reference).

Every failure prints exactly one line `jkern: error: <message>` on stderr and returns a
non-zero exit code, never a traceback:

- 2: usage or input errors (bad flags, unknown output suffix, missing or malformed input files;
  a malformed tree is reported as `file:line:column: problem`);
- 1: computation or output errors (overflow, a kernel rejecting its parameters, an
  unwritable output file).

Output files are written atomically (a temporary file in the same directory, then
`os.replace`), so a failed run leaves no output file behind.

Subcommands are registered in `_COMMANDS`; each is a `(configure, run)` pair where
`configure(parser)` adds its arguments and `run(args)` does the work and returns an exit code
(or raises `CLIError`).

>>> main(["gram", "--help"]) == 0  # doctest: +ELLIPSIS
usage: jkern gram ...
True
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

EXIT_OK = 0
EXIT_COMPUTE = 1
EXIT_USAGE = 2

KERNELS = ("st", "sst", "sst-bow", "ptk", "sptk")
OUTPUT_SUFFIXES = (".npy", ".tsv")


class CLIError(Exception):
    """An error to report as one `jkern: error: ...` line, with an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises `CLIError` instead of printing usage and exiting."""

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


_positive_float = _number(float, lambda x: math.isfinite(x) and x > 0, "a finite number > 0")
_finite_float = _number(float, math.isfinite, "finite")
_positive_int = _number(int, lambda k: k >= 1, ">= 1")


# --------------------------------------------------------------------------- helpers


def _os_message(err: OSError) -> str:
    """`path: reason` for an OSError, without the `[Errno N]` noise."""
    reason = err.strerror or str(err)
    if err.filename is not None:
        return f"{err.filename}: {reason}"
    return reason


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "unknown error"


def read_word_vectors(path: str | os.PathLike[str]) -> tuple[list[str], Any]:
    """Read word vectors in word2vec text format.

    An optional first line `count dim` (two integers), then one `word v1 v2 ... vd` line per
    word. Blank lines are skipped; a word that occurs twice keeps its first vector.

    Args:
        path: The file (UTF-8, or Latin-1 when it is not valid UTF-8).

    Returns:
        `(vocab, vectors)`: the words and a float64 NumPy array `[len(vocab), dim]`.

    Raises:
        ValueError: malformed file, message `path:line: problem`.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "v.txt"
    >>> _ = p.write_text("2 3\\ndog 1 0 0\\ncat 0 1 0\\n")
    >>> vocab, vectors = read_word_vectors(p)
    >>> vocab, vectors.shape
    (['dog', 'cat'], (2, 3))
    """
    import numpy as np

    source = str(path)
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    start, expected, dim = 0, None, None
    if lines:
        head = lines[0].split()
        if len(head) == 2 and all(tok.isdigit() for tok in head):
            expected, dim, start = int(head[0]), int(head[1]), 1
            if dim < 1:
                raise ValueError(f"{source}:1: header gives dimension {dim}, need >= 1")
    vocab: list[str] = []
    rows: list[list[float]] = []
    seen: set[str] = set()
    for number, line in enumerate(lines[start:], start + 1):
        parts = line.split()
        if not parts:
            continue
        if dim is None:
            dim = len(parts) - 1
            if dim < 1:
                raise ValueError(f"{source}:{number}: expected 'word v1 v2 ...', got {line!r}")
        if len(parts) < dim + 1:
            raise ValueError(
                f"{source}:{number}: expected a word and {dim} values, got {len(parts)} fields"
            )
        word = " ".join(parts[: len(parts) - dim])
        try:
            values = [float(v) for v in parts[len(parts) - dim :]]
        except ValueError:
            raise ValueError(
                f"{source}:{number}: a vector value is not a number (expected {dim} values "
                "after the word)"
            ) from None
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"{source}:{number}: vector of {word!r} is not finite")
        if word in seen:
            continue
        seen.add(word)
        vocab.append(word)
        rows.append(values)
    if not vocab:
        raise ValueError(f"{source}: no word vectors found")
    if expected is not None:
        n_rows = sum(1 for line in lines[1:] if line.split())
        if n_rows != expected:
            raise ValueError(f"{source}:1: header says {expected} vectors, file has {n_rows}")
    return vocab, np.asarray(rows, dtype=np.float64)


def _check_output_path(out: str) -> Path:
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise CLIError(
            f"--out {out}: unknown output format {path.suffix or '(no suffix)'!r}; "
            "use a .npy or .tsv file name"
        )
    parent = path.parent
    if not parent.is_dir():
        raise CLIError(f"--out {out}: directory {str(parent)!r} does not exist")
    if path.is_dir():
        raise CLIError(f"--out {out}: is a directory")
    return path


def _format_tsv(matrix: Any) -> str:
    import numpy as np

    digits = 9 if matrix.dtype == np.float32 else 17
    spec = f".{digits}g"
    return "".join(
        "\t".join(format(float(x), spec) for x in row) + "\n" for row in matrix
    )


def write_matrix(path: Path, matrix: Any) -> None:
    """Write `matrix` as `.npy` or `.tsv`, atomically (see `write_atomic`).

    TSV values round-trip exactly: 17 significant digits for float64, 9 for float32.
    """
    import numpy as np

    if path.suffix.lower() == ".npy":
        write_atomic(path, lambda f: np.save(f, matrix, allow_pickle=False))
    else:
        write_atomic(path, lambda f: f.write(_format_tsv(matrix).encode("ascii")))


def write_atomic(path: Path, write: Callable[[BinaryIO], Any]) -> None:
    """Call `write` on a temporary binary file in `path`'s folder, then move it to `path`
    (`os.replace`), so a failed write leaves no partial file behind."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------- jkern gram


def add_kernel_arguments(p: argparse.ArgumentParser, required: bool = True) -> None:
    """The tree-kernel flags shared by the commands that build a kernel."""
    p.add_argument("--kernel", "-k", required=required, choices=KERNELS,
                   help="tree kernel: st (subtree), sst (subset tree), sst-bow (SST plus "
                        "equal leaves), ptk (partial tree), sptk (smoothed partial tree)")
    p.add_argument("--lam", type=_positive_float, default=0.4, metavar="L",
                   help="lambda decay (default 0.4)")
    p.add_argument("--mu", type=_positive_float, default=0.4, metavar="M",
                   help="mu decay of ptk/sptk (default 0.4; ignored by st/sst/sst-bow)")
    p.add_argument("--max-subseq", type=_positive_int, default=None, metavar="K",
                   help="ptk/sptk: longest child subsequence (default: no limit, exact; "
                        "SVM-Light-TK as distributed uses 5; ignored by st/sst/sst-bow)")
    p.add_argument("--vectors", metavar="FILE",
                   help="sptk (required): word vectors in word2vec text format")
    p.add_argument("--threshold", type=_finite_float, default=None, metavar="T",
                   help="sptk: word similarities below T count as 0 (default 0.0)")
    p.add_argument("--gamma", type=_positive_float, default=None, metavar="G",
                   help="sptk: Gaussian word similarity exp(G (cos - 1)) instead of the "
                        "thresholded cosine (positive definite; excludes --threshold)")
    p.add_argument("--normalize", action="store_true",
                   help="K(a,b)/sqrt(K(a,a) K(b,b))")


def check_kernel_arguments(args: argparse.Namespace) -> None:
    """Usage checks of `add_kernel_arguments`' flags (before any work)."""
    if args.kernel == "sptk":
        if args.vectors is None:
            raise CLIError("--kernel sptk needs --vectors FILE (word2vec text format)")
        if args.gamma is not None and args.threshold is not None:
            raise CLIError("--threshold applies to the cosine similarity; --gamma replaces it")
        if args.threshold is None:
            args.threshold = 0.0
    else:
        for flag, value in (("--vectors", args.vectors), ("--threshold", args.threshold),
                            ("--gamma", args.gamma)):
            if value is not None:
                raise CLIError(f"{flag} only applies to --kernel sptk")


def kernel_from_arguments(args: argparse.Namespace) -> Any:
    """The kernel the flags describe (reads the sptk vectors file; exit 2 on a bad one)."""
    vocab = vectors = None
    if args.kernel == "sptk":
        try:
            vocab, vectors = read_word_vectors(args.vectors)
        except OSError as err:
            raise CLIError(_os_message(err), EXIT_USAGE) from err
        except ValueError as err:
            raise CLIError(str(err), EXIT_USAGE) from err
    try:
        return _build_kernel(args, vocab, vectors)
    except ValueError as err:
        raise CLIError(str(err), EXIT_COMPUTE) from err


def setup_jax(dtype: str) -> None:
    """float64 needs JAX's x64 mode, switched on before any array exists; compile cache."""
    import jax

    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    if os.environ.get("JKERN_NO_CACHE") != "1":
        from jkern._cache import enable_compilation_cache

        enable_compilation_cache()


def _configure_gram(p: argparse.ArgumentParser) -> None:
    add_kernel_arguments(p)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64",
                   help="compute precision (default float64, for exact values; float32 is "
                        "faster but has ~7 digits and overflows on big trees or lam/mu near 1, "
                        "which is reported as an error)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: on when stderr is a terminal "
                        "and not --quiet)")
    p.add_argument("--threads", type=_positive_int, default=2, metavar="N",
                   help="host threads computing row blocks at once (default 2)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no summary line on stderr")
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="output matrix: FILE.npy (NumPy) or FILE.tsv (one row per line, "
                        "tab-separated, exact decimal)")
    p.add_argument("trees", metavar="TREES",
                   help="trees, one per line: Penn brackets, SVM-Light-TK |BT| ... |ET| lines, "
                        "or a TSV with a 'tree' column (auto-detected)")
    p.add_argument("trees2", metavar="TREES2", nargs="?",
                   help="second tree file: output the |TREES| x |TREES2| block instead of "
                        "the square Gram of TREES")


def _kernel_name(args: argparse.Namespace) -> str:
    parts = [f"lam={args.lam:g}"]
    if args.kernel in ("ptk", "sptk"):
        parts.append(f"mu={args.mu:g}")
        parts.append(f"max_subseq={args.max_subseq}")
    if args.kernel == "sptk":
        parts.append(f"threshold={args.threshold:g}" if args.gamma is None
                     else f"gamma={args.gamma:g}")
    name = f"{args.kernel}({', '.join(parts)})"
    return f"normalized {name}" if args.normalize else name


def _build_kernel(args: argparse.Namespace, vocab: Any, vectors: Any) -> Any:
    import jkern

    if args.kernel == "st":
        kernel = jkern.ST(args.lam)
    elif args.kernel == "sst":
        kernel = jkern.SST(args.lam)
    elif args.kernel == "sst-bow":
        kernel = jkern.SSTBow(args.lam)
    elif args.kernel == "ptk":
        kernel = jkern.PTK(args.lam, args.mu, max_subseq=args.max_subseq)
    else:
        kernel = jkern.SPTK(vocab, vectors, args.lam, args.mu, threshold=args.threshold,
                            gamma=args.gamma, max_subseq=args.max_subseq)
    return jkern.Normalized(kernel) if args.normalize else kernel


@contextlib.contextmanager
def input_errors() -> Iterator[None]:
    """Reading input inside this block: a malformed tree (`file:line:col: problem`) or an
    unreadable file becomes a usage error (exit 2)."""
    from jkern.trees import TreeParseError

    try:
        yield
    except TreeParseError as err:
        raise CLIError(str(err), EXIT_USAGE) from err
    except OSError as err:
        raise CLIError(_os_message(err), EXIT_USAGE) from err


def read_trees_or_exit(path: str) -> list[Any]:
    """The trees of a file; exit 2 with `file:line:col: problem` on bad input."""
    from jkern.trees import read_trees

    with input_errors():
        trees = read_trees(path)
    if not trees:
        raise CLIError(f"{path}: no trees in file")
    return trees


def _run_gram(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    # --- usage checks, before any work
    check_kernel_arguments(args)
    out = _check_output_path(args.out)
    setup_jax(args.dtype)

    # --- inputs (exit 2 on any problem)
    trees1 = read_trees_or_exit(args.trees)
    trees2 = None if args.trees2 is None else read_trees_or_exit(args.trees2)
    kernel = kernel_from_arguments(args)

    # --- computation (exit 1)
    import numpy as np

    import jkern

    progress = args.progress
    if progress is None:
        progress = (not args.quiet) and sys.stderr.isatty()
    try:
        g = jkern.gram(kernel, trees1, trees2, dtype=args.dtype, progress=progress,
                       threads=args.threads)
        matrix = np.asarray(g)
        if not np.all(np.isfinite(matrix)):  # the kernels check this; be sure anyway
            raise FloatingPointError(
                f"Gram matrix has inf/NaN values in {args.dtype}; use --dtype float64 "
                "and/or --normalize"
            )
    except (FloatingPointError, ValueError, ArithmeticError) as err:
        raise CLIError(str(err), EXIT_COMPUTE) from err

    # --- output (exit 1)
    try:
        write_matrix(out, matrix)
    except OSError as err:
        raise CLIError(_os_message(err), EXIT_COMPUTE) from err

    if not args.quiet:
        n, m = matrix.shape
        print(
            f"jkern: gram {n}x{m} {_kernel_name(args)} {args.dtype} -> {args.out} "
            f"in {time.perf_counter() - t0:.2f} s",
            file=sys.stderr,
        )
    return EXIT_OK


# --------------------------------------------------------------------------- entry point

_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                           Callable[[argparse.Namespace], int]]] = {
    "gram": ("compute a tree-kernel Gram matrix", _configure_gram, _run_gram),
}


def build_parser() -> argparse.ArgumentParser:
    """The `jkern` argument parser, one subparser per command in `_COMMANDS`."""
    from jkern import __version__

    parser = _Parser(prog="jkern", description="Tree kernels in JAX.")
    parser.add_argument("--version", action="version", version=f"jkern {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    from ._cli_convert import COMMANDS as CONVERT
    from ._cli_models import COMMANDS as MODELS

    for name, (summary, configure, run) in {**_COMMANDS, **MODELS, **CONVERT}.items():
        p = sub.add_parser(name, help=summary, description=summary)
        configure(p)
        p.set_defaults(_run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `jkern` command with `argv` (default `sys.argv[1:]`); return the exit code.

    Set `JKERN_DEBUG=1` to get Python tracebacks instead of one-line errors.
    """
    debug = os.environ.get("JKERN_DEBUG") == "1"
    try:
        args = build_parser().parse_args(None if argv is None else list(argv))
        return args._run(args)
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except CLIError as err:
        if debug and err.__cause__ is not None:
            raise
        _report(str(err))
        return err.code
    except KeyboardInterrupt:
        _report("interrupted")
        return 130
    except Exception as err:  # never a traceback
        if debug:
            raise
        _report(f"{type(err).__name__}: {err}")
        return EXIT_COMPUTE


def _report(message: str) -> None:
    print(f"jkern: error: {_one_line(message)}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
