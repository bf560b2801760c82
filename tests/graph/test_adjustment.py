"""Tests for causalnet.graph.adjustment.

Oracles, all independent of the library code:

- backdoor: the definition, on networkx graphs built here (``nx.descendants``,
  ``nx.is_d_separator`` on G with the edges out of X removed);
- adjustment: Shpitser, VanderWeele & Robins (2010) verbatim, by listing every
  simple path between X and Y and classifying it (proper / causal / blocked);
  for medium graphs the constructive form of Perković et al. / van der Zander
  et al. rebuilt with networkx, itself checked against the path oracle;
- front-door: the three conditions on networkx graphs built here;
- semantics: exact interventional distributions of random discrete models,
  P(y | do(x)) by truncated factorisation, compared with the adjustment and
  front-door formulas computed from the observational joint;
- the ``*_sets`` functions: brute force over every subset of the candidates.
"""

from __future__ import annotations

import itertools
import re

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.errors import GraphError
from causalnet.graph.adjustment import (
    adjustment_sets,
    backdoor_adjustment_sets,
    frontdoor_adjustment_sets,
    is_adjustment_set,
    is_backdoor_adjustment,
    is_frontdoor_adjustment,
    minimal_adjustment_sets,
)
from tests.conftest import guarded

ALL_SETS = (backdoor_adjustment_sets, minimal_adjustment_sets, frontdoor_adjustment_sets)
PREDICATES = (is_backdoor_adjustment, is_adjustment_set, is_frontdoor_adjustment)


# -- fixtures and graph generators -------------------------------------------------


@pytest.fixture
def seed() -> int:
    return 20240611


@pytest.fixture
def m_bias() -> cn.DAG:
    # X <- A -> M <- B -> Y, X -> Y (Greenland, Pearl & Robins 1999)
    return cn.DAG.parse("X <- A -> M <- B -> Y; X -> Y")


@pytest.fixture
def smoking() -> cn.DAG:
    # Pearl (2009), Sec. 3.3.3: a latent genotype confounds smoking and cancer
    return cn.DAG.parse("U [latent]; U -> Smoking; U -> Cancer; Smoking -> Tar -> Cancer")


@pytest.fixture
def pearl_fig_3_4() -> cn.DAG:
    # Pearl (2009), Fig. 3.4 (the back-door example; Xi the treatment, Xj the outcome)
    return cn.DAG.parse(
        "X1 -> X3 -> Xi; X1 -> X4 <- X2; X2 -> X5 -> Xj; X4 -> Xi; X4 -> Xj; Xi -> X6 -> Xj"
    )


