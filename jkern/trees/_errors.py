"""`TreeParseError`: one error type, with a `file:line:column` location, for every reader."""

from __future__ import annotations

from ..errors import InputError


class TreeParseError(InputError):
    """Malformed tree input, located at a 1-based line and column of a named source.

    `str(err)` is a single line `source:line:column: problem`, the shape compilers and
    editors understand, so command-line tools can print it as is.

    Attributes:
        source: Where the text came from: a file path, or `"<string>"`.
        line: 1-based line of the offending character.
        column: 1-based column (in characters) of the offending character.
        problem: What is wrong, in a few words.

    >>> err = TreeParseError("qc.tsv", 3, 17, "unmatched ')'")
    >>> str(err)
    "qc.tsv:3:17: unmatched ')'"
    >>> isinstance(err, InputError), isinstance(err, ValueError), err.line, err.column
    (True, True, 3, 17)
    """

    source: str
    line: int
    column: int
    problem: str

    def __init__(self, source: str, line: int, column: int, problem: str) -> None:
        self.source = str(source)
        self.line = int(line)
        self.column = int(column)
        self.problem = " ".join(str(problem).splitlines())
        super().__init__(f"{self.source}:{self.line}:{self.column}: {self.problem}")

    def __reduce__(self) -> tuple[type, tuple[str, int, int, str]]:
        return (type(self), (self.source, self.line, self.column, self.problem))


def position(text: str, offset: int, line: int = 1, column: int = 1) -> tuple[int, int]:
    """The (line, column) of `text[offset]`, where `text[0]` sits at (`line`, `column`).

    Only the first line of `text` is shifted by `column`; later lines start at column 1.

    >>> position("(S\\n  (NP x))", 5, line=10, column=7)
    (11, 3)
    >>> position("(S x)", 3, line=2, column=5)
    (2, 8)
    """
    newlines = text.count("\n", 0, offset)
    if newlines == 0:
        return line, column + offset
    return line + newlines, offset - text.rfind("\n", 0, offset)


def quote(token: str, limit: int = 20) -> str:
    """A short, one-line `repr` of an offending piece of text, for error messages.

    >>> quote("junk")
    "'junk'"
    >>> quote("x" * 30)
    "'xxxxxxxxxxxxxxxxxxxx'..."
    """
    return repr(token[:limit]) + ("..." if len(token) > limit else "")
