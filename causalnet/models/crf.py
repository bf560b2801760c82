"""Linear-chain conditional random fields with a CRFsuite-like estimator.

Terms
-----
A token ``t`` of a sequence carries *attributes* ``a`` with values ``x[t, a]``
(an indicator 1.0 for a string-valued feature, the number itself for a
numeric one). A *state feature* pairs an attribute with a label and has
weight ``W[a, k]``; a *transition feature* pairs two labels and has weight
``A[j, k]``. The model (Lafferty et al. 2001) is

    p(y | x) = exp( sum_t x_t · W[:, y_t] + sum_{t>0} A[y_{t-1}, y_t] ) / Z(x)

so the log unary potential of a sequence is ``x @ W`` of shape (T, K) and the
log pairwise potential is ``A`` of shape (K, K). As in CRFsuite's ``crf1d``
model there are no separate start/end (BOS/EOS) weights; a user who wants
them adds ``"BOS"``/``"EOS"`` attributes to the first/last token.

Likelihood, marginals, decoding and the feature expectations needed for the
gradient come from the chain engine shared with the HMMs,
:mod:`causalnet.inference.chain`. To run inference on log-potentials you
already have, call that engine directly (``chain.viterbi(unary, pairwise,
mask)``, ``chain.forward_backward(...)``); :meth:`CRF.from_weights` builds an
estimator from given weight matrices, and ``CRF._unary`` returns the unary
potentials of a batch.

Training minimises CRFsuite's objective (``train_lbfgs.c``)::

    L(w) = sum_i -log p(y_i | x_i; w) + c1 * ||w||_1 + c2 * ||w||_2^2

(note: ``c2`` multiplies the squared norm itself, not half of it, so the
gradient of the penalty is ``2 * c2 * w``). With ``c1 == 0`` the optimiser is
scipy's L-BFGS-B; with ``c1 > 0`` it is OWL-QN (Andrew & Gao 2007), the
method CRFsuite switches to for L1, implemented here in numpy with the same
backtracking line search on the pseudo-gradient. The stopping tests are
CRFsuite's: ``max_iterations``, ``||g|| / max(1, ||w||) < epsilon``, and a
relative improvement below ``delta`` over the last ``period`` iterations.

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
.. [3] G. Andrew, J. Gao, "Scalable training of L1-regularized log-linear
       models", ICML 2007 (OWL-QN).
.. [4] N. Okazaki, "CRFsuite: a fast implementation of conditional random
       fields", 2007.
"""

from __future__ import annotations

import numbers
import operator
import time
import warnings
from collections.abc import Callable, Hashable, Sequence
from itertools import chain as _iter_chain
from itertools import repeat

import numpy as np
import scipy.sparse as sp
from scipy.optimize import line_search, minimize

from ..errors import EvidenceError, ModelError, ShapeError
from ..inference import chain as _chain

__all__ = ["CRF"]

# Symbols: n sequences, T steps (padded), K labels, F attributes, N tokens.

# Value types handled by the vectorised feature path; anything else (nested
# dicts/lists, bytes, str subclasses, None, ...) goes through `_item_pairs`.
_FAST_VALUE_TYPES = frozenset({str, float, int, bool, np.float64, np.float32, np.int64, np.int32, np.bool_})

# Sequences are grouped into buckets of similar length, each padded to its own
# maximum; a bucket costs about T_b * (_BUCKET_OVERHEAD + n_b) "sequence steps"
# (the overhead is the per-step cost of a numpy call, in sequences).
_BUCKET_OVERHEAD = 48


# ---------------------------------------------------------------------------
# features: X -> sparse design matrix (N, F)
# ---------------------------------------------------------------------------


def _item_pairs(item, s, t, prefix=""):
    """(name, value) pairs of one token's features, pycrfsuite's rules; slow path."""
    out = []
    if isinstance(item, dict):
        for key, value in item.items():
            key = _as_str(key, s, t)
            if isinstance(value, (str, bytes)):
                out.append((f"{prefix}{key}:{_as_str(value, s, t)}", 1.0))
            elif isinstance(value, (dict, list, set, tuple)):
                out.extend(_item_pairs(value, s, t, f"{prefix}{key}:"))
            elif isinstance(value, (numbers.Real, np.bool_)):
                v = float(value)
                if not np.isfinite(v):
                    raise EvidenceError(
                        f"feature {prefix + key!r} of item {t} in sequence {s} is {v}; numeric feature values must be finite"
                    )
                out.append((prefix + key, v))
            else:
                raise EvidenceError(
                    f"feature {prefix + key!r} of item {t} in sequence {s} has a value of type "
                    f"{type(value).__name__}; expected str, bool, a real number, or a nested dict/list of them"
                )
    elif isinstance(item, (list, tuple, set, frozenset)):
        for key in item:
            out.append((prefix + _as_str(key, s, t), 1.0))
    else:
        raise EvidenceError(
            f"item {t} of sequence {s} is a {type(item).__name__}; expected a dict of features or a list of attribute strings"
        )
    return out


def _as_str(key, s, t):
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bytes):
        return key.decode("utf8")
    raise EvidenceError(f"item {t} of sequence {s} has a feature name of type {type(key).__name__}; expected str")


