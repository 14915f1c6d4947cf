"""Online passive-aggressive learning (PA-I) with polynomial kernels over sparse conjunctive
features, opal's semantics (issue 21): data readers, the learner, modes, synthetic data."""

from .. import _startup as _startup  # the compilation cache, program counts
from ._data import FeatureOrder as FeatureOrder
from ._data import SparseExamples as SparseExamples
from ._data import frequency_order as frequency_order
from ._data import is_binary as is_binary
from ._data import parse_sparse_line as parse_sparse_line
from ._data import parse_sparse_lines as parse_sparse_lines
from ._data import read_sparse as read_sparse
from ._data import unique_rows as unique_rows
from ._data import write_sparse as write_sparse
from ._explicit import ConjunctionModel as ConjunctionModel
from ._explicit import ExpandedInstance as ExpandedInstance
from ._explicit import ExplicitPA as ExplicitPA
from ._explicit import ExplicitState as ExplicitState
from ._explicit import conjunction_table as conjunction_table
from ._explicit import expand as expand
from ._fit import MODES as MODES
from ._fit import SupportVectorModel as SupportVectorModel
from ._fit import fit as fit
from ._kernel import CHUNK as CHUNK
from ._kernel import SCALE as SCALE
from ._kernel import TIE_EPS as TIE_EPS
from ._kernel import TIE_TICKS as TIE_TICKS
from ._kernel import Instance as Instance
from ._kernel import KernelPA as KernelPA
from ._kernel import KernelState as KernelState
from ._pke import ExpandedModel as ExpandedModel
from ._pke import expand_support_vectors as expand_support_vectors
from ._slice import prefix_nodes as prefix_nodes
from ._split import GROUP as GROUP
from ._split import SplitInstance as SplitInstance
from ._split import SplitPA as SplitPA
from ._split import SplitState as SplitState
from ._split import choose_n_common as choose_n_common
from ._synthetic import conjunctive_concepts as conjunctive_concepts
from ._table import CommonPart as CommonPart
from ._table import conjunction_coefficients as conjunction_coefficients

__all__ = [
    "FeatureOrder",
    "SparseExamples",
    "frequency_order",
    "is_binary",
    "parse_sparse_line",
    "parse_sparse_lines",
    "read_sparse",
    "unique_rows",
    "write_sparse",
    "ConjunctionModel",
    "ExpandedInstance",
    "ExplicitPA",
    "ExplicitState",
    "conjunction_coefficients",
    "conjunction_table",
    "expand",
    "MODES",
    "SupportVectorModel",
    "fit",
    "CHUNK",
    "SCALE",
    "TIE_EPS",
    "TIE_TICKS",
    "Instance",
    "KernelPA",
    "KernelState",
    "ExpandedModel",
    "expand_support_vectors",
    "prefix_nodes",
    "GROUP",
    "CommonPart",
    "SplitInstance",
    "SplitPA",
    "SplitState",
    "choose_n_common",
    "conjunctive_concepts",
]
