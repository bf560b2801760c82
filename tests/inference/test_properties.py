"""Property tests (hypothesis) over the front door: bad and extreme inputs to every entry point, and invariants.

Every call goes through ``conftest.guarded``: a valid answer or a CausalNetError, no NaN/inf, arguments and
model unchanged after a failure.
"""

import numpy as np
import pytest
from conftest import guarded, make_linear_gaussian, make_sprinkler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.values import decode_states

SPRINKLER = make_sprinkler()
LINEAR = make_linear_gaussian()
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.sampled_from(["Rain", "Sprinkler", "Wet", "Wett", "", "P", 0, None])
scalars = st.one_of(st.sampled_from(["no", "yes", "on", "off", "dry", "wet", "maybe", ""]),
                    st.integers(-3, 4), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none())
values = st.one_of(scalars, st.lists(scalars, max_size=4), st.lists(st.lists(scalars, max_size=2), max_size=3),
                   st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
                   st.builds(lambda n: np.array(["no", "yes"] * n), st.integers(0, 3)))
mappings = st.one_of(st.dictionaries(names, values, max_size=3), st.lists(names, max_size=2), st.none(),
                     st.integers())
methods = st.sampled_from(["auto", "exact", "sampling", "x", None, 3])


@SETTINGS
@given(targets=st.one_of(names, st.lists(names, max_size=3)), evidence=mappings, do=mappings, method=methods)
def test_query_on_bad_input(targets, evidence, do, method):
    guarded(SPRINKLER.query, targets, evidence=evidence, do=do, method=method, n_samples=2000, seed=0)


@SETTINGS
@given(targets=st.one_of(names, st.lists(names, max_size=2)), evidence=mappings, do=mappings, method=methods)
def test_counterfactual_on_bad_input(targets, evidence, do, method):
    guarded(SPRINKLER.counterfactual, targets, evidence=evidence, do=do, method=method, n_samples=2000, seed=0)


@SETTINGS
@given(targets=st.one_of(st.none(), names, st.lists(names, max_size=2)), evidence=mappings, do=mappings)
def test_map_on_bad_input(targets, evidence, do):
    guarded(SPRINKLER.map, targets, evidence=evidence, do=do)


@SETTINGS
@given(do=mappings)
def test_do_on_bad_input(do):
    guarded(SPRINKLER.do, do)


@SETTINGS
@given(n=st.one_of(st.integers(-5, 50), st.floats(), st.text(max_size=2), st.none()),
       seed=st.one_of(st.integers(-2, 5), st.text(max_size=2), st.floats(), st.none()))
def test_sample_on_bad_input(n, seed):
    guarded(SPRINKLER.sample, n, seed=seed)


@SETTINGS
@given(values=mappings, noise=st.one_of(st.none(), st.dictionaries(names, st.lists(st.floats(), max_size=3),
                                                                   max_size=2)))
def test_forward_on_bad_input(values, noise):
    guarded(SPRINKLER.forward, values, noise, seed=0)


@SETTINGS
@given(values=mappings)
def test_log_prob_on_bad_input(values):
    guarded(SPRINKLER.log_prob, values, allow_neginf=True)


@SETTINGS
@given(x=st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.lists(st.floats(-1e308, 1e308),
                                                                                       min_size=1, max_size=3)),
       delta=st.one_of(st.floats(-1e308, 1e308), st.integers(-10, 10)), scale=st.floats(-1e308, 1e308))
def test_gaussian_queries_on_extreme_input(x, delta, scale):
    guarded(LINEAR.query, "Y", evidence={"X": x})
    guarded(LINEAR.query, "Y", do={"X": cn.affine(scale, delta)})
    guarded(LINEAR.counterfactual, "Y", evidence={"X": x}, do={"X": cn.shift(delta)})


QUERY_STRINGS = st.one_of(
    st.text(max_size=30),
    st.builds(lambda t, e, v: f"P({t} | {e}={v})", names.map(str), names.map(str), scalars.map(str)),
    st.builds(lambda t, v, w: f"P({t}_{{Sprinkler={v}}} | Wet={w})", names.map(str), scalars.map(str),
              scalars.map(str)),
)


@SETTINGS
@given(text=QUERY_STRINGS)
def test_query_strings_on_bad_input(text):
    guarded(SPRINKLER.query, text, n_samples=2000, seed=0)


# -- invariants --------------------------------------------------------------------------------------


@SETTINGS
@given(rain=st.lists(st.sampled_from(["no", "yes", 0, 1]), min_size=1, max_size=5),
       wet=st.sampled_from(["dry", "wet"]))
def test_scalar_and_batched_evidence_agree(rain, wet):
    batch = SPRINKLER.query("Sprinkler", evidence={"Rain": rain, "Wet": wet})
    for i, r in enumerate(rain):
        one = SPRINKLER.query("Sprinkler", evidence={"Rain": r, "Wet": wet})
        assert_allclose(batch.probs[i], one.probs, atol=1e-12)
    cf = SPRINKLER.counterfactual("Wet", evidence={"Rain": rain, "Wet": wet}, do={"Sprinkler": "off"})
    for i, r in enumerate(rain):
        one = SPRINKLER.counterfactual("Wet", evidence={"Rain": r, "Wet": wet}, do={"Sprinkler": "off"})
        assert_allclose(cf.probs[i], one.probs, atol=1e-12)


@SETTINGS
@given(state=st.sampled_from(["no", "yes"]), target=st.sampled_from(["Sprinkler", "Wet"]))
def test_do_on_a_root_equals_conditioning(state, target):
    assert_allclose(SPRINKLER.query(target, do={"Rain": state}).probs,
                    SPRINKLER.query(target, evidence={"Rain": state}).probs, atol=1e-12)


@SETTINGS
@given(z=st.floats(-50, 50))
def test_gaussian_do_on_a_root_equals_conditioning(z):
    a = LINEAR.query("Y", do={"Z": z})
    b = LINEAR.query("Y", evidence={"Z": z})
    assert_allclose([a.mean[0], a.cov[0, 0]], [b.mean[0], b.cov[0, 0]], rtol=1e-9, atol=1e-9)


state_names = st.one_of(st.integers(-3, 6), st.text(max_size=2), st.booleans())


@settings(max_examples=200, deadline=None)
@given(states=st.lists(state_names, min_size=1, max_size=5, unique_by=lambda s: (type(s), s)).filter(
    lambda s: len(set(s)) == len(s)), value=st.one_of(state_names, st.floats(allow_nan=False)))
def test_one_decoding_rule_for_scalars_and_arrays(states, value):
    def decode(v):
        try:
            return int(np.ravel(decode_states("X", tuple(states), v))[0])
        except cn.EvidenceError:
            return "error"

    scalar = decode(value)
    assert scalar == decode([value]) == decode(np.array([value], dtype=object))
    if any(type(s) is type(value) and s == value for s in states):
        assert states[scalar] == value                       # names first


@pytest.mark.parametrize("seed", [0, 1])
def test_counterfactual_without_change_equals_factual(seed):
    m = SPRINKLER
    f = m.query("Wet", evidence={"Rain": "yes"})
    c = m.counterfactual("Wet", evidence={"Rain": "yes"}, do={"Rain": "yes"})
    assert_allclose(c.probs, f.probs, atol=1e-12)
