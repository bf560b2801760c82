"""One parametrized suite over every mechanism class: shapes, seeds, errors, the interface.

Each case builds a small model around one mechanism (its parents are simple roots)
and runs :func:`causalnet.testing.check_mechanism` on it: what the interface promises
for every kind (mechanisms/base.py): the spec, batch-first noise and values, the same
seed giving the same values, abduction inverting evaluation, densities of shape (n,),
JSON descriptions. Beside it: a caller's arrays left alone, and bad parents refused
with ModelError. tests/test_testing.py shows each check failing on a broken plug-in.
The tensor ops have their own op suite of this shape (test_tensor.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import CausalNetError, ModelError
from causalnet.mechanisms import cauchy, compact, conditional_gaussian, function, gaussian, tabular
from causalnet.mechanisms.base import DISCRETE, Mechanism
from causalnet.mechanisms.intervened import Intervened
from causalnet.models.hmm.mechanism import GaussianEmissionMechanism
from causalnet.testing import check_mechanism


def _real_root():
    return cn.LinearGaussian([], [], bias=0.3, sigma=1.0)


def _cases():
    """(id, parent mechanisms, the mechanism under test)."""
    disc = {"A": cn.Categorical([0.3, 0.7], states=["a0", "a1"]),
            "B": cn.Categorical([0.2, 0.5, 0.3])}
    real = {"X": _real_root(), "Z": cn.LinearGaussian([], [], bias=-1.0, sigma=2.0)}
    return [
        ("Categorical", {}, cn.Categorical([0.1, 0.6, 0.3], states=["lo", "mid", "hi"])),
        ("CPT", disc, cn.CPT(["A", "B"], np.array([[[0.5, 0.5], [0.9, 0.1], [0.0, 1.0]],
                                                   [[0.2, 0.8], [0.3, 0.7], [1.0, 0.0]]]), states=["n", "y"])),
        ("LinearGaussian", real, cn.LinearGaussian(["X", "Z"], [1.5, -0.5], bias=2.0, sigma=0.7)),
        ("LinearGaussian-deterministic", real, cn.LinearGaussian(["X"], [2.0], bias=1.0, sigma=0.0)),
        ("ConditionalLinearGaussian", {**disc, **real},
         cn.ConditionalLinearGaussian(["X", "A", "B", "Z"], [[0.0, 1.0, -1.0], [2.0, 0.5, 0.0]],
                                      np.arange(12.0).reshape(2, 3, 2) / 4, [[1.0, 0.5, 2.0], [0.1, 1.0, 3.0]])),
        ("ConditionalLinearGaussian-no-discrete", real, cn.ConditionalLinearGaussian(["X"], 1.0, [2.0], 0.5)),
        ("Function", real, cn.Function(["X", "Z"], lambda x, z: np.sin(x) + z ** 2, noise=st.norm(0.5, 0.3))),
        ("Function-laplace", real, cn.Function(["X"], lambda x: 2 * x, noise=st.laplace(0, 1))),
        ("Function-deterministic", real, cn.Function(["X"], np.tanh)),
        ("Deterministic", real, cn.Deterministic(["X", "Z"], lambda x, z: np.stack([x, z, x * z], axis=-1),
                                                 shape=(3,))),
        ("Deterministic-discrete", real, cn.Deterministic(["X"], lambda x: (x > 0).astype(int),
                                                          states=["neg", "pos"])),
        ("CauchyLinear", real, cn.CauchyLinear(["X", "Z"], [2.0, -1.0], loc=0.5, scale=1.5)),
        ("CauchyLinear-vector", {"V": cn.CauchyLinear(shape=(3,))},
         cn.CauchyLinear(["V"], [np.array([[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]])], loc=[0.0, 1.0], scale=[1.0, 2.0])),
        ("CauchyLinear-deterministic", real, cn.CauchyLinear(["X"], [3.0], scale=0.0)),
        ("Intervened-constant", real, Intervened(1.25, cn.LinearGaussian(["X"], [1.0]))),
        ("Intervened-shift", real, Intervened(lambda v: v + 1.0, cn.LinearGaussian(["X"], [1.0], sigma=0.5))),
        ("NoisyOR", {"A": disc["A"], "C": cn.Categorical([0.6, 0.4])}, cn.NoisyOR(["A", "C"], [0.8, 0.3], leak=0.05)),
        ("NoisyMax", {"A": disc["A"], "B": disc["B"]},
         cn.NoisyMax(["A", "B"], [[[1.0, 0.0, 0.0], [0.2, 0.5, 0.3]], [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.1, 0.3, 0.6]]],
                     leak=[0.9, 0.08, 0.02])),
        ("Logistic", {"A": disc["A"], "X": real["X"]}, cn.Logistic(["A", "X"], [1.5, -0.7], 0.2)),
        ("Logistic-softmax", {"B": disc["B"], "X": real["X"]},
         cn.Logistic(["B", "X"], [[0.5, 1.0], [-0.5, 0.3], [0.0, 0.0]], [0.1, 0.0, -0.2])),
        ("HMM-GaussianEmission", {"A": disc["A"]},
         GaussianEmissionMechanism("A", [[0.0, 1.0], [2.0, -1.0]], [np.eye(2), [[2.0, 0.5], [0.5, 1.0]]])),
    ]


CASES = _cases()
IDS = [c[0] for c in CASES]


def _model(parents, mech):
    """The model of the case; an Intervened mechanism enters through `do`."""
    if isinstance(mech, Intervened):
        return cn.CausalModel({**parents, "node": mech.natural}).do({"node": mech.value})
    return cn.CausalModel({**parents, "node": mech})


def _parent_values(model, n, seed):
    s = model.sample(n, seed=seed)
    return {p: s[p] for p in model.dag.parents("node")}, s["node"]


def test_every_mechanism_class_is_in_the_suite():
    mine = {cls for mod in (tabular, gaussian, function, cauchy, conditional_gaussian, compact)
            for cls in vars(mod).values() if isinstance(cls, type) and issubclass(cls, Mechanism)}
    mine.add(Intervened)
    covered = {type(m) for _, _, m in CASES}
    # Tabular is the shared base of Categorical and CPT, not a kind users build
    assert mine - covered - {tabular.Tabular, compact.Compact, Mechanism} == set()   # shared bases


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_shipped_mechanism_passes_check_mechanism(case, seed):
    """The public conformance checks (causalnet.testing) are this suite: batch-first values, seeds,
    noise vs the deterministic flag, abduction, log_prob per row, repr and to_dict."""
    _, parents, mech = case
    check_mechanism(mech, parents, seed=seed)


@pytest.mark.parametrize("case", [c for c in CASES if not isinstance(c[2], Intervened)],
                         ids=[c[0] for c in CASES if not isinstance(c[2], Intervened)])
def test_parents_is_a_tuple_and_bad_parents_are_refused(case):
    _, _, mech = case
    assert isinstance(mech.parents, tuple)
    for bad in (None, 5, [["A"]], ["A", "A"], {"A": 1}):
        with pytest.raises(ModelError):
            Mechanism(bad)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_spec_refuses_a_parent_of_the_wrong_kind(case):
    _, parents, mech = case
    if not mech.parents or isinstance(mech, (function.Function, function.Deterministic, Intervened)):
        pytest.skip("functions accept any parent kind; roots have none")
    if isinstance(mech, (gaussian.LinearGaussian, compact.Logistic)):   # discrete parents count as numbers; vectors do not
        wrong = {p: cn.CauchyLinear(shape=(2,)) for p in mech.parents}
    else:
        wrong = {p: (cn.LinearGaussian() if _model(parents, mech).specs[p].kind == DISCRETE
                     else cn.Categorical([1.0])) for p in mech.parents}
    with pytest.raises(CausalNetError, match="node"):
        cn.CausalModel({**wrong, "node": mech})


def test_constructors_copy_their_inputs():
    table = np.array([[0.5, 0.5], [0.1, 0.9]])
    w = np.array([1.0, 2.0])
    loc, scale = np.array([0.0, 1.0]), np.array([1.0, 1.0])
    cpt = cn.CPT(["A"], table)
    lg = cn.LinearGaussian(["A", "B"], w)
    cl = cn.CauchyLinear(shape=(2,), loc=loc, scale=scale)
    table[0, 0], w[0], loc[0], scale[0] = 9.0, 9.0, 9.0, 9.0
    assert cpt.table[0, 0] == 0.5 and lg.weights[0] == 1.0 and cl.loc[0] == 0.0 and cl.scale[0] == 1.0
    assert not cpt.table.flags.writeable and not lg.weights.flags.writeable


@pytest.mark.parametrize("make", [
    lambda a: cn.Categorical(a),
    lambda a: cn.CPT(["P"], np.stack([a, a])),
    lambda a: cn.LinearGaussian(["P", "Q"], a),
    lambda a: cn.CauchyLinear(loc=a),
])
def test_a_failed_construction_leaves_the_callers_array_alone(make):
    a = np.array([0.6, np.nan])
    before = a.copy()
    with pytest.raises(ModelError):
        make(a)
    assert_allclose(a, before, equal_nan=True)
    assert a.flags.writeable
