"""CausalModel: construction, validation, sampling, forward, log_prob, do."""

import numpy as np
import pytest
import scipy.stats
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError, GraphError, ModelError, ShapeError

WET = [[[1.0, 0.0], [0.1, 0.9]], [[0.2, 0.8], [0.01, 0.99]]]


@pytest.fixture
def linear():
    return cn.CausalModel({
        "X": cn.LinearGaussian(sigma=1.0),
        "Y": cn.LinearGaussian(["X"], [2.0], bias=1.0, sigma=0.5),
        "Z": cn.LinearGaussian(["X", "Y"], [-1.0, 0.5], sigma=0.3),
    })


def test_dag_from_mechanisms(sprinkler):
    assert sprinkler.dag.parents("Wet") == ("Rain", "Sprinkler")
    assert sprinkler.states("Wet") == ("dry", "wet")
    assert sprinkler.spec("Rain").card == 2


@pytest.mark.parametrize("build, exc, fragment", [
    (lambda: {"Wet": cn.CPT(["Rain", "Sprinkler"], np.full((2, 3, 2), 0.5)), "Rain": cn.Categorical([0.5, 0.5]),
              "Sprinkler": cn.Categorical([0.5, 0.5])}, ModelError,
     r"CPT for 'Wet' has shape \(2, 3, 2\); parents \('Rain', 'Sprinkler'\) have cards \(2, 2\) and 'Wet' has 2 "
     r"states, so expected \(2, 2, 2\)"),
    (lambda: {"A": cn.CPT(["B"], [[0.5, 0.5], [0.5, 0.5]]), "B": cn.CPT(["A"], [[0.5, 0.5], [0.5, 0.5]])},
     GraphError, "cycle"),
    (lambda: {"A": cn.CPT(["Bee"], [[0.5, 0.5]])}, ModelError, "parent 'Bee', which has no mechanism"),
    (lambda: {"A": "not a mechanism"}, ModelError, "expected a Mechanism"),
    (lambda: {"X": cn.LinearGaussian(), "D": cn.CPT(["X"], [[0.5, 0.5]])}, ModelError, "discrete parents"),
])
def test_construction_errors(build, exc, fragment):
    with pytest.raises(exc, match=fragment):
        cn.CausalModel(build())


@pytest.mark.parametrize("make, fragment", [
    (lambda: cn.Categorical([0.5, 0.6]), r"sums to 1.1"),
    (lambda: cn.Categorical([1.5, -0.5]), r">= 0"),
    (lambda: cn.Categorical([np.nan, 1.0]), "finite"),
    (lambda: cn.CPT(["A", "A"], np.full((2, 2, 2), 0.5)), "listed twice"),
    (lambda: cn.Categorical([0.5, 0.5], states=["a", "a"]), "duplicate"),
    (lambda: cn.Categorical([0.5, 0.5], states=["a"]), "1 state names"),
    (lambda: cn.LinearGaussian(["A"], [1.0, 2.0]), "2 weights for 1 parents"),
    (lambda: cn.LinearGaussian(sigma=-1.0), "sigma must be >= 0"),
    (lambda: cn.Function(["A"], "notcallable"), "callable"),
])
def test_mechanism_validation(make, fragment):
    with pytest.raises(ModelError, match=fragment):
        make()


def test_sample_frequencies_and_seed(sprinkler, seed):
    s = sprinkler.sample(200_000, seed=seed)
    assert s.n == 200_000
    p_wet = sprinkler.query("Wet")["wet"]
    assert abs(s["Wet"].mean() - p_wet) < 4 * np.sqrt(p_wet * (1 - p_wet) / s.n)
    again = sprinkler.sample(200_000, seed=seed)
    assert all(np.array_equal(s[k], again[k]) for k in s)
    df = s.to_pandas()
    assert list(df.columns) == ["Rain", "Sprinkler", "Wet"] and set(df["Wet"].cat.categories) == {"dry", "wet"}
    assert s.named("Rain")[:3].tolist() == [("no", "yes")[i] for i in s["Rain"][:3]]


