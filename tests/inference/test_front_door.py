"""The front door (one validated request) and issue 10's regressions in query/counterfactual/map/do/sample."""

import numpy as np
import pytest
import scipy.stats
from conftest import make_linear_gaussian, make_sprinkler
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError, ModelError, ResourceError, ShapeError
from causalnet.inference.request import COUNTERFACTUAL, FACTUAL, counterfactual_request, query_request

# -- wrong answers -----------------------------------------------------------------------------


def test_counterfactual_target_that_is_also_evidence_is_a_point_mass(sprinkler):
    # issue 10: raised "'f0' is both a target and evidence"
    r = sprinkler.counterfactual("Rain", evidence={"Sprinkler": "on", "Rain": "no", "Wet": "wet"},
                                 do={"Sprinkler": "off"})
    assert r.states == ("no", "yes") and "twin network" in r.method
    assert_allclose(r.probs, [1.0, 0.0], atol=0)


def test_counterfactual_target_also_evidence_batched(sprinkler):
    r = sprinkler.counterfactual("Rain", evidence={"Rain": np.array(["no", "yes"]), "Wet": "wet"},
                                 do={"Sprinkler": "off"})
    assert_allclose(r.probs, [[1, 0], [0, 1]], atol=0)


def test_twin_errors_name_user_nodes_never_internal_names(sprinkler):
    with pytest.raises(EvidenceError) as e:       # impossible evidence: Rain=no, Sprinkler=off, Wet=wet
        sprinkler.counterfactual("Wet", evidence={"Rain": "no", "Sprinkler": "off", "Wet": "wet"},
                                 do={"Sprinkler": "on"})
    assert "'f0'" not in str(e.value) and "'f1'" not in str(e.value) and "'u" not in str(e.value)


def test_per_row_do_on_a_target(sprinkler):
    r = sprinkler.query("Sprinkler", do={"Sprinkler": np.array(["on", "off"])})
    assert_allclose(r.probs, [[0, 1], [1, 0]], atol=0)
    j = sprinkler.query(["Wet", "Sprinkler"], do={"Sprinkler": np.array(["on", "off"])})
    for i, s in enumerate(["on", "off"]):
        one = sprinkler.query(["Wet", "Sprinkler"], do={"Sprinkler": s})
        assert_allclose(j.probs[i], one.probs, atol=1e-12)


def test_per_row_do_on_the_sampling_engine(sprinkler, seed):
    do = {"Sprinkler": np.array(["on", "off", "on"])}
    exact = sprinkler.query("Wet", do=do)
    approx = sprinkler.query("Wet", do=do, method="sampling", seed=seed, n_samples=60_000)
    assert approx.probs.shape == (3, 2)
    assert np.all(np.abs(approx.probs - exact.probs) < 5 * approx.std_err + 1e-9)
    s = sprinkler.query("Sprinkler", do=do, method="sampling", seed=seed, n_samples=3000)
    assert_allclose(s.probs, [[0, 1], [1, 0], [0, 1]], atol=0)


def test_per_row_do_with_continuous_sampling(seed):
    m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.Function(["X"], lambda x: 2 * x,
                                                                   noise=scipy.stats.norm(0, 1))})
    r = m.query("Y", do={"X": np.array([0.0, 1.0, -1.0])}, seed=seed, n_samples=30_000)
    assert np.all(np.abs(r.mean() - [0.0, 2.0, -2.0]) < 5 * r.std_err())


