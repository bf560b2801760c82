"""cn.fit against pgmpy's MaximumLikelihoodEstimator / BayesianEstimator, and least squares against numpy."""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import fit
from causalnet.learning import fit_model

pgmpy = pytest.importorskip("pgmpy")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
from pgmpy.estimators import BayesianEstimator, MaximumLikelihoodEstimator  # noqa: E402
from pgmpy.models import DiscreteBayesianNetwork  # noqa: E402


def pgmpy_table(cpd, node, parents, states):
    """A pgmpy TabularCPD as our layout (*parent_cards, card), states by name."""
    vals = cpd.values                                            # (card, *sorted parent cards)
    names = list(cpd.variables)                                  # [node, *sorted parents]
    vals = np.moveaxis(vals, 0, -1)                              # (*sorted parents, card)
    order = [names[1:].index(p) for p in parents]
    vals = vals.transpose([*order, len(parents)])
    for ax, v in enumerate([*parents, node]):
        idx = [cpd.state_names[v].index(s) for s in states[v]]
        vals = np.take(vals, idx, axis=ax)
    return vals


@pytest.fixture(scope="module")
def asia_data():
    m = cn.gallery.load("asia")
    return m, m.sample(3000, seed=3).to_pandas()


def _pgmpy_model(dag):
    return DiscreteBayesianNetwork(list(dag.edges))


def test_mle_equals_pgmpy(asia_data):
    m, df = asia_data
    ours = fit(m.dag, df)
    ref = MaximumLikelihoodEstimator(_pgmpy_model(m.dag), df.astype(str))
    states = {v: ours.states(v) for v in ours.nodes}
    for v in ours.nodes:
        ps = ours.mechanisms[v].parents
        assert_allclose(ours.mechanisms[v].table, pgmpy_table(ref.estimate_cpd(v), v, ps, states), rtol=0, atol=1e-12)


@pytest.mark.parametrize("prior,kw,pg", [("bdeu", {}, {"prior_type": "BDeu", "equivalent_sample_size": 10}),
                                         ("bdeu", {"equivalent_sample_size": 3.5},
                                          {"prior_type": "BDeu", "equivalent_sample_size": 3.5}),
                                         ("k2", {}, {"prior_type": "K2"})])
def test_bayes_equals_pgmpy(asia_data, prior, kw, pg):
    m, df = asia_data
    small = df.iloc[:200]
    ours = fit(m.dag, small, method="bayes", prior=prior, **kw)
    ref = BayesianEstimator(_pgmpy_model(m.dag), small.astype(str))
    states = {v: ours.states(v) for v in ours.nodes}
    for v in ours.nodes:
        ps = ours.mechanisms[v].parents
        assert_allclose(ours.mechanisms[v].table, pgmpy_table(ref.estimate_cpd(v, **pg), v, ps, states),
                        rtol=0, atol=1e-12)


def test_dirichlet_pseudo_counts_equal_pgmpy():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"A": rng.choice(["a", "b"], 50), "B": rng.choice(["x", "y", "z"], 50)})
    alpha = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]])          # ours: (A, B)
    ours = fit("A -> B", df, method="bayes", prior={"B": alpha, "A": 2.0})
    ref = BayesianEstimator(DiscreteBayesianNetwork([("A", "B")]), df)
    cpd = ref.estimate_cpd("B", prior_type="dirichlet", pseudo_counts=alpha.T)
    states = {"A": ("a", "b"), "B": ("x", "y", "z")}
    assert_allclose(ours.mechanisms["B"].table, pgmpy_table(cpd, "B", ("A",), states), rtol=0, atol=1e-12)
    counts = df["A"].value_counts()
    assert_allclose(ours.mechanisms["A"].table, (counts[["a", "b"]].to_numpy() + 2.0) / 54.0, rtol=0, atol=1e-12)


def test_categorical_order_bool_and_int_codes():
    df = pd.DataFrame({"A": pd.Categorical(["lo", "hi", "hi"], categories=["lo", "mid", "hi"]),
                       "B": [True, False, True], "C": [2, 0, 2]})
    with pytest.warns(cn.CausalNetWarning, match=r"'B'.*A='mid'"):
        m = fit([("A", "B"), ("B", "C")], df)
    assert m.states("A") == ("lo", "mid", "hi")
    assert m.states("B") == (False, True)
    assert m.states("C") == (0, 2)
    assert_allclose(m.mechanisms["A"].table, [1 / 3, 0, 2 / 3])
    assert_allclose(m.mechanisms["B"].table[1], [0.5, 0.5])     # unseen parent configuration: uniform


