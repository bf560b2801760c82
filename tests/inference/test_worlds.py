"""Counterfactuals across worlds (issue 14): the multi-world network against brute force and Monte Carlo."""

import itertools

import numpy as np
import pytest
import scipy.stats
from conftest import guarded
from numpy.testing import assert_allclose
from test_queries import random_discrete_model

import causalnet as cn
from causalnet import EvidenceError, ModelError
from causalnet.queries import Term, cf


def _intervals(model):
    """Per node (topological order): [(midpoint of u-interval, its length)] over all CDF cuts."""
    order = list(model.dag.topological_order())
    per_node = []
    for v in order:
        cdf = np.cumsum(model.mechanisms[v].table, axis=-1)
        cdf[..., -1] = 1.0
        cuts = np.unique(np.concatenate([[0.0, 1.0], cdf.ravel()]))
        per_node.append(list(zip((cuts[:-1] + cuts[1:]) / 2, np.diff(cuts))))
    return order, per_node


def brute_worlds(model, worlds, targets, evidence=()):
    """Joint of `targets` given `evidence` by enumerating every node's u-intervals.

    worlds : list of dicts node -> state index or ("from", j) (the node's value in world j < i);
        world 0 is the factual world ({}).
    targets : list of (world index, node); evidence : list of ((world index, node), state).
    """
    order, per_node = _intervals(model)
    out = np.zeros([model.spec(v).card for _, v in targets])
    for combo in itertools.product(*per_node):
        p = np.prod([w for _, w in combo])
        u = {v: c[0] for v, c in zip(order, combo)}
        vals = []
        for world in worlds:
            val = {}
            for v in order:
                if v in world:
                    s = world[v]
                    val[v] = vals[s[1]][v] if isinstance(s, tuple) else s
                    continue
                mech = model.mechanisms[v]
                cdf = np.cumsum(mech.table[tuple(val[q] for q in mech.parents)])
                cdf[-1] = 1.0
                val[v] = int(np.sum(u[v] >= cdf))
            vals.append(val)
        if all(vals[w][v] == s for (w, v), s in evidence):
            out[tuple(vals[w][v] for w, v in targets)] += p
    return out / out.sum()


def mediation_model(rng, card_m=2):
    """X -> M -> Y, X -> Y, Z -> X, Z -> Y: stochastic, binary X and Y."""
    d = rng.dirichlet
    return cn.CausalModel({
        "Z": cn.Categorical(d(np.ones(2))),
        "X": cn.CPT(["Z"], d(np.ones(2), size=2)),
        "M": cn.CPT(["X"], d(np.ones(card_m), size=2)),
        "Y": cn.CPT(["Z", "X", "M"], d(np.ones(2), size=4 * card_m).reshape(2, 2, card_m, 2)),
    })


@pytest.mark.parametrize("trial", range(6))
def test_pns_joint_of_two_worlds_matches_enumeration(trial, seed):
    rng = np.random.default_rng(seed + 31 * trial)
    m = random_discrete_model(rng, 4, max_parents=2, max_card=3)
    x, y = "V1", "V3"
    got = m.query([cf(y, {x: 1}), cf(y, {x: 0})])
    ref = brute_worlds(m, [{}, {x: 1}, {x: 0}], [(1, y), (2, y)])
    assert_allclose(got.probs, ref, atol=1e-12)
    assert "multi-world" in got.method and got.variables == ("V3_{V1=1}", "V3_{V1=0}")
    s = m.query("P(V3_{V1=1}=s1, V3_{V1=0}=s0)")                  # the probability of necessity and sufficiency
    assert s == pytest.approx(ref[1, 0], abs=1e-12)


def test_pns_equals_pearl_decomposition(seed):
    # PNS = P(x, y) PN + P(x', y') PS  (Pearl, Causality, lemma 9.2.8), on the twin networks
    for trial in range(5):
        m = mediation_model(np.random.default_rng(seed + trial))
        pns = m.query("P(Y_{X=1}=1, Y_{X=0}=0)")
        pn = cn.probability_of_necessity(m, "X", "Y", exposed=1, unexposed=0, outcome_state=1)
        ps = cn.probability_of_sufficiency(m, "X", "Y", exposed=1, unexposed=0, outcome_state=1)
        joint = m.query(["X", "Y"])
        assert pns == pytest.approx(joint[(1, 1)] * pn + joint[(0, 0)] * ps, abs=1e-12)
        ref = brute_worlds(m, [{}, {"X": 1}, {"X": 0}], [(1, "Y"), (2, "Y")])
        assert pns == pytest.approx(ref[1, 0], abs=1e-12)


