"""The explorer's JSON API without a browser: Session against enumeration, closed forms and networkx."""

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet import EvidenceError, GraphError, ModelError, ResourceError, gallery
from causalnet.explorer import Session, query_text
from causalnet.explorer import session as session_module
from causalnet.graph.paths import is_open_path

# -- oracles --------------------------------------------------------------------------


def enumerate_posteriors(model, evidence, do):
    """Every node's posterior by summing the joint of the mutilated model over all assignments (m.log_prob)."""
    m = model.do(do) if do else model
    nodes = list(m.nodes)
    states = [m.states(v) for v in nodes]
    grid = np.array(list(itertools.product(*[range(len(s)) for s in states])))      # (prod K, d)
    values = {v: grid[:, i] for i, v in enumerate(nodes)}
    p = np.exp(m.log_prob(values))                                                   # (prod K,)
    for v, x in evidence.items():
        p = p * (grid[:, nodes.index(v)] == list(m.states(v)).index(x))
    if not p.sum() > 0:
        return None                                                                  # impossible evidence
    p = p / p.sum()
    return {v: {s: float(p[grid[:, i] == k].sum()) for k, s in enumerate(states[i])} for i, v in enumerate(nodes)}


def gaussian_posteriors(model, evidence, do):
    """Mean and sd of every node from the linear SEM's closed form: x = (I - B)^-1 (b + S eps), then conditioning."""
    m = model.do(do) if do else model
    nodes = list(m.nodes)
    d = len(nodes)
    B, b, s = np.zeros((d, d)), np.zeros(d), np.zeros(d)
    for i, v in enumerate(nodes):
        if v in do:
            b[i] = do[v]
            continue
        mech = model.mechanisms[v]
        for p, w in zip(mech.parents, mech.weights):
            B[i, nodes.index(p)] = w
        b[i], s[i] = mech.bias, mech.sigma
    A = np.linalg.inv(np.eye(d) - B)
    mu, cov = A @ b, A @ np.diag(s ** 2) @ A.T
    obs = [nodes.index(v) for v in evidence]
    if obs:
        x = np.array([evidence[v] for v in evidence])
        k = cov[:, obs] @ np.linalg.inv(cov[np.ix_(obs, obs)])
        mu = mu + k @ (x - mu[obs])
        cov = cov - k @ cov[obs, :]
    return {v: {"mean": mu[i], "sd": np.sqrt(max(cov[i, i], 0.0))} for i, v in enumerate(nodes)}


def assert_posteriors(got, want, atol=1e-9):
    assert set(got) == set(want)
    for v, dist in want.items():
        for k, p in dist.items():
            assert got[v][k] == pytest.approx(p, abs=atol), (v, k)


# -- query ----------------------------------------------------------------------------


CASES = [
    ("sprinkler", {"Rain": "yes"}, {}),
    ("sprinkler", {"Rain": "yes"}, {"Sprinkler": "on"}),
    ("sprinkler", {"Wet": "wet"}, {}),
    ("sprinkler", {}, {"Sprinkler": "off"}),
    ("asia", {"dysp": "yes", "xray": "no"}, {}),
    ("asia", {"dysp": "yes"}, {"smoke": "no"}),
    ("asia", {}, {"either": "yes"}),
    ("cancer", {"Dyspnoea": "True"}, {"Smoker": "False"}),
]


@pytest.mark.parametrize("route", ["junction tree", "one query per node"])
@pytest.mark.parametrize("name, evidence, do", CASES)
def test_query_matches_enumeration(name, evidence, do, route, monkeypatch):
    if route != "junction tree":
        monkeypatch.setattr(session_module, "JT_MAX_CLIQUE", 0)
    m = gallery.load(name)
    out = Session(m).query({"evidence": evidence, "do": do})
    assert_posteriors(out["posteriors"], enumerate_posteriors(m, evidence, do))
    assert out["method"].startswith("exact") and ("junction tree" in out["method"]) == (route == "junction tree")
    assert list(out["posteriors"]) == [str(v) for v in m.nodes]


