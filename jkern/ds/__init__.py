"""Distant supervision for relation extraction: Grave (2014)'s convex relaxation.

`fit` solves the relaxation over mention features (dense, sparse `jkern.SparseRows`, or
blocks of both, e.g. with a Nystrom embedding of tree kernels); the `RelationModel` it returns
scores mentions and aggregates them per entity pair. See docs/distant_supervision.md.
"""

from .. import _startup as _startup  # the compilation cache, program counts
from ..trees import parse_sentences as parse_sentences  # spaCy's parses, moved to trees/
from ._evaluate import RankedPairs as RankedPairs
from ._evaluate import held_out as held_out
from ._evaluate import rank_pairs as rank_pairs
from ._extractor import RelationExtractor as RelationExtractor
from ._extractor import train_extractor as train_extractor
from ._features import FeatureVocabulary as FeatureVocabulary
from ._features import lexical_features as lexical_features
from ._features import mention_features as mention_features
from ._features import normalize_word as normalize_word
from ._fit import fit as fit
from ._paths import dependency_paths as dependency_paths
from ._paths import path_tree as path_tree
from ._relaxation import Check as Check
from ._relaxation import Constraints as Constraints
from ._relaxation import Problem as Problem
from ._relaxation import RelationModel as RelationModel
from ._relaxation import RelaxationState as RelaxationState
from ._relaxation import aggregate_pairs as aggregate_pairs
from ._relaxation import check as check
from ._relaxation import constraints as constraints
from ._relaxation import init as init
from ._relaxation import primal_objective as primal_objective
from ._relaxation import project_rows_simplex as project_rows_simplex
from ._relaxation import spectral_norm_sq as spectral_norm_sq
from ._relaxation import update as update
from ._transforms import ProductIndex as ProductIndex
from ._transforms import normalize_rows as normalize_rows
from ._transforms import polynomial_expansion as polynomial_expansion
from ._transforms import prune_features as prune_features
from ._transforms import randomized_svd_projection as randomized_svd_projection
from ._transforms import remap_columns as remap_columns

__all__ = [
    "RankedPairs",
    "held_out",
    "rank_pairs",
    "RelationExtractor",
    "train_extractor",
    "FeatureVocabulary",
    "lexical_features",
    "mention_features",
    "normalize_word",
    "fit",
    "dependency_paths",
    "parse_sentences",
    "path_tree",
    "Check",
    "Constraints",
    "Problem",
    "RelationModel",
    "RelaxationState",
    "aggregate_pairs",
    "check",
    "constraints",
    "init",
    "primal_objective",
    "project_rows_simplex",
    "spectral_norm_sq",
    "update",
    "ProductIndex",
    "normalize_rows",
    "polynomial_expansion",
    "prune_features",
    "randomized_svd_projection",
    "remap_columns",
]
