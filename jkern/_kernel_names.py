"""The tree kernels' names: the one list behind `jkern.kernels.kernel_by_name`, the command
line's `--kernel` and the scikit-learn estimators' `kernel=`. No imports, so the command line's
`--help` reads it without loading JAX (`jkern.KERNEL_NAMES`, `jkern.kernels.KERNEL_NAMES`).

Each name is a plain `str` that also says, in one line, what its kernel is (`name.meaning`):
`jkern gram --help` lists them from here."""


class KernelName(str):
    """A tree kernel's name (equal to, and used as, the plain string) with `meaning`, one line
    on what the kernel is."""

    meaning: str

    def __new__(cls, name: str, meaning: str) -> "KernelName":
        self = super().__new__(cls, name)
        self.meaning = meaning
        return self

    def __reduce__(self) -> tuple[type["KernelName"], tuple[str, str]]:
        return type(self), (str(self), self.meaning)


KERNEL_NAMES = (
    KernelName("st", "subtree kernel (Vishwanathan & Smola): shared complete subtrees"),
    KernelName("sst", "subset tree kernel (Collins & Duffy 2002): shared fragments of whole "
                      "grammar productions"),
    KernelName("sst-bow", "SST plus a bag of words: equal leaves also match (SVM-Light-TK "
                          "-F 2)"),
    KernelName("ptk", "partial tree kernel (Moschitti 2006): fragments with any subsequence "
                      "of a node's children"),
    KernelName("sptk", "smoothed PTK (Croce et al. 2011): lexical nodes match softly, by "
                       "the cosine of their word vectors"),
    KernelName("csptk", "compositionally smoothed PTK (Annesi et al. 2014): SPTK that also "
                        "smooths the head-modifier nodes of compositional (cgrct) trees"),
)
# the partial tree kernels: they take mu and max_subseq (the others ignore them)
PARTIAL_TREE_KERNELS = ("ptk", "sptk", "csptk")
# the kernels that compare words by their vectors: they need vocab= and vectors=
WORD_VECTOR_KERNELS = ("sptk", "csptk")