def test_query_text_and_names():
    s = Session(gallery.load("sprinkler"))
    assert s.query({"evidence": {"Rain": "yes"}, "do": {"Sprinkler": "on"}})["query"] == \
        "P(· | do(Sprinkler=on), Rain=yes)"
    assert s.query({})["query"] == "P(·)"
    assert query_text({"a b": "x y"}, {}) == 'P(· | "a b"="x y")'
    assert query_text({"X": 1.5}, {"Z[2]": 0}) == "P(· | do(Z[2]=0), X=1.5)"
    q = cn.parse_query(query_text({"a b": "x y", "Z[2]": 3}, {"T": "on"}).replace("·", "Y"))
    assert q.do == {"T": "on"} and {t.name: t.value for t in q.evidence} == {"a b": "x y", "Z[2]": 3}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_asia_questions_match_enumeration(data):
    m = gallery.load("asia")
    nodes = list(m.nodes)
    chosen = data.draw(st.lists(st.sampled_from(nodes), unique=True, max_size=4))
    split = data.draw(st.integers(0, len(chosen)))
    ev = {v: data.draw(st.sampled_from(m.states(v))) for v in chosen[:split]}
    do = {v: data.draw(st.sampled_from(m.states(v))) for v in chosen[split:]}
    want = enumerate_posteriors(m, ev, do)
    if want is None:
        with pytest.raises(EvidenceError, match="probability zero"):
            Session(m).query({"evidence": ev, "do": do})
        return
    out = Session(m).query({"evidence": ev, "do": do})
    assert_posteriors(out["posteriors"], want)
    for dist in out["posteriors"].values():
        assert sum(dist.values()) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("evidence, do", [({}, {}), ({"Income": 40.0}, {}), ({"Savings": 8.0}, {"Education": 13.0}),
                                          ({"Income": 30.0, "Ability": -1.0}, {})])
def test_gaussian_query_matches_the_closed_form(evidence, do):
    m = gallery.load("linear-gaussian")
    out = Session(m).query({"evidence": evidence, "do": do})
    assert_posteriors(out["posteriors"], gaussian_posteriors(m, evidence, do), atol=1e-7)
    assert out["method"].startswith("exact")


def test_counterfactual_matches_the_library_and_reduces_to_factual():
    m = gallery.load("sprinkler")
    s = Session(m)
    ev, do = {"Sprinkler": "on", "Wet": "wet"}, {"Sprinkler": "off"}
    out = s.counterfactual({"evidence": ev, "do": do})
    assert out["query"] == "P(·_{Sprinkler=off} | Sprinkler=on, Wet=wet)"
    for v in m.nodes:
        want = m.counterfactual(v, evidence=ev, do=do).probs
        assert [out["posteriors"][v][k] for k in m.states(v)] == pytest.approx(want, abs=1e-12)
    assert_posteriors(out["factual"], enumerate_posteriors(m, ev, {}))
    assert "inverse-CDF" in out["scm"]
    same = s.counterfactual({"evidence": ev, "do": {}})            # no intervention: the factual world
    assert_posteriors(same["posteriors"], same["factual"], atol=1e-12)


def test_gaussian_counterfactual_is_exact():
    m = gallery.load("linear-gaussian")
    ev, do = {"Income": 40.0}, {"Education": 13.0}
    out = Session(m).counterfactual({"evidence": ev, "do": do})
    want = m.counterfactual(list(m.nodes), evidence=ev, do=do)
    assert [out["posteriors"][v]["mean"] for v in m.nodes] == pytest.approx(np.ravel(want.mean), abs=1e-9)
    assert out["posteriors"]["Education"] == {"mean": 13.0, "sd": 0.0}
    # Ability is not downstream of Education: its counterfactual is its factual posterior
    assert out["posteriors"]["Ability"]["mean"] == pytest.approx(out["factual"]["Ability"]["mean"], abs=1e-9)


# -- adjust and dsep ------------------------------------------------------------------


