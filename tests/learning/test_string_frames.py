"""DataFrames of strings (issue 31): factorised once per column, and every path gives the categorical answer.

The compiled Arrow kernel is checked against ``pandas.factorize`` on random
columns; string frames (``str``, ``string[python]``, ``string[pyarrow]``,
``object``) against the same frames as categoricals through ``as_table``,
``fit``, ``score``, ``learn_structure``, queries and predictions with
DataFrame evidence and Dask partitions; and the fitted CPTs of a string frame
against pgmpy's ``MaximumLikelihoodEstimator``.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import causalnet as cn
from causalnet import runtime
from causalnet.learning import string_kernel, strings
from causalnet.learning.data import DiscreteColumn, Table, as_table, family_counts
from causalnet.learning.strings import (
    KERNEL_MAX_UNIQUES,
    KERNEL_MIN_ROWS,
    PROBE_ROWS,
    arrow_codes,
    dictionary_codes,
    object_codes,
    reference_codes,
    string_codes,
)

pa = pytest.importorskip("pyarrow")
pytestmark = pytest.mark.filterwarnings("ignore:node .* no data for")

STRING_DTYPES = ["str", "string[python]", "string[pyarrow]", "object"]
#: strings that stress the kernel's key: empty, NUL bytes, 7/8/9-byte prefixes shared, non-ASCII
WORDS = ["", "a", "b", "ab", "\x00", "a\x00", "abcdefg", "abcdefgh", "abcdefgi", "abcdefghij", "abcdefghik",
         "é", "ée", "日本", "NORMAL", "LOW", "HIGH", "TRUE", "FALSE", "ESOPHAGEAL", "ONESIDED"]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _arrow_series(values, large: bool) -> pd.Series:
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, pa.large_string() if large else pa.string())))


def _as(df: pd.DataFrame, dtype: str) -> pd.DataFrame:
    """`df` (object columns of str/None) with every column in `dtype` (missing cells stay missing)."""
    return df.astype(object) if dtype == "object" else df.astype(dtype)


def _categorical(df: pd.DataFrame) -> pd.DataFrame:
    """The same frame with categorical columns, categories sorted (the order strings get)."""
    return df.astype(object).astype("category")


# -- the kernel against pandas.factorize ----------------------------------------------------------------------------


@SETTINGS
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=60), st.booleans(), st.integers(0, 5))
def test_arrow_kernel_equals_factorize(values, large, start):
    s = _arrow_series(values, large).iloc[min(start, len(values) - 1):]      # a slice: the array has an offset
    codes, uniques = arrow_codes(s)
    ref_codes, ref_uniques = reference_codes(s.astype(object))
    assert uniques == ref_uniques
    assert np.array_equal(codes, ref_codes)


@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.none()), min_size=1, max_size=60), st.booleans())
def test_arrow_dictionary_codes_equal_factorize(values, large):
    s = _arrow_series(values, large)
    codes, uniques = dictionary_codes(s)
    ref_codes, ref_uniques = reference_codes(s.astype(object))
    assert uniques == ref_uniques
    assert np.array_equal(codes, ref_codes)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_long_and_chunked_columns_on_both_backends(backend):
    rng = np.random.default_rng(0)
    values = rng.choice(WORDS, size=KERNEL_MIN_ROWS + 17).tolist()
    chunked = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([values[:100], values[100:]])))
    ref_codes, ref_uniques = reference_codes(np.asarray(values, dtype=object))
    with runtime.backend("strings", backend):
        for s in (chunked, pd.Series(values, dtype="str"), pd.Series(values, dtype="string[pyarrow]")):
            codes, uniques = string_codes(s)
            assert uniques == ref_uniques and np.array_equal(codes, ref_codes)


def test_auto_backend_compiles_only_after_dictionary_encoding_took_long(monkeypatch):
    monkeypatch.setattr(strings, "numba_warm", lambda: False)           # no compiled kernel has run yet
    with runtime.backend("strings", "auto"):
        assert not strings.kernel_wanted(KERNEL_MIN_ROWS - 1)
        monkeypatch.setattr(strings, "AUTO_SECONDS", 0.0)
        assert strings.kernel_wanted(KERNEL_MIN_ROWS) and not strings.kernel_wanted(KERNEL_MIN_ROWS - 1)
    with runtime.backend("strings", "numpy"):
        assert not strings.kernel_wanted(10 ** 9)
    with runtime.backend("strings", "numba"):
        assert strings.kernel_wanted(1)


def test_auto_backend_has_a_lower_bar_once_numba_is_set_up(monkeypatch):
    """Once a compiled kernel has run in the process the kernel loads in ~0.02 s: WARM_SECONDS is the bar."""
    monkeypatch.setattr(strings, "_spent", [0.0])
    warm = int(strings.WARM_SECONDS / strings.DICT_SECONDS_PER_CELL) + 1                # cells worth the kernel
    with runtime.backend("strings", "auto"):
        for is_warm, expect in ((False, False), (True, True)):
            monkeypatch.setattr(strings, "numba_warm", lambda w=is_warm: w)
            with strings.expecting(warm):
                assert strings.kernel_wanted(KERNEL_MIN_ROWS) is expect
                assert not strings.kernel_wanted(KERNEL_MIN_ROWS - 1)
            with strings.expecting(warm // 2):
                assert not strings.kernel_wanted(KERNEL_MIN_ROWS)


def test_auto_backend_plans_for_a_large_frame(monkeypatch):
    monkeypatch.setattr(strings, "_spent", [0.0])
    monkeypatch.setattr(strings, "numba_warm", lambda: False)           # no compiled kernel has run yet
    big = int(strings.AUTO_SECONDS / strings.DICT_SECONDS_PER_CELL) + 1
    with runtime.backend("strings", "auto"):
        assert not strings.kernel_wanted(KERNEL_MIN_ROWS)
        with strings.expecting(big):
            assert strings.kernel_wanted(KERNEL_MIN_ROWS) and not strings.kernel_wanted(KERNEL_MIN_ROWS - 1)
        with strings.expecting(big // 4):
            assert not strings.kernel_wanted(KERNEL_MIN_ROWS)
        assert not strings.kernel_wanted(KERNEL_MIN_ROWS)
        seen = []
        monkeypatch.setattr(strings, "arrow_column", lambda v, **kw: seen.append(len(v)))    # None: Arrow's path
        monkeypatch.setattr(strings, "DICT_SECONDS_PER_CELL", strings.AUTO_SECONDS / (3 * KERNEL_MIN_ROWS))
        df = pd.DataFrame({c: pd.Series(["x", "y"] * (KERNEL_MIN_ROWS // 2), dtype="str") for c in "ABC"})
        table = as_table(df)                                     # 3 columns: the frame is worth the kernel
        assert seen == [KERNEL_MIN_ROWS] * 3 and table.states("A") == ("x", "y")
        as_table(df[["A", "B"]])                                 # 2 columns: not
        assert seen == [KERNEL_MIN_ROWS] * 3
    assert strings.is_arrow_strings(df["A"]) and not strings.is_arrow_strings(df["A"].astype(object))


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_arrow_kernel_hands_over_past_max_uniques(backend):
    values = [f"v{i}" for i in range(KERNEL_MAX_UNIQUES + 1)]
    assert arrow_codes(_arrow_series(values, True)) is None
    with runtime.backend("strings", backend):
        codes, uniques = string_codes(pd.Series(values * 400, dtype="str"))
    assert uniques == values and np.array_equal(codes, np.tile(np.arange(len(values)), 400))


def test_missing_cells_are_minus_one_on_every_dtype():
    for dtype in STRING_DTYPES:
        s = pd.Series(["b", None, "a", "b"] * (KERNEL_MIN_ROWS // 4 + 1), dtype=object).astype(dtype)
        codes, uniques = string_codes(s)
        assert uniques == ["b", "a"], dtype
        assert np.array_equal(codes[:4], [0, -1, 1, 0]), dtype


@pytest.mark.parametrize("values", [[1, 2], [1.0, None], ["a", 1], [b"a", b"b"], [True, "a"]])
def test_non_string_columns_are_left_to_the_caller(values):
    assert string_codes(pd.Series(values, dtype=object)) is None


# -- the hash-table kernel, seeds and sorting, object addresses: against pandas.factorize ----------------------------


#: any text: empty, NUL, non-ASCII, long (several 8-byte words) and strings sharing 8-byte prefixes
LONG = ["abcdefgh" * 3, "abcdefgh" + "X" * 8 + "abcdefgh", "abcdefgh" * 2 + "abcdefgX", "abcdefgh" * 3 + "x",
        "abcdefghabcdefgh", "日本語のテキスト"]                    # equal first words; a middle or last word differs
texts = st.one_of(st.sampled_from(WORDS + LONG), st.text(max_size=30))


def _expected(values, seeds, sort):
    """The oracle: ``pandas.factorize`` of the values, renumbered by hand (seeds first, the rest sorted or not)."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    rest = [u for u in uniques.tolist() if u not in (seeds or [])]
    new = list(seeds or []) + (sorted(rest) if sort else rest)
    return [-1 if c < 0 else new.index(uniques[c]) for c in codes], new


