"""CRF features: sequences of items -> one sparse design matrix ``(N, F)``.

Terms
-----
A token ``t`` of a sequence carries *attributes* ``a`` with values ``x[t, a]``.
Input follows python-crfsuite: an *item* (one token) is a dict ``{name: value}``
-- a str value gives the indicator attribute ``"name:value"`` (value 1.0), a
bool or a real number the attribute ``"name"`` with that value, a nested dict
or list is prefixed with ``"name:"`` -- or a list of attribute strings (each
with value 1.0). Dense input is also accepted: a list of ``(T_i, F)`` arrays,
or one ``(n, T, F)`` array with a left-aligned ``mask`` of shape ``(n, T)``.

All tokens of a batch are stacked, in sequence order, into one sparse matrix
``X`` of shape ``(N, F)`` (N tokens, F attributes); then ``X @ W`` is every
token's unary log-potential at once. A :class:`Vocab` maps attribute names to
columns; it grows while training and is frozen for prediction, where unknown
attributes are dropped (as in CRFsuite).

:func:`parse_sequences` validates the input and returns the sequence lengths
and a features object (:class:`DenseFeatures` or :class:`ItemFeatures`); both
have the same small interface, ``new_vocab()`` and ``design(vocab, lengths,
grow=...)``. Dict items take a vectorised path (one column per feature key)
and fall back to the item-by-item rules when a column mixes value kinds.

Examples
--------
>>> lengths, feats = parse_sequences([[{"w": "a", "n": 2.0}, ["BOS"]]], None)
>>> vocab = feats.new_vocab()
>>> feats.design(vocab, lengths, grow=True).toarray()
array([[1., 2., 0.],
       [0., 0., 1.]])
>>> vocab.names
['w:a', 'n', 'BOS']
"""

from __future__ import annotations

import numbers
from itertools import chain as _iter_chain
from itertools import repeat

import numpy as np
import scipy.sparse as sp

from ...errors import EvidenceError, ShapeError

__all__ = ["Vocab", "DenseFeatures", "ItemFeatures", "parse_sequences", "encode_labels"]

# Symbols: n sequences, T steps (padded), F attributes, N tokens, nnz feature entries.


class Vocab:
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
        """Column of `name`, appended if new."""
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(name)
        return i

    def string_column(self, key, col, grow):
        """Columns of the string features ``{key: v}`` for v in `col` (-1: unknown).

        Raises
        ------
        _Irregular
            If `col` holds other values than strings (the caller falls back).
        """
        d = self.by_key.get(key)
        if d is None:
            if not grow:
                _require_strings(col)
                return np.full(col.size, -1, np.intp)
            d = self.by_key[key] = {}
        if grow:
            self._grow(key, d, col)
        try:
            cols = np.fromiter(map(d.get, col, repeat(-1)), np.intp, col.size)
        except TypeError as err:  # unhashable values
            raise _Irregular from err
        miss = cols < 0
        if miss.any():
            _require_strings(col[miss])
        return cols

    def _grow(self, key, d, col):
        """Add the attributes ``key:v`` of the new values in `col` to `d` and the names."""
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


class _Irregular(Exception):
    """A feature column the vectorised path does not handle; use the slow path."""


def _require_strings(col):
    if not all(issubclass(t, str) for t in set(map(type, col))):
        raise _Irregular


def _is_real_type(t):
    return issubclass(t, (numbers.Real, np.bool_)) and not issubclass(t, (str, bytes))


# ---------------------------------------------------------------------------
# the two kinds of input
# ---------------------------------------------------------------------------


class DenseFeatures:
    """Tokens given as numeric vectors: attribute ``j`` is column ``j``.

    Parameters
    ----------
    dense : ndarray of shape (N, F), finite floats
    """

    def __init__(self, dense):
        self.dense = dense  # (N, F)

    def new_vocab(self):
        """The vocabulary of a model trained on this input: ``range(F)``."""
        return Vocab(range(self.dense.shape[1]))

    def design(self, vocab, lengths, *, grow=False):
        """Sparse design matrix (N, F); `vocab` must have F attributes."""
        F = len(vocab.names)
        if self.dense.shape[1] != F:
            raise ShapeError(f"dense X has {self.dense.shape[1]} feature columns; the model has {F} attributes")
        return sp.csr_matrix(self.dense)  # (N, F)


