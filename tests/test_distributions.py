"""Tests for causalnet.distributions: the query results.

Oracles: scipy.stats (multivariate_normal densities, a mixture's density by
summation), brute-force sums over the probability table, numpy's weighted moments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian, GaussianMixture
from causalnet.errors import EvidenceError, ModelError, NumericalError

JOINT = np.array([[0.1, 0.2, 0.05], [0.3, 0.25, 0.1]])         # P(A, B): A in {a0, a1}, B in {x, y, z}
STATES = (("a0", "a1"), ("x", "y", "z"))


def test_marginal_and_indexing_by_brute_force():
    d = DiscreteDistribution(("A", "B"), JOINT, STATES)
    assert_allclose(d.marginal("B").probs, [JOINT[:, j].sum() for j in range(3)], rtol=0, atol=1e-15)
    assert_allclose(d.marginal(["B", "A"]).probs, JOINT.T, rtol=0, atol=0)
    assert d["a1", "y"] == 0.25 and d.prob("a0", "z") == 0.05 and d[1, 0] == 0.3
    assert d.map() == ("a1", "x")
    with pytest.raises(EvidenceError, match=r"'B' has no state 'w'"):
        _ = d["a0", "w"]
    with pytest.raises(EvidenceError, match="one state per variable"):
        _ = d["a0"]


def test_batched_map_and_marginal():
    probs = np.stack([JOINT, JOINT[::-1]])                        # (2, 2, 3)
    d = DiscreteDistribution(("A", "B"), probs, STATES, batched=True)
    assert list(d.map()) == [("a1", "x"), ("a0", "x")]
    assert_allclose(d.marginal("A").probs, probs.sum(axis=2), rtol=0, atol=1e-15)


def test_reprs_print_the_query_and_tables():
    single = DiscreteDistribution(("Wet",), [0.25, 0.75], (("dry", "wet"),), query="P(Wet | do(Sprinkler=on))")
    assert repr(single) == "<DiscreteDistribution P(Wet | do(Sprinkler=on)) {dry: 0.25, wet: 0.75} method='exact'>"
    joint = str(DiscreteDistribution(("A", "B"), JOINT, STATES))
    assert joint.splitlines()[0] == "P(A, B)  method='exact'"
    assert joint.splitlines()[1].split() == ["a0,x", "a0,y", "a0,z", "a1,x", "a1,y", "a1,z"]
    big = DiscreteDistribution(("W",), np.full((100, 2), 0.5), (("dry", "wet"),), batched=True)
    lines = repr(big).splitlines()
    assert len(lines) == 2 + 11 and lines[-1].split() == ["99", "0.5", "0.5"] and "..." in lines[7]


def test_to_pandas_shapes_and_values():
    single = DiscreteDistribution(("Wet",), [0.25, 0.75], (("dry", "wet"),))
    s = single.to_pandas()
    assert isinstance(s, pd.Series) and s["wet"] == 0.75 and s.name == "P(Wet)"
    joint = DiscreteDistribution(("A", "B"), JOINT, STATES).to_pandas()
    assert joint[("a1", "z")] == 0.1 and joint.index.names == ["A", "B"]
    batched = DiscreteDistribution(("A", "B"), np.stack([JOINT, JOINT]), STATES, batched=True).to_pandas()
    assert batched.shape == (2, 6) and batched.loc[1, ("a0", "y")] == 0.2
    g = Gaussian(("X", "Y"), [[1.0, 2.0], [3.0, 4.0]], [[1.0, 0.0], [0.0, 9.0]], batched=True).to_pandas()
    assert g.loc[1, ("mean", "X")] == 3.0 and g.loc[0, ("sd", "Y")] == 3.0


def test_results_from_a_model_print_and_convert(sprinkler):
    d = sprinkler.query("Wet", evidence={"Rain": np.array([0, 1, 1])})
    assert d.to_pandas().shape == (3, 2)
    assert len(str(d).splitlines()) == 5


def test_gaussian_log_prob_and_marginal_against_scipy(rng):
    mean, cov = np.array([1.0, -2.0, 0.5]), np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
    g = Gaussian(("X", "Y", "Z"), mean, cov)
    x = rng.normal(size=(20, 3))
    assert_allclose(g.log_prob(x), st.multivariate_normal(mean, cov).logpdf(x), rtol=1e-12)
    m = g.marginal(["Z", "X"])
    assert_allclose(m.log_prob(x[:, [2, 0]]), st.multivariate_normal(mean[[2, 0]], cov[np.ix_([2, 0], [2, 0])])
                    .logpdf(x[:, [2, 0]]), rtol=1e-12)
    assert_allclose(g["Y"].log_prob(0.3), st.norm(-2.0, 1.0).logpdf(0.3), rtol=1e-12)
    draws = g.sample(100_000, seed=0)
    assert_allclose(draws.mean(axis=0), mean, atol=0.03, rtol=0)
    assert_allclose(np.cov(draws.T), cov, atol=0.03, rtol=0)


def test_mixture_against_scipy(rng):
    w, means = np.array([0.3, 0.7]), np.array([[0.0], [3.0]])
    covs = np.array([[[1.0]], [[0.25]]])
    gm = GaussianMixture(("X",), w, means, covs)
    x = rng.normal(size=(10, 1)) * 2
    want = np.log(0.3 * st.norm(0, 1).pdf(x[:, 0]) + 0.7 * st.norm(3, 0.5).pdf(x[:, 0]))
    assert_allclose(gm.log_prob(x), want, rtol=1e-12)
    assert_allclose(gm.mean, [2.1], rtol=1e-14)
    assert_allclose(gm.cov, [[0.3 * 1 + 0.7 * 0.25 + 0.3 * 0 + 0.7 * 9 - 2.1 ** 2]], rtol=1e-12)
    assert gm.to_pandas().shape == (2, 3)          # weight, mean X, var X


def test_empirical_moments_against_numpy(rng):
    x = rng.normal(size=1000)
    w = rng.random(1000)
    w /= w.sum()
    e = EmpiricalDistribution(("X",), {"X": x}, w)
    assert_allclose(e.mean(), np.average(x, weights=w), rtol=1e-12)
    assert_allclose(e.var(), np.average((x - np.average(x, weights=w)) ** 2, weights=w), rtol=1e-12)
    assert_allclose(e.ess, 1 / np.sum(w ** 2), rtol=1e-12)
    assert e.quantile(0.5) == pytest.approx(np.median(x), abs=0.15)
    frame = e.to_pandas()
    assert list(frame.columns) == ["X", "weight"] and len(frame) == 1000


def test_batched_empirical_and_tensor_columns(rng):
    e = EmpiricalDistribution(("X", "T"), {"X": rng.normal(size=(3, 5)), "T": rng.normal(size=(3, 5, 2))},
                              np.full((3, 5), 0.2), batched=True, query="P(X, T | Z)")
    frame = e.to_pandas()
    assert list(frame.columns) == ["row", "draw", "X", "T[0]", "T[1]", "weight"] and len(frame) == 15
    assert str(e).splitlines()[0].startswith("P(X, T | Z)")


@pytest.mark.parametrize("make, fragment", [
    (lambda: DiscreteDistribution(("A",), [np.nan, 1.0], (("x", "y"),)), r"probs holds NaN or inf \(1 of 2"),
    (lambda: Gaussian(("X",), [np.inf], [[1.0]]), "mean holds NaN or inf"),
    (lambda: EmpiricalDistribution(("X",), {"X": np.zeros(2)}, [0.0, 0.0]), "positive total"),
    (lambda: EmpiricalDistribution(("X",), {"X": np.zeros(2)}, [np.nan, 1.0]), "weights holds NaN"),
    (lambda: GaussianMixture(("X",), [1.0], [[np.nan]], [[[1.0]]]), "means holds NaN"),
])
def test_results_never_hold_nan(make, fragment):
    with pytest.raises(NumericalError, match=fragment):
        make()


def test_shape_mismatch_is_a_model_error_naming_probs():
    with pytest.raises(ModelError, match=r"probs must have shape \(3,\) .* got \(2,\)"):
        DiscreteDistribution(("A",), [0.5, 0.5], (("x", "y", "z"),))


def test_query_results_have_no_nan_on_a_degenerate_model():
    m = cn.CausalModel({"A": cn.Categorical([1.0, 0.0]), "B": cn.CPT(["A"], [[0.0, 1.0], [1.0, 0.0]])})
    d = m.query("B", evidence={"A": 0})
    assert np.all(np.isfinite(d.probs)) and d[1] == 1.0


def test_mixture_cdf_sample_and_per_row_means_against_scipy(rng):
    w, means = np.array([0.2, 0.5, 0.3]), np.array([[-1.0], [0.5], [4.0]])
    sds = np.array([0.5, 1.0, 2.0])
    gm = GaussianMixture(("X",), w, means, (sds ** 2)[:, None, None])
    x = np.linspace(-3, 8, 7)
    assert_allclose(gm.cdf(x), sum(wk * st.norm(m, s).cdf(x) for wk, m, s in zip(w, means[:, 0], sds)), rtol=1e-12)
    assert_allclose(gm.pdf(x), sum(wk * st.norm(m, s).pdf(x) for wk, m, s in zip(w, means[:, 0], sds)), rtol=1e-12)
    assert_allclose(gm.variances[:, 0], sds ** 2)
    draws = gm.sample(200_000, seed=1)[:, 0]
    assert abs(draws.mean() - gm.mean[0]) < 5 * np.sqrt(gm.var[0] / draws.size)
    assert abs(draws.var() - gm.var[0]) < 0.05 * gm.var[0]
    # batched, one set of component means per row
    rows = rng.normal(size=(4, 3, 1))
    wb = rng.dirichlet(np.ones(3), size=4)
    gb = GaussianMixture(("X",), wb, rows, (sds ** 2)[:, None, None], batched=True)
    for i in range(4):
        one = GaussianMixture(("X",), wb[i], rows[i], (sds ** 2)[:, None, None])
        assert_allclose([gb.mean[i, 0], gb.var[i, 0], gb.cdf(np.full(4, 0.3))[i]],
                        [one.mean[0], one.var[0], one.cdf(0.3)], rtol=1e-12)
    assert gb.sample(5, seed=0).shape == (5, 4, 1)
