"""causalnet.arguments: the one set of argument validators, against a plain statement of the rule."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import causalnet as cn
from causalnet.arguments import check_bool, check_int, check_real

ANY = st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
                st.text(max_size=2), st.integers(-5, 5).map(np.int32), st.floats(-5, 5).map(np.float32),
                st.booleans().map(np.bool_), st.complex_numbers(max_magnitude=3))


def _is_int(v):
    return type(v) is int or type(v) is np.int32


def _is_real(v):
    return type(v) in (int, float, np.int32, np.float32)


@given(ANY, st.sampled_from([None, 0, 1, 3]))
def test_check_int_accepts_exactly_the_integers_in_range(v, low):
    ok = _is_int(v) and (low is None or v >= low)
    if ok:
        out = check_int(v, "k", low=low)
        assert type(out) is int and out == v
    else:
        with pytest.raises(cn.ModelError, match=r"^k must be (an integer|a non-negative integer|a positive integer|an integer >= 3), got "):
            check_int(v, "k", low=low)


@given(ANY, st.booleans(), st.booleans(), st.booleans())
def test_check_real_accepts_exactly_the_reals_it_should(v, positive, nonnegative, allow_inf):
    ok = _is_real(v) and not math.isnan(float(v)) and (allow_inf or math.isfinite(float(v)))
    ok = ok and (not positive or float(v) > 0) and (not nonnegative or float(v) >= 0)
    if ok:
        out = check_real(v, "tol", positive=positive, nonnegative=nonnegative, allow_inf=allow_inf)
        assert type(out) is float and out == float(v)
    else:
        with pytest.raises(cn.ModelError, match=r"^tol must be a .*number.*, got "):
            check_real(v, "tol", positive=positive, nonnegative=nonnegative, allow_inf=allow_inf)


def test_bounds_and_the_error_type_are_the_callers():
    assert check_int(4, "k", low=1, high=4) == 4
    with pytest.raises(cn.GraphError, match=r"k must be an integer in \[1, 4\], got 5"):
        check_int(5, "k", low=1, high=4, error=cn.GraphError)
    with pytest.raises(cn.EvidenceError, match="flag must be True or False, got 1"):
        check_bool(1, "flag", error=cn.EvidenceError)
    assert check_bool(np.bool_(True), "flag") is True


def test_the_estimators_share_the_rule():
    """The same bad count reads the same in the HMM, the causal head and the tensor ops."""
    with pytest.raises(cn.ModelError, match="n_iter must be a non-negative integer, got 1.5"):
        cn.HMM(n_iter=1.5)
    with pytest.raises(cn.ModelError, match="PositionalEncoding d_model must be a positive integer, got True"):
        cn.tensor.PositionalEncoding("x", d_model=True)
