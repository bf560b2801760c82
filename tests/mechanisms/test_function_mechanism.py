"""Tests for causalnet.mechanisms.function: Function (additive scipy noise) and Deterministic.

Oracle: scipy.stats (the noise law's density at ``x - f(pa)``), the function itself.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import ModelError, ShapeError
from causalnet.mechanisms.base import Spec

SPECS = {"X": Spec("real"), "Z": Spec("real")}


def test_function_log_prob_is_the_noise_density(rng):
    f = cn.Function(["X", "Z"], lambda x, z: x * z, noise=st.laplace(0.5, 2.0))
    spec = f.spec("Y", SPECS)
    pa = {"X": rng.normal(size=50), "Z": rng.normal(size=50)}
    u = f.sample_noise(50, rng, spec)
    y = f.evaluate("Y", pa, u, spec, n=50)
    assert_allclose(y, pa["X"] * pa["Z"] + u, rtol=1e-14, atol=1e-14)
    assert_allclose(f.log_prob("Y", y, pa, spec), st.laplace(0.5, 2.0).logpdf(u), rtol=1e-12, atol=1e-12)
    assert_allclose(f.abduct("Y", y, pa, spec), u, rtol=1e-12, atol=1e-12)


def test_a_discrete_noise_law_uses_its_mass():
    f = cn.Function(["X"], lambda x: x, noise=st.poisson(2.0))
    spec = f.spec("Y", SPECS)
    lp = f.log_prob("Y", np.array([3.0]), {"X": np.array([1.0])}, spec)
    assert_allclose(lp, st.poisson(2.0).logpmf([2]), rtol=1e-14)


def test_a_constant_output_is_broadcast_to_the_batch():
    f = cn.Function(["X"], lambda x: 3.0)
    out = f.evaluate("Y", {"X": np.zeros(4)}, None, f.spec("Y", SPECS), n=4)
    assert_allclose(out, [3.0] * 4, rtol=0, atol=0)


def _model(fn, **kw):
    return cn.CausalModel({"X": cn.LinearGaussian(sigma=1.0), "Y": cn.Function(["X"], fn, **kw)})


@pytest.mark.parametrize("fn, exc, fragment", [
    (lambda x: np.log(x - 100), ModelError, r"node 'Y': its function gave nan \(row 0\) from finite inputs"),
    (lambda x: x / 0.0 + 1, ModelError, r"node 'Y': its function gave (-?inf|nan)"),
    (lambda x: np.ones((len(x), 2)), ShapeError, r"node 'Y' expects \(n,\) from its function with n = 5, got \(5, 2\)"),
    (lambda x: np.ones(3), ShapeError, r"node 'Y' expects \(n,\) .* got \(3,\)"),
    (lambda x: x * 1j, ModelError, r"the function of node 'Y' must return real numbers, got dtype complex128"),
    (lambda x: "a", ModelError, r"the function of node 'Y' must return real numbers, got dtype <U1"),
    (lambda x: x > 0, ModelError, r"the function of node 'Y' must return real numbers, got dtype bool"),
    (lambda x: [None] * len(x), ModelError, r"node 'Y'"),
    (lambda x: 1 / 0, ModelError, r"the function of node 'Y' raised ZeroDivisionError"),
])
def test_bad_function_output_names_the_node(fn, exc, fragment):
    with pytest.raises(exc, match=fragment):
        _model(fn, noise=st.norm(0, 1)).sample(5, seed=0)


def test_nan_output_is_refused_in_forward_too():
    m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.Deterministic(["X"], lambda x: np.sqrt(x))})
    with pytest.raises(ModelError, match=r"node 'Y': its function gave nan \(row 1\)"):
        m.forward({"X": np.array([1.0, -1.0])})


def test_deterministic_discrete_and_tensor_outputs():
    m = cn.CausalModel({
        "X": cn.LinearGaussian(),
        "D": cn.Deterministic(["X"], lambda x: (x > 0).astype(int), states=["neg", "pos"]),
        "T": cn.Deterministic(["X"], lambda x: np.stack([x, -x], axis=-1), shape=2),
    })
    t = m.forward({"X": np.array([-1.0, 2.0])})
    assert t["D"].tolist() == [0, 1] and t["T"].shape == (2, 2)
    bad = cn.CausalModel({"X": cn.LinearGaussian(), "D": cn.Deterministic(["X"], lambda x: x + 0.5, states=[0, 1])})
    with pytest.raises(ModelError, match="node 'D' is discrete but its function returned non-integer values"):
        bad.forward({"X": np.array([0.0])})


@pytest.mark.parametrize("make, fragment", [
    (lambda: cn.Function(["X"], 3), "fn must be callable"),
    (lambda: cn.Function(["X"], np.sin, noise=3), "noise must be a frozen scipy.stats distribution"),
    (lambda: cn.Deterministic(["X"], np.sin, states=["a", "a"]), "duplicate state name 'a'"),
    (lambda: cn.Deterministic(["X"], np.sin, states="ab"), "states must be a list of names"),
    (lambda: cn.Deterministic(["X"], np.sin, states=[]), "at least one state"),
    (lambda: cn.Deterministic(["X"], np.sin, shape=(0,)), "shape must be a tuple of positive ints"),
    (lambda: cn.Deterministic(["X"], np.sin, shape="ab"), "shape must be a tuple of positive ints"),
    (lambda: cn.Deterministic(["X"], np.sin, shape=(2,), states=["a", "b"]), "holds \\(n,\\) state indices"),
])
def test_bad_constructor_arguments(make, fragment):
    with pytest.raises(ModelError, match=fragment):
        make()
