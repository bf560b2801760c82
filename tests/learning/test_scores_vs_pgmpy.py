"""cn.score equals pgmpy's structure scores to 1e-9."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.learning.scores import score

pytest.importorskip("pgmpy")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
from pgmpy.models import DiscreteBayesianNetwork, LinearGaussianBayesianNetwork  # noqa: E402
from pgmpy.structure_score import AIC, BIC, K2, BDeu, BICGauss, LogLikelihood  # noqa: E402


@pytest.fixture(scope="module")
def asia_df():
    return cn.gallery.load("asia").sample(2000, seed=5).to_pandas()


@pytest.mark.parametrize("name,cls,kw", [("bic", BIC, {}), ("aic", AIC, {}), ("k2", K2, {}),
                                         ("loglik", LogLikelihood, {}), ("bdeu", BDeu, {}),
                                         ("bdeu", BDeu, {"equivalent_sample_size": 2.5})])
@pytest.mark.parametrize("edges", [[("smoke", "lung"), ("lung", "either"), ("tub", "either"),
                                    ("either", "dysp"), ("bronc", "dysp"), ("smoke", "bronc")],
                                   [("asia", "xray"), ("xray", "dysp"), ("dysp", "smoke")]])
def test_discrete_scores_equal_pgmpy(asia_df, name, cls, kw, edges):
    nodes = list(asia_df.columns)
    dag = cn.DAG(edges, nodes=nodes)
    ref_model = DiscreteBayesianNetwork(edges)
    ref_model.add_nodes_from(nodes)
    ref = cls(asia_df.astype(str), **kw).score(ref_model)
    ours = score(dag, asia_df, score=name, **kw)
    assert_allclose(ours, ref, rtol=1e-12, atol=1e-9)


def test_bic_gauss_equals_pgmpy(linear_gaussian):
    df = linear_gaussian.sample(500, seed=2).to_pandas()
    for edges in ([("Z", "X"), ("X", "Y"), ("Z", "Y")], [("Y", "X")]):
        ref_model = LinearGaussianBayesianNetwork(edges)
        ref_model.add_nodes_from(["X", "Y", "Z"])
        ref = BICGauss(df).score(ref_model)
        assert_allclose(score(cn.DAG(edges, nodes=["X", "Y", "Z"]), df, score="bic-g"), ref, rtol=1e-12, atol=1e-9)


def test_local_scores_are_cached(asia_df):
    from causalnet.learning.data import as_table
    from causalnet.learning.scores import make_score

    s = make_score("bic", as_table(asia_df))
    a = s.local("dysp", ("bronc", "either"))
    assert s.local("dysp", ("either", "bronc")) == a
    assert s.evaluations == 1


@pytest.mark.parametrize("kwargs,data,match", [
    ({"score": "nope"}, {"A": [0, 1], "B": [0, 1]}, "score must be one of"),
    ({"score": "bic-g"}, {"A": [0, 1], "B": [0, 1]}, "needs continuous columns, but column 'A'"),
    ({"score": "bic"}, {"A": [0.5, 1.0], "B": [0.1, 1.0]}, "needs discrete columns, but column 'A'"),
    ({}, {"A": ["a", None], "B": [0, 1]}, "column 'A' has 1 missing"),
    ({}, {"A": [0, 1]}, "node 'B' has no column"),
    ({"score": "k2", "equivalent_sample_size": 3}, {"A": [0, 1], "B": [0, 1]}, "BDeu setting"),
])
def test_score_bad_input(kwargs, data, match):
    with pytest.raises(cn.ModelError, match=match):
        score("A -> B", data, **kwargs)


def test_score_on_mapping_of_arrays():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 100)
    assert np.isfinite(score("A -> B", {"A": a, "B": a ^ (rng.random(100) < 0.1)}, score="bdeu"))