def _locate(counts, lengths, entry):
    """(sequence, item) of flat feature entry `entry`."""
    token = int(np.searchsorted(np.cumsum(counts), entry, side="right"))
    s = int(np.searchsorted(np.cumsum(lengths), token, side="right"))
    return s, token - int(np.sum(lengths[:s]))


def _flatten_dicts(X, lengths):
    """Feature names, values and per-token counts of dict/list-of-str sequences.

    Returns
    -------
    names : list of str, length nnz
    values : ndarray of shape (nnz,)
    counts : ndarray of int, shape (N,)
    """
    items = list(_iter_chain.from_iterable(X))
    if set(map(type, items)) <= {dict}:
        keys = list(_iter_chain.from_iterable(items))  # nnz
        vals = list(_iter_chain.from_iterable(map(dict.values, items)))  # nnz
        types = list(map(type, vals))
        if set(types) <= _FAST_VALUE_TYPES:
            counts = np.fromiter(map(len, items), np.intp, len(items))  # (N,)
            try:
                names = [k + ":" + v if c is str else k for k, v, c in zip(keys, vals, types)]
            except TypeError:  # a non-str key with a str value: let the slow path name it
                names = None
            if names is not None:
                values = np.ones(len(vals))  # (nnz,)
                numeric = np.fromiter(map(operator.is_not, types, repeat(str)), bool, len(types))
                if numeric.any():
                    values[numeric] = np.array(vals, dtype=object)[numeric].astype(float)
                    bad = ~np.isfinite(values)
                    if bad.any():
                        e = int(np.flatnonzero(bad)[0])
                        s, t = _locate(counts, lengths, e)
                        raise EvidenceError(
                            f"feature {keys[e]!r} of item {t} in sequence {s} is {values[e]}; "
                            "numeric feature values must be finite"
                        )
                return names, values, counts
    # slow path: nested values, lists of attribute strings, bytes, odd types
    names, vals, counts = [], [], np.empty(len(items), np.intp)
    j = 0
    for s, seq in enumerate(X):
        for t, item in enumerate(seq):
            pairs = _item_pairs(item, s, t)
            counts[j] = len(pairs)
            j += 1
            for name, v in pairs:
                names.append(name)
                vals.append(v)
    return names, np.asarray(vals, dtype=float), counts


def _parse_X(X, mask):
    """Split input into per-sequence lengths and token features.

    Returns
    -------
    lengths : ndarray of int, shape (n,)
    feats : ("dense", ndarray (N, F)) or ("names", (names, values, counts))
    """
    if isinstance(X, np.ndarray) and X.dtype != object:
        if X.ndim != 3:
            raise ShapeError(f"dense X must have shape (n, T, F) or be a list of (T_i, F) arrays; got shape {X.shape}")
        n, T, _ = X.shape
        if mask is None:
            mask = np.ones((n, T), bool)
        mask = np.asarray(mask)
        if mask.shape != (n, T):
            raise ShapeError(f"mask must have shape (n, T) = {(n, T)} like X; got {mask.shape}")
        mask = mask.astype(bool)
        lengths = mask.sum(1)
        if not np.array_equal(mask, np.arange(T) < lengths[:, None]):
            s = int(np.flatnonzero((mask != (np.arange(T) < lengths[:, None])).any(1))[0])
            raise ShapeError(f"mask row {s} is not left-aligned (True for the first L steps, then False)")
        dense = np.asarray(X[mask], dtype=float)  # (N, F)
        _check_lengths(lengths)
        _check_finite_dense(dense, lengths)
        return lengths, ("dense", dense)
    if mask is not None:
        raise ShapeError("mask is only accepted with X given as one (n, T, F) array")
    if isinstance(X, (str, bytes, dict)):
        raise EvidenceError(f"X must be a list of sequences; got a {type(X).__name__}")
    X = list(X)
    try:
        lengths = np.fromiter(map(len, X), np.intp, len(X))
    except TypeError as err:
        s = next(i for i, x in enumerate(X) if not hasattr(x, "__len__"))
        raise EvidenceError(f"sequence {s} of X is a {type(X[s]).__name__}; expected a list of items") from err
    _check_lengths(lengths)
    if X and all(isinstance(x, np.ndarray) for x in X):
        bad = [i for i, x in enumerate(X) if x.ndim != 2 or x.shape[1] != X[0].shape[1]]
        if bad or X[0].ndim != 2:
            s = bad[0] if bad else 0
            raise ShapeError(
                f"sequence {s} of X has shape {X[s].shape}; dense sequences must be (T_i, F) with one F, F = {X[0].shape[-1]}"
            )
        dense = np.concatenate(X, axis=0).astype(float, copy=False)  # (N, F)
        _check_finite_dense(dense, lengths)
        return lengths, ("dense", dense)
    for s, x in enumerate(X):
        if isinstance(x, (str, dict, np.ndarray)):
            raise EvidenceError(f"sequence {s} of X is a {type(x).__name__}; expected a list of feature dicts")
    return lengths, ("names", _flatten_dicts(X, lengths))


