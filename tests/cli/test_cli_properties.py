"""Property tests over the command line (issue 10): any argument list ends in exit 0, or in
exit 2 with exactly one line on stderr — never a traceback, never an untyped error."""

from __future__ import annotations

import contextlib
import io

from conftest import guarded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from causalnet.cli import main

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = st.sampled_from(["Rain", "Wet", "Sprinkler", "tub", "smoke", "X", "Y", "U1", "", ",", "Rain,Wet", "é",
                         "--", "-z", "1"]) | st.text(max_size=8)
GRAPHS = st.sampled_from(["gallery:sprinkler", "gallery:asia", "gallery:m-bias", "gallery:nope", "A -> B <- C",
                          "A -> -> B", "A -> B -> A", ".", "/dev/null", "/nonexistent/x.json", "gallery:"]) \
    | st.text(max_size=20)
MODELS = st.sampled_from(["gallery:sprinkler", "gallery:asia", "gallery:linear-gaussian", "gallery:m-bias",
                          "gallery:nope", "/nonexistent.bif", "/dev/null", "."]) | st.text(max_size=12)
QUERY_PARTS = st.sampled_from(["P(", ")", "|", "do(", "Wet", "Rain", "Sprinkler", "=", "on", "yes", "dry", ",",
                               "_{", "}", " ", "Wet=wet", "Income", "Education=16", "lung", "xray=yes", "maybe"])
QUERIES = st.lists(QUERY_PARTS, max_size=12).map("".join) | st.text(max_size=20)


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = guarded(main, argv)
    return code, out.getvalue(), err.getvalue()


def _check(argv):
    code, out, err = _cli(argv)
    assert code in (0, 2), (argv, code, err)
    assert "Traceback" not in err
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("causalnet: error: "), (argv, err)
    else:
        assert err == "" or argv[-1] in ("--help", "-h"), (argv, err)


@SETTINGS
@given(GRAPHS, NAMES, NAMES, st.lists(NAMES, max_size=2))
def test_dsep_and_adjust(graph, x, y, given_):
    _check(["dsep", graph, x, y, *[a for z in given_ for a in ("--given", z)]])
    _check(["adjust", graph, x, y])


@SETTINGS
@given(GRAPHS, st.lists(NAMES, max_size=2), st.one_of(st.none(), NAMES),
       st.sampled_from([[], ["--rankdir", "LR"], ["--rankdir", "XX"], ["--format", "svg"], ["--clusters"]]))
def test_draw_to_stdout(graph, do, highlight, extra):
    argv = ["draw", graph, *[a for v in do for a in ("--do", v)], *extra]
    if highlight is not None:
        argv += ["--highlight", highlight]
    _check(argv)


@SETTINGS
@given(MODELS, QUERIES, st.sampled_from([[], ["--json"], ["--method", "exact"], ["--seed", "x"],
                                         ["--method", "bogus"]]))
def test_query(model, query, extra):
    _check(["query", model, query, *extra])


@SETTINGS
@given(st.lists(st.text(max_size=10) | st.sampled_from(["query", "dsep", "gallery", "--json", "-o", "--help"]),
                max_size=5))
def test_any_argument_list(argv):
    if argv[:1] in (["tour"], ["draw"]) or "-o" in argv or "--output" in argv:
        argv = ["gallery", *argv]               # never write files or run the long tour from here
    _check(argv)