def test_forward_with_given_noise_is_deterministic(linear):
    noise = {"X": np.array([0.0, 1.0]), "Y": np.array([0.0, -2.0]), "Z": np.zeros(2)}
    tr = linear.forward(noise=noise)
    assert_allclose(tr["X"], [0.0, 1.0])
    assert_allclose(tr["Y"], [1.0, 2.0])
    assert_allclose(tr["Z"], [0.5, 0.0])
    tr2 = linear.forward({"X": [3.0, 3.0]}, noise=noise, keep=["Z"])
    assert list(tr2) == ["Z"]
    assert_allclose(tr2["Z"], [-3.0 + 0.5 * 7.0, -3.0 + 0.5 * 6.0])


def test_forward_shape_errors(linear):
    with pytest.raises(ShapeError, match="noise for .Y. has 4 rows, expected the batch size 3"):
        linear.forward({"X": np.zeros(3)}, noise={"Y": np.zeros(4)})
    with pytest.raises(ModelError, match="unknown node in values 'Q'"):
        linear.forward({"Q": 1.0})


def test_log_prob_matches_scipy(linear, rng):
    s = linear.sample(50, seed=rng)
    lp = linear.log_prob(dict(s))
    ref = (scipy.stats.norm(0, 1).logpdf(s["X"]) + scipy.stats.norm(1 + 2 * s["X"], 0.5).logpdf(s["Y"])
           + scipy.stats.norm(-s["X"] + 0.5 * s["Y"], 0.3).logpdf(s["Z"]))
    assert_allclose(lp, ref, rtol=1e-12)


def test_log_prob_discrete(sprinkler):
    lp = sprinkler.log_prob({"Rain": ["no", "yes"], "Sprinkler": ["on", "off"], "Wet": ["wet", "wet"]})
    assert_allclose(lp, np.log([0.8 * 0.4 * 0.9, 0.2 * 0.99 * 0.8]), rtol=1e-12)
    with pytest.raises(EvidenceError, match="'Wet' is missing"):
        sprinkler.log_prob({"Rain": [0], "Sprinkler": [0]})


def test_do_returns_new_model(sprinkler):
    before = dict(sprinkler.mechanisms)
    m2 = sprinkler.do({"Sprinkler": "on"})
    assert dict(sprinkler.mechanisms) == before and sprinkler.dag.parents("Sprinkler") == ("Rain",)
    assert m2.dag.parents("Sprinkler") == () and m2.dag.intervened == {"Sprinkler"}
    assert (m2.sample(100, seed=0)["Sprinkler"] == 1).all()
    with pytest.raises(ModelError, match="unknown node in do 'Sprinkle'; did you mean 'Sprinkler'"):
        sprinkler.do({"Sprinkle": "on"})
    with pytest.raises(ModelError, match="no state 'maybe'"):
        sprinkler.do({"Sprinkler": "maybe"})
    assert dict(sprinkler.mechanisms) == before


def test_do_per_row_and_shift(linear):
    m = linear.do({"X": np.array([0.0, 1.0, 2.0])})
    tr = m.forward(noise={"Y": np.zeros(3), "Z": np.zeros(3)})
    assert_allclose(tr["Y"], [1.0, 3.0, 5.0])
    shifted = linear.do({"X": lambda x: x + 1})
    assert shifted.dag.parents("X") == ()
    tr = shifted.forward(noise={"X": np.array([0.5]), "Y": np.zeros(1), "Z": np.zeros(1)})
    assert_allclose(tr["X"], [1.5])
    assert_allclose(shifted.query("X", method="sampling", seed=1, n_samples=20_000).mean(), 1.0, atol=0.05)


def test_double_do_warns(sprinkler):
    with pytest.warns(cn.CausalNetWarning, match="already intervened"):
        sprinkler.do({"Rain": "yes"}).do({"Rain": "no"})


def test_function_and_deterministic_nodes(seed):
    m = cn.CausalModel({
        "X": cn.Function([], lambda: 0.0, noise=scipy.stats.norm(0, 1)),
        "Y": cn.Function(["X"], np.sin, noise=scipy.stats.laplace(0, 0.1)),
        "D": cn.Deterministic(["X"], lambda x: (x > 0).astype(int), states=["neg", "pos"]),
    })
    s = m.sample(1000, seed=seed)
    assert set(np.unique(s["D"])) <= {0, 1}
    assert np.array_equal(s["D"], (s["X"] > 0).astype(int))
    lp = m.log_prob(dict(s))
    assert np.all(np.isfinite(lp))
