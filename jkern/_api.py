"""The public surface of `jkern`, loaded whole on the first `jkern.<name>` (`jkern/__init__`).

One list of re-exports; importing it imports JAX and the library and does what loading jkern
does once (`_startup`: the compilation cache on by default, compiled programs counted).
"""

from . import _startup as _startup
from . import data as data
from . import ds as ds
from . import errors as errors
from . import kda as kda
from . import kernels as kernels
from . import metrics as metrics
from . import pa as pa
from . import svm as svm
from . import trees as trees
from ._cache import disable_compilation_cache as disable_compilation_cache
from ._cache import enable_compilation_cache as enable_compilation_cache
from ._cpus import limit_cpus as limit_cpus
from ._io import load as load
from ._io import save as save
from ._kernel_names import KERNEL_MEANINGS as KERNEL_MEANINGS
from ._kernel_names import KERNEL_NAMES as KERNEL_NAMES
from ._kernel_names import PARTIAL_TREE_KERNELS as PARTIAL_TREE_KERNELS
from ._kernel_names import WORD_VECTOR_KERNELS as WORD_VECTOR_KERNELS
from ._labels import finite_values as finite_values
from ._labels import positive_class as positive_class
from ._labels import predict_labels as predict_labels
from ._labels import sign_labels as sign_labels
from ._nystrom import Nystrom as Nystrom
from ._nystrom import NystromEnsemble as NystromEnsemble
from ._nystrom import approximation_error as approximation_error
from ._nystrom import fit_nystrom as fit_nystrom
from ._nystrom import fit_nystrom_ensemble as fit_nystrom_ensemble
from ._nystrom import nystrom_projection as nystrom_projection
from ._nystrom import projector_from_gram as projector_from_gram
from ._nystrom import saving as saving
from ._nystrom import select_landmarks as select_landmarks
from ._pipeline import NystromModel as NystromModel
from ._programs import program_stats as program_stats
from ._solution import RESULTS as RESULTS
from ._solution import Solution as Solution
from ._sparse import SparseRows as SparseRows
from ._train_trees import check_kda_options as check_kda_options
from ._train_trees import check_labels as check_labels
from ._train_trees import train_cutting_plane as train_cutting_plane
from ._train_trees import train_kda as train_kda
from ._train_trees import train_kernel_svm as train_kernel_svm
from ._train_trees import train_nystrom_svm as train_nystrom_svm
from .kda import KDA as KDA
from .kernels import CSPTK as CSPTK
from .kernels import PTK as PTK
from .kernels import RBF as RBF
from .kernels import SPTK as SPTK
from .kernels import SST as SST
from .kernels import ST as ST
from .kernels import Constant as Constant
from .kernels import Linear as Linear
from .kernels import Normalized as Normalized
from .kernels import Polynomial as Polynomial
from .kernels import SSTBow as SSTBow
from .kernels import gram as gram
from .kernels import learn_kernel as learn_kernel
from .trees import read_trees as read_trees
from .trees._text import parse as parse

