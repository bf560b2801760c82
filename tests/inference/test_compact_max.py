"""Max-product and the Bethe log Z on closed-form noisy-OR / noisy-MAX factors, never expanded.

Oracles: the expanded tables' max-product messages (exact where the module claims exactness), brute-force
maximisation of each message (a lower bound everywhere, exact at the lowest level), brute-force MPE and
marginal MAP, the exact log-partition of the expanded tables."""

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from discrete_networks import brute_joint
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.approximate import model_factor_graph
from causalnet.inference.compact_max import CandidatePairs, noisy_max_level_values
from causalnet.inference.discrete import discrete_network
from causalnet.inference.factor_graph import FactorGraph, NoisyMaxFactors
from causalnet.inference.loopy import bethe_log_partition, propagate
from causalnet.mechanisms.compact import Compact

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def small_tree(rng):
    """A tree of compact nodes with at most two binary parents each (where the candidates are every subset)."""
    return cn.CausalModel({
        "A": cn.Categorical([0.6, 0.4]), "B": cn.Categorical([0.3, 0.7]), "C": cn.Categorical([0.8, 0.2]),
        "Y": cn.NoisyOR(["A", "B"], rng.uniform(0.2, 0.9, 2), leak=0.1),
        "Z": cn.NoisyMax(["Y", "C"], [rng.dirichlet(np.ones(3), size=2), rng.dirichlet(np.ones(3), size=2)],
                         [0.7, 0.2, 0.1]),
        "W": cn.NoisyOR(["Z"], [0.6], leak=0.05, on=2)})


def loopy_compact(rng):
    """Loops through compact nodes of up to three parents with two or three states."""
    return cn.CausalModel({
        "A": cn.Categorical([0.6, 0.4]), "B": cn.Categorical([0.2, 0.5, 0.3]), "C": cn.Categorical([0.7, 0.3]),
        "MAX": cn.NoisyMax(["A", "B", "C"], [rng.dirichlet(np.ones(3), size=2), rng.dirichlet(np.ones(3), size=3),
                                             rng.dirichlet(np.ones(3), size=2)], [0.8, 0.15, 0.05]),
        "OR": cn.NoisyOR(["A", "B", "C"], [0.7, 0.5, 0.9], leak=0.05, on={"A": 1, "B": 2, "C": 1}),
        "M2": cn.NoisyMax(["MAX", "A"], [rng.dirichlet(np.ones(2), size=3), rng.dirichlet(np.ones(2), size=2)],
                          [0.9, 0.1])})


def brute_mpe(model, evidence):
    """max over the unobserved nodes of the joint of the expanded tables, with the argmax."""
    net = discrete_network(model)
    joint, names = brute_joint(model.dag, net.cpts, net.cards)
    for k, s in evidence.items():
        idx = [slice(None)] * joint.ndim
        idx[names.index(k)] = slice(s, s + 1)
        joint = joint[tuple(idx)]
    flat = int(joint.argmax())
    x = np.unravel_index(flat, joint.shape)
    return {v: int(x[i]) for i, v in enumerate(names) if v not in evidence}, float(np.log(joint.max()))


@pytest.fixture
def no_expansion(monkeypatch):
    def refuse(self, node, parent_specs):
        raise AssertionError(f"{node!r} was expanded into a table")

    monkeypatch.setattr(Compact, "table_for", refuse)


def test_max_product_on_closed_forms_equals_the_expanded_tables_with_two_binary_parents(rng):
    for _ in range(10):
        m = small_tree(rng)
        closed, expanded = model_factor_graph(m), model_factor_graph(m, expand=True)
        assert len(closed.max_views) == 2 and not expanded.structural
        u = np.ones((3, closed.cards.size, closed.K))
        u[1, closed.names.index("Z")] = [0, 0, 1]
        u[2, closed.names.index("Y"), :2] = [0.3, 1.0]                              # soft
        u[2, closed.names.index("W"), :2] = [0, 1]
        a = propagate(closed, u, mode="max", tol=1e-12, max_iter=200)
        b = propagate(expanded, u, mode="max", tol=1e-12, max_iter=200)
        assert a.converged.all() and a.iterations == b.iterations
        assert_allclose(a.beliefs, b.beliefs, atol=1e-12)