class ItemFeatures:
    """Tokens given as python-crfsuite items (dicts, or lists of attribute strings).

    When every item is a dict with str keys, the values are kept flat
    (object array ``vals`` of shape (nnz,), token-major) with ``columns``
    mapping each key to the positions of its values and ``counts`` (N,) the
    number of features of each token; otherwise, or when a column turns out
    irregular, every item is resolved to attribute names by pycrfsuite's
    rules (always, with ``vectorised=False``: the reference the tests use).
    """

    def __init__(self, X, lengths, *, vectorised=True):
        self.X = X
        self.n_tokens = int(lengths.sum())
        self.fast = _flatten_dicts(X) if vectorised else None  # (columns, vals, counts) or None
        self.slow = None if self.fast is not None else _item_names(X, self.n_tokens)

    def new_vocab(self):
        """An empty vocabulary, grown by ``design(..., grow=True)``."""
        return Vocab()

    def design(self, vocab, lengths, *, grow=False):
        """Sparse design matrix (N, len(vocab)).

        Attributes missing from `vocab` are dropped, unless `grow`, when they
        are added to it (training).
        """
        n_tokens = self.n_tokens
        cols = None
        if self.fast is not None:
            try:
                cols, values = _encode_columns(self.fast, vocab, grow, lengths)
                counts = self.fast[2]
            except _Irregular:
                self.fast, self.slow = None, _item_names(self.X, n_tokens)
        if cols is None:
            names, values, counts = self.slow
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
# parsing and validation
# ---------------------------------------------------------------------------


def parse_sequences(X, mask):
    """Validate input sequences and split them into lengths and token features.

    Parameters
    ----------
    X : list of sequences of items, list of (T_i, F) arrays, or ndarray of shape (n, T, F)
    mask : ndarray of bool, shape (n, T), or None
        Left-aligned real steps of a 3-D `X`; only accepted with it.

    Returns
    -------
    lengths : ndarray of int, shape (n,)
    features : DenseFeatures or ItemFeatures

    Raises
    ------
    ShapeError
        If a sequence is empty, the mask disagrees with `X`, or dense
        sequences disagree on F.
    EvidenceError
        If `X` is not a list of sequences, or a value is not finite or of an
        unsupported type.
    """
    if isinstance(X, np.ndarray) and X.dtype != object:
        return _parse_array(X, mask)
    if mask is not None:
        raise ShapeError("mask is only accepted with X given as one (n, T, F) array")
    if isinstance(X, (str, bytes, dict)):
        raise EvidenceError(f"X must be a list of sequences; got a {type(X).__name__}")
    try:
        X = list(X)
    except TypeError as err:
        raise EvidenceError(f"X must be a list of sequences; got a {type(X).__name__}") from err
    lengths = np.fromiter(map(_length, X, range(len(X))), np.intp, len(X))
    _check_lengths(lengths)
    if X and all(isinstance(x, np.ndarray) for x in X):
        return lengths, DenseFeatures(_stack_arrays(X, lengths))
    for s, x in enumerate(X):
        if isinstance(x, (str, bytes, dict, np.ndarray)):
            raise EvidenceError(f"sequence {s} of X is a {type(x).__name__}; expected a list of feature dicts")
    return lengths, ItemFeatures(X, lengths)


