"""Support vector machines: linear dual coordinate descent and the kernel SVM on a Gram matrix."""

from ._ksvm import KernelSVM as KernelSVM
from ._ksvm import ksvm as ksvm
from ._ksvm import ksvm_ovr as ksvm_ovr