def _check_lengths(lengths):
    if lengths.size and lengths.min() == 0:
        s = int(np.argmin(lengths))
        raise ShapeError(f"sequence {s} of X is empty; every sequence needs at least one item")


def _check_finite_dense(dense, lengths):
    bad = ~np.isfinite(dense)
    if bad.any():
        token, col = (int(v) for v in np.argwhere(bad)[0])
        s = int(np.searchsorted(np.cumsum(lengths), token, side="right"))
        t = token - int(lengths[:s].sum())
        raise EvidenceError(f"feature column {col} of item {t} in sequence {s} is {dense[token, col]}; values must be finite")


def _design(feats, vocab, n_attributes, n_tokens):
    """Sparse design matrix (N, F); attributes missing from `vocab` are dropped."""
    kind, data = feats
    if kind == "dense":
        if data.shape[1] != n_attributes:
            raise ShapeError(f"dense X has {data.shape[1]} feature columns; the model has {n_attributes} attributes")
        return sp.csr_matrix(data)  # (N, F)
    names, values, counts = data
    cols = np.fromiter(map(vocab.get, names, repeat(-1)), np.intp, len(names))  # (nnz,)
    keep = cols >= 0
    if not keep.all():
        rows = np.repeat(np.arange(n_tokens), counts)  # (nnz,)
        counts = np.bincount(rows[keep], minlength=n_tokens)  # (N,)
        cols, values = cols[keep], values[keep]
    indptr = np.zeros(n_tokens + 1, np.intp)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix((values, cols, indptr), shape=(n_tokens, n_attributes))  # (N, F)


# ---------------------------------------------------------------------------
# layout: ragged sequences -> length buckets for the chain engine
# ---------------------------------------------------------------------------


class _Layout:
    """Buckets of similar-length sequences, each padded to its own length.

    ``rows[i]`` is the padded row (over all buckets, bucket-major, then
    sequence, then step) of token ``i`` in input order.
    """

    __slots__ = ("buckets", "rows", "n_rows", "lengths")

    def __init__(self, lengths):
        n = lengths.size
        order = np.argsort(lengths, kind="stable")  # (n,)
        sl = lengths[order]
        distinct, first = np.unique(sl, return_index=True)  # (D,)
        upto = np.append(first[1:], n)  # sequences with length <= distinct[j]
        D = distinct.size
        best = np.zeros(D + 1)
        cut = np.zeros(D, np.intp)
        for j in range(D):
            i = np.arange(j + 1)  # bucket covers distinct lengths i..j
            c = best[i] + distinct[j] * (_BUCKET_OVERHEAD + upto[j] - np.append(0, upto[:-1])[i])
            cut[j] = int(np.argmin(c))
            best[j + 1] = c[cut[j]]
        spans = []
        j = D - 1
        while j >= 0:
            spans.append((cut[j], j))
            j = cut[j] - 1
        self.buckets = []
        base = np.empty(n, np.intp)  # padded row of each sequence's first token
        off = 0
        for i, j in reversed(spans):
            lo = 0 if i == 0 else upto[i - 1]
            seqs = order[lo : upto[j]]
            T_b = int(distinct[j])
            base[seqs] = off + np.arange(seqs.size) * T_b
            blen = lengths[seqs]
            self.buckets.append((seqs, off, T_b, np.arange(T_b) < blen[:, None]))
            off += seqs.size * T_b
        starts = np.cumsum(lengths) - lengths  # (n,)
        self.rows = np.repeat(base - starts, lengths) + np.arange(int(lengths.sum()))  # (N,)
        self.n_rows = off
        self.lengths = lengths

    def pad(self, tok):
        """(N, K) token array -> list of per-bucket (n_b, T_b, K) arrays."""
        K = tok.shape[-1]
        full = np.zeros((self.n_rows, K))  # (R, K)
        full[self.rows] = tok
        return [full[off : off + seqs.size * T_b].reshape(seqs.size, T_b, K) for seqs, off, T_b, _ in self.buckets]


# ---------------------------------------------------------------------------
# training objective and optimisers
# ---------------------------------------------------------------------------


