"""JSON model files: exact round trips, clear errors on corrupted files."""

import json
import re

import numpy as np
import pytest
from conftest import make_sprinkler
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal
from scipy import stats

from causalnet.errors import ModelError
from causalnet.io import json as cjson
from causalnet.io.json import FORMAT, VERSION, from_json, load_json, register_mechanism, save_json, to_json
from causalnet.mechanisms.base import REAL, Mechanism, Spec
from causalnet.mechanisms.function import Deterministic, Function
from causalnet.mechanisms.gaussian import LinearGaussian
from causalnet.mechanisms.tabular import CPT, Categorical
from causalnet.model import CausalModel

# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def sprinkler():
    """The canonical sprinkler plus a latent, isolated node with integer states 0..2."""
    return CausalModel({**make_sprinkler().mechanisms, "U": Categorical([1 / 3, 1 / 3, 1 / 3])}, latent=["U"])


@pytest.fixture
def mixed(rng):
    """Discrete, Gaussian and a Gaussian child of a discrete node; awkward floats."""
    t = rng.dirichlet(np.ones(4), size=(3, 2))                   # (3, 2, 4)
    return CausalModel({
        "Z": Categorical(rng.dirichlet(np.ones(3)), states=[10, 20, 30]),
        "B": Categorical([0.25, 0.75], states=["lo", "hi"]),
        "C": CPT(["Z", "B"], t, states=["a", "b", "c", "d"]),
        "X": LinearGaussian(["Z"], [np.pi], bias=-0.0, sigma=5e-324),
        "Y": LinearGaussian(["X", "C"], [1e300, -1 / 7], bias=0.1, sigma=np.sqrt(2.0)),
    }, latent=["B"])


def assert_same_model(a: CausalModel, b: CausalModel) -> None:
    """Same nodes (order), mechanisms (bit for bit), states (and their types), DAG, latent, interventions."""
    assert list(a.nodes) == list(b.nodes)
    assert a.dag == b.dag
    assert a.latent == b.latent and a.dag.intervened == b.dag.intervened
    for v in a.nodes:
        ma, mb = a.mechanisms[v], b.mechanisms[v]
        assert type(ma) is type(mb)
        assert ma.parents == mb.parents
        assert a.specs[v] == b.specs[v]
        if hasattr(ma, "natural"):
            assert_array_equal(np.asarray(ma.value), np.asarray(mb.value))
            assert np.asarray(ma.value).dtype == np.asarray(mb.value).dtype
            ma, mb = ma.natural, mb.natural
            assert type(ma) is type(mb)
        if isinstance(ma, (Categorical, CPT)):
            assert ma.table.shape == mb.table.shape
            assert ma.table.tobytes() == mb.table.tobytes()
            assert [(type(s), s) for s in ma.states] == [(type(s), s) for s in mb.states]
        if isinstance(ma, LinearGaussian):
            assert ma.weights.tobytes() == mb.weights.tobytes()
            assert np.float64(ma.bias).tobytes() == np.float64(mb.bias).tobytes()
            assert np.float64(ma.sigma).tobytes() == np.float64(mb.sigma).tobytes()


# -- round trips ----------------------------------------------------------------------------


def test_round_trip_text_is_exact(sprinkler):
    text = to_json(sprinkler)
    back = from_json(text)
    assert_same_model(sprinkler, back)
    assert to_json(back) == text


def test_round_trip_file_is_exact(mixed, tmp_path):
    path = tmp_path / "m.json"
    save_json(mixed, path)
    back = load_json(path)
    assert_same_model(mixed, back)
    assert back.mechanisms["X"].sigma == 5e-324                 # a subnormal survives
    assert np.signbit(back.mechanisms["X"].bias)                # so does -0.0


def test_loaded_model_samples_the_same(mixed, seed):
    back = from_json(to_json(mixed))
    s1, s2 = mixed.sample(500, seed=seed), back.sample(500, seed=seed)
    for v in mixed.nodes:
        assert_array_equal(s1[v], s2[v])


def test_file_is_plain_json_in_the_schema(sprinkler):
    doc = json.loads(to_json(sprinkler))
    assert doc["format"] == FORMAT == "causalnet-model" and doc["version"] == VERSION == 1
    assert [n["name"] for n in doc["nodes"]] == ["Rain", "Sprinkler", "Wet", "U"]
    assert doc["nodes"][2]["mechanism"] == {"type": "CPT", "parents": ["Rain", "Sprinkler"],
                                            "table": [[[1.0, 0.0], [0.1, 0.9]], [[0.2, 0.8], [0.01, 0.99]]],
                                            "states": ["dry", "wet"]}
    assert doc["latent"] == ["U"]
    assert "interventions" not in doc


