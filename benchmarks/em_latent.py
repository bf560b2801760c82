"""EM with latent nodes on ALARM: causalnet vs pgmpy's ExpectationMaximization, same data, same iterations.

Two internal nodes of ALARM are hidden (no column); both libraries run a fixed
number of EM iterations from their own starts on the same 10^4 sampled rows.
Prints CPU-time medians and the ratio (pgmpy / causalnet), and causalnet's
log-likelihood trace, checked non-decreasing before any figure is printed (exit
status 1 otherwise; the two libraries start from different random tables, so
their fits are not compared value by value).

    PYTHONPATH=. python benchmarks/em_latent.py [--rows 10000] [--iters 5] [--reps 3]
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from agreement import require  # noqa: E402

import causalnet as cn  # noqa: E402

HIDDEN = ["LVFAILURE", "INTUBATION"]


def _causalnet(alarm, rows, iters):
    st = {h: alarm.states(h) for h in HIDDEN}
    t = time.process_time()
    m = cn.fit(alarm.dag, rows, method="em", latent=HIDDEN, states=st, n_iter=iters, tol=0, seed=0, progress=False)
    return time.process_time() - t, m.fit_info.log_likelihood


def _pgmpy(alarm, rows, iters):
    from pgmpy.estimators import ExpectationMaximization
    from pgmpy.models import DiscreteBayesianNetwork

    net = DiscreteBayesianNetwork(list(alarm.dag.edges), latents=set(HIDDEN))
    data = rows.astype(str)
    t = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ExpectationMaximization(net, data).get_parameters(latent_card={h: len(alarm.states(h)) for h in HIDDEN},
                                                          max_iter=iters, atol=0.0, show_progress=False, seed=0)
    return time.process_time() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pgmpy-reps", type=int, default=1)
    a = ap.parse_args()
    alarm = cn.gallery.load("alarm")
    rows = alarm.sample(a.rows, seed=0).to_pandas().drop(columns=HIDDEN)
    ours = [_causalnet(alarm, rows, a.iters) for _ in range(a.reps)]
    ll = ours[0][1]
    t_cn = statistics.median(t for t, _ in ours)
    ll = np.asarray(ll, dtype=float)
    require(len(ll) >= 1 and bool(np.all(np.diff(ll) >= -1e-9 * np.abs(ll[:-1]))),
            f"causalnet's EM log-likelihood decreased: {ll}")
    t_pg = statistics.median(_pgmpy(alarm, rows, a.iters) for _ in range(a.pgmpy_reps))
    print(f"ALARM, {a.rows} rows, hidden {HIDDEN}, {a.iters} EM iterations (CPU seconds, medians)")
    print(f"  causalnet {t_cn:.2f} s   pgmpy {t_pg:.2f} s   ratio pgmpy/causalnet {t_pg / t_cn:.1f}x")
    print(f"  causalnet log-likelihood non-decreasing (checked): last {ll[-1]:.2f}")


if __name__ == "__main__":
    main()
