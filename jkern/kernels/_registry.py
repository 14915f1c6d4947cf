"""Tree kernels by name: the one mapping from a name and its parameters to a kernel, used by
the command line, the examples, the experiments and the tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._kernel_names import KERNEL_NAMES, WORD_VECTOR_KERNELS
from ..errors import InputError
from ._base import AbstractKernel, Normalized
from ._tree_kernels import CSPTK, PTK, SPTK, SST, ST, SSTBow


def kernel_by_name(name: str, *, lam: Any = 0.4, mu: Any = 0.4, max_subseq: int | None = None,
                   vocab: Sequence[str] | None = None, vectors: Any = None,
                   threshold: Any = None, gamma: Any = None, A: Any = None, B: Any = None,
                   normalize: bool = False, tree_index: int = 0) -> AbstractKernel:
    """The tree kernel `name` (one of `KERNEL_NAMES`) with these parameters.

    Args:
        name: "st", "sst", "sst-bow", "ptk", "sptk" or "csptk".
        lam, mu: the decays (mu: ptk, sptk and csptk only; ignored by the others, as
            SVM-Light-TK).
        max_subseq: ptk/sptk/csptk's longest child subsequence (None: exact).
        vocab, vectors: the word vectors of sptk and csptk (required there, refused
            otherwise).
        threshold: sptk/csptk's cosine threshold (default 0.0).
        gamma: sptk/csptk's Gaussian similarity instead of the thresholded cosine (then the
            threshold must stay 0).
        A, B: csptk's composition matrices (default identity).
        normalize: wrap in `Normalized`.
        tree_index: which tree of an `Example` the kernel reads.

    >>> kernel_by_name("ptk", lam=0.4, mu=0.3, normalize=True).kernel.max_subseq is None
    True
    """
    if name not in KERNEL_NAMES:
        raise InputError(f"unknown tree kernel {name!r}; use one of {', '.join(KERNEL_NAMES)}")
    if name in WORD_VECTOR_KERNELS:
        if vocab is None or vectors is None:
            raise InputError(f"{name} needs word vectors: vocab= and vectors=")
        if gamma is not None and threshold not in (None, 0, 0.0):
            raise InputError("threshold applies to the cosine similarity; gamma replaces it")
        threshold = 0.0 if threshold is None else threshold
        if name == "sptk":
            for option, value in (("A", A), ("B", B)):
                if value is not None:
                    raise InputError(f"{option} only applies to csptk, not sptk")
            kernel: AbstractKernel = SPTK(vocab, vectors, lam, mu, threshold=threshold,
                                          gamma=gamma, max_subseq=max_subseq,
                                          tree_index=tree_index)
        else:
            kernel = CSPTK(vocab, vectors, lam, mu, A=A, B=B, threshold=threshold, gamma=gamma,
                           max_subseq=max_subseq, tree_index=tree_index)
    else:
        for option, value in (("vocab", vocab), ("vectors", vectors),
                              ("threshold", threshold), ("gamma", gamma), ("A", A), ("B", B)):
            if value is not None:
                raise InputError(f"{option} only applies to sptk and csptk, not {name}")
        if name == "ptk":
            kernel = PTK(lam, mu, max_subseq=max_subseq, tree_index=tree_index)
        else:
            kernel = {"st": ST, "sst": SST, "sst-bow": SSTBow}[name](lam, tree_index=tree_index)
    return Normalized(kernel) if normalize else kernel
