"""Loaders for real tree data sets: paths in, trees and labels out."""

from ._pyast import (
    DEFAULT_PACKAGES as DEFAULT_PACKAGES,
    StdlibData as StdlibData,
    ast_to_tree as ast_to_tree,
    load_stdlib_functions as load_stdlib_functions,
)
from ._trec import (
    TREC_COARSE as TREC_COARSE,
    TrecData as TrecData,
    load_trec as load_trec,
)
