"""The kernel-based deep architecture (Croce, Moschitti & Basili, ACL 2017, section 3.2).

    c = K(x, L)                      kernel values against the landmarks (computed once per input)
    z_0 = c H_Ny                     the Nyström layer (frozen by default)
    z_t = relu(W_t drop(z_{t-1}) + b_t)   hidden layers
    scores = W_o drop(z_T) + b_o     softmax classifier

Dropout acts on the input of every hidden layer and of the classifier. The dropout rate is an
array leaf, so models with different rates stack and train under one `jax.vmap`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._labels import labels_at, two_class_decision
from .._validate import finite, finite_model, is_traced
from ..errors import InputError


def _dropout(x: Array, rate: Array, key: PRNGKeyArray | None) -> Array:
    """Inverted dropout; identity when `key` is None (inference).

    Each 32 random bits decide two units (16 bits each: the rate is applied to 1/65536),
    half the random-number work of `jax.random.bernoulli`, which dominates a small network's
    step on a CPU."""
    if key is None:
        return x
    keep = 1.0 - rate
    width = x.shape[-1]
    bits = jax.random.bits(key, (*x.shape[:-1], (width + 1) // 2), jnp.uint32)
    halves = jnp.concatenate([bits & 0xFFFF, bits >> 16], axis=-1)[..., :width]
    mask = halves.astype(jnp.float32) < keep.astype(jnp.float32) * 65536.0
    # keep = 0 would divide by zero: a rate of 1 drops everything (the output is then 0)
    return jnp.where(mask, x / jnp.where(keep > 0, keep, 1.0), 0.0)


class KDA(eqx.Module):
    """Nyström layer + MLP over kernel columns `c = K(x, landmarks)`.

    Build with `KDA.init(nystrom, classes, key=...)`. `model(c, key=...)` gives class scores
    (logits) for a `[n, m]` batch of kernel columns; `key=None` is inference (no dropout).
    The prediction surface of every jkern model (docs/learners.md): `decision_function(c)`
    (the logits, `[n, classes]`), `predict(c)` (the class of the highest logit, ties to the
    lowest class), `classes`, and `binary_decision(scores)` for two classes (the difference
    of the logits).

    Attributes:
        nystrom: `[landmarks, rank]` H_Ny = U S^-1/2 of the projector.
        hidden: the hidden layers (`eqx.nn.Linear`, ReLU after each).
        output: the classifier layer.
        dropout: dropout rate (an array leaf: vmappable).
        train_nystrom: whether the Nyström layer is trained (static).
        classes: the labels, in the order of the scores (static).
    """

    nystrom: Float[Array, "landmarks rank"]
    hidden: tuple[eqx.nn.Linear, ...]
    output: eqx.nn.Linear
    dropout: Float[Array, ""]
    train_nystrom: bool = eqx.field(static=True)
    classes: tuple = eqx.field(static=True)

    #: What `decision_function` takes: the kernel columns K(x, landmarks), not a projector's
    #: embeddings (its first layer is the Nyström projection; `jkern.NystromModel` reads this).
    takes: ClassVar[str] = "kernel columns"

    @classmethod
    def init(cls, nystrom: Float[Array, "landmarks rank"], classes: Sequence[Any], *,
             key: PRNGKeyArray, hidden: Sequence[int] | None = None, dropout: Any = 0.0,
             train_nystrom: bool = False, dtype: Any = None) -> KDA:
        """A freshly initialised model.

        Args:
            nystrom: the projector's H (`Nystrom.projection`).
            classes: the labels (sorted unique training labels, say).
            key: PRNG key for the weights (keyword-only, as every jkern key).
            hidden: hidden-layer widths; default two layers as wide as the landmarks (the paper).
            dropout: dropout rate in [0, 1).
            train_nystrom: train H_Ny with the rest (default frozen).
            dtype: parameter dtype (default: H's).
        """
        nystrom = jnp.asarray(nystrom)
        if nystrom.ndim != 2:
            raise InputError(f"nystrom must be [landmarks, rank], got shape {nystrom.shape}")
        classes = tuple(classes)
        if len(classes) < 2:
            raise InputError(f"need at least 2 classes, got {classes!r}")
        if len(set(classes)) != len(classes):
            raise InputError(f"classes must be distinct, got {classes!r}")
        widths = [nystrom.shape[0]] * 2 if hidden is None else [int(w) for w in hidden]
        if any(w < 1 for w in widths):
            raise InputError(f"hidden widths must be >= 1, got {hidden!r}")
        dtype = nystrom.dtype if dtype is None else jnp.dtype(dtype)
        sizes = [nystrom.shape[1], *widths]
        keys = jax.random.split(key, len(widths) + 1)
        layers = tuple(eqx.nn.Linear(a, b, key=k, dtype=dtype)
                       for a, b, k in zip(sizes[:-1], sizes[1:], keys[:-1]))
        output = eqx.nn.Linear(sizes[-1], len(classes), key=keys[-1], dtype=dtype)
        return cls(nystrom.astype(dtype), layers, output, jnp.asarray(dropout, dtype),
                   bool(train_nystrom), classes)

    def __check_init__(self):
        rate = self.dropout
        if not is_traced(rate) and rate.ndim == 0 and not 0 <= float(rate) < 1:
            raise InputError(f"dropout must be in [0, 1), got {float(rate)}")

    @property
    def n_landmarks(self) -> int:
        return int(self.nystrom.shape[-2])

    @property
    def n_inputs(self) -> int:
        """The width of what `decision_function` takes: one kernel column per landmark."""
        return self.n_landmarks

    def embed(self, c: Float[Array, "n landmarks"]) -> Float[Array, "n rank"]:
        """The Nyström layer alone: `c @ H_Ny` (the Nyström embeddings)."""
        if c.shape[-1] != self.n_landmarks:
            raise InputError(f"expected {self.n_landmarks} kernel columns, got {c.shape[-1]}")
        h = self.nystrom if self.train_nystrom else jax.lax.stop_gradient(self.nystrom)
        return jnp.matmul(c.astype(h.dtype), h, precision=jax.lax.Precision.HIGHEST)

    def __call__(self, c: Float[Array, "n landmarks"], *, key: PRNGKeyArray | None = None
                 ) -> Float[Array, "n classes"]:
        """Class scores (logits); dropout only when a `key` is given. A concrete model
        (not one being trained) must hold finite parameters, and `c` finite values."""
        if not is_traced(self.output.weight):
            finite_model(self)
            finite("c", c)
        return self.head(self.embed(c), key=key)

    def head(self, z: Float[Array, "n rank"], *, key: PRNGKeyArray | None = None
             ) -> Float[Array, "n classes"]:
        """The MLP on Nyström embeddings `z = embed(c)` (the model minus its first layer)."""
        keys = [None] * (len(self.hidden) + 1) if key is None else \
            list(jax.random.split(key, len(self.hidden) + 1))
        for layer, k in zip(self.hidden, keys[:-1]):
            z = jax.nn.relu(_linear(layer, _dropout(z, self.dropout, k)))
        return _linear(self.output, _dropout(z, self.dropout, keys[-1]))

    def decision_function(self, c: Float[Array, "n landmarks"]) -> Float[Array, "n classes"]:
        """Class scores (logits) of kernel columns `c`, without dropout: `model(c)`."""
        return self(c)

    def binary_decision(self, scores: Float[Array, "n 2"]) -> tuple[int, Any]:
        """`(positive class index, one decision value per input)` of a two-class model's
        logits: their difference, the log-odds of the positive class (float64 NumPy; the
        positive class by `jkern.positive_class`)."""
        return two_class_decision(scores, self.classes, logits=True)

    def predict_index(self, c: Float[Array, "n landmarks"]) -> Int[Array, " n"]:
        """Index into `classes` of the highest score."""
        return jnp.argmax(self.decision_function(c), axis=-1)

    def predict(self, c: Float[Array, "n landmarks"]) -> Any:
        """Predicted labels (a jax array for numeric labels, else numpy)."""
        return labels_at(self.classes, self.predict_index(c))

    def penalty(self) -> Float[Array, ""]:
        """Σ‖W‖² over the hidden and output weight matrices (not biases, not H_Ny)."""
        total = jnp.zeros((), self.output.weight.dtype)
        for layer in (*self.hidden, self.output):  # the order of the sums fixes the rounding
            total = total + jnp.sum(layer.weight ** 2)
        return total

    def trainable(self) -> KDA:
        """A filter spec (pytree of bools) of the trained leaves: layers, and H_Ny if asked."""
        def trained(path, _):
            name = path[0].name
            return name in ("hidden", "output") or (name == "nystrom" and self.train_nystrom)

        return jax.tree_util.tree_map_with_path(trained, self)


def _linear(layer: eqx.nn.Linear, x: Float[Array, "n i"]) -> Float[Array, "n o"]:
    """A Linear layer on a batch (one matmul, not a vmap of matrix-vector products)."""
    # the layers are built with use_bias=True
    return x @ layer.weight.T + (0.0 if layer.bias is None else layer.bias[None, :])
