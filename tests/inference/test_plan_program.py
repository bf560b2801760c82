"""The generated program of a Plan: large finite values pass, bad ones still go to the checked path."""

import numpy as np
import pytest

from causalnet import CausalModel, ModelError
from causalnet.inference.tensor import Plan
from causalnet.mechanisms import tensor as T


def _model():
    return CausalModel({"x": T.Input((3,), dtype="float32"), "y": T.Scale("x", 1.0), "z": T.ReLU("y")})


def test_squares_that_overflow_are_not_mistaken_for_non_finite_values():
    plan = Plan(_model(), outputs=["z", "y"])
    x = np.full((2, 3), 1e30, np.float32)                  # finite, but x * x overflows float32
    first = plan.run({"x": x})                             # checked path; records the shape
    second = plan.run({"x": x})                            # generated program
    for v in ("y", "z"):
        assert np.array_equal(first[v], second[v]) and np.isfinite(second[v]).all()


def test_non_finite_input_on_the_fast_path_raises_naming_the_node():
    plan = Plan(_model(), outputs=["z"])
    plan.run({"x": np.ones((1, 3), np.float32)})
    bad = np.array([[1.0, np.inf, 0.0]], np.float32)
    with pytest.raises(ModelError, match="'x'"):
        plan.run({"x": bad})


def test_an_input_can_be_an_output_of_the_program():
    plan = Plan(_model(), outputs=["x", "z"], inputs=["x"])
    x = np.array([[1.0, -2.0, 3.0]], np.float32)
    for _ in range(2):
        out = plan.run({"x": x})
        assert out["x"] is x or np.array_equal(out["x"], x)
        assert out["z"].tolist() == [[1.0, 0.0, 3.0]]
