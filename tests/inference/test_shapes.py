"""Compiled query shapes (issue 30): a repeated plain query skips the request, and answers exactly as before.

Oracles: brute-force enumeration of the joint (``discrete_networks.brute_query``,
numpy broadcasting only) and the full front door itself (a fresh model, or a
call the shapes cannot take, builds and validates the whole request).
"""

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, random_network
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError
from causalnet.distributions import DiscreteDistribution
from causalnet.inference import shapes
from causalnet.inference.dispatch import QUERY_ENGINES
from causalnet.inference.engine import Engine
from causalnet.inference.request import query_request
from causalnet.inference.shapes import CACHE_KEY, QueryShape, state_map


def _full(model, target, evidence):
    """The answer of the full front door (request built and validated, then the registry)."""
    from causalnet.inference.dispatch import answer

    return answer(query_request(model, target, evidence))


def _same(a, b):
    assert a.variables == b.variables and a.states == b.states and a.method == b.method and a.query == b.query
    assert_allclose(a.probs, b.probs, rtol=0, atol=1e-13)
    assert_allclose(a.log_evidence, b.log_evidence, rtol=0, atol=1e-12)


def _compiled(model):
    return [s for _, s in model.cache.get(CACHE_KEY, {}).values() if isinstance(s, QueryShape)]


def _network_model(dag, cpts, card):
    mechs = {}
    for v in dag.nodes:
        states = [f"s{k}" for k in range(card[v])]
        pa = list(dag.parents(v))
        mechs[v] = cn.CPT(pa, cpts[v], states=states) if pa else cn.Categorical(cpts[v], states=states)
    return cn.CausalModel(mechs)


# -- answers: brute force and the full front door ----------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n_ev=st.integers(0, 3), calls=st.integers(3, 6), by_index=st.booleans())
def test_repeated_shape_matches_brute_force_and_the_full_door(seed, n_ev, calls, by_index):
    rng = np.random.default_rng(seed)
    dag, cpts, card = random_network(rng, 7, cards=(2, 3))
    m = _network_model(dag, cpts, card)
    joint, names = brute_joint(dag, cpts, card)
    pick = rng.choice(7, 1 + n_ev, replace=False)
    target, ev_nodes = names[pick[0]], [names[j] for j in pick[1:]]
    draws = m.sample(calls, seed=seed)
    for r in range(calls):
        idx = {v: int(draws[v][r]) for v in ev_nodes}
        ev = {v: (k if by_index else f"s{k}") for v, k in idx.items()}
        got = m.query(target, evidence=ev)
        want, pe = brute_query(joint, names, [target], idx)
        assert_allclose(got.probs, want, rtol=0, atol=1e-12)
        assert_allclose(got.log_evidence, np.log(pe), rtol=0, atol=1e-10)
        _same(got, _full(m, target, ev))
    assert len(_compiled(m)) == 1                       # one shape, compiled once, answered every later call


def test_a_shape_asked_once_is_only_noted(sprinkler):
    sprinkler.query("Wet", evidence={"Rain": "yes"})
    assert _compiled(sprinkler) == [] and len(sprinkler.cache[CACHE_KEY]) == 1
    sprinkler.query("Wet", evidence={"Rain": "no"})
    assert len(_compiled(sprinkler)) == 1


def test_alarm_repeated_calls_equal_a_fresh_model():
    m = cn.gallery.load("alarm")
    fresh = cn.gallery.load("alarm")
    ev = {"CVP": "LOW", "BP": "LOW", "HR": "HIGH"}
    m.query("HYPOVOLEMIA", evidence=ev)
    for cvp in ("LOW", "NORMAL", "HIGH"):
        e = {**ev, "CVP": cvp}
        _same(m.query("HYPOVOLEMIA", evidence=e), _full(fresh, "HYPOVOLEMIA", e))
    assert isinstance(_compiled(m)[0], QueryShape)


