"""causalnet.HMM vs hmmlearn (CategoricalHMM, implementation="scaling"), one process.

Same data and parameters for both: K hidden states, 32 symbols, 200 sequences
of 500 steps sampled from a random HMM (Dirichlet(1) rows). Times score,
decode (Viterbi), predict_proba and 10 Baum-Welch iterations (tol=-inf so both
run all 10), interleaving the two libraries and taking the median of a few
repeats; prints the ratio hmmlearn / causalnet (> 1 means causalnet is faster).
Before timing, it checks that both give the same answers.

Both run on one thread (the BLAS/OpenMP thread counts are set to 1 before
numpy loads, unless already set). Times are CPU seconds of this process
(``time.process_time``) by default, which on a busy shared machine measure
the work each library does rather than the scheduler; ``--clock wall`` uses
``time.perf_counter`` instead. The first causalnet call compiles the numba
kernels (once per process); the agreement checks run before timing, so timings
never include compilation.

Run::

    python benchmarks/hmm.py            # K = 16 and 64, 5 repeats
    python benchmarks/hmm.py --quick    # smaller data, 3 repeats
    python benchmarks/hmm.py --sequences 1 --steps 100000 --states 16   # one long sequence
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
from agreement import require, require_close  # noqa: E402

_CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def _sample_data(rng, K, S, n, T):
    start = rng.dirichlet(np.ones(K))
    trans = rng.dirichlet(np.ones(K), size=K)
    emis = rng.dirichlet(np.ones(S), size=K)
    X = np.empty((n, T), dtype=np.int64)
    z = np.array([rng.choice(K, p=start) for _ in range(n)])
    tcdf = np.cumsum(trans, axis=1)
    ecdf = np.cumsum(emis, axis=1)
    for t in range(T):
        X[:, t] = np.minimum((ecdf[z] < rng.random((n, 1))).sum(1), S - 1)
        z = np.minimum((tcdf[z] < rng.random((n, 1))).sum(1), K - 1)
    return X.reshape(-1), np.full(n, T), (start, trans, emis)


def _median_times(fns, repeats, clock=time.process_time):
    """Run the functions round-robin ``repeats`` times; median seconds of each."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, f in enumerate(fns):
            t0 = clock()
            f()
            times[i].append(clock() - t0)
    return [float(np.median(t)) for t in times]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="60 sequences x 200 steps, 3 repeats")
    ap.add_argument("--states", type=int, nargs="*", default=[16, 64])
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--sequences", type=int, default=None, help="number of sequences (default 200)")
    ap.add_argument("--steps", type=int, default=None, help="steps per sequence (default 500)")
    ap.add_argument("--clock", choices=sorted(_CLOCKS), default="cpu", help="cpu (process time, default) or wall")
    args = ap.parse_args(argv)

    n, T, S = (60, 200, 32) if args.quick else (200, 500, 32)
    n, T = args.sequences or n, args.steps or T
    repeats = args.repeats or (3 if args.quick else 5)
    rng = np.random.default_rng(0)
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min)")
    print(f"{n} sequences x {T} steps, {S} symbols, median of {repeats} ({args.clock} time); "
          f"ratio = hmmlearn / causalnet")
    print(f"{'K':>3} {'operation':<14} {'hmmlearn s':>11} {'causalnet s':>12} {'ratio':>7}")
    for K in args.states:
        for name, t_h, t_c in _bench(rng, K, S, n, T, repeats, _CLOCKS[args.clock]):
            print(f"{K:>3} {name:<14} {t_h:>11.4f} {t_c:>12.4f} {t_h / t_c:>7.2f}", flush=True)


def _bench(rng, K, S, n, T, repeats, clock):
    """Check agreement, then time each operation; yields (name, hmmlearn s, causalnet s)."""
    from hmmlearn import hmm as hl

    from causalnet.models.hmm import HMM

    X, lengths, (start, trans, emis) = _sample_data(rng, K, S, n, T)
    X2 = X[:, None]

    def theirs(n_iter=10):
        m = hl.CategoricalHMM(
            n_components=K, n_features=S, implementation="scaling",
            init_params="", params="ste", n_iter=n_iter, tol=-np.inf,
        )
        m.startprob_, m.transmat_, m.emissionprob_ = start.copy(), trans.copy(), emis.copy()
        return m

    def ours(n_iter=10):
        return HMM(K, "categorical", n_symbols=S, startprob=start, transmat=trans,
                   emissionprob=emis, n_iter=n_iter, tol=-np.inf)

    h, c = theirs(), ours()
    # same answers first; a disagreement exits with status 1 before any time is printed
    require_close(f"K={K} score", c.score(X, lengths), h.score(X2, lengths), atol=0, rtol=1e-10)
    require_close(f"K={K} predict_proba", c.predict_proba(X, lengths), h.predict_proba(X2, lengths), atol=1e-10)
    lp_h, z_h = h.decode(X2, lengths)
    lp_c, z_c = c.decode(X, lengths)
    require_close(f"K={K} decode log-probability", lp_c, lp_h, atol=0, rtol=1e-10)
    require((z_h == z_c).mean() > 0.99, f"K={K} decode: paths agree on {(z_h == z_c).mean():.4f} of steps "
            "(exact ties may differ; at least 0.99 required)")
    hf, cf = theirs(3).fit(X2, lengths), ours(3).fit(X, lengths)
    require_close(f"K={K} fit (3 iterations) transmat", cf.transmat_, hf.transmat_, atol=1e-9)
    require_close(f"K={K} fit (3 iterations) emissionprob", cf.emissionprob_, hf.emissionprob_, atol=1e-9)

    ops = [
        ("score", lambda: h.score(X2, lengths), lambda: c.score(X, lengths)),
        ("decode", lambda: h.decode(X2, lengths), lambda: c.decode(X, lengths)),
        ("predict_proba", lambda: h.predict_proba(X2, lengths), lambda: c.predict_proba(X, lengths)),
        ("fit 10 iter", lambda: theirs().fit(X2, lengths), lambda: ours().fit(X, lengths)),
    ]
    for name, f_h, f_c in ops:
        t_h, t_c = _median_times([f_h, f_c], repeats, clock)
        yield name, t_h, t_c


if __name__ == "__main__":
    main()
