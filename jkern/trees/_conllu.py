"""CoNLL-U dependency parses, and their GRCT / LCT / LOCT tree shapes.

The shapes are those of Croce, Moschitti & Basili (2011), "Structured lexical similarity
via convolution kernels on dependency trees". Node labels: the relation is the full DEPREL
(`nsubj:pass`; the root word's is `root`), the PoS node is the UPOS tag, and the lexical
node is `lemma::p'`, with the lemma lowercased (the form when the lemma is `_`) and `p'`
a coarse PoS: NOUN, PROPN -> `n`; VERB, AUX -> `v`; ADJ -> `j`; ADV -> `r`; any other UPOS
lowercased (`the::det`). So that every tree prints as Penn brackets and reads back, labels
have `(` and `)` replaced by `-LRB-` and `-RRB-` and runs of whitespace by `_`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Sequence

from ._errors import TreeParseError, quote
from ._textfile import DEFAULT_ENCODING, parse_uint, read_lines
from ._tree import Tree

_FIELDS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
_ID, _UPOS, _HEAD, _DEPREL = 0, 3, 6, 7
_SKIPPED_ID = re.compile(r"[0-9]+-[0-9]+|[0-9]+\.[0-9]+")
_COARSE = {"NOUN": "n", "PROPN": "n", "VERB": "v", "AUX": "v", "ADJ": "j", "ADV": "r"}
_SPACE = re.compile(r"\s+")


@dataclasses.dataclass(frozen=True)
class Token:
    """One word of a CoNLL-U sentence (the columns the tree shapes use).

    Attributes:
        id: 1-based position in the sentence.
        form: The word as written.
        lemma: Its lemma (`_` when unknown).
        upos: Universal PoS tag.
        xpos: Language-specific PoS tag.
        head: `id` of the head word; 0 for the root.
        deprel: Dependency relation to the head (`nsubj`, `nsubj:pass`, ...).

    >>> Token(1, "Dogs", "dog", "NOUN", "NNS", 0, "root").lemma
    'dog'
    """

    id: int
    form: str
    lemma: str
    upos: str
    xpos: str
    head: int
    deprel: str


class _SentenceError(Exception):
    """A structural problem: at token `index` (field `field`), or sentence-wide if None."""

    def __init__(self, index: int | None, field: int, problem: str) -> None:
        super().__init__(problem)
        self.index, self.field, self.problem = index, field, problem


def read_conllu(path: str | os.PathLike[str], *, encoding: str = DEFAULT_ENCODING
                ) -> list[list[Token]]:
    """Read a CoNLL-U file into sentences of word tokens.

    Comment lines are skipped, and so are multiword-token ranges (`1-2`) and empty nodes
    (`1.1`). Each sentence is checked to form one tree: ids 1..n in order, heads in range,
    exactly one root, no cycle.

    Args:
        path: The `.conllu` file.
        encoding: Its text encoding (default `"utf-8"`, which CoNLL-U requires), decoded
            strictly: a byte not valid in it is a `TreeParseError` at `path:line:column`.

    Returns:
        One list of tokens per sentence.

    Raises:
        TreeParseError: a malformed line (located at the offending field), or a sentence
            that is not a tree (a cycle, or no root: located at the sentence's first line,
            comments included).

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.conllu"
    >>> _ = p.write_text("# text = Dogs bark\\n"
    ...                  "1\\tDogs\\tdog\\tNOUN\\tNNS\\t_\\t2\\tnsubj\\t_\\t_\\n"
    ...                  "2\\tbark\\tbark\\tVERB\\tVBP\\t_\\t0\\troot\\t_\\t_\\n\\n")
    >>> [t.form for t in read_conllu(p)[0]]
    ['Dogs', 'bark']
    """
    return _parse_conllu_lines(read_lines(path, encoding=encoding), source=str(path))


def _parse_conllu_lines(lines: Iterable[str], *, source: str) -> list[list[Token]]:
    sentences: list[list[Token]] = []
    tokens: list[Token] = []
    rows: list[tuple[int, str]] = []  # (line number, text) of each token
    first = 0

    def flush() -> None:
        try:
            _structure(tokens)
        except _SentenceError as err:
            if err.index is None:
                raise TreeParseError(source, first, 1, err.problem) from None
            number, text = rows[err.index]
            raise TreeParseError(source, number, _column(text, err.field), err.problem) from None
        sentences.append(list(tokens))

    for number, text in enumerate(lines, 1):
        if not text.strip():
            if tokens:
                flush()
            tokens, rows, first = [], [], 0
            continue
        if not first:
            first = number
        if text.startswith("#"):
            continue
        fields = text.split("\t")
        if len(fields) != 10:
            column = _column(text, 10) if len(fields) > 10 else len(text) + 1
            problem = f"expected 10 tab-separated fields, found {len(fields)}"
            raise TreeParseError(source, number, column, problem)

        def fail(field: int, problem: str, number: int = number,
                 text: str = text) -> TreeParseError:
            return TreeParseError(source, number, _column(text, field), problem)

        if _SKIPPED_ID.fullmatch(fields[_ID]):
            continue
        for k, f in enumerate(fields):
            if not f.strip():
                raise fail(k, f"empty {_FIELDS[k]} field")
        word_id, head = parse_uint(fields[_ID]), parse_uint(fields[_HEAD])  # None: not ids
        if word_id is None:
            raise fail(_ID, f"bad ID {quote(fields[_ID])} (expected 1, 2, ..., 1-2 or 1.1)")
        if head is None:
            raise fail(_HEAD, f"bad HEAD {quote(fields[_HEAD])} (expected a token id or 0)")
        if fields[_UPOS] == "_":
            raise fail(_UPOS, "missing UPOS '_'")
        if head != 0 and fields[_DEPREL] == "_":
            raise fail(_DEPREL, "missing DEPREL '_'")
        form, lemma, upos, xpos = fields[1:5]
        tokens.append(Token(word_id, form, lemma, upos, xpos, head, fields[_DEPREL]))
        rows.append((number, text))
    if tokens:
        flush()
    return sentences


def _column(text: str, field: int) -> int:
    """1-based column where tab-separated field number `field` (0-based) of `text` starts."""
    return 1 + sum(len(f) + 1 for f in text.split("\t")[:field])


def _structure(sentence: Sequence[Token]) -> tuple[int, list[list[int]]]:
    """The root's index and each token's dependents (indices, in sentence order)."""
    n = len(sentence)
    if n == 0:
        raise _SentenceError(None, _ID, "empty sentence")
    deps: list[list[int]] = [[] for _ in range(n)]
    root = -1
    for k, tok in enumerate(sentence):
        if tok.id != k + 1:
            raise _SentenceError(k, _ID, f"token id {tok.id} out of order (expected {k + 1})")
        if not 0 <= tok.head <= n:
            raise _SentenceError(k, _HEAD,
                                 f"head {tok.head} is not a token of this {n}-word sentence")
        if tok.head == tok.id:
            raise _SentenceError(k, _HEAD, f"token {tok.id} is its own head")
        if tok.head == 0:
            if root >= 0:
                raise _SentenceError(k, _HEAD,
                                     f"more than one root (tokens {root + 1} and {tok.id})")
            root = k
        elif tok.deprel in ("", "_"):
            raise _SentenceError(k, _DEPREL, f"token {tok.id} has no DEPREL")
        else:
            deps[tok.head - 1].append(k)
    if root < 0:
        raise _SentenceError(None, _HEAD, "no root (no token has head 0)")
    state = [0] * n  # 0: unseen, 1: on the current path, 2: reaches the root
    for k in range(n):
        path, j = [], k
        while j >= 0 and state[j] == 0:
            state[j] = 1
            path.append(j)
            j = sentence[j].head - 1
        if j >= 0 and state[j] == 1:
            raise _SentenceError(None, _HEAD, f"cycle of heads through token {j + 1}")
        for p in path:
            state[p] = 2
    return root, deps


def _checked(sentence: Sequence[Token]) -> tuple[int, list[list[int]]]:
    try:
        return _structure(sentence)
    except _SentenceError as err:
        line = 1 if err.index is None else err.index + 1
        raise TreeParseError("<sentence>", line, 1, err.problem) from None


def _clean(label: str) -> str:
    label = _SPACE.sub("_", label.strip()).replace("(", "-LRB-").replace(")", "-RRB-")
    return label or "_"


def coarse_pos(upos: str) -> str:
    """The coarse PoS letter `p'` of a UPOS tag.

    >>> coarse_pos("PROPN"), coarse_pos("AUX"), coarse_pos("DET")
    ('n', 'v', 'det')
    """
    return _COARSE.get(upos, upos.lower())


def _lexical(tok: Token) -> str:
    lemma = tok.form if tok.lemma == "_" else tok.lemma
    return _clean(f"{lemma.lower()}::{coarse_pos(tok.upos)}")


def _relation(tok: Token) -> str:
    return "root" if tok.head == 0 else _clean(tok.deprel)


class _Builder:
    def __init__(self) -> None:
        self.labels: list[str] = []
        self.children: list[list[int]] = []

    def add(self, label: str, parent: int) -> int:
        i = len(self.labels)
        self.labels.append(label)
        self.children.append([])
        if parent >= 0:
            self.children[parent].append(i)
        return i

    def tree(self) -> Tree:
        return Tree(tuple(self.labels), tuple(tuple(c) for c in self.children))


def grct(sentence: Sequence[Token]) -> Tree:
    """Grammatical Relation Centered Tree: relations over dependents and a PoS-over-lemma.

    Each word w gives `(r  GRCT(left dependents)...  (p l::p')  GRCT(right dependents)...)`:
    3 nodes per word.

    Args:
        sentence: The tokens of one sentence (ids 1..n, one root).

    Returns:
        The tree.

    Raises:
        TreeParseError: the heads do not form a tree (source `<sentence>`; the line is the
            offending token's position, or 1).

    >>> s = [Token(1, "Dogs", "dog", "NOUN", "NNS", 2, "nsubj"),
    ...      Token(2, "bark", "bark", "VERB", "VBP", 0, "root")]
    >>> grct(s).to_penn()
    '(root (nsubj (NOUN dog::n))(VERB bark::v))'
    """
    return grct_labelled(sentence, _relation)


def grct_labelled(sentence: Sequence[Token], relation_label: Callable[[Token], str]) -> Tree:
    """The GRCT walk with each word's relation node labelled `relation_label(token)` (grct:
    its relation; the compositional GRCT: relation and head-modifier pair)."""
    root, deps = _checked(sentence)
    b = _Builder()
    stack: list[tuple[int, int, bool]] = [(root, -1, False)]  # (token, parent, PoS part)
    while stack:
        k, parent, pos = stack.pop()
        tok = sentence[k]
        if pos:
            b.add(_lexical(tok), b.add(_clean(tok.upos), parent))
            continue
        r = b.add(relation_label(tok), parent)
        items = [(d, r, False) for d in deps[k] if d < k]
        items.append((k, r, True))
        items.extend((d, r, False) for d in deps[k] if d > k)
        stack.extend(reversed(items))
    return b.tree()


def lct(sentence: Sequence[Token]) -> Tree:
    """Lexical Centered Tree: `(l::p'  (r) (p)  LCT(d_1) ... LCT(d_k))`, 3 nodes per word.

    Args:
        sentence: The tokens of one sentence (ids 1..n, one root).

    Returns:
        The tree.

    Raises:
        TreeParseError: the heads do not form a tree (see `grct`).

    >>> s = [Token(1, "Dogs", "dog", "NOUN", "NNS", 2, "nsubj"),
    ...      Token(2, "bark", "bark", "VERB", "VBP", 0, "root")]
    >>> lct(s).labels
    ('bark::v', 'root', 'VERB', 'dog::n', 'nsubj', 'NOUN')
    """
    root, deps = _checked(sentence)
    b = _Builder()
    stack = [(root, -1)]
    while stack:
        k, parent = stack.pop()
        tok = sentence[k]
        x = b.add(_lexical(tok), parent)
        b.add(_relation(tok), x)
        b.add(_clean(tok.upos), x)
        stack.extend((d, x) for d in reversed(deps[k]))
    return b.tree()


def loct(sentence: Sequence[Token]) -> Tree:
    """Lexical Only Centered Tree: `(l::p'  LOCT(d_1) ... LOCT(d_k))`, 1 node per word.

    Args:
        sentence: The tokens of one sentence (ids 1..n, one root).

    Returns:
        The tree.

    Raises:
        TreeParseError: the heads do not form a tree (see `grct`).

    >>> s = [Token(1, "Dogs", "dog", "NOUN", "NNS", 2, "nsubj"),
    ...      Token(2, "bark", "bark", "VERB", "VBP", 0, "root")]
    >>> loct(s).to_penn()
    '(bark::v dog::n)'
    """
    root, deps = _checked(sentence)
    b = _Builder()
    stack = [(root, -1)]
    while stack:
        k, parent = stack.pop()
        x = b.add(_lexical(sentence[k]), parent)
        stack.extend((d, x) for d in reversed(deps[k]))
    return b.tree()