def _parse_array(X, mask):
    """Lengths and features of one (n, T, F) array with an optional left-aligned mask."""
    if X.ndim != 3:
        raise ShapeError(f"dense X must have shape (n, T, F) or be a list of (T_i, F) arrays; got shape {X.shape}")
    _check_numeric(X, "X")
    n, T, _ = X.shape
    if mask is None:
        mask = np.ones((n, T), bool)
    mask = np.asarray(mask)
    if mask.shape != (n, T):
        raise ShapeError(f"mask must have shape (n, T) = {(n, T)} like X; got {mask.shape}")
    if mask.dtype != bool and not np.isin(mask, (0, 1)).all():
        raise ShapeError(f"mask must be boolean (or 0/1); got dtype {mask.dtype} with other values")
    mask = mask.astype(bool)
    lengths = mask.sum(1)
    real = np.arange(T) < lengths[:, None]  # (n, T)
    if not np.array_equal(mask, real):
        s = int(np.flatnonzero((mask != real).any(1))[0])
        raise ShapeError(f"mask row {s} is not left-aligned (True for the first L steps, then False)")
    _check_lengths(lengths)
    dense = np.asarray(X[mask], dtype=float)  # (N, F)
    _check_finite_dense(dense, lengths)
    return lengths, DenseFeatures(dense)


def _length(x, s):
    """Number of items of sequence `s` of X."""
    try:
        return len(x)
    except TypeError as err:
        raise EvidenceError(f"sequence {s} of X is a {type(x).__name__}; expected a list of items") from err


def _is_sized(v):
    try:
        len(v)
    except TypeError:
        return False
    return True


def _stack_arrays(X, lengths):
    """(N, F) floats of a list of (T_i, F) arrays."""
    bad = [i for i, x in enumerate(X) if x.ndim != 2 or x.shape[1] != X[0].shape[-1]]
    if bad:
        s = bad[0]
        raise ShapeError(
            f"sequence {s} of X has shape {X[s].shape}; dense sequences must be (T_i, F) with one F, "
            f"F = {X[0].shape[-1]} (from sequence 0)"
        )
    for s, x in enumerate(X):
        _check_numeric(x, f"sequence {s} of X")
    dense = np.concatenate(X, axis=0).astype(float, copy=False)  # (N, F)
    _check_finite_dense(dense, lengths)
    return dense


def _check_numeric(a, what):
    if a.dtype.kind not in "biuf":
        raise EvidenceError(f"{what} must hold real numbers; got dtype {a.dtype}")


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


def encode_labels(y, lengths, index):
    """Label indices (N,) in token order, checked against the sequence lengths.

    Parameters
    ----------
    y : list of label sequences, or ndarray of shape (n, T) (read up to each length)
    lengths : ndarray of int, shape (n,)
        Lengths of the input sequences.
    index : dict label -> int, or None
        None: the labels are numbered in order of first appearance.

    Returns
    -------
    y_idx : ndarray of int, shape (N,)
        With an `index`, labels missing from it get -1.
    labels : list, or None when `index` was given
    """
    n = lengths.size
    if isinstance(y, np.ndarray) and y.ndim == 2:
        y = [row[:L] for row, L in zip(y.tolist(), lengths.tolist())]
    elif isinstance(y, (str, bytes, dict)) or not hasattr(y, "__iter__") or (isinstance(y, np.ndarray) and y.ndim == 0):
        raise EvidenceError(f"y must be a list of label sequences; got a {type(y).__name__}")
    else:
        y = list(y)
    if len(y) != n:
        raise ShapeError(f"X has {n} sequences but y has {len(y)}")
    bad = [s for s, ys in enumerate(y) if isinstance(ys, (str, bytes, dict)) or not _is_sized(ys)]
    if bad:
        raise EvidenceError(f"sequence {bad[0]} of y is a {type(y[bad[0]]).__name__}; expected a list of labels")
    ylen = np.fromiter(map(len, y), np.intp, n)
    if not np.array_equal(ylen, lengths):
        s = int(np.flatnonzero(ylen != lengths)[0])
        raise ShapeError(f"sequence {s} has {lengths[s]} items in X but {ylen[s]} labels in y")
    flat = list(_iter_chain.from_iterable(y))
    try:
        if index is None:
            labels = list(dict.fromkeys(flat))
            index = {lab: i for i, lab in enumerate(labels)}
            return np.fromiter(map(index.__getitem__, flat), np.intp, len(flat)), labels
        return np.fromiter(map(index.get, flat, repeat(-1)), np.intp, len(flat)), None
    except TypeError as err:
        raise EvidenceError(f"labels must be hashable (str, int, ...); {err}") from err