def test_joint_targets_and_no_evidence(asia):
    for targets in (["lung", "tub"], ("either",), "smoke"):
        for ev in (None, {}, {"xray": "yes"}):
            first = asia.query(targets, evidence=ev)
            again = asia.query(targets, evidence=ev)
            _same(again, first)
            _same(again, _full(asia, targets, ev))


def test_question_text_is_elided_like_the_full_door():
    n = 16                                               # more evidence terms than a question writes out
    mechs = {"R": cn.Categorical([0.3, 0.7], states=["a", "b"])}
    for i in range(n):
        mechs[f"C{i}"] = cn.CPT(["R"], [[0.9, 0.1], [0.2, 0.8]], states=["lo", "hi"])
    m = cn.CausalModel(mechs)
    ev = {f"C{i}": ("lo", "hi")[i % 2] for i in range(n)}
    m.query("R", evidence=ev)
    got = m.query("R", evidence={**ev, "C0": "hi"})
    assert "..." in got.query
    _same(got, _full(m, "R", {**ev, "C0": "hi"}))


# -- the same errors and the same fallbacks -----------------------------------------------------


@pytest.mark.parametrize("bad, fragment", [("LOWW", "has no state 'LOWW'"), (7, "has no state 7"),
                                           (None, "has no state None"), ([["LOW"]], "")])
def test_a_bad_value_in_a_known_shape_raises_what_the_full_door_raises(bad, fragment):
    m = cn.gallery.load("alarm")
    m.query("HYPOVOLEMIA", evidence={"CVP": "LOW", "BP": "LOW"})
    with pytest.raises(EvidenceError) as fast:
        m.query("HYPOVOLEMIA", evidence={"CVP": bad, "BP": "LOW"})
    with pytest.raises(EvidenceError) as full:
        _full(cn.gallery.load("alarm"), "HYPOVOLEMIA", {"CVP": bad, "BP": "LOW"})
    assert str(fast.value) == str(full.value) and fragment in str(fast.value)


def test_values_outside_the_maps_take_the_full_door_and_agree():
    m = cn.gallery.load("sprinkler")
    m.query("Wet", evidence={"Rain": "yes"})
    for value in (np.int64(1), np.str_("yes"), 1, "yes"):
        _same(m.query("Wet", evidence={"Rain": value}), _full(m, "Wet", {"Rain": "yes"}))
    with pytest.raises(EvidenceError):
        m.query("Wet", evidence={"Rain": True})          # a bool is neither a name nor an index here


def test_int_state_names_follow_the_one_rule():
    m = cn.CausalModel({"A": cn.Categorical([0.2, 0.3, 0.5], states=[1, 2, 3]),
                        "B": cn.CPT(["A"], [[0.9, 0.1], [0.5, 0.5], [0.1, 0.9]], states=["n", "y"])})
    assert state_map(m, "A") == {1: 0, 2: 1, 3: 2}      # integers are names, never indices
    m.query("B", evidence={"A": 3})
    assert_allclose(m.query("B", evidence={"A": 1}).probs, [0.9, 0.1])
    with pytest.raises(EvidenceError, match="integers are read as names"):
        m.query("B", evidence={"A": 0})


def test_impossible_evidence_raises_on_the_compiled_path_too():
    m = cn.CausalModel({"A": cn.Categorical([1.0, 0.0], states=["x", "y"]),
                        "B": cn.CPT(["A"], [[0.5, 0.5], [0.5, 0.5]], states=["n", "y"])})
    m.query("B", evidence={"A": "x"})
    with pytest.raises(EvidenceError) as fast:
        m.query("B", evidence={"A": "y"})
    with pytest.raises(EvidenceError) as full:
        _full(m, "B", {"A": "y"})
    assert str(fast.value) == str(full.value)


