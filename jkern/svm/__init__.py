"""Support vector machines: linear dual coordinate descent and the kernel SVM on a Gram matrix."""

from ._dcd import LinearSVM as LinearSVM
from ._dcd import dcd as dcd
from ._dcd import dcd_grid as dcd_grid
from ._dcd import dcd_ovr as dcd_ovr
from ._dcd import primal_objective as primal_objective
from ._ksvm import KernelSVM as KernelSVM
from ._ksvm import ksvm as ksvm
from ._ksvm import ksvm_ovr as ksvm_ovr