@pytest.mark.parametrize("card_m", [2, 3])
def test_nested_counterfactual_matches_enumeration(card_m, seed):
    for trial in range(4):
        m = mediation_model(np.random.default_rng(seed + 7 * trial), card_m)
        got = m.query("P(Y_{X=1, M=M_{X=0}})")
        ref = brute_worlds(m, [{}, {"X": 0}, {"X": 1, "M": ("from", 1)}], [(2, "Y")])
        assert_allclose(got.probs, ref, atol=1e-12)
        api = m.query(cf("Y", {"X": 1, "M": cf("M", {"X": 0})}))
        assert_allclose(api.probs, got.probs, atol=0)
        # with factual evidence and a target in a third world
        got = m.query("P(Y_{X=1, M=M_{X=0}}, Y_{X=0} | X=1, Y=0)")
        ref = brute_worlds(m, [{}, {"X": 0}, {"X": 1, "M": ("from", 1)}], [(2, "Y"), (1, "Y")],
                           [((0, "X"), 1), ((0, "Y"), 0)])
        assert_allclose(got.probs, ref, atol=1e-12)


@pytest.mark.parametrize("trial", range(6))
def test_joint_factual_and_counterfactual_worlds(trial, seed):
    rng = np.random.default_rng(seed + 101 * trial)
    m = random_discrete_model(rng, 5, max_parents=2, max_card=2)
    worlds = [{}, {"V1": 1}, {"V1": 0, "V2": 1}]
    ev = [((0, "V4"), 0), ((2, "V3"), 1)]
    with np.errstate(invalid="ignore"):
        ref = brute_worlds(m, worlds, [(1, "V4"), (0, "V3")], ev)
    call = lambda: m.query([cf("V4", {"V1": 1}), "V3"],  # noqa: E731
                           evidence={"V4": 0, cf("V3", {"V1": 0, "V2": 1}): 1})
    if not np.all(np.isfinite(ref)):
        with pytest.raises(EvidenceError):
            call()
        return
    assert_allclose(call().probs, ref, atol=1e-12)
    s = m.query("P(V4_{V1=1}=1, V3=0 | V4=0, V3_{V1=0, V2=1}=1)")
    assert s == pytest.approx(ref[1, 0], abs=1e-12)


def test_one_world_is_unchanged_and_worlds_are_shared(seed):
    m = mediation_model(np.random.default_rng(seed))
    one = m.counterfactual("Y", evidence={"X": 1, "Y": 1}, do={"X": 0})
    assert one.variables == ("Y*",) and "twin network" in one.method
    again = m.query([cf("Y", {"X": 0})], evidence={"X": 1, "Y": 1})
    assert_allclose(again.probs, one.probs, atol=0)
    # the same subscript twice is one world: its two terms agree with probability one
    d = m.query([cf("Y", {"X": 0}), cf("M", {"X": 0})])
    assert_allclose(d.probs, m.query(["Y", "M"], do={"X": 0}).probs, atol=1e-12)
    # a world set to its factual value: identical to the factual copy
    same = m.query([cf("Y", {"X": 1}), "Y"], evidence={"X": 1})
    assert same.probs[0, 1] == pytest.approx(0.0, abs=1e-15) and same.probs[1, 0] == pytest.approx(0.0, abs=1e-15)


def test_batched_multi_world(seed):
    m = mediation_model(np.random.default_rng(seed))
    xs = np.array([0, 1, 1, 0])
    d = m.query([cf("Y", {"X": 1}), cf("Y", {"X": 0})], evidence={"Z": xs})
    assert d.probs.shape == (4, 2, 2)
    for i, z in enumerate(xs):
        assert_allclose(d.probs[i], m.query([cf("Y", {"X": 1}), cf("Y", {"X": 0})], evidence={"Z": int(z)}).probs,
                        atol=1e-12)
    per_row = m.query(cf("Y", {"X": xs, "M": cf("M", {"X": 1 - xs})}))
    for i, x in enumerate(xs):
        one = m.query(cf("Y", {"X": int(x), "M": cf("M", {"X": int(1 - x)})}))
        assert_allclose(per_row.probs[i], one.probs, atol=1e-12)


# -- linear-Gaussian: Monte Carlo on the SCM -------------------------------------------------------

W = {"XM": 0.8, "XY": 0.5, "MY": 1.5, "ZX": 0.7, "ZY": -0.4}


def gaussian_mediation():
    return cn.CausalModel({
        "Z": cn.LinearGaussian(sigma=1.0),
        "X": cn.LinearGaussian(["Z"], [W["ZX"]], sigma=1.0),
        "M": cn.LinearGaussian(["X"], [W["XM"]], bias=0.3, sigma=0.6),
        "Y": cn.LinearGaussian(["Z", "X", "M"], [W["ZY"], W["XY"], W["MY"]], bias=-1.0, sigma=0.5),
    })


def _scm(u, x1=None, m_from=None):
    """The SCM with noise u (N, 4) under X := x1 and M := m_from (values)."""
    z = u[:, 0]
    x = W["ZX"] * z + u[:, 1] if x1 is None else np.full_like(z, x1)
    m = 0.3 + W["XM"] * x + 0.6 * u[:, 2] if m_from is None else m_from
    y = -1.0 + W["ZY"] * z + W["XY"] * x + W["MY"] * m + 0.5 * u[:, 3]
    return x, m, y