def test_a_resource_error_falls_back_as_auto_always_did(asia, monkeypatch):
    from causalnet.inference.discrete import discrete_network

    asia.query("dysp", evidence={"smoke": "yes"})
    net = discrete_network(asia)

    def too_big(*args, **kwargs):
        raise cn.ResourceError("a table over the limit (test)")

    monkeypatch.setattr(net, "query_indices", too_big)
    fast = asia.query("dysp", evidence={"smoke": "no"})
    full = _full(asia, "dysp", {"smoke": "no"})
    assert fast.method == full.method and "ResourceError: a table over the limit (test)" in fast.method
    assert not fast.method.startswith("exact (variable elimination)")      # the next engine answered
    assert_allclose(fast.probs, full.probs, atol=0)
    asia.query("dysp", evidence={"smoke": "yes"}, method="exact")
    exact = asia.query("dysp", evidence={"smoke": "no"}, method="exact")
    assert exact.method == _full(asia, "dysp", {"smoke": "no"}).method


def test_calls_a_shape_cannot_take_are_not_compiled(sprinkler):
    for _ in range(3):
        sprinkler.query("Wet", evidence={"Rain": np.array(["yes", "no"])})       # batched
    sprinkler.query("Wet", evidence={"Rain": "yes"}, do={"Sprinkler": "on"})   # do
    sprinkler.query("P(Wet | Rain=yes)")                                        # a query string
    sprinkler.query("Wet", evidence={"Rain": "yes"}, method="sampling", seed=0)
    assert _compiled(sprinkler) == []
    per_row = sprinkler.do({"Sprinkler": np.array(["on", "off"])})
    for _ in range(3):                                  # one answer per do row (was a ModelError)
        got = per_row.query("Wet", evidence={"Rain": "yes"})
        assert got.batched and got.probs.shape == (2, 2)
        assert_allclose(got.probs[0], sprinkler.query("Wet", evidence={"Rain": "yes"}, do={"Sprinkler": "on"}).probs)
        assert_allclose(got.probs[1], sprinkler.query("Wet", evidence={"Rain": "yes"}, do={"Sprinkler": "off"}).probs)
    assert _compiled(per_row) == []


def test_bad_options_are_refused_on_every_call(sprinkler):
    for _ in range(3):
        sprinkler.query("Wet", evidence={"Rain": "yes"})
    for bad in ({"n_samples": 100_000.0}, {"n_samples": 0}, {"method": "magic"}, {"seed": "x"}):
        with pytest.raises(cn.CausalNetError):
            sprinkler.query("Wet", evidence={"Rain": "yes"}, **bad)


def test_the_number_of_shapes_is_bounded(monkeypatch, asia):
    monkeypatch.setattr(shapes, "MAX_SHAPES", 3)
    for t in ("dysp", "xray", "lung", "tub", "bronc"):
        asia.query(t, evidence={"smoke": "yes"})
    assert 1 <= len(asia.cache[CACHE_KEY]) <= 3


# -- invalidation ------------------------------------------------------------------------------


class _Constant(Engine):
    """Answers every discrete query with a uniform distribution (to see who answers)."""

    name = "constant (test)"

    def accepts(self, request):
        return len(request.nodes) == 1 and not request.is_counterfactual

    def answer(self, request):
        node = request.nodes[0]
        states = request.model.states(node)
        return DiscreteDistribution([node], np.full(len(states), 1 / len(states)), [states], method=self.name)


def test_a_new_engine_drops_what_the_shapes_learned(sprinkler):
    before = sprinkler.query("Wet", evidence={"Rain": "yes"}).probs
    engine = _Constant()
    QUERY_ENGINES.register(engine, before="discrete")
    try:
        got = sprinkler.query("Wet", evidence={"Rain": "yes"})
        assert got.method == "constant (test)"
        assert_allclose(got.probs, [0.5, 0.5])
    finally:
        QUERY_ENGINES.unregister(engine)
    again = sprinkler.query("Wet", evidence={"Rain": "yes"})
    assert again.method == "exact (variable elimination)"
    assert_allclose(again.probs, before, atol=0)