@SETTINGS
@given(st.lists(st.one_of(texts, st.none()), min_size=1, max_size=80), st.booleans(), st.integers(0, 4),
       st.lists(st.integers(1, 79), max_size=3), st.booleans(), st.data())
def test_kernel_chunked_sliced_seeded_sorted_equals_factorize(values, large, start, cuts, sort, data):
    typ = pa.large_string() if large else pa.string()
    cuts = sorted({c for c in cuts if c < len(values)})
    chunks = [pa.array(values[a:b], typ) for a, b in zip([0, *cuts], [*cuts, len(values)])]
    s = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(chunks, typ))).iloc[min(start, len(values) - 1):]
    present = list(dict.fromkeys(v for v in values if v is not None))
    seeds = data.draw(st.one_of(st.none(), st.lists(st.one_of(st.sampled_from(present or ["q"]), st.text(max_size=12)),
                                                    unique=True, max_size=5)))
    probe, strings.PROBE_ROWS = strings.PROBE_ROWS, data.draw(st.sampled_from([PROBE_ROWS, 1, 3, 10]))
    try:                                               # a short probe: strings met after it, across chunks
        codes, uniques = arrow_codes(s, seeds=seeds, sort=sort)
    finally:
        strings.PROBE_ROWS = probe
    expect_codes, expect_uniques = _expected(s.tolist(), seeds, sort)
    assert uniques == expect_uniques
    assert codes.dtype == np.int64 and codes.tolist() == expect_codes
    with runtime.backend("strings", "numpy"):                       # Arrow's dictionary encoding, renumbered alike
        codes, uniques = string_codes(s, seeds=seeds, sort=sort)
    assert uniques == expect_uniques and np.asarray(codes).tolist() == expect_codes


