"""NoisyOR, NoisyMax, Logistic: tables vs pyAgrum and Monte Carlo of their structural equations, engines, errors."""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError, ModelError, ResourceError
from causalnet.inference.approximate import model_factor_graph
from causalnet.inference.discrete import discrete_network
from causalnet.inference.loopy import propagate


def agrum_table(bn, child, parents, cards):
    """P(child | parents) from pyAgrum by exact inference with the parents observed, shape (*cards, 2)."""
    import pyagrum as gum

    out = np.empty((*cards, 2))
    for cfg in itertools.product(*[range(c) for c in cards]):
        ie = gum.LazyPropagation(bn)
        ie.setEvidence(dict(zip(parents, cfg)))
        ie.makeInference()
        out[cfg] = ie.posterior(child).toarray()
    return out


def test_noisy_or_table_matches_pyagrum_add_noisy_or():
    import pyagrum as gum

    leak, w = 0.1, [0.6, 0.8, 0.35]            # pyAgrum's weights: P(Y | only cause i) (leak included)
    bn = gum.BayesNet()
    ids = [bn.add(gum.LabelizedVariable(f"X{i}", "", 2)) for i in range(3)]
    y = bn.addNoisyOR(gum.LabelizedVariable("Y", "", 2), leak)
    for i, wi in zip(ids, w):
        bn.addWeightedArc(i, y, wi)
        bn.cpt(i).fillWith([0.5, 0.5])
    probs = 1.0 - (1.0 - np.array(w)) / (1.0 - leak)       # causalnet's p_i exclude the leak
    m = cn.CausalModel({**{f"X{i}": cn.Categorical([0.5, 0.5]) for i in range(3)},
                        "Y": cn.NoisyOR([f"X{i}" for i in range(3)], probs, leak=leak)})
    assert_allclose(discrete_network(m).cpts["Y"], agrum_table(bn, "Y", ["X0", "X1", "X2"], [2, 2, 2]), atol=1e-12)


def test_logistic_table_matches_pyagrum_add_logit():
    import pyagrum as gum

    bn = gum.BayesNet()
    a = bn.add(gum.RangeVariable("A", "", 0, 2))
    b = bn.add(gum.RangeVariable("B", "", 0, 1))
    y = bn.addLogit(gum.LabelizedVariable("Y", "", 2), 0.5)
    bn.addWeightedArc(a, y, 0.7)
    bn.addWeightedArc(b, y, -1.2)
    m = cn.CausalModel({"A": cn.Categorical([1 / 3] * 3), "B": cn.Categorical([0.5, 0.5]),
                        "Y": cn.Logistic(["A", "B"], [0.7, -1.2], bias=0.5)})
    assert_allclose(discrete_network(m).cpts["Y"], agrum_table(bn, "Y", ["A", "B"], [3, 2]), atol=1e-12)


def compact_model():
    return cn.CausalModel({
        "A": cn.Categorical([0.6, 0.4]), "B": cn.Categorical([0.2, 0.5, 0.3], states=["lo", "mid", "hi"]),
        "C": cn.Categorical([0.7, 0.3]),
        "OR": cn.NoisyOR(["A", "B", "C"], [0.7, 0.5, 0.9], leak=0.05, on={"A": 1, "B": "hi", "C": 1}),
        "MAX": cn.NoisyMax(["A", "B"], [[[1.0, 0.0, 0.0], [0.2, 0.5, 0.3]],
                                        [[0.9, 0.1, 0.0], [0.5, 0.5, 0.0], [0.1, 0.3, 0.6]]], [0.8, 0.15, 0.05]),
        "SOFT": cn.Logistic(["A", "B"], [[0.0, 0.0], [1.0, -0.5], [-0.3, 0.8]], bias=[0.0, 0.2, -0.1]),
    })


