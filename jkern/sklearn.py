"""scikit-learn estimators over trees (issue 22; the optional extra `jkern[sklearn]`).

X is a sequence of trees: `jkern.trees.Tree` objects, bracket strings (parsed with
`parse_penn`) or `jkern.trees.Example`s. The estimators wrap jkern's own training functions,
so a fitted estimator holds the jkern model (`model_`) and gives the same predictions:

- `TreeKernelTransformer`: a tree kernel as features, either the precomputed Gram against
  the training trees (`landmarks=None`, for `sklearn.svm.SVC(kernel="precomputed")`) or
  Nyström features (`landmarks=m`);
- `NystromSVC`: Nyström features + linear SVMs by dual coordinate descent
  (`jkern.train_nystrom_svm`);
- `KernelSVC`: the exact kernel SVM on the Gram (`jkern.train_kernel_svm`);
- `KDAClassifier`: Nyström layer + MLP (`jkern.train_kda`), with `predict_proba`;
- `PAClassifier`: online PA-I with the polynomial kernel over sparse feature vectors
  (`jkern.pa.fit`; X a SciPy sparse matrix, a dense array, a `jkern.SparseRows` or a list of
  {feature: value} dicts), binary (wrap it in `OneVsRestClassifier` for more classes).

The kernel is named by parameters that `GridSearchCV` can search: `kernel` (`KERNELS`: the
tree kernels of `jkern.KERNEL_NAMES` that need no word vectors, "st", "sst", "sst-bow",
"ptk"), `lam`, `mu` (PTK) and `normalize` (K(x, y) / sqrt(K(x, x) K(y, y))). Labels may be
strings; `classes_` lists them sorted. `random_state` (an int) seeds the landmarks and the
solvers.

Which of scikit-learn's estimator checks apply to the tree estimators: the API checks that
take no data
(`check_parameters_default_constructible`, `check_no_attributes_set_in_init`,
`check_get_params_invariance`, `check_set_params`) pass (tests/test_sklearn.py); the others
feed numeric arrays as X, which are not trees, and do not apply. `PAClassifier` takes
numeric X and passes all of them that run (`parametrize_with_checks`; binary, so without the
multi-class cases).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils.validation import check_is_fitted
except ImportError as err:  # pragma: no cover - the extra is missing
    raise ImportError("jkern.sklearn needs scikit-learn: pip install 'jkern[sklearn]'") from err

from ._kernel_names import KERNEL_NAMES, WORD_VECTOR_KERNELS
from .errors import InputError

# the registry's tree kernels that take no word vectors (an estimator's parameters are
# numbers and names, which GridSearchCV can search)
KERNELS = tuple(name for name in KERNEL_NAMES if name not in WORD_VECTOR_KERNELS)


def as_trees(X: Any) -> list[Any]:
    """X as a list of trees: `Tree`s and `Example`s as they are, strings parsed."""
    from .trees import Example, Tree, parse_penn

    if isinstance(X, (str, bytes)) or not isinstance(X, Sequence | np.ndarray):
        raise InputError(f"X must be a sequence of trees (Tree objects or bracket strings), "
                         f"got {type(X).__name__}")
    out = []
    for i, x in enumerate(X):
        if isinstance(x, (Tree, Example)):
            out.append(x)
        elif isinstance(x, str):
            out.append(parse_penn(x, source=f"X[{i}]"))
        else:
            raise InputError(f"X[{i}] is a {type(x).__name__}: give Tree objects or bracket "
                             "strings")
    if not out:
        raise InputError("X holds no trees")
    return out


def _labels(y: Any, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n:
        raise InputError(f"y must hold one label per tree ({n}), got shape {y.shape}")
    return y


class _TreeKernelMixin:
    """The kernel parameters every estimator shares."""

    kernel: str
    lam: float
    mu: float
    normalize: bool

    def _kernel(self) -> Any:
        import jkern

        name = str(self.kernel).lower()
        if name not in KERNELS:
            raise InputError(f"kernel must be one of {KERNELS}, got {self.kernel!r}")
        return jkern.kernels.kernel_by_name(name, lam=self.lam, mu=self.mu,
                                            normalize=bool(self.normalize))

    def _key(self, salt: int = 0) -> Any:
        import jax

        seed = 0 if self.random_state is None else int(self.random_state)  # type: ignore
        return jax.random.fold_in(jax.random.PRNGKey(seed), salt)

    def _fit_projector(self, trees: list[Any], y: np.ndarray | None, landmarks: int) -> Any:
        """`projector_`: the Nyström projector of `landmarks` training trees (stratified by
        class when labels `y` are given)."""
        import jkern

        self.projector_ = jkern.fit_nystrom(self._kernel(), trees, landmarks=int(landmarks),
                                            key=self._key(0),
                                            labels=None if y is None else y.tolist())
        return self.projector_


def _model_of(solution: Any, what: str) -> Any:
    """A training solution's model, with a `ConvergenceWarning` when it did not succeed."""
    from ._solution import RESULTS

    codes = np.atleast_1d(np.asarray(solution.result))
    bad = codes[codes != RESULTS.successful]
    if bad.size:
        warnings.warn(f"{what}: {RESULTS.message(int(bad[0]))}", ConvergenceWarning,
                      stacklevel=3)
    return solution.model


