"""Limited-memory quasi-Newton minimisation: L-BFGS, and OWL-QN for an L1 penalty.

Why this module exists
----------------------
The library's rule is to call scipy for any optimiser it has. scipy has
L-BFGS(-B) but no optimiser for ``f(w) + c1 * ||w||_1`` with a smooth ``f``
and no box constraints, which is what an L1-penalised CRF (CRFsuite's
``c1``) needs. OWL-QN (orthant-wise limited-memory quasi-Newton, Andrew &
Gao 2007) is the method CRFsuite uses for it, so it is written here in numpy:

* the two-loop recursion (Nocedal & Wright, Alg. 7.4) runs on the
  *pseudo-gradient* of ``f + c1 |w|_1`` (the steepest-descent slope, which
  at ``w_i = 0`` is one-sided);
* the search direction keeps only components that descend;
* every trial point is projected onto the orthant of the current iterate
  (coordinates that would change sign become 0), and the step is found by
  backtracking with Armijo's test on the pseudo-gradient, as liblbfgs does.

With ``c1 == 0`` the same code is plain L-BFGS with a strong-Wolfe line
search (c1=1e-4, c2=0.9, as CRFsuite's More-Thuente search); its iterates
reproduce CRFsuite's to about 1e-9. :func:`lbfgs_scipy` is the scipy
alternative for the L2-only case.

The objective contract
----------------------
``obj(theta) -> (f, grad)`` for a 1-D float array ``theta``, returning
``(inf, nan...)`` at a point where it overflows (the line search backs off);
``obj.n_evals`` counts evaluations and ``obj.last = (theta, f, grad, extra)``
holds the last one (see :class:`causalnet.models.crf.objective.Objective`).
:class:`Progress` records every iteration and applies CRFsuite's stopping
tests.

Examples
--------
>>> import numpy as np
>>> class Quadratic:                       # f(x) = ||x - 1||^2 / 2
...     n_evals, last = 0, None
...     def __call__(self, x):
...         self.n_evals += 1
...         self.last = (x, 0.5 * dot(x - 1, x - 1), x - 1, None)
...         return self.last[1], self.last[2]
>>> obj = Quadratic()
>>> x = quasi_newton(obj, np.zeros(3), 0.0, 50, 6, 20, Progress(obj, 1e-8, 0, 0.0, None))
>>> np.round(x, 6).tolist()
[1.0, 1.0, 1.0]
>>> x = quasi_newton(obj, np.zeros(3), 2.0, 50, 6, 20, Progress(obj, 1e-8, 0, 0.0, None))
>>> x.tolist()                             # the L1 penalty pulls each |x_i| < c1 to exactly 0
[0.0, 0.0, 0.0]

References
----------
.. [1] G. Andrew, J. Gao, "Scalable training of L1-regularized log-linear
       models", ICML 2007.
.. [2] J. Nocedal, S. Wright, "Numerical Optimization", 2nd ed., Springer 2006.
.. [3] N. Okazaki, "libLBFGS: a library of Limited-memory BFGS", 2010.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import minimize

__all__ = ["Progress", "TrainingLog", "quasi_newton", "lbfgs_scipy", "wolfe_search", "pseudo_gradient", "dot"]


def dot(a, b):
    """Inner product of two long vectors without BLAS.

    A threaded BLAS ``ddot`` on ~10^5 elements was measured 25-200x slower
    than a single-threaded loop when the cores are shared with other work.
    """
    return float(np.einsum("i,i->", a, b))


class TrainingLog(list):
    """The per-iteration records of a training run: a list of dicts.

    Also answers sklearn-crfsuite's ``training_log_.iterations`` and
    ``training_log_.last_iteration``.
    """

    @property
    def iterations(self) -> list:
        """Every iteration's record, first to last."""
        return list(self)

    @property
    def last_iteration(self) -> dict:
        """The last iteration's record ({} before the first)."""
        return dict(self[-1]) if self else {}


