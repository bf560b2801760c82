"""Loopy-propagation messages of noisy-MAX and logistic factors, from their structural form.

A compact factor over a child ``Y`` and k parents is never expanded into its
``(*parent_cards, K)`` table here. Its sum-product messages are computed from
the incoming variable-to-factor messages ``μ_i`` (one per parent) and ``μ_Y``:

Noisy-MAX (exact)
    ``P(Y ≤ y | x) = F_leak(y) Π_i F_i(y | x_i)`` is a product of one term per
    parent, so averaging it over independent parents is the product of the
    averages: with ``t_i(y) = E_{μ_i}[F_i(y | x_i)]`` the message to the child
    is the difference in ``y`` of ``F_leak Π_i t_i``, and to parent j in state s
    ``Σ_y μ_Y(y) [G_j(y, s) − G_j(y−1, s)]`` with
    ``G_j(y, s) = F_leak(y) Π_{i≠j} t_i(y) · F_j(y | s)``. Both are what the
    expanded table would send, in O(k K²) per factor instead of O(K^(k+1)). (The
    noisy-OR of :func:`causalnet.inference.loopy.propagate` is the two-level case.)

Logistic (approximate)
    The logit ``z_c = b_c + Σ_i w_ic x_i`` is a sum of independent terms under
    the incoming messages; it is replaced by a Gaussian of the same mean
    ``m_c`` and variance ``v_c``, and ``E[softmax(z)]_c`` by the probit
    approximation ``softmax_c(m / sqrt(1 + π v / 8))`` (MacKay 1992; exact in
    the limit ``v → 0`` and within a few 1e-2 for a binary child). The message
    to parent j in state s uses the same form with ``x_j = s`` (its mean and
    variance removed). :func:`causalnet.inference.approximate.model_factor_graph`
    uses this only for a logistic node whose table would exceed
    :data:`causalnet.inference.approximate.LOGISTIC_TABLE_ENTRIES`; smaller ones
    are tables (exact messages).

Both write normalised messages (1 beyond a variable's card) into the array of
new factor-to-variable messages and return the rows in which a factor has no
consistent state. Symbols: ``n`` rows, ``N`` factors, ``S`` parent slots, ``K``
the graph's largest card.
"""

from __future__ import annotations

import numpy as np

__all__ = ["noisy_max_messages", "logistic_messages", "leave_one_out_products", "noisy_max_child_pmf",
           "logistic_child_pmf"]


def leave_one_out_products(t: np.ndarray, starts: np.ndarray, slot_factor: np.ndarray) -> tuple:
    """Per-factor products of `t` over its slots, and the same leaving each slot out, without dividing by zero.

    Parameters
    ----------
    t : ndarray of shape (n, S, ...)
        Nonnegative.
    starts : ndarray of int, shape (N,)
        First slot of each factor (slots of a factor are contiguous).
    slot_factor : ndarray of int, shape (S,)

    Returns
    -------
    total : ndarray of shape (n, N, ...)
    rest : ndarray of shape (n, S, ...)
        ``Π_{i ≠ s} t_i`` over the slot's factor.
    """
    zero = t <= 0
    fin = np.log(np.where(zero, 1.0, t))
    Sf = np.add.reduceat(fin, starts, axis=1)                                  # (n, N, ...)
    Zf = np.add.reduceat(zero.astype(np.int64), starts, axis=1)                # (n, N, ...)
    total = np.exp(Sf) * (Zf == 0)
    rest = np.exp(Sf[:, slot_factor] - fin) * ((Zf[:, slot_factor] - zero) == 0)   # (n, S, ...)
    return total, rest


