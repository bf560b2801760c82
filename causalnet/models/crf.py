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
gradient of the penalty is ``2 * c2 * w``). The gradient is the expected
minus the empirical feature counts: ``X^T (marginals - onehot(y))`` for the
state weights (one sparse product) and the expected minus observed
transition counts for ``A``.

The optimiser is a limited-memory quasi-Newton method written here in numpy:
L-BFGS with a strong-Wolfe line search when ``c1 == 0``, and OWL-QN (Andrew &
Gao 2007) -- what CRFsuite switches to for L1 -- when ``c1 > 0``, with the
same backtracking search on the pseudo-gradient as liblbfgs (its iterates
reproduce CRFsuite's to about 1e-9). ``solver="scipy"`` uses
``scipy.optimize.minimize(method="L-BFGS-B")`` instead (L2 only; its
More-Thuente search reproduces CRFsuite's L2 iterates). The stopping tests
are CRFsuite's: ``max_iterations``, ``||g|| / max(1, ||w||) < epsilon``, and
a relative improvement below ``delta`` over the last ``period`` iterations.

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

import inspect
import numbers
import time
from collections.abc import Callable, Hashable, Sequence
from itertools import chain as _iter_chain
from itertools import repeat

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from ..errors import EvidenceError, ModelError, ShapeError
from ..inference import chain as _chain

__all__ = ["CRF"]

# Symbols: n sequences, T steps (padded), K labels, F attributes, N tokens.


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
    """Token features of dict/list-of-str sequences, flattened.

    Returns
    -------
    ("cols", (columns, vals, counts, X))
        Fast path, when every item is a dict with str keys: ``vals`` holds the
        nnz raw values (object array, token-major), ``columns`` maps each key
        to the positions of its values in ``vals``, ``counts`` (N,) is the
        number of features of each token. ``X`` is kept for the slow path.
    ("names", (names, values, counts))
        Anything else, resolved to attribute names by pycrfsuite's rules.
    """
    items = list(_iter_chain.from_iterable(X))
    N = len(items)
    if set(map(type, items)) <= {dict}:
        counts = np.fromiter(map(len, items), np.intp, N)  # (N,)
        offsets = np.cumsum(counts) - counts  # (N,) first entry of each token
        nnz = int(counts.sum())
        groups = {}  # key signature -> tokens having it
        for t, sig in enumerate(map(tuple, items)):
            g = groups.get(sig)
            if g is None:
                groups[sig] = [t]
            else:
                g.append(t)
        if len(groups) <= max(16, N // 8):
            parts = {}
            for sig, toks in groups.items():
                off = offsets[toks]
                for j, k in enumerate(sig):
                    parts.setdefault(k, []).append(off + j)
            columns = {k: v[0] if len(v) == 1 else np.concatenate(v) for k, v in parts.items()}
        else:  # irregular items: group the entries by key id
            keys = list(_iter_chain.from_iterable(items))
            kid = {k: i for i, k in enumerate(dict.fromkeys(keys))}
            ids = np.fromiter(map(kid.__getitem__, keys), np.intp, nnz)
            order = np.argsort(ids, kind="stable")
            ends = np.cumsum(np.bincount(ids, minlength=len(kid)))
            columns = {k: order[e - c : e] for (k, i), e, c in zip(kid.items(), ends, np.diff(ends, prepend=0))}
        if all(type(k) is str for k in columns):
            vals = np.fromiter(_iter_chain.from_iterable(map(dict.values, items)), object, nnz)  # (nnz,)
            return "cols", (columns, vals, counts, X)
    return "names", _item_names(X, N)


def _item_names(X, N):
    """Slow path: (names, values, counts) item by item; raises on bad values."""
    names, vals, counts = [], [], np.empty(N, np.intp)
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


class _Irregular(Exception):
    """A feature column the vectorised path does not handle; use the slow path."""


def _is_real_type(t):
    return issubclass(t, (numbers.Real, np.bool_)) and not issubclass(t, (str, bytes))


class _Vocab:
    """Attribute names and the lookups that map raw features to their columns.

    ``index`` maps a name to its column; ``by_key[key][value]`` maps a string
    feature ``{key: value}`` straight to the column of ``"key:value"``, so the
    name never has to be built (nor hashed) at prediction time. A numeric
    feature ``{key: x}`` is the attribute named ``key``.
    """

    __slots__ = ("names", "index", "by_key")

    def __init__(self, names=()):
        self.names = list(names)
        self.index = {a: i for i, a in enumerate(self.names)}
        by_key = {}
        for i, name in enumerate(self.names):  # every split of every name at a ':'
            if type(name) is str:
                p = name.find(":")
                while p >= 0:
                    by_key.setdefault(name[:p], {})[name[p + 1 :]] = i
                    p = name.find(":", p + 1)
        self.by_key = by_key

    def add(self, name):
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(name)
        return i

    def string_column(self, key, col, grow):
        """Columns of the string features ``{key: v}`` for v in `col` (-1: unknown)."""
        d = self.by_key.get(key)
        if d is None:
            if not grow:
                if not all(issubclass(t, str) for t in set(map(type, col))):
                    raise _Irregular
                return np.full(col.size, -1, np.intp)
            d = self.by_key[key] = {}
        if grow:
            try:
                new = [v for v in dict.fromkeys(col) if v not in d]
            except TypeError as err:  # unhashable values
                raise _Irregular from err
            if not all(map(isinstance, new, repeat(str))):
                raise _Irregular
            names = [key + ":" + v for v in new]
            if any(map(self.index.__contains__, names)):  # a name also reachable another way
                for v, name in zip(new, names):
                    d[v] = self.add(name)
            else:
                ids = range(len(self.names), len(self.names) + len(names))
                self.names.extend(names)
                self.index.update(zip(names, ids))
                d.update(zip(new, ids))
        try:
            cols = np.fromiter(map(d.get, col, repeat(-1)), np.intp, col.size)
        except TypeError as err:
            raise _Irregular from err
        miss = cols < 0
        if miss.any() and not all(issubclass(t, str) for t in set(map(type, col[miss]))):
            raise _Irregular
        return cols


def _encode_columns(data, vocab, grow, lengths):
    """Attribute columns and values (nnz,) of the fast-path features.

    Raises
    ------
    _Irregular
        If a column mixes value kinds or holds values of other types.
    EvidenceError
        If a numeric value is not finite.
    """
    columns, vals, counts = data[:3]
    cols = np.empty(vals.size, np.intp)  # (nnz,)
    values = np.ones(vals.size)  # (nnz,)
    for key, pos in columns.items():
        col = vals[pos]
        if isinstance(col[0], str):
            try:
                cols[pos] = vocab.string_column(key, col, grow)
                continue
            except _Irregular:  # mixed: split into strings and the rest
                is_s = np.fromiter(map(isinstance, col, repeat(str)), bool, col.size)
                cols[pos[is_s]] = vocab.string_column(key, col[is_s], grow)
                pos, col = pos[~is_s], col[~is_s]
                if not col.size:
                    continue
        if not all(map(_is_real_type, set(map(type, col)))):
            raise _Irregular
        v = col.astype(float)
        bad = ~np.isfinite(v)
        if bad.any():
            e = int(pos[np.flatnonzero(bad)[0]])
            s, t = _locate(counts, lengths, e)
            raise EvidenceError(
                f"feature {key!r} of item {t} in sequence {s} is {vals[e]}; numeric feature values must be finite"
            )
        values[pos] = v
        cols[pos] = vocab.add(key) if grow else vocab.index.get(key, -1)
    return cols, values


def _parse_X(X, mask):
    """Split input into per-sequence lengths and token features.

    Returns
    -------
    lengths : ndarray of int, shape (n,)
    feats : ("dense", ndarray (N, F)), or the output of `_flatten_dicts`
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
    return lengths, _flatten_dicts(X, lengths)


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
        raise EvidenceError(
            f"feature column {col} of item {t} in sequence {s} is {dense[token, col]}; values must be finite"
        )


def _design(feats, vocab, lengths, *, grow=False):
    """Sparse design matrix (N, F) of parsed features.

    Attributes missing from `vocab` are dropped, unless `grow`, when they are
    added to it (training).
    """
    kind, data = feats
    n_tokens = int(lengths.sum())
    if kind == "dense":
        F = len(vocab.names)
        if data.shape[1] != F:
            raise ShapeError(f"dense X has {data.shape[1]} feature columns; the model has {F} attributes")
        return sp.csr_matrix(data)  # (N, F)
    if kind == "cols":
        try:
            cols, values = _encode_columns(data, vocab, grow, lengths)
            counts = data[2]
        except _Irregular:
            kind, data = "names", _item_names(data[3], n_tokens)
    if kind == "names":
        names, values, counts = data
        if grow:
            for name in dict.fromkeys(names):
                vocab.add(name)
        cols = np.fromiter(map(vocab.index.get, names, repeat(-1)), np.intp, len(names))  # (nnz,)
    keep = cols >= 0
    if not keep.all():
        rows = np.repeat(np.arange(n_tokens), counts)  # (nnz,)
        counts = np.bincount(rows[keep], minlength=n_tokens)  # (N,)
        cols, values = cols[keep], values[keep]
    indptr = np.zeros(n_tokens + 1, np.intp)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix((values, cols, indptr), shape=(n_tokens, len(vocab.names)))  # (N, F)


# ---------------------------------------------------------------------------
# layout: ragged sequences -> one padded batch for the chain engine
# ---------------------------------------------------------------------------


class _Layout:
    """Tokens of ragged sequences placed in a padded (n, T) batch.

    Padded row ``r`` holds sequence ``order[r]``, longest first (the order
    the chain engine works in, so it need not reorder), and ``rows[i]`` is
    the flat padded position of token ``i`` (in input order).
    """

    __slots__ = ("lengths", "T", "mask", "rows", "_buf")

    def __init__(self, lengths):
        n = lengths.size
        self.lengths = lengths
        self.T = int(lengths.max()) if n else 0
        order = np.argsort(-lengths, kind="stable")  # (n,)
        self.mask = np.arange(self.T) < lengths[order][:, None]  # (n, T)
        base = np.empty(n, np.intp)
        base[order] = np.arange(n) * self.T  # padded position of each sequence's first token
        starts = np.cumsum(lengths) - lengths
        self.rows = np.repeat(base - starts, lengths) + np.arange(int(lengths.sum()))  # (N,)
        self._buf = None

    def pad(self, tok):
        """(N, K) token values -> (n, T, K), zero on padding (a reused buffer)."""
        K = tok.shape[-1]
        if self._buf is None or self._buf.shape[1] != K:
            self._buf = np.zeros((self.lengths.size * self.T, K))  # (n*T, K); padding rows stay 0
        self._buf[self.rows] = tok
        return self._buf.reshape(self.lengths.size, self.T, K)  # (n, T, K)


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
        self._W = None

    def unpack(self, theta):
        """Weights (F, K) and (K, K) of packed `theta`; W may be a reused buffer."""
        F, K = self.F, self.K
        if self.dense_states:
            W = theta[: self.S].reshape(F, K)  # (F, K)
        else:
            if self._W is None:
                self._W = np.zeros(F * K)  # entries outside state_idx stay 0
            self._W[self.state_idx] = theta[: self.S]
            W = self._W.reshape(F, K)  # (F, K)
        A = np.zeros(K * K)
        A[self.trans_idx] = theta[self.S :]
        return W, A.reshape(K, K)

    def __call__(self, theta):
        W, A = self.unpack(theta)
        K = self.K
        lay = self.layout
        U = self.X @ W  # (N, K)
        try:
            post = _chain.forward_backward(lay.pad(U), A, lay.mask, counts=True)
        except (ModelError, EvidenceError):
            if np.isfinite(U).all() and np.isfinite(A).all():
                raise
            return np.inf, np.full_like(theta, np.nan)  # overflow at a trial point: the line search backs off
        log_z = float(post.log_z.sum())
        E = post.edge_counts  # (K, K) expected transition counts
        G = self.XT @ post.marginals.reshape(-1, K)[lay.rows]  # (F, K) expected state-feature counts
        Gf = G.ravel() if self.dense_states else G.ravel()[self.state_idx]
        grad = np.concatenate([Gf, E.ravel()[self.trans_idx]]) - self.emp  # (P,)
        nll = log_z - _dot(theta, self.emp)
        f = nll + self.c2 * _dot(theta, theta)
        grad += 2.0 * self.c2 * theta
        self.n_evals += 1
        self.last = (theta, f, grad, nll)
        return f, grad


class _Progress:
    """Per-iteration bookkeeping, CRFsuite's stopping tests and the user hook."""

    def __init__(self, obj, epsilon, period, delta, callback):
        self.obj = obj
        self.epsilon, self.period, self.delta = epsilon, period, delta
        self.callback = callback
        self.history = []  # objective values
        self.log = []
        self.t0 = time.perf_counter()

    def __call__(self, theta, f, gnorm):
        """Record iteration; return True to stop."""
        k = len(self.history) + 1
        xnorm = float(np.sqrt(_dot(theta, theta)))
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
        if progress(obj.last[0], float(f), float(np.sqrt(_dot(g, g)))):
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


def _dot(a, b):
    """Inner product of two long vectors without BLAS.

    A threaded BLAS ``ddot`` on ~10^5 elements was measured 25-200x slower
    than a single-threaded loop when the cores are shared with other work.
    """
    return float(np.einsum("i,i->", a, b))


def _pseudo_gradient(x, g, c1):
    """OWL-QN pseudo-gradient of f(x) + c1 |x|_1 (Andrew & Gao, eq. 4)."""
    soft = np.sign(g) * np.maximum(np.abs(g) - c1, 0.0)  # at x == 0: the one-sided slope that descends
    return np.where(x != 0, g + c1 * np.sign(x), soft)


def _cubic_min(a, fa, da, b, fb, db):
    """Minimiser of the cubic through (a, fa, da) and (b, fb, db), or None."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    rad = d1 * d1 - da * db
    if not rad >= 0:
        return None
    d2 = np.copysign(np.sqrt(rad), b - a)
    den = db - da + 2.0 * d2
    if den == 0:
        return None
    x = b - (b - a) * (db + d2 - d1) / den
    return x if np.isfinite(x) else None


def _wolfe(obj, x, q, f0, g0, max_ls, c1=1e-4, c2=0.9):
    """Step along `q` meeting the strong Wolfe conditions (Nocedal & Wright, Alg. 3.5-3.6).

    Returns ``(x_new, f_new, g_new)`` or None when no such step was found
    within `max_ls` evaluations.
    """
    d0 = _dot(g0, q)
    trials = []

    def phi(step):
        xn = x + step * q
        fn, gn = obj(xn)
        trials.append((fn, xn, gn))
        return fn, _dot(gn, q)

    def done():
        fn, xn, gn = trials[-1]
        return xn, fn, gn

    def zoom(lo, flo, dlo, hi, fhi, dhi, budget):
        for _ in range(budget):
            step = _cubic_min(lo, flo, dlo, hi, fhi, dhi)
            width = hi - lo
            if step is None or not (min(lo, hi) + 0.1 * abs(width) <= step <= max(lo, hi) - 0.1 * abs(width)):
                step = lo + 0.5 * width
            fs, ds = phi(step)
            if fs > f0 + c1 * step * d0 or fs >= flo:
                hi, fhi, dhi = step, fs, ds
            else:
                if abs(ds) <= -c2 * d0:
                    return done()
                if ds * (hi - lo) >= 0:
                    hi, fhi, dhi = lo, flo, dlo
                lo, flo, dlo = step, fs, ds
        return None

    prev, fprev, dprev = 0.0, f0, d0
    step = 1.0
    for i in range(max_ls):
        fs, ds = phi(step)
        if not np.isfinite(fs):
            return None
        if fs > f0 + c1 * step * d0 or (i > 0 and fs >= fprev):
            return zoom(prev, fprev, dprev, step, fs, ds, max_ls - i - 1)
        if abs(ds) <= -c2 * d0:
            return done()
        if ds >= 0:
            return zoom(step, fs, ds, prev, fprev, dprev, max_ls - i - 1)
        prev, fprev, dprev = step, fs, ds
        step *= 2.0
    return None


def _quasi_newton(obj, x, c1, max_iter, m, max_ls, progress):
    """L-BFGS, or OWL-QN when ``c1 > 0``.

    The two-loop recursion runs on the gradient (pseudo-gradient for L1).
    Without L1 the step satisfies the strong Wolfe conditions (c1=1e-4,
    c2=0.9, as CRFsuite's More-Thuente search). With L1 the direction is
    constrained to descend on every coordinate, each trial point is projected
    onto the orthant of the iterate, and the step is found by backtracking
    with Armijo's test on the pseudo-gradient (Andrew & Gao 2007; liblbfgs
    does the same).
    """
    l1 = c1 > 0
    f, g = obj(x)
    F = f + c1 * np.abs(x).sum() if l1 else f
    pg = _pseudo_gradient(x, g, c1) if l1 else g
    S, Y, rho = [], [], []
    if np.sqrt(_dot(pg, pg)) / max(1.0, np.sqrt(_dot(x, x))) < progress.epsilon:
        return x
    for _ in range(max_iter):
        q = -pg  # two-loop recursion: q = -H pg
        alphas = []
        for s, yv, r in zip(reversed(S), reversed(Y), reversed(rho)):
            a = r * _dot(s, q)
            alphas.append(a)
            q -= a * yv
        if S:
            q *= _dot(S[-1], Y[-1]) / _dot(Y[-1], Y[-1])
        for s, yv, r, a in zip(S, Y, rho, reversed(alphas)):
            q += (a - r * _dot(yv, q)) * s
        if l1:
            q[q * pg >= 0] = 0.0  # keep only components that descend
        if not _dot(pg, q) < 0:  # not a descent direction: restart from steepest descent
            S, Y, rho = [], [], []
            q = -pg
        if not S:  # first step has length 1
            q /= np.sqrt(_dot(q, q))
        found = None if l1 else _wolfe(obj, x, q, f, g, max_ls)
        if found is None:  # backtracking (always with L1; after a failed Wolfe search otherwise)
            orthant = np.where(x != 0, np.sign(x), -np.sign(pg)) if l1 else None
            step = 1.0
            for _ in range(max_ls):
                xn = x + step * q
                if l1:
                    xn[np.sign(xn) != orthant] = 0.0  # project onto the orthant
                fn, gn = obj(xn)
                Fn = fn + c1 * np.abs(xn).sum() if l1 else fn
                if Fn <= F + 1e-4 * _dot(pg, xn - x):
                    found = xn, fn, gn
                    break
                step *= 0.5
        if found is None:
            break
        xn, fn, gn = found
        Fn = fn + c1 * np.abs(xn).sum() if l1 else fn
        s, yv = xn - x, gn - g
        ys = _dot(yv, s)
        if ys > 0:
            S.append(s)
            Y.append(yv)
            rho.append(1.0 / ys)
            if len(S) > m:
                del S[0], Y[0], rho[0]
        x, f, g, F = xn, fn, gn, Fn
        pg = _pseudo_gradient(x, g, c1) if l1 else g
        if progress(x, F, np.sqrt(_dot(pg, pg))):
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
        (L2 only, ``c1`` must be 0), same objective and stopping tests; its
        own bookkeeping was measured at 15 ms per iteration at 1.3e5 weights
        (180 ms with a multi-threaded BLAS on busy shared cores), about a
        whole objective evaluation on the benchmark.
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

    # -- scikit-learn protocol ------------------------------------------------

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters (scikit-learn's estimator protocol)."""
        return {
            name: getattr(self, name) for name in inspect.signature(type(self).__init__).parameters if name != "self"
        }

    def set_params(self, **params) -> CRF:
        """Set constructor parameters (scikit-learn's estimator protocol)."""
        valid = self.get_params()
        for name, value in params.items():
            if name not in valid:
                raise ModelError(f"CRF has no parameter {name!r}; parameters: {sorted(valid)}")
            setattr(self, name, value)
        return self

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
        if len(set(attributes)) != len(attributes):
            raise ModelError("attribute names must be distinct")
        if not (np.isfinite(W).all() and np.isfinite(A).all()):
            raise ModelError("state_weights and transition_weights must be finite")
        crf = cls()
        crf._set_fitted(W, A, labels, _Vocab(attributes))
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
            raise ModelError(
                f"solver='scipy' (L-BFGS-B) handles the L2 penalty only; got c1={self.c1}, use solver='lbfgs'"
            )
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
        if lengths.size == 0:
            raise ShapeError("X has no sequences; fit needs at least one labelled sequence")
        y_idx, labels = self._encode_labels(y, lengths, index=None)
        K = len(labels)
        vocab = _Vocab(range(feats[1].shape[1])) if feats[0] == "dense" else _Vocab()
        Xd = _design(feats, vocab, lengths, grow=True)  # (N, F)
        state_idx, trans_idx = self._active(Xd, y_idx, lengths, K)
        layout = _Layout(lengths)
        obj = _Objective(Xd, y_idx, layout, state_idx, trans_idx, K, float(self.c2))
        progress = _Progress(obj, self.epsilon, self.period, self.delta, self.callback)
        theta = np.zeros(state_idx.size + trans_idx.size)
        max_iter = 2**31 - 1 if self.max_iterations is None else int(self.max_iterations)
        if max_iter > 0 and theta.size:
            if self.solver == "lbfgs":
                theta = _quasi_newton(
                    obj, theta, float(self.c1), max_iter, self.num_memories, self.max_linesearch, progress
                )
            else:
                theta = _lbfgs_scipy(obj, theta, max_iter, self.num_memories, self.max_linesearch, progress)
        W, A = obj.unpack(theta)
        self._set_fitted(W.copy(), A, labels, vocab)
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
        Xd = _design(feats, self._vocab, lengths)  # (N, F)
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
        paths, _ = _chain.viterbi(lay.pad(U), self.transition_weights_, lay.mask)  # (n, T)
        flat = self._labels[paths.ravel()[lay.rows]].tolist()
        return _split(flat, lengths)

    # -- as a causal model ---------------------------------------------------------

    def to_model(self, T=None, X=None):
        """The CRF as a DAG of label, token and factor nodes (one sequence); see
        :func:`causalnet.models._crf_causal.to_model`. Conditioning on every factor node
        being true (``_crf_causal.factor_evidence(model)``) gives the CRF's posterior."""
        from . import _crf_causal

        return _crf_causal.to_model(self, T, X)

    def query(self, targets, X, *, evidence=None, do=None):
        """Label marginals of one sequence given observed labels and token interventions.

        ``crf.query("y[3]", seq, do={"x[4]": {"word": "Paris"}})`` answers what label 3 would be had
        token 4 been different. See :func:`causalnet.models._crf_causal.query`.
        """
        from . import _crf_causal

        return _crf_causal.query(self, targets, X, evidence=evidence, do=do)

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
        M = _chain.forward_backward(lay.pad(U), self.transition_weights_, lay.mask).marginals  # (n, T, K)
        return lengths, M.reshape(-1, U.shape[1])[lay.rows]  # (N, K)

    # -- inference on given log-potentials ----------------------------------------------

    def _check_potentials(self, unary, mask):
        self._check_fitted()
        u = np.asarray(unary, dtype=np.float64)
        K = len(self.classes_)
        if u.ndim == 2:
            u = u[None]
        if u.ndim != 3 or u.shape[-1] != K:
            raise ShapeError(f"unary log-potentials must have shape (n, T, {K}) or (T, {K}) for {K} labels; "
                             f"got {np.shape(unary)}")
        if mask is not None:
            mask = np.asarray(mask, dtype=bool).reshape(u.shape[:2])
        return u, mask

    def decode_potentials(self, unary, *, mask=None) -> tuple[list, np.ndarray]:
        """Viterbi labels for given unary log-potentials, with this CRF's transitions.

        For inference on potentials computed elsewhere (e.g. a neural network's
        emission scores); :meth:`from_weights` with an empty feature set gives
        a CRF that is only a transition matrix.

        Parameters
        ----------
        unary : ndarray of shape (n, T, K) or (T, K)
        mask : ndarray of bool, shape (n, T), optional

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