def random_case(rng: np.random.Generator, n_min: int, n_max: int, p_latent: float = 0.15, density=(0.2, 0.45)):
    """A random DAG with latent nodes, treatments X and outcomes Y among the observed.

    X (one or two nodes) comes from the middle of the causal order and Y (one or
    two) mostly after it, so that X has ancestors to adjust for; sometimes a
    latent confounder of X and Y is planted. Names hide the causal order.
    """
    while True:
        n = int(rng.integers(n_min, n_max + 1))
        p = float(rng.uniform(*density))
        topo = rng.permutation(n)
        names = [f"v{i}" for i in range(n)]
        edges = [
            (names[topo[i]], names[topo[j]])
            for i in range(n) for j in range(i + 1, n) if rng.random() < p
        ]
        latent = {v for v in names if rng.random() < p_latent}
        observed = [names[t] for t in topo if names[t] not in latent]  # in causal order
        kx = 1 if rng.random() < 0.7 else 2
        ky = 1 if rng.random() < 0.7 else 2
        if len(observed) < kx + ky:
            continue
        lo = min(len(observed) // 2, len(observed) - ky - kx)
        xs = [observed[i] for i in sorted(rng.choice(np.arange(lo, len(observed) - ky), size=kx, replace=False))]
        after = observed[observed.index(xs[-1]) + 1:]
        rest = [v for v in observed if v not in xs]
        pool = after if (len(after) >= ky and rng.random() < 0.8) else rest
        ys = [pool[i] for i in rng.choice(len(pool), size=ky, replace=False)]
        nodes = list(names)
        if rng.random() < 0.15:  # a new root, so no cycle
            nodes.append("u")
            latent.add("u")
            edges += [("u", xs[0]), ("u", ys[0])]
        return cn.DAG(edges, nodes=nodes, latent=latent), set(xs), set(ys)


def random_frontdoor_case(rng: np.random.Generator):
    """Covariates, X, two stages of mediators, Y and later nodes; no edge X -> Y.

    A latent U confounds X and Y in most cases, so the effect usually needs the
    front door; covariates, mediators and later nodes may be latent too.
    """
    nc, npost = int(rng.integers(0, 3)), int(rng.integers(0, 2))
    n1, n2 = int(rng.integers(1, 3)), int(rng.integers(0, 3))
    kx = 1 if rng.random() < 0.75 else 2
    cs = [f"c{i}" for i in range(nc)]
    xs = [f"x{i}" for i in range(kx)]
    m1 = [f"m{i}" for i in range(n1)]
    m2 = [f"m{n1 + i}" for i in range(n2)]
    order = cs + xs + m1 + m2 + ["y"] + [f"p{i}" for i in range(npost)]
    prob = {("x", "m1"): 0.8, ("m1", "m2"): 0.6, ("m2", "y"): 0.8, ("m1", "y"): 0.4, ("x", "m2"): 0.2, ("x", "y"): 0.0}
    stage = {**{v: "c" for v in cs}, **{v: "x" for v in xs}, **{v: "m1" for v in m1}, **{v: "m2" for v in m2},
             "y": "y", **{f"p{i}": "p" for i in range(npost)}}
    p = float(rng.uniform(0.15, 0.4))
    edges = [(a, b) for i, a in enumerate(order) for b in order[i + 1:]
             if rng.random() < prob.get((stage[a], stage[b]), p)]
    latent = {v for v in order if v[0] in "cmp" and rng.random() < 0.15}
    nodes = list(order)
    if rng.random() < 0.75:
        nodes.append("u")
        latent.add("u")
        edges += [("u", xs[0]), ("u", "y")]
    ys = {"y"} if npost == 0 or "p0" in latent or rng.random() < 0.7 else {"y", "p0"}
    perm = rng.permutation(len(nodes))
    return cn.DAG(edges, nodes=[nodes[i] for i in perm], latent=latent), set(xs), ys


def mixed_cases(rng: np.random.Generator, k: int, n_min: int = 8, n_max: int = 11):
    """`k` cases: two thirds general random DAGs, one third front-door layered DAGs."""
    for i in range(k):
        yield random_frontdoor_case(rng) if i % 3 == 2 else random_case(rng, n_min, n_max)


def nx_graph(g: cn.DAG) -> nx.DiGraph:
    h = nx.DiGraph()
    h.add_nodes_from(g.nodes)
    h.add_edges_from(g.edges)
    return h


def candidates(g: cn.DAG, xs, ys) -> list:
    return [v for v in g.nodes if v not in g.latent and v not in xs and v not in ys]


def subsets(items):
    for k in range(len(items) + 1):
        yield from (frozenset(c) for c in itertools.combinations(items, k))


def sort_key(g: cn.DAG):
    pos = {v: i for i, v in enumerate(g.nodes)}
    return lambda s: (len(s), sorted(pos[v] for v in s))


def minimal_only(valid: list) -> list:
    """The inclusion-minimal members of a family of sets."""
    out: list = []
    for s in sorted(valid, key=len):
        if not any(m < s for m in out):
            out.append(s)
    return out


# -- oracles -----------------------------------------------------------------------


def oracle_backdoor(h: nx.DiGraph, xs, ys, zs) -> bool:
    """Pearl's backdoor criterion for sets, from its definition."""
    desc = set().union(*(nx.descendants(h, x) for x in xs))
    if desc & set(zs):
        return False
    cut = h.copy()
    cut.remove_edges_from([(u, v) for u, v in h.edges if u in xs])
    return nx.is_d_separator(cut, set(xs), set(ys), set(zs))


class PathOracle:
    """The adjustment criterion of Shpitser, VanderWeele & Robins (2010), by path listing."""

    def __init__(self, h: nx.DiGraph, xs, ys) -> None:
        self.h = h
        xs, ys = set(xs), set(ys)
        und = h.to_undirected()
        self.desc = {v: nx.descendants(h, v) | {v} for v in h}
        causal_nodes: set = set()
        self.noncausal: list = []
        for x in xs:
            for y in ys:
                for path in nx.all_simple_paths(und, x, y):
                    if set(path[1:]) & xs:
                        continue  # not proper
                    if all(h.has_edge(a, b) for a, b in itertools.pairwise(path)):
                        causal_nodes.update(path[1:])
                    else:
                        self.noncausal.append(path)
        # (a): descendants, in G with the edges into X removed, of nodes (not in X) on proper causal paths
        bar = h.copy()
        bar.remove_edges_from([(u, v) for u, v in h.edges if v in xs])
        self.forbidden = set()
        for w in causal_nodes:
            self.forbidden |= nx.descendants(bar, w) | {w}

    def blocked(self, path, zs) -> bool:
        h = self.h
        for a, v, b in zip(path, path[1:], path[2:]):
            collider = h.has_edge(a, v) and h.has_edge(b, v)
            if collider and not (self.desc[v] & zs):
                return True
            if not collider and v in zs:
                return True
        return False

    def __call__(self, zs) -> bool:
        zs = set(zs)
        if zs & self.forbidden:
            return False
        return all(self.blocked(p, zs) for p in self.noncausal)


def oracle_adjustment_cbc(h: nx.DiGraph, xs, ys, zs) -> bool:
    """Constructive back-door criterion (van der Zander et al. 2019) rebuilt with networkx."""
    xs, ys = set(xs), set(ys)
    bar = h.copy()
    bar.remove_edges_from([(u, v) for u, v in h.edges if v in xs])
    under = h.copy()
    under.remove_edges_from([(u, v) for u, v in h.edges if u in xs])
    de_bar = set().union(*(nx.descendants(bar, x) for x in xs)) - xs
    an_under = set().union(*(nx.ancestors(under, y) | {y} for y in ys))
    pcp = de_bar & an_under
    forb = set(xs).union(*(nx.descendants(h, w) | {w} for w in pcp))
    if set(zs) & forb:
        return False
    pbd = h.copy()
    pbd.remove_edges_from([(u, v) for u, v in h.edges if u in xs and v in pcp])
    return nx.is_d_separator(pbd, xs, ys, set(zs))


def oracle_frontdoor(h: nx.DiGraph, xs, ys, zs) -> bool:
    """Pearl's front-door criterion for sets, condition by condition."""
    xs, ys, zs = set(xs), set(ys), set(zs)
    rest = h.subgraph([v for v in h if v not in zs])
    if any(nx.has_path(rest, x, y) for x in xs for y in ys):
        return False  # (i) a directed path avoids Z
    if not zs:
        return True
    under_x = h.copy()
    under_x.remove_edges_from([(u, v) for u, v in h.edges if u in xs])
    if not nx.is_d_separator(under_x, xs, zs, set()):
        return False  # (ii) an open backdoor path from X to Z
    under_z = h.copy()
    under_z.remove_edges_from([(u, v) for u, v in h.edges if u in zs])
    return nx.is_d_separator(under_z, zs, ys, xs)  # (iii)


class DiscreteModel:
    """Random CPTs on a small DAG; exact observational and interventional tables."""

    def __init__(self, g: cn.DAG, rng: np.random.Generator, card: int = 2) -> None:
        self.nodes = list(g.nodes)
        self.col = {v: i for i, v in enumerate(self.nodes)}
        n = len(self.nodes)
        self.states = np.array(list(itertools.product(range(card), repeat=n)))   # (card**n, n)
        self.factors = {}
        for v in self.nodes:
            ps = list(g.parents(v))
            cpt = rng.uniform(0.2, 1.0, size=(card,) * len(ps) + (card,))
            cpt /= cpt.sum(axis=-1, keepdims=True)                              # (*parent_cards, card)
            idx = tuple(self.states[:, self.col[p]] for p in ps) + (self.states[:, self.col[v]],)
            self.factors[v] = cpt[idx]                                            # (card**n,)
        self.joint = np.prod([self.factors[v] for v in self.nodes], axis=0)      # (card**n,)

    def key(self, nodes) -> np.ndarray:
        """Joint state of `nodes` as one integer per row of the state table."""
        out = np.zeros(len(self.states), dtype=np.int64)
        for v in nodes:
            out = out * 8 + self.states[:, self.col[v]]
        return out

    def table(self, weights, nodes) -> dict:
        keys = self.key(nodes)
        return {k: weights[keys == k].sum() for k in np.unique(keys)}

    def do(self, xs, ys) -> dict:
        """P(y | do(x)) as {(x key, y key): prob} by truncated factorisation."""
        # with X clamped, the product of the other CPTs sums to one over the other nodes
        trunc = np.prod([self.factors[v] for v in self.nodes if v not in xs], axis=0)   # (card**n,)
        kx, ky = self.key(xs), self.key(ys)
        return {(a, b): trunc[(kx == a) & (ky == b)].sum() for a in np.unique(kx) for b in np.unique(ky)}

    def adjustment_formula(self, xs, ys, zs) -> dict:
        """sum_z P(y | x, z) P(z)."""
        p = self.joint
        kx, ky, kz = self.key(xs), self.key(ys), self.key(zs)
        out = {}
        for a in np.unique(kx):
            for b in np.unique(ky):
                total = 0.0
                for c in np.unique(kz):
                    pxz = p[(kx == a) & (kz == c)].sum()
                    pxyz = p[(kx == a) & (ky == b) & (kz == c)].sum()
                    total += pxyz / pxz * p[kz == c].sum()
                out[a, b] = total
        return out

    def frontdoor_formula(self, xs, ys, zs) -> dict:
        """sum_z P(z | x) sum_x' P(y | x', z) P(x')."""
        p = self.joint
        kx, ky, kz = self.key(xs), self.key(ys), self.key(zs)
        out = {}
        for a in np.unique(kx):
            px = p[kx == a].sum()
            for b in np.unique(ky):
                total = 0.0
                for c in np.unique(kz):
                    pz_x = p[(kx == a) & (kz == c)].sum() / px
                    inner = 0.0
                    for a2 in np.unique(kx):
                        pxz = p[(kx == a2) & (kz == c)].sum()
                        inner += p[(kx == a2) & (ky == b) & (kz == c)].sum() / pxz * p[kx == a2].sum()
                    total += pz_x * inner
                out[a, b] = total
        return out


def same(t1: dict, t2: dict) -> bool:
    return max(abs(t1[k] - t2[k]) for k in t1) < 1e-9


# -- the oracles agree with each other -------------------------------------------


def test_oracles_path_and_cbc_agree(seed):
    rng = np.random.default_rng(seed)
    for g, xs, ys in mixed_cases(rng, 90, 3, 9):
        h = nx_graph(g)
        path = PathOracle(h, xs, ys)
        for zs in subsets(candidates(g, xs, ys)):
            assert path(zs) == oracle_adjustment_cbc(h, xs, ys, zs), (g.edges, xs, ys, zs)


def test_discrete_model_do_matches_mutilated_graph(seed):
    # sanity of the semantic oracle: do() on a root equals conditioning
    g = cn.DAG.parse("X -> Y; X -> M -> Y")
    m = DiscreteModel(g, np.random.default_rng(seed))
    p = m.joint
    kx, ky = m.key(["X"]), m.key(["Y"])
    cond = {(a, b): p[(kx == a) & (ky == b)].sum() / p[kx == a].sum() for a in (0, 1) for b in (0, 1)}
    assert same(m.do(["X"], ["Y"]), cond)


# -- textbook graphs ------------------------------------------------------------------


def test_m_bias(m_bias):
    g = m_bias
    for pred in (is_backdoor_adjustment, is_adjustment_set):
        assert pred(g, "X", "Y", set())
        assert not pred(g, "X", "Y", {"M"})
        assert pred(g, "X", "Y", {"M", "A"})
        assert pred(g, "X", "Y", {"M", "B"})
        assert pred(g, "X", "Y", {"A", "B", "M"})
    assert minimal_adjustment_sets(g, "X", "Y") == [frozenset()]
    assert backdoor_adjustment_sets(g, "X", "Y", minimal=True) == [frozenset()]
    assert backdoor_adjustment_sets(g, "X", "Y") == [
        frozenset(), {"A"}, {"B"}, {"A", "M"}, {"A", "B"}, {"M", "B"}, {"A", "M", "B"},
    ]
    assert frontdoor_adjustment_sets(g, "X", "Y") == []


def test_smoking_tar_cancer(smoking):
    g = smoking
    assert is_frontdoor_adjustment(g, "Smoking", "Cancer", {"Tar"})
    assert not is_frontdoor_adjustment(g, "Smoking", "Cancer", set())
    assert frontdoor_adjustment_sets(g, "Smoking", "Cancer") == [{"Tar"}]
    assert frontdoor_adjustment_sets(g, "Smoking", "Cancer", minimal=True) == [{"Tar"}]
    assert backdoor_adjustment_sets(g, "Smoking", "Cancer") == []
    assert backdoor_adjustment_sets(g, "Smoking", "Cancer", minimal=True) == []
    assert minimal_adjustment_sets(g, "Smoking", "Cancer") == []
    assert not is_backdoor_adjustment(g, "Smoking", "Cancer", set())
    assert not is_adjustment_set(g, "Smoking", "Cancer", {"Tar"})  # a mediator


def test_smoking_with_observed_genotype_has_backdoor(smoking):
    g = smoking.with_latent(())
    assert backdoor_adjustment_sets(g, "Smoking", "Cancer") == [{"U"}]
    assert minimal_adjustment_sets(g, "Smoking", "Cancer") == [{"U"}]
    assert frontdoor_adjustment_sets(g, "Smoking", "Cancer") == [{"Tar"}]


def test_pearl_fig_3_4(pearl_fig_3_4):
    g = pearl_fig_3_4
    # the sets named in the text
    assert is_backdoor_adjustment(g, "Xi", "Xj", {"X3", "X4"})
    assert is_backdoor_adjustment(g, "Xi", "Xj", {"X4", "X5"})
    assert not is_backdoor_adjustment(g, "Xi", "Xj", {"X4"})  # opens Xi <- X3 <- X1 -> X4 <- X2 -> X5 -> Xj
    assert not is_backdoor_adjustment(g, "Xi", "Xj", {"X3", "X4", "X6"})  # X6 descends from Xi
    # by hand: X4 is needed (Xi <- X4 -> Xj), and then one of X1, X2, X3, X5 closes the opened collider
    expected = [{"X1", "X4"}, {"X3", "X4"}, {"X4", "X2"}, {"X4", "X5"}]  # node order: X1 X3 Xi X4 X2 ...
    assert backdoor_adjustment_sets(g, "Xi", "Xj", minimal=True) == expected
    assert minimal_adjustment_sets(g, "Xi", "Xj") == expected
    assert frontdoor_adjustment_sets(g, "Xi", "Xj") == [{"X6"}]  # all observed: the mediator X6 works


def test_descendant_of_treatment_off_the_causal_path():
    # not a backdoor set (descends from X), yet a valid adjustment set (Shpitser et al. 2010)
    g = cn.DAG.parse("X -> Y; X -> D")
    assert not is_backdoor_adjustment(g, "X", "Y", {"D"})
    assert is_adjustment_set(g, "X", "Y", {"D"})
    assert minimal_adjustment_sets(g, "X", "Y") == [frozenset()]


def test_mediator_and_its_descendants_are_forbidden():
    g = cn.DAG.parse("X -> M -> Y; M -> D; C -> X; C -> Y")
    assert is_adjustment_set(g, "X", "Y", {"C"})
    assert not is_adjustment_set(g, "X", "Y", {"C", "M"})
    assert not is_adjustment_set(g, "X", "Y", {"C", "D"})
    assert minimal_adjustment_sets(g, "X", "Y") == [{"C"}]


def test_time_varying_confounding():
    # two treatments; Z is affected by X1 and confounds X2 -> Y through U
    text = "X1 -> Z -> X2 -> Y; X1 -> Y; Z <- U -> Y"
    g = cn.DAG.parse(text)
    assert not is_adjustment_set(g, {"X1", "X2"}, "Y", {"Z"})  # Z is a collider X1 -> Z <- U
    assert is_adjustment_set(g, {"X1", "X2"}, "Y", {"U"})
    assert minimal_adjustment_sets(g, {"X1", "X2"}, "Y") == [{"U"}]
    hidden = cn.DAG.parse(text + "; U [latent]")
    assert minimal_adjustment_sets(hidden, {"X1", "X2"}, "Y") == []  # needs the g-formula


def test_front_door_chain_of_mediators():
    g = cn.DAG.parse("U [latent]; U -> X; U -> Y; X -> M1 -> M2 -> Y")
    assert frontdoor_adjustment_sets(g, "X", "Y") == [{"M1"}, {"M2"}, {"M1", "M2"}]
    assert frontdoor_adjustment_sets(g, "X", "Y", minimal=True) == [{"M1"}, {"M2"}]
    # a confounder of the mediator and the outcome breaks condition (iii) for M2 only
    g2 = cn.DAG.parse("U [latent]; W [latent]; U -> X; U -> Y; X -> M1 -> M2 -> Y; M2 <- W -> Y")
    assert frontdoor_adjustment_sets(g2, "X", "Y") == [{"M1"}]


def test_backdoor_list_needs_ancestors_of_included_nodes():
    # D (first in node order) opens the collider D between K and E; only K, an ancestor of D
    # alone, closes that path again: {D} fails, {D, K} works
    g = cn.DAG.parse("D; A [latent]; E [latent]; A -> X -> Y; A -> K -> D <- E -> Y")
    assert not is_backdoor_adjustment(g, "X", "Y", {"D"})
    assert is_backdoor_adjustment(g, "X", "Y", {"D", "K"})
    assert backdoor_adjustment_sets(g, "X", "Y") == [frozenset(), {"K"}, {"D", "K"}]


def test_front_door_violations_cascade():
    # Z2 violates (iii) through the latent W; without Z2 in the set, its edge Z2 -> Z1
    # is back and Z1 violates (iii) too, so no front-door set exists
    g = cn.DAG.parse("U [latent]; W [latent]; U -> X; U -> Y; X -> Z1 -> Y; Z2 -> Z1; W -> Z2; W -> Y")
    assert not is_frontdoor_adjustment(g, "X", "Y", {"Z1"})
    assert not is_frontdoor_adjustment(g, "X", "Y", {"Z1", "Z2"})
    assert frontdoor_adjustment_sets(g, "X", "Y") == []
    assert frontdoor_adjustment_sets(g, "X", "Y", minimal=True) == []
    # observing W gives the front door {W, Z1}: once the edges out of W are cut, Z2 -> Z1 is harmless
    seen = g.with_latent({"U"})
    assert frontdoor_adjustment_sets(seen, "X", "Y") == [{"W", "Z1"}, {"W", "Z1", "Z2"}]
    assert frontdoor_adjustment_sets(seen, "X", "Y", minimal=True) == [{"W", "Z1"}]
    assert oracle_frontdoor(nx_graph(seen), {"X"}, {"Y"}, {"W", "Z1"})
    # three levels: dropping Z3 makes Z2 violate, dropping Z2 makes Z1 violate
    deep = cn.DAG.parse("Z1; U [latent]; W [latent]; U -> X; U -> Y; X -> Z1 -> Y; Z3 -> Z2 -> Z1; W -> Z3; W -> Y")
    assert frontdoor_adjustment_sets(deep, "X", "Y") == []
    assert frontdoor_adjustment_sets(deep, "X", "Y", minimal=True) == []


def test_front_door_empty_set_without_causal_path():
    g = cn.DAG.parse("U [latent]; U -> X; U -> Y; Y -> W")
    assert is_frontdoor_adjustment(g, "X", "Y", set())
    assert frontdoor_adjustment_sets(g, "X", "Y", minimal=True) == [frozenset()]


def test_adjacent_treatment_and_outcome_with_latent_confounder():
    g = cn.DAG.parse("U [latent]; U -> X; U -> Y; X -> Y; A -> X")
    for fn in ALL_SETS:
        assert fn(g, "X", "Y") == []


def test_node_may_be_a_tuple_or_int():
    g = cn.DAG([((0, 1), 2), (2, 3), ((0, 1), 3)])
    assert minimal_adjustment_sets(g, 2, 3) == [{(0, 1)}]
    assert is_backdoor_adjustment(g, 2, 3, [(0, 1)])


# -- errors and immutability ---------------------------------------------------------


@pytest.mark.parametrize(
    "args, match",
    [
        (("Q", "Y", set()), r"is_adjustment_set: argument x: unknown treatment 'Q'"),
        (("X", "Yy", set()), r"argument y: unknown outcome 'Yy'; did you mean 'Y'"),
        (("X", "Y", {"Mm"}), r"argument z: unknown adjustment node 'Mm'; did you mean 'M'"),
        ((set(), "Y", set()), r"argument x: the treatment set is empty"),
        (("X", [], set()), r"argument y: the outcome set is empty"),
        (({"X", "A"}, {"A", "Y"}, set()), r"x and y overlap on \['A'\]"),
        (("X", "Y", {"X"}), r"z overlaps x on \['X'\]"),
        (("X", "Y", {"Y", "M"}), r"z overlaps y on \['Y'\]"),
        (("U", "Y", set()), r"argument x: \['U'\] is latent; a treatment must be observed"),
        (("X", "U", set()), r"argument y: \['U'\] is latent; an outcome must be observed"),
        (("X", "Y", {"A", "U"}), r"argument z: \['U'\] is latent; an adjustment node must be observed"),
        (("X", "Y", [["A"]]), r"not hashable"),
    ],
)
def test_predicates_reject_bad_sets(args, match):
    g = cn.DAG.parse("X <- A -> M <- B -> Y; X -> Y; U [latent]; U -> A")
    before = (g.nodes, g.edges, g.latent, g.intervened)
    for pred in PREDICATES:
        with pytest.raises(GraphError, match=match.replace("is_adjustment_set", pred.__name__)):
            pred(g, *args)
    assert (g.nodes, g.edges, g.latent, g.intervened) == before
    assert g == cn.DAG.parse("X <- A -> M <- B -> Y; X -> Y; U [latent]; U -> A")
    assert nx.is_frozen(g._g)


@pytest.mark.parametrize("fn", ALL_SETS)
@pytest.mark.parametrize(
    "x, y, match",
    [
        ("Q", "Y", r"argument x: unknown treatment 'Q'"),
        ((), "Y", r"argument x: the treatment set is empty"),
        ("X", "X", r"x and y overlap on \['X'\]"),
        ("U", "Y", r"argument x: \['U'\] is latent; a treatment must be observed"),
        ("X", {"U", "Y"}, r"argument y: \['U'\] is latent; an outcome must be observed"),
    ],
)
def test_set_searches_reject_bad_sets(fn, x, y, match):
    g = cn.DAG.parse("X <- A -> M <- B -> Y; X -> Y; U [latent]; U -> A")
    before = (g.nodes, g.edges, g.latent, g.intervened)
    with pytest.raises(GraphError, match=f"{fn.__name__}: {match}"):
        fn(g, x, y)
    assert (g.nodes, g.edges, g.latent, g.intervened) == before


@pytest.mark.parametrize("fn", ALL_SETS)
@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_max_sets_must_be_positive_int(fn, bad, m_bias):
    msg = rf"max_sets \(None or an int\) must be a positive integer, got {re.escape(repr(bad))}"
    with pytest.raises(GraphError, match=msg):
        fn(m_bias, "X", "Y", max_sets=bad)


def test_not_a_dag():
    with pytest.raises(GraphError, match="expects a causalnet DAG, got DiGraph"):
        minimal_adjustment_sets(nx.DiGraph([("X", "Y")]), "X", "Y")


def test_dag_methods_delegate(m_bias, smoking):
    g = m_bias
    assert g.is_backdoor_adjustment("X", "Y", {"A"})
    assert g.is_adjustment_set("X", "Y", set())
    assert g.minimal_adjustment_sets("X", "Y") == [frozenset()]
    assert g.backdoor_adjustment_sets("X", "Y", minimal=True, max_sets=5) == [frozenset()]
    assert smoking.is_frontdoor_adjustment("Smoking", "Cancer", "Tar")
    assert smoking.frontdoor_adjustment_sets("Smoking", "Cancer", minimal=True) == [{"Tar"}]


# -- brute force on small random DAGs -----------------------------------------------


def test_is_functions_match_oracles(seed):
    rng = np.random.default_rng(seed + 1)
    for g, xs, ys in mixed_cases(rng, 200, 4, 10):
        h = nx_graph(g)
        path = PathOracle(h, xs, ys)
        for zs in subsets(candidates(g, xs, ys)):
            info = (g.edges, sorted(g.latent), xs, ys, zs)
            assert is_backdoor_adjustment(g, xs, ys, zs) == oracle_backdoor(h, xs, ys, zs), info
            assert is_adjustment_set(g, xs, ys, zs) == path(zs), info
            assert is_frontdoor_adjustment(g, xs, ys, zs) == oracle_frontdoor(h, xs, ys, zs), info


def test_set_searches_match_brute_force(seed):
    rng = np.random.default_rng(seed + 2)
    seen = {"several minimal adjustment sets": 0, "several minimal front-door sets": 0,
            "non-empty front-door set": 0, "two treatments": 0, "two outcomes": 0}
    for g, xs, ys in mixed_cases(rng, 300):
        h = nx_graph(g)
        key = sort_key(g)
        cand = candidates(g, xs, ys)
        path = PathOracle(h, xs, ys)
        backdoor = [z for z in subsets(cand) if oracle_backdoor(h, xs, ys, z)]
        adjust = [z for z in subsets(cand) if path(z)]
        front = [z for z in subsets(cand) if oracle_frontdoor(h, xs, ys, z)]
        info = (g.edges, sorted(g.latent), xs, ys)
        assert backdoor_adjustment_sets(g, xs, ys, max_sets=None) == sorted(backdoor, key=key), info
        assert backdoor_adjustment_sets(g, xs, ys, minimal=True, max_sets=None) == sorted(minimal_only(backdoor), key=key), info
        assert minimal_adjustment_sets(g, xs, ys) == sorted(minimal_only(adjust), key=key), info
        assert frontdoor_adjustment_sets(g, xs, ys, max_sets=None) == sorted(front, key=key), info
        assert frontdoor_adjustment_sets(g, xs, ys, minimal=True, max_sets=None) == sorted(minimal_only(front), key=key), info
        seen["several minimal adjustment sets"] += len(minimal_only(adjust)) > 1
        seen["several minimal front-door sets"] += len(minimal_only(front)) > 1
        seen["non-empty front-door set"] += any(front)
        seen["two treatments"] += len(xs) > 1
        seen["two outcomes"] += len(ys) > 1
    assert min(seen.values()) >= 15, seen  # the generators exercise every branch


def test_minimal_sets_medium_graphs(seed):
    # 12-16 nodes: brute force over every subset of the (at most 12) candidates, with the
    # CBC oracle for adjustment and the front-door oracle
    rng = np.random.default_rng(seed + 3)
    done = 0
    while done < 24:
        g, xs, ys = random_case(rng, 12, 16, p_latent=0.25, density=(0.12, 0.3))
        x, y = sorted(xs)[0], sorted(ys)[0]
        if done % 2 and x not in g.descendants(y):  # plant a front door X -> M -> Y, latent U -> X, Y
            m, u = "m_planted", "u_planted"
            g = g.add_edges([(x, m), (m, y), (u, x), (u, y)]).with_latent(set(g.latent) | {u})
        cand = candidates(g, xs, ys)
        if len(cand) > 12:
            continue
        done += 1
        h = nx_graph(g)
        key = sort_key(g)
        info = (g.edges, sorted(g.latent), xs, ys)
        adjust = [z for z in subsets(cand) if oracle_adjustment_cbc(h, xs, ys, z)]
        assert minimal_adjustment_sets(g, xs, ys) == sorted(minimal_only(adjust), key=key), info
        front = [z for z in subsets(cand) if oracle_frontdoor(h, xs, ys, z)]
        assert frontdoor_adjustment_sets(g, xs, ys, minimal=True, max_sets=None) == sorted(minimal_only(front), key=key), info


def test_semantics_with_random_discrete_models(seed):
    # adjustment set <=> the adjustment formula gives P(y | do(x)) for random CPTs;
    # backdoor and front-door sets => their formulas give it
    rng = np.random.default_rng(seed + 4)
    checked = {"adjust": 0, "not": 0, "front": 0}
    for g, xs, ys in mixed_cases(rng, 80, 3, 7):
        model = DiscreteModel(g, rng, card=2)
        truth = model.do(xs, ys)
        for zs in subsets(candidates(g, xs, ys)):
            info = (g.edges, sorted(g.latent), xs, ys, zs)
            formula_ok = same(model.adjustment_formula(xs, ys, zs), truth)
            assert is_adjustment_set(g, xs, ys, zs) == formula_ok, info
            if is_backdoor_adjustment(g, xs, ys, zs):
                assert formula_ok, info
            if is_frontdoor_adjustment(g, xs, ys, zs):
                assert same(model.frontdoor_formula(xs, ys, zs), truth), info
                checked["front"] += 1
            checked["adjust" if formula_ok else "not"] += 1
    assert min(checked.values()) > 5, checked  # every branch was exercised


# -- max_sets ------------------------------------------------------------------------


def test_max_sets_caps_and_sorts(seed):
    rng = np.random.default_rng(seed + 5)
    seen_cap = 0
    for g, xs, ys in mixed_cases(rng, 90, 5, 9):
        for fn, kw in ((backdoor_adjustment_sets, {}), (backdoor_adjustment_sets, {"minimal": True}),
                       (minimal_adjustment_sets, {}), (frontdoor_adjustment_sets, {}),
                       (frontdoor_adjustment_sets, {"minimal": True})):
            full = fn(g, xs, ys, max_sets=None, **kw)
            for cap in (1, 3):
                part = fn(g, xs, ys, max_sets=cap, **kw)
                assert len(part) == min(cap, len(full))
                assert set(part) <= set(full)
                assert part == sorted(part, key=sort_key(g))
                seen_cap += len(full) > cap
    assert seen_cap > 20


def test_first_backdoor_set_found_is_minimal(pearl_fig_3_4):
    # the search leaves nodes out before putting them in, so a cap of 1 gives a minimal set
    first = backdoor_adjustment_sets(pearl_fig_3_4, "Xi", "Xj", max_sets=1)
    assert len(first) == 1
    assert first[0] in backdoor_adjustment_sets(pearl_fig_3_4, "Xi", "Xj", minimal=True)


# -- hypothesis: every answer passes its predicate ---------------------------------------


@st.composite
def dag_cases(draw):
    n = draw(st.integers(2, 8))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    mask = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    perm = draw(st.permutations(range(n)))
    names = [f"n{perm[i]}" for i in range(n)]
    edges = [(names[i], names[j]) for (i, j), keep in zip(pairs, mask) if keep]
    lat = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    latent = [v for v, h in zip(names, lat) if h]
    observed = [v for v in names if v not in latent]
    if len(observed) < 2:
        latent, observed = [], names
    chosen = draw(st.lists(st.sampled_from(observed), min_size=2, max_size=4, unique=True))
    split = draw(st.integers(1, len(chosen) - 1))
    return cn.DAG(edges, nodes=names, latent=latent), set(chosen[:split]), set(chosen[split:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dag_cases())
def test_answers_pass_their_predicates(case):
    g, xs, ys = case
    before = (g.nodes, g.edges, g.latent)
    cand = candidates(g, xs, ys)
    for minimal in (False, True):
        for z in backdoor_adjustment_sets(g, xs, ys, minimal=minimal):
            assert is_backdoor_adjustment(g, xs, ys, z)
            assert is_adjustment_set(g, xs, ys, z)  # backdoor sets are adjustment sets
            assert z <= set(cand)
        for z in frontdoor_adjustment_sets(g, xs, ys, minimal=minimal):
            assert is_frontdoor_adjustment(g, xs, ys, z)
            assert z <= set(cand)
    mins = minimal_adjustment_sets(g, xs, ys)
    for z in mins:
        assert is_adjustment_set(g, xs, ys, z)
        assert not any(is_adjustment_set(g, xs, ys, w) for w in subsets(sorted(z, key=str)) if w < z)
    assert len(set(mins)) == len(mins)
    # some adjustment set exists iff a minimal one does
    assert bool(mins) == any(is_adjustment_set(g, xs, ys, w) for w in subsets(cand))
    for z in frontdoor_adjustment_sets(g, xs, ys, minimal=True):
        assert not any(is_frontdoor_adjustment(g, xs, ys, w) for w in subsets(sorted(z, key=str)) if w < z)
    assert (g.nodes, g.edges, g.latent) == before


# -- large graphs ----------------------------------------------------------------------


def large_random_dag(n: int, mean_out: float, seed: int, p_latent: float = 0.0) -> cn.DAG:
    """Random DAG with about `mean_out` * n edges; names hide the topological order."""
    rng = np.random.default_rng(seed)
    m = int(mean_out * n)
    a = rng.integers(0, n, size=2 * m)
    b = rng.integers(0, n, size=2 * m)
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))[:m]]
    perm = rng.permutation(n)
    names = [f"v{perm[i]}" for i in range(n)]
    latent = [v for v in names if rng.random() < p_latent]
    return cn.DAG([(names[i], names[j]) for i, j in pairs], nodes=names, latent=latent)


