"""Tests for causalnet.mechanisms.tabular: Categorical and CPT, table checks, state decoding.

Oracles: brute force — the inverse-CDF rule ``x = min{k : u < F(k | pa)}`` evaluated
by a Python loop over rows and states, and table lookups for the log mass.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import EvidenceError, ModelError
from causalnet.mechanisms.base import Spec
from causalnet.mechanisms.tabular import TOL, check_table
from causalnet.values import decode_states

TABLE = np.array([[[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]],
                  [[0.0, 0.0, 1.0], [1 / 3, 1 / 3, 1 / 3]]])           # (2, 2, 3)


def _specs():
    return {"A": Spec("discrete", states=(0, 1)), "B": Spec("discrete", states=("b0", "b1"))}


def _brute_inverse_cdf(table, a, b, u):
    out = []
    for ai, bi, ui in zip(a, b, u):
        row, acc = table[ai, bi], 0.0
        for k, p in enumerate(row):
            acc += p
            if ui < acc or k == len(row) - 1:
                out.append(k)
                break
    return np.array(out)


def test_evaluate_is_the_inverse_cdf(rng):
    cpt = cn.CPT(["A", "B"], TABLE)
    spec = cpt.spec("C", _specs())
    a, b = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    u = rng.random(500)
    x = cpt.evaluate("C", {"A": a, "B": b}, u, spec, n=500)
    assert np.array_equal(x, _brute_inverse_cdf(TABLE, a, b, u))
    assert TABLE[a, b, x].min() > 0                       # never a zero-probability state


def test_noise_interval_has_the_state_probability_and_contains_u(rng):
    cpt = cn.CPT(["A", "B"], TABLE)
    spec = cpt.spec("C", _specs())
    a, b, u = rng.integers(0, 2, 300), rng.integers(0, 2, 300), rng.random(300)
    x = cpt.evaluate("C", {"A": a, "B": b}, u, spec)
    lo, hi = cpt.noise_interval(x, {"A": a, "B": b})
    assert_allclose(hi - lo, TABLE[a, b, x], rtol=0, atol=1e-15)
    assert np.all((lo <= u) & (u < hi))
    draws = cpt.abduct_sample("C", x, {"A": a, "B": b}, spec, rng)
    assert np.array_equal(cpt.evaluate("C", {"A": a, "B": b}, draws, spec), x)


def test_log_prob_is_the_table_entry(rng):
    cpt = cn.CPT(["A", "B"], TABLE)
    spec = cpt.spec("C", _specs())
    for a, b, k in itertools.product(range(2), range(2), range(3)):
        with np.errstate(divide="ignore"):
            want = np.log(TABLE[a, b, k])
        got = cpt.log_prob("C", np.array([k]), {"A": np.array([a]), "B": np.array([b])}, spec)
        assert got.shape == (1,) and (got[0] == want or np.isclose(got[0], want, rtol=1e-15))


def test_categorical_frequencies(seed):
    m = cn.CausalModel({"X": cn.Categorical([0.1, 0.6, 0.3])})
    x = m.sample(200_000, seed=seed)["X"]
    assert_allclose(np.bincount(x, minlength=3) / x.size, [0.1, 0.6, 0.3], rtol=0, atol=5e-3)


# -- bad tables and states (issue 10) ----------------------------------------------------


@pytest.mark.parametrize("table, fragment", [
    ([0.6, 0.5], r"the probabilities sums to 1\.1, expected 1 \(tolerance 1e-09\)"),
    ([1.5, -0.5], r"entry \(1,\) is -0\.5; probabilities must be >= 0"),
    ([np.nan, 1.0], r"entry \(0,\) is nan; entries must be finite"),
    ([np.inf, 0.0], r"entry \(0,\) is inf; entries must be finite"),
    ([0.5 + 0j, 0.5], r"must be real, got complex values"),
    ([0.5 + 1j, 0.5 - 1j], r"must be real, got complex values"),
    ([True, False], r"must hold real numbers, got dtype bool"),
    (["0.5", "0.5"], r"must hold real numbers, got dtype <U3"),
    ([], r"has no states"),
    ([[0.5, 0.5]], r"the table has 2 axes; 0 parents"),
    (0.5, r"the table has 0 axes"),
    ([[0.5, 0.5], [1.0]], r"must be an array of real numbers"),
    (np.array([0.5, "x"], dtype=object), r"must hold real numbers, got 'x'"),
])
def test_categorical_refuses_bad_tables(table, fragment):
    with pytest.raises(ModelError, match=fragment):
        cn.Categorical(table)


def test_cpt_error_names_the_row_and_its_parents():
    bad = TABLE.copy()
    bad[1, 0] = [0.5, 0.5, 0.1]
    with pytest.raises(ModelError, match=r"CPT over parents \['A', 'B'\]: row \(1, 0\) sums to 1\.1 \(A=1, B=0\), "
                                         r"expected 1"):
        cn.CPT(["A", "B"], bad)
    bad = TABLE.copy()
    bad[0, 1] = [0.6, 0.5, -0.1]
    with pytest.raises(ModelError, match=r"entry \(0, 1, 2\) is -0\.1; probabilities must be >= 0 \(A=0, B=1\)"):
        cn.CPT(["A", "B"], bad)


def test_tolerance_is_absolute_tol():
    cn.Categorical([0.5, 0.5 + TOL / 2])
    with pytest.raises(ModelError, match="sums to"):
        cn.Categorical([0.5, 0.5 + 3 * TOL])


def test_cpt_wrong_shape_is_named_when_the_model_is_built():
    with pytest.raises(ModelError, match=r"CPT for 'C' has shape \(2, 2, 3\); .* expected \(2, 3, 3\)"):
        cn.CausalModel({"A": cn.Categorical([0.5, 0.5]), "B": cn.Categorical([0.2, 0.3, 0.5]),
                        "C": cn.CPT(["A", "B"], TABLE)})
    with pytest.raises(ModelError, match="axes"):
        cn.CPT(["A"], TABLE)


@pytest.mark.parametrize("states, fragment", [
    (["a", "a"], r"duplicate state name 'a'"),
    ([1, 1.0], r"duplicate state name 1"),
    (["a"], r"1 state names"),
    ("ab", r"states must be a list of names, got the string|states must be a list of names, got 'ab'"),
    ([["a"], ["b"]], r"is not hashable"),
    ([None, "b"], r"state name None is not allowed"),
    ([float("nan"), "b"], r"state name nan is not allowed"),
    (5, r"states must be a list of names"),
])
def test_bad_state_names(states, fragment):
    with pytest.raises(ModelError, match=fragment):
        cn.Categorical([0.5, 0.5], states=states)


def test_table_checks_return_a_read_only_copy():
    t = np.array([0.25, 0.75])
    out = check_table(t, (), "Categorical")
    assert out is not t and not out.flags.writeable and t.flags.writeable


# -- decoding evidence: one rule for scalars and arrays (issue 10) -------------------------


def test_one_decoding_rule_for_integer_state_names():
    # a state name always wins; integers are indices only when no state name is an integer
    assert decode_states("X", (2, 1, 0), 2) == 0                       # the name 2, not index 2
    assert decode_states("X", (2, 1, 0), [2, 1, 0]).tolist() == [0, 1, 2]
    assert decode_states("X", (2, 1, 0), np.array([2, 0])).tolist() == [0, 2]
    assert decode_states("X", ("no", "yes"), [1, "yes"]).tolist() == [1, 1]
    with pytest.raises(EvidenceError, match="'X'"):
        decode_states("X", (5, "a"), 1)                                 # 1 is not a name and names are integers


@pytest.mark.parametrize("value, fragment", [
    ("maybe", r"'X' has no state 'maybe'; states: \['no', 'yes'\]"),
    (["no", "maybe"], r"'X' has no state 'maybe' \(row 1\)"),
    (np.array([0, 1, 5]), r"'X' has no state 5 \(row 2\)"),
    ([[0, 1]], r"1-d array of states; got a ragged or nested sequence"),
    ({"a": 1}, r"'X': a state must be a name or an index"),
    ([0, [1, 2]], r"ragged"),
    (np.nan, r"'X' has no state nan"),
    ([0.5], r"'X' has no state 0\.5 \(row 0\)"),
])
def test_bad_evidence_values(value, fragment):
    with pytest.raises(EvidenceError, match=fragment):
        decode_states("X", ("no", "yes"), value)


state_names = st.one_of(
    st.lists(st.integers(-3, 6), min_size=1, max_size=6, unique=True).map(tuple),
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5, unique=True).map(tuple),
    st.lists(st.one_of(st.integers(0, 5), st.sampled_from(["x", "y"])), min_size=1, max_size=6,
             unique=True).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(states=state_names, data=st.data())
def test_scalar_and_array_evidence_agree(states, data):
    card = len(states)
    pool = list(states) + list(range(-1, card + 2)) + ["zz"]
    values = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=8))
    scalar = []
    for v in values:
        try:
            scalar.append(int(decode_states("X", states, v)))
        except EvidenceError:
            scalar.append(None)
    if all(isinstance(v, int) for v in values) or all(isinstance(v, str) for v in values):
        arrays = [np.array(values)]
    else:
        arrays = [np.array(values, dtype=object)]
    for arr in arrays:
        try:
            got = decode_states("X", states, arr).tolist()
        except EvidenceError:
            assert None in scalar
        else:
            assert got == scalar
