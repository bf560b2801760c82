"""Value of information and of control, requisite information, solubility and counterfactual regret.

Oracles: re-solving the diagram with the added arc by expectimax on the full
joint (decision_diagrams.py); hand computations on Raiffa's oil wildcatter;
pyAgrum's isSolvable; Monte Carlo on the structural equations (inverse-CDF
SCM written out in numpy here) for regret, within 4 standard errors.
"""

import numpy as np
import pytest
from decision_diagrams import Spec, as_tables, diagrams, expectimax
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import causalnet as cn

FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def oil():
    return cn.gallery.load("oil-wildcatter")


# -- value of information ---------------------------------------------------------------------


def test_value_of_information_oil(oil):
    # knowing the oil before drilling: E[max(0, payoff)] = 0.3 * 50 + 0.2 * 200 = 55 (no test needed)
    assert oil.value_of_information("Oil", "Drill") == pytest.approx(55 - 22.5, abs=1e-9)
    assert oil.value_of_information("Result", "Drill") == 0.0            # already known
    # the test result is worth 22.5 + 10 - 20 = 12.5 to a driller who would otherwise drill blind
    no_test = oil.do({"Test": "yes"})
    assert no_test.solve().meu == pytest.approx(22.5, abs=1e-9)
    with pytest.raises(cn.GraphError, match="descendants"):
        oil.value_of_information("Drill", "Test")
    with pytest.raises(cn.ModelError, match="utility"):
        oil.value_of_information("Payoff", "Drill")


@FAST
@given(diagrams(perfect_recall=True), st.integers(0, 10**6))
def test_value_of_information_equals_resolving_with_the_arc(spec, seed):
    m = spec.model()
    rng = np.random.default_rng(seed)
    d = list(spec.decisions)[rng.integers(len(spec.decisions))]
    desc = m.dag.descendants(d) | {d}
    candidates = [v for v in spec.chance if v not in desc and v not in spec.decisions[d]]
    assume(candidates)
    x = candidates[rng.integers(len(candidates))]
    new = Spec(spec.order, spec.cards, spec.chance, dict(spec.decisions), spec.utilities)
    new.decisions[d] = sorted([*spec.decisions[d], x], key=spec.order.index)
    want = expectimax(new)[0] - expectimax(spec)[0]
    got = m.value_of_information(x, d)
    assert got == pytest.approx(want, abs=1e-9 * max(1.0, abs(want)))
    assert got >= -1e-9                                               # information never hurts


# -- value of control ---------------------------------------------------------------------------


def test_value_of_control_oil(oil):
    # choosing the oil: soaking, no test, drill -> 200
    assert oil.value_of_control("Oil") == pytest.approx(200 - 22.5, abs=1e-9)
    # choosing the seismic result (knowing Oil and Test): the driller then knows the oil -> E[max(0, pay)] = 55
    assert oil.value_of_control("Result") == pytest.approx(55 - 22.5, abs=1e-9)
    with pytest.raises(cn.ModelError, match="not a chance node"):
        oil.value_of_control("Drill")
    # with the test forced (a do on a decision): the 10 is paid whatever happens
    tested = oil.do({"Test": "yes"})
    assert tested.value_of_information("Oil", "Drill") == pytest.approx(55 - 10 - 22.5, abs=1e-9)
    assert tested.value_of_control("Oil") == pytest.approx(200 - 10 - 22.5, abs=1e-9)
    with pytest.raises(cn.ModelError, match="not a chance node"):
        tested.value_of_control("Test")


# -- requisite information, solubility ------------------------------------------------------------


def test_requisite_parents():
    m = cn.InfluenceDiagram({
        "X": cn.Categorical([0.5, 0.5]),
        "Noise": cn.Categorical([0.3, 0.7]),
        "D": cn.Decision(["X", "Noise"], states=2),
        "U": cn.Utility(["X", "D"], [[1.0, 0.0], [0.0, 1.0]]),
    })
    assert m.requisite_parents("D") == ("X",)
    # perfect recall: D2 knows what D1 knew; only X matters to it, through U2
    m2 = cn.InfluenceDiagram({
        "X": cn.Categorical([0.5, 0.5]),
        "Y": cn.Categorical([0.5, 0.5]),
        "D1": cn.Decision(["X", "Y"], states=2),
        "D2": cn.Decision(["D1"], states=2),
        "U1": cn.Utility(["D1", "Y"], [[1.0, 0.0], [0.0, 1.0]]),
        "U2": cn.Utility(["D2", "X"], [[1.0, 0.0], [0.0, 1.0]]),
    })
    assert m2.information("D2") == ("X", "Y", "D1")
    assert m2.requisite_parents("D2") == ("X",)
    assert m2.requisite_parents("D2", limid=True) == ("D1",)
    assert m2.solve().meu == pytest.approx(2.0)
    assert m2.solve(limid=True).meu == pytest.approx(1.5)             # D2 sees only D1 (= Y), not X