def check_minimal_adjustment_answers(g: cn.DAG, x, y, sets: list, sample: int, rng) -> None:
    # each answer is an adjustment set and dropping any one node breaks it (for sets inside
    # An(X u Y), where these live, that is minimality: moral-graph separation is monotone)
    anc = g.ancestors({x, y}, include_self=True)
    for i in rng.choice(len(sets), size=min(sample, len(sets)), replace=False):
        z = sets[i]
        assert z <= anc
        assert is_adjustment_set(g, x, y, z)
        assert not any(is_adjustment_set(g, x, y, z - {v}) for v in z)


def test_minimal_adjustment_sets_200_nodes(seed):
    g = large_random_dag(200, 2.5, seed=1)
    assert len(g.edges) == 500
    # treatment v30, outcome v62, one of its descendants: a few thousand minimal sets
    assert "v62" in g.descendants("v30")
    sets = minimal_adjustment_sets(g, "v30", "v62")  # finishing is the point; the time is not asserted
    assert len(sets) == len(set(sets)) > 100
    check_minimal_adjustment_answers(g, "v30", "v62", sets, 40, np.random.default_rng(seed))


def test_minimal_adjustment_sets_200_nodes_capped(seed):
    # a pair with more than 10^5 minimal sets: the cap returns the first ones quickly
    g = large_random_dag(200, 2.5, seed=1)
    sets = minimal_adjustment_sets(g, "v79", "v52", max_sets=2000)
    assert len(sets) == 2000
    check_minimal_adjustment_answers(g, "v79", "v52", sets, 20, np.random.default_rng(seed))


