"""The CausalQwen head as a scikit-learn classifier on feature arrays.

:class:`CausalHeadClassifier` is the head's classification path on ordinary
``(n_samples, n_features)`` data: each row is one position's backbone features
``z`` (H = n_features), the classes are the vocabulary (V = n_classes), and
the head is trained with its one-vs-rest Cauchy loss only (``lam = 0``: no
regression head). For a row, the individual ``U ~ Cauchy(W_loc z + b_loc,
softplus(W_scale z + b_scale))`` is abducted, noise ``|b_noise|`` added, and
the class scores ``S_k ~ Cauchy(loc_S, scale_S)`` give the OvR probabilities
``P(S_k > C_k)`` (:func:`~causalnet.models.causal_head.outputs.ovr_probs`).

Those OvR probabilities are independent yes/no answers and need not sum to
one; :meth:`CausalHeadClassifier.predict_proba` divides them by their sum (the
usual OvR normalisation, as in scikit-learn's ``OneVsRestClassifier``), which
keeps their arg-max, and :meth:`CausalHeadClassifier.ovr_proba` returns them
unnormalised. The fitted :class:`~causalnet.models.causal_head.model.CausalHead`
is ``head_`` (its ``forward``, ``to_model``, ``do(U=...)`` all apply).

It follows scikit-learn's estimator contract (``clone``, pipelines,
``GridSearchCV``, ``cross_val_score``, ``check_estimator``); this module
imports scikit-learn, which causalnet does not require, so
``causalnet.models.causal_head`` loads it only when ``CausalHeadClassifier`` is
first used. Saving is ``save(path)`` / ``CausalHeadClassifier.load(path)``
(JSON + ``.npz``, no pickle; :mod:`causalnet.io.bundle`).

Examples
--------
>>> import numpy as np
>>> from causalnet.models.causal_head import CausalHeadClassifier
>>> rng = np.random.default_rng(0)
>>> X = np.r_[rng.normal(-2, 1, (40, 2)), rng.normal(2, 1, (40, 2))]
>>> y = np.r_[["a"] * 40, ["b"] * 40]
>>> clf = CausalHeadClassifier(random_state=0, progress=False).fit(X, y)
>>> clf.predict([[-2.0, -2.0], [2.0, 2.0]]).tolist()
['a', 'b']
>>> bool(np.allclose(clf.predict_proba(X[:3]).sum(axis=1), 1))
True
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ...arguments import check_int, check_real
from ...errors import ModelError
from ...io import bundle
from .model import CausalHead

__all__ = ["CausalHeadClassifier"]

_KIND = "causalnet.CausalHeadClassifier"


class CausalHeadClassifier(ClassifierMixin, BaseEstimator):
    """One-vs-rest Cauchy classifier: the CausalQwen head on feature arrays.

    Parameters
    ----------
    causal_dim : int, optional
        Width C of the individual U; default n_features (``W_loc`` starts as
        the identity, CausalQwen's initialisation).
    steps : int, default 300
        Adam steps.
    lr : float, default 0.05
    batch_size : int, optional
        Rows per step (default: all).
    weight_decay : float, default 0.0
        Decoupled (AdamW) decay on the weight matrices.
    scale_init, noise_init : float, default 1.0, 0.1
        Initial ``b_scale`` and ``b_noise`` (see :meth:`CausalHead.initialise`).
    random_state : int, RandomState, Generator or None
        Seeds the initial weights and the mini-batches.
    progress : bool or None, default None
        A tqdm bar over the steps (None: on a terminal or notebook, never in CI).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    head_ : CausalHead
        The fitted head (V = n_classes, H = n_features, no regression loss).
    n_features_in_ : int
    history_ : dict
        Per-step ``loss`` (also ``cls`` and ``reg``), from the head.

    Notes
    -----
    As scikit-learn asks, the constructor only stores the parameters; `fit`
    checks them and raises ModelError (a ValueError) naming a bad one.
    """

    def __init__(self, causal_dim: int | None = None, *, steps: int = 300, lr: float = 0.05,
                 batch_size: int | None = None, weight_decay: float = 0.0, scale_init: float = 1.0,
                 noise_init: float = 0.1, random_state: Any = None, progress: bool | None = None) -> None:
        self.causal_dim = causal_dim
        self.steps = steps
        self.lr = lr
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.scale_init = scale_init
        self.noise_init = noise_init
        self.random_state = random_state
        self.progress = progress

    def _rng(self) -> np.random.Generator:
        if isinstance(self.random_state, np.random.Generator):
            return self.random_state
        return np.random.default_rng(check_random_state(self.random_state).randint(2**31 - 1))

    def fit(self, X, y) -> CausalHeadClassifier:
        """Train the head's OvR loss on rows `X` (n_samples, n_features) with labels `y`.

        Raises
        ------
        ValueError
            Bad `X` or `y` (NaN, wrong shape, continuous targets), in scikit-learn's words.
        ModelError
            A parameter out of range.
        NumericalError
            Training diverged (a learning rate far too large).
        """
        steps = check_int(self.steps, "steps", low=0)
        lr = check_real(self.lr, "lr", positive=True)
        scale_init = check_real(self.scale_init, "scale_init")
        noise_init = check_real(self.noise_init, "noise_init")
        C = None if self.causal_dim is None else check_int(self.causal_dim, "causal_dim", low=1)
        if self.progress is not None and not isinstance(self.progress, (bool, np.bool_)):
            raise ModelError(f"progress must be None, True or False, got {self.progress!r}")
        before = {k: self.__dict__[k] for k in ("n_features_in_", "feature_names_in_") if k in self.__dict__}
        try:  # validate_data records n_features_in_; a failure below puts the old value back
            X, y = validate_data(self, X, y, dtype=np.float64)
            check_classification_targets(y)
            classes, y_idx = np.unique(y, return_inverse=True)
            rng = self._rng()
            head = CausalHead.initialise(vocab_size=len(classes), hidden=X.shape[1], num_id=0, causal_dim=C,
                                         scale_init=scale_init, noise_init=noise_init, lam=0.0, seed=rng)
            head.fit(X[:, None, :], y_idx[:, None], steps=steps, lr=lr, batch_size=self.batch_size,
                     weight_decay=self.weight_decay, seed=rng, progress=self.progress)
        except BaseException:
            for k in ("n_features_in_", "feature_names_in_"):
                self.__dict__.pop(k, None)
            self.__dict__.update(before)
            raise
        self.classes_ = classes
        self.head_ = head
        self.history_ = head.history_
        return self

    def ovr_proba(self, X) -> np.ndarray:
        """``(n_samples, n_classes)``: the head's one-vs-rest probabilities ``P(S_k > C_k)`` (rows need not sum to 1)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.head_.forward(X[:, None, :]).probs[:, 0, :]

    def predict_proba(self, X) -> np.ndarray:
        """``(n_samples, n_classes)``: the OvR probabilities divided by their row sums."""
        p = self.ovr_proba(X)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """The class with the largest OvR probability."""
        p = self.ovr_proba(X)
        return self.classes_[np.argmax(p, axis=1)]

    # -- saving -----------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted classifier to `path` (JSON) and `path` + ``.npz`` (arrays); no pickle.

        The classes must be numbers, strings or booleans (JSON values).
        """
        check_is_fitted(self)
        params = {k: v for k, v in self.get_params().items() if k != "random_state"}
        rs = self.random_state
        params["random_state"] = rs if rs is None or isinstance(rs, (int, np.integer)) else repr(rs)
        meta = {"params": params, "classes": _plain_labels(self.classes_), "n_features_in": int(self.n_features_in_),
                "head": self.head_.meta(), "history": self.history_}
        bundle.save(path, _KIND, meta, self.head_.params)

    @classmethod
    def load(cls, path: str | os.PathLike) -> CausalHeadClassifier:
        """Read a classifier written by :meth:`save` (exactly: same arrays, same predictions)."""
        meta, arrays = bundle.load(path, _KIND)
        try:
            params = dict(meta["params"])
            if isinstance(params.get("random_state"), str):
                params["random_state"] = None
            clf = cls(**params)
            classes = np.asarray(meta["classes"])
            head = CausalHead.from_meta(meta["head"], arrays)
            n_in = int(meta["n_features_in"])
            history = {k: [float(v) for v in vals] for k, vals in meta["history"].items()}
        except (KeyError, TypeError, ValueError) as e:
            raise ModelError(f"{os.fspath(path)!r}: not a valid CausalHeadClassifier file ({type(e).__name__}: {e})") \
                from None
        if head.dims["V"] != classes.size or head.dims["H"] != n_in:
            raise ModelError(f"{os.fspath(path)!r}: the head's shape {head.dims} disagrees with "
                             f"{classes.size} classes and {n_in} features")
        clf.classes_, clf.head_, clf.n_features_in_, clf.history_ = classes, head, n_in, history
        return clf


def _plain_labels(classes: np.ndarray) -> list:
    out = classes.tolist()
    for c in out:
        if not isinstance(c, (str, int, float, bool)):
            raise ModelError(f"cannot save class label {c!r} of type {type(c).__name__}; labels must be numbers, "
                             f"strings or booleans")
    return out

