"""AIPW with a bootstrap interval: causalnet's vectorised replicates against refitting with statsmodels.

Usage::

    python benchmarks/estimation.py                    # 10^5 rows, 10 covariates, 1,000 replicates
    python benchmarks/estimation.py --quick            # 10^4 rows, 200 replicates

Workload: a binary treatment logistic in 10 normal covariates, a linear
outcome; the effect of T on Y by AIPW (logistic propensity, arm-wise linear
outcome models) with a percentile bootstrap. causalnet fits all replicates
together (``cn.estimate(..., method="aipw", n_bootstrap=B)``). The peer is the
textbook loop: for each resample, statsmodels ``Logit`` and two ``OLS`` fits,
then the AIPW formula. The loop runs ``--peer-reps`` replicates (all B would
take minutes) on the same resample indices as causalnet's first replicates;
the script checks that the point estimate and those replicates agree to 1e-6
(exit 1 otherwise) before it prints per-replicate times and their ratio.

DoWhy pins scipy below 1.17 and cannot be installed beside this project; with
``--dowhy PYTHON`` (a virtualenv's interpreter that has dowhy) times, in a
subprocess, DoWhy's nearest estimator with a bootstrap interval on the same data:
``backdoor.propensity_score_weighting`` (IPW; DoWhy has no AIPW of its own) with
``confidence_intervals="bootstrap"`` and ``num_simulations=B``, a lighter
workload than AIPW, so the ratio flatters DoWhy. Its estimate is checked against
causalnet's IPW within 0.05 (its propensity model is scikit-learn's
regularised logistic regression, so the two agree statistically, not to 1e-6).

Figures depend on the machine's load: the script prints ``/proc/loadavg``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

import causalnet as cn
from causalnet.estimation.linear import bootstrap_counts


def make_data(n: int, k: int, seed: int = 0) -> tuple[pd.DataFrame, cn.DAG]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    t = (rng.random(n) < 1 / (1 + np.exp(-(z @ np.linspace(0.3, -0.3, k))))).astype(int)
    y = 2.0 * t + z @ np.linspace(1.0, 2.0, k) + rng.normal(size=n)
    names = [f"Z{i}" for i in range(k)]
    frame = pd.DataFrame(z, columns=names).assign(T=t, Y=y)
    graph = cn.DAG([(v, "T") for v in names] + [(v, "Y") for v in names] + [("T", "Y")])
    return frame, graph


def aipw_statsmodels(frame: pd.DataFrame, covs: list, w: np.ndarray | None = None) -> float:
    import statsmodels.api as sm

    x = sm.add_constant(frame[covs].to_numpy(), has_constant="add")
    t, y = frame["T"].to_numpy(), frame["Y"].to_numpy()
    w = np.ones(len(y)) if w is None else w
    p = sm.GLM(t, x, family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-12).predict(x)
    mu1 = sm.WLS(y[t == 1], x[t == 1], weights=w[t == 1]).fit().predict(x)
    mu0 = sm.WLS(y[t == 0], x[t == 0], weights=w[t == 0]).fit().predict(x)
    s = mu1 - mu0 + t / p * (y - mu1) - (1 - t) / (1 - p) * (y - mu0)
    return float(w @ s / w.sum())


DOWHY_SCRIPT = """
import sys, time, numpy as np, pandas as pd, dowhy
frame = pd.read_csv(sys.argv[1]); B = int(sys.argv[2])
covs = [c for c in frame.columns if c.startswith("Z")]
frame["T"] = frame["T"].astype(bool)
t0 = time.perf_counter()
m = dowhy.CausalModel(data=frame, treatment="T", outcome="Y", common_causes=covs)
est = m.estimate_effect(m.identify_effect(), method_name="backdoor.propensity_score_weighting",
                        confidence_intervals="bootstrap", method_params={"num_simulations": B})
ci = est.get_confidence_intervals()
print(time.perf_counter() - t0, est.value)
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--covariates", type=int, default=10)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--peer-reps", type=int, default=20)
    ap.add_argument("--dowhy", default=None, help="python interpreter of a virtualenv with dowhy")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.bootstrap, args.peer_reps = 10_000, 200, 10
    frame, graph = make_data(args.rows, args.covariates)
    covs = [c for c in frame.columns if c.startswith("Z")]
    print(f"load average: {open('/proc/loadavg').read().split()[:3]} on {os.cpu_count()} cores; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print(f"workload: AIPW, {args.rows} rows x {args.covariates} covariates, {args.bootstrap} bootstrap replicates")

    wall0, cpu0 = time.perf_counter(), time.process_time()
    e = cn.estimate(graph, frame, "T", "Y", method="aipw", n_bootstrap=args.bootstrap, seed=0)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0

    point = aipw_statsmodels(frame, covs)
    counts = bootstrap_counts(args.rows, args.peer_reps, np.random.default_rng(0))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    peer = [aipw_statsmodels(frame, covs, counts[b]) for b in range(args.peer_reps)]
    peer_wall, peer_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if abs(point - e.value) > 1e-6 or np.max(np.abs(np.array(peer) - e.replicates[:args.peer_reps])) > 1e-6:
        print(f"DISAGREE: causalnet {e.value!r} vs statsmodels {point!r}; replicates differ by "
              f"{np.max(np.abs(np.array(peer) - e.replicates[:args.peer_reps])):.3g}", file=sys.stderr)
        return 1
    print(f"answers agree: effect {e.value:.6f}, first {args.peer_reps} replicates equal to 1e-6; "
          f"CI {e.ci[0]:.4f} .. {e.ci[1]:.4f}")
    per_cn, per_peer = wall / args.bootstrap, peer_wall / args.peer_reps
    print(f"causalnet  estimate + {args.bootstrap} replicates: {wall:.2f} s wall, {cpu:.2f} s CPU "
          f"({1e3 * per_cn:.2f} ms wall per replicate)")
    print(f"statsmodels loop, {args.peer_reps} replicates: {peer_wall:.2f} s wall, {peer_cpu:.2f} s CPU "
          f"({1e3 * per_peer:.2f} ms wall per replicate)")
    print(f"ratio per replicate (statsmodels / causalnet): {per_peer / per_cn:.1f}x wall, "
          f"{(peer_cpu / args.peer_reps) / (cpu / args.bootstrap):.1f}x CPU")
    if args.dowhy:
        path = "/tmp/causalnet_estimation_bench.csv"
        frame.to_csv(path, index=False, float_format="%.17g")
        out = subprocess.run([args.dowhy, "-c", DOWHY_SCRIPT, path, str(args.bootstrap)], capture_output=True,
                             text=True, check=False)
        if out.returncode:
            print(f"DoWhy failed: {out.stderr.strip()[-500:]}", file=sys.stderr)
            return 1
        dw_time, dw_value = map(float, out.stdout.split()[-2:])
        ipw = cn.estimate(graph, frame, "T", "Y", method="ipw", ci="analytic").value
        if abs(dw_value - ipw) > 0.05:
            print(f"DISAGREE: DoWhy IPW {dw_value} vs causalnet IPW {ipw}", file=sys.stderr)
            return 1
        print(f"DoWhy IPW + {args.bootstrap} bootstrap replicates (separate interpreter): {dw_time:.2f} s wall; "
              f"estimate {dw_value:.4f} vs causalnet IPW {ipw:.4f}; DoWhy / causalnet AIPW wall: {dw_time / wall:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