def test_a_changed_model_gives_the_new_answer(sprinkler):
    ev = {"Rain": "yes"}
    sprinkler.query("Wet", evidence=ev)
    sprinkler.query("Wet", evidence=ev)
    cut = sprinkler.do({"Sprinkler": "on"})              # a changed model: its own, empty cache
    assert CACHE_KEY not in cut.cache
    _same(cut.query("Wet", evidence=ev), _full(cut, "Wet", ev))
    assert not np.allclose(cut.query("Wet", evidence=ev).probs, sprinkler.query("Wet", evidence=ev).probs)
    mechs = dict(sprinkler.mechanisms)                  # a model with the same structure, another CPT
    mechs["Rain"] = cn.Categorical([0.01, 0.99], states=["no", "yes"])
    other = cn.CausalModel(mechs)
    other.query("Wet", evidence={"Sprinkler": "on"})
    p_other = other.query("Wet", evidence={"Sprinkler": "off"}).probs
    p_orig = sprinkler.query("Wet", evidence={"Sprinkler": "off"}).probs
    assert not np.allclose(p_other, p_orig)
    _same(other.query("Wet", evidence={"Sprinkler": "off"}), _full(cn.CausalModel(mechs), "Wet",
                                                                  {"Sprinkler": "off"}))


def test_a_cleared_cache_is_rebuilt(sprinkler):
    first = sprinkler.query("Wet", evidence={"Rain": "yes"})
    sprinkler.query("Wet", evidence={"Rain": "yes"})
    sprinkler.cache.clear()
    _same(sprinkler.query("Wet", evidence={"Rain": "yes"}), first)
    _same(sprinkler.query("Wet", evidence={"Rain": "yes"}), first)


def test_a_refit_model_answers_with_its_own_tables(sprinkler):
    data = sprinkler.sample(20_000, seed=3).to_pandas()
    sprinkler.query("Wet", evidence={"Rain": "yes"})
    refit = sprinkler.fit(data)
    refit.query("Wet", evidence={"Rain": "no"})
    _same(refit.query("Wet", evidence={"Rain": "yes"}), _full(refit, "Wet", {"Rain": "yes"}))
    assert not np.allclose(refit.query("Wet", evidence={"Rain": "yes"}).probs,
                           sprinkler.query("Wet", evidence={"Rain": "yes"}).probs, atol=1e-9)


def test_tables_cannot_be_changed_under_a_compiled_shape(sprinkler):
    sprinkler.query("Wet", evidence={"Rain": "yes"})
    with pytest.raises(ValueError):                     # read-only: a model is immutable
        sprinkler.mechanisms["Rain"].table[0] = 0.5


# -- arrays of state names decode by the one rule -----------------------------------------------


@settings(max_examples=50, deadline=None)
@given(picks=st.lists(st.integers(0, 3), min_size=1, max_size=40), kind=st.sampled_from(["object", "U", "list"]))
def test_name_arrays_decode_as_each_name_alone(picks, kind):
    from causalnet.values import decode_states

    states = ("lo", "mid", "hi", "1")
    names = [states[k] for k in picks]
    value = names if kind == "list" else np.array(names, dtype=object if kind == "object" else str)
    got = decode_states("X", states, value)
    assert got.dtype == np.int64 and got.tolist() == [int(decode_states("X", states, s)) for s in names]
    assert got.tolist() == picks


def test_an_unknown_name_in_an_array_names_its_row():
    from causalnet.values import decode_states

    with pytest.raises(EvidenceError, match=r"has no state 'nah' \(row 2\)"):
        decode_states("X", ("no", "yes"), np.array(["yes", "no", "nah", "nah"], dtype=object))
    with pytest.raises(EvidenceError, match=r"has no state True \(row 1\)"):   # a bool is no name, even mixed in
        decode_states("X", ("no", "yes"), np.array(["yes", True], dtype=object))
    assert decode_states("X", ("no", "yes"), np.array(["yes", 0], dtype=object)).tolist() == [1, 0]
    nested = np.empty(2, dtype=object)
    nested[0], nested[1] = ["yes"], "no"                  # unhashable: still the library's own error
    with pytest.raises(EvidenceError, match="a state must be a name or an index, got list"):
        decode_states("X", ("no", "yes"), nested)
