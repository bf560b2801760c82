"""Soft evidence in map, marginal MAP, counterfactuals and DataFrame evidence, and the cached augmented network;
against brute-force enumeration and explicit virtual-child models (no soft machinery)."""

import numpy as np
import pandas as pd
import pytest
from discrete_networks import brute_joint, random_network
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import EvidenceError
from causalnet.inference import soft
from causalnet.inference.discrete import discrete_network


def as_model(dag, cpts, card):
    mechs = {}
    for v in dag.nodes:
        ps = list(dag.parents(v))
        mechs[v] = cn.CPT(ps, cpts[v]) if ps else cn.Categorical(cpts[v])
    return cn.CausalModel(mechs)


def brute_map(model, targets, evidence, lik=None):
    """argmax over `targets` of sum over the rest of P(x, e) * prod L(y), and its log (broadcasting only)."""
    net = discrete_network(model)
    joint, names = brute_joint(model.dag, net.cpts, net.cards)
    for k, s in evidence.items():
        mask = np.zeros(net.cards[k])
        mask[s] = 1.0
        joint = joint * mask.reshape([-1 if v == k else 1 for v in names])
    for k, L in (lik or {}).items():
        L = np.asarray(L, dtype=float)
        joint = joint * (L / L.max()).reshape([-1 if v == k else 1 for v in names])
    targets = targets or [v for v in names if v not in evidence]
    marg = joint.sum(axis=tuple(i for i, v in enumerate(names) if v not in targets))
    kept = [v for v in names if v in targets]
    best = np.unravel_index(np.argmax(marg), marg.shape)
    return dict(zip(kept, (int(b) for b in best))), float(np.log(marg.max())), np.sort(marg.ravel())


def state_index(model, assign):
    return {k: model.specs[k].states.index(v) for k, v in assign.items()}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(4, 7), st.data())
def test_marginal_map_with_and_without_soft_evidence_is_brute_force(s, n_nodes, data):
    rng = np.random.default_rng(s)
    m = as_model(*random_network(rng, n_nodes))
    names = list(m.dag.nodes)
    observed = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=2))
    ev = {k: int(rng.integers(m.specs[k].card)) for k in observed}
    free = [v for v in names if v not in ev]
    targets = data.draw(st.lists(st.sampled_from(free), unique=True, min_size=1, max_size=3))
    lik = {}
    if data.draw(st.booleans()):
        k = data.draw(st.sampled_from(free))
        lik[k] = rng.random(m.specs[k].card) + 0.05
    want, want_lp, sorted_vals = brute_map(m, targets, ev, lik)
    if sorted_vals.size > 1 and sorted_vals[-1] - sorted_vals[-2] < 1e-9 * sorted_vals[-1]:
        return                                                              # a tie: either answer is right
    got, lp = m.map(targets, evidence=ev, soft_evidence=lik or None)
    assert state_index(m, got) == want
    assert_allclose(lp, want_lp, rtol=1e-9)