class TreeKernelTransformer(_TreeKernelMixin, TransformerMixin, BaseEstimator):
    """A tree kernel as features: K(X, training trees) (`landmarks=None`; feed it to
    `SVC(kernel="precomputed")`), or the Nyström features of X (`landmarks=m`)."""

    def __init__(self, kernel: str = "sst", lam: float = 0.4, mu: float = 0.4,
                 normalize: bool = True, landmarks: int | None = None,
                 random_state: int | None = 0) -> None:
        self.kernel = kernel
        self.lam = lam
        self.mu = mu
        self.normalize = normalize
        self.landmarks = landmarks
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> TreeKernelTransformer:

        trees = as_trees(X)
        if self.landmarks is None:
            self.train_trees_ = trees
            self.projector_ = None
        else:
            labels = None if y is None else _labels(y, len(trees))
            self._fit_projector(trees, labels, self.landmarks)
        self.kernel_ = self._kernel()
        self.n_features_out_ = (len(trees) if self.projector_ is None
                                else int(self.projector_.projection.shape[1]))
        return self

    def transform(self, X: Any) -> np.ndarray:
        import jkern

        check_is_fitted(self, "kernel_")
        trees = as_trees(X)
        if self.projector_ is None:
            return np.asarray(jkern.gram(self.kernel_, trees, self.train_trees_))
        return np.asarray(self.projector_.embed(trees))


class _TreeClassifier(_TreeKernelMixin, ClassifierMixin, BaseEstimator):
    """predict / decision_function through the fitted jkern model (`model_`)."""

    model_: Any  # set by fit

    def _fitted(self, X: Any) -> tuple[Any, list[Any]]:
        """(the fitted model, X as trees); scikit-learn's `NotFittedError` before `fit`."""
        check_is_fitted(self, "model_")
        return self.model_, as_trees(X)

    def _training_set(self, X: Any, y: Any) -> tuple[list[Any], np.ndarray]:
        """(the trees, the labels) checked, and `classes_` set."""
        trees = as_trees(X)
        y = _labels(y, len(trees))
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise InputError(f"y holds one class ({str(self.classes_[0])!r}): a classifier needs "
                             "at least two")
        return trees, y

    def predict(self, X: Any) -> np.ndarray:
        model, trees = self._fitted(X)
        return np.asarray(model.predict(trees))

    def decision_function(self, X: Any) -> np.ndarray:
        """`[n]` for two classes (positive: `classes_[1]`), `[n, k]` for more."""
        model, trees = self._fitted(X)
        return np.asarray(model.decision_function(trees))


class NystromSVC(_TreeClassifier):
    """Nyström features of `landmarks` training trees (stratified by class) + linear SVMs by
    dual coordinate descent: one binary SVM for two classes, one-vs-rest for more
    (`jkern.train_nystrom_svm`)."""

    def __init__(self, kernel: str = "sst", lam: float = 0.4, mu: float = 0.4,
                 normalize: bool = True, landmarks: int = 100, C: float = 1.0,
                 random_state: int | None = 0) -> None:
        self.kernel = kernel
        self.lam = lam
        self.mu = mu
        self.normalize = normalize
        self.landmarks = landmarks
        self.C = C
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> NystromSVC:
        import jkern

        trees, y = self._training_set(X, y)
        projector = self._fit_projector(trees, y, self.landmarks)
        solution = jkern.train_nystrom_svm(projector, trees, y.tolist(), C=self.C,
                                           key=self._key(1))
        self.model_ = _model_of(solution, "NystromSVC")
        return self


