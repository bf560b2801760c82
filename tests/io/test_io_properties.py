"""Property tests over the model-file readers and writers (issue 10): every input ends in a
model or a CausalNetError, quickly; writers leave complete files or the old ones."""

from __future__ import annotations

import gzip
import string
import tempfile
from pathlib import Path

import numpy as np
from conftest import guarded, make_sprinkler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import causalnet as cn
from causalnet.errors import CausalNetError
from causalnet.io.bif import read_bif, to_bif, write_bif
from causalnet.io.json import from_json, load_json, save_json, to_json
from causalnet.io.xmlbif import read_xmlbif, to_xmlbif, write_xmlbif

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ASIA = cn.gallery.load("asia")
TEXTS = {
    "bif": to_bif(ASIA),
    "xmlbif": to_xmlbif(ASIA),
    "json": to_json(make_sprinkler().do({"Sprinkler": "on"})),
}
READ_TEXT = {"bif": read_bif, "xmlbif": read_xmlbif, "json": from_json}
READ_FILE = {"bif": read_bif, "xmlbif": read_xmlbif, "json": load_json}
WRITE = {"bif": write_bif, "xmlbif": write_xmlbif, "json": save_json}
SUFFIX = {"bif": ".bif", "xmlbif": ".xml", "json": ".json"}
KINDS = st.sampled_from(sorted(READ_TEXT))

# characters that mean something to one of the formats, and some that mean nothing
MEANINGFUL = st.sampled_from(list('{}()[];,|"/*<>=:.-+e0123456789 \n\t') + ["default", "table", "nan", "1e999",
                                                                           "probability", "variable", "\x00", "é"])


def _valid_or_typed(reader, *args):
    out = guarded(reader, *args)
    assert isinstance(out, (cn.CausalModel, CausalNetError)), type(out)
    return out


@SETTINGS
@given(KINDS, st.binary(max_size=2000))
def test_garbage_bytes(kind, data):
    _valid_or_typed(READ_TEXT[kind], data)


@SETTINGS
@given(KINDS, st.text(max_size=400))
def test_garbage_text(kind, text):
    _valid_or_typed(READ_TEXT[kind], "{<\n" + text)       # always "looks like" the format's text


@SETTINGS
@given(KINDS, st.data())
def test_truncated_valid_files(kind, data):
    text = TEXTS[kind]
    cut = data.draw(st.integers(0, len(text)))
    out = _valid_or_typed(READ_TEXT[kind], text[:cut] + "\n")
    if cut == len(text):
        assert isinstance(out, cn.CausalModel)


@SETTINGS
@given(KINDS, st.data())
def test_mutated_valid_files(kind, data):
    text = TEXTS[kind]
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(text) - 1))
        j = data.draw(st.integers(i, min(len(text), i + 8)))
        text = text[:i] + data.draw(MEANINGFUL) + text[j:]
    out = _valid_or_typed(READ_TEXT[kind], text + "\n")
    if isinstance(out, cn.CausalModel):
        for mech in out.mechanisms.values():
            table = getattr(mech, "table", None)
            if table is not None:
                assert np.all(np.isfinite(table)) and np.all(table >= 0)


@SETTINGS
@given(KINDS, st.data(), st.booleans())
def test_truncated_and_mutated_files_on_disk(kind, data, compress):
    raw = TEXTS[kind].encode()
    if compress:
        raw = gzip.compress(raw, mtime=0)
    cut = data.draw(st.integers(0, len(raw)))
    flip = data.draw(st.integers(0, max(0, cut - 1)))
    raw = bytearray(raw[:cut])
    if raw:
        raw[flip] ^= data.draw(st.integers(1, 255))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"m{SUFFIX[kind]}{'.gz' if compress else ''}"
        path.write_bytes(bytes(raw))
        _valid_or_typed(READ_FILE[kind], path)


@st.composite
def discrete_models(draw):
    """Small random DAGs of Categorical/CPT nodes with random tables and state names."""
    n = draw(st.integers(1, 4))
    names = draw(st.lists(st.text(string.ascii_letters + "_-", min_size=1, max_size=6), min_size=n, max_size=n,
                          unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    mechs = {}
    cards = {}
    for i, v in enumerate(names):
        cards[v] = draw(st.integers(1, 3))
        parents = [p for p in names[:i] if draw(st.booleans())]
        states = [f"s{k}" for k in range(cards[v])]
        shape = (*[cards[p] for p in parents], cards[v])
        table = rng.dirichlet(np.ones(cards[v]), size=shape[:-1]) if parents else rng.dirichlet(np.ones(cards[v]))
        mechs[v] = cn.CPT(parents, table, states=states) if parents else cn.Categorical(table, states=states)
    return cn.CausalModel(mechs)


@SETTINGS
@given(KINDS, discrete_models(), st.booleans())
def test_writers_round_trip_and_never_leave_half_a_file(kind, model, break_it):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"m{SUFFIX[kind]}"
        old = TEXTS[kind].encode()
        path.write_bytes(old)
        if break_it:            # a node the formats cannot hold: the writer fails, the old file stays
            first = model.nodes[0]
            model = cn.CausalModel({**model.mechanisms, "__real": cn.Function([first], lambda x: x)})
        out = guarded(WRITE[kind], model, path)
        if isinstance(out, CausalNetError):
            assert path.read_bytes() == old
        else:
            back = READ_FILE[kind](path)
            for v in model.nodes:
                assert back.mechanisms[v].table.tobytes() == model.mechanisms[v].table.tobytes()
        assert [p.name for p in Path(d).iterdir()] == [path.name]
