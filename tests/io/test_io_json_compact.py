"""NoisyOR, NoisyMax and Logistic in model files: exact round trips (parameters bit for bit, the same tables by
the exact engine, the same samples), files that keep the structural form (never a table), and bad fields."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

import causalnet as cn
from causalnet.errors import ModelError
from causalnet.inference.discrete import discrete_network
from causalnet.io.json import from_json, load_json, save_json, to_json


def compact_model():
    return cn.CausalModel({
        "A": cn.Categorical([0.6, 0.4], states=["off", "on"]),
        "B": cn.Categorical([0.2, 0.5, 0.3], states=["lo", "mid", "hi"]),
        "C": cn.Categorical([0.7, 0.3]),
        "OR": cn.NoisyOR(["A", "B", "C"], [0.7, 0.5, 0.9], leak=0.05, on={"A": "on", "B": "hi", "C": 1},
                         states=["absent", "present"]),
        "OR2": cn.NoisyOR(["A", "C"], [0.1, 1 / 3], on=["on", 1]),
        "MAX": cn.NoisyMax(["A", "B"], [[[1.0, 0.0, 0.0], [0.2, 0.5, 0.3]],
                                        [[0.9, 0.1, 0.0], [0.5, 0.5, 0.0], [0.1, 0.3, 0.6]]], [0.8, 0.15, 0.05],
                           states=["none", "mild", "severe"]),
        "SOFT": cn.Logistic(["A", "B"], [[0.0, 0.0], [1.0, -0.5], [-0.3, 0.8]], bias=[0.0, 0.2, -0.1]),
        "BIN": cn.Logistic(["MAX", "C"], [0.7, -1.2], bias=0.1, states=[False, True]),
    })


def test_round_trip_is_exact(tmp_path, seed):
    m = compact_model()
    path = tmp_path / "m.json"
    save_json(m, path)
    m2 = load_json(path)
    assert list(m2.dag.nodes) == list(m.dag.nodes) and m2.dag == m.dag
    for v in ("OR", "OR2", "MAX", "SOFT", "BIN"):
        a, b = m.mechanisms[v], m2.mechanisms[v]
        assert type(a) is type(b) and a.to_dict() == b.to_dict()
        assert m2.specs[v].states == m.specs[v].states
    net, net2 = discrete_network(m), discrete_network(m2)
    for v in m.dag.nodes:
        assert_array_equal(net.cpts[v], net2.cpts[v])
    s, s2 = m.sample(500, seed=seed), m2.sample(500, seed=seed)
    for v in m.dag.nodes:
        assert_array_equal(s[v], s2[v])
    assert to_json(m2) == to_json(m)


def test_files_keep_the_structural_form_not_a_table():
    doc = json.loads(to_json(compact_model()))
    by_name = {e["name"]: e["mechanism"] for e in doc["nodes"]}
    assert by_name["OR"] == {"type": "NoisyOR", "parents": ["A", "B", "C"], "probs": [0.7, 0.5, 0.9], "leak": 0.05,
                             "on": {"A": "on", "B": "hi", "C": 1}, "states": ["absent", "present"]}
    assert by_name["MAX"]["type"] == "NoisyMax" and len(by_name["MAX"]["tables"]) == 2
    assert by_name["BIN"] == {"type": "Logistic", "parents": ["MAX", "C"], "weights": [[0.0, 0.0], [0.7, -1.2]],
                              "bias": [0.0, 0.1], "states": [False, True]}
    assert all("table" not in mech for mech in by_name.values())


def test_a_forty_parent_noisy_or_is_saved_without_its_table():
    mechs = {f"D{i}": cn.Categorical([0.9, 0.1]) for i in range(40)}
    mechs["F"] = cn.NoisyOR([f"D{i}" for i in range(40)], np.linspace(0.1, 0.9, 40), leak=0.01)
    text = to_json(cn.CausalModel(mechs))
    assert len(text) < 10_000
    m2 = from_json(text)
    r = m2.query("D3", evidence={"F": 1}, method="loopy")
    assert r.converged


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=4), st.floats(0, 0.99),
       st.lists(st.floats(-50, 50, allow_subnormal=False), min_size=3, max_size=3))
def test_property_round_trip_is_bit_exact(probs, leak, w):
    k = len(probs)
    mechs = {f"P{i}": cn.Categorical([0.5, 0.5]) for i in range(k)}
    mechs["Y"] = cn.NoisyOR([f"P{i}" for i in range(k)], probs, leak=leak)
    mechs["Z"] = cn.Logistic(["P0", "Y"], [w[:2], [w[2], -w[0]]], bias=[w[1], w[2]])
    m2 = from_json(to_json(cn.CausalModel(mechs)))
    assert_array_equal(m2.mechanisms["Y"].probs, np.asarray(probs, dtype=float))
    assert m2.mechanisms["Y"].leak == leak
    assert_array_equal(m2.mechanisms["Z"].weights, np.array([w[:2], [w[2], -w[0]]]))


@pytest.mark.parametrize("edit, where", [
    (lambda d: d.update(probs=[0.5, "x", 0.1]), r"nodes\[3\]\.mechanism\.probs\[1\]"),
    (lambda d: d.update(leak=1.5), r"nodes\[3\]\.mechanism.*leak must be in \[0, 1\)"),
    (lambda d: d.update(on={"Q": 1}), r"nodes\[3\]\.mechanism\.on\.Q: is not a parent"),
    (lambda d: d.update(on=[[1]]), r"nodes\[3\]\.mechanism\.on: expected null, a state"),
    (lambda d: d.pop("states"), r"nodes\[3\]\.mechanism.*states"),
    (lambda d: d.update(extra=1), r"nodes\[3\]\.mechanism.*extra"),
])
def test_bad_noisy_or_fields_name_the_place(edit, where):
    doc = json.loads(to_json(compact_model()))
    edit(doc["nodes"][3]["mechanism"])
    with pytest.raises(ModelError, match=where):
        from_json(json.dumps(doc))


def test_bad_noisy_max_and_logistic_fields_name_the_place():
    doc = json.loads(to_json(compact_model()))
    names = [e["name"] for e in doc["nodes"]]
    mx = doc["nodes"][names.index("MAX")]["mechanism"]
    mx["tables"] = mx["tables"][:1]
    with pytest.raises(ModelError, match=r"mechanism\.tables: expected one table per parent \(2\)"):
        from_json(json.dumps(doc))
    doc = json.loads(to_json(compact_model()))
    doc["nodes"][names.index("MAX")]["mechanism"]["tables"][1][0] = [0.5, 0.6, 0.0]
    with pytest.raises(ModelError, match="each row summing to 1"):
        from_json(json.dumps(doc))
    doc = json.loads(to_json(compact_model()))
    doc["nodes"][names.index("SOFT")]["mechanism"]["weights"] = [[1.0, 2.0]]
    with pytest.raises(ModelError, match=r"weights must have shape"):
        from_json(json.dumps(doc))
