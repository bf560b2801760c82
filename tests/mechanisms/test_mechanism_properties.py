"""Property tests (hypothesis) for every mechanism constructor and method on bad and extreme inputs.

Every call goes through ``conftest.guarded``: a valid answer or a CausalNetError, no NaN
(and no inf, except -inf log-probabilities), and the caller's arguments unchanged after a
failure (issue 10). Valid answers are then checked for their shapes.
"""

from __future__ import annotations

import numpy as np
import scipy.stats as sst
from conftest import guarded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import causalnet as cn
from causalnet.errors import CausalNetError
from causalnet.mechanisms.base import Spec, as_generator
from causalnet.values import decode_states

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

extreme_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-320, 1e308, -1e308, 0.5, 1.0, 1.1, -1.0]),
)
numbers = st.one_of(extreme_floats, st.integers(-10, 10), st.complex_numbers(max_magnitude=2),
                    st.booleans(), st.text(max_size=2), st.none())
float_arrays = arrays(np.float64, st.integers(0, 4), elements=extreme_floats)
bad_things = st.one_of(numbers, float_arrays, st.lists(numbers, max_size=4),
                       st.lists(st.lists(st.floats(0, 1), max_size=3), max_size=3),
                       arrays(np.complex128, st.integers(0, 3)), st.dictionaries(st.text(max_size=1), numbers, max_size=2))
parent_lists = st.one_of(st.lists(st.sampled_from(["A", "B", "C"]), max_size=3), st.none(), st.integers(),
                         st.just("A"), st.lists(st.lists(st.just("A"), max_size=1), max_size=2))


@SETTINGS
@given(table=st.one_of(bad_things, arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(0, 4)),
                                          elements=extreme_floats)),
       states=st.one_of(st.none(), st.lists(st.one_of(st.text(max_size=1), st.integers(0, 3), st.none()),
                                            max_size=4), st.text(max_size=3)))
def test_categorical_and_cpt_constructors(table, states):
    guarded(cn.Categorical, table, states=states)
    out = guarded(cn.CPT, ["A"], table, states=states)
    if not isinstance(out, CausalNetError):
        assert np.allclose(out.table.sum(axis=-1), 1.0, rtol=0, atol=1e-9)


@SETTINGS
@given(parents=parent_lists, weights=bad_things, bias=bad_things, sigma=bad_things)
def test_linear_gaussian_constructor(parents, weights, bias, sigma):
    out = guarded(cn.LinearGaussian, parents, weights, bias=bias, sigma=sigma)
    if not isinstance(out, CausalNetError):
        assert out.sigma >= 0 and np.isfinite(out.bias) and out.weights.shape == (len(out.parents),)


@SETTINGS
@given(weights=bad_things, loc=bad_things, scale=bad_things,
       shape=st.one_of(st.none(), st.integers(-2, 3), st.tuples(st.integers(-1, 3)), st.text(max_size=2)))
def test_cauchy_linear_constructor(weights, loc, scale, shape):
    out = guarded(cn.CauchyLinear, ["X"], [weights], loc=loc, scale=scale, shape=shape)
    if not isinstance(out, CausalNetError):
        assert np.all(out.scale >= 0) and np.all(np.isfinite(out.loc))


@SETTINGS
@given(fn=st.one_of(st.none(), st.integers(), st.just(np.sin)), noise=st.one_of(st.none(), numbers),
       shape=st.one_of(st.just(()), st.integers(-1, 3), st.text(max_size=2)),
       states=st.one_of(st.none(), st.lists(st.text(max_size=1), max_size=3)))
def test_function_constructors(fn, noise, shape, states):
    guarded(cn.Function, ["X"], fn, noise=noise)
    guarded(cn.Deterministic, ["X"], fn, shape=shape, states=states)


# -- methods on generated parent values ---------------------------------------------------

OUTPUTS = {
    "finite": lambda x: 2 * x,
    "nan": lambda x: x * np.nan,
    "log": np.log,
    "inf": lambda x: x / 0.0,
    "wrong length": lambda x: np.ones(len(x) + 1),
    "2-d": lambda x: np.ones((len(x), 2)),
    "complex": lambda x: x + 1j,
    "strings": lambda x: np.array(["a"] * len(x)),
    "raises": lambda x: [][0],
    "scalar": lambda x: 3.0,
}