def test_solubility_coordination_game():
    # two decisions that see nothing and must match: not soluble (Lauritzen & Nilsson's classic)
    m = cn.InfluenceDiagram({
        "D1": cn.Decision([], states=2),
        "D2": cn.Decision([], states=2),
        "U": cn.Utility(["D1", "D2"], [[1.0, 0.0], [0.0, 1.0]]),
    }, limid=True)
    assert not m.is_soluble()
    sol = m.solve()
    assert not sol.exact and sol.meu == pytest.approx(1.0)
    with pytest.raises(cn.GraphError, match="not ordered"):
        cn.InfluenceDiagram(dict(m.mechanisms))
    ordered = cn.InfluenceDiagram(dict(m.mechanisms), order=["D1", "D2"])
    assert ordered.solve().meu == pytest.approx(1.0)
    assert ordered.information("D2") == ("D1",)


def test_signalling_limid_is_not_soluble():
    # D0 sees X0, D1 sees only D0, the utility wants D1 to match X0: the optimum encodes X0 in D0 and decodes
    # it in D1, which single policy updating from uniform policies cannot find (pyAgrum's isSolvable says
    # True here: it answers whether its own solver applies, not Lauritzen-Nilsson solubility)
    m = cn.InfluenceDiagram({
        "X0": cn.Categorical([0.35, 0.65]),
        "D0": cn.Decision(["X0"], states=2),
        "D1": cn.Decision(["D0"], states=2),
        "U": cn.Utility(["X0", "D1"], [[1.0, 0.0], [0.0, 1.0]]),
    }, limid=True)
    assert not m.is_soluble()
    sol = m.solve()
    assert not sol.exact
    assert sol.meu == pytest.approx(0.65)                           # a local optimum: D1 = the likelier state
    assert m.expected_utility({"D0": lambda x: x, "D1": lambda d: d}) == pytest.approx(1.0)
    assert m.solve(limid=False).meu == pytest.approx(1.0)           # with perfect recall D1 knows X0


# -- regret -----------------------------------------------------------------------------------------


def test_regret_oil_by_hand(oil):
    # drilled blind and found it dry (-70); had the optimal policy been followed: test (-10), and the
    # seismic result of a dry site is closed/open with 0.4 -> drill (-70): -38 on average
    r = oil.regret({"Test": "no", "Drill": "drill", "Oil": "dry"})
    assert (r.factual, r.counterfactual, r.value) == pytest.approx((-70.0, -38.0, 32.0), abs=1e-9)
    assert "inverse-CDF" in r.scm
    # tested, saw a diffuse structure, did not drill: the optimal policy does the same
    assert float(oil.regret({"Test": "yes", "Result": "diffuse", "Drill": "no"})) == pytest.approx(0.0, abs=1e-9)
    # tested, saw a closed structure, did not drill: the same seismic result (shared noise) would have led to
    # drilling, worth E[payoff | closed] = (0.05 * -70 + 0.09 * 50 + 0.10 * 200) / 0.24 = 87.5
    r = oil.regret({"Test": "yes", "Result": "closed", "Drill": "no"})
    assert (r.factual, r.counterfactual) == pytest.approx((-10.0, 77.5), abs=1e-9)
    # drilled blind and hit a soaking site: testing would have cost 10 and skipped drilling 1 time in 10
    r = oil.regret({"Test": "no", "Drill": "drill", "Oil": "soaking"})
    assert r.value == pytest.approx(0.9 * 200 - 10 - 200, abs=1e-9)
    # against a given policy: never drill
    r = oil.regret({"Test": "no", "Drill": "drill", "Oil": "wet"}, policy={"Test": "no", "Drill": "no"})
    assert r.value == pytest.approx(-50.0, abs=1e-9)
    with pytest.raises(cn.EvidenceError, match="'Drill' is missing"):
        oil.regret({"Test": "no"})
    with pytest.raises(cn.EvidenceError, match="utility"):
        oil.regret({"Test": "no", "Drill": "no", "Payoff": 0})


