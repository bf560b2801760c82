"""The linear-Cauchy engine's per-model caches (issue 30): |W| and the walk of a query shape.

Oracles: the closed form written in numpy for one layer; for shared sources,
the answer of a fresh copy of the model (no cache) and Monte Carlo quartiles.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.mechanisms.cauchy import CauchyLinear
from causalnet.mechanisms.tensor import Input


def layer(seed, d_in=6, d_out=5):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(d_out, d_in))
    a, g, b = rng.normal(size=d_in), rng.uniform(0.5, 2.0, d_in), rng.normal(size=d_out)
    m = cn.CausalModel({"U": CauchyLinear(loc=a, scale=g), "Y": CauchyLinear(["U"], [W], loc=b, scale=0.1)})
    return m, (W @ a + b, np.abs(W) @ g + 0.1)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), d_in=st.integers(1, 8), d_out=st.integers(1, 8))
def test_layer_equals_the_closed_form_on_every_call(seed, d_in, d_out):
    m, (loc, scale) = layer(seed, d_in, d_out)
    for _ in range(3):                                 # first call fills the caches, the others read them
        d = m.query("Y")
        assert d.method == "cauchy-affine (exact)"
        np.testing.assert_allclose(d.loc, loc, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(d.scale, scale, rtol=1e-12, atol=1e-12)
    assert any(k == "linear-Cauchy: |W|" for k in m.cache)


def shared(seed):
    rng = np.random.default_rng(seed)
    return cn.CausalModel({
        "x": Input((3,)),
        "A": CauchyLinear(loc_parent="x", scale=rng.uniform(0.5, 2.0, 3)),
        "B": CauchyLinear(["A"], [rng.normal(size=(3, 3))], scale=0.3),
        "C": CauchyLinear(["A", "B"], [rng.normal(size=(3, 3)), rng.normal(size=(3, 3))], scale=0.0),
    })


def test_shapes_of_queries_do_not_leak_into_each_other():
    m = shared(0)
    x = np.random.default_rng(1).normal(size=(4, 3))
    asked = [("C", {"x": x}, None), ("C", {"x": x[0]}, None), ("B", {"x": x}, None),
             ("C", {"x": x}, {"B": np.ones(3)}), ("C", {"x": x}, None)]
    for target, ev, do in asked:
        got = m.query(target, evidence=ev, do=do)
        fresh = shared(0).query(target, evidence=ev, do=do)
        np.testing.assert_array_equal(got.loc, fresh.loc)
        np.testing.assert_array_equal(got.scale, fresh.scale)


def test_shared_sources_match_monte_carlo_after_caching():
    m = shared(2)
    x = np.array([0.5, -1.0, 2.0])
    m.query("C", evidence={"x": x})
    d = m.query("C", evidence={"x": x})
    draws = m.forward({"x": np.broadcast_to(x, (200_000, 3))}, seed=3, keep=["C"])["C"]
    q1, med, q3 = np.percentile(draws, [25, 50, 75], axis=0)
    # sampled median and IQR: sd about pi * scale / (2 sqrt(N)); 6 sd
    tol = 6 * np.pi * d.scale / (2 * np.sqrt(200_000))
    np.testing.assert_array_less(np.abs(med - d.loc), tol)
    np.testing.assert_array_less(np.abs((q3 - q1) - 2 * d.scale), 2 * tol)