def test_frontdoor_sets_200_nodes(seed):
    g = large_random_dag(200, 2.5, seed=1)
    x, y = "v170", "v124"
    everything = frontdoor_adjustment_sets(g, x, y, max_sets=300)
    assert len(everything) == 300
    rng = np.random.default_rng(seed)
    for i in rng.choice(len(everything), size=20, replace=False):
        assert is_frontdoor_adjustment(g, x, y, everything[i])
    minimal = frontdoor_adjustment_sets(g, x, y, minimal=True, max_sets=None)
    assert len(minimal) == len(set(minimal)) >= 5
    for z in minimal:
        assert is_frontdoor_adjustment(g, x, y, z)
        assert not any(is_frontdoor_adjustment(g, x, y, z - {v}) for v in z)


def test_minimal_adjustment_sets_1000_nodes_with_latents(seed):
    g = large_random_dag(1000, 2.5, seed=11, p_latent=0.1)
    rng = np.random.default_rng(seed)
    obs = list(g.observed)
    for _ in range(10):
        x = obs[int(rng.integers(len(obs)))]
        desc = sorted(set(g.descendants(x)) - g.latent, key=str)
        if not desc:
            continue
        y = desc[int(rng.integers(len(desc)))]
        sets = minimal_adjustment_sets(g, x, y, max_sets=5000)
        if sets:
            check_minimal_adjustment_answers(g, x, y, sets, 10, rng)