class _Objective:
    """Negative log-likelihood + c2 * ||w||^2 and its gradient, w packed as theta."""

    def __init__(self, Xd, y_idx, layout, state_idx, trans_idx, K, c2):
        self.X = Xd  # (N, F)
        self.XT = Xd.T.tocsr()  # (F, N)
        self.layout = layout
        self.F = Xd.shape[1]
        self.K = K
        self.state_idx = state_idx  # flat indices into W (F*K)
        self.trans_idx = trans_idx  # flat indices into A (K*K)
        self.S = state_idx.size
        self.dense_states = self.S == self.F * K
        self.c2 = c2
        N = y_idx.size
        onehot = np.zeros((N, K))  # (N, K)
        onehot[np.arange(N), y_idx] = 1.0
        emp_w = (self.XT @ onehot).ravel()  # (F*K,)
        first = np.cumsum(layout.lengths) - layout.lengths
        nxt = np.ones(N, bool)
        nxt[first] = False  # tokens that have a predecessor
        emp_a = np.bincount(y_idx[np.flatnonzero(nxt) - 1] * K + y_idx[nxt], minlength=K * K).astype(float)
        self.emp = np.concatenate([emp_w[state_idx], emp_a[trans_idx]])  # (P,)
        self.n_evals = 0
        self.last = None  # (theta, f, g, nll)

    def unpack(self, theta):
        F, K = self.F, self.K
        if self.dense_states:
            W = theta[: self.S].reshape(F, K)  # (F, K)
        else:
            W = np.zeros(F * K)
            W[self.state_idx] = theta[: self.S]
            W = W.reshape(F, K)  # (F, K)
        A = np.zeros(K * K)
        A[self.trans_idx] = theta[self.S :]
        return W, A.reshape(K, K)

    def __call__(self, theta):
        W, A = self.unpack(theta)
        K = self.K
        lay = self.layout
        U = self.X @ W  # (N, K)
        log_z = 0.0
        M = np.empty((lay.n_rows, K))  # (R, K) marginals, padded rows
        E = np.zeros((K, K))
        for (seqs, off, T_b, mask), u in zip(lay.buckets, lay.pad(U)):
            post = _chain.forward_backward(u, A, mask, edges=True)
            log_z += float(post.log_z.sum())
            M[off : off + seqs.size * T_b] = post.marginals.reshape(-1, K)
            E += post.edge_counts
        G = self.XT @ M[lay.rows]  # (F, K) expected state-feature counts
        Gf = G.ravel() if self.dense_states else G.ravel()[self.state_idx]
        grad = np.concatenate([Gf, E.ravel()[self.trans_idx]]) - self.emp  # (P,)
        nll = log_z - float(theta @ self.emp)
        f = nll + self.c2 * float(theta @ theta)
        grad += 2.0 * self.c2 * theta
        self.n_evals += 1
        self.last = (theta, f, grad, nll)
        return f, grad


class _Progress:
    """Per-iteration bookkeeping, CRFsuite's stopping tests and the user hook."""

    def __init__(self, obj, c1, epsilon, period, delta, callback):
        self.obj, self.c1 = obj, c1
        self.epsilon, self.period, self.delta = epsilon, period, delta
        self.callback = callback
        self.history = []  # objective values
        self.log = []
        self.t0 = time.perf_counter()

    def __call__(self, theta, f, gnorm):
        """Record iteration; return True to stop."""
        k = len(self.history) + 1
        xnorm = float(np.sqrt(theta @ theta))
        last = self.obj.last
        nll = last[3] if last is not None and (last[0] is theta or np.array_equal(last[0], theta)) else None
        entry = {
            "iteration": k,
            "loss": f,
            "log_likelihood": -nll if nll is not None else None,
            "grad_norm": gnorm,
            "weight_norm": xnorm,
            "active_features": int(np.count_nonzero(theta)),
            "n_evals": self.obj.n_evals,
            "seconds": time.perf_counter() - self.t0,
        }
        self.log.append(entry)
        self.history.append(f)
        stop = gnorm / max(1.0, xnorm) < self.epsilon
        if self.period and k > self.period:
            past = self.history[-1 - self.period]
            if f != 0 and (past - f) / abs(f) < self.delta:
                stop = True
        if self.callback is not None and self.callback(dict(entry)):
            stop = True
        return stop


def _lbfgs_scipy(obj, theta0, max_iter, m, max_ls, progress):
    def cb(intermediate_result):
        x = intermediate_result.x
        last = obj.last
        if last is not None and np.array_equal(last[0], x):
            f, g = last[1], last[2]
            obj.last = (x, f, g, last[3])
        else:  # L-BFGS-B's accepted point is normally the last one evaluated
            f, g = obj(x)
        if progress(obj.last[0], float(f), float(np.sqrt(g @ g))):
            raise StopIteration

    res = minimize(
        obj,
        theta0,
        jac=True,
        method="L-BFGS-B",
        callback=cb,
        options={"maxiter": max_iter, "maxcor": m, "maxls": max_ls, "ftol": 0.0, "gtol": 0.0, "maxfun": 2**31 - 1},
    )
    return res.x


def _pseudo_gradient(x, g, c1):
    """OWL-QN pseudo-gradient of f(x) + c1 |x|_1 (Andrew & Gao, eq. 4)."""
    pg = np.where(x > 0, g + c1, np.where(x < 0, g - c1, 0.0))
    at0 = x == 0
    right, left = g + c1, g - c1
    pg[at0] = np.where(right[at0] < 0, right[at0], np.where(left[at0] > 0, left[at0], 0.0))
    return pg


def _wolfe(obj, x, q, f, g):
    """Strong-Wolfe step along `q` (scipy's line_search), reusing cached evaluations."""

    def fun(z):
        last = obj.last
        return last[1] if np.array_equal(last[0], z) else obj(z)[0]

    def jac(z):
        last = obj.last
        return last[2] if np.array_equal(last[0], z) else obj(z)[1]

    with warnings.catch_warnings():  # a failed search returns None; we handle it
        warnings.filterwarnings("ignore", message="The line search algorithm", category=RuntimeWarning)
        step = line_search(fun, jac, x, q, g, f, c1=1e-4, c2=0.9, maxiter=20)[0]
    if step is None:
        return None
    xn = x + step * q
    fn, gn = fun(xn), jac(xn)
    return xn, fn, gn