@pytest.mark.parametrize("node", ["OR", "MAX", "SOFT"])
def test_tables_equal_the_frequencies_of_the_structural_equation(node, seed):
    m = compact_model()
    s = m.sample(200_000, seed=seed)
    table = discrete_network(m).cpts[node]                                 # (2, 3, [2,] K)
    parents = list(m.dag.parents(node))
    for cfg in itertools.product(*[range(m.specs[p].card) for p in parents]):
        rows = np.all([s[p] == k for p, k in zip(parents, cfg)], axis=0)
        freq = np.bincount(s[node][rows], minlength=table.shape[-1]) / rows.sum()
        se = np.sqrt(table[cfg] * (1 - table[cfg]) / rows.sum())
        assert np.all(np.abs(freq - table[cfg]) <= 5 * se + 1e-12), (cfg, freq, table[cfg])


def test_log_prob_is_the_table(seed):
    m = compact_model()
    s = m.sample(500, seed=seed)
    net = discrete_network(m)
    for node in ("OR", "MAX", "SOFT"):
        mech = m.mechanisms[node]
        got = mech.log_prob(node, s[node], {p: s[p] for p in mech.parents}, m.specs[node])
        idx = tuple(s[p] for p in m.dag.parents(node)) + (s[node],)
        assert_allclose(got, np.log(net.cpts[node][idx]))


def test_noisy_or_counterfactual_uses_its_inhibitors(seed):
    m = cn.CausalModel({"Flu": cn.Categorical([0.9, 0.1]), "Cold": cn.Categorical([0.7, 0.3]),
                        "Fever": cn.NoisyOR(["Flu", "Cold"], [0.8, 0.3], leak=0.05)})
    got = m.counterfactual("Fever", evidence={"Fever": 1, "Flu": 1}, do={"Flu": 0}, seed=seed, n_samples=100_000)
    # Fever = L or (Flu and A_flu) or (Cold and A_cold); the world without flu keeps L, Cold, A_cold
    p_fever = 1 - 0.95 * 0.2 * (0.7 + 0.3 * 0.7)
    want = (1 - 0.95 * (0.7 + 0.3 * 0.7)) / p_fever
    assert "noise posterior" in got.method
    assert abs(got.probs[1] - want) <= 5 * got.std_err[1]


@pytest.mark.parametrize("node", ["OR", "SOFT"])
def test_abducted_noise_reproduces_the_value(node, seed):
    m = compact_model()
    s = m.sample(2000, seed=seed)
    mech = m.mechanisms[node]
    pa = {p: s[p] for p in mech.parents}
    u = mech.abduct_sample(node, s[node], pa, m.specs[node], np.random.default_rng(seed))
    assert np.array_equal(mech.evaluate(node, pa, u, m.specs[node]), s[node])


def test_logistic_abduction_matches_the_noise_posterior(seed):
    m = compact_model()
    mech, spec = m.mechanisms["SOFT"], m.specs["SOFT"]
    rng = np.random.default_rng(seed)
    n = 200_000
    pa = {"A": np.ones(n, dtype=np.int64), "B": np.full(n, 2)}
    g = mech.sample_noise(n, rng, spec)
    y = mech.evaluate("SOFT", pa, g, spec)
    post = mech.abduct_sample("SOFT", y, pa, spec, rng)
    for k in range(3):
        a, b = g[y == k], post[y == k]
        assert_allclose(a.mean(axis=0), b.mean(axis=0), atol=5 * a.std(axis=0).max() / np.sqrt(len(a)) + 0.01)


def test_exact_queries_expand_and_loopy_keeps_noisy_or_closed_form(seed):
    rng = np.random.default_rng(seed)
    mechs = {f"D{i}": cn.Categorical([0.9, 0.1]) for i in range(6)}
    for j in range(8):
        ps = [f"D{i}" for i in rng.choice(6, size=3, replace=False)]
        mechs[f"F{j}"] = cn.NoisyOR(ps, rng.uniform(0.3, 0.9, size=3), leak=0.01)
    m = cn.CausalModel(mechs)
    closed, expanded = model_factor_graph(m), model_factor_graph(m, expand=True)
    assert closed.noisy is not None and expanded.noisy is None
    u = np.ones((3, closed.cards.size, 2))
    u[0, 6:10] = [[0, 1], [1, 0], [0, 1], [1, 0]]
    u[1, 8:14] = [[0, 1]] * 6
    a = propagate(closed, u, tol=1e-12, max_iter=500)
    b = propagate(expanded, u, tol=1e-12, max_iter=500)
    assert a.iterations == b.iterations
    assert_allclose(a.beliefs, b.beliefs, atol=1e-12)
    ev = {"F0": 1, "F2": 0}
    within = m.query("D1", evidence=ev, method="gibbs", n_samples=20_000, seed=seed)
    exact = m.query("D1", evidence=ev)
    assert np.all(np.abs(within.probs - exact.probs) <= 5 * np.maximum(within.std_err, 1e-3))


