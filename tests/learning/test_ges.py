"""GES: recovery of CPDAGs at large n (discrete BIC, Gaussian bic-g), optimality against causal-learn, constraints."""

import numpy as np
import pytest
from conftest import guarded

import causalnet as cn
from causalnet.graph.equivalence import PDAG, cpdag
from causalnet.learning.data import as_table
from causalnet.learning.ges import GES
from causalnet.learning.scores import make_score

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


@pytest.mark.parametrize("name,n", [("cancer", 20_000), ("asia", 50_000), ("survey", 20_000), ("sachs", 20_000)])
def test_ges_recovers_the_cpdag_of_small_networks(name, n):
    m = cn.gallery.load(name)
    df = m.sample(n, seed=0).to_pandas()
    p = cn.learn_structure(df, method="ges", progress=False)
    assert isinstance(p, PDAG)
    assert p == cpdag(m.dag)


def _linear_gaussian(seed: int, n: int):
    rng = np.random.default_rng(seed)
    V = 6
    order = rng.permutation(V)
    edges = [(order[i], order[j]) for i in range(V) for j in range(i + 1, V) if rng.random() < 0.4]
    x = np.zeros((n, V))
    for j in order:
        x[:, j] = rng.normal(size=n)
        for a, b in edges:
            if b == j:
                x[:, j] += rng.choice([-1, 1]) * rng.uniform(0.5, 1.5) * x[:, a]
    names = [f"X{i}" for i in range(V)]
    dag = cn.DAG([(names[a], names[b]) for a, b in edges], nodes=names)
    return dag, {names[i]: x[:, i] for i in range(V)}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_ges_recovers_linear_gaussian_cpdags(seed):
    dag, data = _linear_gaussian(seed, 20_000)
    assert cn.learn_structure(data, method="ges", progress=False) == cpdag(dag)


def test_ges_scores_at_least_as_well_as_causal_learn():
    ges_mod = pytest.importorskip("causallearn.search.ScoreBased.GES")
    m = cn.gallery.load("asia")
    df = m.sample(3_000, seed=4).to_pandas()
    nodes = list(df.columns)
    codes = np.column_stack([df[c].cat.codes.to_numpy() for c in nodes]).astype(float)
    g = ges_mod.ges(codes, score_func="local_score_BDeu")["G"].graph
    d = [(nodes[i], nodes[j]) for i in range(len(nodes)) for j in range(len(nodes)) if g[i, j] == -1 and g[j, i] == 1]
    u = [(nodes[i], nodes[j]) for i in range(len(nodes)) for j in range(i + 1, len(nodes)) if g[i, j] == g[j, i] == -1]
    ref = PDAG(d, u, nodes=nodes)
    sc = make_score("bdeu", as_table(df), equivalent_sample_size=1.0)
    ours = cn.learn_structure(df, method="ges", score="bdeu", equivalent_sample_size=1.0, progress=False)
    assert sc.total(ours.to_dag()) >= sc.total(ref.to_dag()) - 1e-6
    # causal-learn's BDeu carries a binomial structure prior (expected indegree 1); with the same score, the same CPDAG
    same = make_score("bdeu", as_table(df), equivalent_sample_size=1.0, structure_prior=1.0)
    twin = cn.learn_structure(df, method="ges", score="bdeu", equivalent_sample_size=1.0, structure_prior=1.0,
                              progress=False)
    assert same.total(twin.to_dag()) >= same.total(ref.to_dag()) - 1e-6
    assert twin == ref


def test_bdeu_structure_prior_equals_causal_learn_local_score():
    lsf = pytest.importorskip("causallearn.score.LocalScoreFunction")
    df = cn.gallery.load("asia").sample(500, seed=2).to_pandas()
    nodes = list(df.columns)
    codes = np.column_stack([df[c].cat.codes.to_numpy() for c in nodes]).astype(float)
    sc = make_score("bdeu", as_table(df), equivalent_sample_size=1.0, structure_prior=1.0)
    for child, parents in [(0, []), (1, [0]), (7, [2, 5]), (4, [1, 3, 6])]:
        ref = lsf.local_score_BDeu(codes, child, parents)
        assert sc.local(nodes[child], [nodes[p] for p in parents]) == pytest.approx(ref, rel=1e-12, abs=1e-9)
    plain = make_score("bdeu", as_table(df), equivalent_sample_size=1.0)
    edge_cost = (plain.local("xray", ["lung"]) - plain.local("xray", [])) - (sc.local("xray", ["lung"]) - sc.local("xray", []))
    assert edge_cost == pytest.approx(np.log(len(nodes) - 2))              # log((1 - p) / p), p = 1 / (m - 1)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), True, "1", 7.0, 100])
def test_structure_prior_bad_values_raise(bad):
    df = cn.gallery.load("asia").sample(50, seed=0).to_pandas()
    err = guarded(cn.learn_structure, df, method="ges", score="bdeu", structure_prior=bad, progress=False)
    assert isinstance(err, cn.ModelError) and "structure_prior" in str(err)


def test_structure_prior_is_bdeu_only():
    df = cn.gallery.load("asia").sample(50, seed=0).to_pandas()
    with pytest.raises(cn.ModelError, match="structure_prior is a BDeu setting"):
        cn.learn_structure(df, method="ges", score="bic", structure_prior=1.0, progress=False)


def test_ges_ends_where_no_single_edge_change_improves_the_score():
    m = cn.gallery.load("asia")
    df = m.sample(2_000, seed=5).to_pandas()
    sc = make_score("bic", as_table(df))
    p = GES(sc).run(list(df.columns))
    dag = p.to_dag()
    best = sc.total(dag)
    for a in dag.nodes:            # a CPDAG optimum is also a local optimum over DAG additions and removals
        for b in dag.nodes:
            if a == b:
                continue
            edges = set(dag.edges)
            if (a, b) in edges:
                edges.discard((a, b))
            elif (b, a) not in edges:
                edges.add((a, b))
            try:
                other = cn.DAG(sorted(edges), nodes=list(dag.nodes))
            except cn.GraphError:
                continue
            assert sc.total(other) <= best + 1e-6


def test_ges_constraints():
    m = cn.gallery.load("cancer")
    df = m.sample(5_000, seed=1).to_pandas()
    p = cn.learn_structure(df, method="ges", max_indegree=1, progress=False)
    assert all(len(p.to_dag().parents(v)) <= 1 for v in p.nodes)
    q = cn.learn_structure(df, method="ges", black_list=[("Smoker", "Cancer"), ("Cancer", "Smoker")], progress=False)
    assert frozenset(("Smoker", "Cancer")) not in {frozenset(e) for e in q.directed_edges + q.undirected_edges}
    with pytest.raises(cn.ModelError, match="fixed_edges"):
        cn.learn_structure(df, method="ges", fixed_edges=[("Smoker", "Cancer")], progress=False)