def _quasi_newton(obj, x, c1, max_iter, m, max_ls, progress):
    """L-BFGS, or OWL-QN when ``c1 > 0``.

    The two-loop recursion runs on the gradient (pseudo-gradient for L1).
    Without L1 the step satisfies the strong Wolfe conditions (scipy's
    ``line_search``, c1=1e-4, c2=0.9, as CRFsuite's More-Thuente search).
    With L1 the direction is constrained to descend on every coordinate, each
    trial point is projected onto the orthant of the iterate, and the step is
    found by backtracking with Armijo's test on the pseudo-gradient (Andrew &
    Gao 2007; liblbfgs does the same).
    """
    l1 = c1 > 0
    f, g = obj(x)
    F = f + c1 * np.abs(x).sum() if l1 else f
    pg = _pseudo_gradient(x, g, c1) if l1 else g
    S, Y, rho = [], [], []
    if np.sqrt(pg @ pg) / max(1.0, np.sqrt(x @ x)) < progress.epsilon:
        return x
    for _ in range(max_iter):
        q = -pg  # two-loop recursion: q = -H pg
        alphas = []
        for s, yv, r in zip(reversed(S), reversed(Y), reversed(rho)):
            a = r * (s @ q)
            alphas.append(a)
            q -= a * yv
        if S:
            q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1])
        for s, yv, r, a in zip(S, Y, rho, reversed(alphas)):
            q += (a - r * (yv @ q)) * s
        if l1:
            q[q * pg >= 0] = 0.0  # keep only components that descend
        if not float(pg @ q) < 0:  # not a descent direction: restart from steepest descent
            S, Y, rho = [], [], []
            q = -pg
        if not S:  # first step has length 1
            q = q / np.sqrt(q @ q)
        found = None if l1 else _wolfe(obj, x, q, f, g)
        if found is None:  # backtracking (always with L1; after a failed Wolfe search otherwise)
            orthant = np.where(x != 0, np.sign(x), -np.sign(pg))
            step = 1.0
            for _ in range(max_ls):
                xn = x + step * q
                if l1:
                    xn[np.sign(xn) != orthant] = 0.0  # project onto the orthant
                fn, gn = obj(xn)
                Fn = fn + c1 * np.abs(xn).sum() if l1 else fn
                if Fn <= F + 1e-4 * float(pg @ (xn - x)):
                    found = xn, fn, gn
                    break
                step *= 0.5
        if found is None:
            break
        xn, fn, gn = found
        Fn = fn + c1 * np.abs(xn).sum() if l1 else fn
        s, yv = xn - x, gn - g
        ys = float(yv @ s)
        if ys > 0:
            S.append(s)
            Y.append(yv)
            rho.append(1.0 / ys)
            if len(S) > m:
                del S[0], Y[0], rho[0]
        x, f, g, F = xn, fn, gn, Fn
        pg = _pseudo_gradient(x, g, c1) if l1 else g
        if progress(x, float(F), float(np.sqrt(pg @ pg))):
            break
    return x


# ---------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------


