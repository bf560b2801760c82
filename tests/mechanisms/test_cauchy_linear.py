"""Tests for causalnet.mechanisms.cauchy: the CauchyLinear mechanism.

Oracle: scipy.stats.cauchy (density of each component, summed over components).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import ModelError, NumericalError, ShapeError
from causalnet.mechanisms.base import Spec

SPECS = {"X": Spec("real"), "V": Spec("tensor", shape=(3,)), "S": Spec("tensor", shape=(2,))}


def test_scalar_log_prob_matches_scipy(rng):
    c = cn.CauchyLinear(["X"], [2.0], loc=0.5, scale=1.5)
    spec = c.spec("Y", SPECS)
    pa = {"X": rng.normal(size=40)}
    u = c.sample_noise(40, rng, spec)
    y = c.evaluate("Y", pa, u, spec, n=40)
    assert_allclose(y, 0.5 + 2.0 * pa["X"] + 1.5 * u, rtol=1e-14, atol=1e-13)
    assert_allclose(c.log_prob("Y", y, pa, spec), st.cauchy(0.5 + 2 * pa["X"], 1.5).logpdf(y), rtol=1e-12, atol=1e-12)
    assert_allclose(c.abduct("Y", y, pa, spec), u, rtol=1e-9, atol=1e-12)


def test_vector_node_with_a_scale_parent(rng):
    W = np.array([[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]])
    c = cn.CauchyLinear(["V"], [W], loc=[0.0, 1.0], scale=2.0, scale_parent="S")
    spec = c.spec("Y", SPECS)
    assert spec.shape == (2,)
    pa = {"V": rng.normal(size=(10, 3)), "S": rng.uniform(0.5, 2.0, size=(10, 2))}
    y = c.evaluate("Y", pa, c.sample_noise(10, rng, spec), spec, n=10)
    loc, scale = pa["V"] @ W.T + [0.0, 1.0], 2.0 * pa["S"]
    assert_allclose(c.log_prob("Y", y, pa, spec), st.cauchy(loc, scale).logpdf(y).sum(axis=1), rtol=1e-12)
    with pytest.raises(ModelError, match=r"node 'Y': its scale parent 'S' must be finite and >= 0, got -1\.0"):
        c.noise_scale("Y", {"S": np.array([[1.0, -1.0]])})


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(scale=-1.0), r"scale must be finite and >= 0, got -1\.0"),
    (dict(scale=[1.0, np.nan]), r"scale must be finite and >= 0, got nan at \(1,\)"),
    (dict(scale=np.inf), r"scale must be finite and >= 0, got inf"),
    (dict(scale=1j), r"scale must be real, got complex"),
    (dict(scale="a"), r"scale must hold real numbers"),
    (dict(scale=[]), r"scale must not be empty"),
    (dict(loc=1j), r"loc must be real"),
    (dict(loc=np.nan), r"loc must be finite"),
    (dict(parents=["X"], weights=[1j]), r"weights must be real"),
    (dict(parents=["X"], weights=[np.zeros((1, 1, 1))]), r"a weight is a scalar"),
    (dict(parents=["X"], weights=[[]]), r"a weight must not be empty"),
    (dict(parents=["X"], weights={"Q": 1.0}), r"weights given for \['Q'\]"),
    (dict(shape=(-1,)), r"shape must be a tuple of positive ints"),
    (dict(shape="ab"), r"shape must be a tuple of positive ints"),
    (dict(parents=["X"], loc_parent="X"), r"listed twice"),
])
def test_bad_parameters_are_refused(kwargs, fragment):
    with pytest.raises(ModelError, match=fragment):
        cn.CauchyLinear(**kwargs)


def test_an_int_shape_is_a_vector():
    assert cn.CauchyLinear(shape=3).shape == (3,)


def test_shape_mismatch_is_a_shape_error():
    with pytest.raises(ShapeError, match=r"weight of shape \(2,\) does not fit parent 'V' of shape \(n, 3\)"):
        cn.CauchyLinear(["V"], [np.ones(2)]).spec("Y", SPECS)


def test_overflow_is_a_numerical_error():
    m = cn.CausalModel({"X": cn.CauchyLinear(scale=1e308)})
    with pytest.raises(NumericalError, match=r"node 'X'"):
        m.sample(10_000, seed=0)
