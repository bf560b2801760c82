"""Exact inference in conditional Gaussian (mixed discrete/real) networks.

The oracle is independent brute force: every configuration of *all* the
discrete nodes is enumerated with itertools, its probability is the product of
the tables, the real nodes' joint Gaussian is built as ``(I - B)^{-1}``
applied to the per-configuration intercepts and noise (not the engine's
affine pass), and it is conditioned with the textbook formulas
(``np.linalg.solve``, scipy's multivariate normal density). The engine must
agree to 1e-9 on random networks (hypothesis); it must also agree with the
Gaussian engine on all-real models, with the discrete engine on all-discrete
ones, and with Monte Carlo on the model's own samples.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.errors import EvidenceError, ModelError, ResourceError
from causalnet.inference.conditional_gaussian import ConditionalGaussianEngine, is_conditional_gaussian
from causalnet.inference.discrete import DiscreteEngine
from causalnet.inference.gaussian import GaussianEngine
from causalnet.inference.request import query_request

# -- random CG networks and the brute-force oracle ------------------------------------------


def random_cg(seed: int, n_nodes: int, p_discrete: float = 0.5):
    """A random CG network: (mechanisms dict, description for the oracle)."""
    rng = np.random.default_rng(seed)
    mechs, info = {}, {}
    for i in range(n_nodes):
        name = f"V{i}"
        prev = list(mechs)
        disc_prev = [p for p in prev if info[p]["kind"] == "d"]
        real_prev = [p for p in prev if info[p]["kind"] == "r"]
        if rng.random() < p_discrete:
            parents = [p for p in disc_prev if rng.random() < 0.5][:2]
            card = int(rng.integers(2, 4))
            cards = [info[p]["card"] for p in parents]
            table = rng.dirichlet(np.ones(card), size=int(np.prod(cards))).reshape(*cards, card)
            mechs[name] = cn.CPT(parents, table) if parents else cn.Categorical(table)
            info[name] = {"kind": "d", "card": card, "parents": parents, "table": table}
        else:
            dpar = [p for p in disc_prev if rng.random() < 0.5][:2]
            rpar = [p for p in real_prev if rng.random() < 0.6][:3]
            parents = list(rng.permutation(dpar + rpar))             # declared order mixes the kinds
            dpar = [p for p in parents if p in dpar]
            rpar = [p for p in parents if p in rpar]
            cards = tuple(info[p]["card"] for p in dpar)
            b = rng.normal(size=cards)
            w = rng.normal(size=(*cards, len(rpar)))
            var = rng.uniform(0.2, 2.0, size=cards)
            mechs[name] = cn.ConditionalLinearGaussian(parents, b, w, var)
            info[name] = {"kind": "r", "dpar": dpar, "rpar": rpar, "b": b, "w": w, "var": var}
    return mechs, info


def brute_force(info: dict, evidence: dict, do: dict | None = None):
    """Component weights, means and covariances of the real nodes given `evidence`, per configuration
    of all discrete nodes; returns (configs, weights, means, covs, reals)."""
    do = do or {}
    disc = [v for v in info if info[v]["kind"] == "d"]
    reals = [v for v in info if info[v]["kind"] == "r"]
    ridx = {v: i for i, v in enumerate(reals)}
    d = len(reals)
    configs, weights, means, covs = [], [], [], []
    for states in itertools.product(*[range(info[v]["card"]) for v in disc]):
        s = dict(zip(disc, states))
        p = 1.0
        for v in disc:
            if v in do:
                p *= float(s[v] == do[v])
            else:
                p *= info[v]["table"][tuple(s[q] for q in info[v]["parents"]) + (s[v],)]
            if v in evidence:
                p *= float(s[v] == evidence[v])
        B, b, D = np.zeros((d, d)), np.zeros(d), np.zeros(d)
        for v in reals:
            i = ridx[v]
            if v in do:
                b[i] = do[v]
                continue
            k = tuple(s[q] for q in info[v]["dpar"])
            b[i], D[i] = info[v]["b"][k], info[v]["var"][k]
            for j, q in enumerate(info[v]["rpar"]):
                B[i, ridx[q]] = info[v]["w"][k][j]
        A = np.linalg.inv(np.eye(d) - B)
        mu, S = A @ b, A @ np.diag(D) @ A.T
        obs = [ridx[v] for v in reals if v in evidence]
        if obs and p > 0:
            x = np.array([evidence[v] for v in reals if v in evidence])
            S_ee = S[np.ix_(obs, obs)]
            p *= st.multivariate_normal(mu[obs], S_ee).pdf(x)
            gain = np.linalg.solve(S_ee, S[obs, :]).T
            mu = mu + gain @ (x - mu[obs])
            S = S - gain @ S[obs, :]
        configs.append(s)
        weights.append(p)
        means.append(mu)
        covs.append(S)
    w = np.array(weights)
    return configs, w / w.sum(), np.array(means), np.array(covs), reals


def oracle_real(info, target, evidence, do=None):
    """Mixture mean, variance and density function of a real target."""
    _, w, mu, S, reals = brute_force(info, evidence, do)
    i = reals.index(target)
    m = w @ mu[:, i]
    v = w @ (S[:, i, i] + mu[:, i] ** 2) - m ** 2

    def pdf(x):
        return sum(wk * st.norm(mk, np.sqrt(sk)).pdf(x) for wk, mk, sk in zip(w, mu[:, i], S[:, i, i]) if wk > 0)
    return m, v, pdf


def oracle_discrete(info, target, evidence, do=None):
    configs, w, *_ = brute_force(info, evidence, do)
    out = np.zeros(info[target]["card"])
    for s, wk in zip(configs, w):
        out[s[target]] += wk
    return out


def _pick(info, seed):
    """A target and some evidence (a real value for real nodes, a state for discrete ones)."""
    rng = np.random.default_rng(seed + 1)
    names = list(info)
    target = names[int(rng.integers(len(names)))]
    evidence = {}
    for v in names:
        if v != target and rng.random() < 0.35:
            evidence[v] = float(rng.normal()) if info[v]["kind"] == "r" else int(rng.integers(info[v]["card"]))
    return target, evidence


def _kinds_present(info):
    return {x["kind"] for x in info.values()}


# -- the engine against brute force --------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hst.integers(0, 10**6), n_nodes=hst.integers(2, 8))
def test_random_cg_networks_against_brute_force(seed, n_nodes):
    mechs, info = random_cg(seed, n_nodes)
    m = cn.CausalModel(mechs)
    target, evidence = _pick(info, seed)
    ev = {k: (m.specs[k].states[v] if info[k]["kind"] == "d" else v) for k, v in evidence.items()}
    res = m.query(target, evidence=ev, method="exact")
    if info[target]["kind"] == "d":
        assert_allclose(res.probs, oracle_discrete(info, target, evidence), atol=1e-9, rtol=1e-9)
    else:
        mean, var, pdf = oracle_real(info, target, evidence)
        assert isinstance(res, cn.GaussianMixture)
        assert_allclose(res.mean[0], mean, rtol=1e-9, atol=1e-9)
        assert_allclose(res.var[0], var, rtol=1e-9, atol=1e-9)
        xs = mean + np.sqrt(var) * np.array([-1.5, 0.0, 0.7])
        assert_allclose(res.pdf(xs), pdf(xs), rtol=1e-9, atol=1e-12)
        assert_allclose(np.sum(res.weights), 1.0, rtol=1e-12)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hst.integers(0, 10**6), n_nodes=hst.integers(3, 7))
def test_batched_rows_equal_one_query_per_row(seed, n_nodes):
    mechs, info = random_cg(seed, n_nodes)
    m = cn.CausalModel(mechs)
    reals = [v for v in info if info[v]["kind"] == "r"]
    disc = [v for v in info if info[v]["kind"] == "d"]
    if not reals or len(info) < 2:
        return
    rng = np.random.default_rng(seed)
    target = (disc + reals)[-1] if len(disc + reals) > 1 else reals[0]
    obs_r = [v for v in reals if v != target][:2]
    obs_d = [v for v in disc if v != target][:1]
    n = 4
    ev = {v: rng.normal(size=n) for v in obs_r}
    ev.update({v: rng.integers(info[v]["card"], size=n) for v in obs_d})
    batch = m.query(target, evidence={k: (np.asarray(m.specs[k].states, dtype=object)[a] if k in obs_d else a)
                                      for k, a in ev.items()}, method="exact")
    for t in range(n):
        one = {k: (int(a[t]) if k in obs_d else float(a[t])) for k, a in ev.items()}
        if info[target]["kind"] == "d":
            assert_allclose(batch.probs[t], oracle_discrete(info, target, one), atol=1e-9)
        else:
            mean, var, _ = oracle_real(info, target, one)
            assert_allclose(batch.mean[t, 0], mean, rtol=1e-9, atol=1e-9)
            assert_allclose(batch.var[t, 0], var, rtol=1e-9, atol=1e-9)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=hst.integers(0, 10**6), n_nodes=hst.integers(3, 7))
def test_do_on_either_kind_against_the_mutilated_brute_force(seed, n_nodes):
    mechs, info = random_cg(seed, n_nodes)
    m = cn.CausalModel(mechs)
    names = list(info)
    rng = np.random.default_rng(seed + 7)
    target = names[-1]
    node = names[int(rng.integers(len(names) - 1))]
    value = int(rng.integers(info[node]["card"])) if info[node]["kind"] == "d" else float(rng.normal())
    do = {node: (m.specs[node].states[value] if info[node]["kind"] == "d" else value)}
    res = m.query(target, do=do, method="exact")
    if info[target]["kind"] == "d":
        assert_allclose(res.probs, oracle_discrete(info, target, {}, {node: value}), atol=1e-9)
    else:
        mean, var, _ = oracle_real(info, target, {}, {node: value})
        assert_allclose([res.mean[0], res.var[0]], [mean, var], rtol=1e-9, atol=1e-9)


# -- agreement with the other exact engines ------------------------------------------------

def _engine_answer(engine, model, target, evidence):
    return engine.answer(query_request(model, [target], evidence, None, method="exact"))


@pytest.mark.parametrize("seed", range(5))
def test_equals_the_gaussian_engine_without_discrete_nodes(seed):
    rng = np.random.default_rng(seed)
    mechs = {"A": cn.LinearGaussian([], [], bias=rng.normal(), sigma=1.2),
             "B": cn.ConditionalLinearGaussian(["A"], rng.normal(), [rng.normal()], 0.7),
             "C": cn.LinearGaussian(["A", "B"], rng.normal(size=2), bias=0.3, sigma=0.5),
             "D": cn.ConditionalLinearGaussian(["C"], -1.0, [rng.normal()], 2.0)}
    m = cn.CausalModel(mechs)
    ev = {"D": rng.normal(size=3), "A": rng.normal(size=3)}
    g = _engine_answer(GaussianEngine(), cn.CausalModel({k: (cn.LinearGaussian(v.real_parents, v.weights,
                                                                                  float(v.intercept),
                                                                                  float(np.sqrt(v.variance)))
                                                               if isinstance(v, cn.ConditionalLinearGaussian)
                                                               else v) for k, v in mechs.items()}),
                       "C", ev)
    cg = _engine_answer(ConditionalGaussianEngine(), m, "C", ev)
    assert cg.n_components == 1
    assert_allclose(cg.mean, g.mean, rtol=1e-10, atol=1e-12)
    assert_allclose(cg.var[:, 0], g.cov[0, 0], rtol=1e-10)


def test_equals_the_discrete_engine_without_real_nodes():
    m = cn.gallery.load("asia")
    for target, ev in [("lung", {"xray": "yes", "dysp": ["yes", "no", "no"]}), ("either", {"smoke": "no"})]:
        a = _engine_answer(DiscreteEngine(), m, target, ev)
        b = _engine_answer(ConditionalGaussianEngine(), m, target, ev)
        assert_allclose(b.probs, a.probs, atol=1e-12)


def test_a_clg_without_discrete_parents_is_a_linear_gaussian(seed=3):
    rng = np.random.default_rng(seed)
    x, pa = rng.normal(size=20), {"P": rng.normal(size=20), "Q": rng.normal(size=20)}
    clg = cn.ConditionalLinearGaussian(["P", "Q"], 0.5, [1.5, -2.0], 0.49)
    lg = cn.LinearGaussian(["P", "Q"], [1.5, -2.0], bias=0.5, sigma=0.7)
    cn.CausalModel({"P": cn.LinearGaussian(), "Q": cn.LinearGaussian(), "X": clg})
    spec = cn.Spec("real")
    assert_allclose(clg.log_prob("X", x, pa, spec), lg.log_prob("X", x, pa, spec), rtol=1e-13)
    assert_allclose(clg.abduct("X", x, pa, spec), lg.abduct("X", x, pa, spec), rtol=1e-13)


# -- Monte Carlo on the model's samples ------------------------------------------------------

def test_mixture_moments_against_monte_carlo():
    m = cn.gallery.load("waste-incinerator")
    n = 200_000
    s = m.sample(n, seed=11)
    keep = s["Burning"] == m.specs["Burning"].states.index("unstable")
    for target in ("Emission", "Dust", "CO2"):
        res = m.query(target, evidence={"Burning": "unstable"}, method="exact")
        x = s[target][keep]
        se_mean = x.std() / np.sqrt(x.size)
        assert abs(res.mean[0] - x.mean()) < 5 * se_mean
        se_var = np.sqrt(np.mean((x - x.mean()) ** 4) - x.var() ** 2) / np.sqrt(x.size)
        assert abs(res.var[0] - x.var()) < 5 * se_var
    draws = m.query("Emission", method="exact").sample(n, seed=2)[:, 0]
    full = s["Emission"]
    assert abs(draws.mean() - full.mean()) < 5 * np.sqrt(full.var() / n + draws.var() / n)


def test_discrete_posterior_given_a_real_observation_against_monte_carlo():
    """P(Filter | Dust in a window) from samples vs the exact law integrated over the window."""
    m = cn.gallery.load("waste-incinerator")
    s = m.sample(400_000, seed=5)
    lo, hi = 5.0, 5.2                     # where intact and defect filters overlap (P(defect) ~ 0.67)
    win = (s["Dust"] > lo) & (s["Dust"] < hi)
    frac = np.mean(s["Filter"][win] == 1)
    grid = np.linspace(lo, hi, 41)
    post = m.query("Filter", evidence={"Dust": grid}, method="exact").probs[:, 1]      # one row per grid point
    dens = m.query("Dust", method="exact").pdf(grid)
    want = np.sum(post * dens) / np.sum(dens)
    assert 0.3 < want < 0.9
    assert abs(frac - want) < 5 * np.sqrt(want * (1 - want) / win.sum())


# -- refusals -----------------------------------------------------------------------------

def test_clg_shape_and_value_errors_name_the_node():
    disc = {"T": cn.Categorical([0.5, 0.5]), "A": cn.LinearGaussian()}
    with pytest.raises(ModelError, match="weights"):
        cn.ConditionalLinearGaussian(["T", "A"], [0.0, 1.0], [1.0, 2.0], [1.0, 1.0])
    with pytest.raises(ModelError, match="variance"):
        cn.ConditionalLinearGaussian(["T", "A"], [0.0, 1.0], [[1.0], [2.0]], [1.0, -1.0])
    with pytest.raises(ModelError, match="variance"):
        cn.ConditionalLinearGaussian(["T", "A"], [0.0, 1.0], [[1.0], [2.0]], [1.0])
    with pytest.raises(ModelError, match="NaN|nan|finite"):
        cn.ConditionalLinearGaussian(["T", "A"], [0.0, np.nan], [[1.0], [2.0]], [1.0, 1.0])
    with pytest.raises(ModelError, match="'Y'.*cards"):                      # T has 2 states, arrays 3
        cn.CausalModel({**disc, "Y": cn.ConditionalLinearGaussian(["T", "A"], [0.0, 1.0, 2.0], [[1.0]] * 3,
                                                                  [1.0] * 3)})


def test_a_discrete_child_of_a_real_node_is_refused_by_the_exact_engine():
    m = cn.CausalModel({"X": cn.LinearGaussian(), "D": cn.Deterministic(["X"], lambda x: (x > 0).astype(int),
                                                                         states=["neg", "pos"]),
                        "T": cn.Categorical([0.5, 0.5]),
                        "Y": cn.ConditionalLinearGaussian(["T", "X"], [0.0, 1.0], [[1.0], [1.0]], [1.0, 1.0])})
    assert not is_conditional_gaussian(m)
    with pytest.raises(ModelError, match="'D'.*'X'"):
        m.query("Y", evidence={"D": "pos"}, method="exact")
    approx = m.query("T", evidence={"D": "pos"}, n_samples=2000, seed=0)
    assert approx.method.startswith("likelihood weighting")               # sampled, and says why
    assert "conditional Gaussian: discrete node 'D' has the real parent 'X'" in approx.method
    with pytest.raises(ModelError, match="CPT for 'D'.*'X'"):               # a CPT cannot even be built
        cn.CausalModel({"X": cn.LinearGaussian(), "D": cn.CPT(["X"], [[0.5, 0.5]])})


def test_enumeration_past_the_limit_is_a_resource_error():
    mechs = {f"D{i}": cn.Categorical([0.5, 0.5]) for i in range(12)}
    mechs["Y"] = cn.ConditionalLinearGaussian([f"D{i}" for i in range(12)], np.zeros((2,) * 12),
                                              np.zeros((2,) * 12 + (0,)), np.ones((2,) * 12))
    m = cn.CausalModel(mechs)
    with cn.limits.override(max_table_bytes=2**16):
        with pytest.raises(ResourceError, match="configurations"):
            m.query("Y", method="exact")


def test_impossible_evidence_is_an_evidence_error():
    m = cn.CausalModel({"T": cn.Categorical([1.0, 0.0]),
                        "Y": cn.ConditionalLinearGaussian(["T"], [0.0, 1.0], np.zeros((2, 0)), [1.0, 1.0])})
    with pytest.raises(EvidenceError, match="probability zero"):
        m.query("Y", evidence={"T": 1}, method="exact")


def test_joint_of_both_kinds_is_a_mixed_distribution():
    m = cn.gallery.load("waste-incinerator")
    joint = m.query(["Filter", "Dust"], evidence={"CO2": -2.0}, method="exact")
    assert isinstance(joint, cn.MixedDistribution)
    assert_allclose(joint.marginal(["Filter"]).probs, m.query("Filter", evidence={"CO2": -2.0}).probs, atol=1e-12)
    dust = m.query("Dust", evidence={"CO2": -2.0})
    assert_allclose([joint.marginal("Dust").mean[0], joint.marginal("Dust").var[0]], [dust.mean[0], dust.var[0]],
                    rtol=1e-12)


# -- interventions of every form -------------------------------------------------------------

def _small():
    return {"T": cn.Categorical([0.3, 0.7], states=["a", "b"]),
            "A": cn.LinearGaussian([], [], bias=0.5, sigma=1.0),
            "Y": cn.ConditionalLinearGaussian(["A", "T"], [1.0, -2.0], [[0.5], [2.0]], [0.4, 1.5]),
            "Z": cn.CPT(["T"], [[0.9, 0.1], [0.2, 0.8]])}


def test_per_row_do_equals_one_constant_do_per_row():
    m = cn.CausalModel(_small())
    vals_a, vals_t = np.array([-1.0, 0.0, 2.5]), ["b", "a", "b"]
    ya = m.query("Y", do={"A": vals_a}, evidence={"Z": 1}, method="exact")
    yt = m.query("Y", do={"T": vals_t}, evidence={"A": 0.3}, method="exact")
    for i in range(3):
        one_a = m.query("Y", do={"A": float(vals_a[i])}, evidence={"Z": 1}, method="exact")
        one_t = m.query("Y", do={"T": vals_t[i]}, evidence={"A": 0.3}, method="exact")
        assert_allclose([ya.mean[i, 0], ya.var[i, 0]], [one_a.mean[0], one_a.var[0]], rtol=1e-12)
        assert_allclose([yt.mean[i, 0], yt.var[i, 0]], [one_t.mean[0], one_t.var[0]], rtol=1e-12)


def test_shift_interventions_equal_the_rewritten_model():
    m = cn.CausalModel(_small())
    # cn.shift on a real node: Y + 1.5 is the same model with intercepts + 1.5
    rewritten = {**_small(), "Y": cn.ConditionalLinearGaussian(["A", "T"], [2.5, -0.5], [[0.5], [2.0]], [0.4, 1.5])}
    a = m.query("Y", do={"Y": cn.shift(1.5)}, evidence={"Z": 0}, method="exact")
    b = cn.CausalModel(rewritten).query("Y", evidence={"Z": 0}, method="exact")
    assert_allclose([a.mean[0], a.var[0]], [b.mean[0], b.var[0]], rtol=1e-12)
    # a state map on a discrete node: T -> 1 - T is the prior with its states swapped
    swapped = {**_small(), "T": cn.Categorical([0.7, 0.3], states=["a", "b"])}
    c = m.query("Y", do={"T": lambda t: 1 - t}, evidence={"A": -0.4}, method="exact")
    d = cn.CausalModel(swapped).query("Y", evidence={"A": -0.4}, method="exact")
    assert_allclose([c.mean[0], c.var[0]], [d.mean[0], d.var[0]], rtol=1e-12)


def test_barren_nodes_are_not_enumerated():
    """30 unrelated binary nodes would be 2^30 configurations; they are summed out unseen."""
    extra = {f"N{i}": cn.CPT(["T"], [[0.5, 0.5], [0.2, 0.8]]) for i in range(30)}
    small = cn.CausalModel(_small())
    big = cn.CausalModel({**_small(), **extra})
    with cn.limits.override(max_table_bytes=2**20):
        a = big.query("Y", evidence={"Z": 1, "A": 0.2}, method="exact")
    b = small.query("Y", evidence={"Z": 1, "A": 0.2}, method="exact")
    assert_allclose([a.mean[0], a.var[0]], [b.mean[0], b.var[0]], rtol=1e-12)
    # evidence on all of them: no longer enumerated (2^30), the discrete elimination sums each out
    with cn.limits.override(max_table_bytes=2**20):
        c = big.query("Y", evidence={f"N{i}": [0, 1] for i in range(30)}, method="exact")
    like = np.array([[0.5 ** 30, 0.2 ** 30], [0.5 ** 30, 0.8 ** 30]])           # P(all N = s | T), rows s
    post = np.array([0.3, 0.7]) * like
    post /= post.sum(axis=1, keepdims=True)
    means = np.array([1.0 + 0.5 * 0.5, -2.0 + 2.0 * 0.5])                       # E[Y | T] with E[A] = 0.5
    varis = np.array([0.5 ** 2 + 0.4, 2.0 ** 2 + 1.5])
    assert_allclose(c.mean[:, 0], post @ means, rtol=1e-12)
    assert_allclose(c.var[:, 0], post @ (varis + means ** 2) - (post @ means) ** 2, rtol=1e-12)
