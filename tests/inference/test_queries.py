"""Queries against brute-force enumeration, pgmpy, and closed-form Gaussians."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError, ModelError


def random_discrete_model(rng, n_nodes, max_parents=3, max_card=3, zeros=False):
    mechs = {}
    names = [f"V{i}" for i in range(n_nodes)]
    for i, v in enumerate(names):
        k = int(rng.integers(2, max_card + 1))
        cand = names[:i]
        npar = int(rng.integers(0, min(max_parents, i) + 1))
        parents = list(rng.choice(cand, size=npar, replace=False)) if npar else []
        cards = [mechs[p].card for p in parents]
        t = rng.dirichlet(np.ones(k), size=int(np.prod(cards)) if cards else 1)
        if zeros:
            t = np.where(rng.random(t.shape) < 0.2, 0.0, t)
            t[np.arange(t.shape[0]), rng.integers(0, k, t.shape[0])] += 0.1
            t /= t.sum(axis=1, keepdims=True)
        t = t.reshape(*cards, k)
        states = [f"s{j}" for j in range(k)]
        mechs[v] = cn.CPT(parents, t, states=states) if parents else cn.Categorical(t, states=states)
    return cn.CausalModel(mechs)


def joint(model, do=None):
    """Brute-force joint table over all nodes (in model.nodes order)."""
    do = do or {}
    nodes = list(model.nodes)
    cards = [model.spec(v).card for v in nodes]
    P = np.zeros(cards)
    for assign in itertools.product(*[range(c) for c in cards]):
        a = dict(zip(nodes, assign))
        p = 1.0
        for v in nodes:
            if v in do:
                p *= float(a[v] == do[v])
                continue
            mech = model.mechanisms[v]
            p *= mech.table[tuple(a[q] for q in mech.parents) + (a[v],)]
        P[assign] = p
    return nodes, P


def brute_query(model, targets, evidence, do=None):
    nodes, P = joint(model, do)
    sl = [slice(None)] * len(nodes)
    for k, v in evidence.items():
        sl[nodes.index(k)] = v
    sub = P[tuple(sl)]
    rest = [v for v in nodes if v not in evidence]
    axes = tuple(i for i, v in enumerate(rest) if v not in targets)
    m = sub.sum(axis=axes)
    kept = [v for v in rest if v in targets]
    m = np.transpose(m, [kept.index(t) for t in targets])
    return m / m.sum()


@pytest.mark.parametrize("trial", range(12))
def test_queries_match_brute_force(trial, seed):
    rng = np.random.default_rng(seed + trial)
    m = random_discrete_model(rng, int(rng.integers(3, 9)), zeros=trial % 2 == 1)
    nodes = list(m.nodes)
    for _ in range(6):
        k = int(rng.integers(1, 3))
        pick = rng.choice(len(nodes), size=min(len(nodes), k + 2), replace=False)
        targets = [nodes[i] for i in pick[:k]]
        ev = {nodes[i]: int(rng.integers(0, m.spec(nodes[i]).card)) for i in pick[k:]}
        with np.errstate(invalid="ignore"):
            ref = brute_query(m, targets, ev)
        if not np.all(np.isfinite(ref)):
            with pytest.raises(EvidenceError):
                m.query(targets, evidence=ev)
            continue
        got = m.query(targets, evidence=ev)
        assert_allclose(got.probs, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("trial", range(8))
def test_do_queries_match_surgery(trial, seed):
    rng = np.random.default_rng(1000 + seed + trial)
    m = random_discrete_model(rng, int(rng.integers(3, 8)))
    nodes = list(m.nodes)
    x, y = rng.choice(nodes, size=2, replace=False)
    xv = int(rng.integers(0, m.spec(x).card))
    got = m.query(y, do={x: xv})
    with np.errstate(invalid="ignore"):
        ref = brute_query(m, [y], {}, do={x: xv})
    assert_allclose(got.probs, ref, atol=1e-12)


def test_batched_evidence_equals_rowwise(seed):
    rng = np.random.default_rng(seed)
    m = random_discrete_model(rng, 7)
    nodes = list(m.nodes)
    e1, e2, t = nodes[1], nodes[4], nodes[6]
    rows = 50
    ev = {e1: rng.integers(0, m.spec(e1).card, rows), e2: rng.integers(0, m.spec(e2).card, rows)}
    got = m.query(t, evidence=ev)
    assert got.batched and got.probs.shape == (rows, m.spec(t).card)
    for i in range(0, rows, 7):
        one = m.query(t, evidence={e1: int(ev[e1][i]), e2: int(ev[e2][i])})
        assert_allclose(got.probs[i], one.probs, atol=1e-13)


def test_query_string_forms():
    m = cn.CausalModel({
        "Rain": cn.Categorical([0.8, 0.2], states=["no", "yes"]),
        "Sprinkler": cn.CPT(["Rain"], [[0.6, 0.4], [0.99, 0.01]], states=["off", "on"]),
        "Wet": cn.CPT(["Rain", "Sprinkler"], [[[1, 0], [0.1, 0.9]], [[0.2, 0.8], [0.01, 0.99]]],
                      states=["dry", "wet"]),
    })
    a = m.query("P(Wet | do(Sprinkler=on), Rain=yes)")
    b = m.query("Wet", do={"Sprinkler": "on"}, evidence={"Rain": "yes"})
    assert_allclose(a.probs, b.probs)
    assert_allclose(a.probs, [0.01, 0.99])
    p = m.query("P(Wet=wet | Rain=yes)")
    assert p == pytest.approx(0.99 * 0.8 + 0.01 * 0.99, abs=1e-12)   # P(off|yes)·0.8 + P(on|yes)·0.99
    j = m.query("P(Rain, Wet)")
    assert j.probs.shape == (2, 2) and j.probs.sum() == pytest.approx(1.0)
    assert j[("yes", "wet")] == pytest.approx(brute_query(m, ["Rain", "Wet"], {})[1, 1])
    assert a.map() == "wet"
    for bad, frag in [("P(Wet | Rain)", "needs a value"), ("P(Wett)", "did you mean 'Wet'"),
                      ("P(Wet | Rain=maybe)", "no state 'maybe'"), ("P(Wet | Rain=yes", "expected"),
                      ("P(Wet | Wet=dry)", "both targets and evidence")]:
        with pytest.raises(EvidenceError, match=frag):
            m.query(bad)


def test_impossible_evidence_is_an_error():
    m = cn.CausalModel({"A": cn.Categorical([1.0, 0.0]), "B": cn.CPT(["A"], [[0.5, 0.5], [0.5, 0.5]])})
    with pytest.raises(EvidenceError):
        m.query("B", evidence={"A": 1})
    with pytest.raises(EvidenceError):
        m.query("B", evidence={"A": np.array([0, 1])})


@st.composite
def small_models(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    n = draw(st.integers(2, 7))
    return random_discrete_model(np.random.default_rng(seed), n), seed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_models(), st.data())
def test_do_on_root_equals_conditioning(ms, data):
    m, _ = ms
    roots = [v for v in m.nodes if not m.dag.parents(v)]
    r = data.draw(st.sampled_from(roots))
    others = [v for v in m.nodes if v != r]
    t = data.draw(st.sampled_from(others))
    s = data.draw(st.integers(0, m.spec(r).card - 1))
    assert_allclose(m.query(t, do={r: s}).probs, m.query(t, evidence={r: s}).probs, atol=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_models(), st.data())
def test_probabilities_sum_to_one(ms, data):
    m, _ = ms
    t = data.draw(st.lists(st.sampled_from(m.nodes), min_size=1, max_size=2, unique=True))
    assert m.query(t).probs.sum() == pytest.approx(1.0, abs=1e-12)


def test_map_and_mpe():
    rng = np.random.default_rng(7)
    m = random_discrete_model(rng, 6)
    nodes, P = joint(m)
    best = np.unravel_index(np.argmax(P), P.shape)
    assign, logp = m.map()
    assert tuple(m.states(v).index(assign[v]) for v in nodes) == tuple(int(i) for i in best)
    assert logp == pytest.approx(np.log(P.max()))


def test_sampling_engine_reports_error_estimate(seed):
    rng = np.random.default_rng(seed)
    m = random_discrete_model(rng, 5)
    t, e = m.nodes[4], m.nodes[0]
    exact = m.query(t, evidence={e: 1})
    approx = m.query(t, evidence={e: 1}, method="sampling", n_samples=50_000, seed=seed)
    assert "likelihood weighting" in approx.method and approx.std_err.shape == approx.probs.shape
    assert np.all(np.abs(approx.probs - exact.probs) < 5 * approx.std_err + 1e-9)


def test_mixed_model_falls_back_to_sampling(seed):
    import scipy.stats

    m = cn.CausalModel({
        "T": cn.Categorical([0.3, 0.7]),
        "X": cn.Function(["T"], lambda t: 2.0 * t, noise=scipy.stats.norm(0, 1)),
    })
    r = m.query("T", evidence={"X": 2.0}, seed=seed)
    # exact: P(T=1 | X=2) ∝ 0.7 N(2; 2, 1) vs 0.3 N(2; 0, 1)
    a, b = 0.7 * scipy.stats.norm.pdf(0), 0.3 * scipy.stats.norm.pdf(2)
    assert "likelihood weighting" in r.method
    assert abs(r.probs[1] - a / (a + b)) < 5 * r.std_err[1] + 1e-3
    with pytest.raises(ModelError, match="no exact engine"):
        m.query("T", evidence={"X": 2.0}, method="exact")


# -- Gaussian --------------------------------------------------------------------------


@pytest.fixture
def lg():
    return cn.CausalModel({
        "X": cn.LinearGaussian(sigma=1.0),
        "Y": cn.LinearGaussian(["X"], [2.0], bias=1.0, sigma=0.5),
        "Z": cn.LinearGaussian(["X", "Y"], [-1.0, 0.5], sigma=0.3),
    })


def lg_closed_form():
    # x = c + M u by hand
    c = np.array([0.0, 1.0, 0.5])
    M = np.array([[1.0, 0, 0], [2.0, 0.5, 0], [-1.0 + 1.0, 0.25, 0.3]])
    return c, M @ M.T


def test_gaussian_joint_and_conditioning(lg):
    c, S = lg_closed_form()
    j = lg.query(["X", "Y", "Z"])
    assert "joint Gaussian" in j.method
    assert_allclose(j.mean, c, atol=1e-12)
    assert_allclose(j.cov, S, atol=1e-12)
    r = lg.query(["X", "Y"], evidence={"Z": 2.0})
    K = S[:2, 2] / S[2, 2]
    assert_allclose(r.mean, c[:2] + K * (2.0 - c[2]), atol=1e-12)
    assert_allclose(r.cov, S[:2, :2] - np.outer(K, S[2, :2]), atol=1e-12)
    b = lg.query("X", evidence={"Z": np.array([0.0, 2.0])})
    assert b.batched and b.mean.shape == (2, 1)
    assert_allclose(b.mean[1], r.mean[:1])


def test_gaussian_do_and_impossible_evidence(lg):
    r = lg.query("Z", do={"Y": 1.0})
    assert_allclose(r.mean, [0.5], atol=1e-12)
    assert_allclose(r.cov, [[1.0 + 0.09]], atol=1e-12)
    det = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.LinearGaussian(["X"], [2.0], sigma=0.0),
                          "W": cn.LinearGaussian(["X"], [1.0])})
    assert_allclose(det.query("W", evidence={"X": 1.0, "Y": 2.0}).mean, [1.0], atol=1e-12)
    with pytest.raises(EvidenceError, match="impossible"):
        det.query("W", evidence={"X": 1.0, "Y": 3.0})


def test_gaussian_log_prob_matches_scipy_per_row(lg):
    import scipy.stats

    r = lg.query(["X", "Y"], evidence={"Z": np.array([0.0, 1.0, 2.5])})
    x = np.array([0.3, 1.2])
    want = [scipy.stats.multivariate_normal.logpdf(x, r.mean[i], r.cov) for i in range(3)]
    assert_allclose(r.log_prob(x), want, rtol=1e-12)
    one = lg.query("Y")
    assert one.log_prob(1.5) == pytest.approx(scipy.stats.norm.logpdf(1.5, one.mean[0], one.std[0]), rel=1e-12)


def test_evidence_by_state_names_in_arrays():
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7], states=["lo", "hi"]),
                        "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]])})
    by_name = m.query("B", evidence={"A": np.array(["hi", "lo", "hi"])})
    by_index = m.query("B", evidence={"A": np.array([1, 0, 1])})
    assert_allclose(by_name.probs, by_index.probs, atol=0)
    with pytest.raises(EvidenceError, match="no state 'mid' \\(row 1\\)"):
        m.query("B", evidence={"A": np.array(["hi", "mid"])})
