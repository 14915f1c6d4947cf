"""The `jkern` command line (see docs/cli.md for the full reference).

Every failure prints exactly one line `jkern: error: <message>` on stderr and returns a
non-zero exit code, never a traceback:

- 2: usage or input errors (bad flags, unknown output suffix, missing or malformed input files;
  a malformed tree is reported as `file:line:column: problem`);
- 1: computation or output errors (overflow, a kernel rejecting its parameters, an
  unwritable output file).

Output files are written atomically (a temporary file in the same directory, then
`os.replace`), so a failed run leaves no output file behind.

One module per command (`_gram`, `_nystrom`, `_train`, `_predict`, `_convert`, `_parse`,
`_ds`, `_pa`),
each with a `SUMMARY`, `configure(parser)` and `run(args) -> exit code`; they parse arguments
and call the library, and share only `_common`.

>>> main(["gram", "--help"]) == 0  # doctest: +ELLIPSIS
usage: jkern gram ...
True
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from . import _convert, _ds, _gram, _nystrom, _pa, _parse, _predict, _train
from ._common import EXIT_COMPUTE, CLIError, Parser

COMMANDS = {"gram": _gram, "nystrom": _nystrom, "train": _train, "predict": _predict,
            "convert": _convert, "parse": _parse, "ds": _ds, "pa": _pa}


def build_parser() -> argparse.ArgumentParser:
    """The `jkern` argument parser, one subparser per command of `COMMANDS`."""
    from jkern import __version__

    parser = Parser(prog="jkern", description="Tree kernels in JAX.")
    parser.add_argument("--version", action="version", version=f"jkern {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.SUMMARY, description=command.SUMMARY)
        command.configure(p)
        p.set_defaults(_run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `jkern` command with `argv` (default `sys.argv[1:]`); return the exit code.

    Set `JKERN_DEBUG=1` to get Python tracebacks instead of one-line errors.
    """
    debug = os.environ.get("JKERN_DEBUG") == "1"
    try:
        args = build_parser().parse_args(None if argv is None else list(argv))
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
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


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """jkern's own warnings (`jkern.errors.CacheWarning`, ...) as one `jkern: warning:` line;
    others as Python prints them."""
    if category.__module__.startswith("jkern"):
        text = " ".join(str(message).split())
        print(f"jkern: warning: {text}", file=sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def _report(message: str) -> None:
    text = " ".join(str(message).split()) or "unknown error"
    print(f"jkern: error: {text}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
