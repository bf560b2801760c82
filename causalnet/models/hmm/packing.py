"""Concatenated sequences ``(X, lengths)`` packed into the chain engine's layout, and back.

hmmlearn's convention is one array ``X`` of every observation, one sequence
after another, with ``lengths``; :func:`flatten_input` also takes a list of
arrays (one per sequence) or a padded batch ``(n, T, ...)`` with ``lengths``,
and its :class:`InputForm` puts per-observation results back in the caller's
form. The chain engine wants a batch: time-major,
rows sorted by length (longest first) so the rows alive at step ``t`` are a
prefix. That placement is the chain engine's own ragged
:class:`~causalnet.inference.chain.layout.Layout` (the CRF uses the same one):
:func:`pack` takes its time-major index ``pos`` (T, n) into ``X`` once;
:func:`unpack` reads a time-major result back as ``(N, ...)``.

>>> import numpy as np
>>> pk = pack(np.arange(5), [2, 3])
>>> pk.lens.tolist(), pk.order.tolist(), pk.pos.tolist()
([3, 2], [1, 0], [[2, 0], [3, 1], [4, 0]])
>>> unpack(pk, pk.pos).tolist()        # (T, n) -> (N,)
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import EvidenceError, ShapeError
from ...inference.chain.layout import Layout

__all__ = ["Packed", "pack", "gather", "unpack", "check_lengths", "InputForm", "flatten_input", "full_length_batch"]


@dataclass
class Packed:
    """Sequences packed time-major with rows sorted by length (longest first).

    Attributes
    ----------
    lengths : ndarray (n,)
        Caller's order.
    lens : ndarray (n,)
        Internal order (non-increasing).
    order : ndarray (n,) or None
        Internal row -> caller's sequence; None when the orders agree.
    pos : ndarray of int, shape (T, n)
        Index into the concatenated ``X`` of each real (t, row); 0 on padding.
    real : ndarray of bool, shape (T, n) or None
        None when no row is padded.
    Xflat : ndarray
        The concatenated observations (N,) or (N, d).
    X : ndarray or None
        The packed observations (T, n[, d]) once an emission filled them in.
    cache : dict
        Per-data caches of the emission (e.g. one-hot symbols), kept for one fit.
    layout : Layout
        The chain engine's ragged placement these fields come from.
    missing : ndarray of bool, shape (T, n) or None
        Real steps whose observation is missing (NaN), see :mod:`.missing`.
    observed : ndarray of bool, shape (N,) or None
        The observed rows of ``Xflat`` (None when none is missing).
    labels : ndarray of int, shape (T, n) or None
        Known states (-1 unknown or padding) of a partially labelled fit.
    """

    lengths: np.ndarray
    lens: np.ndarray
    order: np.ndarray | None
    pos: np.ndarray
    real: np.ndarray | None
    Xflat: np.ndarray
    X: np.ndarray | None = None
    cache: dict = field(default_factory=dict)
    layout: Layout | None = None
    missing: np.ndarray | None = None
    observed: np.ndarray | None = None
    labels: np.ndarray | None = None

    @property
    def n(self):
        return len(self.lens)

    @property
    def T(self):
        return int(self.lens[0])


def check_lengths(lengths, N, *, rows=None, width=None):
    """``lengths`` as a 1-d int array of positive lengths summing to ``N``.

    For a padded batch pass ``N=None``, ``rows`` and ``width``: one length per
    row, each at most ``width``.
    """
    if lengths is None:
        if N == 0:
            raise EvidenceError("X has no observations; every sequence needs at least one step")
        return np.array([N], dtype=np.intp)
    try:
        lengths = np.asarray(lengths)
    except (TypeError, ValueError) as e:
        raise ShapeError(f"lengths must be a 1-d array of sequence lengths; got a ragged sequence ({e})") from None
    if lengths.ndim != 1 or len(lengths) == 0:
        raise ShapeError(f"lengths must be a non-empty 1-d array of sequence lengths; got shape {lengths.shape}")
    if lengths.dtype == bool or not np.issubdtype(lengths.dtype, np.integer):
        ok = np.issubdtype(lengths.dtype, np.floating) and np.isfinite(lengths).all()
        if not (ok and (lengths == np.round(lengths)).all()):
            raise ShapeError(f"lengths must be integers; got dtype {lengths.dtype}")
    lengths = lengths.astype(np.intp)
    if (lengths <= 0).any():
        i = int(np.flatnonzero(lengths <= 0)[0])
        raise EvidenceError(f"sequence {i} has length {lengths[i]}; every sequence needs at least one step")
    if N is None:
        if len(lengths) != rows:
            raise ShapeError(f"a padded batch of {rows} rows needs {rows} lengths; got {len(lengths)}")
        if lengths.max() > width:
            i = int(np.argmax(lengths))
            raise ShapeError(f"sequence {i} has length {lengths[i]} but the padded batch has only {width} steps")
        return lengths
    if lengths.sum() != N:
        raise ShapeError(f"lengths sum to {int(lengths.sum())} but X has {N} observations")
    return lengths


def pack(X, lengths):
    """The layout of validated observations ``X`` ``(N, ...)`` cut by ``lengths``."""
    lengths = check_lengths(lengths, len(X))
    lay = Layout(lengths)
    order = None if lay.identity else lay.order
    real = None if lay.mask.all() else np.ascontiguousarray(lay.mask.T)  # (T, n)
    return Packed(lengths, lay.lens, order, lay.time_index(), real, X, layout=lay)


def gather(pos, a):
    """``a[pos]`` (``(T, n, ...)`` from per-observation ``a``), a view when ``pos`` is one unpadded sequence.

    The view saves a copy of ``a`` (and its page faults) for the common case
    of a single long sequence; callers must not write into the result.
    """
    if pos.shape[1] == 1 and len(a) == pos.shape[0] and pos[0, 0] == 0:  # pos is 0..T-1
        return a[:, None]
    return a[pos]


def unpack(pk, x):
    """Internal time-major (T, n, ...) -> concatenated (N, ...) in the caller's order."""
    if pk.real is None and pk.order is None:
        # equal lengths in the caller's order: sequence r is rows r*T .. (r+1)*T
        return np.swapaxes(x, 0, 1).reshape((-1,) + x.shape[2:])
    return pk.layout.unpad(x, time_major=True)