def _joint(m, assignment):
    """P(assignment) by enumeration: the probability of the evidence is the normaliser."""
    nodes = list(m.nodes)
    grid = np.array(list(itertools.product(*[range(len(m.states(v))) for v in nodes])))
    p = np.exp(m.log_prob({v: grid[:, i] for i, v in enumerate(nodes)}))
    for v, s in assignment.items():
        p = p * (grid[:, nodes.index(v)] == list(m.states(v)).index(s))
    return float(p.sum())


def adjusted(m, x, y, z):
    """P(y | do(x)) by the adjustment formula sum_z P(y | x, z) P(z), from enumeration."""
    out = {}
    for xv in m.states(x):
        total = np.zeros(len(m.states(y)))
        for zs in itertools.product(*[m.states(v) for v in z]):
            zev = dict(zip(z, zs))
            pz = _joint(m, zev)                                                       # P(Z = z)
            post = enumerate_posteriors(m, {x: xv, **zev}, {})
            if post is None:
                continue
            post = post[y]
            total += pz * np.array([post[s] for s in m.states(y)])
        out[xv] = total
    return out


@pytest.mark.parametrize("name, x, y", [("sprinkler", "Sprinkler", "Wet"), ("asia", "smoke", "dysp"),
                                        ("asia", "either", "dysp"), ("asia", "tub", "xray"), ("asia", "lung", "dysp")])
def test_adjust_lists_the_graph_sets_and_the_effect_matches_the_adjustment_formula(name, x, y):
    m = gallery.load(name)
    out = Session(m).adjust({"treatment": x, "outcome": y})
    g = m.dag
    assert {frozenset(s) for s in out["minimal"]} == {frozenset(s) for s in g.minimal_adjustment_sets(x, y)}
    assert {frozenset(s) for s in out["frontdoor"]} == {frozenset(s) for s in
                                                       g.frontdoor_adjustment_sets(x, y, minimal=True)}
    assert out["identifiable"] and out["estimand"] == str(g.identify(y, x))
    z = out["minimal"][0]
    want = adjusted(m, x, y, z)
    for row in out["effect"]:
        got = [row["interventional"][s] for s in m.states(y)]
        assert got == pytest.approx(want[row["value"]], abs=1e-9)
        obs = enumerate_posteriors(m, {x: row["value"]}, {})[y]
        assert [row["observational"][s] for s in m.states(y)] == pytest.approx([obs[s] for s in m.states(y)])


def test_adjust_on_graphs_only():
    s = Session(gallery.graph("m-bias"))
    out = s.adjust({"treatment": "X", "outcome": "Y"})
    assert out["minimal"] == [[]] and "effect" not in out and out["identifiable"]
    front = Session(gallery.graph("frontdoor")).adjust({"treatment": "Smoking", "outcome": "Cancer"})
    assert front["minimal"] == [] and front["frontdoor"] == [["Tar"]] and front["identifiable"]
    bow = Session(cn.DAG.parse("X -> Y; U -> X; U -> Y; U [latent]")).adjust({"treatment": "X", "outcome": "Y"})
    assert not bow["identifiable"] and bow["estimand"] is None and bow["reason"]


def test_gaussian_effect_table():
    m = gallery.load("linear-gaussian")
    out = Session(m).adjust({"treatment": "Education", "outcome": "Income"})
    for row in out["effect"]:
        x = row["value"]
        assert row["interventional"]["mean"] == pytest.approx(10 + 2 * x, abs=1e-9)      # E[Income | do(Education=x)]
        want = gaussian_posteriors(m, {"Education": x}, {})["Income"]["mean"]
        assert row["observational"]["mean"] == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("name", ["asia", "sprinkler", "m-bias", "frontdoor", "alarm"])