@pytest.mark.parametrize("do", [{"Sprinkler": "on"}, {"Sprinkler": 0, "Rain": "yes"},
                                {"Wet": np.array([0, 1, 1, 0])}, {"U": 2}])
def test_discrete_interventions_round_trip(sprinkler, do, seed):
    m = sprinkler.do(do)
    text = to_json(m)
    back = from_json(text)
    assert_same_model(m, back)
    assert to_json(back) == text
    if "Wet" not in do:
        s1, s2 = m.sample(200, seed=seed), back.sample(200, seed=seed)
        for v in m.nodes:
            assert_array_equal(s1[v], s2[v])


def test_intervened_latent_node_stays_observed(sprinkler):
    m = sprinkler.do({"U": 1})
    back = from_json(to_json(m))
    assert "U" not in back.latent and "U" in back.dag.intervened
    assert back.mechanisms["U"].natural.probs.tobytes() == sprinkler.mechanisms["U"].probs.tobytes()


def test_interventions_with_int_states_that_are_not_their_indices():
    # states (1, 0): the state named 0 is index 1; a naive index/name mix-up would flip it
    m = CausalModel({"A": Categorical([0.3, 0.7], states=[1, 0]),
                     "B": CPT(["A"], [[0.5, 0.5], [0.1, 0.9]], states=[0, 5])})
    for do in ({"A": 0}, {"B": 5}, {"A": np.array([1, 0, 0])}):
        md = m.do(do)
        back = from_json(to_json(md))
        assert_same_model(md, back)


def test_real_interventions_round_trip(mixed):
    for do in ({"X": 0.1}, {"X": np.array([1 / 3, -2.5, 1e-300])}, {"Y": -0.0, "Z": 30}):
        m = mixed.do(do)
        back = from_json(to_json(m))
        assert_same_model(m, back)


def test_empty_model_round_trips():
    m = CausalModel({})
    assert list(from_json(to_json(m)).nodes) == []


finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(weights=st.lists(finite, min_size=2, max_size=2), bias=finite,
       sigma=st.floats(min_value=0, allow_infinity=False), seed=st.integers(0, 2**32 - 1),
       states=st.lists(st.one_of(st.text(max_size=5), st.integers(-2**70, 2**70), st.booleans()),
                       min_size=3, max_size=3, unique_by=lambda s: (type(s), s)))
def test_property_round_trip_is_bit_exact(weights, bias, sigma, seed, states):
    if len({s for s in states}) < 3:                    # True == 1 as Python values: not distinct states
        return
    rng = np.random.default_rng(seed)
    t = rng.dirichlet(np.full(3, 0.3), size=2)                  # (2, 3), arbitrary low bits
    m = CausalModel({
        "A": Categorical(rng.dirichlet([1.0, 1.0])),
        "B": CPT(["A"], t, states=states),
        "X": LinearGaussian(["A", "B"], weights, bias=bias, sigma=sigma),
    })
    back = from_json(to_json(m))
    assert_same_model(m, back)


# -- what cannot be saved ------------------------------------------------------------------


def test_function_nodes_cannot_be_saved(tmp_path):
    m = CausalModel({"X": LinearGaussian(), "Y": Function(["X"], np.sin, stats.norm(0, 1))})
    path = tmp_path / "m.json"
    with pytest.raises(ModelError, match=r"node 'Y' is a Function, which holds Python code"):
        save_json(m, path)
    assert not path.exists()


def test_deterministic_nodes_cannot_be_saved():
    m = CausalModel({"X": LinearGaussian(), "Y": Deterministic(["X"], np.cos)})
    with pytest.raises(ModelError, match=r"node 'Y' is a Deterministic"):
        to_json(m)


def test_shift_interventions_cannot_be_saved(mixed):
    m = mixed.do({"X": lambda x: x + 1})
    with pytest.raises(ModelError, match=r"node 'X' has a shift intervention"):
        to_json(m)


def test_unregistered_mechanism_cannot_be_saved():
    class Const(Mechanism):
        kind = REAL
        deterministic = True

        def spec(self, node, parent_specs):
            return Spec(REAL)

    m = CausalModel({"C": Const()})
    with pytest.raises(ModelError, match=r"node 'C' cannot be saved: Const cannot be saved to JSON"):
        to_json(m)


