"""The discrete engine's front (causalnet.inference.discrete.engine): one DiscreteNetwork per model,
evidence validated once (by the Request), the same answers as a DiscreteBN asked directly.

Oracles: brute-force enumeration of the model's joint (tests/inference/discrete_networks.py)
and pgmpy's VariableElimination.
"""

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.discrete import DiscreteBN, DiscreteNetwork, discrete_network, model_tables
from causalnet.inference.discrete import factors as F
from causalnet.inference.discrete import network as N


def _index(m, node, state):
    return list(m.specs[node].states).index(state)


def test_one_network_per_model_with_its_per_row_do():
    m = cn.gallery.load("sprinkler")
    net = discrete_network(m)
    assert isinstance(net, DiscreteNetwork) and isinstance(net, DiscreteBN)
    assert net is discrete_network(m) and net.row_evidence == {}          # cached on the model
    rows = m.do({"Sprinkler": ["on", "off", "on"]})
    net_rows = discrete_network(rows)
    assert list(net_rows.row_evidence) == ["Sprinkler"]
    assert net_rows.row_evidence["Sprinkler"].tolist() == [1, 0, 1]
    cpts, cards, row_ev = model_tables(rows)
    assert_allclose(net_rows.cpts["Sprinkler"], [0.5, 0.5], rtol=0, atol=0)   # a uniform root, observed per row
    assert row_ev is model_tables(rows)[2] and cards == net_rows.cards


def test_model_queries_validate_evidence_once(monkeypatch):
    # the Request decodes and checks; the engine hands node ints to query_indices / map_indices
    m = cn.gallery.load("asia")
    cpts, cards, _ = model_tables(m)
    joint, names = brute_joint(m.dag, cpts, cards)

    def second_validation(*a, **k):
        raise AssertionError("evidence validated a second time")

    monkeypatch.setattr(N.DiscreteNetwork, "evidence_indices", second_validation)
    monkeypatch.setattr(N.DiscreteNetwork, "target_indices", second_validation)
    monkeypatch.setattr(N, "as_state_index", second_validation)
    monkeypatch.setattr(F, "as_state_index", second_validation)
    ev = {"asia": "yes", "smoke": "no"}
    ev_idx = {k: _index(m, k, v) for k, v in ev.items()}
    for _ in range(2):                                                 # compiled, then the prior tree
        got = m.query(["dysp", "lung"], evidence=ev).probs
        assert_allclose(got, brute_query(joint, names, ["dysp", "lung"], ev_idx)[0], rtol=0, atol=1e-12)
    batch = m.query("dysp", evidence={"asia": ["yes", "no"]}).probs
    for r, s in enumerate(("yes", "no")):
        want = brute_query(joint, names, ["dysp"], {"asia": _index(m, "asia", s)})[0]
        assert_allclose(batch[r], want, rtol=0, atol=1e-12)
    assign, logp = m.map(evidence=ev)
    state = tuple(_index(m, v, assign[v]) if v in assign else ev_idx[v] for v in names)
    assert logp == pytest.approx(np.log(joint[state]), abs=1e-12)
    sub = joint[tuple(ev_idx.get(v, slice(None)) for v in names)]
    assert joint[state] == pytest.approx(sub.max(), rel=1e-12)      # the most probable completion


def test_bad_evidence_is_still_refused_by_the_request():
    m = cn.gallery.load("asia")
    with pytest.raises(cn.EvidenceError, match="wett|state"):
        m.query("dysp", evidence={"asia": "wett"})
    with pytest.raises(cn.EvidenceError, match="both"):
        m.query("dysp", evidence={"dysp": "yes"})
    with pytest.raises(cn.EvidenceError, match="per row and observed"):
        m.query("dysp", evidence={"asia": ["yes", "no"]}, do={"asia": ["no", "no"]})


def test_direct_callers_are_still_validated():
    bn = discrete_network(cn.gallery.load("asia"))
    with pytest.raises(cn.EvidenceError, match="states"):
        bn.query(["dysp"], {"asia": 7})
    with pytest.raises(cn.EvidenceError, match="both a target and evidence"):
        bn.query(["dysp"], {"dysp": 0})
    with pytest.raises(cn.EvidenceError, match="both a target and evidence"):
        bn.map(["dysp"], {"dysp": 0})
