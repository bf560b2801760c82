"""Policies in every form, the model under a policy, typed errors, files and diagrams.

Oracles: expected utility by enumeration of the full joint (decision_diagrams.eu_brute);
marginals of the model under a policy by enumeration; the oil wildcatter by hand.
"""

import numpy as np
import pytest
from decision_diagrams import as_tables, broadcast, diagrams, eu_brute, joint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn

FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def oil():
    return cn.gallery.load("oil-wildcatter")


def random_tables(spec, rng, deterministic=False):
    out = {}
    for d, ps in spec.decisions.items():
        shape = [spec.cards[p] for p in ps]
        K = spec.cards[d]
        if deterministic:
            out[d] = np.eye(K)[rng.integers(K, size=shape)]
        else:
            out[d] = rng.dirichlet(np.ones(K), size=shape) if shape else rng.dirichlet(np.ones(K))
    return out


@FAST
@given(diagrams(perfect_recall=False), st.integers(0, 10**6))
def test_expected_utility_of_tables_and_callables(spec, seed):
    m = spec.model(order=list(spec.decisions))
    rng = np.random.default_rng(seed)
    tables = random_tables(spec, rng)
    assert m.expected_utility(tables) == pytest.approx(eu_brute(spec, tables), abs=1e-9)
    det = random_tables(spec, rng, deterministic=True)
    calls = {d: (lambda *s, t=det[d]: int(np.argmax(t[tuple(s)]))) for d in spec.decisions}
    assert m.expected_utility(calls) == pytest.approx(eu_brute(spec, det), abs=1e-9)
    # a fixed action is do(): the same as a constant table
    fixed = {d: int(rng.integers(spec.cards[d])) for d in spec.decisions}
    const = {d: np.broadcast_to(np.eye(spec.cards[d])[a], (*[spec.cards[p] for p in spec.decisions[d]],
                                                             spec.cards[d])) for d, a in fixed.items()}
    assert m.expected_utility(fixed) == pytest.approx(eu_brute(spec, const), abs=1e-9)
    assert m.do(fixed).solve if not m.do(fixed).decisions else True


@FAST
@given(diagrams(perfect_recall=True))
def test_model_under_the_policy_answers_queries(spec):
    m = spec.model()
    sol = m.solve()
    mp = m.do(sol.policy)
    assert mp.decisions == ()
    vs, W, _ = joint(spec)
    tables = as_tables(spec, sol.policy)
    P = W
    for d, ps in spec.decisions.items():
        P = P * broadcast(tables[d], [*ps, d], vs, W.shape)
    for v in vs:
        want = P.sum(axis=tuple(i for i, x in enumerate(vs) if x != v))
        assert np.allclose(mp.query(v).probs, want, atol=1e-9)
    assert m.expected_utility(sol.policy) == pytest.approx(sol.meu, abs=1e-9)


def test_oil_under_policy(oil):
    sol = oil.solve()
    mp = oil.do(sol.policy)
    # P(drill) = P(closed or open | tested) = 0.5 * 0.4 + 0.3 * 0.7 + 0.2 * 0.9 = 0.59
    assert mp.query("Drill")["drill"] == pytest.approx(0.59, abs=1e-12)
    assert mp.query("P(Oil | Drill=drill)").probs == pytest.approx(np.array([0.2, 0.21, 0.18]) / 0.59, abs=1e-12)
    assert mp.dag.d_separated("Oil", "Drill", given={"Result", "Test"})
    assert not mp.dag.d_separated("Oil", "Drill", given={"Result"})       # Result is a collider of Oil and Test
    assert not mp.dag.d_separated("Oil", "Drill")
    samples = mp.sample(20_000, seed=0)
    total = samples["TestCost"] + samples["Payoff"]
    assert abs(total.mean() - 22.5) < 4 * total.std() / np.sqrt(total.size)
    # plain do on a decision inside query
    assert oil.query("Result", do={"Test": "no"})["not tested"] == pytest.approx(1.0)
    assert oil.query("Oil")["dry"] == pytest.approx(0.5)      # needs no decision
    posterior = np.array([0.05, 0.09, 0.10]) / 0.24                 # P(Oil | closed), by Bayes' rule
    assert oil.query("P(Oil | do(Test=yes), Result=closed)").probs == pytest.approx(posterior, abs=1e-12)
    assert oil.query("Oil", evidence={"Result": "closed"}, do={"Test": "yes"}).probs == pytest.approx(posterior)
    soft = oil.query("Oil", soft_evidence={"Result": [1.0, 0.0, 0.0, 0.0]}, do={"Test": "yes"})
    assert soft.probs == pytest.approx(posterior, abs=1e-12)


def test_unresolved_decisions_are_typed_errors(oil):
    with pytest.raises(cn.ModelError, match="decision 'Test' has no policy"):
        oil.query("Result")
    with pytest.raises(cn.ModelError, match="has no policy"):
        oil.sample(5, seed=0)
    with pytest.raises(cn.ModelError, match="has no policy"):
        cn.CausalModel(dict(oil.mechanisms)).query("Drill")
    with pytest.raises(cn.ModelError, match="has no policy"):
        oil.do({"Test": "yes"}).query("Drill")


