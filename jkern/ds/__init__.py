"""Distant supervision for relation extraction: Grave (2014)'s convex relaxation.

`fit` solves the relaxation over mention features (dense, sparse `jkern.SparseRows`, or
blocks of both, e.g. with a Nystrom embedding of tree kernels); the `RelationModel` it returns
scores mentions and aggregates them per entity pair. See docs/distant_supervision.md.
"""

from ._evaluate import held_out as held_out
from ._relaxation import Check as Check
from ._relaxation import Constraints as Constraints
from ._relaxation import Problem as Problem
from ._relaxation import RelationModel as RelationModel
from ._relaxation import RelaxationState as RelaxationState
from ._relaxation import aggregate_pairs as aggregate_pairs
from ._relaxation import check as check
from ._relaxation import constraints as constraints
from ._relaxation import fit as fit
from ._relaxation import init as init
from ._relaxation import primal_objective as primal_objective
from ._relaxation import project_rows_simplex as project_rows_simplex
from ._relaxation import spectral_norm_sq as spectral_norm_sq
from ._relaxation import update as update