@pytest.mark.parametrize("evidence", [{}, {"Z": 2}, {"W": 1, "A": 0}, {"Y": 0, "Z": 1}])
def test_loopy_mpe_on_a_compact_tree_is_brute_force_without_expanding(rng, evidence, monkeypatch):
    m = small_tree(rng)
    want, lp_want = brute_mpe(m, evidence)

    def refuse(self, node, parent_specs):
        raise AssertionError(f"{node!r} was expanded into a table")

    with monkeypatch.context() as mp:
        mp.setattr(Compact, "table_for", refuse)
        got, lp = m.map(evidence=evidence, method="loopy", tol=1e-12)
    assert {k: int(m.specs[k].states.index(v)) if isinstance(v, str) else int(v) for k, v in got.items()} == want
    assert_allclose(lp, lp_want, atol=1e-10)


def random_view(rng, k, parent_card, levels):
    """One noisy-MAX factor (child 0, parents 1..k) and its expanded table."""
    cards = [levels] + [parent_card] * k
    tables = [rng.dirichlet(np.ones(levels), size=parent_card) for _ in range(k)]
    tables = [np.where(rng.random(t.shape) < 0.15, 0.0, t) for t in tables]      # exact zeros
    tables = [t / t.sum(axis=1, keepdims=True) if np.all(t.sum(axis=1) > 0) else np.eye(levels)[[0] * parent_card]
              for t in tables]
    leak = rng.dirichlet(np.ones(levels))
    fg = FactorGraph(cards, [], noisy_max=[(0, tuple(range(1, k + 1)), tables, leak)])
    F = [np.cumsum(t, axis=1) for t in tables]
    grid = np.array(list(itertools.product(range(parent_card), repeat=k)))       # (R, k)
    cdf = np.cumsum(leak)[None] * np.prod([F[i][grid[:, i]] for i in range(k)], axis=0)   # (R, levels)
    return fg, grid, np.diff(cdf, axis=1, prepend=0.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(2, 3), st.integers(2, 3), st.integers(0, 2**31 - 1))
def test_level_values_are_lower_bounds_exact_at_the_lowest_level_and_with_two_binary_parents(k, pc, levels, seed):
    rng = np.random.default_rng(seed)
    fg, grid, pmf = random_view(rng, k, pc, levels)
    view = fg.noisy_max
    mu = rng.random((2, k, fg.K)) * (rng.random((2, k, fg.K)) > 0.2)               # (n, S, K), some zeros
    mu[:, :, pc:] = 0.0
    pairs = CandidatePairs(view.factor_start)
    for y in range(levels):
        child, parent = noisy_max_level_values(view, mu, y, pairs)
        w = np.prod([mu[:, i, grid[:, i]] for i in range(k)], axis=0)            # (n, R)
        exact = (pmf[None, :, y] * w).max(axis=1)                                 # (n,)
        with np.errstate(divide="ignore"):
            got, want = np.exp(child[:, 0]), exact
        assert np.all(got <= want * (1 + 1e-10) + 1e-300)
        if y == 0 or (pc == 2 and k <= 2):
            assert_allclose(got, want, rtol=1e-10, atol=1e-300)
        for j in range(k):
            others = np.prod([mu[:, i, grid[:, i]] for i in range(k) if i != j], axis=0) if k > 1 else 1.0
            for s in range(pc):
                rows = grid[:, j] == s
                ex = (pmf[None, :, y] * np.broadcast_to(others, w.shape))[:, rows].max(axis=1)
                g = np.exp(parent[:, j, s])
                assert np.all(g <= ex * (1 + 1e-10) + 1e-300)
                if y == 0 or (pc == 2 and k <= 3):
                    assert_allclose(g, ex, rtol=1e-10, atol=1e-300)


