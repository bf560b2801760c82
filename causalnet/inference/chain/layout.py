"""Ragged sequences placed in one padded batch for the chain engine.

Callers that keep token values flat, ``(N, K)`` in input order (a CRF's
features and labels, the ragged forward-backward's reference), meet the
engine's padded batch ``(n, T, K)`` with a left-aligned mask, longest
sequence first. :class:`Layout` computes that placement once per batch, so
moving between the two is one fancy-index assignment (``pad``) or read
(``values[layout.rows]``, or :meth:`Layout.unpad`). The HMM keeps its
concatenated observations ``(N, ...)`` and reads them time-major through
:meth:`Layout.time_index`, the ``(T, n)`` index of each step's token.

Examples
--------
>>> import numpy as np
>>> lay = Layout(np.array([1, 3]))
>>> lay.mask
array([[ True,  True,  True],
       [ True, False, False]])
>>> lay.pad(np.arange(4.0)[:, None])[..., 0]
array([[1., 2., 3.],
       [0., 0., 0.]])
>>> lay.time_index()                  # (T, n): the token at step t of padded row r; 0 on padding
array([[1, 0],
       [2, 0],
       [3, 0]])
>>> lay.unpad(lay.pad(np.arange(4.0)[:, None]))[:, 0]
array([0., 1., 2., 3.])
"""

from __future__ import annotations

import numpy as np

__all__ = ["Layout"]

# Symbols: n sequences, T steps (padded), K values per token, N tokens.


class Layout:
    """Tokens of ragged sequences placed in a padded (n, T) batch.

    Padded row ``r`` holds sequence ``order[r]`` (:attr:`order`), longest first (the order
    the chain engine works in, so it need not reorder), and ``rows[i]`` is
    the flat padded position of token ``i`` (in input order).

    Parameters
    ----------
    lengths : ndarray of int, shape (n,)
    """

    __slots__ = ("lengths", "T", "order", "mask", "rows", "_buf", "_starts")

    def __init__(self, lengths):
        n = lengths.size
        self.lengths = lengths
        self.T = int(lengths.max()) if n else 0
        order = self.order = np.argsort(-lengths, kind="stable")  # (n,) sequence of each padded row
        self.mask = np.arange(self.T) < lengths[order][:, None]  # (n, T)
        base = np.empty(n, np.intp)
        base[order] = np.arange(n) * self.T  # padded position of each sequence's first token
        starts = self._starts = np.cumsum(lengths) - lengths  # (n,) flat index of each sequence's first token
        self.rows = np.repeat(base - starts, lengths) + np.arange(int(lengths.sum()))  # (N,)
        self._buf = None

    @property
    def lens(self):
        """(n,) the lengths of the padded rows (non-increasing)."""
        return self.lengths[self.order]

    @property
    def identity(self):
        """Whether padded row ``r`` holds sequence ``r`` (the lengths were already non-increasing)."""
        return bool(np.all(self.order == np.arange(self.lengths.size)))

    def time_index(self):
        """(T, n) flat token index of step ``t`` of padded row ``r``; 0 on padding.

        ``tokens[layout.time_index()]`` is the batch time-major ``(T, n, ...)``.
        """
        pos = self._starts[self.order][None, :] + np.arange(self.T)[:, None]  # (T, n)
        return pos if self.mask.all() else np.where(self.mask.T, pos, 0)

    def unpad(self, x, *, time_major=False):
        """(n, T, ...) padded values (or (T, n, ...) with `time_major`) -> (N, ...) tokens in input order."""
        n, T = self.lengths.size, self.T
        if time_major:
            r, t = np.divmod(self.rows, T) if T else (self.rows, self.rows)  # padded row and step of each token
            return x.reshape((T * n,) + x.shape[2:])[t * n + r]  # (N, ...)
        return x.reshape((n * T,) + x.shape[2:])[self.rows]  # (N, ...)

    def pad(self, tok):
        """(N, K) token values -> (n, T, K), zero on padding (a reused buffer)."""
        K = tok.shape[-1]
        if self._buf is None or self._buf.shape[1] != K:
            self._buf = np.zeros((self.lengths.size * self.T, K))  # (n*T, K); padding rows stay 0
        self._buf[self.rows] = tok
        return self._buf.reshape(self.lengths.size, self.T, K)  # (n, T, K)
