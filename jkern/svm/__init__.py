"""Support vector machines: linear dual coordinate descent and the kernel SVM on a Gram matrix."""
