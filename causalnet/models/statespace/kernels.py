"""Compiled Kalman sweeps: the filter and the Rauch–Tung–Striebel smoother as numba kernels.

The kernels run one sequence after another over the batch, with the small
matrix algebra of a step (products, a Cholesky factor, triangular solves)
written as loops, so a step allocates nothing; both factor by the one
:func:`cholesky_into`. They share their contract with
the numpy reference sweeps of :mod:`.kalman` (which calls them and is tested
equal to them) and are compiled on first use through
:func:`causalnet.runtime.jit` (numba is imported only then).

Layout (all float64, C-contiguous; a parameter stack has a leading length of
1, shared by every step, or T, one per step; transition-like stacks are indexed
by the step they lead *into*, index 0 unused):

* ``y (n, T, p)`` observations with missing components already set to 0 and
  ``obs (n, T, p)`` their mask (1.0 observed, 0.0 missing);
* ``A (TA, d, d)``, ``Q (TQ, d, d)``, ``c (nc, Tc, d)`` transitions, their noise
  covariances and offsets (``nc`` is 1 or n);
* ``H (TH, p, d)``, ``R (TR, p, p)`` observation matrices and noise covariances;
* ``reset (T,)`` 1.0 where the state is drawn afresh from ``N(rmean[., t],
  rcov[t])`` instead of the transition (always at t = 0: the initial law; a
  ``do`` on the state: ``rcov = 0``), ``rmean (nr, T, d)``.

A missing component is handled exactly by zeroing its row of ``H`` and its
row and column of ``R`` but a unit diagonal: its innovation is then 0 with
variance 1, independent of the rest, so the gain ignores it and its
``-log(2 pi) / 2`` is added back to the log-likelihood.

Symbols: ``n`` sequences, ``T`` steps, ``d`` state size, ``p`` observation size.
"""

from __future__ import annotations

import math

import numpy as np

from ... import runtime

__all__ = ["filter_kernel", "smoother_kernel", "cholesky_into"]

_LOG_2PI = math.log(2.0 * math.pi)

_njit = runtime.jit(nogil=True, error_model="numpy")
_njit_inline = runtime.jit(nogil=True, error_model="numpy", inline="always")


@_njit_inline
def cholesky_into(S, L, floor, symmetrise):  # pragma: no cover - compiled
    """``L L^T = S``: the lower triangle of `L` ``(p, p)`` written; returns ``log det S``.

    NaN instead when a pivot is not above `floor` (S not positive definite, or
    singular to that floor; `L` is then partly written). With `symmetrise`
    the factored matrix is ``(S + S^T) / 2`` (a product computed in floating
    point need not be exactly symmetric). Shared by both sweeps (compiled into
    each: ``inline="always"``).
    """
    p = S.shape[0]
    logdet = 0.0
    for a in range(p):
        for b in range(a + 1):
            acc = 0.5 * (S[a, b] + S[b, a]) if symmetrise else S[a, b]
            for k in range(b):
                acc -= L[a, k] * L[b, k]
            if a == b:
                if not acc > floor:
                    return math.nan
                L[a, a] = math.sqrt(acc)
                logdet += 2.0 * math.log(L[a, a])
            else:
                L[a, b] = acc / L[b, b]
    return logdet



