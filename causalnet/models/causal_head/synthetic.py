"""A small seeded next-token task with numbers and a frozen stand-in backbone, for training and tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import ModelError
from ...mechanisms.base import as_generator
from .outputs import numeric_embedding

__all__ = ["NumberTask", "synthetic_number_task"]


@dataclass
class NumberTask:
    """Token sequences with numbers and a frozen stand-in backbone.

    Sentences are clauses ``item verb <NUM> ;`` after ``<bos>``; the number
    after ``item costs`` is that item's price and after ``item weighs`` its
    weight (each times a small log-normal jitter). Next-token labels are the
    inputs shifted by one; ``targets`` holds the next number where the label
    is ``<NUM>``. Sequences have random lengths (padding masked out).

    Attributes
    ----------
    input_ids, numeric_values : arrays of shape (n, T)
    labels, targets : arrays of shape (n, T)
    attention_mask : bool array of shape (n, T)
    vocab : tuple of str
    num_id, pad_id, bos_id, sep_id : int
    values : ndarray of shape (items, 2)
        Price and weight of every item.
    embed : ndarray of shape (V, H)
    w_num : ndarray of shape (H,)
    """

    input_ids: np.ndarray
    numeric_values: np.ndarray
    labels: np.ndarray
    targets: np.ndarray
    attention_mask: np.ndarray
    vocab: tuple
    num_id: int
    pad_id: int
    bos_id: int
    sep_id: int
    values: np.ndarray
    embed: np.ndarray
    w_num: np.ndarray
    _A: np.ndarray = field(repr=False)
    _B: np.ndarray = field(repr=False)

    @property
    def hidden(self) -> int:
        return self.embed.shape[1]

    def features(self, input_ids, numeric_values=None) -> np.ndarray:
        """The frozen backbone: ``z_t = tanh(e_t A + e_{t-1} B)`` on numerical-aware embeddings, (n, T, H)."""
        e = numeric_embedding(self.embed, self.w_num, input_ids, numeric_values)   # (n, T, H)
        prev = np.concatenate([np.zeros_like(e[:, :1]), e[:, :-1]], axis=1)      # (n, T, H)
        return np.tanh(e @ self._A + prev @ self._B)

    def z(self) -> np.ndarray:
        """Features of the task's own inputs, (n, T, H)."""
        return self.features(self.input_ids, self.numeric_values)

    def resample(self, n: int, T: int | None = None, seed: Any = None) -> NumberTask:
        """Fresh sequences from the same world (items, values, backbone): a test set."""
        world = {k: getattr(self, k) for k in ("vocab", "num_id", "pad_id", "bos_id", "sep_id", "values", "embed",
                                                 "w_num", "_A", "_B")}
        return _task_sequences(world, int(n), self.input_ids.shape[1] if T is None else int(T), as_generator(seed))

    def oracle_accuracy(self) -> float:
        """Accuracy of the Bayes-optimal next-token predictor on this sample (its expected value)."""
        items = len(self.vocab) - 6
        m, inp = self.attention_mask, self.input_ids
        item_ids = np.arange(6, len(self.vocab))
        after_item = np.isin(inp, item_ids)                 # next is a verb: 1/2
        after_sep = (inp == self.sep_id) | (inp == self.bos_id)  # next is an item: 1/items
        acc = np.where(after_item, 0.5, np.where(after_sep, 1.0 / items, 1.0))
        return float(acc[m].mean())


def synthetic_number_task(n: int = 256, T: int = 32, seed: Any = 0, *, items: int = 6,
                          hidden: int = 32) -> NumberTask:
    """A small seeded next-token task with numbers, for training and testing the head.

    The "world" (item prices and weights, embeddings, the frozen backbone) and
    the sequences are drawn from `seed`; :meth:`NumberTask.resample` draws
    fresh sequences from the same world (a test set).

    Parameters
    ----------
    n : int
        Sequences.
    T : int
        Positions per sequence (>= 4).
    seed : int or Generator
    items : int
        Number of item tokens.
    hidden : int
        Width H of the frozen backbone's features.

    Returns
    -------
    NumberTask

    Examples
    --------
    >>> task = synthetic_number_task(4, 12, seed=0)
    >>> task.z().shape, task.vocab[task.num_id]
    ((4, 12, 32), '<NUM>')
    >>> task.resample(3, seed=1).input_ids.shape
    (3, 12)
    """
    if items < 1 or hidden < 1:
        raise ModelError(f"need items >= 1 and hidden >= 1; got items={items}, hidden={hidden}")
    rng = as_generator(seed)
    vocab = ("<pad>", "<bos>", "<NUM>", ";", "costs", "weighs") + tuple(f"item{i}" for i in range(items))
    V, H = len(vocab), int(hidden)
    values = np.stack([np.exp(rng.uniform(np.log(1.0), np.log(20.0), items)),
                       np.exp(rng.uniform(np.log(0.5), np.log(10.0), items))], axis=1)     # (items, 2)
    world = dict(vocab=vocab, num_id=2, pad_id=0, bos_id=1, sep_id=3, values=values,
                 embed=rng.normal(0.0, 1.0, size=(V, H)), w_num=rng.normal(0.0, 1.0 / np.sqrt(H), size=H),
                 _A=rng.normal(0.0, 1.5 / np.sqrt(H), size=(H, H)),
                 _B=rng.normal(0.0, 1.5 / np.sqrt(H), size=(H, H)))
    return _task_sequences(world, n, T, rng)


def _task_sequences(world: dict, n: int, T: int, rng: np.random.Generator) -> NumberTask:
    if n < 1 or T < 4:
        raise ModelError(f"need n >= 1 and T >= 4; got n={n}, T={T}")
    values = world["values"]
    items = values.shape[0]
    pad, bos, num, sep, costs = 0, 1, 2, 3, 4
    L = T + 1
    n_cl = (L - 1) // 4 + 1
    it = rng.integers(items, size=(n, n_cl))
    vb = rng.integers(2, size=(n, n_cl))
    jitter = np.exp(0.02 * rng.standard_normal((n, n_cl)))
    clause = np.stack([6 + it, costs + vb, np.full_like(it, num), np.full_like(it, sep)], axis=2)  # (n, n_cl, 4)
    ids = np.concatenate([np.full((n, 1), bos), clause.reshape(n, -1)], axis=1)[:, :L]       # (n, L)
    vals_cl = np.zeros((n, n_cl, 4))
    vals_cl[:, :, 2] = np.round(values[it, vb] * jitter, 2)
    vals = np.concatenate([np.zeros((n, 1)), vals_cl.reshape(n, -1)], axis=1)[:, :L]         # (n, L)
    length = rng.integers(max(4, L // 2), L + 1, size=n)                                    # tokens kept
    keep = np.arange(L)[None, :] < length[:, None]
    ids = np.where(keep, ids, pad)
    vals = np.where(keep, vals, 0.0)
    lab = ids[:, 1:]
    return NumberTask(input_ids=ids[:, :-1], numeric_values=vals[:, :-1], labels=lab,
                      targets=np.where(lab == num, vals[:, 1:], 0.0), attention_mask=keep[:, 1:], **world)
