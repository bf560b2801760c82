"""Ragged sequences placed in one padded batch for the chain engine.

Callers that keep token values flat, ``(N, K)`` in input order (a CRF's
features and labels, the ragged forward-backward's reference), meet the
engine's padded batch ``(n, T, K)`` with a left-aligned mask, longest
sequence first. :class:`Layout` computes that placement once per batch, so
moving between the two is one fancy-index assignment (``pad``) or read
(``values[layout.rows]``).

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

    __slots__ = ("lengths", "T", "order", "mask", "rows", "_buf")

    def __init__(self, lengths):
        n = lengths.size
        self.lengths = lengths
        self.T = int(lengths.max()) if n else 0
        order = self.order = np.argsort(-lengths, kind="stable")  # (n,) sequence of each padded row
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
