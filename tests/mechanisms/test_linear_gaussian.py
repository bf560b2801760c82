"""Tests for causalnet.mechanisms.gaussian: LinearGaussian.

Oracle: scipy.stats.norm (density), the closed form ``bias + w · pa + sigma · u``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import ModelError, NumericalError
from causalnet.mechanisms.base import Spec

SPECS = {"X": Spec("real"), "Z": Spec("real")}


def test_evaluate_and_log_prob_match_the_closed_form_and_scipy(rng):
    lg = cn.LinearGaussian(["X", "Z"], [1.5, -0.5], bias=2.0, sigma=0.7)
    spec = lg.spec("Y", SPECS)
    pa = {"X": rng.normal(size=100), "Z": rng.normal(size=100)}
    u = rng.standard_normal(100)
    mu = 2.0 + 1.5 * pa["X"] - 0.5 * pa["Z"]
    y = lg.evaluate("Y", pa, u, spec, n=100)
    assert_allclose(y, mu + 0.7 * u, rtol=1e-14, atol=1e-14)
    assert_allclose(lg.log_prob("Y", y, pa, spec), st.norm(mu, 0.7).logpdf(y), rtol=1e-12, atol=1e-12)
    assert_allclose(lg.abduct("Y", y, pa, spec), u, rtol=1e-12, atol=1e-12)


def test_sampling_moments(seed):
    m = cn.CausalModel({"X": cn.LinearGaussian(bias=1.0, sigma=2.0), "Y": cn.LinearGaussian(["X"], [3.0], sigma=0.5)})
    y = m.sample(200_000, seed=seed)["Y"]
    assert abs(y.mean() - 3.0) < 0.05 and abs(y.std() - np.hypot(6.0, 0.5)) < 0.05


def test_sigma_zero_is_deterministic_and_has_no_density():
    lg = cn.LinearGaussian(["X"], [2.0], bias=1.0, sigma=0.0)
    spec = lg.spec("Y", SPECS)
    assert lg.deterministic and lg.sample_noise(3, np.random.default_rng(0), spec) is None
    assert_allclose(lg.evaluate("Y", {"X": np.array([0.0, 1.0])}, None, spec), [1.0, 3.0], rtol=0, atol=0)
    with pytest.raises(ModelError, match=r"node 'Y' is deterministic \(sigma = 0\)"):
        lg.log_prob("Y", np.array([1.0]), {"X": np.array([0.0])}, spec)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(parents=["X"], weights=[1 + 1j]), r"weights must be real, got complex"),
    (dict(parents=["X"], weights=["a"]), r"weights must hold real numbers"),
    (dict(parents=["X"], weights=None), r"weights must hold real numbers"),
    (dict(parents=["X"], weights=[np.inf]), r"weights must be finite, got inf"),
    (dict(parents=["X", "Z"], weights=[[1.0], [2.0]]), r"2 weights for 2 parents; expected shape \(2,\)"),
    (dict(parents=["X"], weights=[1.0, 2.0]), r"2 weights for 1 parents"),
    (dict(bias=1j), r"bias must be real, got complex"),
    (dict(bias="a"), r"bias must hold real numbers"),
    (dict(bias=[1.0, 2.0]), r"bias must be a real number, got an array of shape \(2,\)"),
    (dict(bias=np.nan), r"bias must be finite, got nan"),
    (dict(sigma=-1.0), r"sigma must be >= 0, got -1\.0"),
    (dict(sigma=np.inf), r"sigma must be finite"),
    (dict(sigma=1j), r"sigma must be real"),
    (dict(sigma=None), r"sigma must hold real numbers"),
    (dict(sigma=[1.0, 2.0]), r"sigma must be a real number"),
])
def test_bad_parameters_are_refused(kwargs, fragment):
    with pytest.raises(ModelError, match=r"LinearGaussian over parents .*: " + fragment):
        cn.LinearGaussian(**kwargs)


def test_overflow_from_finite_input_is_a_numerical_error():
    m = cn.CausalModel({"X": cn.LinearGaussian(sigma=1e308)})
    with pytest.raises(NumericalError, match=r"node 'X': its structural equation gave (inf|-inf)"):
        m.sample(100, seed=0)


def test_tensor_parents_are_refused():
    with pytest.raises(ModelError, match=r"LinearGaussian 'Y': parent 'V' is tensor \(n, 2\); expected a scalar"):
        cn.CausalModel({"V": cn.CauchyLinear(shape=(2,)), "Y": cn.LinearGaussian(["V"], [1.0])})