def test_minimal_frontdoor_search_is_bounded_and_says_so():
    import causalnet as cn

    g = cn.DAG.parse("X -> A -> Y; X -> B -> Y; A -> C -> Y; X -> D -> C; U -> X; U -> Y; U [latent]")
    full = g.frontdoor_adjustment_sets("X", "Y", minimal=True)
    assert full == [frozenset("ABC"), frozenset("ABD")]
    with pytest.warns(cn.CausalNetWarning, match="stopped after 1 candidate sets"):
        part = g.frontdoor_adjustment_sets("X", "Y", minimal=True, max_candidates=1)
    assert set(part) < set(full)


# -- all adjustment sets; the direct effect (single-door criterion) ----------------------


def oracle_single_door(h: nx.DiGraph, x, y, zs) -> bool:
    """Pearl's single-door criterion from its definition: no descendant of y, separation without x -> y."""
    if set(zs) & (nx.descendants(h, y) | {y}):
        return False
    cut = h.copy()
    if cut.has_edge(x, y):
        cut.remove_edge(x, y)
    return nx.is_d_separator(cut, {x}, {y}, set(zs))


def test_adjustment_sets_and_direct_effect_match_brute_force(seed):
    rng = np.random.default_rng(seed + 14)
    several = 0
    for g, xs, ys in mixed_cases(rng, 60):
        h = nx_graph(g)
        key = sort_key(g)
        info = (g.edges, sorted(g.latent), xs, ys)
        total = [z for z in subsets(candidates(g, xs, ys)) if oracle_adjustment_cbc(h, xs, ys, z)]
        assert adjustment_sets(g, xs, ys, max_sets=None) == sorted(total, key=key), info
        x, y = min(xs), min(ys)
        if rng.random() < 0.5 and not g.has_edge(x, y) and y not in g.ancestors(x):
            g, h = g.add_edges([(x, y)]), h.copy()
            h.add_edge(x, y)
        direct = [z for z in subsets(candidates(g, {x}, {y})) if oracle_single_door(h, x, y, z)]
        assert adjustment_sets(g, x, y, effect="direct", max_sets=None) == sorted(direct, key=key), info
        assert minimal_adjustment_sets(g, x, y, effect="direct") == sorted(minimal_only(direct), key=key), info
        assert g.adjustment_sets(x, y, effect="direct", minimal=True) == sorted(minimal_only(direct), key=key)
        for z in direct[:3]:
            assert is_adjustment_set(g, x, y, z, effect="direct")
        several += len(minimal_only(direct)) > 1
    assert several >= 10