def test_dsep_agrees_with_networkx_and_the_path_is_open(name):
    g = gallery.graph(name)
    s = Session(gallery.load(name))
    rng = np.random.default_rng(7)
    nodes = list(g.nodes)
    for _ in range(30):
        x, y, *z = rng.choice(len(nodes), size=min(len(nodes), 2 + rng.integers(0, 3)), replace=False)
        x, y, z = nodes[x], nodes[y], [nodes[i] for i in z]
        out = s.dsep({"x": x, "y": y, "given": z})
        assert out["d_separated"] == nx.is_d_separator(g.to_networkx(), {x}, {y}, set(z))
        assert (out["path"] is None) == out["d_separated"]
        if out["path"]:
            assert out["path"][0] == x and out["path"][-1] == y and is_open_path(g, out["path"], z)


# -- model info and bad input ---------------------------------------------------------


def test_model_info():
    info = Session(gallery.load("sprinkler")).model_info()
    assert [n["name"] for n in info["nodes"]] == ["Rain", "Sprinkler", "Wet"]
    assert info["nodes"][2] == {"name": "Wet", "kind": "discrete", "latent": False, "states": ["dry", "wet"],
                                "parents": ["Rain", "Sprinkler"]}
    assert info["edges"] == [["Rain", "Sprinkler"], ["Rain", "Wet"], ["Sprinkler", "Wet"]]
    graph = Session(gallery.graph("m-bias")).model_info()
    assert not graph["has_mechanisms"] and {n["kind"] for n in graph["nodes"]} == {"graph"}
    assert [n["name"] for n in graph["nodes"] if n["latent"]] == ["U1", "U2"]


@pytest.mark.parametrize("payload, error, match", [
    ({"evidence": {"Rian": "yes"}}, EvidenceError, "unknown evidence node 'Rian'; did you mean 'Rain'"),
    ({"evidence": {"Rain": "maybe"}}, EvidenceError, "maybe"),
    ({"do": {"Sprinkler": [1, 2]}}, EvidenceError, "one state or number"),
    ({"evidence": ["Rain"]}, EvidenceError, "must be an object"),
    ({"evidence": {"Rain": "yes"}, "do": {"Rain": "no"}}, EvidenceError, "both observed and intervened"),
    ({"evidence": {"Rain": "no", "Sprinkler": "off", "Wet": "wet"}}, EvidenceError, "probability zero"),
    ({"evidence": {"Rain": "no", "Wet": "wet"}, "do": {"Sprinkler": "off"}}, EvidenceError, "probability zero"),
    ({"evidence": {"Sprinkler": "off", "Wet": "wet"}, "do": {"Rain": "no"}}, EvidenceError, "probability zero"),
    ({"evidnce": {}}, EvidenceError, "unknown keys"),
    ([1, 2], EvidenceError, "JSON object"),
    ({"evidence": {"5": "yes"}}, EvidenceError, "unknown evidence node"),
])
def test_bad_queries_raise_typed_errors(payload, error, match):
    s = Session(gallery.load("sprinkler"))
    with pytest.raises(error, match=match):
        s.query(payload)
    assert s.query({})["query"] == "P(·)"                      # the session still answers


@pytest.mark.parametrize("name, payload, error, match", [
    ("adjust", {"treatment": "Rain", "outcome": "Rain"}, GraphError, "both 'Rain'"),
    ("adjust", {"treatment": "Rainn", "outcome": "Wet"}, GraphError, "unknown treatment 'Rainn'"),
    ("adjust", {"treatment": 3, "outcome": "Wet"}, GraphError, "must be a node name"),
    ("dsep", {"x": "Rain", "y": "Wet", "given": ["Rain"]}, GraphError, "overlaps"),
    ("dsep", {"x": [], "y": "Wet"}, GraphError, "pick a node"),
    ("dsep", {"x": "Rain", "y": "Wet", "given": "Sprinkler", "z": 1}, EvidenceError, "unknown keys"),
    ("nope", {}, cn.CausalNetError, "unknown request"),
])
def test_bad_graph_questions_raise_typed_errors(name, payload, error, match):
    with pytest.raises(error, match=match):
        Session(gallery.load("sprinkler")).answer(name, payload)