class CRF:
    """Linear-chain CRF estimator with sklearn-crfsuite's methods.

    Parameters
    ----------
    c1 : float, default 0.0
        Coefficient of the L1 penalty ``c1 * ||w||_1``; when positive the
        optimiser is OWL-QN (as in CRFsuite).
    c2 : float, default 1.0
        Coefficient of the L2 penalty ``c2 * ||w||^2`` (CRFsuite's convention:
        no factor 1/2).
    max_iterations : int, optional
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
        ``"lbfgs"``: this module's numpy L-BFGS, which becomes OWL-QN when
        ``c1 > 0``. ``"scipy"``: ``scipy.optimize.minimize(method="L-BFGS-B")``
        (L2 only, ``c1`` must be 0); same objective and stopping tests, but
        its per-iteration bookkeeping costs about 20 ms at 10^5 weights, a
        third of a whole objective evaluation on the benchmark.
    callback : callable, optional
        Called after every iteration with a dict (``iteration``, ``loss``,
        ``log_likelihood``, ``grad_norm``, ``weight_norm``,
        ``active_features``, ``n_evals``, ``seconds``). Returning True stops
        training. The library itself never prints.

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
    training_log_ : list of dict
        The per-iteration records also passed to `callback`.
    n_iter_ : int

    Notes
    -----
    Input follows python-crfsuite: ``X`` is a list of sequences, each a list
    of items; an item is a dict ``{name: value}`` (a str value gives the
    indicator attribute ``"name:value"``, a bool or a real number the
    attribute ``"name"`` with that weight, a nested dict or list is prefixed
    with ``"name:"``) or a list of attribute strings (each with weight 1).
    Dense input is also accepted: a list of ``(T_i, F)`` arrays, or one
    ``(n, T, F)`` array with a left-aligned ``mask`` of shape (n, T).
    Attributes not seen in training are ignored at prediction time, as in
    CRFsuite.
    """

    def __init__(
        self,
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
    ) -> None:
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
        labels : sequence of K labels
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
        """
        W = np.array(state_weights, dtype=float)
        A = np.array(transition_weights, dtype=float)
        labels = list(labels)
        K = len(labels)
        if W.ndim != 2 or W.shape[1] != K:
            raise ShapeError(f"state_weights must have shape (F, {K}) for {K} labels; got {W.shape}")
        if A.shape != (K, K):
            raise ShapeError(f"transition_weights must have shape {(K, K)} for {K} labels; got {A.shape}")
        attributes = list(range(W.shape[0])) if attributes is None else list(attributes)
        if len(attributes) != W.shape[0]:
            raise ShapeError(f"{len(attributes)} attributes given for state_weights with {W.shape[0]} rows")
        if len(set(labels)) != K:
            raise ModelError(f"labels must be distinct; got {labels}")
        if not (np.isfinite(W).all() and np.isfinite(A).all()):
            raise ModelError("state_weights and transition_weights must be finite")
        crf = cls()
        crf._set_fitted(W, A, labels, attributes)
        crf.training_log_ = []
        crf.n_iter_ = 0
        return crf

    def _set_fitted(self, W, A, labels, attributes):
        self.state_weights_ = W
        self.transition_weights_ = A
        self.classes_ = labels
        self.attributes_ = attributes
        self._vocab = {a: i for i, a in enumerate(attributes)}
        self._labels = np.empty(len(labels), dtype=object)
        self._labels[:] = labels

    # -- training --------------------------------------------------------

    def _check_params(self):
        for name in ("c1", "c2", "min_freq", "epsilon", "delta"):
            v = getattr(self, name)
            if not (isinstance(v, numbers.Real) and np.isfinite(v) and v >= 0):
                raise ModelError(f"CRF parameter {name} must be a finite number >= 0; got {v!r}")
        for name, low in (("num_memories", 1), ("period", 0), ("max_linesearch", 1)):
            v = getattr(self, name)
            if not (isinstance(v, numbers.Integral) and v >= low):
                raise ModelError(f"CRF parameter {name} must be an integer >= {low}; got {v!r}")
        mi = self.max_iterations
        if mi is not None and not (isinstance(mi, numbers.Integral) and mi >= 0):
            raise ModelError(f"CRF parameter max_iterations must be None or an integer >= 0; got {mi!r}")
        if self.solver not in ("lbfgs", "scipy"):
            raise ModelError(f"CRF parameter solver must be 'lbfgs' or 'scipy'; got {self.solver!r}")
        if self.solver == "scipy" and self.c1 > 0:
            raise ModelError(f"solver='scipy' (L-BFGS-B) handles the L2 penalty only; got c1={self.c1}, use solver='lbfgs'")
        if self.callback is not None and not callable(self.callback):
            raise ModelError(f"CRF parameter callback must be callable; got {type(self.callback).__name__}")

    def fit(self, X, y, *, mask=None) -> CRF:
        """Train by (OWL-QN or L-)BFGS on the regularised log-likelihood.

        Parameters
        ----------
        X : list of sequences of feature dicts, list of (T_i, F) arrays, or ndarray of shape (n, T, F)
        y : list of label sequences, or array of shape (n, T) with dense `X`
            Labels may be any hashables (strings in CRFsuite).
        mask : ndarray of bool, shape (n, T), optional
            Left-aligned lengths for a 3-D `X`; positions beyond are ignored.

        Returns
        -------
        self

        Raises
        ------
        ShapeError
            If `X` and `y` disagree in the number or length of sequences, or
            a sequence is empty.
        EvidenceError
            If a feature value is not finite or of an unsupported type.
        ModelError
            If a parameter is out of range.
        """
        self._check_params()
        lengths, feats = _parse_X(X, mask)
        y_idx, labels = self._encode_labels(y, lengths, index=None)
        K = len(labels)
        N = int(lengths.sum())
        kind, data = feats
        if kind == "dense":
            attributes = list(range(data.shape[1]))
            vocab = None
        else:
            attributes = list(dict.fromkeys(data[0]))
            vocab = {a: i for i, a in enumerate(attributes)}
        F = len(attributes)
        Xd = _design(feats, vocab, F, N)  # (N, F)
        state_idx, trans_idx = self._active(Xd, y_idx, lengths, K)
        layout = _Layout(lengths)
        obj = _Objective(Xd, y_idx, layout, state_idx, trans_idx, K, float(self.c2))
        progress = _Progress(obj, self.c1, self.epsilon, self.period, self.delta, self.callback)
        theta = np.zeros(state_idx.size + trans_idx.size)
        max_iter = 2**31 - 1 if self.max_iterations is None else int(self.max_iterations)
        if max_iter > 0 and theta.size:
            if self.solver == "lbfgs":
                theta = _quasi_newton(obj, theta, float(self.c1), max_iter, self.num_memories, self.max_linesearch, progress)
            else:
                theta = _lbfgs_scipy(obj, theta, max_iter, self.num_memories, self.max_linesearch, progress)
        W, A = obj.unpack(theta)
        self._set_fitted(np.array(W), A, labels, attributes)
        self.training_log_ = progress.log
        self.n_iter_ = len(progress.log)
        return self

    def _encode_labels(self, y, lengths, index):
        """Label indices (N,) in token order; new class list when `index` is None."""
        n = lengths.size
        if isinstance(y, np.ndarray) and y.ndim == 2:
            y = [row[:L] for row, L in zip(y.tolist(), lengths.tolist())]
        else:
            y = list(y)
        if len(y) != n:
            raise ShapeError(f"X has {n} sequences but y has {len(y)}")
        ylen = np.fromiter(map(len, y), np.intp, n)
        if not np.array_equal(ylen, lengths):
            s = int(np.flatnonzero(ylen != lengths)[0])
            raise ShapeError(f"sequence {s} has {lengths[s]} items in X but {ylen[s]} labels in y")
        flat = list(_iter_chain.from_iterable(y))
        if index is None:
            labels = list(dict.fromkeys(flat))
            index = {lab: i for i, lab in enumerate(labels)}
            return np.fromiter(map(index.__getitem__, flat), np.intp, len(flat)), labels
        return np.fromiter(map(index.get, flat, repeat(-1)), np.intp, len(flat)), None

    def _active(self, Xd, y_idx, lengths, K):
        """Flat indices of the weights that are trained (the rest stay zero)."""
        F = Xd.shape[1]
        if self.all_possible_states and self.min_freq == 0:
            state_idx = np.arange(F * K)
        else:
            coo = Xd.tocoo()
            pair = coo.col * K + y_idx[coo.row]  # (nnz,)
            present = np.bincount(pair, minlength=F * K) > 0
            if self.all_possible_states:
                present[:] = True
            if self.min_freq > 0:
                present &= np.bincount(pair, weights=coo.data, minlength=F * K) > self.min_freq
            state_idx = np.flatnonzero(present)
        if self.all_possible_transitions:
            trans_idx = np.arange(K * K)
        else:
            first = np.cumsum(lengths) - lengths
            nxt = np.ones(y_idx.size, bool)
            nxt[first] = False
            trans_idx = np.unique(y_idx[np.flatnonzero(nxt) - 1] * K + y_idx[nxt])
        return state_idx, trans_idx

    # -- inference ---------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "state_weights_"):
            raise ModelError("this CRF is not fitted; call fit(X, y) or CRF.from_weights(...) first")

    def _token_unary(self, X, mask):
        """Lengths (n,) and token unary potentials (N, K)."""
        self._check_fitted()
        lengths, feats = _parse_X(X, mask)
        Xd = _design(feats, self._vocab, len(self.attributes_), int(lengths.sum()))  # (N, F)
        return lengths, Xd @ self.state_weights_  # (N, K)

    def _unary(self, X, mask=None):
        """Log unary potentials of a batch, padded to its longest sequence.

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
        lay = _Layout(lengths)
        best = np.empty(lay.n_rows, np.intp)  # (R,)
        for (seqs, off, T_b, m), u in zip(lay.buckets, lay.pad(U)):
            paths, _ = _chain.viterbi(u, self.transition_weights_, m)
            best[off : off + seqs.size * T_b] = paths.ravel()
        flat = self._labels[best[lay.rows]].tolist()
        return _split(flat, lengths)

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
        return _split([dict(zip(labels, row)) for row in P.tolist()], lengths)

    def predict_marginals_single(self, xseq) -> list:
        """Marginals of one sequence: a list of ``{label: probability}``."""
        return self.predict_marginals([xseq])[0]

    def _marginals(self, X, mask):
        lengths, U = self._token_unary(X, mask)
        lay = _Layout(lengths)
        K = U.shape[1]
        M = np.empty((lay.n_rows, K))  # (R, K)
        for (seqs, off, T_b, m), u in zip(lay.buckets, lay.pad(U)):
            M[off : off + seqs.size * T_b] = _chain.forward_backward(u, self.transition_weights_, m).marginals.reshape(-1, K)
        return lengths, M[lay.rows]  # (N, K)

    def score(self, X, y, *, mask=None) -> float:
        """Token accuracy of `predict(X)` against `y` (labels unknown to the model count as errors)."""
        pred = self.predict(X, mask=mask)
        lengths = np.fromiter(map(len, pred), np.intp, len(pred))
        index = {lab: i for i, lab in enumerate(self.classes_)}
        truth, _ = self._encode_labels(y, lengths, index=index)
        guess = np.fromiter(map(index.__getitem__, _iter_chain.from_iterable(pred)), np.intp, truth.size)
        return float(np.mean(guess == truth)) if truth.size else float("nan")

    # -- sklearn-crfsuite style views -------------------------------------

    @property
    def state_features_(self) -> dict:
        self._check_fitted()
        W = self.state_weights_
        a, k = np.nonzero(W)
        return {(self.attributes_[i], self.classes_[j]): float(W[i, j]) for i, j in zip(a.tolist(), k.tolist())}

    @property
    def transition_features_(self) -> dict:
        self._check_fitted()
        A = self.transition_weights_
        a, k = np.nonzero(A)
        return {(self.classes_[i], self.classes_[j]): float(A[i, j]) for i, j in zip(a.tolist(), k.tolist())}


