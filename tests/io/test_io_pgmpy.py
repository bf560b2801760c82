"""from_pgmpy / to_pgmpy: exact round trips, pgmpy's inference on our tables, clear errors."""

import gzip
import itertools
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose

from causalnet.errors import ModelError
from causalnet.io.bif import bnlearn_path, read_bif
from causalnet.io.pgmpy import from_pgmpy, to_pgmpy
from causalnet.mechanisms.gaussian import LinearGaussian
from causalnet.mechanisms.tabular import CPT, Categorical
from causalnet.model import CausalModel

pgmpy = pytest.importorskip("pgmpy")
from pgmpy.factors.discrete import TabularCPD  # noqa: E402
from pgmpy.inference import VariableElimination  # noqa: E402

try:
    from pgmpy.models import DiscreteBayesianNetwork as Network
except ImportError:  # older pgmpy
    from pgmpy.models import BayesianNetwork as Network


@pytest.fixture
def model(rng):
    """Four nodes, mixed state types, a latent and an isolated node, random tables."""
    return CausalModel({
        "A": Categorical(rng.dirichlet(np.ones(3)), states=["a0", "a1", "a2"]),
        "B": Categorical([0.5, 0.5], states=[0, 1]),
        "C": CPT(["B", "A"], rng.dirichlet(np.ones(2), size=(2, 3)), states=["lo", "hi"]),    # (2, 3, 2)
        "D": CPT(["C"], rng.dirichlet(np.ones(4), size=2), states=[10, 20, 30, 40]),         # (2, 4)
        "Iso": Categorical([0.9, 0.1], states=["x", "y"]),
    }, latent=["A"])


def assert_same_model(a, b):
    assert list(a.nodes) == list(b.nodes) and a.dag == b.dag and a.latent == b.latent
    for v in a.nodes:
        ma, mb = a.mechanisms[v], b.mechanisms[v]
        assert type(ma) is type(mb) and ma.parents == mb.parents and ma.states == mb.states
        assert ma.table.tobytes() == mb.table.tobytes()


def _joint(m):
    """Brute-force joint distribution of a small discrete model: dict assignment -> probability."""
    nodes = list(m.nodes)
    cards = [len(m.mechanisms[v].states) for v in nodes]
    joint = {}
    for idx in itertools.product(*(range(k) for k in cards)):
        val = dict(zip(nodes, idx))
        p = 1.0
        for v in nodes:
            mech = m.mechanisms[v]
            p *= mech.table[tuple(val[q] for q in mech.parents) + (val[v],)]
        joint[idx] = p
    return nodes, joint


def test_round_trip_is_exact(model):
    pm = to_pgmpy(model)
    assert isinstance(pm, Network)
    assert pm.check_model()
    assert set(pm.latents) == {"A"}
    assert set(pm.nodes()) == set(model.nodes)
    assert_same_model(model, from_pgmpy(pm))


def test_pgmpy_layout(model):
    cpd = to_pgmpy(model).get_cpds("C")
    assert list(cpd.variables) == ["C", "B", "A"]
    assert cpd.state_names == {"C": ["lo", "hi"], "B": [0, 1], "A": ["a0", "a1", "a2"]}
    assert np.moveaxis(cpd.values, 0, -1).tobytes() == model.mechanisms["C"].table.tobytes()


def test_pgmpy_inference_on_converted_model_matches_enumeration(model):
    # oracle: brute-force enumeration of our tables; pgmpy's variable elimination on the converted model
    pm = to_pgmpy(model)
    nodes, joint = _joint(model)
    ie = VariableElimination(pm)
    iD, iC, iA = nodes.index("D"), nodes.index("C"), nodes.index("A")
    for c in range(2):
        num = np.zeros(4)
        for idx, p in joint.items():
            if idx[iC] == c and idx[iA] == 1:
                num[idx[iD]] += p
        got = ie.query(["D"], evidence={"C": model.mechanisms["C"].states[c], "A": "a1"}, show_progress=False)
        assert_allclose(got.values, num / num.sum(), rtol=0, atol=1e-12)


def test_from_pgmpy_equals_our_bif_reader():
    path = bnlearn_path("asia")
    if path is None:
        pytest.skip("pgmpy ships no asia.bif.gz")
    from pgmpy.readwrite import BIFReader

    pm = BIFReader(string=gzip.open(path, "rt").read()).get_model()
    ours = read_bif(path)
    conv = from_pgmpy(pm)
    assert set(conv.nodes) == set(ours.nodes)
    for v in ours.nodes:
        assert conv.mechanisms[v].parents == ours.mechanisms[v].parents
        assert conv.mechanisms[v].states == ours.mechanisms[v].states
        assert conv.mechanisms[v].table.tobytes() == ours.mechanisms[v].table.tobytes()


def test_parent_states_listed_in_another_order_are_matched_by_name():
    net = Network([("A", "B")])
    a = TabularCPD("A", 2, [[0.3], [0.7]], state_names={"A": ["x", "y"]})
    # B's CPD lists A's states as (y, x): column 0 is A=y
    b = TabularCPD("B", 2, [[0.9, 0.2], [0.1, 0.8]], evidence=["A"], evidence_card=[2],
                   state_names={"B": ["u", "v"], "A": ["y", "x"]})
    net.add_cpds(a, b)
    m = from_pgmpy(net)
    # P(B = u | A = x) = 0.2, P(B = u | A = y) = 0.9
    assert m.mechanisms["B"].table.tolist() == [[0.2, 0.8], [0.9, 0.1]]


def test_rows_off_by_rounding_are_rescaled_and_big_errors_refused():
    net = Network()
    net.add_node("A")
    net.add_cpds(TabularCPD("A", 2, [[0.3], [0.7000004]]))
    assert_allclose(from_pgmpy(net).mechanisms["A"].probs, [0.3 / 1.0000004, 0.7000004 / 1.0000004], rtol=0,
                    atol=1e-15)
    net2 = Network()
    net2.add_node("A")
    net2.add_cpds(TabularCPD("A", 2, [[0.3], [0.705]]))
    with pytest.raises(ModelError, match=r"pgmpy node 'A': the probabilities sum to 1\.005"):
        from_pgmpy(net2)
    assert_allclose(from_pgmpy(net2, tol=0.01).mechanisms["A"].probs.sum(), 1.0, rtol=0, atol=1e-12)


def test_from_pgmpy_errors():
    with pytest.raises(ModelError, match="expects a pgmpy DiscreteBayesianNetwork, got dict"):
        from_pgmpy({})
    net = Network([("A", "B")])
    net.add_cpds(TabularCPD("A", 2, [[0.5], [0.5]]))
    with pytest.raises(ModelError, match=r"pgmpy node 'B' has no CPD"):
        from_pgmpy(net)


def test_to_pgmpy_errors(model):
    with pytest.raises(ModelError, match=r"node 'B' is intervened on"):
        to_pgmpy(model.do({"B": 1}))
    with pytest.raises(ModelError, match=r"node 'X' is a LinearGaussian"):
        to_pgmpy(CausalModel({"X": LinearGaussian()}))


def test_missing_pgmpy_names_the_extra(model, monkeypatch):
    for mod in ("pgmpy", "pgmpy.models", "pgmpy.factors", "pgmpy.factors.discrete"):
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(ImportError, match=r"pip install causalnet\[pgmpy\]"):
        to_pgmpy(model)
