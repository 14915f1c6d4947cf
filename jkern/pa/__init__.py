"""Online passive-aggressive learning (PA-I) with polynomial kernels over sparse conjunctive
features, opal's semantics (issue 21): the learner, modes, synthetic data, and (from
`jkern.data`, where sparse-vector files live) the readers."""

from .._loading import collector_paused as _collector_paused

with _collector_paused():  # (the import frees nothing: no collector passes)
    from .. import _startup as _startup  # the compilation cache, program counts
    from ..data._sparse_files import SparseExamples as SparseExamples
    from ..data._sparse_files import parse_sparse_line as parse_sparse_line
    from ..data._sparse_files import parse_sparse_lines as parse_sparse_lines
    from ..data._sparse_files import read_sparse as read_sparse
    from ..data._sparse_files import write_sparse as write_sparse
    from ._data import FeatureOrder as FeatureOrder
    from ._data import frequency_order as frequency_order
    from ._data import is_binary as is_binary
    from ._data import unique_rows as unique_rows
    from ._explicit import ConjunctionModel as ConjunctionModel
    from ._explicit import ExpandedInstance as ExpandedInstance
    from ._explicit import ExplicitPA as ExplicitPA
    from ._explicit import ExplicitState as ExplicitState
    from ._explicit import conjunction_table as conjunction_table
    from ._explicit import expand as expand
    from ._fit import MODES as MODES
    from ._fit import SupportVectorModel as SupportVectorModel
    from ._fit import fit as fit
    from ._kernel import Instance as Instance
    from ._kernel import KernelPA as KernelPA
    from ._kernel import KernelState as KernelState
    from ._pke import ExpandedModel as ExpandedModel
    from ._pke import RareSupport as RareSupport
    from ._pke import expand_support_vectors as expand_support_vectors
    from ._slice import prefix_nodes as prefix_nodes
    from ._split import SplitInstance as SplitInstance
    from ._split import SplitPA as SplitPA
    from ._split import SplitState as SplitState
    from ._split import choose_n_common as choose_n_common
    from ._synthetic import conjunctive_concepts as conjunctive_concepts
    from ._table import CommonPart as CommonPart
    from ._table import conjunction_coefficients as conjunction_coefficients

__all__ = [
    "SparseExamples",
    "parse_sparse_line",
    "parse_sparse_lines",
    "read_sparse",
    "write_sparse",
    "FeatureOrder",
    "frequency_order",
    "is_binary",
    "unique_rows",
    "ConjunctionModel",
    "ExpandedInstance",
    "ExplicitPA",
    "ExplicitState",
    "conjunction_table",
    "expand",
    "MODES",
    "SupportVectorModel",
    "fit",
    "Instance",
    "KernelPA",
    "KernelState",
    "ExpandedModel",
    "RareSupport",
    "expand_support_vectors",
    "prefix_nodes",
    "SplitInstance",
    "SplitPA",
    "SplitState",
    "choose_n_common",
    "conjunctive_concepts",
    "CommonPart",
    "conjunction_coefficients",
]
