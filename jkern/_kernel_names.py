"""The tree kernels' names: the one list behind `jkern.kernels.kernel_by_name`, the command
line's `--kernel` and the scikit-learn estimators' `kernel=`. No imports, so the command line's
`--help` reads it without loading JAX (`jkern.KERNEL_NAMES`, `jkern.kernels.KERNEL_NAMES`)."""

KERNEL_NAMES = ("st", "sst", "sst-bow", "ptk", "sptk", "csptk")
# the partial tree kernels: they take mu and max_subseq (the others ignore them)
PARTIAL_TREE_KERNELS = ("ptk", "sptk", "csptk")
# the kernels that compare words by their vectors: they need vocab= and vectors=
WORD_VECTOR_KERNELS = ("sptk", "csptk")
