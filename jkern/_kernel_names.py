"""The tree kernels' names: the one list behind `jkern.kernels.kernel_by_name`, the command
line's `--kernel` and the scikit-learn estimators' `kernel=`. No imports, so the command line's
`--help` reads it without loading JAX (`jkern.KERNEL_NAMES`, `jkern.kernels.KERNEL_NAMES`).

`KERNEL_MEANINGS` says, in one line each, what the kernels are: `jkern gram --help` lists
them from here."""

KERNEL_MEANINGS = {
    "st": "subtree kernel (Vishwanathan & Smola): shared complete subtrees",
    "sst": "subset tree kernel (Collins & Duffy 2002): shared fragments of whole grammar "
           "productions",
    "sst-bow": "SST plus a bag of words: equal leaves also match (SVM-Light-TK -F 2)",
    "ptk": "partial tree kernel (Moschitti 2006): fragments with any subsequence of a node's "
           "children",
    "sptk": "smoothed PTK (Croce et al. 2011): lexical nodes match softly, by the cosine of "
            "their word vectors",
    "csptk": "compositionally smoothed PTK (Annesi et al. 2014): SPTK that also smooths the "
             "head-modifier nodes of compositional (cgrct) trees",
}
KERNEL_NAMES = tuple(KERNEL_MEANINGS)
# the partial tree kernels: they take mu and max_subseq (the others ignore them)
PARTIAL_TREE_KERNELS = ("ptk", "sptk", "csptk")
# the kernels that compare words by their vectors: they need vocab= and vectors=
WORD_VECTOR_KERNELS = ("sptk", "csptk")