def test_noisy_or_view_is_the_two_level_noisy_max():
    fg = FactorGraph([2, 2, 3], [], noisy_or=[(0, (1, 2), [0.7, 0.4], 0.1, [1, 2])])
    view = NoisyMaxFactors.from_noisy_or(fg.noisy, fg.K)
    assert_allclose(view.leak_cdf, [[0.9, 1.0, 1.0]])
    assert_allclose(view.slot_cdf[0, :, 0], [1.0, 0.3, 1.0])                    # parent 1 on in state 1
    assert_allclose(view.slot_cdf[1, :, 0], [1.0, 1.0, 0.6])                    # parent 2 on in state 2
    assert fg.max_views[0].slot_cdf.shape == (2, 3, 3)


def test_bethe_log_z_of_closed_forms_equals_the_expanded_tables_and_is_exact_on_a_tree(rng):
    for m, exact_tree in ((small_tree(rng), True), (loopy_compact(rng), False)):
        closed, expanded = model_factor_graph(m), model_factor_graph(m, expand=True)
        u = np.ones((2, closed.cards.size, closed.K))
        u[1, closed.names.index("A"), :2] = [0.2, 1.0]
        u[1, closed.names.index("C"), :2] = [0, 1]
        a = propagate(closed, u, tol=1e-13, max_iter=1000)
        b = propagate(expanded, u, tol=1e-13, max_iter=1000)
        za, zb = bethe_log_partition(closed, u, a), bethe_log_partition(expanded, u, b)
        assert_allclose(za, zb, atol=1e-10)
        net = discrete_network(m)
        joint, names = brute_joint(m.dag, net.cpts, net.cards)
        like = np.ones_like(joint)
        for v in ("A", "C"):
            shape = [1] * joint.ndim
            shape[names.index(v)] = 2
            like = like * u[1, closed.names.index(v), :2].reshape(shape)
        want = np.log([joint.sum(), (joint * like).sum()])
        if exact_tree:
            assert_allclose(za, want, atol=1e-10)
        else:
            assert np.abs(za - want).max() < 0.05 and np.abs(za - want).max() > 0


def test_marginal_map_matches_brute_force_on_a_compact_tree(rng, monkeypatch):
    m = small_tree(rng)
    net = discrete_network(cn.CausalModel(dict(m.mechanisms)))
    joint, names = brute_joint(m.dag, net.cpts, net.cards)
    joint = np.take(joint, [1], axis=names.index("W"))
    pz = joint.sum(axis=tuple(i for i, v in enumerate(names) if v != "Z"))       # P(Z, W=1)

    def refuse(self, node, parent_specs):
        raise AssertionError(f"{node!r} was expanded into a table")

    monkeypatch.setattr(Compact, "table_for", refuse)
    got, lp = m.map(["Z"], evidence={"W": 1}, method="loopy", tol=1e-12)
    assert m.specs["Z"].states.index(got["Z"]) == int(pz.argmax())
    assert_allclose(lp, np.log(pz.max()), atol=1e-10)


def test_qmr_style_mpe_without_expansion_agrees_with_the_exact_mpe(no_expansion):
    from approximate import qmr

    m, ev = qmr(16, 60, 12, seed=5, max_parents=4)
    got, lp = m.map(evidence=ev, method="loopy", damping=0.3, max_iter=300)
    on = sorted(k for k, v in got.items() if k.startswith("d") and v == 1)
    assert on == ["d14", "d9"] and len(ev) == 8
    # the exact MPE of this network (junction tree on the expanded tables, computed once):
    assert_allclose(lp, -17.74681758633605, atol=1e-9)
    x = {k: np.array([v]) for k, v in got.items()} | {k: np.array([v]) for k, v in ev.items()}
    assert_allclose(lp, float(m.log_prob(x)[0]), atol=1e-9)                    # scored exactly


