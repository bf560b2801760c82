"""The families' chain engines against the generic engines, on the same requests, one process.

Same unrolled models, same validated requests for both: the HMM chain engine
(forward-backward) against variable elimination on the unrolled HMM, the HMM
twin chain against the discrete twin network, and the CRF chain engine against
variable elimination on the CRF's factor network. The generic side is the
query registry without the chain engine (``Registry`` of the other engines),
so both answer through the same front door. Before timing, the answers are
checked to agree (exit 1 on disagreement, before any ratio is printed). Times
are CPU seconds (``time.process_time``), median of the repeats, in two
settings: *cold*, the first question asked of a freshly built model (what a
new model or a new sequence length costs: the generic engine plans and
compiles then), and *warm*, the same request again (the generic engine reuses
its cached plan). Ratios are generic / chain (> 1: the chain engine is faster). Also printed: ``HMM.query`` end to
end (unrolled model cached, request validation included).

Run from the repository root (``PYTHONPATH=.`` so that this checkout's
causalnet is imported, not another installed one; the script checks which
engine answered and exits 1 if it is not the one it times)::

    PYTHONPATH=. python benchmarks/chain_engines.py            # T = 10, 50, 200; 5 repeats
    PYTHONPATH=. python benchmarks/chain_engines.py --quick    # T = 10, 30; 3 repeats
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402  (after the thread settings)
from agreement import require, require_close  # noqa: E402  (benchmarks/ is the script's directory)

import causalnet as cn  # noqa: E402
from causalnet.inference.dispatch import COUNTERFACTUAL_ENGINES, QUERY_ENGINES  # noqa: E402
from causalnet.inference.engine import Registry  # noqa: E402
from causalnet.inference.request import counterfactual_request, query_request  # noqa: E402


def _median_time(fn, repeats):
    fn()                                                   # warm-up: plans, caches
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def _cold_time(make_request, registry, repeats):
    """Median CPU time of the first answer on a fresh model (building the model and request untimed)."""
    times = []
    for _ in range(repeats):
        r = make_request()
        t0 = time.process_time()
        registry.answer(r)
        times.append(time.process_time() - t0)
    return statistics.median(times)


def _without(registry, name, what):
    return Registry([e for e in registry if e.name != name], what=what)


def _agree(a, b, what):
    require_close(what, a, b, atol=1e-10)


def _engines_ran(pairs):
    """Exit 1 unless each answer came from the engine it is timed as (e.g. an older causalnet on sys.path)."""
    for res, name in pairs:
        require(name in res.method, f"wrong engine: expected {name!r}, got {res.method!r} "
                                    f"(causalnet from {cn.__file__})")


def _hmm_rows(T, repeats, rng):
    K, S = 3, 4
    h = cn.HMM(K, "categorical", startprob=rng.dirichlet(np.ones(K)), transmat=rng.dirichlet(np.ones(K), size=K),
               emissionprob=rng.dirichlet(np.ones(S), size=K))
    X = rng.integers(0, S, size=T)
    m = h.to_model(T)
    ev = {f"X[{t}]": int(x) for t, x in enumerate(X)}
    target, do = f"Z[{T // 2}]", {f"Z[{T // 4}]": 1}
    generic_q = _without(QUERY_ENGINES, "HMM chain", "query")
    generic_c = _without(COUNTERFACTUAL_ENGINES, "HMM twin chain", "counterfactual")
    rq, rc = query_request(m, target, ev, do), counterfactual_request(m, f"X[{T - 1}]", ev, do)
    a, b = QUERY_ENGINES.answer(rq), generic_q.answer(rq)
    _agree(a.probs, b.probs, f"HMM query T={T}")
    c, d = COUNTERFACTUAL_ENGINES.answer(rc), generic_c.answer(rc)
    _agree(c.probs, d.probs, f"HMM counterfactual T={T}")
    _engines_ran([(a, "HMM chain"), (c, "twin chain"), (b, "variable elimination"), (d, "twin network")])
    rows = []
    for what, fast, slow in (("HMM query", lambda: QUERY_ENGINES.answer(rq), lambda: generic_q.answer(rq)),
                             ("HMM counterfactual", lambda: COUNTERFACTUAL_ENGINES.answer(rc),
                              lambda: generic_c.answer(rc))):
        rows.append((what + " warm", T, _median_time(fast, repeats), _median_time(slow, repeats)))

    def fresh_q():
        return query_request(h.to_model(T), target, ev, do)

    def fresh_c():
        return counterfactual_request(h.to_model(T), f"X[{T - 1}]", ev, do)

    rows.append(("HMM query cold", T, _cold_time(fresh_q, QUERY_ENGINES, repeats),
                 _cold_time(fresh_q, generic_q, repeats)))
    rows.append(("HMM counterf. cold", T, _cold_time(fresh_c, COUNTERFACTUAL_ENGINES, repeats),
                 _cold_time(fresh_c, generic_c, repeats)))
    end_to_end = _median_time(lambda: h.query(target, evidence=X, do=do), repeats)
    return rows, end_to_end


def _crf_rows(T, repeats, rng):
    K = 4
    crf = cn.CRF.from_weights(rng.normal(size=(3, K)), rng.normal(size=(K, K)), [f"L{k}" for k in range(K)])
    x = rng.normal(size=(T, 3))
    m = crf.to_model(X=x)
    ev = cn.crf.factor_evidence(m)
    r = query_request(m, f"y[{T // 2}]", ev)
    generic = _without(QUERY_ENGINES, "CRF chain", "query")
    a, b = QUERY_ENGINES.answer(r), generic.answer(r)
    _agree(a.probs, b.probs, f"CRF query T={T}")
    _engines_ran([(a, "CRF chain"), (b, "variable elimination")])

    def fresh():
        return query_request(crf.to_model(X=x), f"y[{T // 2}]", ev)

    return [("CRF query warm", T, _median_time(lambda: QUERY_ENGINES.answer(r), repeats),
             _median_time(lambda: generic.answer(r), repeats)),
            ("CRF query cold", T, _cold_time(fresh, QUERY_ENGINES, repeats), _cold_time(fresh, generic, repeats))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    steps, repeats = ((10, 30), 3) if args.quick else ((10, 50, 200), 5)
    rng = np.random.default_rng(0)
    rows, ends = [], []
    for T in steps:
        r, e = _hmm_rows(T, repeats, rng)
        rows += r + _crf_rows(T, repeats, rng)
        ends.append((T, e))
    print("answers agree (chain engine vs generic engine, atol 1e-10)")
    print(f"{'question':<22} {'T':>5} {'chain s':>10} {'generic s':>10} {'generic/chain':>14}")
    for what, T, fast, slow in rows:
        print(f"{what:<22} {T:>5} {fast:>10.5f} {slow:>10.5f} {slow / fast:>14.1f}")
    for T, e in ends:
        print(f"HMM.query end to end, T={T}: {e:.5f} s")


if __name__ == "__main__":
    main()
