"""Learning speed and quality on ALARM: causalnet against pgmpy, causal-learn and pyAgrum in one process.

Usage::

    python benchmarks/learning.py            # MLE 10^5 rows; HC, PC, GES, EM on 10^4 rows
    python benchmarks/learning.py --quick    # one repeat, 2*10^3 rows for PC/GES/EM, no causal-learn GES

Prints one line per task: the median CPU time (``time.process_time``, threads
pinned to one) of causalnet and of each peer, the ratio peer / causalnet, and
for structure learning the structural Hamming distance (SHD) of each learned
CPDAG to the true one (a peer's output may hold cycles or bidirected edges:
its SHD is counted on edge marks). Peers run fewer times (they are slow);
medians over the runs made. Peers missing from the environment are skipped.

- MLE: ``cn.fit`` vs pgmpy ``MaximumLikelihoodEstimator`` vs pyAgrum
  ``BNLearner.learnParameters`` (smoothing 1e-9 so unseen parent rows are legal).
- Hill climbing (BIC): vs pgmpy ``HillClimbSearch``; pyAgrum greedy hill climbing (BIC).
- PC (chi2, alpha 0.01): vs pgmpy ``PC`` (held to one process, ``n_jobs=1``:
  its worker processes' CPU time would not be counted) and causal-learn ``pc``
  (stable); pyAgrum MIIC.
- GES: BIC (ours, no peer); BDeu ess 1 vs causal-learn ``ges`` (``local_score_BDeu``).
- EM, two hidden roots (HYPOVOLEMIA, LVFAILURE): the same number of iterations
  (``--em-iters``, default 2) of ours and of pgmpy ``ExpectationMaximization``.

Before a task's line is printed its answers are checked (exit status 1 on a
failure): MLE tables equal pgmpy's to 1e-9 and pyAgrum's to 1e-6 (its 1e-9 smoothing); hill climbing's BIC score at least
each peer's less 1% of it (a greedy search stops at a local optimum, which
may differ between implementations; the scores are printed); PC's and GES's SHD at most
causal-learn's (the same test/score); EM's log-likelihood non-decreasing.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import causalnet as cn  # noqa: E402
from causalnet.graph.equivalence import PDAG, cpdag, structural_hamming_distance  # noqa: E402
from causalnet.learning.scores import score as bic_score  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agreement import require, require_close  # noqa: E402

LATENT = ["HYPOVOLEMIA", "LVFAILURE"]


def timed(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        with warnings.catch_warnings():             # pgmpy warns on every CI test; printing them would slow it
            warnings.simplefilter("ignore")
            t = time.process_time()
            out = fn()
            times.append(time.process_time() - t)
    return statistics.median(times), out


def marks_shd(directed, undirected, true: PDAG) -> int:
    """SHD on edge marks; works for outputs that are not valid PDAGs."""
    marks = {frozenset(e): tuple(e) for e in directed}
    marks.update({frozenset(e): None for e in undirected})
    ref = {frozenset(e): e for e in true.directed_edges}
    ref.update({frozenset(e): None for e in true.undirected_edges})
    return sum(1 for k in set(marks) | set(ref) if marks.get(k, 0) != ref.get(k, 0))


def report(task: str, ours: float, peers: dict, shd: dict | None = None) -> None:
    parts = [f"{task:<36} causalnet {ours:7.3f}s"]
    for name, t in peers.items():
        parts.append(f"{name} {t:8.3f}s ({t / ours:6.1f}x)" if t is not None else f"{name} n/a")
    if shd:
        parts.append("SHD " + ", ".join(f"{k} {v}" for k, v in shd.items()))
    print("  ".join(parts), flush=True)


def _optional(name):
    try:
        return __import__(name, fromlist=["_"])   # optional heavy dependency
    except ImportError:
        return None


def bench_mle(alarm, rep, pe, gum) -> None:
    df = alarm.sample(100_000, seed=0).to_pandas()
    ours, fitted = timed(lambda: cn.fit(alarm.dag, df), rep)
    peers = {}
    if pe is not None:
        net = pe_model(alarm)
        peers["pgmpy"], cpds = timed(lambda: pe.MaximumLikelihoodEstimator(net, df).get_parameters(n_jobs=1), rep)
        require_close("MLE tables, causalnet vs pgmpy", [fitted.mechanisms[c.variable].table for c in cpds],
                      [pgmpy_table(c, fitted) for c in cpds], atol=1e-9)
    if gum is not None:
        bn = agrum_template(gum, alarm, df)
        sdf = df.astype(str)

        def agrum_mle():
            learner = gum.BNLearner(sdf, bn)
            learner.useSmoothingPrior(1e-9)
            return learner.learnParameters(bn.dag())
        peers["pyAgrum"], learned = timed(agrum_mle, rep)
        require_close("MLE tables, causalnet vs pyAgrum (smoothing 1e-9)",
                      [fitted.mechanisms[v].table for v in df.columns],
                      [agrum_table(learned, v, fitted) for v in df.columns], atol=1e-6)
    report("MLE, ALARM, 10^5 rows", ours, peers)


def agrum_table(bn, v, model):
    """pyAgrum's CPT of `v` as causalnet's table (its labels are causalnet's states, in order: agrum_template)."""
    cpt = bn.cpt(v)
    axes = list(reversed(cpt.names))                           # toarray's axes run opposite to .names
    return np.transpose(cpt.toarray(), [axes.index(a) for a in [*model.mechanisms[v].parents, v]])


def pgmpy_table(cpd, model):
    """pgmpy's CPD as causalnet's table: axes (parents in causalnet's order..., node), states in its order."""
    v = cpd.variable
    axes = list(model.mechanisms[v].parents) + [v]
    vals = np.asarray(cpd.get_values(), dtype=float).reshape([cpd.cardinality[i] for i in range(len(cpd.variables))])
    for i, name in enumerate(cpd.variables):                  # reorder each axis by causalnet's states
        order = [list(map(str, cpd.state_names[name])).index(str(x)) for x in model.states(name)]
        vals = np.take(vals, order, axis=i)
    return np.transpose(vals, [cpd.variables.index(a) for a in axes])


def pe_model(alarm, latents=()):
    from pgmpy.models import DiscreteBayesianNetwork  # optional heavy dependency
    return DiscreteBayesianNetwork(list(alarm.dag.edges), latents=set(latents))


def agrum_template(gum, alarm, df):
    bn = gum.BayesNet()
    for c in df.columns:
        bn.add(gum.LabelizedVariable(c, c, [str(s) for s in df[c].cat.categories]))
    for a, b in alarm.dag.edges:
        bn.addArc(a, b)
    return bn


def bench_hill_climb(df, true, rep, pe, gum) -> None:
    ours, g = timed(lambda: cn.learn_structure(df, method="hill_climb", progress=False), rep)
    peers, shd, bic = {}, {"causalnet": structural_hamming_distance(cpdag(g), true)}, {}
    nodes = list(df.columns)
    if pe is not None:
        peers["pgmpy"], pg = timed(lambda: pe.HillClimbSearch(df).estimate(scoring_method="bic-d",
                                                                          show_progress=False), 1)
        shd["pgmpy"] = structural_hamming_distance(cpdag(cn.DAG(list(pg.edges()), nodes=nodes)), true)
        _no_worse_bic("pgmpy", g, cn.DAG(list(pg.edges()), nodes=nodes), df, bic)
    if gum is not None:
        def agrum_hc():
            learner = gum.BNLearner(df.astype(str))
            learner.useGreedyHillClimbing()
            learner.useScoreBIC()
            d = learner.learnDAG()
            return [(learner.nameFromId(a), learner.nameFromId(b)) for a, b in d.arcs()]
        peers["pyAgrum"], arcs = timed(agrum_hc, rep)
        shd["pyAgrum"] = structural_hamming_distance(cpdag(cn.DAG(arcs, nodes=nodes)), true)
        _no_worse_bic("pyAgrum", g, cn.DAG(arcs, nodes=nodes), df, bic)
    report(f"hill climbing BIC, {len(df)} rows", ours, peers, shd)
    if bic:
        print(f"{'':<36} BIC score " + ", ".join(f"{k} {v}" for k, v in bic.items()), flush=True)


#: hill climbing is a greedy local search: two implementations may stop at different local optima, so
#: causalnet's BIC must be within this fraction of the peer's (or above it), not equal to it
HC_BIC_TOL = 1e-2


def _no_worse_bic(peer, ours, theirs, df, bic) -> None:
    a, b = bic_score(ours, df), bic_score(theirs, df)
    require(a >= b - HC_BIC_TOL * abs(b), f"hill climbing: causalnet's BIC {a:.3f} below {peer}'s {b:.3f} by "
            f"more than {HC_BIC_TOL:g} of it")
    bic.setdefault("causalnet", round(a, 1))
    bic[peer] = round(b, 1)


def bench_pc(df, true, rep, pe, clpc, gum) -> None:
    nodes = list(df.columns)
    ours, p = timed(lambda: cn.learn_structure(df, method="pc", alpha=0.01, progress=False), rep)
    peers, shd = {}, {"causalnet": structural_hamming_distance(p, true)}
    if pe is not None:
        peers["pgmpy"], pp = timed(lambda: pe.PC(df).estimate(ci_test="chi_square", significance_level=0.01,
                                                              return_type="pdag", n_jobs=1,
                                                              show_progress=False), 1)
        shd["pgmpy"] = marks_shd(pp.directed_edges, {frozenset(e) for e in pp.undirected_edges}, true)
    if clpc is not None:
        codes = np.column_stack([df[c].cat.codes.to_numpy() for c in nodes])
        peers["causal-learn"], cg = timed(lambda: clpc.pc(codes, 0.01, "chisq", stable=True, show_progress=False),
                                          rep)
        shd["causal-learn"] = marks_shd(*causal_learn_marks(cg.G.graph, nodes), true)
        require(shd["causalnet"] <= shd["causal-learn"],
                f"PC: causalnet's SHD {shd['causalnet']} above causal-learn's {shd['causal-learn']} (same test)")
    if gum is not None:
        def miic():
            learner = gum.BNLearner(df.astype(str))
            learner.useMIIC()
            g = learner.learnPDAG()
            name = learner.nameFromId
            return [(name(a), name(b)) for a, b in g.arcs()], [(name(a), name(b)) for a, b in g.edges()]
        t, (d, u) = timed(miic, rep)
        peers["pyAgrum MIIC"] = t
        shd["pyAgrum MIIC"] = marks_shd(d, u, true)
    report(f"PC chi2 a=0.01, {len(df)} rows", ours, peers, shd)


def causal_learn_marks(g, nodes):
    n = len(nodes)
    d = [(nodes[i], nodes[j]) for i in range(n) for j in range(n) if g[i, j] == -1 and g[j, i] == 1]
    u = [(nodes[i], nodes[j]) for i in range(n) for j in range(i + 1, n) if g[i, j] == g[j, i] != 0]
    return d, u


def bench_ges(df, true, rep, clges) -> None:
    nodes = list(df.columns)
    ours, p = timed(lambda: cn.learn_structure(df, method="ges", progress=False), rep)
    report(f"GES BIC, {len(df)} rows", ours, {}, {"causalnet": structural_hamming_distance(p, true)})
    plain = cn.learn_structure(df, method="ges", score="bdeu", equivalent_sample_size=1.0, progress=False)
    # causal-learn's local_score_BDeu adds a binomial structure prior (1 expected parent): the same score here
    ours, p = timed(lambda: cn.learn_structure(df, method="ges", score="bdeu", equivalent_sample_size=1.0,
                                               structure_prior=1.0, progress=False), rep)
    peers = {}
    shd = {"causalnet": structural_hamming_distance(p, true), "causalnet no prior": structural_hamming_distance(plain, true)}
    if clges is not None:
        codes = np.column_stack([df[c].cat.codes.to_numpy() for c in nodes]).astype(float)
        peers["causal-learn"], r = timed(lambda: clges.ges(codes, score_func="local_score_BDeu"), 1)
        shd["causal-learn"] = marks_shd(*causal_learn_marks(r["G"].graph, nodes), true)
        require(shd["causalnet"] <= shd["causal-learn"],
                f"GES: causalnet's SHD {shd['causalnet']} above causal-learn's {shd['causal-learn']} (same score)")
    report(f"GES BDeu(1) + prior(1), {len(df)} rows", ours, peers, shd)


def bench_em(alarm, n, rep, pe, iters) -> None:
    df = alarm.sample(n, seed=0).to_pandas().drop(columns=LATENT)
    states = {v: 2 for v in LATENT}
    ours, m = timed(lambda: cn.fit(alarm.dag, df, method="em", latent=LATENT, states=states, n_iter=iters, tol=0.0,
                                   seed=0, progress=False), rep)
    ll = np.asarray(m.fit_info.log_likelihood, dtype=float)
    require(bool(np.all(np.diff(ll) >= -1e-9 * np.abs(ll[:-1]))), f"EM: causalnet's log-likelihood decreased: {ll}")
    peers = {}
    if pe is not None:
        net = pe_model(alarm, LATENT)
        peers["pgmpy"], _ = timed(lambda: pe.ExpectationMaximization(net, df).get_parameters(
            latent_card=states, max_iter=iters, atol=0.0, show_progress=False, seed=0), 1)
    report(f"EM 2 hidden, {n} rows, {iters} iterations", ours, peers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--em-iters", type=int, default=2, help="EM iterations, the same for both libraries")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    pe = _optional("pgmpy.estimators")
    gum = _optional("pyagrum")
    clpc = _optional("causallearn.search.ConstraintBased.PC")
    clges = None if args.quick else _optional("causallearn.search.ScoreBased.GES")
    alarm = cn.gallery.load("alarm")
    true = cpdag(alarm.dag)
    rep = 1 if args.quick else 3
    n = 2_000 if args.quick else 10_000
    print(f"load: {os.getloadavg()[0]:.1f} (1-min), CPU times, medians; {len(sys.argv) > 1 and sys.argv[1:] or ''}",
          flush=True)
    bench_mle(alarm, rep, pe, gum)
    df = alarm.sample(n, seed=0).to_pandas()
    bench_hill_climb(df, true, rep, pe, gum)
    bench_pc(df, true, rep, pe, clpc, gum)
    bench_ges(df, true, rep, clges)
    bench_em(alarm, n, rep, pe, args.em_iters)


if __name__ == "__main__":
    main()
