"""Batched evidence read off one joint table, when the rows are about as many as the evidence's joint states.

Terms
-----
A batched query (see :mod:`.batches`) asks ``P(targets | e_r)`` for rows
``r`` whose *batched* evidence nodes ``B`` take per-row states (the other
evidence nodes, ``s``, one state for every row). Answering each of the ``d``
distinct rows costs about ``d`` eliminations. When ``B`` has few joint states
(``prod(cards of B) <= STATES_PER_ROW * d``), one elimination that keeps ``B``
as variables gives every row at once: the joint table
``J = P(targets, B | s)``, of shape ``(*target_cards, *cards of B)``, holds
each row's answer in its slice ``J[..., e_r]``:

* ``P(targets | e_r, s) = J[..., e_r] / sum(J[..., e_r])``;
* ``log P(e_r, s) = log P(s) + log sum(J[..., e_r])``.

That elimination's tables are at most ``prod(cards of B)`` times those of one
row's (each keeps the states of the nodes of ``B`` in its scope), so the
joint costs at most ``STATES_PER_ROW`` times the ``d`` rows, and usually far
less: an evidence leaf adds its states to the last table only. It is a
scalar query of the network by its compiled programs
(:meth:`DiscreteBN.compiled_query`: the query policy is left alone), compiled
once per shape and constant-folded when ``s`` is empty. The answers are exact; they agree
with the row-by-row programs to round-off.

A row whose evidence has probability below the rescaling threshold
(:data:`~causalnet.inference.discrete.programs.TINY`, relative to ``P(s)``),
zero included, sends the whole query back to the row-by-row programs, which
rescale, or raise naming the impossible rows; so does evidence ``s`` of
probability zero.

Legend: ``n`` rows given, ``d`` distinct rows, ``T`` the targets' joint states.

Examples
--------
>>> import numpy as np
>>> from causalnet import DAG
>>> from causalnet.inference.discrete import DiscreteBN
>>> bn = DiscreteBN(DAG([("A", "B")]), {"A": np.array([0.3, 0.7]), "B": np.array([[0.9, 0.1], [0.2, 0.8]])},
...                 {"A": 2, "B": 2})
>>> rows = EvidenceRows({1: np.array([1, 0, 1, 1])}, 4, bn.card)
>>> probs, log_ev = joint_rows_query(bn, (0,), {1: np.array([1, 0, 1, 1])}, rows, "weighted-min-fill")
>>> np.round(probs[:2], 4).tolist()                       # P(A | B=1), P(A | B=0)
[[0.0508, 0.9492], [0.6585, 0.3415]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...errors import EvidenceError
from .batches import EvidenceRows
from .programs import TINY

__all__ = ["joint_rows_query", "STATES_PER_ROW", "MAX_JOINT_ENTRIES"]

#: the joint table is used when the batched evidence nodes have at most this many joint states per distinct row
STATES_PER_ROW = 4
#: ... and the joint table of the targets and those nodes has at most this many entries
MAX_JOINT_ENTRIES = 1 << 16


def joint_rows_query(net, tidx: tuple[int, ...], ev: dict, rows: EvidenceRows,
                     order: str | Sequence) -> tuple[np.ndarray, np.ndarray] | None:
    """``(P(targets | e_r) (n, *target_cards), log P(e_r) (n,))`` from one joint table, or None.

    Parameters
    ----------
    net : DiscreteBN
        The network (its ``compiled_query`` computes the joint table).
    tidx : tuple of int
        The targets (node ints), none of them observed.
    ev : dict of node int -> int or intp array of shape (n,)
        Validated evidence, some of it batched.
    rows : EvidenceRows
        The distinct rows of `ev`.
    order : str or sequence
        The elimination order, as for ``compiled_query``.

    Returns
    -------
    tuple or None
        None when the joint table does not pay (module docstring) or a row
        needs rescaling or is impossible: the caller answers row by row.
    """
    bat = sorted(u for u, x in ev.items() if type(x) is not int)
    card = net.card
    states = math.prod(card[u] for u in bat)
    tshape = tuple(card[t] for t in tidx)
    if not bat or states > STATES_PER_ROW * rows.d or states * math.prod(tshape) > MAX_JOINT_ENTRIES:
        return None
    scalar = {u: x for u, x in ev.items() if type(x) is int}
    try:
        joint, log_s = net.compiled_query((*tidx, *bat), scalar, None, joint=True, order=order)
    except EvidenceError:                                   # s impossible: the row-by-row path names it
        return None
    T = math.prod(tshape)
    table = np.asarray(joint, dtype=np.float64).reshape(T, *(card[u] for u in bat))    # (T, *cards of B)
    q = table[(slice(None), *(rows.ev[u] for u in bat))].T                              # (d, T)
    z = q.sum(axis=1)                                                                   # (d,) P(e_r | s)
    if not np.all(z >= TINY):
        return None
    probs = (q / z[:, None]).reshape(rows.d, *tshape)                                   # (d, *target_cards)
    log_ev = log_s + np.log(z)                                                          # (d,)
    probs, log_ev = rows.scatter((probs, log_ev))
    return probs, log_ev
