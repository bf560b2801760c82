"""Residual belief propagation (priority queue): exact on trees (brute force), the flooding schedule's fixed point
on loopy networks, batches, zeros and impossible evidence, max-product, and what it refuses."""

import numpy as np
import pytest
from discrete_networks import random_network
from numpy.testing import assert_allclose
from test_loopy import brute_posterior, random_tree

import causalnet as cn
from causalnet import EvidenceError, ModelError, runtime
from causalnet.inference import approximate, residual
from causalnet.inference.approximate import model_factor_graph
from causalnet.inference.loopy import propagate


def as_model(dag, cpts, card):
    return cn.CausalModel({v: cn.CPT(list(dag.parents(v)), cpts[v]) if dag.parents(v) else cn.Categorical(cpts[v])
                           for v in dag.nodes})


@pytest.mark.parametrize("s", range(5))
def test_residual_is_exact_on_trees(s):
    rng = np.random.default_rng(s)
    m = random_tree(rng, 9)
    names = list(m.dag.nodes)
    ev = {names[-1]: 0, names[3]: 1}
    for t in names[:3]:
        r = m.query(t, evidence=ev, method="loopy", schedule="residual", tol=1e-12)
        assert r.converged and "residual" in r.method
        assert_allclose(r.probs, brute_posterior(m, t, ev), atol=1e-10)


@pytest.mark.parametrize("s", range(4))
def test_residual_reaches_the_flooding_fixed_point(s):
    rng = np.random.default_rng(100 + s)
    m = as_model(*random_network(rng, 12, max_parents=3, zeros=s % 2 == 1))
    fg = model_factor_graph(m)
    u = np.ones((3, fg.cards.size, fg.K))
    u[0, 11, :] = 0.0
    u[0, 11, 0] = 1.0
    u[1, 7, :2] = [0.2, 1.0]
    a = propagate(fg, u, tol=1e-12, max_iter=3000, damping=0.3)
    b = propagate(fg, u, tol=1e-12, max_iter=3000, schedule="residual")
    ok = a.converged & b.converged & ~a.impossible & ~b.impossible
    assert ok.any()
    assert_allclose(b.beliefs[ok], a.beliefs[ok], atol=1e-7)


def test_residual_max_product_gives_the_mpe_on_a_tree(rng):
    m = random_tree(rng, 8)
    names = list(m.dag.nodes)
    got, lp = m.map(evidence={names[5]: 1}, method="loopy", schedule="residual")
    want, want_lp = m.map(evidence={names[5]: 1})
    assert got == want and lp == pytest.approx(want_lp)


def test_residual_batches_and_impossible_rows():
    m = cn.gallery.load("sprinkler")
    r = m.query("Rain", evidence={"Wet": ["wet", "dry"]}, method="loopy", schedule="residual")
    want = m.query("Rain", evidence={"Wet": ["wet", "dry"]}, method="loopy", tol=1e-12)   # a loop: not exact
    assert_allclose(r.probs, want.probs, atol=1e-7)
    for row, w in enumerate(["wet", "dry"]):
        one = m.query("Rain", evidence={"Wet": w}, method="loopy", schedule="residual")
        assert_allclose(r.probs[row], one.probs, atol=1e-12)
    with pytest.raises(EvidenceError, match="probability zero"):
        m.query("Rain", evidence={"Wet": "wet"}, do={"Sprinkler": "off", "Rain": "no"}, method="loopy",
                schedule="residual")


def test_residual_stops_at_max_iter_and_says_so():
    m = cn.gallery.load("alarm")
    r = m.query("LVFAILURE", evidence={"HRBP": 2}, method="loopy", schedule="residual", max_iter=1, tol=1e-14)
    assert r.converged is False and "not converged" in r.method


def compact_loops(rng):
    """NoisyMax, NoisyOR and Logistic children sharing parents (loops), as in test_compact_approximate."""
    from test_compact_approximate import compact_network

    return compact_network(rng)


def test_compiled_residual_takes_closed_form_factors_and_reaches_the_flooding_fixed_point(rng, monkeypatch):
    monkeypatch.setattr(approximate, "LOGISTIC_TABLE_ENTRIES", 1)                 # SOFT in closed form too
    m = compact_loops(rng)
    fg = model_factor_graph(m)
    assert fg.noisy is not None and fg.noisy_max is not None and fg.logistic is not None
    u = np.ones((3, fg.cards.size, fg.K))
    u[0, fg.names.index("M2"), :2] = [0, 1]
    u[1, fg.names.index("OR"), :2] = [1, 0]
    u[1, fg.names.index("SOFT")] = [0, 0, 1]
    u[2, fg.names.index("B")] = [0.2, 1.0, 0.5]
    a = propagate(fg, u, tol=1e-13, max_iter=3000)
    b = propagate(fg, u, tol=1e-13, max_iter=3000, schedule="residual")
    assert a.converged.all() and b.converged.all() and not b.impossible.any()
    assert_allclose(b.beliefs, a.beliefs, atol=1e-9)


def test_compiled_residual_on_a_noisy_max_tree_is_brute_force(rng):
    from test_compact_approximate import brute, compact_network

    m = compact_network(rng, loopy=False)
    for ev in ({"M2": 1}, {"MAX": 2, "M2": 0}):
        for t in ("A", "B"):
            r = m.query(t, evidence=ev, method="loopy", schedule="residual", tol=1e-13)
            assert r.converged
            assert_allclose(r.probs, brute(m, t, ev), atol=1e-10)


@pytest.mark.parametrize("mode", ["sum", "max"])
def test_compiled_residual_equals_the_numpy_reference_on_tables(rng, mode):
    m = as_model(*random_network(rng, 14, max_parents=3)) if mode == "sum" else random_tree(rng, 12)
    fg = model_factor_graph(m)
    u = np.ones((2, fg.cards.size, fg.K))
    u[0, 11, :] = 0.0
    u[0, 11, 1] = 1.0
    u[1, 5, :2] = [0.3, 1.0]
    a = propagate(fg, u, tol=1e-11, max_iter=300, schedule="residual", mode=mode)
    with runtime.backend("graph", "numpy"):
        assert not residual.compiled()
        b = propagate(fg, u, tol=1e-11, max_iter=300, schedule="residual", mode=mode)
    assert a.converged.all() and b.converged.all() and not (a.impossible | b.impossible).any()
    assert_allclose(a.beliefs, b.beliefs, atol=1e-9)


def test_what_the_residual_schedule_refuses():
    m = cn.CausalModel({"A": cn.Categorical([0.5, 0.5]), "B": cn.Categorical([0.5, 0.5]),
                        "Y": cn.NoisyOR(["A", "B"], [0.5, 0.5])})
    want = m.query("A", evidence={"Y": 1}).probs
    assert_allclose(m.query("A", evidence={"Y": 1}, method="loopy", schedule="residual").probs, want, atol=1e-9)
    with runtime.backend("graph", "numpy"), pytest.raises(ModelError, match="compiled one takes closed-form"):
        m.query("A", evidence={"Y": 1}, method="loopy", schedule="residual")
    with pytest.raises(ModelError, match="max-product over table factors only"):
        m.map(evidence={"Y": 1}, method="loopy", schedule="residual")
    r = m.query("A", evidence={"Y": 1}, method="loopy", schedule="parallel-residual")
    assert_allclose(r.probs, want, atol=1e-9)
