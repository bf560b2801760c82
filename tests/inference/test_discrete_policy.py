"""The routing policy of the discrete engine (causalnet.inference.discrete.policy), one test per rule.

Each rule is tested twice: on the policy alone (stub trees, so the rule is the
only thing that can decide), and on a real network, where the method that ran
is observed (spies on the compiled engine, the prior tree and the Hugin
propagation) and its answer is checked against brute-force enumeration of the
joint (tests/inference/discrete_networks.py: broadcasting only, no shared code).
"""

import numpy as np
import pytest
from discrete_networks import brute_joint, brute_query, random_network
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet.inference.discrete import junction_tree as JT
from causalnet.inference.discrete import policy as P
from causalnet.inference.discrete.elimination import DiscreteBN
from causalnet.inference.discrete.engine import model_tables
from causalnet.inference.discrete.policy import COMPILED, HUGIN, PRIOR_TREE, MarginalsPolicy, QueryPolicy
from causalnet.inference.discrete.prior_tree import PriorTree

DEFAULT = "weighted-min-fill"


class _Tree:
    def __init__(self, heavy):
        self.heavy = heavy


class _Build:
    """A stub prior-tree builder that counts its calls."""

    def __init__(self, tree):
        self.tree = tree
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.tree


# -- QueryPolicy, alone ----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_cpu_budget(monkeypatch):
    """Most rules here are about query counts: the prior tree's CPU-time budget is off unless a test sets it."""
    monkeypatch.setattr(P, "PRIOR_TREE_AFTER_S", 0.0)


def test_batched_evidence_is_compiled_and_is_not_a_scalar_query():
    build = _Build(_Tree(False))
    policy = QueryPolicy(build)
    for _ in range(3):
        assert policy.route((0,), {1: 0}, batched=True, order=DEFAULT) == COMPILED
    assert build.calls == 0 and not policy.built
    assert policy.route((0,), {1: 0}, batched=False, order=DEFAULT) == COMPILED   # still the first scalar one


@pytest.mark.parametrize("order", ["min-degree", "min-fill", ["B", "A"], ("A",)])
def test_an_explicit_order_is_compiled(order):
    build = _Build(_Tree(False))
    policy = QueryPolicy(build)
    policy.build_tree()
    assert policy.route((0,), {}, batched=False, order=order) == COMPILED
    assert policy.route((0,), {}, batched=False, order=DEFAULT) == PRIOR_TREE


def test_the_tree_waits_for_the_second_query_and_the_cpu_budget(monkeypatch):
    monkeypatch.setattr(P, "PRIOR_TREE_AFTER_S", 0.03)
    build = _Build(_Tree(False))
    policy = QueryPolicy(build)
    policy.spent(P.PRIOR_TREE_AFTER_S)                      # compiled queries have paid for a tree...
    assert policy.route((0,), {1: 1}, batched=False, order=DEFAULT) == COMPILED   # ...but never at the first
    assert build.calls == 0 and policy.tree is None
    assert policy.route((0,), {1: 1}, batched=False, order=DEFAULT) == PRIOR_TREE
    assert build.calls == 1 and policy.tree is build.tree


def test_a_cheap_process_never_builds_the_tree(monkeypatch):
    monkeypatch.setattr(P, "PRIOR_TREE_AFTER_S", 0.03)
    build = _Build(_Tree(False))
    policy = QueryPolicy(build)
    for _ in range(5):                                      # quick compiled queries: below the budget
        assert policy.route((0,), {1: 1}, batched=False, order=DEFAULT) == COMPILED
        policy.spent(P.PRIOR_TREE_AFTER_S / 10)
    assert build.calls == 0
    policy.spent(P.PRIOR_TREE_AFTER_S)
    assert policy.route((0,), {1: 1}, batched=False, order=DEFAULT) == PRIOR_TREE
    assert build.calls == 1 and policy.tree is build.tree
    for _ in range(3):
        assert policy.route((2,), {}, batched=False, order=DEFAULT) == PRIOR_TREE
    assert build.calls == 1


def test_no_usable_tree_is_compiled_and_never_rebuilt():
    build = _Build(False)
    policy = QueryPolicy(build)
    for _ in range(4):
        assert policy.route((0,), {}, batched=False, order=DEFAULT) == COMPILED
    assert build.calls == 1 and policy.built and policy.tree is None


def test_a_heavy_tree_hands_a_repeated_shape_to_a_program(monkeypatch):
    monkeypatch.setattr(P, "MAX_SHAPES", 2)
    policy = QueryPolicy(_Build(_Tree(True)))
    policy.build_tree()
    route = lambda t, ev: policy.route(t, ev, batched=False, order=DEFAULT)   # noqa: E731
    assert route((0,), {1: 0}) == PRIOR_TREE
    assert route((0,), {1: 1}) == COMPILED               # same shape (targets, evidence nodes), new values
    assert route((0,), {2: 1}) == PRIOR_TREE             # another shape
    assert route((0,), {3: 1}) == PRIOR_TREE             # a third: the memory of two shapes was full, cleared
    assert route((0,), {1: 0}) == PRIOR_TREE             # so the first shape is new again
    assert route((0,), {1: 0}) == COMPILED


def test_a_light_tree_answers_every_shape_again():
    policy = QueryPolicy(_Build(_Tree(False)))
    policy.build_tree()
    assert [policy.route((0,), {1: 0}, batched=False, order=DEFAULT) for _ in range(3)] == [PRIOR_TREE] * 3


# -- MarginalsPolicy, alone ----------------------------------------------------------------------


def test_marginals_batched_or_with_evidence_variables_are_compiled():
    assert MarginalsPolicy(True, False).route(batched=True, tree_built=False) == COMPILED
    assert MarginalsPolicy(True, True).route(batched=False, tree_built=False) == COMPILED