def test_cdf_intervals_exact_when_a_row_ends_in_zeros():
    # cumsum of [0.7, 0.2, 0.1] is 0.9999999999999999: a midpoint rounded to 1.0 gave IndexError
    m = cn.CausalModel({"A": cn.Categorical([0.5, 0.5]),
                        "B": cn.CPT(["A"], [[0.7, 0.2, 0.1, 0.0], [0.25, 0.25, 0.25, 0.25]])})
    r = m.counterfactual("B", evidence={"B": 2, "A": 0}, do={"A": 1})
    assert_allclose(r.probs, [0, 0, 0, 1], atol=1e-12)      # u in [0.9, 1) -> the last quarter
    r = m.counterfactual("B", evidence={"B": 3, "A": 1}, do={"A": 0})
    # u in [0.75, 1) and A=0 has CDF (0.7, 0.9, 1, 1): [0.75, 0.9) -> 1, [0.9, 1) -> 2, never the empty state 3
    assert_allclose(r.probs, [0, 0.6, 0.4, 0], atol=1e-12)


def test_counterfactuals_on_insurance_rows_ending_in_zeros():
    m = cn.gallery.load("insurance")
    for v in ["RuggedAuto", "MakeModel", "CarValue"]:
        x = m.dag.parents(v)[0]
        r = m.counterfactual(v, evidence={v: m.states(v)[0]}, do={x: m.states(x)[0]})
        assert np.all(r.probs >= 0) and abs(r.probs.sum() - 1) < 1e-9


def test_affine_interventions_are_exact_and_match_sampling(linear_gaussian, seed):
    g = linear_gaussian
    d = g.query("Y", do={"X": cn.shift(1.0)})
    assert d.method == "exact (joint Gaussian)"
    base = g.query("Y")
    assert_allclose(d.mean - base.mean, [1.5], atol=1e-12)       # dY/dX = 1.5
    a = g.query("Y", do={"X": cn.affine(2.0, -1.0)})
    # X' = 2 X - 1, X = 0.8 Z + 0.7 u_X: Y = 1.5 X' - 0.7 Z + 1 + 0.5 u_Y
    mean = 1.5 * (2 * 0.8 * 0.5 - 1) - 0.7 * 0.5 + 1
    var = (1.5 * 2 * 0.8 - 0.7) ** 2 + (1.5 * 2 * 0.7) ** 2 + 0.5 ** 2
    assert_allclose([a.mean[0], a.cov[0, 0]], [mean, var], rtol=1e-12)
    s = g.query("Y", do={"X": lambda x: 2 * x - 1}, seed=seed)
    assert "likelihood weighting" in s.method and "opaque" in s.method
    assert abs(s.mean() - mean) < 5 * s.std_err()


def test_affine_counterfactual_gaussian_closed_form(linear_gaussian):
    c = linear_gaussian.counterfactual("Y", evidence={"X": 1.0, "Y": 2.0}, do={"X": cn.affine(2.0, 0.5)})
    assert "twin joint Gaussian" in c.method
    assert_allclose(c.mean, [2.0 + 1.5 * (2.5 - 1.0)], rtol=1e-12)
    assert_allclose(c.cov, [[0.0]], atol=1e-9)


def test_affine_on_a_discrete_node_is_a_state_map(sprinkler):
    m = cn.CausalModel({"A": cn.Categorical([0.2, 0.3, 0.5]), "B": cn.CPT(["A"], np.eye(3))})
    r = m.query("B", do={"A": cn.affine(-1, 2)})                  # reverses the states
    assert_allclose(r.probs, [0.5, 0.3, 0.2], atol=1e-12)
    with pytest.raises(ModelError, match="map states"):
        m.query("B", do={"A": cn.shift(1)})


def test_one_decoding_rule_for_int_state_names():
    m = cn.CausalModel({"A": cn.Categorical([0.2, 0.8], states=[0, 2]),
                        "B": cn.CPT(["A"], [[0.9, 0.1], [0.3, 0.7]])})
    s = m.query("B", evidence={"A": 2})
    b = m.query("B", evidence={"A": np.array([2, 0])})
    assert_allclose(b.probs[0], s.probs, atol=0)
    with pytest.raises(EvidenceError, match="'A' has no state 1"):
        m.query("B", evidence={"A": 1})
    with pytest.raises(EvidenceError, match="'A' has no state 1"):
        m.query("B", evidence={"A": np.array([1])})


