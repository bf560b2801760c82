"""Tests for causalnet.gallery: the named graphs and the registry."""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from causalnet import DAG, gallery
from causalnet.errors import GraphError

GRAPHS = ["sprinkler", "m-bias", "frontdoor", "asia"]


def test_names_and_kinds():
    assert gallery.names()[:4] == GRAPHS
    assert {"m-bias", "frontdoor"} <= set(gallery.names("graph"))
    assert {"sprinkler", "asia", "linear-gaussian"} <= set(gallery.names("discrete") + gallery.names("gaussian"))
    assert gallery.names("no-such-kind") == []
    for name in GRAPHS:
        assert isinstance(gallery.kind(name), str)  # "graph" now; a model kind once upgraded
        assert gallery.describe(name)
        assert isinstance(gallery.graph(name), DAG)


def test_sprinkler_structure():
    g = gallery.graph("sprinkler")
    assert set(g.edges) == {("Rain", "Sprinkler"), ("Rain", "Wet"), ("Sprinkler", "Wet")}
    assert g.latent == frozenset()


def test_m_bias_structure():
    g = gallery.graph("m-bias")
    assert set(g.edges) == {("U1", "X"), ("U1", "M"), ("U2", "M"), ("U2", "Y"), ("X", "Y")}
    assert g.latent == {"U1", "U2"}


def test_frontdoor_structure():
    g = gallery.graph("frontdoor")
    assert set(g.edges) == {("Genotype", "Smoking"), ("Genotype", "Cancer"), ("Smoking", "Tar"), ("Tar", "Cancer")}
    assert g.latent == {"Genotype"}


def _pgmpy_asia_edges():
    """Edges of asia read straight from the BIF file that pgmpy ships (an independent source)."""
    spec = importlib.util.find_spec("pgmpy")
    if spec is None or spec.origin is None:
        pytest.skip("pgmpy not installed")
    path = Path(spec.origin).parent / "utils" / "example_models" / "asia.bif.gz"
    if not path.exists():
        pytest.skip(f"{path} not shipped with this pgmpy")
    text = gzip.open(path, "rt").read()
    edges = set()
    for child, parents in re.findall(r"probability\s*\(\s*(\w+)\s*(?:\|\s*([\w\s,]+))?\)", text):
        for p in filter(None, (s.strip() for s in (parents or "").split(","))):
            edges.add((p, child))
    return edges


def test_asia_matches_pgmpy_bif():
    g = gallery.graph("asia")
    assert set(g.edges) == _pgmpy_asia_edges()
    assert g.nodes == ("asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp")


@pytest.mark.parametrize("name", GRAPHS)
def test_d_separation_agrees_with_networkx(name):
    # every pair, every conditioning set of size <= 2: the gallery graph's answers
    # equal networkx's (nx is the oracle for the textbook facts below too)
    g = gallery.graph(name)
    ng = g.to_networkx()
    nodes = list(g.nodes)
    for x, y in itertools.combinations(nodes, 2):
        rest = [v for v in nodes if v not in (x, y)]
        for k in range(3):
            for z in itertools.combinations(rest, k):
                assert g.d_separated(x, y, given=set(z)) == nx.is_d_separator(ng, {x}, {y}, set(z)), (x, y, z)


def test_textbook_facts():
    asia = gallery.graph("asia")
    assert asia.d_separated("tub", "smoke")
    assert not asia.d_separated("tub", "smoke", given={"dysp"})
    assert asia.d_separated("xray", "dysp", given={"either"})
    m = gallery.graph("m-bias")
    assert m.d_separated("X", "Y", given=set()) is False
    assert m.backdoor_graph("X").d_separated("X", "Y")
    assert not m.backdoor_graph("X").d_separated("X", "Y", given={"M"})
    fd = gallery.graph("frontdoor")
    assert fd.backdoor_graph("Smoking").d_separated("Smoking", "Tar")
    assert fd.backdoor_graph("Tar").d_separated("Tar", "Cancer", given={"Smoking"})


def test_load_returns_fresh_equal_objects():
    a, b = gallery.load("asia"), gallery.load("asia")
    assert a is not b and a.dag == b.dag
    assert all((a.mechanisms[v].table == b.mechanisms[v].table).all() for v in a.nodes)


def test_unknown_name_lists_known_and_suggests():
    with pytest.raises(GraphError, match=r"no gallery entry 'mbias'; did you mean 'm-bias'\? known: sprinkler, m-bias"):
        gallery.graph("mbias")
    with pytest.raises(GraphError, match="no gallery entry 'zzz'; known: "):
        gallery.load("zzz")
    with pytest.raises(GraphError, match="no gallery entry"):
        gallery.describe(None)


class _Model:
    def __init__(self, dag):
        self.dag = dag


def test_registered_model_gives_its_dag(monkeypatch):
    dag = DAG.parse("A -> B")
    monkeypatch.setitem(gallery._REGISTRY, "toy", gallery._Entry("model", lambda: _Model(dag), "a toy model"))
    assert isinstance(gallery.load("toy"), _Model)
    assert gallery.graph("toy") == dag
    assert gallery.names("model") == ["toy"]
    monkeypatch.setitem(gallery._REGISTRY, "broken", gallery._Entry("model", object, "no dag"))
    with pytest.raises(GraphError, match="'broken' \\(model\\) has no DAG"):
        gallery.graph("broken")


def test_register_replaces(monkeypatch):
    monkeypatch.setattr(gallery, "_REGISTRY", dict(gallery._REGISTRY))
    gallery._register("sprinkler", "model", lambda: _Model(DAG.parse("Rain -> Wet")), "upgraded")
    assert gallery.names()[0] == "sprinkler" and gallery.kind("sprinkler") == "model"
    with pytest.raises(GraphError, match="non-empty strings"):
        gallery._register("", "graph", DAG, "empty")


def test_asia_model_matches_bnlearn_file():
    from causalnet.io.bif import bnlearn_path, read_bif

    path = bnlearn_path("asia")
    if path is None:
        pytest.skip("pgmpy (which ships the bnlearn files) is not installed")
    ours, ref = gallery.load("asia"), read_bif(path)
    assert set(ours.nodes) == set(ref.nodes)
    for v in ours.nodes:
        assert set(ours.mechanisms[v].parents) == set(ref.mechanisms[v].parents)
        a, b = ours.mechanisms[v], ref.mechanisms[v]
        perm = [list(b.parents).index(p) for p in a.parents] + [len(a.parents)]
        assert a.states == b.states
        np.testing.assert_allclose(a.table, np.transpose(b.table, perm), atol=1e-12)