def test_direct_effect_dagitty_examples():
    # dagitty's test suite (test/test/adjustment-dags.js), "Small model with mediator"
    g = cn.DAG.parse("Z -> X; Z -> I; X -> I; X -> Y; I -> Y")
    assert minimal_adjustment_sets(g, "X", "Y", effect="direct") == [{"I"}]
    assert minimal_adjustment_sets(g, "X", "Y") == [{"Z"}]
    # "Z -> {{a[e]} -> { b -> {c[o]} }}": Z is an adjustment set for the total effect only
    g = cn.DAG.parse("Z -> a; Z -> b; Z -> c; a -> b; a -> c; b -> c")
    assert is_adjustment_set(g, "a", "c", {"Z"})
    assert not is_adjustment_set(g, "a", "c", {"Z"}, effect="direct")
    assert is_adjustment_set(g, "a", "c", {"Z", "b"}, effect="direct")
    # "Thoemmes, 2013" (dagitty's examples), s2 adjusted: minimal direct-effect sets {e2, s2}, {s1, s2}
    g = cn.DAG.parse("e0 -> x; e1 -> s1; e2 -> s2; e2 -> y; e3 -> s3; e4 -> y; s1 -> s2; s1 -> z; "
                     "s2 -> s3; s2 -> z2; s3 -> y; x -> y; x -> s1; y -> z3; {e0 e1 e3 e4} [latent]")
    with_s2 = [z for z in adjustment_sets(g, "x", "y", effect="direct", max_sets=None) if "s2" in z]
    assert sorted(map(sorted, minimal_only(with_s2))) == [["e2", "s2"], ["s1", "s2"]]
    # dagitty, s2 adjusted: no set for the total effect (s2 descends from the mediator s1: forbidden)
    assert not any("s2" in z for z in adjustment_sets(g, "x", "y", max_sets=None))


@pytest.mark.parametrize("kwargs, match", [
    (dict(x="X", y="Y", effect="indirect"), "effect must be"),
    (dict(x={"X", "Z"}, y="Y", effect="direct"), "one treatment"),
    (dict(x="X", y="U", effect="direct"), "latent"),
])
def test_effect_argument_is_checked(kwargs, match):
    g = cn.DAG.parse("Z -> X -> Y; Z -> Y; U [latent]; U -> Y")
    for fn in (adjustment_sets, minimal_adjustment_sets):
        err = guarded(fn, g, **kwargs)
        assert isinstance(err, GraphError) and match in str(err)
    err = guarded(is_adjustment_set, g, z=(), **kwargs)
    assert isinstance(err, GraphError) and match in str(err)
