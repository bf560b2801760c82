"""causalnet.testing: every shipped engine passes check_engine, and each check fails on a plug-in that breaks it.

The shipped mechanisms go through check_mechanism in tests/mechanisms/test_mechanism_suite.py.
The references check_engine compares against are independent of the engines: brute-force
enumeration of the joint table, Monte Carlo on the mutilated model, and the consistency rule.
"""

import numpy as np
import pytest

import causalnet as cn
from causalnet.distributions import DiscreteDistribution
from causalnet.inference.dispatch import QUERY_ENGINES
from causalnet.inference.engine import Engine
from causalnet.inference.gaussian import GaussianEngine
from causalnet.inference.request import counterfactual_request, query_request
from causalnet.mechanisms.base import REAL, as_real_array
from causalnet.testing import ConformanceError, check_engine, check_mechanism, default_cases, shipped_engines

ENGINES = shipped_engines()


@pytest.mark.parametrize("engine", ENGINES, ids=[e.name for e in ENGINES])
def test_every_shipped_engine_passes_check_engine(engine):
    check_engine(engine)


def test_the_battery_covers_every_engine():
    """Each shipped engine answers at least one default case (else check_engine would say so)."""
    cases = default_cases()
    assert {c.kind for c in cases} == {"query", "counterfactual"}
    for engine in ENGINES:
        assert any(engine.accepts(_request(engine, c)) for c in cases), engine.name


def _request(engine, case):
    method = engine.method or ("auto" if engine.exact else "sampling")
    if case.kind == "counterfactual":
        return counterfactual_request(case.model, case.targets, case.evidence, case.do, method=method)
    return query_request(case.model, case.targets, case.evidence, case.do, method=method,
                         soft_evidence=case.soft_evidence)


def test_conformance_error_is_an_assertion_error_of_ours():
    assert issubclass(ConformanceError, AssertionError) and issubclass(ConformanceError, cn.CausalNetError)


# -- broken engines ---------------------------------------------------------------------------

DISCRETE = next(e for e in QUERY_ENGINES if e.name == "discrete")


class Skewed(Engine):
    """The discrete engine, its probabilities tilted by 0.01."""
    name = "skewed"

    def accepts(self, request):
        return DISCRETE.accepts(request)

    def answer(self, request):
        d = DISCRETE.answer(request)
        p = d.probs.copy()
        p[..., 0] += 0.01
        p[..., -1] -= 0.01
        return DiscreteDistribution(d.variables, p, [request.model.states(v) for v in d.variables],
                                    batched=d.batched, method="skewed")


class Crashes(Engine):
    name = "crashes"

    def accepts(self, request):
        raise KeyError("no idea")

    def answer(self, request):
        return None


class Maybe(Engine):
    name = "maybe"

    def accepts(self, request):
        return "yes"

    def answer(self, request):
        return None


class NoMethod(Engine):
    name = "no method"

    def accepts(self, request):
        return DISCRETE.accepts(request)

    def answer(self, request):
        d = DISCRETE.answer(request)
        d.method = None
        return d


class Nothing(Engine):
    name = "nothing"

    def accepts(self, request):
        return False

    def answer(self, request):
        return None


class WideGaussian(GaussianEngine):
    """The Gaussian engine with the variance doubled."""
    name = "wide"

    def answer(self, request):
        g = super().answer(request)
        return cn.Gaussian(g.variables, g.mean, 2 * g.cov, method="wide")


@pytest.mark.parametrize("engine, match", [
    (Skewed(), r"answer: .*skewed.* answered case 'discrete prior'"),
    (Crashes(), r"accepts: .* raised KeyError"),
    (Maybe(), r"accepts: .* returned \['yes', 'yes'\]"),
    (NoMethod(), r"method: .* no str \.method"),
    (Nothing(), r"accepted none of the cases"),
    (WideGaussian(), r"answer: .*wide.* variance"),
], ids=["wrong probabilities", "crashing accepts", "non-bool accepts", "no method", "accepts nothing",
        "wrong variance"])
def test_check_engine_catches_a_broken_engine(engine, match):
    with pytest.raises(ConformanceError, match=match):
        check_engine(engine)


def test_check_engine_refuses_a_non_engine():
    with pytest.raises(cn.ModelError, match="expects an Engine"):
        check_engine(object())


# -- broken mechanisms ------------------------------------------------------------------------

class Scaled(cn.Mechanism):
    """x = w * pa + u, u ~ N(0, 1): correct, unless a subclass breaks it."""
    kind, can_abduct = REAL, True

    def __init__(self, parents, w):
        super().__init__(parents)
        self.w = as_real_array(w, "Scaled", "w")

    def spec(self, node, parent_specs):
        return cn.Spec(REAL)

    def sample_noise(self, n, rng, spec):
        return rng.normal(size=n)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        return self.w[0] * parents[self.parents[0]] + (0.0 if noise is None else noise)

    def abduct(self, node, value, parents, spec):
        return value - self.w[0] * parents[self.parents[0]]

    def log_prob(self, node, value, parents, spec):
        u = value - self.w[0] * parents[self.parents[0]]
        return -0.5 * u ** 2 - 0.5 * np.log(2 * np.pi)


class OwnRng(Scaled):
    def sample_noise(self, n, rng, spec):
        return np.random.default_rng().normal(size=n)       # ignores the rng it is given


class BadAbduct(Scaled):
    def abduct(self, node, value, parents, spec):
        return value


class Column(Scaled):
    def evaluate(self, node, parents, noise, spec, *, n=None):
        return super().evaluate(node, parents, noise, spec, n=n)[:, None]   # (n, 1) for a scalar node


class NanDensity(Scaled):
    def log_prob(self, node, value, parents, spec):
        return np.full(np.shape(value)[0], np.nan)


PARENTS = {"X": cn.LinearGaussian()}


def test_check_mechanism_passes_a_correct_plug_in():
    check_mechanism(Scaled(["X"], [2.0]), PARENTS)


@pytest.mark.parametrize("mech, match", [
    (OwnRng(["X"], [2.0]), r"seed: "),
    (BadAbduct(["X"], [2.0]), r"abduct: .* does not invert evaluate"),
    (Column(["X"], [2.0]), r"batch first|spec: "),
    (NanDensity(["X"], [2.0]), r"log_prob: "),
], ids=["ignores the rng", "wrong abduct", "wrong shape", "NaN density"])
def test_check_mechanism_catches_a_broken_mechanism(mech, match):
    with pytest.raises(ConformanceError, match=match):
        check_mechanism(mech, PARENTS)


def test_check_mechanism_needs_the_parents():
    with pytest.raises(cn.ModelError, match=r"parents \['X'\]"):
        check_mechanism(Scaled(["X"], [2.0]))