# ---------------------------------------------------------------------------
# dict items: vectorised path and pycrfsuite's item rules
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
        try:
            return key.decode("utf8")
        except UnicodeDecodeError:
            raise EvidenceError(f"item {t} of sequence {s} has a feature name or value {key!r} that is not UTF-8") from None
    raise EvidenceError(f"item {t} of sequence {s} has a feature name of type {type(key).__name__}; expected str")


def _locate(counts, lengths, entry):
    """(sequence, item) of flat feature entry `entry`."""
    token = int(np.searchsorted(np.cumsum(counts), entry, side="right"))
    s = int(np.searchsorted(np.cumsum(lengths), token, side="right"))
    return s, token - int(np.sum(lengths[:s]))


def _flatten_dicts(X):
    """Flat token features of dict items, or None when an item is not a dict with str keys.

    Returns
    -------
    columns : dict key -> ndarray of int
        Positions in `vals` of the values of each key.
    vals : ndarray of object, shape (nnz,)
        Raw values, token-major.
    counts : ndarray of int, shape (N,)
        Number of features of each token.
    """
    items = list(_iter_chain.from_iterable(X))
    N = len(items)
    if not set(map(type, items)) <= {dict}:
        return None
    counts = np.fromiter(map(len, items), np.intp, N)  # (N,)
    nnz = int(counts.sum())
    columns = _key_positions(items, counts, nnz)
    if not all(type(k) is str for k in columns):
        return None
    vals = np.fromiter(_iter_chain.from_iterable(map(dict.values, items)), object, nnz)  # (nnz,)
    return columns, vals, counts


def _key_positions(items, counts, nnz):
    """``{key: positions (m,) of its values among the nnz flat values}``."""
    offsets = np.cumsum(counts) - counts  # (N,) first entry of each token
    groups = {}  # key signature -> tokens having it
    for t, sig in enumerate(map(tuple, items)):
        g = groups.get(sig)
        if g is None:
            groups[sig] = [t]
        else:
            g.append(t)
    if len(groups) <= max(16, len(items) // 8):  # few signatures: one slice per (signature, key)
        parts = {}
        for sig, toks in groups.items():
            off = offsets[toks]
            for j, k in enumerate(sig):
                parts.setdefault(k, []).append(off + j)
        return {k: v[0] if len(v) == 1 else np.concatenate(v) for k, v in parts.items()}
    keys = list(_iter_chain.from_iterable(items))  # irregular items: group the entries by key id
    kid = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    ids = np.fromiter(map(kid.__getitem__, keys), np.intp, nnz)
    order = np.argsort(ids, kind="stable")
    ends = np.cumsum(np.bincount(ids, minlength=len(kid)))
    return {k: order[e - c : e] for (k, i), e, c in zip(kid.items(), ends, np.diff(ends, prepend=0))}


def _item_names(X, N):
    """Slow path: (names, values (nnz,), counts (N,)) item by item; raises on bad values."""
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


def _encode_columns(data, vocab, grow, lengths):
    """Attribute columns and values (nnz,) of the fast-path features.

    Raises
    ------
    _Irregular
        If a column mixes value kinds or holds values of other types.
    EvidenceError
        If a numeric value is not finite.
    """
    columns, vals, counts = data
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
        values[pos] = _numeric_column(key, pos, col, vals, counts, lengths)
        cols[pos] = vocab.add(key) if grow else vocab.index.get(key, -1)
    return cols, values


def _numeric_column(key, pos, col, vals, counts, lengths):
    """Float values of the numeric features ``{key: v}``; raises _Irregular or EvidenceError."""
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
    return v