def test_linear_gaussian_least_squares(linear_gaussian):
    df = linear_gaussian.sample(4000, seed=1).to_pandas()
    m = fit(linear_gaussian.dag, df)
    mech = m.mechanisms["Y"]
    y = df["Y"].to_numpy()
    X = np.column_stack([np.ones(len(df)), *(df[p] for p in mech.parents)])
    coef = np.linalg.lstsq(X, y, rcond=None)[0]
    assert_allclose([mech.bias, *mech.weights], coef, rtol=0, atol=1e-10)
    assert_allclose(mech.sigma, np.sqrt(np.mean((y - X @ coef) ** 2)), rtol=1e-12)
    assert_allclose(dict(zip(mech.parents, mech.weights))["X"], 1.5, atol=0.05)


def test_fit_model_keeps_states_and_kinds(sprinkler):
    df = sprinkler.sample(2000, seed=2).to_pandas()
    m2 = fit_model(sprinkler, df)
    assert m2 is not sprinkler and m2.dag == sprinkler.dag
    for v in sprinkler.nodes:
        assert m2.states(v) == sprinkler.states(v)
        assert type(m2.mechanisms[v]) is type(sprinkler.mechanisms[v])
    assert_allclose(m2.mechanisms["Rain"].table, sprinkler.mechanisms["Rain"].table, atol=0.03)


def test_fit_from_mapping_and_string_structure():
    m = fit("A -> B", {"A": np.array([0, 0, 1, 1]), "B": np.array(["x", "y", "y", "y"])})
    assert_allclose(m.mechanisms["B"].table, [[0.5, 0.5], [0, 1]])


@pytest.mark.parametrize("kwargs,data,match", [
    ({}, {"A": [0, 1]}, r"node 'B' has no column"),
    ({}, {"A": [0.5, 1.5], "B": ["x", "y"]}, r"node 'B' is discrete but its parent 'A' is continuous"),
    ({}, {"A": ["a", None], "B": ["x", "y"]}, r"column 'A' has 1 missing.*method='em'"),
    ({}, {"A": [], "B": []}, r"no rows"),
    ({"states": {"Q": ["a"]}}, {"A": [0, 1], "B": [0, 1]}, r"states= names 'Q'"),
    ({"states": {"A": ["a"]}}, {"A": ["a", "b"], "B": [0, 1]}, r"column 'A' has the value 'b'"),
    ({"latent": ["B"]}, {"A": [0, 1], "B": [0, 1]}, r"'B' is declared latent but the data have a column"),
    ({"latent": ["B"], "method": "em"}, {"A": [0, 1]}, r"latent node 'B' needs its states"),
    ({"method": "magic"}, {"A": [0, 1], "B": [0, 1]}, r"method must be one of"),
    ({"prior": "k2"}, {"A": [0, 1], "B": [0, 1]}, r"method='mle' takes no prior"),
    ({}, {"A": np.arange(5000), "B": np.arange(5000)}, r"column 'A' has 5000 distinct integers"),
    ({}, {"A": [0, 1, 2], "B": [0, 1]}, r"different lengths"),
])
def test_bad_input_names_the_column(kwargs, data, match):
    with pytest.raises(cn.ModelError, match=match):
        fit("A -> B", data, **kwargs)


def test_latent_must_be_a_node():
    with pytest.raises(cn.GraphError, match="latent node 'Q'"):
        fit("A -> B", {"A": [0, 1], "B": [0, 1]}, latent=["Q"], method="em")


def test_no_warning_when_every_configuration_is_seen(asia_data):
    m, df = asia_data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit(m.dag, df, method="bayes")


def test_refit_keeps_the_models_parent_order():
    alarm = cn.gallery.load("alarm")
    node = "SHUNT"                     # declared parents (INTUBATION, PULMEMBOLUS); the DAG lists them the other way
    assert tuple(alarm.mechanisms[node].parents) != tuple(alarm.dag.parents(node))
    df = alarm.sample(3000, seed=0).to_pandas()
    refit = alarm.fit(df, method="bayes")
    assert refit.mechanisms[node].parents == alarm.mechanisms[node].parents
    assert refit.mechanisms[node].table.shape == alarm.mechanisms[node].table.shape == (3, 2, 2)
    common = (0, 1)                    # INTUBATION=NORMAL, PULMEMBOLUS=FALSE: most rows
    assert np.abs(refit.mechanisms[node].table[common] - alarm.mechanisms[node].table[common]).max() < 0.03
    holes = df.assign(INTUBATION=df["INTUBATION"].astype(object).mask(np.arange(len(df)) % 3 == 0))
    em = alarm.fit(holes, method="em", n_iter=2, progress=False)          # EM starts from alarm's own tables
    assert em.mechanisms[node].table.shape == alarm.mechanisms[node].table.shape
