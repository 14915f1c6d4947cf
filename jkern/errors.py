"""The errors jkern raises: input errors (what the caller passed is wrong, and the message says
what to pass instead) and numerical errors (the computation itself failed).

Both derive from the built-in exceptions code already catches: an `InputError` is a
`ValueError`, a `NumericalError` a `FloatingPointError` (an `ArithmeticError`).
"""

from __future__ import annotations


class JkernError(Exception):
    """Base class of every error jkern raises on purpose."""


class InputError(JkernError, ValueError):
    """An argument, file or value the caller gave is not valid input."""


# jkern.trees.TreeParseError (malformed tree or example text, with file:line:column) is an
# InputError too; it lives beside the readers.


class TreeInputError(InputError):
    """A tree the kernel cannot take (a node wider than the kernel's limit).

    Attributes:
        tree: that tree (the object the caller passed), or None when unknown.
        index: its position in the collection the kernel was given, or None.
    """

    def __init__(self, message: str, *, tree: object = None, index: int | None = None,
                 node: int | None = None) -> None:
        super().__init__(message)
        self.tree = tree
        self.index = index
        self.node = node  # the forest node at fault (engine internal)


class ModelFileError(InputError):
    """A file given to `jkern.load` is not a jkern model file this version can read."""


class MemoryBudgetError(InputError, MemoryError):
    """A job that would take more memory than its budget, refused before it allocates
    (trees whose node pairs, or a Gram matrix whose entries, would not fit); the message says
    how big it is and how to raise the budget (`max_memory=`, `JKERN_MAX_MEMORY`).

    Attributes:
        needed: the bytes the job (or its largest block) would take, estimated.
        budget: the budget it was checked against, in bytes.
        node_pairs: the node pairs (Delta entries) of that block, or None for a Gram
            matrix's own size.
        index: the tree at fault (its position among the trees given), or None.
    """

    def __init__(self, message: str, *, needed: int, budget: int,
                 node_pairs: int | None = None, index: int | None = None) -> None:
        super().__init__(message)
        self.needed = needed
        self.budget = budget
        self.node_pairs = node_pairs
        self.index = index


class NumericalError(JkernError, FloatingPointError):
    """A computation produced inf/NaN or otherwise failed numerically."""


class ConvergenceError(NumericalError):
    """A solver asked to `throw` did not reach its stopping rule."""


class CacheWarning(UserWarning):
    """The on-disk compilation cache was not used (a folder another user can write, or one that
    cannot be created): the job runs without it, compiling its programs afresh."""
