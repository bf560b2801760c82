"""Every answer names its question: one table over every result kind, through every front door.

The question is set in one place (``dispatch.answer`` from the validated
request) and must show in ``.query``, ``str``, ``repr`` and ``to_pandas()``
(the Series name, and ``.attrs["query"]`` on every pandas result).
"""

import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import causalnet as cn
from causalnet.cli import main
from causalnet.distributions import CauchyMarginals, EmpiricalDistribution, GaussianMixture


def _sprinkler():
    return cn.gallery.load("sprinkler")


def _gaussian():
    return cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.LinearGaussian(["X"], [2.0], sigma=0.5)})


def _cauchy():
    return cn.CausalModel({"U": cn.CauchyLinear(scale=1.0), "Y": cn.CauchyLinear(["U"], [2.0], scale=0.5)})


def _nonlinear():
    return cn.CausalModel({"X": cn.LinearGaussian(),
                           "Y": cn.Function(["X"], np.tanh, noise=scipy.stats.norm(0, 1))})


def _gaussian_hmm():
    return cn.HMM(2, "gaussian", startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.4, 0.6]], means=[[0.0], [3.0]],
                  covars=[[1.0], [2.0]])


CASES = {
    "discrete": (lambda: _sprinkler().query("Wet", evidence={"Rain": "yes"}, do={"Sprinkler": "on"}),
                 "P(Wet | do(Sprinkler=on), Rain=yes)"),
    "discrete, string": (lambda: _sprinkler().query("P(Wet | do(Sprinkler=on), Rain=yes)"),
                         "P(Wet | do(Sprinkler=on), Rain=yes)"),
    "discrete, indices decode to names": (lambda: _sprinkler().query("Wet", evidence={"Rain": 1}),
                                          "P(Wet | Rain=yes)"),
    "joint": (lambda: _sprinkler().query(["Wet", "Rain"]), "P(Wet, Rain)"),
    "batched": (lambda: _sprinkler().query("Wet", evidence={"Rain": np.array(["yes", "no", "yes"])}),
                "P(Wet | Rain=<per-row>)"),
    "per-row do": (lambda: _sprinkler().query("Wet", do={"Sprinkler": np.array(["on", "off"])}),
                   "P(Wet | do(Sprinkler=<per-row>))"),
    "data frame": (lambda: _sprinkler().query("Wet", evidence=pd.DataFrame({"Rain": ["yes", None],
                                                                           "Sprinkler": ["off", "on"]})),
                   "P(Wet | Rain=<per-row>, Sprinkler=<per-row>)"),
    "counterfactual": (lambda: _sprinkler().counterfactual("Wet", evidence={"Sprinkler": "on", "Wet": "wet"},
                                                           do={"Sprinkler": "off"}),
                       "P(Wet_{Sprinkler=off} | Sprinkler=on, Wet=wet)"),
    "counterfactual, sampled": (lambda: _sprinkler().counterfactual(
        "Wet", evidence={"Sprinkler": "on", "Wet": "wet"}, do={"Sprinkler": "off"}, method="sampling",
        n_samples=2000, seed=0), "P(Wet_{Sprinkler=off} | Sprinkler=on, Wet=wet)"),
    "gaussian": (lambda: _gaussian().query("Y", do={"X": 1.0}), "P(Y | do(X=1))"),
    "gaussian, given": (lambda: _gaussian().query(["X"], evidence={"Y": 0.5}), "P(X | Y=0.5)"),
    "gaussian joint": (lambda: _gaussian().query(["X", "Y"]), "P(X, Y)"),
    "gaussian shift": (lambda: _gaussian().query("Y", do={"X": cn.shift(1.5)}), "P(Y | do(X=shift(1.5)))"),
    "gaussian counterfactual": (lambda: _gaussian().counterfactual("Y", evidence={"X": 0.0, "Y": 1.0},
                                                                   do={"X": 1.0}),
                                "P(Y_{X=1.0} | X=0, Y=1)"),
    "cauchy": (lambda: _cauchy().query("Y", do={"U": 1.0}), "P(Y | do(U=1))"),
    "cauchy, several targets": (lambda: _cauchy().query(["U", "Y"]), "P(U, Y)"),
    "empirical": (lambda: _nonlinear().query("Y", evidence={"X": 0.5}, n_samples=500, seed=0), "P(Y | X=0.5)"),
    "mixture (HMM)": (lambda: _gaussian_hmm().query("X[3]", evidence=np.array([[0.1], [2.5], [3.3]])),
                      "P(X[3] | X[0]=0.1, X[1]=2.5, X[2]=3.3)"),
    "HMM counterfactual": (lambda: _gaussian_hmm().counterfactual("X[2]", evidence=np.array([[0.1], [2.5], [3.3]]),
                                                                  do={"Z[1]": 0}),
                           "P(X[2]_{Z[1]=0} | X[0]=0.1, X[1]=2.5, X[2]=3.3)"),
}


def _pandas_question(res):
    frame = res.to_pandas()
    assert frame.attrs["query"] == res.query
    if isinstance(frame, pd.Series):
        assert frame.name == res.query


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_result_names_its_question(case):
    make, want = CASES[case]
    res = make()
    assert res.query == want
    assert want in str(res) and want in repr(res)
    _pandas_question(res)


def test_the_kinds_in_the_table_are_the_result_kinds():
    kinds = {type(make()).__name__ for make, _ in CASES.values()}
    assert {"DiscreteDistribution", "Gaussian", "Cauchy", "CauchyMarginals", "EmpiricalDistribution",
            "GaussianMixture"} <= kinds
    assert isinstance(CASES["cauchy, several targets"][0](), CauchyMarginals)
    assert isinstance(CASES["empirical"][0](), EmpiricalDistribution)
    assert isinstance(CASES["mixture (HMM)"][0](), GaussianMixture)


def test_long_evidence_is_elided_around_its_ends(small_hmm):
    X = np.zeros(30, dtype=int)
    q = small_hmm.query("Z[0]", evidence=X).query
    assert q.startswith("P(Z[0] | X[0]=0, X[1]=0,") and "... (30 observed)" in q and q.endswith("X[29]=0)")


def test_a_bare_probability_and_the_cli_json(capsys):
    assert main(["query", "gallery:sprinkler", "P(Wet | do(Sprinkler=1), Rain=yes)", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["query"] == "P(Wet | do(Sprinkler=on), Rain=yes)"        # the canonical text: states by name
    assert main(["query", "gallery:sprinkler", "P(Wet_{Sprinkler=off} | Sprinkler=on, Wet=wet)", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["query"] == "P(Wet_{Sprinkler=off} | Sprinkler=on, Wet=wet)"
    assert main(["query", "gallery:sprinkler", "P(Wet | do(Sprinkler=on))"]) == 0
    assert "P(Wet | do(Sprinkler=on))" in capsys.readouterr().out
