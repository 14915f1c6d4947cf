"""Kernels: tree kernels on the forest, vector kernels, algebra, and `gram`."""

from .. import _startup as _startup  # the compilation cache, program counts
from ._base import AbstractKernel as AbstractKernel
from ._base import Constant as Constant
from ._base import Normalized as Normalized
from ._base import Product as Product
from ._base import Scaled as Scaled
from ._base import Sum as Sum
from ._gram import gram as gram
from ._learn import alignment as alignment
from ._learn import learn_kernel as learn_kernel
from ._registry import KERNEL_NAMES as KERNEL_NAMES
from ._registry import kernel_by_name as kernel_by_name
from ._tree_kernels import CSPTK as CSPTK
from ._tree_kernels import PTK as PTK
from ._tree_kernels import SPTK as SPTK
from ._tree_kernels import SST as SST
from ._tree_kernels import ST as ST
from ._tree_kernels import AbstractTreeKernel as AbstractTreeKernel
from ._tree_kernels import SSTBow as SSTBow
from ._vector import RBF as RBF
from ._vector import AbstractVectorKernel as AbstractVectorKernel
from ._vector import Linear as Linear
from ._vector import Polynomial as Polynomial

__all__ = [
    "AbstractKernel",
    "Constant",
    "Normalized",
    "Product",
    "Scaled",
    "Sum",
    "gram",
    "alignment",
    "learn_kernel",
    "KERNEL_NAMES",
    "kernel_by_name",
    "PTK",
    "SPTK",
    "CSPTK",
    "SST",
    "ST",
    "AbstractTreeKernel",
    "SSTBow",
    "RBF",
    "AbstractVectorKernel",
    "Linear",
    "Polynomial",
]
