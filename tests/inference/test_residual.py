"""Residual belief propagation (priority queue): exact on trees (brute force), the flooding schedule's fixed point
on loopy networks, batches, zeros and impossible evidence, max-product, and what it refuses."""

import numpy as np
import pytest
from discrete_networks import random_network
from numpy.testing import assert_allclose
from test_loopy import brute_posterior, random_tree

import causalnet as cn
from causalnet import EvidenceError, ModelError
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


def test_residual_refuses_closed_form_factors():
    m = cn.CausalModel({"A": cn.Categorical([0.5, 0.5]), "B": cn.Categorical([0.5, 0.5]),
                        "Y": cn.NoisyOR(["A", "B"], [0.5, 0.5])})
    with pytest.raises(ModelError, match="parallel-residual"):
        m.query("A", evidence={"Y": 1}, method="loopy", schedule="residual")
    r = m.query("A", evidence={"Y": 1}, method="loopy", schedule="parallel-residual")
    assert_allclose(r.probs, m.query("A", evidence={"Y": 1}).probs, atol=1e-9)