def _split(flat, lengths):
    ends = np.cumsum(lengths).tolist()
    starts = [0] + ends[:-1]
    return [flat[a:b] for a, b in zip(starts, ends)]


# ---------------------------------------------------------------------------
# synthetic data for tests and benchmarks
# ---------------------------------------------------------------------------


def _synthetic_tagging(n_seq, *, mean_len=20, n_labels=9, n_words=100_000, seed=None):
    """A seeded tagging task: an HMM-like label chain emitting words.

    Labels follow a sticky Markov chain; each label draws words from its own
    Zipf-shaped distribution over a shared vocabulary, with label-typical
    suffixes, title case and digits. Each token gets about 19 CRFsuite-style
    features (word, suffixes, prefix, shape flags, neighbour words, a word
    bigram).

    Returns
    -------
    X : list of lists of dicts
    y : list of lists of str
    """
    rng = np.random.default_rng(seed)
    K = n_labels
    A = rng.dirichlet(np.full(K, 0.3), size=K) + 1.5 * np.roll(np.eye(K), 1, axis=1) + 0.8 * np.eye(K)
    A /= A.sum(1, keepdims=True)  # (K, K)
    pi = rng.dirichlet(np.ones(K))
    syl = np.array([a + b for a in "bcdfghklmnprstvz" for b in "aeiou"])
    parts = rng.choice(syl, size=(n_words, 3))
    nsyl = rng.integers(1, 4, size=n_words)
    words = np.array(["".join(p[:k]) for p, k in zip(parts, nsyl)], dtype=object)
    suf = np.array(["ing", "ed", "ly", "er", "s", "tion", "al", "ous", "ive", "ment", "ist", "ize"], dtype=object)
    lab_suf = rng.integers(0, len(suf), size=(K, 3))
    base = 1.0 / np.arange(1, n_words + 1) ** 0.9
    cum = np.empty((K, n_words))  # per-label cumulative word distribution
    for k in range(K):
        p = np.empty(n_words)
        p[rng.permutation(n_words)] = base
        cum[k] = np.cumsum(p / p.sum())
    lengths = np.clip(rng.poisson(mean_len, size=n_seq), 3, None)
    T = int(lengths.max())
    z = np.empty((n_seq, T), np.intp)
    z[:, 0] = np.minimum(np.searchsorted(np.cumsum(pi), rng.random(n_seq)), K - 1)
    cA = np.cumsum(A, axis=1)
    for t in range(1, T):
        z[:, t] = np.minimum((rng.random(n_seq)[:, None] > cA[z[:, t - 1]]).sum(1), K - 1)
    zf = z[np.arange(T) < lengths[:, None]]  # (N,) labels in token order
    N = zf.size
    u = rng.random(N)
    wid = np.empty(N, np.intp)
    for k in range(K):
        s = zf == k
        wid[s] = np.minimum(np.searchsorted(cum[k], u[s]), n_words - 1)
    w = words[wid]
    r = rng.random((3, N))
    sufs = suf[lab_suf[zf, rng.integers(0, 3, N)]]
    add = r[0] < 0.7
    w[add] = w[add] + sufs[add]
    tit = (zf % 3 == 0) & (r[1] < 0.8)
    w[tit] = [x.title() for x in w[tit]]
    dig = (zf == 4) & (r[2] < 0.5)
    w[dig] = [str(x) for x in rng.integers(0, 3000, int(dig.sum()))]
    w = w.tolist()
    names = [f"L{k}" for k in range(K)]
    zl = zf.tolist()
    X, y = [], []
    off = 0
    for L in lengths.tolist():
        ws = w[off : off + L]
        low = [v.lower() for v in ws]
        tt = [v.istitle() for v in ws]
        dd = [v.isdigit() for v in ws]
        s3 = [v[-3:] for v in low]
        feats = []
        for t in range(L):
            v = ws[t]
            f = {
                "bias": 1.0,
                "w": low[t],
                "s3": s3[t],
                "s2": v[-2:],
                "p2": low[t][:2],
                "isupper": v.isupper(),
                "istitle": tt[t],
                "isdigit": dd[t],
                "len": str(min(len(v), 10)),
            }
            if t > 0:
                f.update(
                    {
                        "-1:w": low[t - 1],
                        "-1:w|w": low[t - 1] + "|" + low[t],
                        "-1:s2": ws[t - 1][-2:],
                        "-1:istitle": tt[t - 1],
                        "-1:s3": s3[t - 1],
                        "-1:isdigit": dd[t - 1],
                    }
                )
            else:
                f["BOS"] = True
            if t < L - 1:
                f.update({"+1:w": low[t + 1], "+1:istitle": tt[t + 1], "+1:s3": s3[t + 1], "+1:isdigit": dd[t + 1]})
            else:
                f["EOS"] = True
            feats.append(f)
        X.append(feats)
        y.append([names[k] for k in zl[off : off + L]])
        off += L
    return X, y