moderate = st.floats(-1e6, 1e6)


@SETTINGS
@given(kind=st.sampled_from(sorted(OUTPUTS)), x=arrays(np.float64, st.integers(1, 6), elements=moderate),
       seed=st.integers(0, 2 ** 32 - 1))
def test_function_evaluate_and_log_prob(kind, x, seed):
    rng = as_generator(seed)
    spec = Spec("real")
    f = cn.Function(["X"], OUTPUTS[kind], noise=sst.norm(0, 1))
    u = f.sample_noise(len(x), rng, spec)
    y = guarded(f.evaluate, "Y", {"X": x}, u, spec, n=len(x))
    if not isinstance(y, CausalNetError):
        assert y.shape == x.shape
        lp = guarded(f.log_prob, "Y", y, {"X": x}, spec, allow_neginf=True)
        assert lp.shape == x.shape
    d = cn.Deterministic(["X"], OUTPUTS[kind])
    z = guarded(d.evaluate, "Y", {"X": x}, None, spec, n=len(x))
    if not isinstance(z, CausalNetError):
        assert z.shape == x.shape


MECHS = {
    "LinearGaussian": (cn.LinearGaussian(["X"], [3.0], bias=1.0, sigma=2.0), Spec("real")),
    "CauchyLinear": (cn.CauchyLinear(["X"], [3.0], loc=1.0, scale=2.0), Spec("real")),
    "Function": (cn.Function(["X"], np.tanh, noise=sst.laplace(0, 1)), Spec("real")),
}


@SETTINGS
@given(name=st.sampled_from(sorted(MECHS)), x=arrays(np.float64, st.integers(1, 6), elements=moderate),
       value=arrays(np.float64, st.integers(1, 6), elements=moderate), seed=st.integers(0, 2 ** 32 - 1))
def test_real_mechanisms_on_extreme_values(name, x, value, seed):
    mech, spec = MECHS[name]
    n = len(x)
    u = mech.sample_noise(n, as_generator(seed), spec)
    y = guarded(mech.evaluate, "Y", {"X": x}, u, spec, n=n)
    assert y.shape == (n,)
    v = np.resize(value, n)
    lp = guarded(mech.log_prob, "Y", v, {"X": x}, spec, allow_neginf=True)
    assert lp.shape == (n,) and np.all(lp <= 0 if name == "CauchyLinear" else True)
    u2 = guarded(mech.abduct, "Y", y, {"X": x}, spec)
    assert u2.shape == (n,)


@SETTINGS
@given(x=arrays(np.int64, st.integers(1, 6), elements=st.integers(-2, 4)), u=arrays(np.float64, st.integers(1, 6),
                                                                                    elements=st.floats(0, 1)))
def test_cpt_evaluate_and_log_prob(x, u):
    cpt = cn.CPT(["A"], [[0.2, 0.8], [1.0, 0.0], [0.5, 0.5]])
    spec = cpt.spec("C", {"A": Spec("discrete", states=(0, 1, 2))})
    a = np.clip(x, 0, 2)
    u = np.resize(np.minimum(u, np.nextafter(1.0, 0.0)), len(a))
    c = guarded(cpt.evaluate, "C", {"A": a}, u, spec, n=len(a))
    assert c.shape == a.shape and np.all(cpt.table[a, c] > 0)
    lp = guarded(cpt.log_prob, "C", np.clip(x, 0, 1), {"A": a}, spec, allow_neginf=True)
    assert lp.shape == a.shape


@SETTINGS
@given(value=st.one_of(bad_things, st.integers(-3, 5), arrays(np.int64, st.integers(0, 4), elements=st.integers(-2, 4))),
       states=st.sampled_from([("no", "yes"), (2, 1, 0), (0, 1), ("a", 5)]))
def test_decode_states_on_anything(value, states):
    out = guarded(decode_states, "X", states, value)
    if not isinstance(out, CausalNetError):
        assert np.all((np.asarray(out) >= 0) & (np.asarray(out) < len(states)))
