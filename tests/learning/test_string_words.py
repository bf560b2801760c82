"""The numpy word encoder of short Arrow strings (causalnet.learning.string_words) against pandas.factorize."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from causalnet import runtime
from causalnet.learning import string_words
from causalnet.learning.string_words import MAX_WORD_BYTES, MAX_WORD_UNIQUES, row_keys, word_codes
from causalnet.learning.strings import string_column

pa = pytest.importorskip("pyarrow")

#: empty strings, NUL bytes, 7/8/9/15/16-byte strings sharing prefixes, non-ASCII
WORDS = ["", "a", "b", "ab", "\x00", "a\x00", "\x00a", "abcdefg", "abcdefg\x00", "abcdefgh", "abcdefgi",
         "abcdefgh\x00", "abcdefghij", "abcdefghik", "abcdefghijklmno", "abcdefghijklmnp", "abcdefghijklmnop",
         "é", "ée", "日本", "NORMAL", "LOW", "HIGH", "ESOPHAGEAL", "ONESIDED"]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _expected(values, seeds, sort):
    """The oracle: ``pandas.factorize`` of the values, renumbered by hand (seeds first, the rest sorted or not)."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    rest = [u for u in uniques.tolist() if u not in (seeds or [])]
    new = list(seeds or []) + (sorted(rest) if sort else rest)
    return [-1 if c < 0 else new.index(uniques[c]) for c in codes], new


def _column(values, large, cuts, start):
    """`values` as an Arrow-backed Series cut into chunks at `cuts`, then sliced from `start` (an offset)."""
    typ = pa.large_string() if large else pa.string()
    cuts = sorted({c for c in cuts if 0 < c < len(values)})
    chunks = [pa.array(values[a:b], typ) for a, b in zip([0, *cuts], [*cuts, len(values)])]
    s = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(chunks, typ)))
    return s.iloc[min(start, len(values)):]


def _fits(values) -> bool:
    """Whether the encoder must accept `values`: short strings, few distinct."""
    present = [v for v in values if v is not None]
    return len(set(present)) <= MAX_WORD_UNIQUES and all(len(v.encode()) <= MAX_WORD_BYTES for v in present)


texts = st.one_of(st.sampled_from(WORDS), st.text(max_size=6), st.text(min_size=14, max_size=18))


@SETTINGS
@given(st.lists(st.one_of(texts, st.none()), max_size=80), st.booleans(), st.lists(st.integers(1, 79), max_size=3),
       st.integers(0, 4), st.booleans(), st.data())
def test_word_codes_equal_factorize(values, large, cuts, start, sort, data):
    s = _column(values, large, cuts, start)
    rows = s.tolist()
    rows = [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v for v in rows]
    present = list(dict.fromkeys(v for v in rows if v is not None))
    seeds = data.draw(st.one_of(st.none(), st.lists(st.one_of(st.sampled_from(present or ["q"]),
                                                              st.text(max_size=10)), unique=True, max_size=4)))
    block, string_words.BLOCK_ROWS = string_words.BLOCK_ROWS, data.draw(st.sampled_from([16384, 1, 2, 7]))
    try:                                                       # small blocks: rows gathered across block edges
        out = word_codes(s, seeds=seeds, sort=sort)
    finally:
        string_words.BLOCK_ROWS = block
    if _fits(rows) and len(set(present) | set(seeds or [])) <= 255:
        assert out is not None                                      # the encoder's own case: it must take it
    if out is None:
        return
    codes, uniques, small = out
    expect_codes, expect_uniques = _expected(rows, seeds, sort)
    assert uniques == expect_uniques
    if None in rows:                                # int64 codes with -1, no bytes
        assert small is None
        assert codes.dtype == np.int64 and codes.tolist() == expect_codes
    else:                                           # the bytes only: the caller widens them if it needs to
        assert codes is None
        assert small.dtype == np.uint8 and small.tolist() == expect_codes


@SETTINGS
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=40), st.booleans())
def test_row_keys_equal_exactly_for_equal_strings(values, large):
    keys = row_keys(pa.array(values, pa.large_string() if large else pa.string()))
    if any(len(v.encode()) > MAX_WORD_BYTES for v in values):
        assert keys is None                                                       # a string over 15 bytes
        return
    key1, key2, valid = keys
    assert valid is None
    pairs = list(zip(key1.tolist(), key2.tolist() if key2 is not None else [0] * len(values)))
    for i in range(len(values)):
        for j in range(len(values)):
            assert (pairs[i] == pairs[j]) == (values[i] == values[j])