class Progress:
    """Per-iteration bookkeeping, CRFsuite's stopping tests and the user hook.

    Parameters
    ----------
    obj : objective (see the module docstring)
    epsilon : float
        Stop when ``||g|| / max(1, ||w||) < epsilon``.
    period, delta : int, float
        Stop when the objective improved by a relative amount below `delta`
        over the last `period` iterations (0 disables).
    callback : callable or None
        Called with each iteration's record (a dict); returning True stops.
    evaluate : callable or None
        ``evaluate(theta) -> dict`` of extra figures for the record (the
        held-out scores of :class:`causalnet.models.crf.holdout.HoldOut`).
    """

    def __init__(self, obj, epsilon, period, delta, callback, evaluate=None):
        self.obj = obj
        self.epsilon, self.period, self.delta = epsilon, period, delta
        self.callback = callback
        self.evaluate = evaluate
        self.history = []  # objective values
        self.log = TrainingLog()
        self.t0 = time.perf_counter()

    def __call__(self, theta, f, gnorm):
        """Record iteration; return True to stop."""
        k = len(self.history) + 1
        xnorm = float(np.sqrt(dot(theta, theta)))
        last = self.obj.last
        nll = last[3] if last is not None and (last[0] is theta or np.array_equal(last[0], theta)) else None
        entry = {
            "iteration": k,
            "loss": f,
            "log_likelihood": -nll if nll is not None else None,
            "grad_norm": gnorm,
            "weight_norm": xnorm,
            "active_features": int(np.count_nonzero(theta)),
            "n_evals": self.obj.n_evals,
            "seconds": time.perf_counter() - self.t0,
        }
        if self.evaluate is not None:
            entry.update(self.evaluate(theta))
        self.log.append(entry)
        self.history.append(f)
        stop = gnorm / max(1.0, xnorm) < self.epsilon
        if self.period and k > self.period:
            past = self.history[-1 - self.period]
            if f != 0 and (past - f) / abs(f) < self.delta:
                stop = True
        if self.callback is not None and self.callback(dict(entry)):
            stop = True
        return stop


def lbfgs_scipy(obj, theta0, max_iter, m, max_ls, progress):
    """Minimise `obj` by ``scipy.optimize.minimize(method="L-BFGS-B")`` with `progress`'s stopping tests."""

    def cb(intermediate_result):
        x = intermediate_result.x
        last = obj.last
        if last is not None and np.array_equal(last[0], x):
            f, g = last[1], last[2]
            obj.last = (x, f, g, last[3])
        else:  # L-BFGS-B's accepted point is normally the last one evaluated
            f, g = obj(x)
        if progress(obj.last[0], float(f), float(np.sqrt(dot(g, g)))):
            raise StopIteration

    res = minimize(
        obj,
        theta0,
        jac=True,
        method="L-BFGS-B",
        callback=cb,
        options={"maxiter": max_iter, "maxcor": m, "maxls": max_ls, "ftol": 0.0, "gtol": 0.0, "maxfun": 2**31 - 1},
    )
    return res.x


def pseudo_gradient(x, g, c1):
    """OWL-QN pseudo-gradient of f(x) + c1 |x|_1 (Andrew & Gao, eq. 4)."""
    soft = np.sign(g) * np.maximum(np.abs(g) - c1, 0.0)  # at x == 0: the one-sided slope that descends
    return np.where(x != 0, g + c1 * np.sign(x), soft)


# ---------------------------------------------------------------------------
# strong-Wolfe line search
# ---------------------------------------------------------------------------


