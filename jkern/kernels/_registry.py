"""Tree kernels by name: the one mapping from a name and its parameters to a kernel, used by
the command line, the examples, the experiments and the tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ._base import AbstractKernel, Normalized
from ._tree_kernels import PTK, SPTK, SST, ST, SSTBow

KERNEL_NAMES = ("st", "sst", "sst-bow", "ptk", "sptk")


def kernel_by_name(name: str, *, lam: Any = 0.4, mu: Any = 0.4, max_subseq: int | None = None,
                   vocab: Sequence[str] | None = None, vectors: Any = None,
                   threshold: Any = None, gamma: Any = None, normalize: bool = False,
                   tree_index: int = 0) -> AbstractKernel:
    """The tree kernel `name` (one of `KERNEL_NAMES`) with these parameters.

    Args:
        name: "st", "sst", "sst-bow", "ptk" or "sptk".
        lam, mu: the decays (mu: ptk and sptk only; ignored by the others, as SVM-Light-TK).
        max_subseq: ptk/sptk's longest child subsequence (None: exact).
        vocab, vectors: sptk's word vectors (required for sptk, refused otherwise).
        threshold: sptk's cosine threshold (default 0.0).
        gamma: sptk's Gaussian word similarity instead of the thresholded cosine (then the
            threshold must stay 0).
        normalize: wrap in `Normalized`.
        tree_index: which tree of an `Example` the kernel reads.

    >>> kernel_by_name("ptk", lam=0.4, mu=0.3, normalize=True).kernel.max_subseq is None
    True
    """
    if name not in KERNEL_NAMES:
        raise InputError(f"unknown tree kernel {name!r}; use one of {', '.join(KERNEL_NAMES)}")
    if name == "sptk":
        if vocab is None or vectors is None:
            raise InputError("sptk needs word vectors: vocab= and vectors=")
        if gamma is not None and threshold not in (None, 0, 0.0):
            raise InputError("threshold applies to the cosine similarity; gamma replaces it")
        kernel: AbstractKernel = SPTK(vocab, vectors, lam, mu,
                                      threshold=0.0 if threshold is None else threshold,
                                      gamma=gamma, max_subseq=max_subseq,
                                      tree_index=tree_index)
    else:
        for option, value in (("vocab", vocab), ("vectors", vectors),
                              ("threshold", threshold), ("gamma", gamma)):
            if value is not None:
                raise InputError(f"{option} only applies to sptk, not {name}")
        if name == "ptk":
            kernel = PTK(lam, mu, max_subseq=max_subseq, tree_index=tree_index)
        else:
            kernel = {"st": ST, "sst": SST, "sst-bow": SSTBow}[name](lam, tree_index=tree_index)
    return Normalized(kernel) if normalize else kernel
