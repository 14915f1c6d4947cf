"""Support vector machines: linear dual coordinate descent, the kernel SVM on a Gram matrix, and
the cutting-plane SVM for tree kernels (uSVM, SDAG, SDAG+, uSVM+j)."""

from .. import _startup as _startup  # the compilation cache, program counts
from ._cpa import CPAIteration as CPAIteration
from ._cpa import cpa as cpa
from ._cpa import delta_counts as delta_counts
from ._cpa import draw_sample as draw_sample
from ._cpa import svm_light_C as svm_light_C
from ._dcd import LinearSVM as LinearSVM
from ._dcd import dcd as dcd
from ._dcd import dcd_grid as dcd_grid
from ._dcd import dcd_ovr as dcd_ovr
from ._dcd import primal_objective as primal_objective
from ._expansion import KernelExpansion as KernelExpansion
from ._expansion import stack_expansions as stack_expansions
from ._ksvm import KernelSVM as KernelSVM
from ._ksvm import ksvm as ksvm
from ._ksvm import ksvm_ovr as ksvm_ovr
from ._ovr import one_vs_rest as one_vs_rest
from ._ovr import stack_stats as stack_stats
from ._qp import QPResult as QPResult
from ._qp import solve_one_slack_dual as solve_one_slack_dual

__all__ = [
    "CPAIteration",
    "cpa",
    "delta_counts",
    "draw_sample",
    "svm_light_C",
    "LinearSVM",
    "dcd",
    "dcd_grid",
    "dcd_ovr",
    "primal_objective",
    "KernelExpansion",
    "stack_expansions",
    "KernelSVM",
    "ksvm",
    "ksvm_ovr",
    "one_vs_rest",
    "stack_stats",
    "QPResult",
    "solve_one_slack_dual",
]