class KernelSVC(_TreeClassifier):
    """The exact kernel SVM on the tree-kernel Gram of the training trees
    (`jkern.train_kernel_svm`: one binary SVM for two classes, one-vs-rest for more)."""

    def __init__(self, kernel: str = "sst", lam: float = 0.4, mu: float = 0.4,
                 normalize: bool = True, C: float = 1.0,
                 random_state: int | None = 0) -> None:
        self.kernel = kernel
        self.lam = lam
        self.mu = mu
        self.normalize = normalize
        self.C = C
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> KernelSVC:
        import jkern

        trees, y = self._training_set(X, y)
        solution = jkern.train_kernel_svm(self._kernel(), trees, y.tolist(), C=self.C)
        self.model_ = _model_of(solution, "KernelSVC")
        return self


class KDAClassifier(_TreeClassifier):
    """The kernel-based deep architecture: Nyström layer + MLP (`jkern.train_kda`), with
    `jkern.kda.train`'s rules: early stopping on a stratified development part when it holds
    at least 200 trees (`dev_fraction=None`: 10%), else `steps` optimizer steps (default
    1,000) on every tree. `dropout` and `l2` may be tuples (a grid chosen on the development
    part, as one vmapped program); `dev_fraction` set always splits, `epochs` set replaces
    the step count."""

    def __init__(self, kernel: str = "sst", lam: float = 0.4, mu: float = 0.4,
                 normalize: bool = True, landmarks: int = 100,
                 hidden: tuple[int, ...] | None = None, dropout: Any = 0.2,
                 l2: Any = 1e-4, steps: int | None = None, epochs: int | None = None,
                 patience: int | None = 20, dev_fraction: float | None = None,
                 random_state: int | None = 0) -> None:
        self.kernel = kernel
        self.lam = lam
        self.mu = mu
        self.normalize = normalize
        self.landmarks = landmarks
        self.hidden = hidden
        self.dropout = dropout
        self.l2 = l2
        self.steps = steps
        self.epochs = epochs
        self.patience = patience
        self.dev_fraction = dev_fraction
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> KDAClassifier:
        import jkern

        trees, y = self._training_set(X, y)
        solution = jkern.train_kda(
            self._fit_projector(trees, y, self.landmarks), trees, y.tolist(), key=self._key(1),
            hidden=None if self.hidden is None else list(self.hidden), dropout=self.dropout,
            l2=self.l2, steps=self.steps, epochs=self.epochs, patience=self.patience,
            dev_fraction=self.dev_fraction, split_seed=0 if self.random_state is None
            else int(self.random_state))
        self.model_ = _model_of(solution, "KDAClassifier")
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """`[n, k]` class probabilities (the softmax of the network's class scores), columns
        in `classes_` order."""
        model, trees = self._fitted(X)
        scores = np.asarray(model.class_scores(trees), np.float64)
        scores = scores - scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        return p / p.sum(axis=1, keepdims=True)


def _is_dict_rows(X: Any) -> bool:
    """Whether X is a non-empty list (or tuple) of {feature id: value} dicts."""
    return isinstance(X, (list, tuple)) and bool(X) and all(isinstance(r, dict) for r in X)


def as_sparse_rows(X: Any) -> Any:
    """X as a `jkern.SparseRows`: a SciPy sparse matrix, a dense 2-D array, a `SparseRows`
    or a list of {feature id: value} dicts."""
    from ._sparse import SparseRows

    if isinstance(X, SparseRows):
        return X
    if hasattr(X, "tocoo") and hasattr(X, "shape"):  # a SciPy sparse matrix or array
        coo = X.tocoo()
        return SparseRows.from_coo(np.asarray(coo.row), np.asarray(coo.col),
                                   np.asarray(coo.data, np.float64), tuple(coo.shape))
    if _is_dict_rows(X):
        return SparseRows.from_rows(list(X))
    a = np.asarray(X)
    if a.ndim != 2 or a.dtype.kind not in "biuf":
        raise InputError(f"X must be a 2-D numeric array, a sparse matrix or a list of "
                         f"{{feature: value}} dicts, got {type(X).__name__} of shape "
                         f"{getattr(a, 'shape', None)}")
    return SparseRows.from_dense(a.astype(np.float64))