# Long by design (~95 lines): one compiled function compiles faster than several (numba compiles and
# links each callee separately), and the step's algebra is kept in registers.
@_njit
def filter_kernel(y, obs, A, Q, c, H, R, reset, rmean, rcov, mf, Pf, mp, Pp, ll, status):  # pragma: no cover
    """Joseph-form Kalman filter, in place.

    Outputs ``mf, mp (n, T, d)``, ``Pf, Pp (n, T, d, d)`` (filtered and
    predicted moments), ``ll (n,)`` log-likelihoods and ``status (n,)``: 0, or
    ``t + 1`` when the innovation covariance at step ``t`` was not positive
    definite (the row's outputs are then garbage).
    """
    n, T, p = y.shape
    d = mf.shape[2]
    m = np.empty(d)
    P = np.empty((d, d))
    S = np.empty((p, p))
    L = np.empty((p, p))
    HP = np.empty((p, d))                     # H P, then solved in place into S^-1 H P (= K^T)
    e = np.empty(p)
    e0 = np.empty(p)
    IKH = np.empty((d, d))
    tmp = np.empty((d, d))
    Hs = np.empty((p, d))
    Rs = np.empty((p, p))
    for i in range(n):
        status[i] = 0
        total = 0.0
        for t in range(T):
            # -- predict
            if reset[t] != 0.0:
                ir = i if rmean.shape[0] > 1 else 0
                for a in range(d):
                    m[a] = rmean[ir, t, a]
                    for b in range(d):
                        P[a, b] = rcov[t, a, b]
            else:
                At = A[t if A.shape[0] > 1 else 0]
                Qt = Q[t if Q.shape[0] > 1 else 0]
                ic = i if c.shape[0] > 1 else 0
                tc = t if c.shape[1] > 1 else 0
                for a in range(d):
                    acc = c[ic, tc, a]
                    for b in range(d):
                        acc += At[a, b] * mf[i, t - 1, b]
                    m[a] = acc
                for a in range(d):                           # tmp = A Pf
                    for b in range(d):
                        acc = 0.0
                        for k in range(d):
                            acc += At[a, k] * Pf[i, t - 1, k, b]
                        tmp[a, b] = acc
                for a in range(d):                           # P = tmp A^T + Q
                    for b in range(d):
                        acc = Qt[a, b]
                        for k in range(d):
                            acc += tmp[a, k] * At[b, k]
                        P[a, b] = acc
            for a in range(d):
                mp[i, t, a] = m[a]
                for b in range(d):
                    Pp[i, t, a, b] = 0.5 * (P[a, b] + P[b, a])
                    P[a, b] = Pp[i, t, a, b]
            # -- update (missing components: zero row of H, unit variance, zero innovation)
            Ht = H[t if H.shape[0] > 1 else 0]
            Rt = R[t if R.shape[0] > 1 else 0]
            n_miss = 0
            for a in range(p):
                w = obs[i, t, a]
                if w == 0.0:
                    n_miss += 1
                for b in range(d):
                    Hs[a, b] = Ht[a, b] * w
                for b in range(p):
                    Rs[a, b] = Rt[a, b] * w * obs[i, t, b]
                if w == 0.0:
                    Rs[a, a] = 1.0
            if n_miss == p:
                for a in range(d):
                    mf[i, t, a] = m[a]
                    for b in range(d):
                        Pf[i, t, a, b] = P[a, b]
                continue
            for a in range(p):
                acc = y[i, t, a]
                for b in range(d):
                    acc -= Hs[a, b] * m[b]
                e[a] = acc
                e0[a] = acc
                for b in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += Hs[a, k] * P[k, b]
                    HP[a, b] = acc
            for a in range(p):                               # S = H P H^T + R
                for b in range(p):
                    acc = Rs[a, b]
                    for k in range(d):
                        acc += HP[a, k] * Hs[b, k]
                    S[a, b] = acc
            logdet = cholesky_into(S, L, 0.0, True)          # S = L L^T (S symmetrised)
            if math.isnan(logdet):                           # not positive definite
                status[i] = t + 1
                break
            for col in range(d + 1):                         # solve S X = [H P | e] in place
                for a in range(p):                           # forward: L z = b
                    acc = HP[a, col] if col < d else e[a]
                    for k in range(a):
                        acc -= L[a, k] * (HP[k, col] if col < d else e[k])
                    if col < d:
                        HP[a, col] = acc / L[a, a]
                    else:
                        e[a] = acc / L[a, a]
                if col == d:                                 # whitened innovation: its squared norm
                    quad = 0.0
                    for a in range(p):
                        quad += e[a] * e[a]
                    total += -0.5 * (quad + logdet + (p - n_miss) * _LOG_2PI)
                for a in range(p - 1, -1, -1):               # backward: L^T x = z
                    acc = HP[a, col] if col < d else e[a]
                    for k in range(a + 1, p):
                        acc -= L[k, a] * (HP[k, col] if col < d else e[k])
                    if col < d:
                        HP[a, col] = acc / L[a, a]
                    else:
                        e[a] = acc / L[a, a]
            for a in range(d):                               # HP is now K^T: mf = m + K innovation
                acc = m[a]
                for k in range(p):
                    acc += HP[k, a] * e0[k]
                mf[i, t, a] = acc
            for a in range(d):                               # IKH = I - K H
                for b in range(d):
                    acc = 1.0 if a == b else 0.0
                    for k in range(p):
                        acc -= HP[k, a] * Hs[k, b]
                    IKH[a, b] = acc
            for a in range(d):                               # tmp = IKH P
                for b in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += IKH[a, k] * P[k, b]
                    tmp[a, b] = acc
            for a in range(d):                               # Pf = tmp IKH^T + K R K^T
                for b in range(a + 1):
                    acc = 0.0
                    for k in range(d):
                        acc += tmp[a, k] * IKH[b, k]
                    for k in range(p):
                        kr = 0.0
                        for q in range(p):
                            kr += HP[q, a] * Rs[q, k]
                        acc += kr * HP[k, b]
                    Pf[i, t, a, b] = acc
                    Pf[i, t, b, a] = acc
        ll[i] = total