def _scm_values(spec, u, decide):
    vals = {}
    n = len(next(iter(u.values())))
    for v in spec.order:
        if v in spec.chance:
            ps, t = spec.chance[v]
            rows = t[tuple(vals[p] for p in ps)] if ps else np.broadcast_to(t, (n, t.shape[-1]))
            cdf = np.cumsum(rows, axis=-1)
            cdf[..., -1] = 1.0
            vals[v] = (u[v][:, None] >= cdf).sum(axis=-1)
        else:
            vals[v] = decide(v, vals)
    total = sum(t[tuple(vals[p] for p in ps)] for ps, t in spec.utilities.values())
    return vals, total


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(diagrams(perfect_recall=True, max_chance=3), st.integers(0, 10**6))
def test_regret_equals_monte_carlo_on_the_scm(spec, seed):
    m = spec.model()
    policy = m.solve().policy
    tables = as_tables(spec, policy)
    rng = np.random.default_rng(seed)
    n = 200_000
    u = {v: rng.random(n) for v in spec.chance}
    # what was done: each decision a fixed action drawn once; evidence: the actions and one chance node
    acts = {d: int(rng.integers(spec.cards[d])) for d in spec.decisions}
    fact, u_f = _scm_values(spec, u, lambda d, vals: np.full(n, acts[d]))
    seen = list(spec.chance)[int(rng.integers(len(spec.chance)))]
    state = int(fact[seen][0])
    keep = fact[seen] == state
    assume(keep.sum() > 2000)
    _, u_cf = _scm_values(spec, u, lambda d, vals: np.argmax(
        tables[d][tuple(vals[p] for p in spec.decisions[d])], axis=-1))
    diff = (u_cf - u_f)[keep]
    r = m.regret({**acts, seen: state}, policy)
    se = diff.std() / np.sqrt(diff.size)
    assert abs(r.value - diff.mean()) <= 4 * se + 1e-9
    assert r.factual == pytest.approx(u_f[keep].mean(), abs=4 * u_f[keep].std() / np.sqrt(keep.sum()) + 1e-9)


def test_perfect_recall_needs_an_order_even_for_a_limid():
    m = cn.InfluenceDiagram({"D1": cn.Decision([], states=2), "D2": cn.Decision([], states=2),
                             "U": cn.Utility(["D1", "D2"], [[1.0, 0.0], [0.0, 1.0]])}, limid=True)
    for _ in range(2):                                   # refused every time (nothing is cached on failure)
        with pytest.raises(cn.GraphError, match="not ordered"):
            m.solve(limid=False)
    assert m.solve().meu == pytest.approx(1.0)


@FAST
@given(diagrams(perfect_recall=False))
def test_requisite_parents_match_the_d_separation_definition(spec):
    # oracle: networkx's d-separation, iterated from the last decision to the first until nothing changes
    import networkx as nx

    m = spec.model(order=list(spec.decisions))
    for limid in (True, False):
        info = {d: list(m.information(d, limid=limid)) for d in spec.decisions}
        changed = True
        while changed:
            changed = False
            for d in reversed(list(spec.decisions)):
                g = nx.DiGraph()
                g.add_nodes_from([*spec.order, *spec.utilities])
                g.add_edges_from((p, v) for v, (ps, _) in spec.chance.items() for p in ps)
                g.add_edges_from((p, e) for e in spec.decisions for p in info[e])
                g.add_edges_from((p, u) for u, (ps, _) in spec.utilities.items() for p in ps)
                down = nx.descendants(g, d) & set(spec.utilities)
                keep = [n for n in info[d] if down and not nx.is_d_separator(g, {n}, down, ({d, *info[d]} - {n}))]
                if keep != info[d]:
                    info[d], changed = keep, True
        for d in spec.decisions:
            assert list(m.requisite_parents(d, limid=limid)) == info[d], (d, limid)
