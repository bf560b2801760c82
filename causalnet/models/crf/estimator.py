"""The linear-chain CRF estimator, with sklearn-crfsuite's methods.

The model (Lafferty et al. 2001): a token ``t`` with attribute values
``x[t, a]`` (see :mod:`.features`) and labels ``y`` have

    p(y | x) = exp( sum_t x_t · W[:, y_t] + sum_{t>0} A[y_{t-1}, y_t] ) / Z(x)

so the log unary potential of a sequence is ``x @ W`` of shape (T, K) and the
log pairwise potential is ``A`` of shape (K, K). As in CRFsuite's ``crf1d``
model there are no separate start/end (BOS/EOS) weights; a user who wants
them adds ``"BOS"``/``"EOS"`` attributes to the first/last token.

Likelihood, marginals and decoding come from the chain engine shared with
the HMMs, :mod:`causalnet.inference.chain`. To run inference on
log-potentials you already have, use :meth:`CRF.decode_potentials` and
:meth:`CRF.marginals_potentials`, or call that engine directly;
:meth:`CRF.from_weights` builds an estimator from given weight matrices and
:meth:`CRF.unary_potentials` returns the unary potentials of a batch.

Training minimises CRFsuite's objective (``train_lbfgs.c``; see
:mod:`.objective`)::

    L(w) = sum_i -log p(y_i | x_i; w) + c1 * ||w||_1 + c2 * ||w||_2^2

by L-BFGS, or OWL-QN when ``c1 > 0`` (:mod:`.optimize`); ``solver="scipy"``
uses ``scipy.optimize.minimize(method="L-BFGS-B")`` instead (L2 only). The
stopping tests are CRFsuite's: ``max_iterations``, ``||g|| / max(1, ||w||) <
epsilon``, and a relative improvement below ``delta`` over the last
``period`` iterations. The causal view (``to_model``, ``query``) is
:mod:`.causal`.

Examples
--------
>>> from causalnet.models.crf import CRF
>>> X = [[{"w": "the"}, {"w": "dog"}, {"w": "runs"}], [{"w": "a"}, {"w": "cat"}]]
>>> y = [["D", "N", "V"], ["D", "N"]]
>>> crf = CRF(c2=0.01, max_iterations=50).fit(X, y)
>>> crf.predict([[{"w": "the"}, {"w": "cat"}]])
[['D', 'N']]
>>> crf.classes_
['D', 'N', 'V']

References
----------
.. [1] J. Lafferty, A. McCallum, F. Pereira, "Conditional random fields:
       probabilistic models for segmenting and labeling sequence data", ICML 2001.
.. [2] C. Sutton, A. McCallum, "An introduction to conditional random fields",
       Foundations and Trends in Machine Learning 4(4), 2012.
.. [3] N. Okazaki, "CRFsuite: a fast implementation of conditional random
       fields", 2007.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import chain as _iter_chain

import numpy as np

from ... import limits
from ...arguments import check_bool, check_int, check_real
from ...errors import EvidenceError, ModelError, NotFittedError, NumericalError, ShapeError
from ...inference import chain as _chain
from ...inference.chain.layout import Layout
from ...progress import progress_bar
from . import causal, saving
from .features import Vocab, encode_labels, parse_sequences
from .holdout import HoldOut
from .layout import split
from .objective import Objective, active_weights
from .optimize import Progress, lbfgs_scipy, quasi_newton

__all__ = ["CRF"]

# Symbols: n sequences, T steps (padded), K labels, F attributes, N tokens.

_PARAMS = (
    "algorithm", "c1", "c2", "max_iterations", "all_possible_states", "all_possible_transitions", "min_freq",
    "num_memories", "epsilon", "period", "delta", "max_linesearch", "solver", "callback", "progress",
)  # fmt: skip
_CRFSUITE_ALGORITHMS = ("l2sgd", "ap", "pa", "arow")


def check_params(p):
    """Validate a dict of CRF constructor parameters; raise ModelError naming the first bad one."""
    for name in ("c1", "c2", "min_freq", "epsilon", "delta"):
        check_real(p[name], f"CRF parameter {name}", nonnegative=True)
    for name, low in (("num_memories", 1), ("period", 0), ("max_linesearch", 1)):
        check_int(p[name], f"CRF parameter {name}", low=low)
    if p["max_iterations"] is not None:
        check_int(p["max_iterations"], "CRF parameter max_iterations (None or an int)", low=1)
    for name in ("all_possible_states", "all_possible_transitions"):
        check_bool(p[name], f"CRF parameter {name}")
    _check_choices(p)
    if p["callback"] is not None and not callable(p["callback"]):
        raise ModelError(f"CRF parameter callback must be callable; got {type(p['callback']).__name__}")
    if p["progress"] is not None and not isinstance(p["progress"], (bool, np.bool_)):
        raise ModelError(f"CRF parameter progress must be None, True or False; got {p['progress']!r}")


def _check_choices(p):
    alg, solver = p["algorithm"], p["solver"]
    if alg in _CRFSUITE_ALGORITHMS:
        raise ModelError(f"CRF algorithm {alg!r} (a CRFsuite training algorithm) is not implemented; use 'lbfgs'")
    if not (isinstance(alg, str) and alg == "lbfgs"):
        raise ModelError(f"CRF parameter algorithm must be 'lbfgs'; got {alg!r}")
    if not (isinstance(solver, str) and solver in ("lbfgs", "scipy")):
        raise ModelError(f"CRF parameter solver must be 'lbfgs' or 'scipy'; got {solver!r}")
    if solver == "scipy" and p["c1"] > 0:
        raise ModelError(f"solver='scipy' (L-BFGS-B) handles the L2 penalty only; got c1={p['c1']}, use solver='lbfgs'")


class CRF:
    """Linear-chain CRF estimator with sklearn-crfsuite's methods.

    Parameters
    ----------
    algorithm : {"lbfgs"}, default "lbfgs"
        CRFsuite's training algorithm; only L-BFGS (OWL-QN with ``c1 > 0``)
        is implemented (as in sklearn-crfsuite's default).
    c1 : float, default 0.0
        Coefficient of the L1 penalty ``c1 * ||w||_1``; when positive the
        optimiser is OWL-QN (as in CRFsuite).
    c2 : float, default 1.0
        Coefficient of the L2 penalty ``c2 * ||w||^2`` (CRFsuite's convention:
        no factor 1/2).
    max_iterations : int >= 1, optional
        Maximum number of quasi-Newton iterations; unlimited by default.
    all_possible_states : bool, default False
        If False, a state weight exists only for (attribute, label) pairs that
        occur together in the training data (CRFsuite's default); others are
        held at zero. If True every pair gets a weight.
    all_possible_transitions : bool, default False
        Likewise for label pairs (y_{t-1}, y_t).
    min_freq : float, default 0.0
        Drop state features whose summed attribute value over training tokens
        of that label is not greater than `min_freq` (0 keeps all).
    num_memories : int, default 6
        L-BFGS memory (CRFsuite's default).
    epsilon : float, default 1e-5
        Stop when ``||g|| / max(1, ||w||) < epsilon``.
    period, delta : int, float, default 10, 1e-5
        Stop when the objective improved by a relative amount below `delta`
        over the last `period` iterations (0 disables).
    max_linesearch : int, default 20
        Maximum line-search trials per iteration.
    solver : {"lbfgs", "scipy"}, default "lbfgs"
        ``"lbfgs"``: :mod:`causalnet.models.crf.optimize`'s numpy L-BFGS,
        which becomes OWL-QN when ``c1 > 0``. ``"scipy"``:
        ``scipy.optimize.minimize(method="L-BFGS-B")`` (L2 only, ``c1`` must
        be 0), same objective and stopping tests; its own bookkeeping was
        measured at 15 ms per iteration at 1.3e5 weights (180 ms with a
        multi-threaded BLAS on busy shared cores), about a whole objective
        evaluation on the benchmark.
    callback : callable, optional
        Called after every iteration with a dict (``iteration``, ``loss``,
        ``log_likelihood``, ``grad_norm``, ``weight_norm``,
        ``active_features``, ``n_evals``, ``seconds``). Returning True stops
        training. The library itself never prints.
    progress : bool or None, default None
        A tqdm progress bar over the iterations: None shows it on a terminal
        or in a notebook and never when the ``CI`` environment variable is
        set (:func:`causalnet.progress.progress_bar`); False hides it.

    Attributes
    ----------
    classes_ : list
        Labels in order of first appearance in the training data.
    attributes_ : list
        Attribute names (``"key:value"`` for string features, ``"key"`` for
        numeric ones, column indices for dense input), index = row of
        `state_weights_`.
    state_weights_ : ndarray of shape (F, K)
    transition_weights_ : ndarray of shape (K, K)
        ``transition_weights_[j, k]`` is the weight of ``y_{t-1}=j, y_t=k``.
    state_features_ : dict
        ``{(attribute, label): weight}`` for the non-zero state weights.
    transition_features_ : dict
        ``{(label_from, label_to): weight}`` for the non-zero transition weights.
    training_log_ : TrainingLog (a list of dict)
        The per-iteration records also passed to `callback`, with the
        held-out scores when `fit` was given ``X_dev``, ``y_dev``;
        ``training_log_.iterations`` and ``.last_iteration`` as in
        sklearn-crfsuite.
    size_ : int
        Bytes of the fitted weights (sklearn-crfsuite: the model file's size).
    n_iter_ : int

    Notes
    -----
    As in scikit-learn, the constructor and `set_params` only store the
    parameters (`set_params` refuses unknown names); `fit` checks them first
    and a bad one raises ModelError naming it before anything changes.

    Input follows python-crfsuite (see :mod:`causalnet.models.crf.features`):
    ``X`` is a list of sequences of items, each a dict of features or a list
    of attribute strings; or dense, a list of ``(T_i, F)`` arrays or one
    ``(n, T, F)`` array with a left-aligned ``mask`` of shape (n, T).
    Attributes not seen in training are ignored at prediction time, as in
    CRFsuite.
    """

    def __init__(
        self,
        algorithm: str = "lbfgs",
        *,
        c1: float = 0.0,
        c2: float = 1.0,
        max_iterations: int | None = None,
        all_possible_states: bool = False,
        all_possible_transitions: bool = False,
        min_freq: float = 0.0,
        num_memories: int = 6,
        epsilon: float = 1e-5,
        period: int = 10,
        delta: float = 1e-5,
        max_linesearch: int = 20,
        solver: str = "lbfgs",
        callback: Callable[[dict], bool | None] | None = None,
        progress: bool | None = None,
    ) -> None:
        self.algorithm = algorithm
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.min_freq = min_freq
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.max_linesearch = max_linesearch
        self.solver = solver
        self.callback = callback
        self.progress = progress

    # -- scikit-learn protocol ------------------------------------------------

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters (scikit-learn's estimator protocol)."""
        return {name: getattr(self, name) for name in _PARAMS}

    def set_params(self, **params) -> CRF:
        """Set constructor parameters (scikit-learn's estimator protocol).

        Unknown names raise ModelError and set nothing; values are checked by `fit`.
        """
        known = self.get_params()
        for name in params:
            if name not in known:
                raise ModelError(f"CRF has no parameter {name!r}; parameters: {sorted(known)}")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "state_weights_")

    def __sklearn_tags__(self):
        """scikit-learn's estimator tags (scikit-learn >= 1.6), so `clone`, `cross_val_score` and
        `GridSearchCV` work. Not tagged a classifier: its targets are label sequences, which
        scikit-learn's stratified splitters do not take (sklearn-crfsuite does the same)."""
        from sklearn.utils import Tags, TargetTags  # optional dependency: only scikit-learn calls this

        tags = Tags(estimator_type=None, target_tags=TargetTags(required=True))
        tags.input_tags.two_d_array = False
        tags.non_deterministic = False
        return tags

    # -- construction ---------------------------------------------------

    @classmethod
    def from_weights(
        cls,
        state_weights,
        transition_weights,
        labels: Sequence[Hashable],
        attributes: Sequence[Hashable] | None = None,
    ) -> CRF:
        """A fitted CRF from given weights, for inference only.

        Parameters
        ----------
        state_weights : array_like of shape (F, K)
        transition_weights : array_like of shape (K, K)
            ``transition_weights[j, k]`` scores ``y_{t-1}=j, y_t=k``.
        labels : sequence of K >= 1 distinct, hashable labels
        attributes : sequence of F attribute names, optional
            Names that dict features map to (``"key:value"`` or ``"key"``);
            default ``range(F)``, i.e. dense input only.

        Returns
        -------
        CRF

        Raises
        ------
        ShapeError
            If the shapes disagree with each other, `labels` or `attributes`.
        ModelError
            If there are no labels, labels or attributes repeat or are not
            hashable, or a weight is not a finite real number.
        """
        labels = _distinct(labels, "labels")
        if not labels:
            raise ModelError("labels must name at least one label; got none")
        K = len(labels)
        W = _real_array(state_weights, "state_weights")
        A = _real_array(transition_weights, "transition_weights")
        if W.ndim != 2 or W.shape[1] != K:
            raise ShapeError(f"state_weights must have shape (F, {K}) for {K} labels; got {W.shape}")
        if A.shape != (K, K):
            raise ShapeError(f"transition_weights must have shape {(K, K)} for {K} labels; got {A.shape}")
        attributes = list(range(W.shape[0])) if attributes is None else _distinct(attributes, "attributes")
        if len(attributes) != W.shape[0]:
            raise ShapeError(f"{len(attributes)} attributes given for state_weights with {W.shape[0]} rows")
        crf = cls()
        crf._set_fitted(W, A, labels, Vocab(attributes))
        crf.training_log_ = []
        crf.n_iter_ = 0
        return crf

    def _set_fitted(self, W, A, labels, vocab):
        self.state_weights_ = W
        self.transition_weights_ = A
        self.classes_ = labels
        self.attributes_ = vocab.names
        self._vocab = vocab
        self._labels = np.empty(len(labels), dtype=object)
        self._labels[:] = labels

    # -- training --------------------------------------------------------

    def fit(self, X, y, X_dev=None, y_dev=None, *, mask=None, mask_dev=None) -> CRF:
        """Train by (OWL-QN or L-)BFGS on the regularised log-likelihood.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of (T_i, F) arrays, or ndarray of shape (n, T, F)
        y : list of label sequences, or array of shape (n, T) with dense `X`
            Labels may be any hashables (strings in CRFsuite).
        X_dev, y_dev : held-out sequences and labels, optional
            As sklearn-crfsuite: after every iteration the current weights are
            scored on them and the iteration's `training_log_` record gains
            ``dev_log_likelihood``, ``dev_item_accuracy`` and
            ``dev_instance_accuracy`` (see :mod:`.holdout`). They do not
            change the training. Give both or neither.
        mask : ndarray of bool, shape (n, T), optional
            Left-aligned lengths for a 3-D `X`; positions beyond are ignored.
        mask_dev : ndarray of bool, optional
            The same for a 3-D `X_dev`.

        Returns
        -------
        self

        Raises
        ------
        ShapeError
            If `X` and `y` disagree in the number or length of sequences, or
            a sequence is empty.
        EvidenceError
            If a feature value is not finite or of an unsupported type, or a
            label is not hashable.
        ModelError
            If a parameter is out of range.
        ResourceError
            If the trained weights would not fit the ``max_table_bytes`` limit.

        A failed fit leaves the estimator as it was.
        """
        check_params(self.get_params())
        lengths, feats = parse_sequences(X, mask)
        if lengths.size == 0:
            raise ShapeError("X has no sequences; fit needs at least one labelled sequence")
        y_idx, labels = encode_labels(y, lengths, index=None)
        K = len(labels)
        vocab = feats.new_vocab()
        Xd = feats.design(vocab, lengths, grow=True)  # (N, F)
        state_idx, trans_idx = active_weights(
            Xd, y_idx, lengths, K, self.all_possible_states, self.all_possible_transitions, self.min_freq
        )
        P = state_idx.size + trans_idx.size
        limits.check_bytes(
            8.0 * P * (2 * self.num_memories + 8) + 8.0 * Xd.shape[1] * K,
            what="CRF training weights and L-BFGS memory",
            cause=f"{P} trained weights ({Xd.shape[1]} attributes x {K} labels), memory {self.num_memories}",
        )
        obj = Objective(Xd, y_idx, Layout(lengths), state_idx, trans_idx, K, float(self.c2))
        holdout = _holdout(X_dev, y_dev, mask_dev, feats, vocab, labels, obj)
        with progress_bar(self.max_iterations, progress=self.progress, desc="CRF.fit", unit="it") as bar:
            progress = Progress(obj, self.epsilon, self.period, self.delta, _with_bar(bar, self.callback), holdout)
            theta = self._minimise(obj, np.zeros(P), progress)
        W, A = obj.unpack(theta)
        self._set_fitted(W.copy(), A, labels, vocab)
        self.training_log_ = progress.log
        self.n_iter_ = len(progress.log)
        return self

    def _minimise(self, obj, theta, progress):
        max_iter = 2**31 - 1 if self.max_iterations is None else int(self.max_iterations)
        if not theta.size:
            return theta
        if self.solver == "lbfgs":
            return quasi_newton(obj, theta, float(self.c1), max_iter, self.num_memories, self.max_linesearch, progress)
        return lbfgs_scipy(obj, theta, max_iter, self.num_memories, self.max_linesearch, progress)

    # -- inference ---------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "state_weights_"):
            raise NotFittedError("this CRF is not fitted; call fit(X, y) or CRF.from_weights(...) first")

    def _token_unary(self, X, mask):
        """Lengths (n,) and token unary potentials (N, K)."""
        self._check_fitted()
        lengths, feats = parse_sequences(X, mask)
        Xd = feats.design(self._vocab, lengths)  # (N, F)
        U = Xd @ self.state_weights_  # (N, K)
        if not np.isfinite(U).all():
            token = int(np.flatnonzero(~np.isfinite(U).all(1))[0])
            raise NumericalError(
                f"the unary log-potentials x·W of token {token} (in input order) overflow to {U[token].tolist()}; "
                "feature values or weights are too large"
            )
        return lengths, U

    def unary_potentials(self, X, *, mask=None):
        """Log unary potentials ``x_t · W`` of a batch, padded to its longest sequence.

        Parameters
        ----------
        X : sequences as accepted by `fit`
        mask : ndarray of bool, shape (n, T), optional

        Returns
        -------
        unary : ndarray of shape (n, T, K)
            Zero beyond each sequence's length.
        mask : ndarray of bool, shape (n, T)
        """
        lengths, U = self._token_unary(X, mask)
        T = int(lengths.max()) if lengths.size else 0
        m = np.arange(T) < lengths[:, None]  # (n, T)
        unary = np.zeros((lengths.size, T, U.shape[1]))  # (n, T, K)
        unary[m] = U
        return unary, m

    def predict(self, X, *, mask=None) -> list:
        """Most probable label sequence of every input sequence (Viterbi).

        Parameters
        ----------
        X : sequences as accepted by `fit`
        mask : ndarray of bool, shape (n, T), optional

        Returns
        -------
        list of lists of labels
        """
        lengths, U = self._token_unary(X, mask)
        lay = Layout(lengths)
        paths, _ = _chain.viterbi(lay.pad(U), self.transition_weights_, lay.mask)  # (n, T)
        flat = self._labels[paths.ravel()[lay.rows]].tolist()
        return split(flat, lengths)

    def predict_single(self, xseq) -> list:
        """Labels of one sequence (a list of items)."""
        return self.predict([xseq])[0]

    def predict_marginals(self, X, *, mask=None) -> list:
        """Posterior marginals ``p(y_t = label | x)`` of every item.

        Returns
        -------
        list of lists of dicts ``{label: probability}``
        """
        lengths, P = self._marginals(X, mask)
        labels = self.classes_
        return split([dict(zip(labels, row)) for row in P.tolist()], lengths)

    def predict_marginals_single(self, xseq) -> list:
        """Marginals of one sequence: a list of ``{label: probability}``."""
        return self.predict_marginals([xseq])[0]

    def _marginals(self, X, mask):
        lengths, U = self._token_unary(X, mask)
        lay = Layout(lengths)
        M = _chain.forward_backward(lay.pad(U), self.transition_weights_, lay.mask).marginals  # (n, T, K)
        return lengths, M.reshape(-1, U.shape[1])[lay.rows]  # (N, K)

    def score(self, X, y, *, mask=None) -> float:
        """Token accuracy of `predict(X)` against `y` (labels unknown to the model count as errors)."""
        pred = self.predict(X, mask=mask)
        lengths = np.fromiter(map(len, pred), np.intp, len(pred))
        if not lengths.sum():
            raise ShapeError("X has no tokens; score needs at least one labelled sequence")
        index = {lab: i for i, lab in enumerate(self.classes_)}
        truth, _ = encode_labels(y, lengths, index=index)
        guess = np.fromiter(map(index.__getitem__, _iter_chain.from_iterable(pred)), np.intp, truth.size)
        return float(np.mean(guess == truth))

    # -- as a causal model ---------------------------------------------------------

    def to_model(self, T=None, X=None):
        """The CRF as a DAG of label, token and factor nodes (one sequence); see
        :func:`causalnet.models.crf.causal.to_model`. Conditioning on every factor node
        being true (``factor_evidence(model)``) gives the CRF's posterior."""
        return causal.to_model(self, T, X)

    def query(self, targets, X, *, evidence=None, do=None):
        """Label marginals of one sequence given observed labels and token interventions.

        ``crf.query("y[3]", seq, do={"x[4]": {"word": "Paris"}})`` answers what label 3 would be had
        token 4 been different. See :func:`causalnet.models.crf.causal.query`.
        """
        return causal.query(self, targets, X, evidence=evidence, do=do)

    # -- inference on given log-potentials ----------------------------------------------

    def _check_potentials(self, unary, mask):
        self._check_fitted()
        K = len(self.classes_)
        u = _real_array(unary, "unary log-potentials", error=EvidenceError)
        if u.ndim == 2:
            u = u[None]
        if u.ndim != 3 or u.shape[-1] != K:
            raise ShapeError(
                f"unary log-potentials must have shape (n, T, {K}) or (T, {K}) for {K} labels; got {np.shape(unary)}"
            )
        if np.isnan(u).any() or np.isposinf(u).any():
            raise EvidenceError("unary log-potentials must be finite or -inf (a forbidden label); got NaN or +inf")
        if mask is not None:
            mask = np.asarray(mask)
            expected = u.shape[:2]
            if mask.shape != expected and not (np.ndim(unary) == 2 and mask.shape == expected[1:]):
                raise ShapeError(f"mask must have shape (n, T) = {expected} like unary; got {mask.shape}")
            mask = mask.reshape(expected)
        return u, mask

    def decode_potentials(self, unary, *, mask=None) -> tuple[list, np.ndarray]:
        """Viterbi labels for given unary log-potentials, with this CRF's transitions.

        For inference on potentials computed elsewhere (e.g. a neural network's
        emission scores); :meth:`from_weights` with an empty feature set gives
        a CRF that is only a transition matrix.

        Parameters
        ----------
        unary : ndarray of shape (n, T, K) or (T, K)
        mask : ndarray of bool, shape (n, T) (or (T,) with a 2-D `unary`), optional

        Returns
        -------
        labels : list of lists of labels (ragged by the mask)
        scores : ndarray of shape (n,)
            Unnormalised log-scores of the best paths.
        """
        u, mask = self._check_potentials(unary, mask)
        paths, scores = _chain.viterbi(u, np.asarray(self.transition_weights_, dtype=np.float64), mask)
        labels = np.asarray(self.classes_, dtype=object)
        return [labels[p[p >= 0]].tolist() for p in paths], scores

    def marginals_potentials(self, unary, *, mask=None) -> tuple[np.ndarray, np.ndarray]:
        """Posterior marginals ``(n, T, K)`` and log-partitions ``(n,)`` for given unary log-potentials."""
        u, mask = self._check_potentials(unary, mask)
        post = _chain.forward_backward(u, np.asarray(self.transition_weights_, dtype=np.float64), mask)
        return post.marginals, post.log_z

    # -- saving ----------------------------------------------------------------------------

    def save(self, path) -> None:
        """Write this fitted CRF to `path` (JSON: labels, attributes, settings) and beside it an ``.npz``
        of the weights; no pickle, exact round trip (:mod:`causalnet.models.crf.saving`).

        Raises
        ------
        ModelError
            If the CRF is not fitted, or a label or attribute name is not a JSON value.
        ModelFileNotFoundError, ModelFilePermissionError
            If the folder does not exist or cannot be written.
        """
        self._check_fitted()
        saving.save(self, path)

    @classmethod
    def load(cls, path) -> CRF:
        """Read a CRF written by :meth:`save`; see :func:`causalnet.models.crf.saving.load`."""
        return saving.load(cls, path)

    # -- sklearn-crfsuite style views -------------------------------------

    @property
    def state_features_(self) -> dict:
        self._check_fitted()
        W = self.state_weights_
        a, k = np.nonzero(W)
        return {(self.attributes_[i], self.classes_[j]): float(W[i, j]) for i, j in zip(a.tolist(), k.tolist())}

    @property
    def num_attributes_(self) -> int:
        """Number of attributes (rows of `state_weights_`), as sklearn-crfsuite's ``num_attributes_``."""
        self._check_fitted()
        return len(self.attributes_)

    @property
    def size_(self) -> int:
        """Bytes of the fitted weights (sklearn-crfsuite's ``size_`` is its model file's size)."""
        self._check_fitted()
        return int(self.state_weights_.nbytes + self.transition_weights_.nbytes)

    @property
    def transition_features_(self) -> dict:
        self._check_fitted()
        A = self.transition_weights_
        a, k = np.nonzero(A)
        return {(self.classes_[i], self.classes_[j]): float(A[i, j]) for i, j in zip(a.tolist(), k.tolist())}


def _holdout(X_dev, y_dev, mask_dev, feats, vocab, labels, obj):
    """The held-out evaluator of `fit`, or None without a held-out set."""
    if X_dev is None and y_dev is None:
        return None
    if X_dev is None or y_dev is None:
        given, missing = ("X_dev", "y_dev") if y_dev is None else ("y_dev", "X_dev")
        raise ModelError(f"{given} was given without {missing}; give both held-out sequences and labels, or neither")
    lengths, dev = parse_sequences(X_dev, mask_dev)
    if lengths.size == 0:
        raise ShapeError("X_dev has no sequences; leave X_dev=None for no held-out evaluation")
    if type(dev) is not type(feats):
        raise EvidenceError("X_dev must be in the same form as X (feature dicts or dense arrays)")
    y_idx, _ = encode_labels(y_dev, lengths, index={lab: i for i, lab in enumerate(labels)})
    return HoldOut(dev.design(vocab, lengths), y_idx, lengths, obj.unpack)


def _with_bar(bar, callback):
    """The per-iteration hook: advance `bar`, then call the user's `callback` (its answer stops training)."""

    def hook(entry):
        bar.update(1)
        bar.set_postfix(loss=f"{entry['loss']:.6g}", refresh=False)
        return callback(entry) if callback is not None else None

    return hook


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------


def _real_array(a, what, error=ModelError):
    """`a` as a float64 array; raises `error` for non-numeric or complex input."""
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as err:
        raise error(f"{what} must be an array of real numbers; got {type(a).__name__}") from err
    if arr.dtype.kind not in "biuf":
        raise error(f"{what} must hold real numbers; got dtype {arr.dtype}")
    if error is ModelError and not np.isfinite(arr).all():
        raise ModelError(f"{what} must be finite")
    return np.array(arr, dtype=np.float64)


def _distinct(values, what):
    """`values` as a list of distinct hashables; raises ModelError."""
    if isinstance(values, (str, bytes)):
        raise ModelError(f"{what} must be a sequence of names, not one {type(values).__name__} {values!r}")
    try:
        out = list(values)
        unique = set(out)
    except TypeError as err:
        raise ModelError(f"{what} must be a sequence of hashable names; {err}") from err
    if len(unique) != len(out):
        raise ModelError(f"{what} must be distinct; got {out if len(out) <= 20 else out[:20] + ['...']}")
    return out
