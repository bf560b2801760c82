"""Tests for causalnet.mechanisms.base: Spec, the Mechanism defaults, the shared validators.

Oracle: the documented contract (each helper's docstring), plain numpy.
"""

from __future__ import annotations

import fractions

import numpy as np
import pytest

from causalnet.errors import ModelError, NumericalError, ShapeError
from causalnet.mechanisms.base import (
    Mechanism,
    Spec,
    as_generator,
    as_real_array,
    as_real_scalar,
    as_shape,
    check_finite_output,
    check_states,
)


def test_spec_check_value():
    d = Spec("discrete", states=("a", "b"))
    assert d.card == 2 and d.is_discrete
    assert d.check_value("X", np.array([0, 1])).tolist() == [0, 1]
    with pytest.raises(ShapeError, match=r"node 'X' has states 0\.\.1, got values in \[0, 2\]"):
        d.check_value("X", np.array([0, 2]))
    with pytest.raises(ShapeError, match=r"node 'X' expects \(n,\) integer state indices"):
        d.check_value("X", np.array([0.0]))
    t = Spec("tensor", shape=(None, 3))
    t.check_value("T", np.zeros((2, 5, 3)))
    with pytest.raises(ShapeError, match=r"node 'T' expects shape \(n, \?, 3\), got \(2, 5, 4\)"):
        t.check_value("T", np.zeros((2, 5, 4)))
    with pytest.raises(ShapeError, match=r"node 'T' has 2 rows, expected the batch size 3"):
        t.check_value("T", np.zeros((2, 5, 3)), n=3)
    with pytest.raises(ModelError, match="a real node has no cardinality"):
        _ = Spec("real").card


def test_default_interface_raises_model_errors_naming_the_node():
    m = Mechanism(["A"])
    for call in (lambda: m.spec("N", {}), lambda: m.evaluate("N", {}, None, Spec("real")),
                 lambda: m.log_prob("N", None, {}, Spec("real")), lambda: m.abduct("N", None, {}, Spec("real")),
                 m.to_dict):
        with pytest.raises(ModelError):
            call()
    assert m.sample_noise(3, np.random.default_rng(0), Spec("real")) is None
    assert repr(m) == "Mechanism(parents=['A'])"


@pytest.mark.parametrize("seed", ["x", b"x", -1, 1.5, True, [1, "a"]])
def test_as_generator_refuses_bad_seeds(seed):
    with pytest.raises(ModelError, match="seed must be"):
        as_generator(seed)


def test_as_generator_accepts_ints_and_generators():
    g = np.random.default_rng(3)
    assert as_generator(g) is g
    assert as_generator(3).random() == np.random.default_rng(3).random()


def test_as_real_array():
    a = np.array([1, 2], dtype=np.int32)
    out = as_real_array(a, "K", "w")
    assert out.dtype == np.float64 and not out.flags.writeable and a.flags.writeable
    assert as_real_array([fractions.Fraction(1, 2)], "K", "w").tolist() == [0.5]
    with pytest.raises(ModelError, match=r"K: w holds a number too large for float64"):
        as_real_array(np.array([10 ** 400], dtype=object), "K", "w")
    with pytest.raises(ModelError, match=r"K: w must have shape \(3,\), got shape \(2,\)"):
        as_real_array([1, 2], "K", "w", shape=(3,))
    with pytest.raises(ModelError, match=r"K: w must have 2 axes, got shape \(2,\)"):
        as_real_array([1, 2], "K", "w", ndim=2)
    with pytest.raises(ModelError, match=r"K: w must be finite and >= 0, got -1\.0 at \(1,\)"):
        as_real_array([1, -1], "K", "w", nonnegative=True)
    assert np.isnan(as_real_array([np.nan], "K", "w", finite=False)[0])


def test_as_real_scalar():
    assert as_real_scalar(np.array([2]), "K", "s") == 2.0
    with pytest.raises(ModelError, match=r"K: s must be > 0, got 0\.0"):
        as_real_scalar(0.0, "K", "s", positive=True)
    with pytest.raises(ModelError, match=r"K: s must be >= 0, got -1\.0"):
        as_real_scalar(-1, "K", "s", nonnegative=True)


def test_check_states_and_as_shape():
    assert check_states(None, 3, "K") == (0, 1, 2)
    assert check_states(np.array([1, 2]), 2, "K") == (1, 2) and type(check_states(np.array([1, 2]), 2, "K")[0]) is int
    assert as_shape(None, "K") is None and as_shape(3, "K") == (3,) and as_shape((None, 2), "K") == (None, 2)
    for bad in ((2, 0), (True,), (1.5,), "ab", object()):
        with pytest.raises(ModelError, match="shape must be a tuple of positive ints"):
            as_shape(bad, "K")


def test_check_finite_output_blames_only_finite_inputs():
    out = np.array([1.0, np.inf])
    assert check_finite_output("X", out, [np.array([np.nan, 1.0])]) is out      # NaN in, inf out: not ours
    with pytest.raises(NumericalError, match=r"node 'X': its structural equation gave inf \(row 1\)"):
        check_finite_output("X", out, [np.array([1.0, 1.0])])
    with pytest.raises(ModelError, match=r"node 'X': its function gave inf"):
        check_finite_output("X", out, [], error=ModelError, what="its function")