def test_noisy_or_on_a_tree_is_exact_by_loopy():
    m = cn.CausalModel({"A": cn.Categorical([0.7, 0.3]), "B": cn.Categorical([0.6, 0.4]),
                        "C": cn.CPT(["A"], [[0.5, 0.5], [0.1, 0.9]]),
                        "Y": cn.NoisyOR(["A", "B"], [0.6, 0.8], leak=0.1)})
    for ev in ({"Y": 1}, {"Y": 0, "C": 1}, {"Y": [0, 1], "C": [1, 1]}):
        for v in ("A", "B"):
            assert_allclose(m.query(v, evidence=ev, method="loopy").probs, m.query(v, evidence=ev).probs, atol=1e-12)


def test_a_finding_with_many_causes_is_answered_without_its_table():
    mechs = {f"D{i}": cn.Categorical([0.95, 0.05]) for i in range(40)}
    mechs["F"] = cn.NoisyOR([f"D{i}" for i in range(40)], np.full(40, 0.3), leak=0.01)    # 2^40 rows
    mechs["G"] = cn.NoisyOR(["D0"], [0.9])
    m = cn.CausalModel(mechs)
    with pytest.raises(ResourceError, match="expanded table of NoisyOR"):
        m.query("D0", evidence={"F": 1}, method="exact")
    r = m.query("D0", evidence={"F": 1, "G": 0})
    assert "loopy belief propagation" in r.method and "expanded table" in r.method
    # a tree: exact. P(D0 | F=1, G=0) by hand: F=1 given D0 over the other 39 causes in closed form
    q_rest = np.prod(0.95 + 0.05 * 0.7 * np.ones(39)) * 0.99
    pf = np.array([1 - q_rest, 1 - q_rest * 0.7])                          # P(F=1 | D0)
    pg0 = np.array([1.0, 0.1])                                             # P(G=0 | D0)
    post = np.array([0.95, 0.05]) * pf * pg0
    assert_allclose(r.probs, post / post.sum(), atol=1e-12)


def test_bad_parameters_are_model_errors():
    with pytest.raises(ModelError, match=r"probs must be in \[0, 1\]"):
        cn.NoisyOR(["A"], [1.5])
    with pytest.raises(ModelError, match="leak must be in"):
        cn.NoisyOR(["A"], [0.5], leak=1.0)
    with pytest.raises(ModelError, match="must have shape"):
        cn.NoisyOR(["A", "B"], [0.5])
    with pytest.raises(ModelError, match="no state 'x'"):
        cn.CausalModel({"A": cn.Categorical([0.5, 0.5]), "Y": cn.NoisyOR(["A"], [0.5], on="x")})
    with pytest.raises(ModelError, match="summing to 1"):
        cn.NoisyMax(["A"], [[[0.5, 0.6]]], [1.0, 0.0])
    with pytest.raises(ModelError, match="weights must have shape"):
        cn.Logistic(["A", "B"], [1.0, 2.0, 3.0])
    with pytest.raises(ModelError, match="needs discrete parents"):
        cn.CausalModel({"A": cn.LinearGaussian(), "Y": cn.NoisyOR(["A"], [0.5])})


def test_logistic_with_a_real_parent_is_answered_by_sampling(seed):
    m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.Logistic(["X"], [2.0], bias=-1.0)})
    r = m.query("Y", n_samples=50_000, seed=seed)
    from scipy import integrate, special, stats
    want = integrate.quad(lambda x: special.expit(2 * x - 1) * stats.norm.pdf(x), -10, 10)[0]
    assert "likelihood weighting" in r.method and abs(r.probs[1] - want) <= 5 * r.std_err[1]
    with pytest.raises(EvidenceError):
        m.query("Y", evidence={"Y": 2})
