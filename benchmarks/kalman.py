"""Kalman smoothing: causalnet.StateSpace vs statsmodels (compiled) and filterpy, one process.

Same model and data for all three: a random stable state-space model with
state dimension d = 4 and p = 2 observations, correlated noises, one sequence
of T = 100,000 steps sampled from it. Each library filters and smooths
(Rauch–Tung–Striebel) and returns smoothed means and covariances:

* causalnet: ``StateSpace.smooth(y)`` (the numba sweeps, Joseph-form update);
* statsmodels: ``MLEModel(...).ssm.smooth()`` with the smoother asked for the
  state and its covariance only (its Cython/BLAS Kalman smoother);
* filterpy: ``KalmanFilter.batch_filter`` then ``rts_smoother`` (numpy per step).

filterpy predicts before each update, so its initial law is set one step
back and causalnet's and statsmodels' initial law is its one-step prediction
(``A x0``, ``A P0 A^T + Q``): the three then solve the same problem. Models
are built outside the timings (the same for all). Before timing, the smoothed
means and covariances and the log-likelihoods are checked to agree (exit
status 1 on disagreement, before any ratio is printed); the numba kernels are
compiled then, so timings never include compilation.

Everything runs on one thread (BLAS/OpenMP thread counts set to 1 before
numpy loads unless already set). Times are CPU seconds of this process
(``time.process_time``; ``--clock wall`` for wall time), medians of a few
round-robin repeats; ratios are the other library's time / causalnet's
(> 1: causalnet faster).

Run::

    python benchmarks/kalman.py                 # T = 100,000, 3 repeats
    python benchmarks/kalman.py --quick         # T = 10,000
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402  (after the thread settings)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's causalnet
from agreement import require_close  # noqa: E402

_CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def _model(rng, d, p):
    A = rng.normal(size=(d, d))
    A *= 0.95 / np.abs(np.linalg.eigvals(A)).max()
    G, F, S = rng.normal(size=(d, d)), rng.normal(size=(p, p)), rng.normal(size=(d, d))
    return (A, rng.normal(size=(p, d)), 0.3 * G @ G.T + 0.05 * np.eye(d), 0.3 * F @ F.T + 0.2 * np.eye(p),
            rng.normal(size=d), S @ S.T + 0.5 * np.eye(d))


def _median_times(fns, repeats, clock):
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = clock()
            fn()
            times[k].append(clock() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="T = 10,000")
    parser.add_argument("--clock", choices=sorted(_CLOCKS), default="cpu")
    args = parser.parse_args(argv)
    T = 10_000 if args.quick else args.steps
    d, p = 4, 2
    clock = _CLOCKS[args.clock]

    from filterpy.kalman import KalmanFilter
    from statsmodels.tsa.statespace.kalman_smoother import SMOOTHER_STATE, SMOOTHER_STATE_COV
    from statsmodels.tsa.statespace.mlemodel import MLEModel

    import causalnet as cn

    rng = np.random.default_rng(0)
    A, H, Q, R, x0, P0 = _model(rng, d, p)
    m0, C0 = A @ x0, A @ P0 @ A.T + Q                       # filterpy predicts first: its step-0 prior
    ss = cn.StateSpace(A, H, Q, R, m0, C0)
    _, y = ss.sample(T, seed=1)

    mod = MLEModel(y, k_states=d, k_posdef=d, initialization="known", initial_state=m0, initial_state_cov=C0)
    mod["design"], mod["obs_cov"], mod["transition"], mod["selection"], mod["state_cov"] = H, R, A, np.eye(d), Q
    mod.ssm.smoother_output = SMOOTHER_STATE | SMOOTHER_STATE_COV
    kf = KalmanFilter(dim_x=d, dim_z=p)
    kf.F, kf.H, kf.Q, kf.R = A, H, Q, R

    def ours():
        return ss.smooth(y, backend="numba")

    def statsmodels():
        return mod.ssm.smooth()

    def filterpy():
        kf.x, kf.P = x0.copy(), P0.copy()
        mu, cov, _, _ = kf.batch_filter(y)
        xs, ps, _, _ = kf.rts_smoother(mu, cov)
        return xs, ps

    # same answers first (this also compiles the numba kernels)
    c = ours()
    s = statsmodels()
    f_means, f_covs = filterpy()
    require_close("smoothed means vs statsmodels", c.mean, s.smoothed_state.T, atol=1e-8)
    require_close("smoothed covariances vs statsmodels", c.cov, s.smoothed_state_cov.transpose(2, 0, 1), atol=1e-8)
    require_close("log-likelihood vs statsmodels", c.log_likelihood, s.llf, atol=1e-6, rtol=1e-10)
    require_close("smoothed means vs filterpy", c.mean, f_means, atol=1e-8)
    require_close("smoothed covariances vs filterpy", c.cov, f_covs, atol=1e-8)

    times = _median_times({"causalnet": ours, "statsmodels": statsmodels, "filterpy": filterpy}, args.repeats, clock)
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    print(f"Kalman filter + RTS smoother, d = {d}, p = {p}, T = {T:,}; median of {args.repeats} ({args.clock} time)")
    print(f"{'library':<12} {'seconds':>9} {'ratio (theirs / causalnet)':>28}")
    for name in ("causalnet", "statsmodels", "filterpy"):
        ratio = times[name] / times["causalnet"]
        print(f"{name:<12} {times[name]:>9.4f} {ratio:>28.2f}")


if __name__ == "__main__":
    main()