def test_non_string_node_names_cannot_be_saved():
    m = CausalModel({1: Categorical([0.5, 0.5])})
    with pytest.raises(ModelError, match=r"node 1: model files hold string node names"):
        to_json(m)


# -- the registry ----------------------------------------------------------------------------


class _Const(Mechanism):
    kind = REAL
    deterministic = True

    def __init__(self, value: float) -> None:
        super().__init__(())
        self.value = float(value)

    def spec(self, node, parent_specs):
        return Spec(REAL)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        return np.full(n, self.value)

    def to_dict(self):
        return {"type": "TestConst", "value": self.value}


@pytest.fixture
def const_registered(monkeypatch):
    monkeypatch.setattr(cjson, "_REGISTRY", dict(cjson._REGISTRY))
    register_mechanism("TestConst", lambda d: _Const(d["value"]))


def test_registered_mechanism_round_trips(const_registered):
    m = CausalModel({"C": _Const(0.1), "Y": LinearGaussian(["C"], [2.0])})
    back = from_json(to_json(m))
    assert isinstance(back.mechanisms["C"], _Const) and back.mechanisms["C"].value == 0.1
    assert back.dag == m.dag


def test_registered_loader_errors_name_the_path(const_registered):
    text = to_json(CausalModel({"C": _Const(0.1)})).replace('"value"', '"valu"')
    with pytest.raises(ModelError, match=re.escape("nodes[0].mechanism: missing field 'value'")):
        from_json(text)


def test_register_refuses_to_replace_silently(monkeypatch):
    monkeypatch.setattr(cjson, "_REGISTRY", dict(cjson._REGISTRY))
    with pytest.raises(ModelError, match="already has a loader"):
        register_mechanism("CPT", lambda d: None)
    register_mechanism("CPT", cjson._load_cpt, replace=True)
    with pytest.raises(ModelError, match="must be callable"):
        register_mechanism("Other", "not callable")


def test_loader_returning_a_non_mechanism_is_an_error(monkeypatch):
    monkeypatch.setattr(cjson, "_REGISTRY", dict(cjson._REGISTRY))
    register_mechanism("Bad", lambda d: 42)
    doc = {"format": FORMAT, "version": 1, "nodes": [{"name": "A", "mechanism": {"type": "Bad"}}]}
    with pytest.raises(ModelError, match=re.escape("nodes[0].mechanism: the loader for 'Bad' returned int")):
        from_json(json.dumps(doc))


# -- corrupted files -----------------------------------------------------------------------------


def _doc(sprinkler):
    return json.loads(to_json(sprinkler))


def test_every_truncation_is_a_clear_error(sprinkler):
    text = to_json(sprinkler).rstrip()
    for cut in range(len(text)):
        with pytest.raises(ModelError, match=r"malformed JSON|the file is empty"):
            from_json(text[:cut])


def test_truncated_file_names_file_line_and_column(sprinkler, tmp_path):
    path = tmp_path / "model.json"
    text = to_json(sprinkler)
    path.write_text(text[: text.index('"Wet"') + 20])
    with pytest.raises(ModelError, match=r"^model\.json: line 5, column \d+: malformed JSON: "):
        load_json(path)


def _edit(doc, path, value):
    """Set doc[path...] = value (or delete it when value is _DELETE)."""
    *head, last = path
    d = doc
    for k in head:
        d = d[k]
    if value is _DELETE:
        del d[last]
    else:
        d[last] = value
    return doc


_DELETE = object()