@_njit
def smoother_kernel(A, reset, mf, Pf, mp, Pp, ms, Ps, J, status):  # pragma: no cover - compiled
    """Rauch–Tung–Striebel smoother, in place.

    ``ms (n, T, d)``, ``Ps (n, T, d, d)`` smoothed moments; ``J (n, T-1, d,
    d)`` smoother gains ``J[t] = Pf[t] A[t+1]^T Pp[t+1]^-1`` (0 when step t+1
    is reset: a ``do`` there cuts the past from the future). ``status (n,)``:
    0, or ``t + 1`` when ``Pp[t+1]`` was singular (the caller falls back to the
    pseudo-inverse of the numpy sweep).
    """
    n, T, d = mf.shape
    L = np.empty((d, d))
    X = np.empty((d, d))
    D = np.empty((d, d))
    for i in range(n):
        status[i] = 0
        for a in range(d):
            ms[i, T - 1, a] = mf[i, T - 1, a]
            for b in range(d):
                Ps[i, T - 1, a, b] = Pf[i, T - 1, a, b]
        for t in range(T - 2, -1, -1):
            if reset[t + 1] != 0.0:
                for a in range(d):
                    ms[i, t, a] = mf[i, t, a]
                    for b in range(d):
                        J[i, t, a, b] = 0.0
                        Ps[i, t, a, b] = Pf[i, t, a, b]
                continue
            At = A[t + 1 if A.shape[0] > 1 else 0]
            for a in range(d):                               # X = A Pf  (= (Pf A^T)^T, Pf symmetric)
                for b in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += At[a, k] * Pf[i, t, k, b]
                    X[a, b] = acc
            if math.isnan(cholesky_into(Pp[i, t + 1], L, 1e-300, False)):   # Pp[t+1] = L L^T
                status[i] = t + 1                            # singular: the numpy sweep's pseudo-inverse
                break
            for col in range(d):                             # X <- Pp^-1 X  (= J^T)
                for a in range(d):
                    acc = X[a, col]
                    for k in range(a):
                        acc -= L[a, k] * X[k, col]
                    X[a, col] = acc / L[a, a]
                for a in range(d - 1, -1, -1):
                    acc = X[a, col]
                    for k in range(a + 1, d):
                        acc -= L[k, a] * X[k, col]
                    X[a, col] = acc / L[a, a]
            for a in range(d):
                acc = mf[i, t, a]
                for k in range(d):
                    J[i, t, a, k] = X[k, a]
                    acc += X[k, a] * (ms[i, t + 1, k] - mp[i, t + 1, k])
                ms[i, t, a] = acc
            for a in range(d):                               # D = (Ps[t+1] - Pp[t+1]) J^T
                for b in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += (Ps[i, t + 1, a, k] - Pp[i, t + 1, a, k]) * X[k, b]
                    D[a, b] = acc
            for a in range(d):                               # Ps = Pf + J D
                for b in range(a + 1):
                    acc = Pf[i, t, a, b]
                    for k in range(d):
                        acc += X[k, a] * D[k, b]
                    Ps[i, t, a, b] = acc
                    Ps[i, t, b, a] = acc
