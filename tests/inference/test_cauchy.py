"""Cauchy-stable linear nodes, the Cauchy distribution and the affine-form engine.

Oracles: scipy.stats.cauchy (densities, cdf, quantiles), Monte Carlo with 10^6
draws (median and IQR = 2 scale, never the mean), and an independent dense
implementation of ``x = a + B eps`` for random scalar DAGs (hypothesis).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy import stats

import causalnet as cn
from causalnet.errors import EvidenceError, ModelError, ShapeError
from causalnet.inference.cauchy import (
    AffineCauchy,
    Cauchy,
    CauchyMarginals,
    NoClosedForm,
    affine_forms,
    cauchy_marginals,
)
from causalnet.mechanisms.cauchy import CauchyLinear
from causalnet.model import CausalModel

N_MC = 1_000_000
# sampling sd of the median is π γ / (2 √N) ≈ 1.6e-3 γ; of a quartile ≈ 2.7e-3 γ; allow ~6 sd
TOL_MEDIAN = 0.01
TOL_HALF_IQR = 0.017


def mc_check(samples, loc, scale):
    """Median and half-IQR of draws (axis 0) against an analytic Cauchy(loc, scale), in units of scale."""
    q1, med, q3 = np.percentile(samples, [25, 50, 75], axis=0)
    assert np.max(np.abs(med - loc) / scale) < TOL_MEDIAN
    assert np.max(np.abs((q3 - q1) / 2 - scale) / scale) < TOL_HALF_IQR


# -- the distribution object -------------------------------------------------------------


def test_cauchy_matches_scipy(rng):
    loc = rng.normal(size=(3, 4))
    scale = rng.uniform(0.1, 3.0, size=(3, 4))
    d = Cauchy(loc, scale)
    x = rng.standard_cauchy((3, 4)) * 5
    ref = stats.cauchy(loc, scale)
    assert_allclose(d.log_prob(x), ref.logpdf(x), rtol=1e-12, atol=0)
    assert_allclose(d.prob(x), ref.pdf(x), rtol=1e-12, atol=0)
    assert_allclose(d.cdf(x), ref.cdf(x), rtol=1e-12, atol=1e-15)
    assert_allclose(d.sf(x), ref.sf(x), rtol=1e-12, atol=1e-15)
    q = rng.uniform(size=(3, 4))
    assert_allclose(d.ppf(q), ref.ppf(q), rtol=1e-10, atol=1e-12)
    assert_allclose(d.entropy(), ref.entropy(), rtol=1e-12, atol=0)
    assert_allclose(d.median, loc, rtol=0, atol=0)
    assert_allclose(d.iqr, ref.ppf(0.75) - ref.ppf(0.25), rtol=1e-12, atol=0)
    assert d.quantiles([0.25, 0.5, 0.75]).shape == (3, 4, 3)
    assert_allclose(d.quantiles([0.5])[..., 0], loc, rtol=0, atol=1e-15)


def test_prob_greater_is_the_ovr_formula(rng):
    loc = rng.normal(size=(2, 5)) * 3
    scale = rng.uniform(0.2, 2.0, size=(2, 5))
    c = rng.normal(size=5)                                  # per-class thresholds broadcast
    p = Cauchy(loc, scale).prob_greater(c)
    assert_allclose(p, 0.5 + np.arctan((loc - c) / scale) / np.pi, rtol=1e-12, atol=1e-15)
    assert_allclose(p, stats.cauchy(loc, scale).sf(c), rtol=1e-12, atol=1e-15)


def test_tails_have_no_cancellation():
    d = Cauchy(0.0, 1.0)
    far = 1e12
    # P(X > 1e12) = atan(1/1e12)/π ≈ 3.18e-13; 1/2 + atan(-1e12)/π loses all digits
    assert_allclose(d.sf(far), 1 / (np.pi * far), rtol=1e-9, atol=0)
    assert_allclose(d.cdf(-far), 1 / (np.pi * far), rtol=1e-9, atol=0)
    assert np.isfinite(d.log_prob(1e200))


def test_cauchy_sample_median_and_iqr(seed):
    d = Cauchy([1.0, -2.0], [0.5, 3.0], method="test")
    x = d.sample(N_MC, seed=seed)
    assert x.shape == (N_MC, 2)
    mc_check(x, d.loc, d.scale)
    assert_allclose(d.sample(5, seed=seed), d.sample(5, seed=seed), rtol=0, atol=0)
    assert d.method == "test"
    assert d[1].shape == () and float(d[1].loc) == -2.0


@pytest.mark.parametrize("scale", [0.0, -1.0, np.nan, np.inf])
def test_cauchy_rejects_bad_scales(scale):
    with pytest.raises(ModelError, match="scale must be finite and > 0"):
        Cauchy(0.0, scale)


def test_cauchy_rejects_bad_loc_and_levels():
    with pytest.raises(ModelError, match="loc must be finite"):
        Cauchy([0.0, np.nan], 1.0)
    with pytest.raises(ModelError, match="quantile levels"):
        Cauchy(0.0, 1.0).ppf(1.5)
    assert Cauchy(0.0, 1.0).ppf(1.0) == np.inf and Cauchy(0.0, 1.0).ppf(0.0) == -np.inf


# -- the mechanism ------------------------------------------------------------------------


def test_mechanism_shapes_and_values(rng):
    W = rng.normal(size=(3, 4))
    m = CausalModel({
        "A": CauchyLinear(shape=(2, 4)),
        "B": CauchyLinear(["A"], [W], loc=1.0, scale=0.0),      # (2, 3)
        "c": CauchyLinear(["B"], [np.ones(3)], scale=0.5),     # (2,)
    })
    assert m.spec("B").shape == (2, 3) and m.spec("c").shape == (2,)
    assert m.mechanisms["A"].kind == "cauchy" and m.mechanisms["B"].deterministic
    a = rng.normal(size=(5, 2, 4))
    tr = m.forward({"A": a}, seed=0)
    assert_allclose(tr["B"], a @ W.T + 1.0, rtol=1e-13, atol=1e-13)
    eps = tr.noise["c"]
    assert_allclose(tr["c"], (a @ W.T + 1.0).sum(-1) + 0.5 * eps, rtol=1e-12, atol=1e-12)
    mech = m.mechanisms["c"]
    assert_allclose(mech.abduct("c", tr["c"], {"B": tr["B"]}, m.spec("c")), eps, rtol=1e-9, atol=1e-9)


def test_mechanism_log_prob_matches_scipy(rng):
    m = CausalModel({"X": CauchyLinear(scale=2.0), "Y": CauchyLinear(["X"], [3.0], loc=1.0, scale=0.5)})
    x = rng.standard_cauchy(7)
    y = rng.standard_cauchy(7)
    lp = m.log_prob({"X": x, "Y": y})
    ref = stats.cauchy(0, 2).logpdf(x) + stats.cauchy(1 + 3 * x, 0.5).logpdf(y)
    assert_allclose(lp, ref, rtol=1e-12, atol=1e-12)


def test_scale_parent_feeds_the_noise(rng):
    m = CausalModel({
        "s": cn.LinearGaussian(),
        "pos": cn.Function(["s"], lambda s: np.abs(s) + 0.1),
        "U": CauchyLinear(loc_parent="s", scale_parent="pos"),
    })
    s = rng.normal(size=4)
    tr = m.forward({"s": s}, noise={"U": np.ones(4)})
    assert_allclose(tr["U"], s + np.abs(s) + 0.1, rtol=1e-13, atol=1e-13)
    d = cauchy_marginals(m, "U", evidence={"s": s})["U"]
    assert_allclose(d.loc, s, rtol=0, atol=1e-15)
    assert_allclose(d.scale, np.abs(s) + 0.1, rtol=1e-13, atol=0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(parents=["X"], weights=[np.nan]), "weights must be finite"),
    (dict(parents=["X"], weights=[np.ones((1, 1, 1))]), "a weight is a scalar"),
    (dict(parents=["X"], weights=[1.0, 2.0]), "2 weights for 1 linear parents"),
    (dict(scale=-1.0), "scale must be finite and >= 0"),
    (dict(scale=np.nan), "scale must be finite and >= 0"),
    (dict(loc=np.inf), "loc must be finite"),
])
def test_mechanism_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ModelError, match=match):
        CauchyLinear(**kwargs)


def test_mechanism_rejects_misfit_parents():
    with pytest.raises(ShapeError, match="does not fit parent 'A'"):
        CausalModel({"A": CauchyLinear(shape=(3,)), "B": CauchyLinear(["A"], [np.ones((2, 4))])})
    with pytest.raises(ShapeError, match="gives shape"):
        CausalModel({"A": CauchyLinear(shape=(3,)), "C": CauchyLinear(shape=(2,)),
                     "B": CauchyLinear(["A", "C"], [1.0, 1.0])})
    with pytest.raises(ModelError, match="expected a real or tensor node"):
        CausalModel({"D": cn.Categorical([0.5, 0.5]), "B": CauchyLinear(["D"], [1.0])})
    with pytest.raises(ShapeError, match="loc of shape"):
        CausalModel({"A": CauchyLinear(loc=np.zeros(3), shape=(2,))})


def test_negative_scale_parent_is_an_error():
    m = CausalModel({"s": cn.LinearGaussian(), "U": CauchyLinear(scale_parent="s")})
    with pytest.raises(ModelError, match="scale parent 's' must be finite and >= 0"):
        m.forward({"s": np.array([1.0, -1.0])}, seed=0)


# -- the engine against Monte Carlo --------------------------------------------------------


@pytest.fixture
def shared_sources():
    """X = U + V and Y = U - V share sources; Z = X + Y = 2U + 5."""
    return CausalModel({
        "U": CauchyLinear(loc=1.0, scale=1.0), "V": CauchyLinear(loc=-2.0, scale=3.0),
        "X": CauchyLinear(["U", "V"], [1.0, 1.0], scale=0.0),
        "Y": CauchyLinear(["U", "V"], [1.0, -1.0], scale=0.5),
        "Z": CauchyLinear(["X", "Y"], [1.0, 1.0], loc=5.0, scale=0.0),
    })


def test_shared_sources_against_monte_carlo(shared_sources, seed):
    d = cauchy_marginals(shared_sources, ["X", "Y", "Z"])
    assert d["Z"].method == "cauchy-affine (exact)"
    # exact: Z = 2U + 0.5 eps_Y + 5 -> Cauchy(2·1 + 5 + (-2) - (-2), 2 + 0.5)
    assert_allclose([float(d["Z"].loc), float(d["Z"].scale)], [7.0, 2.5], rtol=0, atol=1e-14)
    s = shared_sources.sample(N_MC, seed=seed)
    for k in "XYZ":
        mc_check(s[k], d[k].loc, d[k].scale)
    # the independent-sum formula (|w|·scale of the parents) is wrong here, and Monte Carlo says so
    naive = abs(1.0) * float(d["X"].scale) + abs(1.0) * float(d["Y"].scale)
    q1, q3 = np.percentile(s["Z"], [25, 75])
    assert abs((q3 - q1) / 2 - naive) / naive > 0.5


@pytest.fixture
def vector_dag(rng):
    W1 = rng.normal(size=(3, 4))
    W2 = rng.normal(size=(2, 3))
    return CausalModel({
        "A": CauchyLinear(scale=rng.uniform(0.5, 2.0, size=(2, 4))),
        "B": CauchyLinear(["A"], [W1], scale=0.3),                             # (2, 3)
        "C": CauchyLinear(["A", "B"], [W2 @ W1, -W2], loc=1.0, scale=0.0),     # A cancels: -0.3 W2 eps_B
        "D": CauchyLinear(["C"], [rng.normal(size=2)], scale=0.0),             # (2,) contraction
        "E": CauchyLinear(["D"], [rng.normal(size=(5, 2))], scale=0.1),        # mixes the old lead axis
        "F": CauchyLinear(["A", "B"], [1.0, rng.normal(size=(4, 3))], scale=0.0),  # terms with r = 0 and 1
        "G": CauchyLinear(["B", "D"], [np.ones(3), 2.0], scale=0.0),
    })


def test_vector_dag_against_monte_carlo(vector_dag, seed):
    names = list("BCDEFG")
    d = cauchy_marginals(vector_dag, names)
    s = vector_dag.sample(N_MC, seed=seed)
    for k in names:
        mc_check(s[k], d[k].loc, d[k].scale)


def test_factorised_scale_equals_dense_sum(vector_dag):
    for k, f in affine_forms(vector_dag, list("BCDEFG")).items():
        a, B, labels = f.dense()
        assert B.shape[-1] == len(labels)
        assert_allclose(f.scale_array(), np.abs(B).sum(-1), rtol=1e-12, atol=1e-12, err_msg=k)


def test_cancelling_sources_leave_no_trace(vector_dag):
    f = affine_forms(vector_dag, ["C"])["C"]
    _, B, labels = f.dense()
    from_A = [i for i, (g, _) in enumerate(labels) if g == "A"]
    assert_allclose(B[..., from_A], 0.0, rtol=0, atol=1e-12)


def test_linear_functionals_of_dependent_nodes(shared_sources, seed):
    f = affine_forms(shared_sources, ["X", "Y"])
    diff = (f["X"] - f["Y"]) * 0.5 + 1.0                  # = V + 1 - 0.25 eps_Y ... exactly
    d = diff.marginal()
    s = shared_sources.sample(N_MC, seed=seed)
    mc_check(0.5 * (s["X"] - s["Y"]) + 1.0, d.loc, d.scale)
    assert isinstance(diff, AffineCauchy)
    assert_allclose([float(d.loc), float(d.scale)], [-1.0, 3.25], rtol=0, atol=1e-14)


def test_batched_evidence_and_do(seed):
    m = CausalModel({
        "x": cn.LinearGaussian(),
        "U": CauchyLinear(shape=(2,), scale=[1.0, 2.0]),
        "S": CauchyLinear(["U"], [np.array([1.0, -1.0])], scale=0.0),
        "T": CauchyLinear(["S"], [3.0], loc_parent="x", scale=1.0),
    })
    x = np.array([0.0, 1.0, -2.0])
    d = cauchy_marginals(m, ["T"], evidence={"x": x})["T"]
    assert d.loc.shape == (3,)
    assert_allclose(d.loc, x, rtol=0, atol=1e-15)
    assert_allclose(d.scale, np.full(3, 3 * 3.0 + 1.0), rtol=1e-14, atol=0)
    # per-row do on U: S is then known, T = 3 S + x + eps
    u = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    d2 = cauchy_marginals(m, ["T"], evidence={"x": x}, do={"U": u})["T"]
    assert_allclose(d2.loc, 3 * (u[:, 0] - u[:, 1]) + x, rtol=0, atol=1e-14)
    assert_allclose(d2.scale, 1.0, rtol=0, atol=1e-15)
    tr = m.do({"U": u[0]}).forward({"x": np.full(N_MC, x[0])}, seed=seed)
    d3 = cauchy_marginals(m, ["T"], evidence={"x": x[0]}, do={"U": u[0]})["T"]
    mc_check(tr["T"], d3.loc, d3.scale)


def test_query_dispatches_to_the_engine(shared_sources):
    got = shared_sources.query("Z")
    assert isinstance(got, Cauchy) and got.method == "cauchy-affine (exact)"
    assert_allclose([float(got.loc), float(got.scale)], [7.0, 2.5], rtol=0, atol=1e-14)
    both = shared_sources.query(["X", "Z"])              # a result object that reads like the dict it replaced
    assert isinstance(both, CauchyMarginals) and set(both) == {"X", "Z"} and list(both) == ["X", "Z"]
    assert both.method == "cauchy-affine (exact)" and both.query == "P(X, Z)"
    want = cauchy_marginals(shared_sources, ["X", "Z"])
    for v in ("X", "Z"):
        assert_allclose([float(both[v].loc), float(both[v].scale)], [float(want[v].loc), float(want[v].scale)],
                        rtol=0, atol=0)
    assert dict(both.items()).keys() == {"X", "Z"} and "X" in both and len(both) == 2


def test_no_closed_form_is_a_clear_error(shared_sources):
    with pytest.raises(NoClosedForm, match="evidence on 'X', which depends on Cauchy noise"):
        cauchy_marginals(shared_sources, ["Z"], evidence={"X": 1.0})
    with pytest.raises(NoClosedForm, match="evidence on 'U'"):
        cauchy_marginals(shared_sources, ["Z"], evidence={"U": 1.0})
    got = shared_sources.query("Z", evidence={"Y": 1.0}, n_samples=2000, seed=0)   # the registry then samples
    assert not isinstance(got, Cauchy)
    assert "linear-Cauchy" in got.method and "depends on Cauchy noise" in got.method   # and says why
    with pytest.raises(NoClosedForm, match="shift intervention"):
        cauchy_marginals(shared_sources, ["Z"], do={"X": lambda x: x + 1})
    with pytest.raises(NoClosedForm, match="point mass"):
        cauchy_marginals(shared_sources.do({"U": 1.0, "V": 2.0}), ["X"])
    with pytest.raises(NoClosedForm, match="intervened on"):
        cauchy_marginals(shared_sources, ["X"], do={"X": 1.0})


def test_non_cauchy_inputs_must_be_known():
    m = CausalModel({
        "g": cn.LinearGaussian(),
        "U": CauchyLinear(loc_parent="g"),
        "h": cn.Function(["U"], lambda u: u ** 2),
        "W": CauchyLinear(["h"], [1.0]),
    })
    with pytest.raises(NoClosedForm, match="'g' .* is random, not Cauchy, and not observed"):
        cauchy_marginals(m, ["U"])
    assert float(cauchy_marginals(m, ["U"], evidence={"g": 2.0})["U"].loc) == 2.0
    with pytest.raises(NoClosedForm, match="non-linear function of Cauchy node 'U'"):
        cauchy_marginals(m, ["W"], evidence={"g": 2.0})
    with pytest.raises(NoClosedForm, match="not a Cauchy node"):
        cauchy_marginals(m, ["g"])
    with pytest.raises(EvidenceError, match="unknown node"):
        cauchy_marginals(m, ["U"], evidence={"nope": 1.0})


# -- property: the engine equals an independent dense computation on random scalar DAGs ---------


@st.composite
def scalar_cauchy_dags(draw):
    k = draw(st.integers(2, 7))
    mechs, info = {}, {}
    for i in range(k):
        parents = [f"v{j}" for j in range(i) if draw(st.booleans())]
        w = [draw(st.floats(-3, 3, allow_nan=False)) for _ in parents]
        loc = draw(st.floats(-5, 5, allow_nan=False))
        scale = draw(st.sampled_from([0.0, 0.5, 1.0, 2.5]))
        mechs[f"v{i}"] = CauchyLinear(parents, w, loc=loc, scale=scale)
        info[f"v{i}"] = (parents, w, loc, scale)
    return CausalModel(mechs), info


def _dense_oracle(info):
    """a + B eps by a direct pass: B_v = Σ w_p B_p + s_v e_v."""
    names = list(info)
    a, B = {}, {}
    for i, v in enumerate(names):
        parents, w, loc, scale = info[v]
        a[v] = loc + sum(wi * a[p] for p, wi in zip(parents, w))
        row = np.zeros(len(names))
        for p, wi in zip(parents, w):
            row = row + wi * B[p]
        row[i] += scale
        B[v] = row
    return a, {v: np.abs(B[v]).sum() for v in names}


@settings(max_examples=60, deadline=None)
@given(scalar_cauchy_dags())
def test_engine_equals_dense_oracle(dag):
    m, info = dag
    a, scale = _dense_oracle(info)
    forms = affine_forms(m, list(info))
    for v in info:
        assert_allclose(forms[v].loc[0], a[v], rtol=1e-12, atol=1e-12)
        assert_allclose(forms[v].scale_array()[0], scale[v], rtol=1e-12, atol=1e-12)
        if scale[v] > 1e-12:
            d = cauchy_marginals(m, [v])[v]
            assert_allclose(d.scale, scale[v], rtol=1e-12, atol=1e-12)