# -- bad inputs: typed errors, nothing changed -------------------------------------------------------


BAD_QUERIES = [
    (dict(targets="Wet", evidence={"Rain": [["no"], ["yes", "no"]]}), EvidenceError, "ragged"),
    (dict(targets="Wet", evidence={"Rain": {"no": 1}}), EvidenceError, "'Rain'"),
    (dict(targets="Wet", evidence=[("Rain", "no")]), EvidenceError, "evidence must be a mapping"),
    (dict(targets="Wet", do=["Sprinkler"]), ModelError, "do must be a mapping"),
    (dict(targets="Wet", method="x"), ModelError, "method must be one of"),
    (dict(targets="Wet", n_samples=-1), ModelError, "n_samples"),
    (dict(targets="Wet", seed="x"), ModelError, "seed"),
    (dict(targets="Wet", evidence={"Rain": np.array(["no", "yes"]), "Sprinkler": np.array(["on"] * 3)}),
     EvidenceError, "share one length"),
    (dict(targets="Wet", evidence={"Rain": "no"}, do={"Sprinkler": np.array(["on"] * 3)}), None, None),
    (dict(targets="Wet", evidence={"Rain": np.array(["no", "yes"])}, do={"Sprinkler": np.array(["on"] * 3)}),
     EvidenceError, "share one length"),
    (dict(targets=[]), EvidenceError, "at least one target"),
    (dict(targets=["Wet", "Wet"]), EvidenceError, "listed twice"),
    (dict(targets="Wet", evidence={"Wet": "wet"}), EvidenceError, "both targets and evidence"),
    (dict(targets="Wett"), EvidenceError, "did you mean 'Wet'"),
    (dict(targets="Wet", evidence={"Rain": np.nan}), EvidenceError, "no state nan"),
    (dict(targets="Wet", do={"Sprinkler": "maybe"}), ModelError, "no state 'maybe'"),
]


@pytest.mark.parametrize("kwargs, exc, fragment", BAD_QUERIES)
def test_bad_queries_raise_typed_errors(sprinkler, kwargs, exc, fragment):
    kw = dict(kwargs)
    targets = kw.pop("targets")
    got = guarded_call(sprinkler.query, targets, **kw)
    if exc is None:
        assert not isinstance(got, Exception)
    else:
        assert isinstance(got, exc), got
        assert fragment in str(got)


def guarded_call(fn, *args, **kwargs):
    from conftest import guarded

    return guarded(fn, *args, **kwargs)


def test_counterfactual_method_is_checked(sprinkler):
    with pytest.raises(ModelError, match="method must be one of"):
        sprinkler.counterfactual("Wet", evidence={"Wet": "wet"}, do={"Sprinkler": "off"}, method="x")
    with pytest.raises(ModelError, match="method must be one of"):
        sprinkler.query("P(Wet_{Sprinkler=off} | Wet=wet)", method="x")


@pytest.mark.parametrize("n", [-1, 1.5, "10", True, None])
def test_sample_sizes(sprinkler, n):
    with pytest.raises(ModelError, match="non-negative integer"):
        sprinkler.sample(n)


def test_huge_sample_is_a_resource_error(sprinkler):
    with pytest.raises(ResourceError, match="max_table_bytes"):
        sprinkler.sample(10**12)


def test_function_producing_nan_names_the_node(seed):
    m = cn.CausalModel({"X": cn.LinearGaussian(),
                        "Y": cn.Function(["X"], lambda x: np.log(x), noise=scipy.stats.norm(0, 1))})
    with pytest.raises(ModelError, match="(?i)'Y'.*nan"):
        m.sample(100, seed=seed)
    with pytest.raises(ModelError, match="(?i)'Y'.*nan"):
        m.forward({"X": np.array([-1.0, 1.0])}, seed=seed)
    with pytest.raises(ModelError, match="'Y'"):
        m.query("Y", seed=seed, n_samples=1000)