def _cubic_min(a, fa, da, b, fb, db):
    """Minimiser of the cubic through (a, fa, da) and (b, fb, db), or None."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    rad = d1 * d1 - da * db
    if not rad >= 0:
        return None
    d2 = np.copysign(np.sqrt(rad), b - a)
    den = db - da + 2.0 * d2
    if den == 0:
        return None
    x = b - (b - a) * (db + d2 - d1) / den
    return x if np.isfinite(x) else None


class _Line:
    """``phi(step) = (f(x + step q), slope)``, remembering the last trial ``(x, f, g)``."""

    def __init__(self, obj, x, q):
        self.obj, self.x, self.q = obj, x, q
        self.last = None

    def __call__(self, step):
        xn = self.x + step * self.q
        fn, gn = self.obj(xn)
        self.last = (xn, fn, gn)
        return fn, dot(gn, self.q)


def _zoom(phi, f0, d0, lo, hi, budget, c1, c2):
    """Shrink the bracket ``lo = (step, f, slope)``, `hi` to a strong-Wolfe step (N&W Alg. 3.6)."""
    (lo, flo, dlo), (hi, fhi, dhi) = lo, hi
    for _ in range(budget):
        step = _cubic_min(lo, flo, dlo, hi, fhi, dhi)
        width = hi - lo
        if step is None or not (min(lo, hi) + 0.1 * abs(width) <= step <= max(lo, hi) - 0.1 * abs(width)):
            step = lo + 0.5 * width
        fs, ds = phi(step)
        if fs > f0 + c1 * step * d0 or fs >= flo:
            hi, fhi, dhi = step, fs, ds
        else:
            if abs(ds) <= -c2 * d0:
                return phi.last
            if ds * (hi - lo) >= 0:
                hi, fhi, dhi = lo, flo, dlo
            lo, flo, dlo = step, fs, ds
    return None


def wolfe_search(obj, x, q, f0, g0, max_ls, c1=1e-4, c2=0.9):
    """Step along `q` meeting the strong Wolfe conditions (Nocedal & Wright, Alg. 3.5-3.6).

    Returns ``(x_new, f_new, g_new)`` or None when no such step was found
    within `max_ls` evaluations.
    """
    d0 = dot(g0, q)
    phi = _Line(obj, x, q)
    prev = (0.0, f0, d0)
    step = 1.0
    for i in range(max_ls):
        fs, ds = phi(step)
        if not np.isfinite(fs):
            return None
        if fs > f0 + c1 * step * d0 or (i > 0 and fs >= prev[1]):
            return _zoom(phi, f0, d0, prev, (step, fs, ds), max_ls - i - 1, c1, c2)
        if abs(ds) <= -c2 * d0:
            return phi.last
        if ds >= 0:
            return _zoom(phi, f0, d0, (step, fs, ds), prev, max_ls - i - 1, c1, c2)
        prev = (step, fs, ds)
        step *= 2.0
    return None


# ---------------------------------------------------------------------------
# L-BFGS / OWL-QN
# ---------------------------------------------------------------------------


class _Memory:
    """The last `m` curvature pairs ``(s, y)`` and the two-loop recursion ``q = -H g``."""

    def __init__(self, m):
        self.m = m
        self.clear()

    def clear(self):
        self.S, self.Y, self.rho = [], [], []

    def push(self, s, yv):
        """Remember a step `s` and gradient change `yv` if they have positive curvature."""
        ys = dot(yv, s)
        if ys > 0:
            self.S.append(s)
            self.Y.append(yv)
            self.rho.append(1.0 / ys)
            if len(self.S) > self.m:
                del self.S[0], self.Y[0], self.rho[0]

    def direction(self, pg):
        """``-H pg`` by the two-loop recursion (Nocedal & Wright, Alg. 7.4)."""
        q = -pg
        alphas = []
        for s, yv, r in zip(reversed(self.S), reversed(self.Y), reversed(self.rho)):
            a = r * dot(s, q)
            alphas.append(a)
            q -= a * yv
        if self.S:
            q *= dot(self.S[-1], self.Y[-1]) / dot(self.Y[-1], self.Y[-1])
        for s, yv, r, a in zip(self.S, self.Y, self.rho, reversed(alphas)):
            q += (a - r * dot(yv, q)) * s
        return q


def _search_direction(memory, pg, l1):
    """Quasi-Newton direction; steepest descent (memory cleared) when it does not descend."""
    q = memory.direction(pg)
    if l1:
        q[q * pg >= 0] = 0.0  # keep only components that descend
    if not dot(pg, q) < 0:  # not a descent direction: restart from steepest descent
        memory.clear()
        q = -pg
    if not memory.S:  # first step has length 1
        q /= np.sqrt(dot(q, q))
    return q


def _backtrack(obj, x, q, F, pg, c1, max_ls):
    """Armijo backtracking on ``f + c1 |x|_1``, each trial projected onto x's orthant when ``c1 > 0``."""
    l1 = c1 > 0
    orthant = np.where(x != 0, np.sign(x), -np.sign(pg)) if l1 else None
    step = 1.0
    for _ in range(max_ls):
        xn = x + step * q
        if l1:
            xn[np.sign(xn) != orthant] = 0.0  # project onto the orthant
        fn, gn = obj(xn)
        Fn = fn + c1 * np.abs(xn).sum() if l1 else fn
        if Fn <= F + 1e-4 * dot(pg, xn - x):
            return xn, fn, gn
        step *= 0.5
    return None


def quasi_newton(obj, x, c1, max_iter, m, max_ls, progress):
    """Minimise ``obj(x) + c1 * ||x||_1``: L-BFGS, or OWL-QN when ``c1 > 0``.

    Without L1 the step satisfies the strong Wolfe conditions; with L1 (or
    after a failed Wolfe search) it comes from orthant-projected Armijo
    backtracking on the pseudo-gradient (Andrew & Gao 2007; liblbfgs does the
    same).

    Parameters
    ----------
    obj : objective (see the module docstring)
    x : ndarray of shape (P,)
        Starting point.
    c1 : float
        L1 coefficient (0: plain L-BFGS).
    max_iter, m, max_ls : int
        Iterations, memory size, trials per line search.
    progress : Progress
        Records iterations and decides when to stop.

    Returns
    -------
    ndarray of shape (P,)
    """
    l1 = c1 > 0
    f, g = obj(x)
    F = f + c1 * np.abs(x).sum() if l1 else f
    pg = pseudo_gradient(x, g, c1) if l1 else g
    memory = _Memory(m)
    if np.sqrt(dot(pg, pg)) / max(1.0, np.sqrt(dot(x, x))) < progress.epsilon:
        return x
    for _ in range(max_iter):
        q = _search_direction(memory, pg, l1)
        found = None if l1 else wolfe_search(obj, x, q, f, g, max_ls)
        if found is None:  # backtracking (always with L1; after a failed Wolfe search otherwise)
            found = _backtrack(obj, x, q, F, pg, c1, max_ls)
        if found is None:
            break
        xn, fn, gn = found
        memory.push(xn - x, gn - g)
        x, f, g = xn, fn, gn
        F = f + c1 * np.abs(x).sum() if l1 else f
        pg = pseudo_gradient(x, g, c1) if l1 else g
        if progress(x, F, np.sqrt(dot(pg, pg))):
            break
    return x