def test_kernel_sorts_without_renumbering_when_the_probe_saw_every_string(monkeypatch):
    values = ["b", "c", "a"] * (PROBE_ROWS // 3 + 10)
    with runtime.backend("strings", "numba"):
        codes, uniques = arrow_codes(_arrow_series(values, True), sort=True)       # compiled before the patch
        monkeypatch.setattr(strings, "remap_kernel", lambda *a: pytest.fail("renumbered"))
        codes, uniques = arrow_codes(_arrow_series(values, True), sort=True)
    assert uniques == ["a", "b", "c"] and codes.tolist() == [1, 2, 0] * (PROBE_ROWS // 3 + 10)


#: strings of 0, 7, 8, 9, 15, 16 and 17 bytes (the cache takes < 8; 8 and 16 fill words; 9 and 17 spill a byte)
#: over an alphabet with a NUL byte and a 2-byte character, so byte lengths and code points differ
EDGE = st.lists(st.sampled_from(["a", "b", "\x00", "é"]), max_size=17).map("".join).filter(
    lambda t: len(t.encode()) in (0, 7, 8, 9, 15, 16, 17)) | st.sampled_from(["", "\x00" * 7, "a" * 8, "é" * 4 + "a"])


@SETTINGS
@given(st.lists(st.one_of(EDGE, st.none()), min_size=1, max_size=60), st.booleans(), st.booleans(),
       st.integers(1, 70), st.integers(0, 3))
def test_kernel_cache_edges_equal_factorize(values, large, sort, probe, start):
    """The kernel's short-string cache and its in-kernel sort at the 8- and 16-byte edges, NUL bytes, non-ASCII,
    missing cells, a sliced array, int32 and int64 offsets and probes shorter and longer than the column."""
    s = _arrow_series(values, large).iloc[min(start, len(values) - 1):]
    saved, strings.PROBE_ROWS = strings.PROBE_ROWS, probe
    try:
        codes, uniques = arrow_codes(s, sort=sort)
    finally:
        strings.PROBE_ROWS = saved
    expect_codes, expect_uniques = _expected(s.tolist(), None, sort)
    assert uniques == expect_uniques and codes.tolist() == expect_codes


@SETTINGS
@given(st.lists(texts, min_size=1, max_size=60, unique=True), st.data())
def test_kernel_sorts_by_bytes_as_python_sorts(distinct, data):
    """The strings met in the probe are sorted inside the kernel, by their UTF-8 bytes: Python's order of str,
    with no renumbering pass after it (the probe covers the column)."""
    values = data.draw(st.lists(st.sampled_from(distinct), min_size=len(distinct), max_size=120)) + distinct
    calls = []
    real = strings.remap_kernel
    strings.remap_kernel = lambda *a: calls.append(a) or real(*a)
    try:
        codes, uniques = arrow_codes(_arrow_series(values, True), sort=True)
    finally:
        strings.remap_kernel = real
    assert uniques == sorted(distinct) and codes.tolist() == [uniques.index(v) for v in values]
    assert not calls


def test_kernel_probe_goes_to_the_first_non_empty_chunk():
    """An empty leading chunk: the probe (and its sort) runs on the first chunk that has rows; a string met only
    in a later chunk is renumbered after the pass."""
    typ = pa.large_string()
    values = ["b", "c", "a", "b"] * 30
    chunked = pa.chunked_array([pa.array([], typ), pa.array(values, typ), pa.array([], typ), pa.array(["0", "b"], typ)])
    for sort in (False, True):
        codes, uniques = arrow_codes(pd.Series(pd.arrays.ArrowExtensionArray(chunked)), sort=sort)
        expect_codes, expect_uniques = _expected(values + ["0", "b"], None, sort)
        assert uniques == expect_uniques and codes.tolist() == expect_codes


def _cache_slot(text: str) -> int:
    """The slot of the kernel's short-string cache that `text` (< 8 UTF-8 bytes) hashes to (its formula in Python)."""
    raw = text.encode()
    key = int.from_bytes(raw, "little") | len(raw) << 56 | 1 << 59
    return (key * 0x9E3779B97F4A7C15 % 2 ** 64) >> (64 - string_kernel._SHORT_BITS)


def test_kernel_cache_collisions_keep_strings_apart():
    """Strings sharing a cache slot: the one cached first keeps it, the other is found in the hash table each time."""
    seen, pairs = {}, []
    for i in range(20_000):
        text = f"s{i}"
        slot = _cache_slot(text)
        if slot in seen and len(pairs) < 3:
            pairs.append((seen[slot], text))
        seen.setdefault(slot, text)
    assert len(pairs) == 3                                                   # found: the test exercises collisions
    values = [t for a, b in pairs for t in (a, b, b, a)] * 50
    for sort in (False, True):
        codes, uniques = arrow_codes(_arrow_series(values, False), sort=sort)
        expect_codes, expect_uniques = _expected(values, None, sort)
        assert uniques == expect_uniques and codes.tolist() == expect_codes


def test_kernel_strings_at_the_end_of_the_buffer_and_empty_columns():
    for values in (LONG + LONG[::-1], ["abcdefghij", "abcdefghik"] * 2, ["a"], [""], ["", ""], ["abcdefg", "abcdefgh", "b"], ["x" * 9, "x" * 9, "y"], []):
        s = _arrow_series(values, False)
        codes, uniques = arrow_codes(s)
        ref_codes, ref_uniques = reference_codes(np.asarray(values, dtype=object))
        assert uniques == ref_uniques and codes.tolist() == np.asarray(ref_codes).tolist()


def test_kernel_hands_over_when_the_strings_overflow_its_words():
    values = [f"{i:02d}" + "x" * 2000 for i in range(20)]                        # 20 strings of 250 words each
    assert arrow_codes(_arrow_series(values, True)) is None
    with runtime.backend("strings", "numba"):
        codes, uniques = string_codes(pd.Series(values * 2, dtype="str"))
    assert uniques == values and codes.tolist() == list(range(20)) * 2


def test_kernel_refuses_seeds_it_cannot_hold():
    assert arrow_codes(_arrow_series(["a"], False), seeds=["\ud800"]) is None       # a lone surrogate: no UTF-8
    assert arrow_codes(_arrow_series(["a"], False), seeds=[f"s{i}" for i in range(KERNEL_MAX_UNIQUES + 1)]) is None
    assert arrow_codes(_arrow_series(["a"], False), seeds=["a", "a"]) is None
    assert arrow_codes(_arrow_series(["a"], False), seeds=[1]) is None
    with runtime.backend("strings", "numba"):                       # string_codes falls back to Arrow's encoding
        codes, uniques = string_codes(pd.Series(["a", "b"] * KERNEL_MIN_ROWS, dtype="str"), seeds=["b", "\ud800"])
    assert uniques == ["b", "\ud800", "a"] and codes.tolist() == [2, 0] * KERNEL_MIN_ROWS


def _unshared(values):
    """An object array whose equal strings are distinct objects (as a frame converted from Arrow holds)."""
    out = np.empty(len(values), dtype=object)
    out[:] = [None if v is None else "".join(list(v)) for v in values]      # fresh objects (single chars are shared)
    return out


@SETTINGS
@given(st.lists(st.one_of(texts, st.none(), st.just(np.nan), st.just(pd.NA)), min_size=1, max_size=60),
       st.booleans(), st.booleans())
def test_object_addresses_equal_factorize(values, shared, sort):
    if shared:                                                                   # one object per distinct string
        pool = {}
        arr = np.empty(len(values), dtype=object)
        arr[:] = [pool.setdefault(v, v) if isinstance(v, str) else v for v in values]
    else:
        arr = _unshared([v if isinstance(v, str) else None for v in values])
    out = object_codes(arr)
    if all(not isinstance(v, str) for v in arr.tolist()):
        assert out is None and string_codes(pd.Series(arr)) is None
        return
    codes, uniques = out
    expect_codes, expect_uniques = _expected(arr.tolist(), None, False)
    assert uniques == expect_uniques and codes.tolist() == expect_codes
    codes, uniques = string_codes(pd.Series(arr), sort=sort)
    expect_codes, expect_uniques = _expected(arr.tolist(), None, sort)
    assert uniques == expect_uniques and np.asarray(codes).tolist() == expect_codes


def test_object_addresses_give_up_on_unshared_or_mixed_columns():
    values = [f"v{i % 50}" for i in range(PROBE_ROWS * 2)]
    assert object_codes(_unshared(values)) is False                             # every cell its own object
    codes, uniques = string_codes(pd.Series(_unshared(values)))                   # still right, by hashing
    assert uniques == [f"v{i}" for i in range(50)] and codes.tolist() == [i % 50 for i in range(len(values))]
    assert object_codes(np.array(["a", 1, "a"], dtype=object)) is None
    assert object_codes(np.array([None, np.nan], dtype=object)) is None
    assert object_codes(np.array(["a", b"a"], dtype=object)) is None


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("dtype", STRING_DTYPES)
def test_as_table_long_columns_on_both_backends(backend, dtype):
    rng = np.random.default_rng(1)
    raw = rng.choice(["HIGH", "LOW", "NORMAL", "ESOPHAGEAL", None], size=KERNEL_MIN_ROWS + 5).tolist()
    df = _as(pd.DataFrame({"A": raw}, dtype=object), dtype)
    declared = {"A": ("NORMAL", "LOW", "HIGH", "ESOPHAGEAL", "unseen")}
    with runtime.backend("strings", backend):
        found, given_ = as_table(df).column("A"), as_table(df, states=declared).column("A")
        with pytest.raises(cn.ModelError, match=r"column 'A' has the value 'HIGH', which is not among its states"):
            as_table(df, states={"A": ("LOW", "NORMAL", "ESOPHAGEAL")})
    assert found.states == ("ESOPHAGEAL", "HIGH", "LOW", "NORMAL")
    assert found.codes.tolist() == [-1 if v is None else found.states.index(v) for v in raw]
    assert given_.states == declared["A"]
    assert given_.codes.tolist() == [-1 if v is None else declared["A"].index(v) for v in raw]


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("with_missing", [False, True])
def test_narrow_codes_from_the_kernel_equal_the_int64_codes(backend, with_missing):
    rng = np.random.default_rng(2)
    raw = rng.choice(["b", "a", "ccccccccc", None] if with_missing else ["b", "a", "ccccccccc"],
                     size=KERNEL_MIN_ROWS + 3).tolist()
    with runtime.backend("strings", backend):
        col = as_table(pd.DataFrame({"A": pd.Series(raw, dtype="str")})).column("A")
    expect = [-1 if v is None else ["a", "b", "ccccccccc"].index(v) for v in raw]
    assert col.codes.tolist() == expect
    assert col.complete is (not with_missing)
    if with_missing:
        assert col.narrow is None
    else:
        assert col.narrow.dtype == np.uint8 and col.narrow.tolist() == expect and not col.narrow.flags.writeable



@pytest.mark.parametrize("n_cats", [3, 126, 127, 300])
@pytest.mark.parametrize("with_missing", [False, True])
def test_categorical_columns_cached_properties_equal_those_of_the_int64_codes(n_cats, with_missing):
    # pandas' int8 codes (< 127 categories) give `complete` and `narrow` directly; wider codes leave them to
    # the column's own properties: either way they equal what the int64 codes give, and pandas' array is not shared
    rng = np.random.default_rng(n_cats)
    cats = [f"s{i:03d}" for i in range(n_cats)]
    values = rng.choice(cats, size=500).astype(object)
    if with_missing:
        values[rng.choice(500, size=20, replace=False)] = None
    series = pd.Series(pd.Categorical(values, categories=cats))
    col = as_table(pd.DataFrame({"A": series})).column("A")
    fresh = type(col)(col.codes.copy(), col.states)                             # nothing cached yet
    assert col.codes.tolist() == series.cat.codes.astype(int).tolist()
    assert col.complete is fresh.complete is (not with_missing)
    if fresh.narrow is None:
        assert col.narrow is None
    else:
        assert col.narrow.tolist() == fresh.narrow.tolist() and not col.narrow.flags.writeable
        assert not np.shares_memory(col.narrow, np.asarray(series.array.codes))


@pytest.mark.parametrize("kind", ["categorical", "numba", "numpy"])
def test_complete_columns_keep_their_uint8_codes_and_make_int64_codes_only_when_read(kind):
    # the encoders' byte codes are the columns' codes: counting, has_missing, missing and select never widen them
    # (10^5 rows of int64 codes are 800 kB of fresh memory a column); read, the int64 codes equal the bytes
    rng = np.random.default_rng(5)
    df = pd.DataFrame({c: rng.choice(["LOW", "NORMAL", "HIGH"], size=3_001) for c in "ABC"})
    frame = _categorical(df) if kind == "categorical" else df.astype("str")
    with runtime.backend("strings", "numpy" if kind == "categorical" else kind):
        table = as_table(frame)
    counts = family_counts(table, "C", ("A", "B"))
    sel = table.select(np.arange(0, len(df), 3))
    assert not table.has_missing()
    cols = [table.column(c) for c in "ABC"] + [sel.column(c) for c in "ABC"]
    assert all(not col.missing.any() and "codes" not in vars(col) for col in cols)
    for c in "ABC":
        expect = [["HIGH", "LOW", "NORMAL"].index(v) for v in df[c]]
        assert table.column(c).narrow.tolist() == expect and not table.column(c).narrow.flags.writeable
        assert table.column(c).codes.dtype == np.int64 and table.column(c).codes.tolist() == expect
        assert sel.column(c).codes.tolist() == expect[::3]
    wide = Table({c: DiscreteColumn(table.column(c).codes.copy(), table.states(c)) for c in "ABC"}, len(df))
    assert np.array_equal(counts, family_counts(wide, "C", ("A", "B")))
    assert counts.sum() == len(df)


def test_a_column_of_byte_codes_refuses_more_states_than_a_byte_holds():
    with pytest.raises(cn.ModelError, match="257 states do not fit in uint8 codes"):
        DiscreteColumn.of_narrow(np.zeros(3, np.uint8), tuple(range(257)))

# -- as_table: strings read as the categorical of the same values ------------------------------------------------------


frames = st.integers(1, 40).flatmap(lambda n: st.fixed_dictionaries({
    c: st.lists(st.sampled_from(["x", "y", "zz", "ESOPHAGEAL", None]), min_size=n, max_size=n) for c in "ABC"}))


@SETTINGS
@given(frames, st.sampled_from(STRING_DTYPES))
def test_as_table_strings_equal_categoricals(cols, dtype):
    df = pd.DataFrame(cols, dtype=object)
    if df.isna().all().any():
        return                                                                # an all-missing column has no states
    strings, cats = as_table(_as(df, dtype)), as_table(_categorical(df))
    for c in "ABC":
        assert strings.states(c) == cats.states(c)
        assert np.array_equal(strings.column(c).codes, cats.column(c).codes)


@SETTINGS
@given(frames, st.sampled_from(STRING_DTYPES))
def test_as_table_with_declared_states(cols, dtype):
    df = pd.DataFrame(cols, dtype=object)
    declared = {c: ("zz", "y", "ESOPHAGEAL", "x", "unseen") for c in "ABC"}
    strings, cats = as_table(_as(df, dtype), states=declared), as_table(_categorical(df), states=declared)
    for c in "ABC":
        assert strings.states(c) == declared[c]
        expect = [-1 if v is None else declared[c].index(v) for v in cols[c]]
        assert strings.column(c).codes.tolist() == expect
        assert np.array_equal(cats.column(c).codes, strings.column(c).codes)


@pytest.mark.parametrize("dtype", STRING_DTYPES)
def test_unknown_string_names_column_and_value(dtype):
    df = _as(pd.DataFrame({"A": ["x", "y", "w"]}, dtype=object), dtype)
    with pytest.raises(cn.ModelError, match=r"column 'A' has the value 'w', which is not among its states"):
        as_table(df, states={"A": ("x", "y")})


# -- fit, score, structure: identical on strings and categoricals -----------------------------------------------------


def _aligned(model, v, states):
    """CPT of `v` with every axis in the order `states` names."""
    mech = model.mechanisms[v]
    table = mech.table
    for ax, u in enumerate([*getattr(mech, "parents", ()), v]):
        table = np.take(table, [model.states(u).index(s) for s in states[u]], axis=ax)
    return table


@SETTINGS
@given(st.integers(0, 2 ** 31), st.sampled_from(STRING_DTYPES), st.sampled_from(["mle", "bayes"]))
def test_fit_strings_equals_categoricals(seed, dtype, method):
    m = cn.gallery.load("asia")
    df = m.sample(300, seed=seed).to_pandas()                                  # categories: the model's order
    strings = _as(df.astype(str), dtype)
    cats = cn.fit(m.dag, df, method=method)
    declared = cn.fit(m.dag, strings, method=method, states={v: m.states(v) for v in m.nodes})
    for v in m.nodes:
        assert declared.states(v) == m.states(v)
        assert_allclose(declared.mechanisms[v].table, cats.mechanisms[v].table, rtol=0, atol=1e-12)
    if all(df[v].nunique() == len(m.states(v)) for v in m.nodes):           # every state seen: sorted states
        inferred = cn.fit(m.dag, strings, method=method)
        for v in m.nodes:
            assert inferred.states(v) == tuple(sorted(m.states(v)))
            assert_allclose(_aligned(inferred, v, {u: m.states(u) for u in m.nodes}), cats.mechanisms[v].table,
                            rtol=0, atol=1e-12)


def test_fit_with_missing_strings_equals_categoricals():
    m = cn.gallery.load("sprinkler")
    df = m.sample(400, seed=5).to_pandas().astype(object)
    df.iloc[::7, 1] = None                                                     # missing cells: EM
    cats = _categorical(df)
    for dtype in STRING_DTYPES:
        a, b = cn.fit(m.dag, _as(df, dtype), method="em", seed=0), cn.fit(m.dag, cats, method="em", seed=0)
        for v in m.nodes:
            assert a.states(v) == b.states(v)
            assert_allclose(a.mechanisms[v].table, b.mechanisms[v].table, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", STRING_DTYPES)
def test_score_and_structure_strings_equal_categoricals(dtype):
    m = cn.gallery.load("asia")
    df = m.sample(2000, seed=7).to_pandas().astype(object)
    strings, cats = _as(df, dtype), _categorical(df)
    for score in ("bic", "bdeu", "k2"):
        assert cn.score(m.dag, strings, score=score) == cn.score(m.dag, cats, score=score)
    assert set(cn.learn_structure(strings).edges) == set(cn.learn_structure(cats).edges)
    a, b = cn.learn_structure(strings, method="pc"), cn.learn_structure(cats, method="pc")
    assert set(a.directed_edges) == set(b.directed_edges)
    assert {frozenset(e) for e in a.undirected_edges} == {frozenset(e) for e in b.undirected_edges}


# -- the oracle: pgmpy on the same string frame ----------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_fitted_cpts_on_a_string_frame_equal_pgmpy():
    pytest.importorskip("pgmpy")
    from pgmpy.estimators import MaximumLikelihoodEstimator
    from pgmpy.models import DiscreteBayesianNetwork

    m = cn.gallery.load("alarm")
    df = m.sample(KERNEL_MIN_ROWS + 1000, seed=11).to_pandas().astype(str)    # long enough for the kernel
    with runtime.backend("strings", "numba"):
        ours = cn.fit(m.dag, df)
    with runtime.backend("strings", "numpy"):
        other = cn.fit(m.dag, df)
    for v in m.nodes:
        assert other.states(v) == ours.states(v)
        assert np.array_equal(other.mechanisms[v].table, ours.mechanisms[v].table)
    ref = MaximumLikelihoodEstimator(DiscreteBayesianNetwork(list(m.dag.edges)), df)
    for v in m.nodes:
        cpd = ref.estimate_cpd(v)
        parents = list(ours.mechanisms[v].parents) if hasattr(ours.mechanisms[v], "parents") else []
        vals = np.moveaxis(cpd.values, 0, -1)                                   # (*pgmpy parents, card)
        names = list(cpd.variables)[1:]
        vals = vals.transpose([*[names.index(p) for p in parents], len(parents)])
        for ax, u in enumerate([*parents, v]):
            vals = np.take(vals, [cpd.state_names[u].index(s) for s in ours.states(u)], axis=ax)
        seen = ours.mechanisms[v].table if parents else ours.mechanisms[v].probs
        rows = np.isfinite(vals).all(axis=-1)                                   # pgmpy: unseen parent rows uniform
        assert_allclose(seen[rows], vals[rows], rtol=0, atol=1e-12)


# -- queries and predictions with DataFrame evidence -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", STRING_DTYPES)
def test_query_and_predict_strings_equal_categoricals(dtype):
    m = cn.gallery.load("asia")
    df = m.sample(500, seed=3).to_pandas().drop(columns=["dysp"]).astype(object)
    df.iloc[::5, 0] = None
    strings = _as(df, dtype)
    cats = df.astype(pd.CategoricalDtype(["no", "yes"]))                     # declared order, as the model's
    named = {c: df[c].to_numpy(dtype=object) for c in df.columns}
    a, b = m.query("dysp", evidence=strings), m.query("dysp", evidence=cats)
    assert_allclose(a.probs, b.probs, rtol=0, atol=1e-12)
    rows = ~df.isna().any(axis=1).to_numpy()
    c = m.query("dysp", evidence={k: v[rows] for k, v in named.items()})     # the dict front door, complete rows
    assert_allclose(a.probs[rows], c.probs, rtol=0, atol=1e-12)
    pa_, pb = m.predict(strings), m.predict(cats)
    for col in pa_.columns:
        assert pa_[col].astype(object).tolist() == pb[col].astype(object).tolist()


@pytest.mark.parametrize("dtype", STRING_DTYPES)
def test_query_unknown_string_names_column_row_and_value(dtype):
    m = cn.gallery.load("sprinkler")
    df = _as(pd.DataFrame({"Rain": ["yes", "no", "maybe"]}, dtype=object), dtype)
    with pytest.raises(cn.EvidenceError, match=r"column 'Rain', row 2 .*no state 'maybe'"):
        m.query("Wet", evidence=df)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_query_reads_long_string_frames_on_both_backends(backend):
    m = cn.gallery.load("sprinkler")
    df = m.sample(KERNEL_MIN_ROWS + 3, seed=2).to_pandas().drop(columns=["Wet"])
    with runtime.backend("strings", backend):
        a = m.query("Wet", evidence=df.astype(str))
    b = m.query("Wet", evidence=df)
    assert_allclose(a.probs, b.probs, rtol=0, atol=1e-12)


# -- Dask partitions -------------------------------------------------------------------------------------------------


def test_dask_string_partitions_equal_pandas():
    dd = pytest.importorskip("dask.dataframe")
    m = cn.gallery.load("asia")
    df = m.sample(3000, seed=9).to_pandas().astype(str)
    ddf = dd.from_pandas(df, npartitions=4)
    a, b = cn.fit(m.dag, ddf), cn.fit(m.dag, df)
    for v in m.nodes:
        assert a.states(v) == b.states(v)
        assert_allclose(a.mechanisms[v].table, b.mechanisms[v].table, rtol=0, atol=1e-12)
    assert cn.score(m.dag, ddf) == pytest.approx(cn.score(m.dag, df), rel=1e-12)
    q = m.query("dysp", evidence=ddf.drop(columns=["dysp"])).compute()
    assert_allclose(q.to_numpy(), m.query("dysp", evidence=df.drop(columns=["dysp"])).probs, rtol=0, atol=1e-12)


# -- effects from data (cn.estimate) ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", STRING_DTYPES)
@pytest.mark.parametrize("method", ["regression", "aipw"])
def test_estimate_strings_equal_categoricals(dtype, method):
    rng = np.random.default_rng(4)
    n = 3000
    z = rng.choice(["low", "mid", "high"], size=n)                                  # a categorical covariate
    t = np.where(rng.random(n) < np.where(z == "high", 0.7, 0.3), "treated", "control")
    y = 2.0 * (t == "treated") + (z == "mid") - 0.5 * (z == "low") + rng.normal(size=n)
    base = pd.DataFrame({"Z": z, "T": t, "Y": y})
    g = "Z -> T; Z -> Y; T -> Y"
    strings = base.astype({"Z": dtype, "T": dtype})
    cats = base.astype({"Z": "category", "T": "category"})
    a = cn.estimate(g, strings, "T", "Y", method=method, treated="treated", control="control")
    b = cn.estimate(g, cats, "T", "Y", method=method, treated="treated", control="control")
    assert a.value == pytest.approx(b.value, rel=1e-12, abs=1e-12)
    assert a.value == pytest.approx(2.0, abs=0.2)                                    # the true effect
