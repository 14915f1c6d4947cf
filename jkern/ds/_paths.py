"""Shortest dependency paths between a mention's two nouns, as trees for tree kernels.

The sentences are parsed with spaCy by `jkern.trees.parse_sentences` (the optional extra
`jkern[ds]`: spaCy and its small English model), from their given tokens so that token
indexes stay those of the data, and forced to one sentence each. Parses are cached on disk,
so a second run reads them back.

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

import os
from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ..trees._conllu import Token, _Builder, _clean, _lexical, _relation
from ..trees._spacy import _parse
from ..trees._tree import Tree


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