def test_bad_policies_are_typed_errors(oil):
    good = {"Test": "yes", "Drill": np.tile([0.0, 1.0], (2, 4, 1))}
    assert oil.expected_utility(good) == pytest.approx(0.2 * 200 + 0.3 * 50 - 0.5 * 70 - 10)
    with pytest.raises(cn.ShapeError, match=r"expected \(2, 4, 2\)"):
        oil.expected_utility({"Test": "yes", "Drill": np.ones((2, 2)) / 2})
    with pytest.raises(cn.EvidenceError, match="no action 'maybe'"):
        oil.expected_utility({"Test": "maybe", "Drill": "no"})
    with pytest.raises(cn.EvidenceError, match="no action 'later'"):
        oil.expected_utility({"Test": "yes", "Drill": lambda test, result: "later"})
    with pytest.raises(cn.ModelError, match="no rule for decision 'Drill'"):
        oil.expected_utility({"Test": "yes"})
    with pytest.raises(cn.ModelError, match="sums to"):
        oil.expected_utility({"Test": [0.5, 0.6], "Drill": "no"})
    with pytest.raises(cn.ModelError, match="not a decision"):
        oil.expected_utility({"Test": "yes", "Drill": "no", "Oil": "dry"})
    with pytest.raises(cn.ModelError, match="raised ZeroDivisionError"):
        oil.expected_utility({"Test": "yes", "Drill": lambda t, r: 1 / 0})


def test_bad_diagrams_are_typed_errors(oil):
    mechs = dict(oil.mechanisms)
    with pytest.raises(cn.ModelError, match="utility 'Payoff' has children"):
        cn.InfluenceDiagram({**mechs, "Mood": cn.LinearGaussian(["Payoff"], [1.0])})
    with pytest.raises(cn.ModelError, match="discrete"):
        cn.InfluenceDiagram({"X": cn.LinearGaussian(), "D": cn.Decision(["X"], states=2)})
    with pytest.raises(cn.ModelError, match=r"expected \(3,\)"):
        cn.InfluenceDiagram({"X": cn.Categorical([0.2, 0.3, 0.5]), "U": cn.Utility(["X"], [1.0, 2.0])})
    with pytest.raises(cn.ModelError, match="finite"):
        cn.Utility(["X"], [1.0, np.nan])
    with pytest.raises(cn.ModelError, match="states are required"):
        cn.Decision(["X"])
    with pytest.raises(cn.GraphError, match="ancestor"):
        cn.InfluenceDiagram(mechs, order=["Drill", "Test"])
    with pytest.raises(cn.GraphError, match="every decision once"):
        cn.InfluenceDiagram(mechs, order=["Drill"])
    with pytest.raises(cn.ModelError, match="nothing to solve"):
        oil.do({"Test": "no", "Drill": "no"}).solve()


def test_json_round_trip(oil, tmp_path):
    back = cn.from_json(cn.to_json(oil))
    assert isinstance(back, cn.InfluenceDiagram) and back.decisions == ("Test", "Drill")
    assert back.solve().meu == pytest.approx(22.5)
    path = tmp_path / "oil.json"
    cn.save_json(oil.do({"Test": "yes"}), path)
    half = cn.load_json(path)
    assert half.decisions == ("Drill",) and half.solve().meu == pytest.approx(22.5)
    unordered = cn.InfluenceDiagram({"D1": cn.Decision([], states=2), "D2": cn.Decision([], states=["a", "b"]),
                                     "U": cn.Utility(["D1", "D2"], [[1.0, 0.0], [0.0, 2.0]])}, order=["D2", "D1"])
    again = cn.from_json(cn.to_json(unordered))
    assert again.decisions == ("D2", "D1") and again.solve().meu == pytest.approx(2.0)
    assert cn.from_json(cn.to_json(cn.InfluenceDiagram(dict(unordered.mechanisms), limid=True))).limid
    policy = oil.do(oil.solve().policy)
    assert cn.from_json(cn.to_json(policy)).query("Drill")["drill"] == pytest.approx(0.59)


def test_diagram_draws_decisions_utilities_and_informational_arcs(oil):
    dot = oil.to_dot(legend=True)
    assert "Test [fillcolor=\"#fde2c8\" shape=box" in dot
    assert "Payoff [fillcolor=\"#d8f0d0\" shape=diamond" in dot
    assert "Result -> Drill [style=dashed]" in dot and "Oil -> Result\n" in dot
    assert "decision" in dot and "utility" in dot
    under = oil.do(oil.solve().policy).to_dot()
    assert "Test [fillcolor=\"#fde2c8\" shape=box" in under and "Result -> Drill [style=dashed]" in under


def test_policy_objects(oil):
    sol = oil.solve()
    pol = sol.policy
    assert list(pol) == ["Test", "Drill"] and len(pol) == 2
    tables = pol.to_pandas()
    assert tables["Test"]["Test"].tolist() == ["yes"]
    with pytest.raises(cn.EvidenceError, match="'Result' is missing"):
        pol["Drill"].action(Test="yes")
    with pytest.raises(cn.EvidenceError, match="no state 'murky'"):
        pol["Drill"].action(Test="yes", Result="murky")
    with pytest.raises(cn.EvidenceError, match="no decision"):
        pol["Oil"]
    # ties: a utility that does not care
    flat = cn.InfluenceDiagram({"X": cn.Categorical([0.5, 0.5]), "D": cn.Decision(["X"], states=["a", "b"]),
                                "U": cn.Utility(["X", "D"], [[1.0, 1.0], [0.0, 2.0]])})
    ties = flat.solve().ties
    assert [(t.decision, t.state, t.actions) for t in ties] == [("D", {"X": 0}, ("a", "b"))]
    stochastic = cn.models.decisions.DecisionRule("D", ["X"], [(0, 1)], ("a", "b"), [[0.5, 0.5], [1.0, 0.0]])
    assert not stochastic.deterministic
    assert list(stochastic.to_pandas().columns) == ["X", "P(D=a)", "P(D=b)"]
    assert flat.expected_utility({"D": stochastic}) == pytest.approx(0.5 * 1.0 + 0.5 * 0.0)
