"""One parametrized suite over every mechanism class: shapes, seeds, errors, the interface.

Each case builds a small model around one mechanism (its parents are simple roots)
and checks what the interface promises for every kind (mechanisms/base.py): the spec,
batch-first noise and values, the same seed giving the same values, abduction
inverting evaluation, densities of shape (n,), JSON descriptions, a caller's
arrays left alone, and bad parents refused with ModelError. The tensor ops have
their own op suite of this shape (test_tensor.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import CausalNetError, ModelError
from causalnet.mechanisms import cauchy, conditional_gaussian, function, gaussian, tabular
from causalnet.mechanisms.base import DISCRETE, Mechanism, as_generator
from causalnet.mechanisms.intervened import Intervened


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
    mine = {cls for mod in (tabular, gaussian, function, cauchy, conditional_gaussian)
            for cls in vars(mod).values() if isinstance(cls, type) and issubclass(cls, Mechanism)}
    mine.add(Intervened)
    covered = {type(m) for _, _, m in CASES}
    # Tabular is the shared base of Categorical and CPT, not a kind users build
    assert mine - covered - {tabular.Tabular, Mechanism} == set()


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("n", [1, 7])
def test_values_are_batch_first(case, n, seed):
    _, parents, mech = case
    m = _model(parents, mech)
    spec = m.specs["node"]
    x = m.sample(n, seed=seed)["node"]
    assert x.shape == (n, *spec.shape)
    spec.check_value("node", x, n=n)
    if spec.kind == DISCRETE:
        assert x.dtype == np.int64
    else:
        assert np.all(np.isfinite(x))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_same_seed_same_values(case, seed):
    _, parents, mech = case
    m = _model(parents, mech)
    a, b = m.sample(50, seed=seed)["node"], m.sample(50, seed=seed)["node"]
    assert np.array_equal(a, b)
    noise = [mech.sample_noise(4, as_generator(seed), m.specs["node"]) for _ in range(2)]
    assert (noise[0] is None and noise[1] is None) or np.array_equal(noise[0], noise[1])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_noise_matches_deterministic_flag(case, seed):
    _, parents, mech = case
    spec = _model(parents, mech).specs["node"]
    u = mech.sample_noise(6, as_generator(seed), spec)
    if mech.deterministic and not isinstance(mech, Intervened):
        assert u is None
    elif u is not None:
        assert u.shape[0] == 6


@pytest.mark.parametrize("case", [c for c in CASES if c[2].can_abduct], ids=[c[0] for c in CASES if c[2].can_abduct])
def test_abduct_inverts_evaluate(case, seed):
    _, parents, mech = case
    m = _model(parents, mech)
    spec = m.specs["node"]
    pa, _ = _parent_values(m, 20, seed)
    u = mech.sample_noise(20, as_generator(seed + 1), spec)
    x = mech.evaluate("node", pa, u, spec, n=20)
    u2 = mech.abduct("node", x, pa, spec)
    assert_allclose(mech.evaluate("node", pa, u2, spec, n=20), x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob_has_one_value_per_row_or_says_why(case, seed):
    _, parents, mech = case
    m = _model(parents, mech)
    spec = m.specs["node"]
    pa, x = _parent_values(m, 9, seed)
    try:
        lp = mech.log_prob("node", x, pa, spec)
    except ModelError as e:
        assert mech.deterministic and "node" in str(e)
        return
    assert lp.shape == (9,)
    assert not np.any(np.isnan(lp)) and np.all(lp < np.inf)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_to_dict_and_repr(case):
    _, _, mech = case
    assert isinstance(repr(mech), str)
    try:
        d = mech.to_dict()
    except ModelError as e:           # functions and interventions have no JSON form
        assert type(mech).__name__ in str(e) or "cannot" in str(e)
        return
    assert d["type"] == type(mech).__name__


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
    if isinstance(mech, gaussian.LinearGaussian):   # discrete parents count as numbers; vectors do not
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
