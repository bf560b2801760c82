"""Bad and extreme input for every public graph entry point (issue 10).

Every call goes through ``conftest.guarded``: a valid answer or a
``CausalNetError``; nothing else, no NaN, arguments unchanged after a failure.
Hypothesis draws the inputs from a pool of good nodes, unknown nodes, wrong
types, strings that look like edges, unhashable values and overlapping sets.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import guarded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.errors import GraphError
from causalnet.graph import adjustment, separation

GOOD = cn.DAG.parse("U [latent]; U -> X; U -> Y; Z -> X -> M -> Y; Z -> Y; W")
NODES = list(GOOD.nodes)

# a node-ish argument: a good node, an unknown one, a latent one, a set, junk
junk = st.sampled_from([None, 5, 2.5, float("nan"), [], [[]], {}, "", "XY", b"X", ("X", "Y"), object(),
                        np.array(["X"]), {"X": 1}, frozenset(), True])
node = st.sampled_from(NODES + ["nope", "x"])
node_set = st.one_of(node, st.sets(node, max_size=4), st.lists(node, max_size=3), junk)


def _check_answer(out, kind):
    if isinstance(out, cn.CausalNetError):
        return
    if kind == "bool":
        assert isinstance(out, bool)
    elif kind == "sets":
        assert isinstance(out, list) and all(isinstance(s, frozenset) for s in out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=node_set, y=node_set, z=node_set)
def test_separation_entry_points(x, y, z):
    _check_answer(guarded(separation.d_separated, GOOD, x, y, z), "bool")
    _check_answer(guarded(GOOD.d_connected, x, y, given=z), "bool")
    out = guarded(GOOD.minimal_d_separator, x, y, include=z)
    assert isinstance(out, (frozenset, cn.CausalNetError)) or out is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=node_set, y=node_set, z=node_set)
def test_adjustment_predicates(x, y, z):
    for fn in (adjustment.is_backdoor_adjustment, adjustment.is_adjustment_set, adjustment.is_frontdoor_adjustment):
        _check_answer(guarded(fn, GOOD, x, y, z), "bool")


max_sets = st.one_of(st.none(), st.integers(-2, 5), junk)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=node_set, y=node_set, cap=max_sets, minimal=st.booleans())
def test_adjustment_listings(x, y, cap, minimal):
    _check_answer(guarded(GOOD.backdoor_adjustment_sets, x, y, minimal=minimal, max_sets=cap), "sets")
    _check_answer(guarded(GOOD.minimal_adjustment_sets, x, y, max_sets=cap), "sets")
    _check_answer(guarded(GOOD.frontdoor_adjustment_sets, x, y, minimal=minimal, max_sets=cap,
                          max_candidates=cap), "sets")


edge_item = st.one_of(st.tuples(node, node), st.lists(node, min_size=0, max_size=3), junk,
                      st.text(max_size=3))


@settings(max_examples=200, deadline=None)
@given(edges=st.one_of(st.lists(edge_item, max_size=5), junk, st.text(max_size=5)),
       nodes=st.one_of(st.lists(st.one_of(node, junk), max_size=3), junk),
       latent=st.one_of(st.lists(node, max_size=2), junk))
def test_dag_constructor(edges, nodes, latent):
    out = guarded(cn.DAG, edges, nodes=nodes, latent=latent)
    assert isinstance(out, (cn.DAG, GraphError))


@settings(max_examples=150, deadline=None)
@given(text=st.one_of(st.text(alphabet="AB ->;{}[]#\"\n\\latent", max_size=25), junk))
def test_parse(text):
    out = guarded(cn.DAG.parse, text)
    assert isinstance(out, (cn.DAG, GraphError))


@settings(max_examples=60, deadline=None)
@given(kind=st.one_of(st.sampled_from(["basis", "local"]), junk, st.text(max_size=3)))
def test_implied_independencies(kind):
    guarded(GOOD.implied_independencies, kind=kind)


opt = st.one_of(st.none(), node_set)


@settings(max_examples=150, deadline=None)
@given(path=st.one_of(st.none(), st.lists(node, max_size=4), junk), hl=opt, sep=opt,
       observed=st.one_of(st.booleans(), opt), labels=st.one_of(st.none(), junk, st.dictionaries(node, st.text(max_size=3))),
       clusters=st.one_of(st.none(), st.just("prefix"), junk, st.dictionaries(st.text(max_size=2), st.lists(node, max_size=2))),
       title=st.one_of(st.none(), st.text(max_size=5), junk), rankdir=st.one_of(st.sampled_from(["TB", "LR"]), junk))
def test_to_dot(path, hl, sep, observed, labels, clusters, title, rankdir):
    out = guarded(cn.to_dot, GOOD, highlight_path=path, highlight_nodes=hl, separating_set=sep, observed=observed,
                  labels=labels, clusters=clusters, title=title, rankdir=rankdir)
    assert isinstance(out, (str, cn.CausalNetError))


@settings(max_examples=40, deadline=None)
@given(obj=st.one_of(st.just(GOOD), junk), path=st.one_of(st.sampled_from(["g.dot", "g.gv", "g.txt", "nodir/g.dot", ""]), junk),
       fmt=st.one_of(st.none(), st.sampled_from(["dot", "svg", "pdf"]), junk),
       renderer=st.one_of(st.sampled_from(["auto", "dot", "nope"]), junk))
def test_render_bad_arguments(tmp_path_factory, obj, path, fmt, renderer):
    d = tmp_path_factory.mktemp("render")
    target = d / path if isinstance(path, str) else path
    out = guarded(cn.render, obj, target, fmt, renderer=renderer)
    assert isinstance(out, cn.CausalNetError) or out.exists()


@pytest.mark.parametrize("bad", [5, ["XY"], "AB", [("A",)], [("A", "B", "C")], [("A", ["B"])], [(None, "A")],
                                 [("A", "A")], [{"A", "B"}], b"AB", [b"AB"], 2.5, [("A", "B"), "CD"]])
def test_malformed_edges_raise_naming_the_item(bad):
    with pytest.raises(GraphError) as err:
        cn.DAG(bad)
    text = str(err.value)
    assert "edge" in text or "node" in text


def test_string_edge_is_not_an_edge():
    with pytest.raises(GraphError, match="'XY'"):
        cn.DAG(["XY"])
    with pytest.raises(GraphError, match="DAG.. expects an iterable of edges, got int"):
        cn.DAG(5)


def test_from_networkx_and_none_nodes():
    import networkx as nx

    with pytest.raises(GraphError):
        cn.DAG.from_networkx(nx.Graph([("A", "B")]))
    with pytest.raises(GraphError, match="None"):
        cn.DAG(nodes=[None])
    with pytest.raises(GraphError, match="cycle"):
        cn.DAG.from_networkx(nx.DiGraph([("A", "B"), ("B", "A")]))
