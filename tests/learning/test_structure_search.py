"""Structure learning: constraints, the local-score cache, CI tests against scipy, quality against pgmpy."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from numpy.testing import assert_allclose
from scipy import stats
from test_equivalence_classes import small_dags

import causalnet as cn
from causalnet.graph.equivalence import PDAG, cpdag, structural_hamming_distance
from causalnet.learning.data import as_table
from causalnet.learning.scores import make_score, score
from causalnet.learning.search import DAGSearch as _Search
from causalnet.learning.structure import PC, ChiSquare, CITest, GSquare, HillClimb, learn_structure

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


@pytest.fixture(scope="module")
def asia_big():
    m = cn.gallery.load("asia")
    return m, m.sample(20_000, seed=11).to_pandas()


def test_hill_climb_ends_at_a_local_optimum(asia_big):
    _, df = asia_big
    g = learn_structure(df, method="hill_climb", progress=False)
    assert isinstance(g, cn.DAG)
    sc = make_score("bic", as_table(df))
    search = _Search(list(df.columns), g, max_indegree=None, black=frozenset(), white=frozenset(), fixed=frozenset())
    assert max(search.gain(sc, mv) for mv in search.moves()) <= 1e-4
    assert score(g, df) > score(cn.DAG(nodes=list(df.columns)), df)


def test_hill_climb_recovers_a_small_network():
    m = cn.gallery.load("cancer")
    df = m.sample(20_000, seed=1).to_pandas()
    g = learn_structure(df, method="hill_climb", progress=False)
    assert structural_hamming_distance(cpdag(g), cpdag(m.dag)) <= 1


def test_hill_climb_no_worse_than_pgmpy(asia_big):
    pytest.importorskip("pgmpy")
    from pgmpy.estimators import HillClimbSearch

    m, df = asia_big
    small = df.iloc[:3000]
    ours = learn_structure(small, method="hill_climb", progress=False)
    ref = HillClimbSearch(small.astype(str)).estimate(scoring_method="bic-d", show_progress=False)
    ref_dag = cn.DAG(list(ref.edges()), nodes=list(small.columns))
    assert score(ours, small) >= score(ref_dag, small) - 1e-6


def test_tabu_at_least_as_good_as_hill_climb(asia_big):
    _, df = asia_big
    small = df.iloc[:2000]
    hc = learn_structure(small, method="hill_climb", progress=False)
    tabu = learn_structure(small, method="tabu", progress=False)
    assert score(tabu, small) >= score(hc, small) - 1e-6


def test_constraints_are_respected(asia_big):
    _, df = asia_big
    small = df.iloc[:2000]
    g = learn_structure(small, method="hill_climb", max_indegree=1, black_list=[("smoke", "lung"), ("lung", "smoke")],
                        fixed_edges=[("asia", "dysp")], progress=False)
    assert all(len(g.parents(v)) <= 1 or v == "dysp" for v in g.nodes)
    assert not g.is_adjacent("smoke", "lung")
    assert g.has_edge("asia", "dysp")
    w = learn_structure(small, method="hill_climb", white_list=[("either", "xray"), ("xray", "dysp")], progress=False)
    assert set(w.edges) <= {("either", "xray"), ("xray", "dysp")}
    assert w.has_edge("either", "xray")


def test_only_changed_families_are_rescored(asia_big):
    _, df = asia_big
    table = as_table(df.iloc[:2000])
    sc = make_score("bic", table)
    nodes = list(table.names)
    search = _Search(nodes, cn.DAG(nodes=nodes), max_indegree=None, black=frozenset(), white=frozenset(),
                     fixed=frozenset())
    steps = []

    class Counting(HillClimb):
        def score_move(self, s, move):
            return super().score_move(s, move)

    import tqdm

    with tqdm.tqdm(disable=True) as bar:
        dag = Counting(sc).run(search, bar)
        steps = len(dag.edges)
    V = len(nodes)
    # first sweep: every (child, {parent}) family and every empty family; then each move changes <= 2 families,
    # whose new neighbourhoods cost at most 2 * 2V new local scores
    assert sc.evaluations <= V + V * (V - 1) + (steps + 1) * 4 * V
    assert sc.evaluations < (steps + 1) * V * (V - 1)


@pytest.mark.parametrize("cls,lam", [(ChiSquare, "pearson"), (GSquare, "log-likelihood")])
def test_ci_tests_equal_scipy(cls, lam):
    rng = np.random.default_rng(0)
    n = 500
    z = rng.integers(0, 2, n)
    x = (z + rng.integers(0, 3, n)) % 3
    y = (z + (rng.random(n) < 0.3)) % 2
    df = pd.DataFrame({"X": x, "Y": y, "Z": z})
    t = cls(as_table(df))
    expected = stats.chi2_contingency(pd.crosstab(df.X, df.Y), correction=False, lambda_=lam)
    assert_allclose(t.pvalue("X", "Y", ()), expected.pvalue, rtol=1e-9)
    stat, dof = 0.0, 0
    for _, part in df.groupby("Z"):
        r = stats.chi2_contingency(pd.crosstab(part.X, part.Y), correction=False, lambda_=lam)
        stat, dof = stat + r.statistic, dof + r.dof
    assert_allclose(t.pvalue("X", "Y", ("Z",)), stats.chi2.sf(stat, dof), rtol=1e-9)


class DSeparation(CITest):
    """A perfect test: p = 1 when the true DAG d-separates, else 0."""

    def __init__(self, dag):
        self.dag = dag
        self.calls = 0

    def pvalue(self, x, y, given):
        return 1.0 if self.dag.d_separated({x}, {y}, given=set(given)) else 0.0


@settings(max_examples=40, deadline=None)
@given(small_dags(max_nodes=6))
def test_pc_with_a_perfect_test_returns_the_cpdag(dag):
    import tqdm

    nodes = list(dag.nodes)
    pc = PC(DSeparation(dag), alpha=0.5, max_cond_vars=len(nodes))
    with tqdm.tqdm(disable=True) as bar:
        adj, sepsets = pc.skeleton(nodes, bar)
        assert pc.orient(nodes, adj, sepsets) == cpdag(dag)


def test_pc_on_sampled_data_is_close(asia_big):
    m, df = asia_big
    p = learn_structure(df.iloc[:5000], method="pc", alpha=0.01, progress=False)
    assert isinstance(p, PDAG)
    assert structural_hamming_distance(p, cpdag(m.dag)) <= 6     # 'either' is a deterministic OR: hard for PC


def test_pc_fisher_z_on_linear_gaussian():
    rng = np.random.default_rng(4)
    n = 5000
    a = rng.normal(size=n)
    b = rng.normal(size=n)
    c = a + b + 0.5 * rng.normal(size=n)
    d = c + 0.5 * rng.normal(size=n)
    p = learn_structure({"A": a, "B": b, "C": c, "D": d}, method="pc", progress=False)
    assert p == cpdag(cn.DAG([("A", "C"), ("B", "C"), ("C", "D")]))
    g = learn_structure({"A": a, "B": b, "C": c, "D": d}, method="hill_climb", progress=False)
    assert cpdag(g) == p


@pytest.mark.parametrize("kw,match", [
    ({"method": "magic"}, "method must be one of"),
    ({"method": "pc", "test": "fisher_z"}, "needs continuous columns"),
    ({"method": "pc", "alpha": 2.0}, "alpha"),
    ({"max_indegree": -1}, "max_indegree"),
    ({"black_list": [("A", "Q")]}, "black_list names 'Q'"),
    ({"score": "bic-g"}, "needs continuous columns"),
])
def test_learn_structure_bad_arguments(kw, match):
    with pytest.raises(cn.CausalNetError, match=match):
        learn_structure({"A": [0, 1, 0, 1], "B": [1, 1, 0, 0]}, progress=False, **kw)
