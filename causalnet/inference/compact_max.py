"""Max-product messages of noisy-OR and noisy-MAX factors, from their structural form (never their tables).

A noisy-MAX factor over a child ``Y`` and k parents has
``P(Y = y | x) = L(y) Π_i F_i(y | x_i) − L(y−1) Π_i F_i(y−1 | x_i)`` (cumulative
leak ``L`` and parent terms ``F_i``; noisy-OR is the two-level case). Its
max-product message to the child at level ``y`` is

    ``M(y) = max_x [A Π_i α_i(x_i) − B Π_i β_i(x_i)]``,
    ``α_i(s) = μ_i(s) F_i(y | s)``, ``β_i(s) = μ_i(s) F_i(y−1 | s)``, ``A = L(y)``, ``B = L(y−1)``

with ``μ_i`` the parents' incoming messages; to parent j in state s it is
``max_y μ_Y(y) · M_j(y, s)``, the same maximum with ``x_j = s`` fixed. A
difference of two products does not factorise, and maximising it exactly is
a knapsack-like problem (exponential in k in general). This module evaluates
it *exactly at a set of candidate assignments* and keeps the best, in
O(k log k) per factor and level (O(k²) for the k parent messages):

* every slot (parent) is reduced to two choices: the state that maximises
  ``α_i`` (the *base*) and the state that minimises ``β_i / α_i`` (the one
  that most widens the difference, ties to the larger ``α_i``);
* candidates are the base, the base with any single slot switched, and the
  base with the first p slots switched in order of decreasing
  ``log-ratio gain / log α loss`` (the greedy prefixes of the Lagrangian
  relaxation ``max Σ log α_i + θ Σ log(α_i/β_i)`` over all θ ≥ 0).

So every message is a *lower bound* of the exact max-product message, and it
is exact (i) at the lowest level ``y = 0`` (``B = 0``: the product maximises
slot by slot), (ii) whenever every slot has at most two states and at most
two slots are free (the candidates then enumerate every subset: a child
message of a factor with ≤ 2 binary parents, a parent message with ≤ 3), and
(iii) whenever the optimum is one of the candidates. The MAP assignment built
from the max-marginals is always scored exactly afterwards
(:func:`causalnet.inference.loopy.loopy_map`).

Logs are kept as a finite part and a count of zeros (exact zeros of
deterministic parts and hard evidence), so leaving one slot out never computes
``(-inf) − (-inf)``. Symbols: ``n`` rows, ``N`` factors, ``S`` slots
(parents of all factors), ``P`` (slot, slot of the same factor) pairs, ``K``
the graph's largest card.
"""

from __future__ import annotations

import numpy as np

from .. import limits

__all__ = ["noisy_max_max_messages", "noisy_max_level_values", "logistic_max_messages", "CandidatePairs"]


class CandidatePairs:
    """The (slot j, slot i of the same factor) pairs of a noisy-MAX view, for the k² leave-one-out candidates.

    Attributes
    ----------
    slot : ndarray of int, shape (P,)
        j, nondecreasing (pairs of one slot are contiguous).
    other : ndarray of int, shape (P,)
        i, running over j's factor's slots (``factor_start[f] + r``).
    start : ndarray of int, shape (S,)
        The first pair of each slot.
    """

    def __init__(self, factor_start: np.ndarray) -> None:
        sizes = np.diff(factor_start)                                           # (N,) k_f
        slot_size = np.repeat(sizes, sizes)                                     # (S,) k of the slot's factor
        slot_first = np.repeat(factor_start[:-1], sizes)                        # (S,) first slot of its factor
        limits.check_bytes(8.0 * 6 * float(slot_size.sum()), what="the candidate pairs of the max-product "
                           "noisy-MAX messages", cause=f"largest factor of {int(sizes.max(initial=0))} parents",
                           knob="batch_bytes")
        self.slot = np.repeat(np.arange(slot_size.size), slot_size)             # (P,)
        self.start = np.concatenate([[0], np.cumsum(slot_size)[:-1]]).astype(np.int64)
        self.other = slot_first[self.slot] + (np.arange(self.slot.size) - self.start[self.slot])