def test_gaussian_nested_and_joint_match_monte_carlo(seed):
    g = gaussian_mediation()
    u = np.random.default_rng(seed).standard_normal((400_000, 4))
    _, m0, y0 = _scm(u, x1=0.0)
    _, _, y1 = _scm(u, x1=1.0)
    _, _, y10 = _scm(u, x1=1.0, m_from=m0)
    nested = g.query("P(Y_{X=1, M=M_{X=0}})")
    assert "multi-world joint Gaussian" in nested.method
    assert nested.mean[0] == pytest.approx(y10.mean(), abs=0.01)
    assert nested.cov[0, 0] == pytest.approx(y10.var(), rel=0.02)
    joint = g.query([cf("Y", {"X": 1.0}), cf("Y", {"X": 0.0}), cf("Y", {"X": 1.0, "M": cf("M", {"X": 0.0})})])
    assert_allclose(joint.cov, np.cov(np.stack([y1, y0, y10])), rtol=0.03)
    # exact: Y_{1,M_0} - Y_0 = XY (the natural direct effect, no noise left)
    d = g.query([cf("Y", {"X": 1.0, "M": cf("M", {"X": 0.0})}), cf("Y", {"X": 0.0})])
    diff = np.array([1.0, -1.0])
    assert diff @ d.mean == pytest.approx(W["XY"], abs=1e-12)
    assert diff @ d.cov @ diff == pytest.approx(0.0, abs=1e-12)


def test_gaussian_multi_world_with_factual_evidence(seed):
    g = gaussian_mediation()
    r = g.query([cf("Y", {"X": 1.0}), cf("Y", {"X": 0.0})], evidence={"Z": 0.5, "X": 2.0, "M": 1.0, "Y": 1.0})
    # every noise is determined: Y_x = Y + (x - X)(XY + MY XM)
    te = W["XY"] + W["MY"] * W["XM"]
    assert_allclose(r.mean, [1.0 - te, 1.0 - 2 * te], atol=1e-12)
    assert_allclose(r.cov, np.zeros((2, 2)), atol=1e-12)
    # the same through the one-world engine
    one = g.counterfactual("Y", evidence={"Z": 0.5, "X": 2.0, "M": 1.0, "Y": 1.0}, do={"X": 1.0})
    assert one.mean[0] == pytest.approx(r.mean[0], abs=1e-12)
    batched = g.query(cf("Y", {"X": np.array([1.0, 0.0]), "M": cf("M", {"X": 0.0})}))
    assert_allclose(batched.mean[:, 0], [g.query("P(Y_{X=1, M=M_{X=0}})").mean[0],
                                         g.query("Y", do={"X": 0.0}).mean[0]], atol=1e-12)


# -- errors --------------------------------------------------------------------------------------


def test_multi_world_errors():
    m = mediation_model(np.random.default_rng(0))
    with pytest.raises(EvidenceError, match="own value"):
        m.query("P(Y_{X=1, M=Z_{X=0}})")
    with pytest.raises(EvidenceError, match="unknown"):
        m.query("P(Y_{X=1, M=Q_{X=0}})")
    with pytest.raises(EvidenceError, match="must not carry a value"):
        cf("Y", {"M": Term("M", (("X", 0),), 1)})
    with pytest.raises(EvidenceError, match="do\\(\\.\\.\\.\\)"):
        m.query("P(Y_{X=1} | do(Z=0), Y_{X=0}=1)")
    with pytest.raises(ModelError, match="several worlds .*Y_\\{X=1\\}.*exactly on discrete"):
        m.query("P(Y_{X=1}, Y_{X=0})", method="sampling")
    with pytest.raises(EvidenceError, match="probability zero|impossible|zero"):
        m.query([cf("Y", {"X": 1})], evidence={cf("X", {"X": 1}): 0})
    nonlinear = cn.CausalModel({"X": cn.Function([], lambda: 0.0, noise=scipy.stats.norm()),
                                "Y": cn.Function(["X"], lambda x: x ** 2, noise=scipy.stats.norm())})
    err = guarded(nonlinear.query, "P(Y_{X=1}, Y_{X=0})")
    assert isinstance(err, ModelError) and "several worlds" in str(err)


@pytest.mark.parametrize("query", [
    "P(Y_{X=1, M=M_{X=0}}=1)", "P(Y_{X=1}=1, Y_{X=0}=0 | X=0)", "P(Y_{X=1}, Y_{X=0}=1)",
    "P(Y_{X=2}, Y_{X=0})", "P(Y_{X=1, M=M_{X=1, M=M_{X=0}}})", "P(Y_{X=1} | Y_{X=1}=0)",
    "P(M_{X=0}, M_{X=1} | M=1, X=0)", "P(Y_{X=1}=1 | Y_{X=0}=1, X=1, Y=0, Z=1)",
])
def test_multi_world_robustness(query):
    m = mediation_model(np.random.default_rng(3))
    out = guarded(m.query, query)
    if not isinstance(out, cn.CausalNetError):
        probs = out if isinstance(out, float) else out.probs
        assert np.all((np.asarray(probs) >= -1e-15) & (np.asarray(probs) <= 1 + 1e-12))
