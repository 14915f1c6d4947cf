"""What every learner returns: the model, a result code, and the solver's record.

Like optimistix's `Solution`: one type for every solver, an `equinox.Module`, so a `jax.vmap`
over a hyperparameter grid stacks every array in it (see docs/learners.md).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int

from ._validate import is_traced
from .errors import ConvergenceError

Model = TypeVar("Model")


class RESULTS:
    """Result codes of `Solution.result` (int32)."""

    successful = 0
    max_iter_reached = 1
    nonfinite = 2
    capacity_exceeded = 3

    _messages = {
        0: "successful",
        1: "the solver reached its iteration limit before its stopping rule was met "
           "(raise max_iter, or loosen the tolerance)",
        2: "NaN or inf appeared in the solver's state (check the inputs for non-finite "
           "values; use float64 or a normalized kernel for huge kernel values)",
        3: "the model needed more support vectors than its fixed capacity (raise capacity, "
           "or leave it None: the number of distinct training vectors always suffices)",
    }

    @classmethod
    def message(cls, code: int) -> str:
        return cls._messages.get(int(code), f"unknown result code {int(code)}")


def result_code(converged: Any, finite: Any = True) -> Int[Array, "*batch"]:
    """The result code from the stopping rule's verdict and a finiteness check."""
    converged = jnp.asarray(converged)
    finite = jnp.asarray(finite)
    return jnp.where(~finite, RESULTS.nonfinite,
                     jnp.where(converged, RESULTS.successful, RESULTS.max_iter_reached)
                     ).astype(jnp.int32)


class Solution(eqx.Module, Generic[Model]):
    """A trained model with the solver's verdict and record.

    Attributes:
        model: what predicts (`model.decision_function`, `model.predict`).
        result: `[*batch]` int32 `RESULTS` code (0: successful).
        stats: the solver's record: iteration counts, objectives, work counters (arrays
            where the solver is jitted, so a vmapped grid stacks them).
    """

    model: Model
    result: Int[Array, "*batch"]
    stats: dict[str, Any]

    @property
    def converged(self) -> Bool[Array, "*batch"]:
        """Whether the stopping rule was met (`result == RESULTS.successful`)."""
        return self.result == RESULTS.successful

    def check(self, throw: bool) -> Solution[Model]:
        """`self`, or an error if `throw` and the result is not successful.

        Concrete results raise `ConvergenceError`; under `jit`/`vmap` the check is an
        `equinox.error_if` on the model's arrays."""
        if not throw:
            return self
        if is_traced(self.result):
            # On every array of the solution, the model's included: a caller that keeps only
            # the model keeps the check (an error_if whose output is unused is dropped).
            msg = "the solver did not succeed (see jkern.RESULTS; throw=False returns the result)"
            arrays, static = eqx.partition(self, eqx.is_array)
            arrays = eqx.error_if(arrays, jnp.any(self.result != RESULTS.successful), msg)
            return eqx.combine(arrays, static)
        codes = np.asarray(self.result)
        bad = codes[codes != RESULTS.successful]
        if bad.size:
            raise ConvergenceError(
                f"{bad.size} of {codes.size} problem(s) did not succeed: "
                f"{RESULTS.message(int(bad.flat[0]))} (throw=False returns the solution)"
            )
        return self
