"""A Nyström pipeline: a projector and the model trained on its output, as one model on trees.

What `jkern train --algo dcd` and `--algo kda` produce: a linear SVM on the Nyström embeddings,
or a KDA on the kernel columns against the landmarks. It predicts from trees directly and is
saved whole by `jkern.save` (one file: projector and head).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
from jaxtyping import Array, Float

from ._labels import predict_labels, score_columns
from ._nystrom import Nystrom, NystromEnsemble
from ._validate import finite_model
from .errors import InputError
from .kda._model import KDA
from .svm._dcd import LinearSVM


class NystromModel(eqx.Module):
    """A Nyström projector followed by a head trained on what it gives.

    The head says what its `decision_function` takes (its `takes`):
    - `"features"` (`LinearSVM`): f(x) = head.decision_function(projector.embed(x));
    - `"kernel columns"` (`KDA`): f(x) = head.decision_function(K(x, landmarks)), the
      head's logits (the KDA's own first layer is the Nyström projection).

    `predict` follows the tie rule of docs/learners.md: a binary linear SVM gives +1 where
    f >= 0 (or `classes[1]` / `classes[0]` when it names two classes); otherwise the class of
    the highest score, ties to the lowest class.

    Attributes:
        projector: a `Nystrom` or `NystromEnsemble`.
        head: a `jkern.svm.LinearSVM` or a `jkern.kda.KDA`.
    """

    projector: Nystrom | NystromEnsemble
    head: LinearSVM | KDA

    def __check_init__(self):
        if not isinstance(self.projector, (Nystrom, NystromEnsemble)):
            raise InputError(f"projector must be a Nystrom or NystromEnsemble, got "
                             f"{type(self.projector).__name__}")
        head, name = self.head, type(self.head).__name__
        takes = getattr(type(head), "takes", None)
        if takes not in ("features", "kernel columns"):
            raise InputError(f"head must be a LinearSVM or a KDA, got {name}")
        if takes == "kernel columns":
            width = self.projector.n_landmarks
            have = f"has {width} landmarks"
        else:
            width = sum(int(m.projection.shape[-1]) for m in self.members)
            have = f"embeds in {width} dimensions"
        if head.n_inputs != width:
            raise InputError(f"the {name} takes {head.n_inputs} {takes}; the projector {have}")

    @property
    def classes(self) -> tuple | None:
        """The head's labels (None: a binary linear SVM predicting ±1)."""
        return self.head.classes

    @property
    def members(self) -> tuple[Nystrom, ...]:
        """The projector's projections (one for a `Nystrom`)."""
        p = self.projector
        return p.members if isinstance(p, NystromEnsemble) else (p,)

    @property
    def n_landmarks(self) -> int:
        """Kernel evaluations needed to classify one input."""
        return self.projector.n_landmarks

    def columns(self, x: Sequence[Any], **gram_options: Any) -> Float[Array, "n landmarks"]:
        """K(x, landmarks), over all members' landmarks for an ensemble."""
        return self.projector.columns(x, **gram_options)

    def decision_function(self, x: Sequence[Any], **gram_options: Any
                          ) -> Float[Array, " n *classes"]:
        """Decision values of inputs `x` (`gram_options`: dtype, block_size, threads, ...):
        `[n]` for a binary linear SVM, `[n, classes]` otherwise."""
        self = finite_model(self)
        c = self.columns(x, **gram_options)
        if self.head.takes == "features":
            c = self.projector.embed_columns(c)
        return self.head.decision_function(c)

    def predict(self, x: Sequence[Any], **gram_options: Any) -> Any:
        """Labels of inputs `x`: ±1 (or the two classes) by the sign of a binary linear SVM,
        +1 at 0; otherwise the class of the highest score (ties: the lowest class)."""
        return predict_labels(self.decision_function(x, **gram_options), self.classes)

    def class_scores(self, x: Sequence[Any], **gram_options: Any) -> Float[Array, "n k"]:
        """`[n, k]` one score per class (a binary linear SVM: (-f, f))."""
        return score_columns(self.decision_function(x, **gram_options))

    def classify(self, x: Sequence[Any], **gram_options: Any) -> tuple[Any, Float[Array, "n k"]]:
        """`(predict(x), class_scores(x))` from one kernel computation."""
        f = self.decision_function(x, **gram_options)
        return predict_labels(f, self.classes), score_columns(f)

    def binary_decision(self, scores: Float[Array, "n 2"]) -> tuple[int, Any]:
        """`(positive class index, one decision value per input)` of a two-class model's
        `class_scores`, as its head reads them: a linear SVM's margin f (of two one-vs-rest
        SVMs, half the difference of their mirror values), a KDA's log-odds (the difference
        of its logits). float64 NumPy; positive: the positive class
        (`jkern.positive_class(classes)`), as `jkern predict` writes it."""
        return self.head.binary_decision(scores)
