"""Trees: the `Tree` value type, readers for Penn, SVM-Light-TK, TSV and CoNLL-U input, and
spaCy's dependency parses of tokenized sentences (`parse_sentences`)."""

from ._compositional import Composed as Composed
from ._compositional import cgrct as cgrct
from ._compositional import composed_label as composed_label
from ._compositional import parse_composed as parse_composed
from ._conllu import Token as Token
from ._conllu import grct as grct
from ._conllu import lct as lct
from ._conllu import loct as loct
from ._conllu import read_conllu as read_conllu
from ._errors import TreeParseError as TreeParseError
from ._forest import Forest as Forest
from ._heads import head_dependencies as head_dependencies
from ._io import located_trees as located_trees
from ._io import read_examples_any as read_examples_any
from ._io import read_labels as read_labels
from ._io import read_trees as read_trees
from ._io import rewrite_trees as rewrite_trees
from ._io import tree_file_format as tree_file_format
from ._lexical import OPEN_CLASS_TAGS as OPEN_CLASS_TAGS
from ._lexical import pos_leaves as pos_leaves
from ._lexical import without_leaves as without_leaves
from ._penn import iter_penn as iter_penn
from ._penn import parse_penn as parse_penn
from ._penn import read_penn as read_penn
from ._spacy import parse_sentences as parse_sentences
from ._svmlight import Example as Example
from ._svmlight import parse_svmlight_line as parse_svmlight_line
from ._svmlight import read_examples as read_examples
from ._textfile import check_encoding as check_encoding
from ._textfile import iter_lines as iter_lines
from ._tree import Tree as Tree

__all__ = [
    "Composed",
    "cgrct",
    "composed_label",
    "parse_composed",
    "Token",
    "grct",
    "lct",
    "loct",
    "read_conllu",
    "TreeParseError",
    "Forest",
    "head_dependencies",
    "located_trees",
    "read_examples_any",
    "read_labels",
    "read_trees",
    "rewrite_trees",
    "tree_file_format",
    "OPEN_CLASS_TAGS",
    "pos_leaves",
    "without_leaves",
    "iter_penn",
    "parse_penn",
    "read_penn",
    "parse_sentences",
    "Example",
    "parse_svmlight_line",
    "read_examples",
    "check_encoding",
    "iter_lines",
    "Tree",
]