CORRUPTIONS = [
    # (path to edit, new value, expected message (regex))
    (("version",), 2, r"^version: this causalnet reads model files of version 1; the file has version 2 "
                      r"\(written by a newer causalnet\?\)"),
    (("version",), "1", r"^version: expected an integer, got a string"),
    (("version",), _DELETE, r"^missing field 'version'"),
    (("format",), "pgmpy", r"^format: expected 'causalnet-model', got 'pgmpy'"),
    (("format",), _DELETE, r"^missing field 'format'"),
    (("nodes",), _DELETE, r"^missing field 'nodes'"),
    (("nodes",), {}, r"^nodes: expected a list, got an object"),
    (("extra",), 1, r"^unknown field 'extra'"),
    (("nodes", 1), "Sprinkler", r"^nodes\[1\]: expected an object with 'name' and 'mechanism', got a string"),
    (("nodes", 1, "name"), 7, r"^nodes\[1\]\.name: expected a string, got a number"),
    (("nodes", 1, "name"), "Rain", r"^nodes\[1\]\.name: node 'Rain' appears twice \(also nodes\[0\]\)"),
    (("nodes", 1, "mechanism"), _DELETE, r"^nodes\[1\]: missing field 'mechanism'"),
    (("nodes", 1, "color"), "red", r"^nodes\[1\]: unknown field 'color'"),
    (("nodes", 1, "mechanism", "type"), "Pickle", r"^nodes\[1\]\.mechanism\.type: unknown mechanism type 'Pickle'"),
    (("nodes", 1, "mechanism", "type"), _DELETE, r"^nodes\[1\]\.mechanism: missing field 'type'"),
    (("nodes", 1, "mechanism", "table"), _DELETE, r"^nodes\[1\]\.mechanism: missing field 'table'"),
    (("nodes", 1, "mechanism", "states"), _DELETE, r"^nodes\[1\]\.mechanism: missing field 'states'"),
    (("nodes", 1, "mechanism", "code"), "import os", r"^nodes\[1\]\.mechanism: unknown field 'code'"),
    (("nodes", 1, "mechanism", "table"), [[0.6, 0.4], [0.99]],
     r"^nodes\[1\]\.mechanism\.table\[1\]: has 1 entries, the first list has 2"),
    (("nodes", 1, "mechanism", "table"), [[0.6, 0.4], [0.99, "0.01"]],
     r"^nodes\[1\]\.mechanism\.table\[1\]\[1\]: expected a number, got a string"),
    (("nodes", 1, "mechanism", "table"), [[0.6, 0.4], [0.99, None]],
     r"^nodes\[1\]\.mechanism\.table\[1\]\[1\]: expected a number, got null"),
    (("nodes", 1, "mechanism", "table"), [0.6, 0.4],
     r"^nodes\[1\]\.mechanism\.table: expected 2 nested levels of lists, got shape \(2,\)"),
    (("nodes", 1, "mechanism", "table"), [[0.6, 0.4], [0.99, 0.01], [0.5, 0.5]],
     r"^nodes\[1\]\.mechanism\.table: has shape \(3, 2\); parents \['Rain'\] have \(2,\) states and "
     r"'Sprinkler' has 2, so expected \(2, 2\)"),
    (("nodes", 1, "mechanism", "table"), [[1.4, -0.4], [0.99, 0.01]],
     r"^nodes\[1\]\.mechanism\.table: CPT over parents \['Rain'\]: entry \(0, 1\) is -0\.4; probabilities "
     r"must be >= 0"),
    (("nodes", 1, "mechanism", "table"), [[0.6, 0.3], [0.99, 0.01]],
     r"^nodes\[1\]\.mechanism\.table: CPT over parents \['Rain'\]: row \(0,\) sums to 0\.9"),
    (("nodes", 1, "mechanism", "states"), ["off", "on", "broken"],
     r"^nodes\[1\]\.mechanism\.states: 3 state names for 2 probabilities per row"),
    (("nodes", 1, "mechanism", "states"), ["off", "off"],
     r"^nodes\[1\]\.mechanism\.states\[1\]: state 'off' is listed twice"),
    (("nodes", 1, "mechanism", "states"), ["off", None],
     r"^nodes\[1\]\.mechanism\.states\[1\]: expected a state name"),
    (("nodes", 1, "mechanism", "parents"), ["Rian"],
     r"^nodes\[1\]\.mechanism\.parents\[0\]: unknown node 'Rian'"),
    (("nodes", 1, "mechanism", "parents"), "Rain",
     r"^nodes\[1\]\.mechanism\.parents: expected a list of node names, got a string"),
    (("nodes", 1, "mechanism", "parents"), ["Wet"],
     r"^nodes: the edges contain the cycle"),
    (("nodes", 0, "mechanism", "probs"), [0.8, 0.2, 0.0],
     r"^nodes\[0\]\.mechanism\.states: 2 state names for 3 probabilities per row"),
    (("nodes", 0, "mechanism", "probs"), [True, False],
     r"^nodes\[0\]\.mechanism\.probs\[0\]: expected a number, got a boolean"),
    (("latent",), ["Rain", "Nope"], r"^latent\[1\]: unknown node 'Nope'"),
    (("latent",), "U", r"^latent: expected a list of node names, got a string"),
    (("interventions",), {"Sprinkler": "maybe"},
     r"^interventions\.Sprinkler: 'Sprinkler' has no state 'maybe'; states: \['off', 'on'\]"),
    (("interventions",), {"Sprinkler": 1},
     r"^interventions\.Sprinkler: 'Sprinkler' has no state 1"),
    (("interventions",), {"Nope": "on"}, r"^interventions\.Nope: unknown node 'Nope'"),
    (("interventions",), ["Sprinkler", "on"], r"^interventions: expected an object node -> value, got a list"),
    (("interventions",), {"U": 1}, r"^interventions\.U: 'U' is listed as latent"),
]