class InputForm:
    """How the caller gave the sequences, to return per-observation results the same way.

    Attributes
    ----------
    kind : {"concatenated", "list", "padded"}
    lengths : ndarray (n,)
    T : int
        Padded width (``"padded"`` only).
    """

    def __init__(self, kind, lengths, T=0):
        self.kind = kind
        self.lengths = lengths
        self.T = T

    def restore(self, values, fill):
        """Concatenated ``(N, ...)`` results -> the caller's layout (``fill`` on padding)."""
        if self.kind == "concatenated":
            return values
        if self.kind == "list":
            return np.split(values, np.cumsum(self.lengths)[:-1])
        n = len(self.lengths)
        out = np.full((n, self.T) + values.shape[1:], fill, dtype=values.dtype)
        mask = np.arange(self.T)[None, :] < self.lengths[:, None]  # (n, T)
        out[mask] = values
        return out


def flatten_input(X, lengths, obs_ndim):
    """Sequences in any accepted form as hmmlearn's concatenated ``(X, lengths)`` plus their :class:`InputForm`.

    Parameters
    ----------
    X : array_like, list of arrays, or padded batch
        Concatenated observations (``obs_ndim`` dimensions, or ``(N, 1)`` for
        symbols), a list/tuple of numpy arrays (one per sequence, ``lengths``
        must be None), or a padded batch with one more dimension than a
        concatenated ``X`` (``(n, T)`` symbols or ``(n, T, d)`` vectors) with
        ``lengths``, one per row (required: without them such an ``X`` is
        read as concatenated observations and rejected by the emission).
    lengths : array_like of int, optional
    obs_ndim : int
        Dimensions of a concatenated ``X``: 1 for symbols, 2 for vectors.

    Examples
    --------
    >>> X, lengths, layout = flatten_input(np.array([[0, 1, 2], [3, 4, 0]]), [3, 2], 1)
    >>> X.tolist(), lengths.tolist(), layout.restore(X, -1).tolist()
    ([0, 1, 2, 3, 4], [3, 2], [[0, 1, 2], [3, 4, -1]])
    """
    if isinstance(X, (list, tuple)) and len(X) and all(isinstance(x, np.ndarray) for x in X):
        if lengths is not None:
            raise ShapeError("lengths must be None when X is a list of sequences (each array is one sequence)")
        seqs = [np.asarray(x) for x in X]
        if any(x.ndim == 0 for x in seqs):
            raise ShapeError("each sequence in the list must be an array of observations; got a scalar")
        lens = np.array([len(x) for x in seqs], dtype=np.intp)
        try:
            flat = np.concatenate(seqs)
        except ValueError as e:
            raise ShapeError(f"the sequences in the list must have the same observation shape ({e})") from None
        return flat, lens, InputForm("list", lens)
    try:
        a = np.asarray(X) if not isinstance(X, np.ndarray) else X
    except (TypeError, ValueError):  # ragged: the emission's own check names the problem
        return X, lengths, InputForm("concatenated", None)
    padded = a.ndim == obs_ndim + 1 and not (obs_ndim == 1 and a.shape[-1] == 1 and a.ndim == 2)
    if not padded or lengths is None:  # a padded batch comes with its lengths
        return X, lengths, InputForm("concatenated", None)
    n, T = a.shape[:2]
    lens = check_lengths(lengths, None, rows=n, width=T)
    mask = np.arange(T)[None, :] < lens[:, None]  # (n, T)
    return a[mask], lens, InputForm("padded", lens, T)


def full_length_batch(X, lengths, obs_ndim):
    """A batch ``(n, T[, d])`` of full-length sequences as concatenated ``(X, lengths)``; other input unchanged.

    Without `lengths`, an array with one more dimension than a concatenated
    ``X`` is read as ``n`` sequences of length ``T`` (so a 2-D symbol array is
    ``(n, T)``, not hmmlearn's ``(N, 1)`` column: pass `lengths` for that).

    >>> X, lengths = full_length_batch(np.array([[0, 1, 2], [2, 1, 0]]), None, 1)
    >>> X.tolist(), lengths.tolist()
    ([0, 1, 2, 2, 1, 0], [3, 3])
    """
    if lengths is not None or isinstance(X, (list, tuple)):
        return X, lengths
    a = np.asarray(X)
    if a.ndim != obs_ndim + 1:
        return X, lengths
    n, T = a.shape[:2]
    if n == 0 or T == 0:
        raise ShapeError(f"a batch of sequences needs at least one sequence of at least one step; got shape {a.shape}")
    return a.reshape(n * T, *a.shape[2:]), np.full(n, T, dtype=np.intp)