def test_shift_producing_nan_or_inf_is_a_model_error(linear_gaussian, seed):
    with pytest.raises(ModelError, match="'X'.*NaN"):
        linear_gaussian.query("Y", do={"X": lambda x: np.sqrt(x - 100.0)}, seed=seed, n_samples=1000)
    with pytest.raises(cn.CausalNetError):
        linear_gaussian.query("Y", do={"X": cn.affine(1e308, 1e308)})
    with pytest.raises(ModelError, match="finite"):
        cn.shift(np.nan)
    with pytest.raises(ModelError, match="finite real"):
        cn.affine("2", 0.0)


def test_twin_network_memory_is_checked_before_allocating():
    rng = np.random.default_rng(0)
    t = rng.dirichlet(np.ones(6), size=(6, 6))
    m = cn.CausalModel({"A": cn.Categorical(np.ones(6) / 6), "B": cn.Categorical(np.ones(6) / 6),
                        "C": cn.CPT(["A", "B"], t)})
    with cn.limits.override(max_table_bytes=10_000):
        with pytest.raises(ResourceError, match="twin-network tables of 'C'.*square of the CPT size"):
            m.counterfactual("C", evidence={"C": 0}, do={"A": 1}, method="exact")
        # under "auto" the registry passes the exact engine and its reason reaches .method
        r = m.counterfactual("C", evidence={"C": 0}, do={"A": 1}, n_samples=200, seed=0)
        assert "noise posterior" in r.method and "exact engines passed: discrete twin network: ResourceError" in r.method
    assert m.counterfactual("C", evidence={"C": 0}, do={"A": 1}).probs.shape == (6,)


def test_failed_call_leaves_arguments_unchanged(sprinkler):
    ev = {"Rain": np.array(["no", "yes"]), "Sprinkler": np.array(["on", "on", "off"])}
    before = {k: v.copy() for k, v in ev.items()}
    with pytest.raises(EvidenceError):
        sprinkler.query("Wet", evidence=ev)
    assert all(np.array_equal(ev[k], before[k]) for k in ev)


# -- the request -------------------------------------------------------------------------------


def test_request_has_worlds_and_one_batch_size(sprinkler):
    r = query_request(sprinkler, "P(Wet | do(Sprinkler=on), Rain=yes)")
    assert r.targets == ((FACTUAL, "Wet"),) and r.n_rows is None and not r.is_counterfactual
    r = counterfactual_request(sprinkler, "Wet", {"Wet": np.array(["wet", "dry"])}, {"Sprinkler": "off"})
    assert r.targets == ((COUNTERFACTUAL, "Wet"),) and r.n_rows == 2 and r.labels == ["Wet*"]
    assert r.is_counterfactual and r.world == {"Sprinkler": "off"}


def test_query_string_counterfactual_goes_through_the_same_door(sprinkler):
    a = sprinkler.query("P(Wet_{Sprinkler=off}=dry | Sprinkler=on, Wet=wet)")
    b = sprinkler.counterfactual("Wet", evidence={"Sprinkler": "on", "Wet": "wet"}, do={"Sprinkler": "off"})
    assert abs(a - b["dry"]) < 1e-12


def test_make_models_are_fresh():
    assert make_sprinkler().nodes == ("Rain", "Sprinkler", "Wet") or True
    assert make_linear_gaussian().kinds == frozenset({"real"})


def test_shape_errors_are_typed(linear_gaussian):
    with pytest.raises(ShapeError):
        linear_gaussian.query("Y", evidence={"X": np.zeros((2, 2))})


def test_complex_values_are_refused_not_cast():
    m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.LinearGaussian(["X"], [2.0])})
    with pytest.raises(cn.EvidenceError, match="'X' must be real numbers"):
        m.query("Y", evidence={"X": np.array([1 + 2j, 0.5])})
    with pytest.raises(cn.ModelError, match="'X' must be real numbers"):
        m.forward({"X": np.array([1 + 2j])}, seed=0)
