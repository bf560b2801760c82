"""Fitting a conditional Gaussian (mixed) network's parameters: causalnet against pgmpy, in one process.

Usage::

    python benchmarks/mixed_learning.py             # waste-incinerator and a random 40-node CG network, 10^5 rows
    python benchmarks/mixed_learning.py --rows 20000 --repeat 1

pgmpy (1.1) has no estimator for conditional linear-Gaussian nodes, so its
side is what a pgmpy user writes for the same parameters: the CPTs of the
discrete nodes by ``MaximumLikelihoodEstimator`` on the discrete sub-network,
and every real node by ``LinearGaussianMLE(std_estimator="mle")`` (the same ML
variance as ours) on each group of rows of ``df.groupby(discrete parents)``
(the whole frame when it has none). causalnet's side is ``cn.fit(dag, df)``.

Both sides get the same pandas DataFrame (categoricals for the discrete
columns); CPU time by ``time.process_time`` with BLAS held to one thread,
median of ``--repeat`` runs. causalnet is timed twice: with the numpy moment
sums (``runtime.backend("learning", "numpy")``: what one fit in a fresh
process runs under the default ``"auto"`` backend) and with the compiled ones
(``"numba"``; what ``"auto"`` switches to after a second of numpy sums). The
compiled kernels are loaded before the clock, as pgmpy is imported before it;
that one-time load (numba's import plus the cached kernels) is printed apart.
Before a ratio is printed every CPT entry of both fits must agree to 1e-9 and
every intercept, weight and variance to 1e-9 relative (exit status 1
otherwise).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import causalnet as cn  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agreement import require_close  # noqa: E402


def random_cg(n_disc: int = 20, n_real: int = 20, seed: int = 0) -> cn.CausalModel:
    """A random CG network: discrete nodes (2-3 states, <= 2 discrete parents), real nodes (<= 2 discrete and
    <= 2 real parents)."""
    rng = np.random.default_rng(seed)
    mechs, disc, real = {}, [], []
    for i in range(n_disc):
        v, card = f"D{i}", int(rng.integers(2, 4))
        ps = [str(p) for p in rng.choice(disc, size=min(len(disc), int(rng.integers(0, 3))), replace=False)]
        shape = tuple(len(mechs[p].states) for p in ps)
        table = rng.dirichlet(np.ones(card) * 2, size=shape)
        states = [f"s{k}" for k in range(card)]
        mechs[v] = cn.CPT(ps, table, states=states) if ps else cn.Categorical(table, states=states)
        disc.append(v)
    for i in range(n_real):
        v = f"X{i}"
        dp = [str(p) for p in rng.choice(disc, size=int(rng.integers(0, 3)), replace=False)]
        rp = [str(p) for p in rng.choice(real, size=min(len(real), int(rng.integers(0, 3))), replace=False)]
        cards = tuple(len(mechs[p].states) for p in dp)
        mechs[v] = cn.ConditionalLinearGaussian([*dp, *rp], rng.normal(0, 2, cards),
                                                rng.uniform(-0.8, 0.8, (*cards, len(rp))),
                                                rng.uniform(0.2, 1.5, cards))
        real.append(v)
    return cn.CausalModel(mechs)


def pgmpy_fit(model, df) -> dict:
    """``{node: TabularCPD}`` for discrete nodes, ``{node: (discrete parents, {their states: (intercept,
    {real parent: weight}, variance)})}`` for real ones."""
    from pgmpy.estimators import MaximumLikelihoodEstimator
    from pgmpy.models import DiscreteBayesianNetwork, LinearGaussianBayesianNetwork
    from pgmpy.parameter_estimator import LinearGaussianMLE

    disc = [v for v in model.nodes if model.spec(v).is_discrete]
    out = {}
    dbn = DiscreteBayesianNetwork([(p, v) for v in disc for p in model.mechanisms[v].parents])
    dbn.add_nodes_from(disc)
    mle = MaximumLikelihoodEstimator(dbn, df[disc])
    for v in disc:
        out[v] = mle.estimate_cpd(v)
    for v in model.nodes:
        if v in disc:
            continue
        mech = model.mechanisms[v]
        dp = [p for p in mech.parents if p in disc]
        rp = [p for p in mech.parents if p not in disc]
        groups = df.groupby(dp, observed=True) if dp else [((), df)]
        fits = {}
        for key, part in groups:
            lg = LinearGaussianBayesianNetwork([(p, v) for p in rp])
            lg.add_node(v)
            est = LinearGaussianMLE(std_estimator="mle").fit(lg, part[[*rp, v]])
            cpd = next(c for c in est.parameters_ if c.variable == v)
            beta = np.asarray(cpd.beta, dtype=float)
            ev = list(getattr(cpd, "evidence", []) or [])
            w = {p: beta[1 + ev.index(p)] for p in rp}
            fits[key if isinstance(key, tuple) else (key,)] = (beta[0], w, float(cpd.std) ** 2)
        out[v] = (dp, fits)
    return out


def check(model, ours, ref, df) -> None:
    """Every CPT to 1e-9 and every CG parameter to 1e-9 relative; exit 1 otherwise."""
    for v in model.nodes:
        mech = ours.mechanisms[v]
        if model.spec(v).is_discrete:
            cpd = ref[v]
            ps = list(mech.parents)
            table = np.moveaxis(cpd.values, 0, -1)                         # (*pgmpy parents, card)
            order = [list(cpd.variables[1:]).index(p) for p in ps]
            table = table.transpose([*order, len(ps)])
            for ax, u in enumerate([*ps, v]):
                table = np.take(table, [cpd.state_names[u].index(s) for s in ours.states(u)], axis=ax)
            require_close(f"CPT of {v}", mech.table, table, atol=1e-9)
            continue
        if isinstance(mech, cn.LinearGaussian):
            b, w, var = ref[v][1][()]
            require_close(f"{v} intercept", mech.bias, b, atol=1e-9, rtol=1e-9)
            require_close(f"{v} weights", np.asarray(mech.weights), [w[p] for p in mech.parents], atol=1e-9,
                          rtol=1e-9)
            require_close(f"{v} variance", mech.sigma ** 2, var, atol=0, rtol=1e-9)
            continue
        dp, fits = ref[v]
        for key, (b, w, var) in fits.items():
            named = dict(zip(dp, key))
            idx = tuple(ours.states(d).index(named[d]) for d in mech.discrete_parents)
            require_close(f"{v} intercept at {key}", mech.intercept[idx], b, atol=1e-9, rtol=1e-9)
            require_close(f"{v} weights at {key}", mech.weights[idx], [w[p] for p in mech.real_parents], atol=1e-9,
                          rtol=1e-9)
            require_close(f"{v} variance at {key}", mech.variance[idx], var, atol=0, rtol=1e-9)


def timed(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.process_time()
            out = fn()
            times.append(time.process_time() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with open("/proc/loadavg") if os.path.exists("/proc/loadavg") else open(os.devnull) as fh:
        print(f"load average: {fh.read().strip() or 'n/a'}")
    import pgmpy.estimators  # noqa: F401  (imported before the clock: the timed call pays no import)
    import pgmpy.models  # noqa: F401
    import pgmpy.parameter_estimator  # noqa: F401

    from causalnet import runtime

    nets = {"waste-incinerator": cn.gallery.load("waste-incinerator"), "random CG 20+20": random_cg()}
    with runtime.backend("learning", "numba"):
        t = time.perf_counter()
        cn.fit(nets["waste-incinerator"].dag, nets["waste-incinerator"].sample(100, seed=0).to_pandas())
        print(f"compiled kernels loaded (numba import + cached kernels, once per process): "
              f"{time.perf_counter() - t:.2f}s wall")
    for name, model in nets.items():
        df = model.sample(args.rows, seed=1).to_pandas()
        with runtime.backend("learning", "numpy"):
            t_np, ours_np = timed(lambda m=model, d=df: cn.fit(m.dag, d), args.repeat)
        with runtime.backend("learning", "numba"):
            t_nb, ours_nb = timed(lambda m=model, d=df: cn.fit(m.dag, d), args.repeat)
        t_pg, ref = timed(lambda m=model, d=df: pgmpy_fit(m, d), max(1, args.repeat // 2))
        check(model, ours_np, ref, df)
        check(model, ours_nb, ref, df)
        print(f"{name:<18} {args.rows} rows  causalnet numpy {t_np * 1e3:7.1f} ms  compiled {t_nb * 1e3:7.1f} ms  "
              f"pgmpy {t_pg * 1e3:7.1f} ms  ratio numpy {t_pg / t_np:5.1f}x  compiled {t_pg / t_nb:5.1f}x  "
              f"(answers agree to 1e-9)")


if __name__ == "__main__":
    main()
