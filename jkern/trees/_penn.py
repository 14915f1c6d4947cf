"""Penn Treebank bracket notation: `(S (NP (DT the)(NN dog))(VP (VBZ barks)))`.

The parser is iterative (an explicit stack, no recursion), so arbitrarily deep or wide
trees parse in time linear in the text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

from ..errors import InputError
from ._errors import TreeParseError, position, quote
from ._textfile import DEFAULT_ENCODING, read_lines
from ._tree import Tree

# A token is "(", ")" or a run of anything else that is not whitespace: labels and words
# such as `PRP$ -NONE- -LRB- `` '' , . : $ *T*-1 #^QP` are all plain tokens.
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse_penn(text: str, *, source: str = "<string>", line: int = 1, column: int = 1) -> Tree:
    """Parse exactly one tree in Penn bracket notation.

    A bare word is a leaf; `(X)` (a bracketed label without children) is a leaf labelled
    `X`. The PTB convention of a label-less root wrapper with one child, `( (S ...))`,
    returns the child; a labelled root such as `(ROOT (S ...))` is kept.

    Args:
        text: The tree; it may span several lines.
        source: Name used in error messages (usually the file path).
        line: Line number of `text[0]` in `source` (1-based).
        column: Column number of `text[0]` in `source` (1-based); only the first line of
            `text` is shifted by it.

    Returns:
        The tree, nodes numbered in preorder.

    Raises:
        TreeParseError: unbalanced brackets, an empty tree, a label-less node other than
            the root wrapper, or text before or after the tree; located at the offending
            character (for a missing `)`, at the unclosed `(`).

    >>> parse_penn("(S (NP (PRP$ my)(NN dog))(VP barks))").to_penn()
    '(S (NP (PRP$ my)(NN dog))(VP barks))'
    >>> parse_penn("( (S (nsubj)(VBZ runs)))").labels
    ('S', 'nsubj', 'VBZ', 'runs')
    >>> try:
    ...     parse_penn("(S x) y", source="a.txt", line=4)
    ... except TreeParseError as err:
    ...     print(err)
    a.txt:4:7: text after the tree: 'y'
    """

    if not isinstance(text, str):
        hint = " (decode it first: text.decode('utf-8'))" if isinstance(
            text, (bytes, bytearray)) else ""
        raise InputError(f"parse_penn takes the tree as a str, got {type(text).__name__}"
                         f"{hint}")

    def fail(offset: int, problem: str) -> TreeParseError:
        return TreeParseError(source, *position(text, offset, line, column), problem)

    labels: list[str | None] = []
    children: list[list[int]] = []
    stack: list[int] = []  # open nodes
    opens: list[int] = []  # offset of each open node's "("
    expect_label = False
    finished = False
    for match in _TOKEN.finditer(text):
        tok, off = match.group(), match.start()
        if finished:
            if tok == ")":
                raise fail(off, "unmatched ')'")
            if tok == "(":
                raise fail(off, "a second tree starts after the first one")
            raise fail(off, f"text after the tree: {quote(tok)}")
        if expect_label:
            expect_label = False
            if tok != "(" and tok != ")":
                labels[stack[-1]] = tok
                continue
            if len(stack) > 1:  # only the root may be a label-less wrapper
                if tok == ")":
                    raise fail(opens[-1], "empty brackets '()' inside a tree")
                raise fail(opens[-1], "bracket without a label")
        if tok == "(":
            i = len(labels)
            labels.append(None)
            children.append([])
            if stack:
                children[stack[-1]].append(i)
            stack.append(i)
            opens.append(off)
            expect_label = True
        elif tok == ")":
            if not stack:
                raise fail(off, "unmatched ')'")
            i, opened = stack.pop(), opens.pop()
            if labels[i] is None:  # the root: a wrapper around exactly one tree
                if not children[i]:
                    raise fail(opened, "empty tree '()'")
                if len(children[i]) != 1:
                    raise fail(opened, "a root without a label must wrap exactly one tree")
            finished = not stack
        else:
            if not stack:
                raise fail(off, f"text outside brackets: {quote(tok)}")
            labels.append(tok)
            children.append([])
            children[stack[-1]].append(len(labels) - 1)
    if stack:
        raise fail(opens[-1], "unclosed '(' (missing ')')")
    if not labels:
        raise fail(0, "empty tree: no brackets found")
    if labels[0] is None:  # drop the wrapper: node 1 is its only child, the new root
        return Tree(
            tuple(lab for lab in labels[1:] if lab is not None),
            tuple(tuple(c - 1 for c in kids) for kids in children[1:]),
        )
    return Tree(
        tuple(lab for lab in labels if lab is not None),
        tuple(tuple(kids) for kids in children),
    )


def iter_penn(lines: Iterable[str], *, source: str) -> Iterator[tuple[int, Tree]]:
    """Parse a treebank: one tree per line, or trees spanning several lines.

    Lines are accumulated until their brackets balance; blank lines between trees are
    skipped.

    Args:
        lines: The text, line by line (with or without line endings).
        source: Name used in error messages (usually the file path).

    Yields:
        `(line, tree)`: the 1-based line where each tree starts, and the tree.

    Raises:
        TreeParseError: as `parse_penn`, located at the right line of `source`.

    >>> lines = ["(S (NP x)", "   (VP y))", "", "(A b)"]
    >>> [(n, t.to_penn()) for n, t in iter_penn(lines, source="tb")]
    [(1, '(S (NP x)(VP y))'), (4, '(A b)')]
    """
    buf: list[str] = []
    start = 0
    depth = 0
    for number, raw in enumerate(lines, 1):
        if not buf:
            if not raw.strip():
                continue
            start = number
        buf.append(raw if raw.endswith("\n") else raw + "\n")
        depth += raw.count("(") - raw.count(")")
        if depth <= 0:
            yield start, parse_penn("".join(buf), source=source, line=start)
            buf, depth = [], 0
    if buf:
        yield start, parse_penn("".join(buf), source=source, line=start)


def read_penn(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING) -> list[Tree]:
    """Read a Penn treebank file (see `iter_penn`); errors name `path`.

    The file is decoded strictly in `encoding` (default UTF-8; e.g. `"latin-1"`): a byte
    not valid in it is a `TreeParseError` at `path:line:column`, never guessed around.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "tb.mrg"
    >>> _ = p.write_text("( (S (NP x)\\n     (VP y)))\\n(A b)\\n")
    >>> [t.to_penn() for t in read_penn(p)]
    ['(S (NP x)(VP y))', '(A b)']
    """
    return [tree for _, tree in iter_penn(read_lines(path, encoding=encoding),
                                          source=str(path))]