def test_large_qmr_style_mpe_runs_where_expansion_is_impossible(no_expansion):
    from approximate import qmr

    m, ev = qmr(100, 150, 20, seed=1, max_parents=40)
    assert max(len(m.mechanisms[f].parents) for f in m.nodes if f.startswith("f")) > 30   # 2^30+ rows
    got, lp = m.map(evidence=ev, method="loopy", damping=0.3, tol=1e-6, max_iter=100)
    x = {k: np.array([v]) for k, v in got.items()} | {k: np.array([v]) for k, v in ev.items()}
    assert np.isfinite(lp) and set(got) | set(ev) == set(m.nodes)
    assert_allclose(lp, float(m.log_prob(x)[0]), atol=1e-8)
    # no worse than the assignment with every disease absent and each free finding at its most likely state
    base = {k: np.array([0]) for k in m.nodes if k.startswith("d")}
    base |= {k: np.array([0]) for k in m.nodes if k.startswith("f") and k not in ev}
    base |= {k: np.array([v]) for k, v in ev.items()}
    assert lp >= float(m.log_prob(base)[0]) - 1e-9



@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(2, 3), st.integers(2, 3), st.integers(0, 2**31 - 1))
def test_logistic_max_values_are_lower_bounds_and_exact_with_two_binary_parents(k, pc, kc, seed):
    from causalnet.inference.compact_max import _logistic_level

    rng = np.random.default_rng(seed)
    W, b = rng.normal(size=(kc, k)) * 2, rng.normal(size=kc)
    fg = FactorGraph([kc] + [pc] * k, [], logistic=[(0, tuple(range(1, k + 1)), W, b)])
    mu = rng.random((2, k, fg.K)) * (rng.random((2, k, fg.K)) > 0.2)
    mu[:, :, pc:] = 0.0
    grid = np.array(list(itertools.product(range(pc), repeat=k)))
    z = b[None] + grid @ W.T
    P = np.exp(z - z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)                                             # (R, kc) softmax by brute force
    w = np.prod([mu[:, i, grid[:, i]] for i in range(k)], axis=0)                # (n, R)
    exact_child, exact_parent = kc == 2 and pc == 2 and k <= 2, kc == 2 and pc == 2 and k <= 3
    for c in range(kc):
        child, parent = _logistic_level(fg.logistic, mu, c, CandidatePairs(fg.logistic.factor_start))
        want = (P[None, :, c] * w).max(axis=1)
        assert np.all(np.exp(child[:, 0]) <= want * (1 + 1e-10) + 1e-300)
        if exact_child:
            assert_allclose(np.exp(child[:, 0]), want, rtol=1e-10, atol=1e-300)
        for j in range(k):
            others = np.prod([mu[:, i, grid[:, i]] for i in range(k) if i != j], axis=0) if k > 1 else np.ones_like(w)
            for s in range(pc):
                ex = (P[None, :, c] * others)[:, grid[:, j] == s].max(axis=1)
                assert np.all(np.exp(parent[:, j, s]) <= ex * (1 + 1e-10) + 1e-300)
                if exact_parent:
                    assert_allclose(np.exp(parent[:, j, s]), ex, rtol=1e-10, atol=1e-300)


def test_loopy_mpe_with_closed_form_logistic_nodes_is_brute_force(rng, monkeypatch):
    from causalnet.inference import approximate

    m = cn.CausalModel({
        "A": cn.Categorical([0.6, 0.4]), "B": cn.Categorical([0.3, 0.7]), "C": cn.Categorical([0.8, 0.2]),
        "Y": cn.Logistic(["A", "B"], [1.5, -2.0], bias=0.3),
        "Z": cn.Logistic(["Y", "C"], [-1.0, 2.5], bias=-0.2),
        "W": cn.NoisyOR(["Z"], [0.7], leak=0.1)})
    cases = [{}, {"W": 1}, {"Z": 0, "A": 1}, {"Y": 1, "W": 0}]
    wants = [brute_mpe(m, ev) for ev in cases]

    def refuse(self, node, parent_specs):
        raise AssertionError(f"{node!r} was expanded into a table")

    monkeypatch.setattr(approximate, "LOGISTIC_TABLE_ENTRIES", 1)
    monkeypatch.setattr(Compact, "table_for", refuse)
    m2 = cn.CausalModel(dict(m.mechanisms))
    assert model_factor_graph(m2).logistic is not None
    for ev, (want, lp_want) in zip(cases, wants):
        got, lp = m2.map(evidence=ev, method="loopy", tol=1e-12)
        assert {k: int(v) for k, v in got.items()} == want
        assert_allclose(lp, lp_want, atol=1e-10)
