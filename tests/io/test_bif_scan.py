"""The whole-block quick path of read_bif (causalnet.io.bif_scan) against the token-by-token parser.

The oracle is the token parser of causalnet.io.bif (itself tested against pgmpy and pyAgrum in
test_io_bif.py), run with every quick path switched off: on every text the quick path accepts, the two
give the same model bit for bit; on every text it refuses, read_bif's answer or error is the token
parser's. Generated files vary the spacing, the separators, the number spellings, the row order (C,
Fortran, shuffled), 'table' lines against rows, and rows off by more than the CPT tolerance; broken
files repeat, drop or misname a row, hold a negative, NaN or malformed number, a comment, a quote, a
property or a default row.
"""

import gzip
import itertools
import re
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import causalnet
from causalnet.errors import CausalNetError
from causalnet.io import bif, bif_parser, bnlearn
from causalnet.io.bif import read_bif
from causalnet.io.bif_scan import scan_bif

DATA = Path(causalnet.__file__).parent / "data"
NEVER = re.compile(r"(?!)")


def _token_parser(text, tol=1e-6):
    """read_bif with every quick path off: the whole-block scan, the one-match variable and row patterns."""
    patterns = types.SimpleNamespace(**{**vars(bif_parser._patterns()), "variable": NEVER, "next_row": NEVER})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bif_parser, "_patterns", lambda: patterns)
        mp.setattr(bif, "scan_bif", lambda text, tol: None)
        return read_bif(text, tol=tol)


def _outcome(read, text, tol=1e-6):
    """``("ok", model)`` or ``("error", type, message)``."""
    try:
        return ("ok", read(text, tol=tol))
    except CausalNetError as e:
        return ("error", type(e), str(e))


def _same(a, b):
    assert list(a.dag.nodes) == list(b.dag.nodes) and a.latent == b.latent
    for v in a.dag.nodes:
        ma, mb = a.mechanisms[v], b.mechanisms[v]
        assert type(ma) is type(mb) and tuple(ma.parents) == tuple(mb.parents) and ma.states == mb.states
        assert ma.table.shape == mb.table.shape and ma.table.tobytes() == mb.table.tobytes()   # bit for bit


def _agree(text, tol=1e-6):
    fast, slow = _outcome(read_bif, text, tol), _outcome(_token_parser, text, tol)
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "ok":
        _same(fast[1], slow[1])
    else:
        assert fast[1:] == slow[1:]
    return fast


def _shipped():
    names = sorted(p.name.removesuffix(".bif.gz") for p in DATA.glob("*.bif.gz"))
    return [(n, DATA / f"{n}.bif.gz") for n in names] + [
        (n, bnlearn.pgmpy_path(n)) for n in ("pathfinder", "barley", "mildew", "diabetes") if bnlearn.pgmpy_path(n)]


@pytest.mark.parametrize("name,path", _shipped(), ids=[n for n, _ in _shipped()])
def test_every_shipped_network_takes_the_quick_path_and_reads_as_the_token_parser_does(name, path):
    text = gzip.decompress(path.read_bytes()).decode()
    assert scan_bif(text, 1e-6) is not None, f"{name} left the quick path"
    _same(read_bif(text), _token_parser(text))


# -- generated files ----------------------------------------------------------------------------------------


def _number(rng, x):
    """`x` spelled as a BIF file might: repr, fixed, exponent, no leading zero, a trailing dot, a plus sign."""
    style = rng.integers(6)
    if style == 0:
        return repr(float(x))
    if style == 1:
        return f"{x:.7f}"
    if style == 2:
        return f"{x:.6e}"
    if style == 3:
        return f"{x:.8f}".lstrip("0") or "0"
    if style == 4:
        return "1." if x == 1 else repr(float(x))
    return "+" + repr(float(x))