def test_marginals_first_requests_run_hugin_then_the_prior_tree():
    policy = MarginalsPolicy(True, False)
    got = [policy.route(batched=False, tree_built=False) for _ in range(P.HUGIN_CALLS + 2)]
    assert got == [HUGIN] * P.HUGIN_CALLS + [PRIOR_TREE] * 2


def test_marginals_once_the_tree_is_built_use_it():
    policy = MarginalsPolicy(True, False)
    assert policy.route(batched=False, tree_built=True) == PRIOR_TREE


def test_marginals_on_large_cliques_skip_hugin():
    # the prior tree is then refused too (junction_tree.prior_tree), so the compiled program answers
    policy = MarginalsPolicy(False, False)
    assert [policy.route(batched=False, tree_built=False) for _ in range(4)] == [PRIOR_TREE] * 4


# -- on a real network: the method that runs, and its answer -------------------------------------


@pytest.fixture
def net():
    rng = np.random.default_rng(22)
    dag, cpts, card = random_network(rng, 8)
    joint, names = brute_joint(dag, cpts, card)
    return dag, cpts, card, joint, names


def _spy(monkeypatch, bn):
    ran = []
    compile_ = bn._compile
    monkeypatch.setattr(bn, "_compile", lambda *a: ran.append(COMPILED) or compile_(*a))
    query = PriorTree.query
    monkeypatch.setattr(PriorTree, "query", lambda self, *a: ran.append(PRIOR_TREE) or query(self, *a))
    return ran


def test_each_query_route_runs_its_method_and_answers_right(net, monkeypatch):
    dag, cpts, card, joint, names = net
    bn = DiscreteBN(dag, cpts, card)
    ran = _spy(monkeypatch, bn)

    def check(t, ev, **kw):
        ran.clear()
        got, log_e = bn.query([t], ev, **kw)
        rows = [ev] if all(type(x) is int for x in ev.values()) else \
            [{k: int(x[r]) for k, x in ev.items()} for r in range(2)]
        for r, e in enumerate(rows):
            want, pe = brute_query(joint, names, [t], e)
            assert_allclose(got if len(rows) == 1 else got[r], want, rtol=0, atol=1e-12)
        return list(ran)

    assert check("X0", {"X7": 1}) == [COMPILED]                          # rule 3: first scalar query
    assert check("X1", {"X6": 0}) == [PRIOR_TREE]                        # built at the second, answers
    assert check("X1", {"X6": 1}) == [PRIOR_TREE]                        # light tree: again
    assert check("X2", {"X5": np.array([0, 1])}) == [COMPILED]            # rule 1: batched
    assert check("X2", {"X5": 1}, order="min-degree") == [COMPILED]       # rule 2: explicit order


def test_no_prior_tree_when_its_cliques_are_too_large(net, monkeypatch):
    dag, cpts, card, joint, names = net
    monkeypatch.setattr("causalnet.inference.discrete.junction_tree.MAX_PRIOR_CLIQUE", 1)
    bn = DiscreteBN(dag, cpts, card)
    ran = _spy(monkeypatch, bn)
    for state in (0, 1, 0):
        got, _ = bn.query(["X3"], {"X7": state})
        assert_allclose(got, brute_query(joint, names, ["X3"], {"X7": state})[0], rtol=0, atol=1e-12)
    assert PRIOR_TREE not in ran and bn._cache_policy.built and bn._cache_policy.tree is None


def test_marginals_run_hugin_then_the_prior_tree(net, monkeypatch):
    dag, cpts, card, joint, names = net
    bn = DiscreteBN(dag, cpts, card)
    ran = []
    propagate = JT.propagate
    monkeypatch.setattr(JT, "propagate", lambda *a: ran.append(HUGIN) or propagate(*a))
    marginals = PriorTree.marginals
    monkeypatch.setattr(PriorTree, "marginals", lambda self, *a: ran.append(PRIOR_TREE) or marginals(self, *a))
    jt = bn.junction_tree()
    for i in range(P.HUGIN_CALLS + 1):
        ev = {"X7": i % 2, "X2": 0}
        m = jt.marginals(ev)
        for v in names:
            want = np.eye(card[v])[ev[v]] if v in ev else brute_query(joint, names, [v], ev)[0]
            assert_allclose(m[v], want, rtol=0, atol=1e-12)
    assert ran == [HUGIN] * P.HUGIN_CALLS + [PRIOR_TREE]
    ran.clear()
    m = jt.marginals({"X7": np.array([0, 1])})                            # batched: the compiled program
    assert ran == []
    assert_allclose(m["X0"][1], brute_query(joint, names, ["X0"], {"X7": 1})[0], rtol=0, atol=1e-12)


def test_model_queries_go_through_the_policy(monkeypatch):
    # the registry's engine hands the Request's evidence to query_indices: a fresh model's first query is
    # answered directly (inference/discrete/direct.py), then compiled, then the prior tree
    m = cn.gallery.load("asia")
    cpts, cards, _ = model_tables(m)
    joint, names = brute_joint(m.dag, cpts, cards)
    want, _ = brute_query(joint, names, ["dysp"], {"asia": list(m.specs["asia"].states).index("yes")})
    ran = []
    query = PriorTree.query
    monkeypatch.setattr(PriorTree, "query", lambda self, *a: ran.append(PRIOR_TREE) or query(self, *a))
    for expect in ([], [], [PRIOR_TREE]):
        ran.clear()
        got = m.query("dysp", evidence={"asia": "yes"}).probs
        assert_allclose(got, want, rtol=0, atol=1e-12)
        assert ran == expect
