"""Scores of a held-out set during CRF training (sklearn-crfsuite's ``X_dev``, ``y_dev``).

CRFsuite evaluates a held-out set after every iteration when it is given one
(``crfsuite_trainer.set_evaluation``); :class:`HoldOut` does the same for
:meth:`causalnet.models.crf.CRF.fit`: it turns the current packed weights into
three figures that are added to that iteration's training-log record.

* ``dev_log_likelihood``: ``sum_i log p(y_i | x_i)`` over the held-out
  sequences, or None when a held-out label is unknown to the model (its
  probability is 0, the log-likelihood is not a number worth logging);
* ``dev_item_accuracy``: the share of tokens whose Viterbi label is right;
* ``dev_instance_accuracy``: the share of sequences labelled entirely right.

Labels unknown to the model count as errors, as in :meth:`CRF.score`.
"""

from __future__ import annotations

import numpy as np

from ...inference import chain as _chain
from ...inference.chain.layout import Layout

__all__ = ["HoldOut"]

# Symbols: n held-out sequences, N held-out tokens, F attributes, K labels.


class HoldOut:
    """Evaluate packed CRF weights on a held-out set.

    Parameters
    ----------
    Xd : ndarray or sparse matrix of shape (N, F)
        Held-out token attributes, encoded with the training vocabulary.
    y_idx : ndarray of int, shape (N,)
        Held-out label indices; -1 for a label the model does not know.
    lengths : ndarray of int, shape (n,)
    unpack : callable
        ``unpack(theta) -> (W (F, K), A (K, K))``, the training objective's.
    """

    def __init__(self, Xd, y_idx, lengths, unpack):
        self.X = Xd
        self.y = y_idx
        self.layout = Layout(lengths)
        self.unpack = unpack
        seq = np.repeat(np.arange(lengths.size), lengths)  # (N,) sequence of each token
        self.seq = seq
        self.next_in_seq = np.flatnonzero(seq[1:] == seq[:-1])  # tokens i whose successor i+1 is in the same sequence
        self.known = bool((y_idx >= 0).all())

    def __call__(self, theta) -> dict:
        """The three held-out figures for packed weights `theta` (a dict)."""
        W, A = self.unpack(theta)
        lay = self.layout
        U = self.X @ W  # (N, K)
        paths, _ = _chain.viterbi(lay.pad(U), A, lay.mask)  # (n, T)
        right = paths.ravel()[lay.rows] == self.y  # (N,)
        whole = np.bincount(self.seq, weights=~right, minlength=lay.lengths.size) == 0  # (n,)
        out = {
            "dev_log_likelihood": None,
            "dev_item_accuracy": float(right.mean()),
            "dev_instance_accuracy": float(whole.mean()),
        }
        if self.known:
            i = self.next_in_seq
            gold = U[np.arange(self.y.size), self.y].sum() + A[self.y[i], self.y[i + 1]].sum()
            log_z = _chain.log_partition(lay.pad(U), A, lay.mask)  # (n,)
            out["dev_log_likelihood"] = float(gold - np.sum(log_z))
        return out
