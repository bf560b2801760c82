"""The engine registry: order, method names, ``method=`` handling, and a new engine plugging in."""

import numpy as np
import pytest
import scipy.stats

import causalnet as cn
from causalnet import ModelError
from causalnet.distributions import DiscreteDistribution
from causalnet.inference.dispatch import COUNTERFACTUAL_ENGINES, QUERY_ENGINES
from causalnet.inference.engine import Engine, LazyEngine, NoExactAnswer, Registry
from causalnet.inference.request import query_request


def test_engine_order():
    cn.CRF, cn.HMM, cn.StateSpace, cn.DBN      # noqa: B018 (the families register their engines when first loaded)
    # the families' engines register themselves ahead of the generic ones (causalnet.models.hmm/crf/statespace/dbn)
    assert [e.name for e in QUERY_ENGINES] == ["CRF chain", "HMM chain", "DBN interface", "discrete", "discrete (soft evidence)",
                                               "Kalman", "linear-Gaussian", "linear-Cauchy", "conditional Gaussian",
                                               "loopy belief propagation",
                                               "gibbs sampling", "importance sampling", "likelihood weighting"]
    assert [e.name for e in COUNTERFACTUAL_ENGINES] == ["HMM twin chain", "discrete twin network", "Gaussian twin",
                                                         "conditional Gaussian twin",
                                                         "additive-noise abduction", "sampled counterfactual"]


def test_method_names_say_which_engine_ran(sprinkler, linear_gaussian, seed):
    assert sprinkler.query("Wet").method == "exact (variable elimination)"
    assert linear_gaussian.query("Y").method == "exact (joint Gaussian)"
    c = cn.CausalModel({"U": cn.CauchyLinear(scale=1.0), "Y": cn.CauchyLinear(["U"], [2.0], scale=0.5)})
    assert c.query("Y").method == "cauchy-affine (exact)"
    assert "likelihood weighting" in sprinkler.query("Wet", method="sampling", seed=seed, n_samples=2000).method


def test_exact_refuses_to_fall_back_and_says_why(seed):
    m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.Function(["X"], np.tanh, noise=scipy.stats.norm(0, 1))})
    with pytest.raises(ModelError, match="no exact engine answers this query"):
        m.query("Y", method="exact")
    c = cn.CausalModel({"U": cn.CauchyLinear(scale=1.0), "Y": cn.CauchyLinear(["U"], [2.0], scale=0.5)})
    with pytest.raises(ModelError, match="linear-Cauchy: .*evidence on 'U'"):
        c.query("Y", evidence={"U": 1.0}, method="exact")
    r = c.query("Y", evidence={"U": 1.0}, seed=seed, n_samples=2000)       # auto: falls back
    assert "likelihood weighting" in r.method


class _Fixed(Engine):
    """A toy engine that answers a single-node query on node 'K' with a fixed distribution."""

    name = "fixed"

    def accepts(self, request):
        return request.nodes == ["K"] and not request.is_counterfactual

    def answer(self, request):
        return DiscreteDistribution(["K"], [0.25, 0.75], [request.model.states("K")], method="fixed engine")


class _Declines(Engine):
    name = "declines"

    def accepts(self, request):
        return True

    def answer(self, request):
        raise NoExactAnswer("never")


def test_a_new_engine_plugs_in_without_touching_others():
    cn.CRF, cn.HMM, cn.DBN      # noqa: B018 (the families register their engines when first loaded)
    m = cn.CausalModel({"K": cn.Categorical([0.5, 0.5])})
    reg = Registry([_Declines(), *QUERY_ENGINES])
    reg.register(_Fixed(), before="discrete")
    assert [e.name for e in reg][:6] == ["declines", "CRF chain", "HMM chain", "DBN interface", "fixed", "discrete"]
    got = reg.answer(query_request(m, "K"))
    assert got.method == "fixed engine; exact engines passed: declines: never"       # the pass and its reason
    assert reg.answer(query_request(m, "K", method="sampling", n_samples=1000, seed=0)).method.startswith(
        "likelihood weighting")
    with pytest.raises(ModelError, match="must be an Engine"):
        reg.register(object())


def test_lazy_entries_load_only_when_reached_and_must_build_the_engine_they_name():
    m = cn.CausalModel({"K": cn.Categorical([0.5, 0.5])})
    built = []
    reg = Registry([_Fixed(), LazyEngine("declines", lambda: built.append(1) or _Declines())])
    assert reg.names() == ["fixed", "declines"] and not built          # names load nothing
    assert reg.answer(query_request(m, "K")).method == "fixed engine" and not built   # never reached
    assert [e.name for e in reg] == ["fixed", "declines"] and built == [1]            # iterating loads it, once
    assert [e.name for e in reg] == ["fixed", "declines"] and built == [1]
    wrong = Registry([LazyEngine("fixed", _Declines)])
    with pytest.raises(ModelError, match="lazy engine 'fixed' built"):
        list(wrong)


def test_exact_error_lists_declines():
    m = cn.CausalModel({"K": cn.Categorical([0.5, 0.5])})
    reg = Registry([_Declines()])
    with pytest.raises(ModelError, match="declines: never"):
        reg.answer(query_request(m, "K", method="exact"))
