"""Loaders for real data sets (paths in, trees, sparse rows and labels out) and the readers
and writer of sparse-vector files (LIBSVM / SVM-light / SVM-Light-TK lines)."""

# Names load with their module on first use: `import jkern.pa` (which reads sparse files
# from here) does not import the trees, word vectors and every other data set's loader.

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._attachment import AttachmentData as AttachmentData
    from ._attachment import AttachmentSet as AttachmentSet
    from ._attachment import attachment_examples as attachment_examples
    from ._attachment import attachment_features as attachment_features
    from ._attachment import load_ud_attachment as load_ud_attachment
    from ._dswordnet import DS_WORDNET_FILES as DS_WORDNET_FILES
    from ._dswordnet import DsMentions as DsMentions
    from ._dswordnet import DsSplit as DsSplit
    from ._dswordnet import DsWordnetData as DsWordnetData
    from ._dswordnet import load_ds_wordnet as load_ds_wordnet
    from ._pyast import DEFAULT_PACKAGES as DEFAULT_PACKAGES
    from ._pyast import StdlibData as StdlibData
    from ._pyast import ast_to_tree as ast_to_tree
    from ._pyast import load_stdlib_functions as load_stdlib_functions
    from ._sparse_files import SparseExamples as SparseExamples
    from ._sparse_files import parse_sparse_line as parse_sparse_line
    from ._sparse_files import parse_sparse_lines as parse_sparse_lines
    from ._sparse_files import read_sparse as read_sparse
    from ._sparse_files import write_sparse as write_sparse
    from ._split import stratified_split as stratified_split
    from ._trec import TREC_COARSE as TREC_COARSE
    from ._trec import TrecData as TrecData
    from ._trec import load_trec as load_trec
    from ._vectors import WordVectors as WordVectors
    from ._vectors import glove_6b_50d as glove_6b_50d
    from ._vectors import load_word_vectors as load_word_vectors
    from ._vectors import tree_words as tree_words

_MODULE_OF = {
    "AttachmentData": "._attachment",
    "AttachmentSet": "._attachment",
    "attachment_examples": "._attachment",
    "attachment_features": "._attachment",
    "load_ud_attachment": "._attachment",
    "DS_WORDNET_FILES": "._dswordnet",
    "DsMentions": "._dswordnet",
    "DsSplit": "._dswordnet",
    "DsWordnetData": "._dswordnet",
    "load_ds_wordnet": "._dswordnet",
    "DEFAULT_PACKAGES": "._pyast",
    "StdlibData": "._pyast",
    "ast_to_tree": "._pyast",
    "load_stdlib_functions": "._pyast",
    "SparseExamples": "._sparse_files",
    "parse_sparse_line": "._sparse_files",
    "parse_sparse_lines": "._sparse_files",
    "read_sparse": "._sparse_files",
    "write_sparse": "._sparse_files",
    "stratified_split": "._split",
    "TREC_COARSE": "._trec",
    "TrecData": "._trec",
    "load_trec": "._trec",
    "WordVectors": "._vectors",
    "glove_6b_50d": "._vectors",
    "load_word_vectors": "._vectors",
    "tree_words": "._vectors",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # (found directly from now on)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "AttachmentData",
    "AttachmentSet",
    "attachment_examples",
    "attachment_features",
    "load_ud_attachment",
    "DS_WORDNET_FILES",
    "DsMentions",
    "DsSplit",
    "DsWordnetData",
    "load_ds_wordnet",
    "DEFAULT_PACKAGES",
    "StdlibData",
    "ast_to_tree",
    "load_stdlib_functions",
    "SparseExamples",
    "parse_sparse_line",
    "parse_sparse_lines",
    "read_sparse",
    "write_sparse",
    "stratified_split",
    "TREC_COARSE",
    "TrecData",
    "load_trec",
    "WordVectors",
    "glove_6b_50d",
    "load_word_vectors",
    "tree_words",
]