def _split_log(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log x`` as (finite part, count of zeros)."""
    zero = x <= 0
    return np.log(np.where(zero, 1.0, x)), zero.astype(np.int64)


def _log_value(A, B, fa, za, fb, zb) -> np.ndarray:
    """``log(A e^a − B e^b)`` for logs given as (finite part, zero count); ``b ≤ a`` slot by slot."""
    ratio = np.where(zb > 0, 0.0, np.exp(np.minimum(fb - fa, 0.0)))
    diff = np.maximum(A - B * ratio, 0.0)
    with np.errstate(divide="ignore"):
        out = fa + np.log(diff)
    return np.where(za > 0, -np.inf, out)


def _segment_max(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Max over contiguous segments of axis 1."""
    return np.maximum.reduceat(x, starts, axis=1)


def noisy_max_level_values(view, mu: np.ndarray, y: int, pairs: CandidatePairs) -> tuple[np.ndarray, np.ndarray]:
    """Log max-product values at child level `y`: to the child ``(n, N)`` and per parent state ``(n, S, K)``.

    Parameters
    ----------
    view : NoisyMaxFactors
        ``leak_cdf`` (N, K), ``slot_cdf`` (S, K, K), ``factor_start``, ``slot_factor``.
    mu : ndarray of shape (n, S, K)
        The parents' incoming messages (nonnegative, zero beyond each card).
    y : int
    pairs : CandidatePairs

    Returns
    -------
    to_child : ndarray of shape (n, N)
        ``log M(y)`` (a lower bound, see the module docstring; ``-inf`` for no consistent state).
    to_parent : ndarray of shape (n, S, K)
        ``log M_j(y, s)``.
    """
    n, S, K = mu.shape
    starts, f = view.factor_start[:-1], view.slot_factor
    A = view.leak_cdf[:, y]                                                     # (N,)
    B = view.leak_cdf[:, y - 1] if y > 0 else np.zeros_like(A)
    alpha = mu * view.slot_cdf[None, :, :, y]                                   # (n, S, K)
    beta = mu * view.slot_cdf[None, :, :, y - 1] if y > 0 else np.zeros_like(alpha)
    s0 = alpha.argmax(axis=-1)                                                  # (n, S) the base state
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(alpha > 0, beta / np.where(alpha > 0, alpha, 1.0), np.inf)
    best_r = r.min(axis=-1, keepdims=True)
    s1 = np.where(r <= best_r, alpha, -1.0).argmax(axis=-1)                     # (n, S) the widening state
    take = lambda a, s: np.take_along_axis(a, s[..., None], axis=-1)[..., 0]    # noqa: E731
    fa0, za0 = _split_log(take(alpha, s0))
    fb0, zb0 = _split_log(take(beta, s0))
    fa1, za1 = _split_log(take(alpha, s1))
    fb1, zb1 = _split_log(take(beta, s1))
    base = [np.add.reduceat(v, starts, axis=1) for v in (fa0, za0, fb0, zb0)]   # (n, N) each
    delta = [fa1 - fa0, za1 - za0, fb1 - fb0, zb1 - zb0]                        # (n, S): switching the slot
    cost = np.where(za0 > 0, 0.0, fa0 - fa1)                                    # ≥ 0: log α lost
    gain = np.where(zb1 > zb0, np.inf, np.where(zb0 > 0, 0.0, (fa1 - fb1) - (fa0 - fb0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.where(gain > 0, gain / np.maximum(cost, 1e-300), -np.inf)      # (n, S)
    order = np.lexsort((-key, np.broadcast_to(f, (n, S))), axis=-1)             # (n, S) by factor, then key
    cum = [np.cumsum(np.take_along_axis(d, order, axis=1), axis=1) for d in delta]
    cum = [c - np.concatenate([np.zeros((n, 1), c.dtype), c], axis=1)[:, starts][:, f] for c in cum]
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(S), (n, S)), axis=1)   # sorted position of each slot

    def value(parts):
        return _log_value(A[f], B[f], *parts)

    at = [b[:, f] for b in base]                                                # (n, S) base of the slot's factor
    prefix = value([a + c for a, c in zip(at, cum)])                            # (n, S) by sorted position
    single = value([a + d for a, d in zip(at, delta)])                          # (n, S) by slot
    to_child = np.maximum(_log_value(A, B, *base), np.maximum(_segment_max(prefix, starts),
                                                              _segment_max(single, starts)))
    # parent messages: slot j fixed to state s (its own term F_j, without μ_j), the others from the same
    # candidates without j
    Fy1 = view.slot_cdf[:, :, y - 1] if y > 0 else np.zeros(view.slot_cdf.shape[:2])
    own = [*_split_log(view.slot_cdf[:, :, y]), *_split_log(Fy1)]              # (S, K) each
    rest = [a - b for a, b in zip(at, (fa0, za0, fb0, zb0))]                    # (n, S) base without j
    out = _log_value(A[f][:, None], B[f][:, None], *[r[..., None] + o for r, o in zip(rest, own)])   # (n, S, K)
    j, i = pairs.slot, pairs.other                                              # (P,)
    own_j = [o[j] for o in own]                                                 # (P, K)
    Aj, Bj = A[f[j]][:, None], B[f[j]][:, None]
    in_prefix = rank[:, j] <= i                                                 # (n, P) j lies in the prefix ending at i
    for k in range(4):
        rest[k] = rest[k][:, j]                                                 # (n, P)
    pre = [rest[k] + cum[k][:, i] - np.where(in_prefix, delta[k][:, j], 0) for k in range(4)]
    sing = [rest[k] + np.where(i == j, 0, delta[k][:, i]) for k in range(4)]
    for c in (pre, sing):
        v = _log_value(Aj, Bj, *[x[..., None] + o for x, o in zip(c, own_j)])   # (n, P, K)
        out = np.maximum(out, np.maximum.reduceat(v, pairs.start, axis=1))     # (n, S, K)
    return to_child, out


def noisy_max_max_messages(view, fg, v2f: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Write the max-product messages of `view`'s factors into `new` (n, E, K); return the impossible rows (n,).

    `v2f` (n, E, K) holds the variable-to-factor messages (zero beyond each
    card); `view` is a :class:`~causalnet.inference.factor_graph.NoisyMaxFactors`
    (noisy-OR factors enter as their two-level view); its :class:`CandidatePairs`
    are built on first use and kept on it.
    """
    pairs = getattr(view, "candidate_pairs", None)
    if pairs is None:
        pairs = view.candidate_pairs = CandidatePairs(view.factor_start)
    K = v2f.shape[2]
    n = v2f.shape[0]
    mu = v2f[:, view.slot_edge, :]                                              # (n, S, K)
    muy = v2f[:, view.child_edge, :]                                            # (n, N, K)
    with np.errstate(divide="ignore"):
        log_muy = np.log(muy)
    N, S = view.child_edge.size, view.slot_edge.size
    to_child = np.full((n, N, K), -np.inf)
    to_parent = np.full((n, S, K), -np.inf)
    for y in range(int(view.child_card.max())):
        c, p = noisy_max_level_values(view, mu, y, pairs)
        live = y < view.child_card                                              # (N,)
        to_child[:, :, y] = np.where(live, c, -np.inf)
        lp = log_muy[:, view.slot_factor, y][..., None] + p                     # (n, S, K)
        to_parent = np.maximum(to_parent, np.where(live[view.slot_factor][:, None], lp, -np.inf))
    return _write_normalised(fg, ((view.child_edge, to_child, view.child_card),
                                  (view.slot_edge, to_parent, fg.edge_card[view.slot_edge])), new, n, K)


def _write_normalised(fg, parts, new: np.ndarray, n: int, K: int) -> np.ndarray:
    """Normalise log messages ``(edges, x (n, X, K), cards)`` into `new`; return the rows with no finite message."""
    impossible = np.zeros(n, dtype=bool)
    for edges, x, cards in parts:
        valid = np.arange(K) < cards[:, None]                                   # (X, K)
        x = np.where(valid, x, -np.inf)
        top = x.max(axis=-1, keepdims=True)
        ok = np.isfinite(top)
        impossible |= ~ok.all(axis=(1, 2))
        m = np.where(valid, np.exp(x - np.where(ok, top, 0.0)), 0.0)
        m = np.where(ok, m / m.sum(axis=-1, keepdims=True), np.where(valid, 1.0 / cards[:, None], 0.0))
        new[:, edges, :] = np.where(valid, m, 1.0)
    return impossible


def _logistic_level(lg, mu: np.ndarray, c: int, pairs: CandidatePairs) -> tuple[np.ndarray, np.ndarray]:
    """Log max-product values of logistic factors for child state `c`: ``(n, N)`` and ``(n, S, K)``.

    ``max_x Σ_i log μ_i(x_i) + log softmax_c(b + Σ_i w_i x_i)``: each slot is reduced to its
    base state (largest ``μ_i``) and the state that most raises the margin
    ``z_c − max_{q≠c} z_q`` (ties to the larger ``μ_i``); candidates as for noisy-MAX.
    """
    n, S, K = mu.shape
    starts, f = lg.factor_start[:-1], lg.slot_factor
    states = np.arange(K, dtype=np.float64)
    other = np.delete(lg.slot_w, c, axis=1).max(axis=1) if K > 1 else np.zeros(S)   # (S,)
    margin = (lg.slot_w[:, c] - other)[None, :, None] * states                  # (1, S, K)
    ok = mu > 0
    s0 = mu.argmax(axis=-1)                                                     # (n, S)
    top = np.where(ok, margin, -np.inf).max(axis=-1, keepdims=True)
    s1 = np.where(ok & (margin >= top), mu, -1.0).argmax(axis=-1)               # (n, S)
    take = lambda a, s: np.take_along_axis(a, s[..., None], axis=-1)[..., 0]    # noqa: E731
    fa0, za0 = _split_log(take(mu, s0))
    fa1, za1 = _split_log(take(mu, s1))
    w = lg.slot_w[None]                                                         # (1, S, K) per child state
    z0, z1 = s0[..., None] * w, s1[..., None] * w                               # (n, S, K) logit shares
    base = [np.add.reduceat(v, starts, axis=1) for v in (fa0, za0, z0)]         # (n, N), (n, N), (n, N, K)
    base[2] = base[2] + lg.bias[None]
    delta = [fa1 - fa0, za1 - za0, z1 - z0]
    cost = np.where(za0 > 0, 0.0, fa0 - fa1)
    gain = np.take_along_axis(margin[0][None].repeat(n, 0), s1[..., None], -1)[..., 0] - \
        np.take_along_axis(margin[0][None].repeat(n, 0), s0[..., None], -1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.where(gain > 0, gain / np.maximum(cost, 1e-300), -np.inf)
    order = np.lexsort((-key, np.broadcast_to(f, (n, S))), axis=-1)
    cum = []
    for d in delta:
        srt = np.take_along_axis(d, order if d.ndim == 2 else order[..., None], axis=1)
        c_ = np.cumsum(srt, axis=1)
        pad = np.concatenate([np.zeros_like(c_[:, :1]), c_], axis=1)
        cum.append(c_ - pad[:, starts][:, f])
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(S), (n, S)), axis=1)

    def value(fa, za, z):
        bias_ok = np.isfinite(z[..., c])
        zz = np.where(np.isfinite(z), z, -np.inf)
        lse = np.log(np.exp(zz - zz.max(axis=-1, keepdims=True)).sum(axis=-1)) + zz.max(axis=-1)
        return np.where((za > 0) | ~bias_ok, -np.inf, fa + zz[..., c] - lse)

    at = [b[:, f] for b in base]
    prefix = value(*[a + x for a, x in zip(at, cum)])
    single = value(*[a + d for a, d in zip(at, delta)])
    to_child = np.maximum(value(*base), np.maximum(_segment_max(prefix, starts), _segment_max(single, starts)))
    rest = [a - b for a, b in zip(at, (fa0, za0, z0))]                          # (n, S[, K]) base without j
    own = states[:, None] * lg.slot_w[:, None, :]                               # (S, K parent, K child)
    out = value(rest[0][..., None], rest[1][..., None], rest[2][:, :, None, :] + own[None])   # (n, S, K)
    j, i = pairs.slot, pairs.other
    in_prefix = rank[:, j] <= i
    rest = [r[:, j] for r in rest]
    pre = [r + x[:, i] - np.where(in_prefix if d.ndim == 2 else in_prefix[..., None], d[:, j], 0)
           for r, x, d in zip(rest, cum, delta)]
    sing = [r + np.where((i == j) if d.ndim == 2 else (i == j)[:, None], 0, d[:, i]) for r, d in zip(rest, delta)]
    for cand in (pre, sing):
        v = value(cand[0][..., None], cand[1][..., None], cand[2][:, :, None, :] + own[j][None])   # (n, P, K)
        out = np.maximum(out, np.maximum.reduceat(v, pairs.start, axis=1))
    return to_child, out


def logistic_max_messages(fg, v2f: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Write the logistic factors' max-product messages into `new` (n, E, K); return the impossible rows (n,).

    Lower bounds of the exact messages by the candidates of :func:`_logistic_level`
    (exact for a two-state child with at most two binary parents; three for the parents' messages).
    """
    lg = fg.logistic
    pairs = getattr(lg, "candidate_pairs", None)
    if pairs is None:
        pairs = lg.candidate_pairs = CandidatePairs(lg.factor_start)
    n, K = v2f.shape[0], v2f.shape[2]
    mu = v2f[:, lg.slot_edge, :]
    with np.errstate(divide="ignore"):
        log_muy = np.log(v2f[:, lg.child_edge, :])                              # (n, N, K)
    N, S = lg.child_edge.size, lg.slot_edge.size
    to_child, to_parent = np.full((n, N, K), -np.inf), np.full((n, S, K), -np.inf)
    for c in range(int(lg.child_card.max())):
        ch, p = _logistic_level(lg, mu, c, pairs)
        live = c < lg.child_card
        to_child[:, :, c] = np.where(live, ch, -np.inf)
        to_parent = np.maximum(to_parent, np.where(live[lg.slot_factor][:, None],
                                                   log_muy[:, lg.slot_factor, c][..., None] + p, -np.inf))
    return _write_normalised(fg, ((lg.child_edge, to_child, lg.child_card), (lg.slot_edge, to_parent, lg.slot_card)),
                             new, n, K)