def _network(seed):
    """(variables, parents, tables) of a random small network: 1-5 nodes, 1-4 states, up to 3 parents."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    names = [f"V{i}" for i in range(n)]
    states = {v: [f"s{j}" for j in range(int(rng.integers(1, 5)))] for v in names}
    parents = {v: [names[j] for j in sorted(rng.choice(i, size=min(i, int(rng.integers(0, 4))), replace=False))]
               for i, v in enumerate(names)}
    tables = {}
    for v in names:
        shape = [len(states[p]) for p in parents[v]] + [len(states[v])]
        t = rng.dirichlet(np.ones(shape[-1]), size=int(np.prod(shape[:-1]))).reshape(shape)
        tables[v] = np.round(t, int(rng.integers(2, 9)))          # printed to limited precision: rows off by <1e-6
        tables[v][..., -1] = np.clip(1 - tables[v][..., :-1].sum(-1), 0, 1)
        if rng.random() < 0.3:                                     # a row off by 5e-7: rescaled by both parsers
            tables[v].reshape(-1, shape[-1])[0, 0] += 5e-7
    return rng, names, states, parents, tables


def _text(seed, order, sep, blank, whole):
    """BIF text of a random network; `order` of the rows: "C", "F" or "shuffled"; `whole`: 'table' lines."""
    rng, names, states, parents, tables = _network(seed)
    out = ["network unknown {", "}"]
    for v in names:
        out.append(f"variable {v}{blank}{{{blank}type discrete [ {len(states[v])} ] {{ {sep.join(states[v])} }};{blank}}}")
    for v in names:
        pa, t = parents[v], tables[v]
        head = f"probability ( {v}{(' | ' + ', '.join(pa)) if pa else ''} ){blank}{{"
        if not pa or whole:
            flat = np.moveaxis(t, -1, 0).ravel()                    # child slowest, last parent fastest
            out += [head, "  table " + sep.join(_number(rng, x) for x in flat) + ";", "}"]
            continue
        cfgs = list(itertools.product(*(range(len(states[p])) for p in pa)))
        if order == "F":
            cfgs = [c[::-1] for c in itertools.product(*(range(len(states[p])) for p in pa[::-1]))]
        elif order == "shuffled":
            cfgs = [cfgs[i] for i in rng.permutation(len(cfgs))]
        rows = [f"  ({sep.join(states[p][i] for p, i in zip(pa, c))}){blank}"
                + sep.join(_number(rng, x) for x in t[c]) + ";" for c in cfgs]
        out += [head, *rows, "}"]
    return "\n".join(out) + "\n"


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["C", "F", "shuffled"]), st.sampled_from([", ", ",", " ", " , "]),
       st.sampled_from([" ", "\n", "\t", "  \n "]), st.booleans())
def test_generated_files_read_as_the_token_parser_reads_them(seed, order, sep, blank, whole):
    text = _text(seed, order, sep, blank, whole)
    assert scan_bif(text, 1e-6) is not None                       # the quick path reads them all
    assert _agree(text)[0] == "ok"


_BREAKS = {
    "row repeated": lambda t: re.sub(r"\n  \(([^)]*)\)([^\n]*)\n", r"\n  (\1)\2\n  (\1)\2\n", t, count=1),
    "row dropped": lambda t: re.sub(r"\n  \([^)]*\)[^\n]*;", "", t, count=1),
    "unknown state": lambda t: re.sub(r"\n  \(s0", "\n  (s9", t, count=1),
    "negative": lambda t: re.sub(r"table (\S+?)([,; ])", r"table -\1\2", t, count=1),
    "nan": lambda t: re.sub(r"table (\S+?)([,; ])", r"table nan\2", t, count=1),
    "malformed": lambda t: re.sub(r"table (\S+?)([,; ])", r"table 1e\2", t, count=1),
    "too many": lambda t: t.replace("table ", "table 0, ", 1),
    "comment": lambda t: t.replace("}\n", "} // done\n", 2),
    "quote": lambda t: t.replace("variable V0 ", 'variable "V0" ', 1).replace("( V0", '( "V0"'),
    "property": lambda t: t.replace("type discrete", "property latent = true ; type discrete", 1),
    "default": lambda t: re.sub(r"\n  \([^)]*\)([^\n]*);", r"\n  default\1;", t, count=1),
    "off by 1e-3": lambda t: re.sub(r"table (\S+?)([,; ])", r"table 0.001\2", t, count=1) if "table 0.0" in t
    else t.replace("table ", "table 0.001, ", 1),
    "no block": lambda t: t[:t.rfind("probability")],
    "undeclared parent": lambda t: re.sub(r"\| V0", "| W0", t, count=1),
}


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["C", "F", "shuffled"]), st.sampled_from(sorted(_BREAKS)),
       st.sampled_from([0.0, 1e-9, 1e-6, 1e-2]))
def test_broken_and_unusual_files_give_the_token_parser_s_answer_or_error(seed, order, brk, tol):
    text = _BREAKS[brk](_text(seed, order, ", ", " ", False))
    _agree(text, tol)


def test_rows_off_by_more_than_the_cpt_tolerance_are_rescaled_as_the_token_parser_rescales_them():
    text = ("variable A { type discrete [ 2 ] { a, b }; }\nvariable B { type discrete [ 3 ] { x, y, z }; }\n"
            "probability ( A ) { table 0.3333333, 0.6666666; }\n"
            "probability ( B | A ) { (b) 0.1, 0.2, 0.7000004; (a) 0.2, 0.2, 0.6; }\n")
    m = _agree(text)[1]
    assert m.mechanisms["A"].table.sum() == pytest.approx(1, abs=1e-15)            # rescaled
    assert m.mechanisms["B"].table[0].tolist() == [0.2, 0.2, 0.6]                  # kept bit for bit
    assert _agree(text, tol=1e-7)[0] == "error"                                    # now beyond the tolerance
    assert _agree(text, tol=0.0)[0] == "error"


def test_the_quick_path_steps_aside_and_never_raises_itself():
    ok = "variable A { type discrete [ 2 ] { a, b }; }\nprobability ( A ) { table 0.5, 0.5; }\n"
    assert scan_bif(ok, 1e-6)[0] == ["A"]
    for text in ["", "   ", ok + "// trailing comment", ok.replace("0.5, 0.5", "0.5, 0.6"), ok + "variable",
                 ok.replace("table", "default"), ok + "probability ( A ) { table 0.5, 0.5; }\n",
                 ok.replace("[ 2 ]", "[ 3 ]"), ok.replace("{ a, b }", "{ a, a }"), "network x { property y ; }\n" + ok,
                 ok.replace("0.5, 0.5", "inf, 0"), ok.replace("A )", "A | A )")]:
        assert scan_bif(text, 1e-6) is None, text
        _agree(text)


def test_a_cycle_is_the_token_parser_s_error():
    text = ("variable A { type discrete [ 2 ] { a, b }; }\nvariable B { type discrete [ 2 ] { a, b }; }\n"
            "probability ( A | B ) { (a) 0.5, 0.5; (b) 0.5, 0.5; }\nprobability ( B | A ) { table 0.5, 0.5, 0.5, 0.5; }\n")
    assert _agree(text)[0] == "error" and "cycle" in _agree(text)[2]