class PAClassifier(ClassifierMixin, BaseEstimator):
    """Online PA-I with the polynomial kernel (1 + s·x)^d over sparse feature vectors
    (`jkern.pa.fit`, opal's rule): two classes, `classes_[1]` the positive one. `mode` picks
    how margins are computed (the same model in every exact mode; `"explicit"`,
    `"splitting"` and `"slicing"` need binary features). Binary rows are classified by the
    model's fastest exact form (`SupportVectorModel.classifier()`, the expanded model,
    built at `fit`): the same margins, bit for bit."""

    def __init__(self, degree: int = 2, C: float = 1.0, epochs: int = 10,
                 mode: str = "block", average: bool = False, shuffle: bool = False,
                 random_state: int | None = 0) -> None:
        self.degree = degree
        self.C = C
        self.epochs = epochs
        self.mode = mode
        self.average = average
        self.shuffle = shuffle
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary: OneVsRestClassifier for more
        tags.input_tags.sparse = True
        return tags

    def _validated(self, X: Any, y: Any = "no_validation", *, reset: bool
                   ) -> tuple[Any, Any]:
        """scikit-learn's own checks for arrays and sparse matrices (NaN/inf, complex or
        empty data, a 2-D y, the number of features against the fitted one), as every
        scikit-learn estimator; `SparseRows` and lists of dicts pass as they are."""
        from sklearn.utils.validation import validate_data

        from ._sparse import SparseRows

        if isinstance(X, SparseRows) or _is_dict_rows(X):
            if y is None:
                raise InputError("PAClassifier requires y to be passed, but the target y is "
                                 "None")
            return X, y
        sparse = ("csr", "csc", "coo")
        X = cast(Any, X)  # validate_data's stub types X by its "no_validation" default
        if isinstance(y, str) and y == "no_validation":
            return validate_data(self, X, accept_sparse=sparse, dtype=np.float64,
                                 reset=reset), None
        # y None: scikit-learn's own error
        X, y = validate_data(self, X, y, accept_sparse=sparse, dtype=np.float64, reset=reset)
        return X, y

    def fit(self, X: Any, y: Any) -> PAClassifier:
        import jax
        from sklearn.utils.multiclass import check_classification_targets

        from .pa import SupportVectorModel, fit

        X, y = self._validated(X, y, reset=True)
        rows = as_sparse_rows(X)
        y = _labels(y, rows.shape[0])
        check_classification_targets(y)  # a continuous y is an error, not a class per value
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise InputError(f"Only binary classification is supported: PA-I is a binary "
                             f"learner, and y holds {len(self.classes_)} class(es); wrap it "
                             "in sklearn.multiclass.OneVsRestClassifier for more than two")
        signs = np.where(y == self.classes_[1], 1, -1)
        seed = 0 if self.random_state is None else int(self.random_state)
        solution = fit(rows, signs, degree=self.degree, C=self.C, epochs=self.epochs,
                       mode=self.mode, average=self.average, shuffle=self.shuffle,
                       key=jax.random.PRNGKey(seed) if self.shuffle else None)
        self.model_ = _model_of(solution, "PAClassifier")
        # binary rows are classified by the fastest exact form of the model (the expanded
        # one, pecco's, where it applies: `SupportVectorModel.classifier`)
        self._fast_model = (self.model_.classifier()
                            if isinstance(self.model_, SupportVectorModel) else self.model_)
        self.n_features_in_ = rows.shape[1]
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """`[n]` margins; positive: `classes_[1]`."""
        check_is_fitted(self, "model_")
        X, _ = self._validated(X, reset=False)
        rows = as_sparse_rows(X)
        return np.asarray(self._classifier(rows).decision_function(rows))

    def _classifier(self, rows: Any) -> Any:
        """The fitted model, or for binary rows its fastest exact form (built by `fit`)."""
        from .pa import is_binary

        return getattr(self, "_fast_model", self.model_) if is_binary(rows) else self.model_

    def predict(self, X: Any) -> np.ndarray:
        return np.where(self.decision_function(X) >= 0, self.classes_[1], self.classes_[0])