@pytest.mark.parametrize(("path", "value", "message"), CORRUPTIONS,
                         ids=[f"{'.'.join(map(str, p))}={v!r}"[:60] for p, v, _ in CORRUPTIONS])
def test_corrupted_content_is_a_clear_error(sprinkler, path, value, message):
    doc = _edit(_doc(sprinkler), path, value)
    with pytest.raises(ModelError, match=message):
        from_json(json.dumps(doc))


def test_gaussian_field_errors(mixed):
    doc = json.loads(to_json(mixed))
    bad = [
        ("sigma", -1.0, r"^nodes\[4\]\.mechanism\.sigma: the noise standard deviation must be >= 0, got -1\.0"),
        ("sigma", "1", r"^nodes\[4\]\.mechanism\.sigma: expected a number, got a string"),
        ("weights", [1.0], r"^nodes\[4\]\.mechanism\.weights: 1 weights for 2 parents \['X', 'C'\]"),
        ("bias", None, r"^nodes\[4\]\.mechanism\.bias: expected a number, got null"),
    ]
    for field, value, message in bad:
        d = json.loads(json.dumps(doc))
        d["nodes"][4]["mechanism"][field] = value
        with pytest.raises(ModelError, match=message):
            from_json(json.dumps(d))


@pytest.mark.parametrize(("text", "message"), [
    ("", r"^the file is empty"),
    ("[1, 2]", r"^expected a JSON object at the top level, got a list"),
    ('{"format": "causalnet-model", "version": 1, "version": 1, "nodes": []}',
     r"^malformed model file: key 'version' appears twice"),
    ('{"format": "causalnet-model", "version": 1, "nodes": [{"name": "A", "mechanism": '
     '{"type": "Categorical", "probs": [NaN, 1.0], "states": [0, 1]}}]}', r"NaN is not a JSON number"),
    ('{"format": "causalnet-model",\n "version": 1\n "nodes": []}',
     r"^line 3, column 2: malformed JSON: Expecting ',' delimiter"),
    ("[" * 100_000, r"malformed"),
    ('{"format": "causalnet-model", "version": 1, "nodes": [{"name": "A", "mechanism": '
     '{"type": "Categorical", "probs": [1e400, 0.0], "states": [0, 1]}}]}',
     r"^nodes\[0\]\.mechanism\.probs: holds a number too large to be finite"),
])
def test_malformed_json(text, message):
    with pytest.raises(ModelError, match=message):
        from_json(text)


def test_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no such file"):
        load_json(tmp_path / "missing.json")
    bad = tmp_path / "latin.json"
    bad.write_bytes(b'{"format": "caf\xe9"}')
    with pytest.raises(ModelError, match=r"^latin\.json: the model file is not UTF-8"):
        load_json(bad)
    with pytest.raises(ModelError, match=r"expects the text of a model file"):
        from_json(12)


def test_error_messages_start_with_the_file_name(sprinkler, tmp_path):
    doc = _doc(sprinkler)
    doc["nodes"][2]["mechanism"]["table"][1][0] = [0.2, 0.7]
    path = tmp_path / "wet.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match=r"^wet\.json: nodes\[2\]\.mechanism\.table: .* row \(1, 0\) sums to 0\.9"):
        load_json(path)


def test_no_code_is_run_on_load(sprinkler, tmp_path, monkeypatch):
    # a file that names code, a class path or a pickle gets an unknown-type error, and nothing is imported
    import builtins

    calls = []
    real_import = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda *a, **k: calls.append(a[0]) or real_import(*a, **k))
    for t in ("__import__('os').system('false')", "causalnet.mechanisms.function.Function", "pickle"):
        doc = _doc(sprinkler)
        doc["nodes"][0]["mechanism"]["type"] = t
        with pytest.raises(ModelError, match=r"unknown mechanism type"):
            from_json(json.dumps(doc))
    assert "os" not in calls and "pickle" not in calls
