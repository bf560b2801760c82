"""The decision and utility mechanisms on their own: conformance, validation, serialisation."""

import numpy as np
import pytest

import causalnet as cn
from causalnet.testing import check_mechanism


def test_utility_passes_the_conformance_checks():
    check_mechanism(cn.Utility(["X", "Y"], [[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]]),
                    {"X": cn.Categorical([0.4, 0.6]), "Y": cn.Categorical([0.2, 0.3, 0.5])})
    check_mechanism(cn.Utility([], 4.0), {})


def test_utility_evaluates_its_table():
    u = cn.Utility(["X"], [5.0, -1.0])
    m = cn.CausalModel({"X": cn.Categorical([0.5, 0.5]), "U": u})
    s = m.sample(1000, seed=0)
    assert np.array_equal(s["U"], np.where(s["X"] == 0, 5.0, -1.0))
    assert u.to_dict() == {"type": "Utility", "parents": ["X"], "table": [5.0, -1.0]}
    assert repr(u) == "Utility(parents=['X'], shape=(2,))"


def test_decision_has_no_distribution_until_a_policy():
    d = cn.Decision(["X"], states=["a", "b", "c"])
    assert d.card == 3 and d.states == ("a", "b", "c")
    assert cn.Decision([], states=2).states == (0, 1)
    m = cn.CausalModel({"X": cn.Categorical([0.5, 0.5]), "D": d})
    for call in (lambda: m.sample(3, seed=0), lambda: m.query("D"),
                 lambda: m.log_prob({"X": [0], "D": [1]})):
        with pytest.raises(cn.ModelError, match="decision 'D' has no policy"):
            call()
    assert m.do({"D": "b"}).query("D")["b"] == pytest.approx(1.0)
    assert d.to_dict() == {"type": "Decision", "parents": ["X"], "states": ["a", "b", "c"]}


@pytest.mark.parametrize("make, match", [
    (lambda: cn.Decision(["X"]), "states are required"),
    (lambda: cn.Decision(["X"], states=0), "at least one action"),
    (lambda: cn.Decision(["X"], states="ab"), "list of action names"),
    (lambda: cn.Decision(["X"], states=["a", "a"]), "duplicate"),
    (lambda: cn.Utility(["X"], [1.0, np.inf]), "finite"),
    (lambda: cn.Utility(["X"], [[1.0]]), "1 axes"),
    (lambda: cn.Utility(["X"], ["a", "b"]), "real numbers"),
])
def test_bad_constructor_input(make, match):
    with pytest.raises(cn.ModelError, match=match):
        make()


def test_parents_must_be_discrete():
    with pytest.raises(cn.ModelError, match="informational parent 'X' is real scalar"):
        cn.CausalModel({"X": cn.LinearGaussian(), "D": cn.Decision(["X"], states=2)})
    with pytest.raises(cn.ModelError, match="parent 'X' is real scalar"):
        cn.CausalModel({"X": cn.LinearGaussian(), "U": cn.Utility(["X"], [1.0, 2.0])})