def test_word_codes_hand_over():
    many = [f"v{i}" for i in range(MAX_WORD_UNIQUES + 1)]
    assert word_codes(pd.Series(many * 3, dtype="str")) is None                    # too many distinct strings
    assert word_codes(pd.Series(many * 100, dtype="str")) is None                  # ... seen in the head rows
    assert word_codes(pd.Series(["a"] * 2000 + many, dtype="str")) is None         # ... past the head rows
    assert word_codes(pd.Series(["a"] * 2000 + ["b" * 16], dtype="str")) is None  # a long string past them
    assert word_codes(pd.Series(["a" * (MAX_WORD_BYTES + 1), "b"], dtype="str")) is None     # a long string
    assert word_codes(pd.Series(["x", "y"], dtype=object)) is None            # not Arrow strings
    assert word_codes(pd.Series([1, 2])) is None
    assert word_codes(pd.Series(["a"], dtype="str"), seeds=[f"s{i}" for i in range(255)]) is None   # 256 codes
    assert word_codes(pd.Series(["a"], dtype="str"), seeds=["a", "a"]) is None


def test_word_codes_long_column_across_blocks():
    rng = np.random.default_rng(1)
    values = rng.choice(["LOW", "NORMAL", "HIGH", "", "ONESIDED", "ESOPHAGEAL", "日本"], size=3 * 16384 + 5).tolist()
    values[7] = None
    column = pd.Series(values, dtype="str").iloc[3:]                                # an offset into the buffers
    codes, uniques, small = word_codes(column, sort=True)
    expect_codes, expect_uniques = _expected(column.tolist(), None, True)
    assert uniques == expect_uniques and codes.tolist() == expect_codes and small is None


def test_word_codes_strings_first_met_late_and_rare():
    values = ["x"] * 50_000 + ["y"] + ["x\x00"] + ["x"] * 10 + [None] + ["z" * 15]
    codes, uniques, small = word_codes(pd.Series(values, dtype="str"), sort=True)
    assert uniques == ["x", "x\x00", "y", "z" * 15] and small is None
    assert codes.tolist() == [0] * 50_000 + [2, 1] + [0] * 10 + [-1, 3]


def test_word_codes_edge_columns():
    codes, uniques, small = word_codes(pd.Series([], dtype="str"), seeds=["p"])
    assert codes is None and uniques == ["p"] and small.tolist() == []              # complete: the bytes only
    codes, uniques, small = word_codes(pa.chunked_array([], pa.large_string()), seeds=["p"], sort=True)
    assert codes is None and uniques == ["p"] and small.tolist() == []
    codes, uniques, small = word_codes(pa.array(["x", None, "yy", "x"] * 3, pa.string()).slice(5, 6), sort=True)
    assert codes.tolist() == [-1, 1, 0, 0, -1, 1] and uniques == ["x", "yy"] and small is None
    assert word_codes(pa.array(["a", "b"], pa.binary())) is None                               # bytes: not strings
    for dtype in ("str", "string[pyarrow]"):
        column = pd.Series(["b", np.nan, None, pd.NA, "", "b"], dtype=dtype)               # every missing spelling
        codes, uniques, small = word_codes(column)
        assert codes.tolist() == pd.factorize(column)[0].tolist() == [0, -1, -1, -1, 1, 0]
        assert uniques == ["b", ""] and small is None
    codes, uniques, small = word_codes(pd.Series([None, None], dtype="str"))
    assert codes.tolist() == [-1, -1] and uniques == [] and small is None
    codes, uniques, small = word_codes(pa.chunked_array([pa.array([], pa.string()), pa.array(["b", "a"], pa.string())]),
                                       sort=True)
    assert codes is None and small.tolist() == [1, 0] and uniques == ["a", "b"]


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_string_column_takes_the_word_path_and_its_narrow_codes(backend, monkeypatch):
    from causalnet.learning import strings

    monkeypatch.setattr(strings, "dictionary_codes", lambda v: pytest.fail("hashed"))
    values = ["LOW", "HIGH", "NORMAL", "HIGH"] * 10_000
    with runtime.backend("strings", backend):
        codes, uniques, small = string_column(pd.Series(values, dtype="str"), sort=True)
    assert uniques == ["HIGH", "LOW", "NORMAL"]
    assert codes is None and small.dtype == np.uint8 and small.tolist() == [1, 0, 2, 0] * 10_000


@pytest.mark.parametrize("values", [
    ["a", "\x00a", "\x00", "", "\x00\x00", "a\x00", "ab"],                                   # NUL, one word
    ["abcdefgh", "abcdefg\x00", "\x00abcdefg", "abcdefgh\x00", "\x00" * 9, "\x00" * 8, "x", "", "\x00x"],  # NUL, two
    ["", "a", "ab", "abcdefgh", "abcdefg", "é"],                                             # no NUL, one word
    ["", "a", "ab", "abcdefgh", "abcdefghi", "abcdefghijklmno", "abcdefghijklmn", "日本語のテ"],   # no NUL, two
])
@pytest.mark.parametrize("large", [False, True])
def test_row_keys_of_every_scheme(values, large):
    for column in (values, values[::-1], [None, *values]):
        key1, key2, valid = row_keys(pa.array(column, pa.large_string() if large else pa.string()))
        pairs = list(zip(key1.tolist(), key2.tolist() if key2 is not None else [0] * len(column)))
        present = [i for i, v in enumerate(column) if v is not None]
        assert len({pairs[i] for i in present}) == len({column[i] for i in present})
        assert (valid is None) == (None not in column)
