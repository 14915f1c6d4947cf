"""jkern: kernel methods over structured linguistic data, in JAX."""

from . import kernels as kernels
from ._cache import enable_compilation_cache as enable_compilation_cache
from . import trees as trees
from .kernels import PTK as PTK
from .kernels import RBF as RBF
from .kernels import SPTK as SPTK
from .kernels import SST as SST
from .kernels import ST as ST
from .kernels import Linear as Linear
from .kernels import Normalized as Normalized
from .kernels import Polynomial as Polynomial
from .kernels import SSTBow as SSTBow
from .kernels import gram as gram
from .trees import read_trees as read_trees

__version__ = "0.1.0"