def test_marginal_map_differs_from_the_mpe_restricted_to_the_targets():
    """P(A) = [0.45, 0.55] but the single most probable (A, B) has A = 0: max-then-sum would be wrong."""
    m = cn.CausalModel({"A": cn.Categorical([0.45, 0.55]),
                        "B": cn.CPT(["A"], [[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])})
    mpe, _ = m.map()
    got, lp = m.map(["A"])
    assert mpe["A"] == 0 and got["A"] == 1 and lp == pytest.approx(np.log(0.55))


def test_map_with_batched_soft_evidence_and_do(asia, rng):
    lik = rng.random((4, 2)) + 0.05
    got, lp = asia.map(["lung", "tub"], evidence={"xray": ["yes", "no", "yes", "no"]},
                       soft_evidence={"dysp": lik}, do={"smoke": "yes"})
    mut = asia.do({"smoke": "yes"})
    xray = ["yes", "no", "yes", "no"]
    for r in range(4):
        want, want_lp, _ = brute_map(mut, ["lung", "tub"], {"xray": mut.specs["xray"].states.index(xray[r])},
                                     {"dysp": lik[r]})
        assert state_index(mut, {k: v[r] for k, v in got.items()}) == want
        assert_allclose(lp[r], want_lp, rtol=1e-9)


def test_mpe_with_soft_evidence_by_loopy_on_a_tree(asia):
    lik = {"dysp": [0.05, 1.0]}
    exact, lp = asia.map(evidence={"xray": "yes"}, soft_evidence=lik)
    want, want_lp, _ = brute_map(asia, None, {"xray": asia.specs["xray"].states.index("yes")}, lik)
    assert state_index(asia, exact) == want and lp == pytest.approx(want_lp)
    loopy, _ = asia.map(evidence={"xray": "yes"}, soft_evidence=lik, method="loopy")
    assert loopy == exact


def virtual_child_model(model, node, lik):
    """`model` plus an explicit child V of `node` with P(V = 1 | y) = L(y) / max L (the soft evidence by hand)."""
    L = np.asarray(lik, dtype=float) / np.max(lik)
    return cn.CausalModel({**model.mechanisms, "V": cn.CPT([node], np.stack([1 - L, L], axis=-1))})


@pytest.mark.parametrize("node", ["dysp", "lung"])
def test_counterfactual_with_soft_evidence_equals_an_explicit_virtual_child(asia, node):
    lik = [0.3, 1.0]
    got = asia.counterfactual("dysp", evidence={"xray": "yes"}, do={"smoke": "no"}, soft_evidence={node: lik})
    want = virtual_child_model(asia, node, lik).counterfactual("dysp", evidence={"xray": "yes", "V": 1},
                                                               do={"smoke": "no"})
    assert "soft evidence" in got.method
    assert_allclose(got.probs, want.probs, atol=1e-12)
    text = asia.query("P(dysp_{smoke=no} | xray=yes)", soft_evidence={node: lik})
    assert_allclose(text.probs, want.probs, atol=1e-12)


def test_counterfactual_with_batched_soft_evidence(asia, rng):
    lik = rng.random((3, 2)) + 0.05
    got = asia.counterfactual("lung", evidence={"xray": ["yes", "no", "yes"]}, do={"smoke": "yes"},
                              soft_evidence={"dysp": lik})
    for r, x in enumerate(["yes", "no", "yes"]):
        want = virtual_child_model(asia, "dysp", lik[r]).counterfactual(
            "lung", evidence={"xray": x, "V": 1}, do={"smoke": "yes"})
        assert_allclose(got.probs[r], want.probs, atol=1e-12)


def test_soft_evidence_with_dataframe_evidence(asia, rng):
    df = pd.DataFrame({"xray": ["yes", None, "no", "yes", None], "smoke": [None, "no", "yes", None, "yes"]})
    lik = rng.random((5, 2)) + 0.05
    got = asia.query("lung", evidence=df, soft_evidence={"dysp": lik})
    assert got.probs.shape == (5, 2)
    for r in range(5):
        ev = {c: df[c][r] for c in df.columns if pd.notna(df[c][r])}
        assert_allclose(got.probs[r], asia.query("lung", evidence=ev, soft_evidence={"dysp": lik[r]}).probs,
                        atol=1e-12)
    one = asia.query("lung", evidence=df, soft_evidence={"dysp": [0.2, 1.0]}, method="loopy")
    assert_allclose(one.probs[2], asia.query("lung", evidence={"xray": "no", "smoke": "yes"},
                                             soft_evidence={"dysp": [0.2, 1.0]}).probs, atol=1e-8)
    with pytest.raises(EvidenceError, match="has 3 rows; the evidence data frame has 5"):
        asia.query("lung", evidence=df, soft_evidence={"dysp": lik[:3]})


def test_the_augmented_network_is_cached_per_model(asia, monkeypatch):
    lik = {"dysp": [0.3, 1.0], "xray": [1.0, 0.4]}
    small = asia.query(["lung", "tub", "bronc"], soft_evidence=lik)           # the weighed joint
    assert small.method == soft.METHOD_JOINT and "soft_networks" not in asia.cache
    monkeypatch.setattr(soft, "JOINT_ENTRIES", 1)
    big = asia.query(["lung", "tub", "bronc"], soft_evidence=lik)             # the augmented network
    assert big.method == soft.METHOD
    assert_allclose(big.probs, small.probs, atol=1e-12)
    cache = asia.cache["soft_networks"]
    (net,) = [v[0] for v in cache.values()]
    asia.query("either", evidence={"smoke": "yes"}, soft_evidence=lik)
    asia.map(["lung"], soft_evidence=lik)
    assert len(cache) == 1 and next(iter(cache.values()))[0] is net           # reused, not rebuilt
    asia.query("lung", soft_evidence={"dysp": [0.5, 1.0]})
    assert len(cache) == 2
    for i in range(soft.CACHE_SIZE + 2):
        asia.query("lung", soft_evidence={"dysp": [0.01 * (i + 1), 1.0]})
    assert len(cache) == soft.CACHE_SIZE


def test_brute_map_helper_sees_every_assignment():
    m = cn.CausalModel({"A": cn.Categorical([0.2, 0.8]), "B": cn.CPT(["A"], [[0.9, 0.1], [0.3, 0.7]])})
    _, lp, vals = brute_map(m, ["A", "B"], {})
    assert_allclose(vals, sorted([0.18, 0.02, 0.24, 0.56]))
    assert lp == pytest.approx(np.log(0.56))


@pytest.mark.slow
def test_soft_evidence_with_a_dask_frame(asia):
    dd = pytest.importorskip("dask.dataframe")
    df = pd.DataFrame({"xray": ["yes", None, "no", "yes"], "smoke": [None, "no", "yes", "yes"]})
    got = asia.query("lung", evidence=dd.from_pandas(df, npartitions=2), soft_evidence={"dysp": [0.2, 1.0]})
    want = asia.query("lung", evidence=df, soft_evidence={"dysp": [0.2, 1.0]})
    assert_allclose(got.compute().to_numpy(), want.probs, atol=1e-12)
    with pytest.raises(cn.ModelError, match="per-row likelihoods do not follow the partitions"):
        asia.query("lung", evidence=dd.from_pandas(df, npartitions=2), soft_evidence={"dysp": np.ones((4, 2))})