def test_graphs_answer_graph_questions_only():
    s = Session(gallery.graph("frontdoor"))
    with pytest.raises(ModelError, match="graph without mechanisms"):
        s.query({})
    with pytest.raises(ModelError, match="graph without mechanisms"):
        s.counterfactual({"evidence": {}, "do": {}})
    with pytest.raises(ModelError, match="CausalModel or a DAG"):
        Session("gallery:asia")
    with pytest.raises(ModelError, match="timeout"):
        Session(gallery.graph("frontdoor"), timeout=0)


def test_a_request_past_its_time_stops_with_a_resource_error(monkeypatch):
    monkeypatch.setattr(session_module, "JT_MAX_CLIQUE", 0)            # the per-node loop checks the clock
    s = Session(gallery.load("alarm"), timeout=1e-9)
    with pytest.raises(ResourceError, match="took longer than"):
        s.query({"evidence": {}, "do": {}})


def test_an_exact_engine_refusal_falls_back_to_sampling_and_says_so(monkeypatch):
    monkeypatch.setattr(session_module, "JT_MAX_CLIQUE", 0)
    m = gallery.load("asia")
    want = enumerate_posteriors(m, {"dysp": "yes"}, {})
    query = cn.CausalModel.query

    def refuse_exact(self, *args, method="auto", **kw):
        if method == "auto":
            raise ResourceError("the clique table would need 9 EiB (a stand-in for a model too large)")
        return query(self, *args, method=method, **kw)

    def refuse_all(*args, **kw):                 # the engine's all-marginals path refuses the same way
        raise ResourceError("the clique table would need 9 EiB (a stand-in for a model too large)")

    monkeypatch.setattr(cn.CausalModel, "query", refuse_exact)
    monkeypatch.setattr(session_module, "all_marginals", refuse_all)
    out = Session(m).query({"evidence": {"dysp": "yes"}})
    assert "approximate" in out["method"] and "20000 samples" in out["method"] and "9 EiB" in out["method"]
    for v in m.nodes:                           # likelihood weighting: within 5 standard errors of enumeration
        for k, p in want[v].items():
            assert abs(out["posteriors"][v][k] - p) <= 5 * np.sqrt(p * (1 - p) / 2000) + 1e-12, (v, k)


def test_mixed_models_are_answered_exactly():
    m = cn.CausalModel({"A": cn.Categorical([0.3, 0.7], states=["a0", "a1"]),
                        "X": cn.LinearGaussian(["A"], [2.0], bias=1.0, sigma=1.0),
                        "B": cn.CPT(["A"], [[0.9, 0.1], [0.2, 0.8]], states=["b0", "b1"])})
    out = Session(m).query({"evidence": {"X": 2.5}})
    # exact: P(A=a1 | X=2.5) = 0.7 N(2.5; 3, 1) / (0.7 N(2.5; 3, 1) + 0.3 N(2.5; 1, 1))
    w1, w0 = 0.7 * np.exp(-0.5 * 0.5 ** 2), 0.3 * np.exp(-0.5 * 1.5 ** 2)
    pa1 = w1 / (w1 + w0)
    assert "conditional Gaussian" in out["method"]
    assert out["posteriors"]["A"]["a1"] == pytest.approx(pa1, abs=1e-9)
    assert out["posteriors"]["B"]["b1"] == pytest.approx(0.1 * (1 - pa1) + 0.8 * pa1, abs=1e-9)
    assert out["posteriors"]["X"] == {"mean": 2.5, "sd": 0.0}
    # a real node's posterior is a mixture: the page shows its mean and sd (law of total variance)
    out = Session(m).query({"evidence": {"B": "b1"}})
    p = 0.7 * 0.8 / (0.7 * 0.8 + 0.3 * 0.1)                 # P(A=a1 | B=b1)
    assert out["posteriors"]["X"]["mean"] == pytest.approx(1 + 2 * p, abs=1e-9)
    assert out["posteriors"]["X"]["sd"] == pytest.approx(np.sqrt(1 + 4 * p * (1 - p)), abs=1e-9)
