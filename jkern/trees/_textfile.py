"""Text files in: one decoding rule for every reader of jkern (issue 32).

Every reader decodes its file strictly in one encoding, UTF-8 unless the caller names another
(`encoding=` in the library, `--encoding` on the command line). jkern never guesses: a byte
that is not valid in that encoding is a `TreeParseError` located at `file:line:column` that
names the byte and the option to pass, never text decoded some other way. (A Latin-1
fallback would turn `café` into `cafÃ©` in a file that is UTF-8 but for one stray byte.)

Integers in files are read by `parse_uint`: ASCII digits only (`str.isdigit` also accepts
`²`, which `int` then refuses).
"""

from __future__ import annotations

import codecs
import gzip
import os
import re
import zlib
from collections.abc import Iterator

from ..errors import InputError
from ._errors import TreeParseError

DEFAULT_ENCODING = "utf-8"
_UINT = re.compile(r"[0-9]+")  # ASCII digits only ([0-9] in `re` is ASCII)
_ASCII = bytes(range(128))


def check_encoding(encoding: object) -> str:
    """The codec name of `encoding`, which must be a known, ASCII-compatible text encoding.

    Raises:
        InputError: not a str, an unknown codec, or one in which ASCII bytes are not ASCII
            characters (UTF-16, UTF-32): jkern's formats are delimited by ASCII characters.

    >>> check_encoding("latin-1"), check_encoding("UTF8")
    ('iso8859-1', 'utf-8')
    >>> try:
    ...     check_encoding("utf-16")
    ... except InputError as err:
    ...     print(err)
    encoding 'utf-16' is not ASCII-compatible: use e.g. 'utf-8', 'latin-1' or 'cp1252'
    """
    if not isinstance(encoding, str):
        raise InputError("encoding must be the name of a text encoding such as 'utf-8' or "
                         f"'latin-1', got {type(encoding).__name__}")
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise InputError(f"unknown encoding {encoding!r}: use e.g. 'utf-8', 'latin-1' or "
                         "'cp1252'") from None
    try:
        compatible = _ASCII.decode(name) == _ASCII.decode("ascii")
    except (LookupError, UnicodeError, TypeError):  # rot13, hex: not text encodings
        compatible = False
    if not compatible:
        raise InputError(f"encoding {encoding!r} is not ASCII-compatible: use e.g. 'utf-8', "
                         "'latin-1' or 'cp1252'")
    return name


def _codec(name: str, first: bool) -> str:
    # UTF-8 files may start with a byte-order mark: dropped, as editors do
    return "utf-8-sig" if name == "utf-8" and first else name


def decode_error(source: str, data: bytes, err: UnicodeDecodeError, encoding: str,
                 line: int = 1) -> TreeParseError:
    """The located error for `err`, raised decoding `data` (whose first byte is at the start
    of line `line` of `source`): names the byte and the option to pass."""
    start = err.start
    line_start = data.rfind(b"\n", 0, start) + 1
    line += data.count(b"\n", 0, start)
    column = len(data[line_start:start].decode(encoding, errors="replace")) + 1
    byte = data[start] if start < len(data) else 0
    what = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding
    problem = (f"byte 0x{byte:02X} is not valid {what} ({err.reason}): name the file's "
               "encoding, e.g. encoding='latin-1' (command line: --encoding latin-1); "
               "jkern does not guess encodings")
    return TreeParseError(source, line, column, problem)


def read_lines(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING) -> list[str]:
    """A text file's lines, without line endings (`\\n` or `\\r\\n`).

    Decoded strictly in `encoding` (a leading UTF-8 byte-order mark is dropped); there is no
    fallback to another encoding. Only `\\n` ends a line, so line numbers match editors.

    Args:
        path: The file.
        encoding: Its text encoding (default UTF-8), e.g. `"latin-1"`.

    Raises:
        TreeParseError: a byte not valid in `encoding`, located as `path:line:column`.
        InputError: an unknown or not ASCII-compatible `encoding`.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = p.write_bytes(b"(NP (NN caf\\xc3\\xa9))\\n(NP (NN caf\\xe9))\\n")
    >>> try:
    ...     read_lines(p)
    ... except TreeParseError as err:
    ...     print(err.line, err.column, err.problem.split(" (")[0])
    2 12 byte 0xE9 is not valid UTF-8
    >>> _ = p.write_bytes(b"(NP (NN caf\\xe9))\\n")
    >>> read_lines(p, encoding="latin-1")
    ['(NP (NN café))']
    """
    name = check_encoding(encoding)
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode(_codec(name, True))
    except UnicodeDecodeError as err:
        raise decode_error(str(path), data, err, _codec(name, True)) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [s[:-1] if s.endswith("\r") else s for s in lines]


def iter_lines(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING
               ) -> Iterator[tuple[int, str]]:
    """`(line number, text)` of each line of a file, read as it goes (gzipped when the name
    ends in `.gz`); the text without its `\\n` or `\\r\\n`. Decoded as `read_lines` does.

    Raises:
        TreeParseError: a byte not valid in `encoding`, located as `path:line:column`.
        InputError: an unknown or not ASCII-compatible `encoding`; a truncated gzip file, or
            one that is not gzip data.
        OSError: the file cannot be read.
    """
    name = check_encoding(encoding)
    source = str(path)
    opened = (gzip.open(path, "rb") if source.endswith(".gz") else open(path, "rb"))
    number = 0
    try:
        with opened as f:
            for number, raw in enumerate(f, 1):
                codec = _codec(name, number == 1)
                try:
                    text = raw.decode(codec)
                except UnicodeDecodeError as err:
                    raise decode_error(source, raw, err, codec, number) from None
                if text.endswith("\n"):
                    text = text[:-1]
                yield number, text[:-1] if text.endswith("\r") else text
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise InputError(f"{source}:{number + 1}: the gzip file is truncated or corrupt "
                         f"({err})") from None


def parse_uint(text: str) -> int | None:
    """`text` as a non-negative int when it is ASCII digits only and at most 2^63 - 1 (an
    id, count or index of any file fits int64), else None. (`int` alone would refuse more
    than 4,300 digits with a bare ValueError.)

    >>> parse_uint("42"), parse_uint("\\u00b2"), parse_uint("-1"), parse_uint(" 7")
    (42, None, None, None)
    >>> parse_uint("09223372036854775807"), parse_uint(str(2**63)), parse_uint("9" * 5000)
    (9223372036854775807, None, None)
    """
    if not _UINT.fullmatch(text) or len(text.lstrip("0")) > 19:
        return None
    value = int(text)
    return value if value < 2**63 else None