def _normalised(msg: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`msg` (n, X, K) clipped at 0, normalised over valid states, 1 beyond them; and the rows with a zero sum."""
    msg = np.where(valid, np.maximum(msg, 0.0), 0.0)
    s = msg.sum(axis=-1, keepdims=True)
    bad = ~(s > 0).all(axis=(1, 2))
    return np.where(valid, msg / np.where(s > 0, s, 1.0), 1.0), bad


def noisy_max_messages(fg, v2f: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Write the noisy-MAX factors' messages into `new` (n, E, K); return the impossible rows (n,).

    `v2f` (n, E, K) holds the variable-to-factor messages (zero beyond each card).
    """
    nm = fg.noisy_max
    K = v2f.shape[2]
    mu = v2f[:, nm.slot_edge, :]                                                # (n, S, K) parent states
    tot = mu.sum(axis=-1)                                                       # (n, S)
    impossible = ~(tot > 0).all(axis=1)
    t = np.einsum("nsk,sky->nsy", mu, nm.slot_cdf) / np.where(tot > 0, tot, 1.0)[..., None]   # (n, S, K)
    total, rest = leave_one_out_products(t, nm.factor_start[:-1], nm.slot_factor)
    cdf = nm.leak_cdf[None] * total                                             # (n, N, K)
    to_child = np.diff(cdf, axis=-1, prepend=0.0)                               # (n, N, K)
    child_valid = np.arange(K) < nm.child_card[:, None]                         # (N, K)
    to_child, bad = _normalised(to_child, child_valid)
    impossible |= bad
    new[:, nm.child_edge, :] = to_child
    f = nm.slot_factor
    muy = v2f[:, nm.child_edge, :]                                              # (n, N, K)
    d = muy - np.concatenate([muy[..., 1:], np.zeros_like(muy[..., :1])], axis=-1)   # μ(y) − μ(y+1)
    weight = nm.leak_cdf[f][None] * rest * d[:, f]                              # (n, S, K)
    to_parent = np.einsum("nsy,sky->nsk", weight, nm.slot_cdf)                   # (n, S, K)
    parent_valid = np.arange(K) < fg.edge_card[nm.slot_edge][:, None]           # (S, K)
    to_parent, bad = _normalised(to_parent, parent_valid)
    new[:, nm.slot_edge, :] = to_parent
    return impossible | bad


def _probit_softmax(mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """``softmax(mean / sqrt(1 + π var / 8))`` on the last axis, ``-inf`` means staying at probability 0."""
    z = mean / np.sqrt(1.0 + np.pi * var / 8.0)
    top = z.max(axis=-1, keepdims=True)
    e = np.exp(z - top)
    return e / e.sum(axis=-1, keepdims=True)


def logistic_messages(fg, v2f: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Write the logistic factors' (approximate) messages into `new` (n, E, K); return the impossible rows."""
    lg = fg.logistic
    K = v2f.shape[2]
    mu = v2f[:, lg.slot_edge, :]                                                # (n, S, K)
    tot = mu.sum(axis=-1, keepdims=True)                                        # (n, S, 1)
    impossible = ~(tot > 0).all(axis=(1, 2))
    p = mu / np.where(tot > 0, tot, 1.0)
    states = np.arange(K, dtype=np.float64)
    ex = p @ states                                                             # (n, S) E[x_i]
    var = np.maximum(p @ states ** 2 - ex ** 2, 0.0)                            # (n, S) Var[x_i]
    starts, f = lg.factor_start[:-1], lg.slot_factor
    m_term = ex[..., None] * lg.slot_w[None]                                    # (n, S, K) per child state
    v_term = var[..., None] * lg.slot_w[None] ** 2
    mean = lg.bias[None] + np.add.reduceat(m_term, starts, axis=1)              # (n, N, K)
    vsum = np.add.reduceat(v_term, starts, axis=1)                              # (n, N, K)
    child_valid = np.arange(K) < lg.child_card[:, None]                         # (N, K)
    to_child, bad = _normalised(_probit_softmax(mean, vsum), child_valid)
    impossible |= bad
    new[:, lg.child_edge, :] = to_child
    muy = v2f[:, lg.child_edge, :]                                              # (n, N, K)
    # parent j in state s: mean + w_j (s − E[x_j]), variance without j's share
    m_s = (mean[:, f] - m_term)[:, :, None, :] + states[None, None, :, None] * lg.slot_w[None, :, None, :]
    v_s = np.maximum(vsum[:, f] - v_term, 0.0)[:, :, None, :]                   # (n, S, 1, K)
    probs = _probit_softmax(m_s, v_s)                                           # (n, S, K parent, K child)
    to_parent = np.einsum("nspc,nsc->nsp", probs, muy[:, f])                    # (n, S, K)
    parent_valid = np.arange(K) < lg.slot_card[:, None]
    to_parent, bad = _normalised(to_parent, parent_valid)
    new[:, lg.slot_edge, :] = to_parent
    return impossible | bad


def noisy_max_child_pmf(view, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Σ_x P(y | x) Π_i μ_i(x_i)`` of noisy-MAX factors, per child level, as ``pmf · exp(log_scale)``.

    `view` is a :class:`~causalnet.inference.factor_graph.NoisyMaxFactors`
    (noisy-OR factors as their two-level view); `mu` (n, S, K) the parents'
    messages, not necessarily normalised (zero beyond each card). Levels beyond
    a child's card get 0. It is the factor's partition function against a
    child message (the Bethe free energy of :func:`causalnet.inference.loopy.bethe_log_partition`).

    Returns
    -------
    pmf : ndarray of shape (n, N, K)
        The child's distribution under the parents' normalised messages.
    log_scale : ndarray of shape (n, N)
        ``Σ_i log Σ_s μ_i(s)``.
    """
    tot = mu.sum(axis=-1)                                                       # (n, S)
    t = np.einsum("nsk,sky->nsy", mu, view.slot_cdf) / np.where(tot > 0, tot, 1.0)[..., None]   # (n, S, K)
    total, _ = leave_one_out_products(t, view.factor_start[:-1], view.slot_factor)
    with np.errstate(divide="ignore"):
        log_scale = np.add.reduceat(np.log(tot), view.factor_start[:-1], axis=1)   # (n, N)
    return np.diff(view.leak_cdf[None] * total, axis=-1, prepend=0.0), log_scale


def logistic_child_pmf(fg, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The logistic factors' ``Σ_x P(c | x) Π_i μ_i(x_i)`` as ``(pmf (n, N, K), log_scale (n, N))``.

    The probit approximation of their messages (:func:`logistic_messages`); `mu` (n, S, K).
    """
    lg = fg.logistic
    K = mu.shape[2]
    tot = mu.sum(axis=-1, keepdims=True)                                        # (n, S, 1)
    p = mu / np.where(tot > 0, tot, 1.0)
    states = np.arange(K, dtype=np.float64)
    ex = p @ states                                                             # (n, S)
    var = np.maximum(p @ states ** 2 - ex ** 2, 0.0)
    starts = lg.factor_start[:-1]
    mean = lg.bias[None] + np.add.reduceat(ex[..., None] * lg.slot_w[None], starts, axis=1)   # (n, N, K)
    vsum = np.add.reduceat(var[..., None] * lg.slot_w[None] ** 2, starts, axis=1)
    with np.errstate(divide="ignore"):
        log_scale = np.add.reduceat(np.log(tot[..., 0]), starts, axis=1)        # (n, N)
    return _probit_softmax(mean, vsum), log_scale
