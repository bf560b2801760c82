"""The strong elimination for CG networks: joints of both kinds, MAP, scale, refusals and counterfactuals.

Oracles: the brute force of ``test_conditional_gaussian`` (every configuration
of every discrete node, each Gaussian built as ``(I - B)^{-1}`` and conditioned
with the textbook formulas), a forward recursion written here for a long
chain, and Monte Carlo on the SCM (likelihood weighting over the exogenous
noises, written here) for counterfactuals.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as hst
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import ModelError
from tests.inference.test_conditional_gaussian import brute_force, random_cg


def _configs(info) -> int:
    return int(np.prod([x["card"] for x in info.values() if x["kind"] == "d"]))


def _raw_total(info, evidence):
    """p(evidence) by brute force: the unnormalised sum of the configuration weights."""
    import itertools

    import scipy.stats as st
    disc = [v for v in info if info[v]["kind"] == "d"]
    reals = [v for v in info if info[v]["kind"] == "r"]
    ridx = {v: i for i, v in enumerate(reals)}
    total = 0.0
    for states in itertools.product(*[range(info[v]["card"]) for v in disc]):
        s = dict(zip(disc, states))
        p = np.prod([info[v]["table"][tuple(s[q] for q in info[v]["parents"]) + (s[v],)] for v in disc])
        p *= np.prod([float(s[v] == evidence[v]) for v in disc if v in evidence])
        B, b, D = np.zeros((len(reals),) * 2), np.zeros(len(reals)), np.zeros(len(reals))
        for v in reals:
            k = tuple(s[q] for q in info[v]["dpar"])
            b[ridx[v]], D[ridx[v]] = info[v]["b"][k], info[v]["var"][k]
            for j, q in enumerate(info[v]["rpar"]):
                B[ridx[v], ridx[q]] = info[v]["w"][k][j]
        A = np.linalg.inv(np.eye(len(reals)) - B)
        obs = [ridx[v] for v in reals if v in evidence]
        if obs:
            S = A @ np.diag(D) @ A.T
            p *= st.multivariate_normal((A @ b)[obs], S[np.ix_(obs, obs)]).pdf([evidence[v] for v in reals
                                                                                 if v in evidence])
        total += p
    return total


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hst.integers(0, 10**6), n_nodes=hst.integers(3, 12))
def test_mixed_joint_against_brute_force(seed, n_nodes):
    mechs, info = random_cg(seed, n_nodes)
    assume(_configs(info) <= 400)
    disc = [v for v in info if info[v]["kind"] == "d"]
    reals = [v for v in info if info[v]["kind"] == "r"]
    assume(disc and reals)
    rng = np.random.default_rng(seed)
    td, tr = disc[int(rng.integers(len(disc)))], reals[int(rng.integers(len(reals)))]
    evidence = {v: (float(rng.normal()) if info[v]["kind"] == "r" else int(rng.integers(info[v]["card"])))
                for v in info if v not in (td, tr) and rng.random() < 0.3}
    m = cn.CausalModel(mechs)
    res = m.query([tr, td], evidence=evidence, method="exact")
    assert isinstance(res, cn.MixedDistribution)
    configs, w, mu, S, names = brute_force(info, evidence)
    i = names.index(tr)
    probs = np.zeros(info[td]["card"])
    cond_mean = np.zeros(info[td]["card"])
    for s, wk, mk in zip(configs, w, mu):
        probs[s[td]] += wk
        cond_mean[s[td]] += wk * mk[i]
    assert_allclose(res.marginal([td]).probs, probs, atol=1e-9)
    mean = w @ mu[:, i]
    assert_allclose(res.marginal([tr]).mean[0], mean, rtol=1e-9, atol=1e-9)
    assert_allclose(res.marginal([tr]).var[0], w @ (S[:, i, i] + mu[:, i] ** 2) - mean ** 2, rtol=1e-8, atol=1e-9)
    got = np.zeros(info[td]["card"])                                   # E[real target; discrete target = k]
    for k in range(res.n_components):
        got[res.assignments[k, 0]] += res.weights[k] * res.means[k, 0]
    assert_allclose(got, cond_mean, atol=1e-9)
    assert_allclose(res.log_evidence, np.log(_raw_total(info, evidence)), rtol=1e-9, atol=1e-9)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hst.integers(0, 10**6), n_nodes=hst.integers(3, 10))
def test_map_of_the_discrete_part_against_brute_force(seed, n_nodes):
    mechs, info = random_cg(seed, n_nodes)
    assume(_configs(info) <= 400)
    disc = [v for v in info if info[v]["kind"] == "d"]
    reals = [v for v in info if info[v]["kind"] == "r"]
    assume(len(disc) >= 2 and reals)
    rng = np.random.default_rng(seed + 3)
    evidence = {v: float(rng.normal()) for v in reals if rng.random() < 0.6}
    m = cn.CausalModel(mechs)
    configs, w, *_ = brute_force(info, evidence)
    assume(np.sort(w)[-1] - np.sort(w)[-2] > 1e-9)                       # a unique maximum
    mpe, logp = m.map(evidence=evidence)
    best = configs[int(np.argmax(w))]
    assert {v: m.specs[v].states.index(s) for v, s in mpe.items()} == best
    total = _raw_total(info, evidence)
    assert_allclose(logp, np.log(w.max() * total), rtol=1e-9, atol=1e-9)
    target = disc[0]                                                      # marginal MAP of one node
    marg = np.zeros(info[target]["card"])
    for s, wk in zip(configs, w):
        marg[s[target]] += wk
    assume(np.sort(marg)[-1] - np.sort(marg)[-2] > 1e-9)
    one, _ = m.map([target], evidence=evidence)
    assert m.specs[target].states.index(one[target]) == int(np.argmax(marg))


def test_batched_map_equals_one_map_per_row():
    m = cn.gallery.load("waste-incinerator")
    dust = np.array([2.0, 5.6, 8.0])
    batch, logp = m.map(["Filter", "Burning"], evidence={"Dust": dust, "CO2": -2.0})
    for t in range(3):
        one, lp = m.map(["Filter", "Burning"], evidence={"Dust": float(dust[t]), "CO2": -2.0})
        assert {k: batch[k][t] for k in one} == one
        assert_allclose(logp[t], lp, rtol=1e-12)


def test_map_of_a_real_node_is_refused():
    with pytest.raises(ModelError, match="'Dust' is real"):
        cn.gallery.load("waste-incinerator").map(["Dust"])


def test_a_long_chain_past_any_enumeration_against_a_forward_recursion():
    """40 binary nodes in a chain, each with an observed real child: 2^40 configurations for an
    enumeration, a few small tables for the strong elimination."""
    T, rng = 40, np.random.default_rng(0)
    stay = np.array([[0.9, 0.1], [0.2, 0.8]])
    mu, sd = np.array([-1.0, 1.5]), np.array([1.0, 0.7])
    mechs = {"D0": cn.Categorical([0.5, 0.5])}
    for t in range(T):
        if t:
            mechs[f"D{t}"] = cn.CPT([f"D{t - 1}"], stay)
        mechs[f"X{t}"] = cn.ConditionalLinearGaussian([f"D{t}"], mu, np.zeros((2, 0)), sd ** 2)
    m = cn.CausalModel(mechs)
    x = rng.normal(size=(3, T))
    res = m.query(f"D{T - 1}", evidence={f"X{t}": x[:, t] for t in range(T)}, method="exact")
    import scipy.stats as st
    alpha = np.full((3, 2), 0.5) * st.norm(mu, sd).pdf(x[:, :1])
    alpha /= alpha.sum(axis=1, keepdims=True)
    for t in range(1, T):
        alpha = (alpha @ stay) * st.norm(mu, sd).pdf(x[:, t:t + 1])
        alpha /= alpha.sum(axis=1, keepdims=True)
    assert_allclose(res.probs, alpha, atol=1e-10)


def _logistic_model():
    return cn.CausalModel({"X": cn.LinearGaussian(), "T": cn.Categorical([0.5, 0.5]),
                           "D": cn.Logistic(["X"], [2.0]),
                           "Y": cn.ConditionalLinearGaussian(["T", "X"], [0.0, 1.0], [[1.0], [1.0]], [1.0, 1.0])})


def test_a_logistic_child_of_a_real_node_is_sampled_and_says_why():
    m = _logistic_model()
    approx = m.query("Y", evidence={"D": 1}, n_samples=4000, seed=0)
    assert approx.method.startswith("likelihood weighting")
    assert "discrete node 'D' has the real parent 'X'" in approx.method
    with pytest.raises(ModelError, match="'D' has the real parent 'X'"):
        m.query("Y", evidence={"D": 1}, method="exact")


def test_past_the_limits_auto_samples_and_says_so():
    mechs = {f"D{i}": cn.Categorical([0.5, 0.5]) for i in range(13)}
    mechs["Y"] = cn.ConditionalLinearGaussian([f"D{i}" for i in range(13)], np.zeros((2,) * 13),
                                              np.zeros((2,) * 13 + (0,)), np.ones((2,) * 13))
    m = cn.CausalModel(mechs)
    with cn.limits.override(max_table_bytes=2**18):             # 8192 configurations: no; 2000 samples: yes
        res = m.query("Y", evidence={"D0": 1}, n_samples=2000, seed=0)
    assert "likelihood weighting" in res.method and "ResourceError" in res.method
    assert "configurations of the discrete nodes" in res.method


# -- counterfactuals against Monte Carlo on the SCM ------------------------------------------------

def _scm():
    mechs = {"T": cn.Categorical([0.3, 0.7], states=["a", "b"]),
             "A": cn.LinearGaussian([], [], bias=0.5, sigma=1.0),
             "Y": cn.ConditionalLinearGaussian(["A", "T"], [1.0, -2.0], [[0.5], [2.0]], [0.4, 1.5]),
             "Z": cn.CPT(["T"], [[0.6, 0.3, 0.1], [0.2, 0.3, 0.5]]),
             "W": cn.ConditionalLinearGaussian(["Z", "Y"], [0.0, 1.0, -1.0], [[1.0], [-0.5], [2.0]],
                                               [0.5, 1.0, 0.2])}
    return cn.CausalModel(mechs), mechs


def _monte_carlo(mechs, n, seed, y_obs, z_obs, t_cf, shift_a=0.0):
    """Likelihood weighting over the exogenous noises; returns weights and the counterfactual W*, Z*."""
    rng = np.random.default_rng(seed)
    t = (rng.random(n) >= 0.3).astype(int)
    a = 0.5 + rng.standard_normal(n)
    my, sy = mechs["Y"], np.sqrt(mechs["Y"].variance)
    mean_y = my.intercept[t] + my.weights[t, 0] * a
    u_y = (y_obs - mean_y) / sy[t]                                     # abducted exactly given the evidence
    w = np.exp(-0.5 * u_y ** 2) / sy[t]                                # density of Y = y_obs
    cdf = np.cumsum(mechs["Z"].table, axis=-1)
    u_z = rng.random(n)
    z = (u_z[:, None] >= cdf[t]).sum(axis=1)
    w = w * (z == z_obs)
    tc = np.full(n, t_cf)
    a_c = a + shift_a
    y_c = my.intercept[tc] + my.weights[tc, 0] * a_c + sy[tc] * u_y   # the same standardised noise
    z_c = (u_z[:, None] >= cdf[tc]).sum(axis=1)
    mw, sw = mechs["W"], np.sqrt(mechs["W"].variance)
    u_w = rng.standard_normal(n)                                       # W is unobserved: its noise is the prior
    w_c = mw.intercept[z_c] + mw.weights[z_c, 0] * y_c + sw[z_c] * u_w
    return w, w_c, z_c, y_c


def _weighted(w, x):
    p = w / w.sum()
    mean = p @ x
    se = np.sqrt(p ** 2 @ (x - mean) ** 2)
    return mean, se


@pytest.mark.parametrize("t_cf,shift_a", [(0, 0.0), (1, 1.5)])
def test_counterfactual_against_monte_carlo_on_the_scm(t_cf, shift_a):
    m, mechs = _scm()
    do = {"T": ["a", "b"][t_cf]}
    if shift_a:
        do["A"] = cn.shift(shift_a)
    res = m.counterfactual(["W", "Z", "Y"], evidence={"Y": 1.0, "Z": 2}, do=do)
    assert "conditional Gaussian" in res.method and "standardised noise" in res.scm
    w, w_c, z_c, y_c = _monte_carlo(mechs, 400_000, 1, 1.0, 2, t_cf, shift_a)
    for got, x in [(res.marginal(["W*"]).mean[0], w_c), (res.marginal(["Y*"]).mean[0], y_c)]:
        mean, se = _weighted(w, x)
        assert abs(got - mean) < 5 * se + 1e-12
    mean, se = _weighted(w, (w_c - res.marginal(["W*"]).mean[0]) ** 2)
    assert abs(res.marginal(["W*"]).var[0] - mean) < 5 * se
    pz = res.marginal(["Z*"]).probs
    for k in range(3):
        mean, se = _weighted(w, (z_c == k).astype(float))
        assert abs(pz[k] - mean) < 5 * se + 1e-12


def test_counterfactual_without_a_change_is_the_factual_query():
    m, _ = _scm()
    cf = m.counterfactual("W", evidence={"Y": 1.0, "Z": 2}, do={"Z": 2})
    f = m.query("W", evidence={"Y": 1.0, "Z": 2})
    assert_allclose([cf.mean[0], cf.var[0]], [f.mean[0], f.var[0]], rtol=1e-10)


def test_batched_counterfactual_rows_equal_one_per_row():
    m, _ = _scm()
    ys = np.array([-1.0, 0.5, 3.0])
    batch = m.counterfactual("W", evidence={"Y": ys, "Z": 1}, do={"T": "a"})
    for i, y in enumerate(ys):
        one = m.counterfactual("W", evidence={"Y": float(y), "Z": 1}, do={"T": "a"})
        assert_allclose([batch.mean[i, 0], batch.var[i, 0]], [one.mean[0], one.var[0]], rtol=1e-10)


def test_a_changed_discrete_parent_rescales_the_shared_noise():
    """Y = mean_T + sd_T u: observed Y = 2 with T = b (sd 1.5) gives u = (2 - (-2 + 2 A)) / 1.5; with A observed
    the counterfactual Y under T = a is exact: mean_a + sd_a u."""
    m, mechs = _scm()
    res = m.counterfactual("Y", evidence={"Y": 2.0, "T": "b", "A": 0.25}, do={"T": "a"})
    u = (2.0 - (-2.0 + 2.0 * 0.25)) / np.sqrt(1.5)
    assert_allclose(res.mean[0], 1.0 + 0.5 * 0.25 + np.sqrt(0.4) * u, rtol=1e-12)
    assert_allclose(res.var[0], 0.0, atol=1e-12)


# -- gallery, JSON, results ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["waste-incinerator", "mixed-treatment"])
def test_cg_gallery_models_round_trip_through_json(name):
    from causalnet.io.json import from_json, to_json

    m = cn.gallery.load(name)
    m2 = from_json(to_json(m))
    assert list(m2.nodes) == list(m.nodes)
    for v in m.nodes:
        assert type(m2.mechanisms[v]) is type(m.mechanisms[v])
        assert m2.mechanisms[v].to_dict() == m.mechanisms[v].to_dict()
    real = [v for v in m.nodes if m.specs[v].kind == "real"]
    a = m.query(real[-1], evidence={real[0]: 1.0})
    b = m2.query(real[-1], evidence={real[0]: 1.0})
    assert_allclose([a.mean[0], a.var[0]], [b.mean[0], b.var[0]], rtol=0, atol=0)


def test_clg_json_errors_name_the_field():
    from causalnet.io.json import from_json

    doc = ('{"format": "causalnet-model", "version": 1, "nodes": ['
           '{"name": "T", "mechanism": {"type": "Categorical", "probs": [0.5, 0.5], "states": ["a", "b"]}},'
           '{"name": "Y", "mechanism": {"type": "ConditionalLinearGaussian", "parents": ["T"], '
           '"intercept": [0.0, 1.0], "weights": [[], []], "variance": [1.0, %s]}}]}')
    assert from_json(doc % "2.0").mechanisms["Y"].variance.tolist() == [1.0, 2.0]
    with pytest.raises(ModelError, match="variance"):
        from_json(doc % "-2.0")
    with pytest.raises(ModelError, match="variance"):
        from_json(doc % '"x"')


def test_mixed_treatment_against_monte_carlo():
    m = cn.gallery.load("mixed-treatment")
    s = m.sample(300_000, seed=4)
    treated = s["Treatment"] == 1
    lab = m.query("Lab", evidence={"Treatment": "yes"})
    x = s["Lab"][treated]
    assert abs(lab.mean[0] - x.mean()) < 5 * x.std() / np.sqrt(x.size)
    sev = m.query(["Severity", "Dose"], evidence={"Treatment": "yes"})
    assert isinstance(sev, cn.MixedDistribution)
    p = np.bincount(s["Severity"][treated], minlength=3) / treated.sum()
    assert_allclose(sev.marginal("Severity").probs, p, atol=5 * np.sqrt(0.25 / treated.sum()))
    d = s["Dose"][treated]
    assert abs(sev.marginal("Dose").mean[0] - d.mean()) < 5 * d.std() / np.sqrt(d.size)


def test_result_marginals_and_refusals():
    gm = cn.GaussianMixture(("X", "Y"), [0.25, 0.75], [[0.0, 1.0], [2.0, -1.0]],
                            [[[1.0, 0.5], [0.5, 2.0]], [[1.0, 0.0], [0.0, 3.0]]])
    y = gm.marginal("Y")
    assert_allclose([y.mean[0], y.var[0]], [0.25 * 1 - 0.75, 0.25 * 3 + 0.75 * 4 - (0.25 - 0.75) ** 2])
    with pytest.raises(cn.EvidenceError, match="'Z'"):
        gm.marginal("Z")
    mx = cn.gallery.load("mixed-treatment").query(["Diagnosis", "Lab", "Treatment"])
    assert isinstance(mx.marginal(["Diagnosis", "Treatment"]), cn.DiscreteDistribution)
    assert mx.probs.shape == (3, 2)
    assert isinstance(mx.marginal(["Lab", "Treatment"]), cn.MixedDistribution)
    assert "MixedDistribution" in repr(mx) and "Diagnosis=" in str(mx)
    with pytest.raises(cn.EvidenceError, match="'Dose'"):
        mx.marginal(["Dose"])


def test_a_deterministic_configuration_that_contradicts_the_evidence_gets_weight_zero():
    """Y = A exactly when T = a (variance 0), Y = A + noise when T = b: observing Y != A rules out T = a."""
    m = cn.CausalModel({"T": cn.Categorical([0.5, 0.5], states=["a", "b"]), "A": cn.LinearGaussian(),
                        "Y": cn.ConditionalLinearGaussian(["T", "A"], [0.0, 0.0], [[1.0], [1.0]], [0.0, 1.0]),
                        "W": cn.ConditionalLinearGaussian(["T", "Y"], [1.0, -1.0], [[0.5], [2.0]], [1.0, 1.0])})
    assert_allclose(m.query("T", evidence={"Y": 1.0, "A": 0.2}).probs, [0.0, 1.0], atol=0)
    w = m.query("W", evidence={"Y": [1.0, 3.0], "A": 0.2})
    assert_allclose(w.mean[:, 0], [-1.0 + 2.0, -1.0 + 6.0], rtol=1e-12)
    with pytest.raises(cn.EvidenceError, match="probability zero"):
        m.query("W", evidence={"Y": 1.0, "A": 0.2, "T": "a"})


def test_too_many_rows_for_a_boundary_is_a_resource_error_before_allocation():
    m = cn.gallery.load("mixed-treatment")
    lab = np.linspace(0.0, 40.0, 5000)
    with cn.limits.override(max_table_bytes=2**20):
        with pytest.raises(cn.ResourceError, match="evidence rows"):
            m.query("Diagnosis", evidence={"Lab": lab}, method="exact")
    assert m.query("Diagnosis", evidence={"Lab": lab[:50]}, method="exact").probs.shape == (50, 3)


def test_per_row_do_in_a_counterfactual_equals_one_do_per_row():
    m, _ = _scm()
    states = ["a", "b", "a"]
    batch = m.counterfactual(["W", "Z"], evidence={"Y": 1.0, "Z": 2}, do={"T": states})
    for i, t in enumerate(states):
        one = m.counterfactual(["W", "Z"], evidence={"Y": 1.0, "Z": 2}, do={"T": t})
        assert_allclose(batch.marginal("W*").mean[i], one.marginal("W*").mean, rtol=1e-10)
        assert_allclose(batch.marginal("Z*").probs[i], one.marginal("Z*").probs, atol=1e-12)
