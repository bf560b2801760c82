"""Bounded reading and atomic writing of model files (issue 10, files): regressions."""

import gzip
import os
import time
import tracemalloc

import pytest

import causalnet as cn
from causalnet import limits
from causalnet.errors import (
    CausalNetError,
    ModelError,
    ModelFileNotFoundError,
    ModelFilePermissionError,
    ResourceError,
)
from causalnet.io import files
from causalnet.io.bif import read_bif, write_bif
from causalnet.io.json import load_json, nesting_depth, save_json
from causalnet.io.xmlbif import read_xmlbif, write_xmlbif

READERS = [read_bif, read_xmlbif, load_json]
WRITERS = [("m.json", save_json), ("m.bif", write_bif), ("m.bif.gz", write_bif), ("m.xml", write_xmlbif)]


def _quick(fn, *args):
    """Run fn, return (exception, seconds, peak MiB of Python allocations)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        err = e
    else:  # pragma: no cover - the tests expect an error
        err = None
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return err, dt, peak


# -- missing and unreadable files ------------------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
def test_missing_file_is_file_not_found_naming_the_path(reader, tmp_path):
    path = tmp_path / "nope.model"
    with pytest.raises(ModelFileNotFoundError, match="nope.model") as info:
        reader(path)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, CausalNetError)


@pytest.mark.parametrize("reader", READERS)
def test_unreadable_file_is_permission_error(reader, tmp_path, monkeypatch):
    path = tmp_path / "locked.model"
    path.write_text("{}")

    def deny(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files, "open", deny, raising=False)      # root ignores chmod 000
    with pytest.raises(ModelFilePermissionError, match="locked.model") as info:
        reader(path)
    assert isinstance(info.value, PermissionError)


@pytest.mark.parametrize("reader", READERS)
def test_a_directory_is_a_model_error(reader, tmp_path):
    with pytest.raises(ModelError, match="directory"):
        reader(tmp_path)


def test_reading_from_a_missing_folder_and_writing_into_one(tmp_path, sprinkler):
    with pytest.raises(ModelFileNotFoundError):
        save_json(sprinkler, tmp_path / "no" / "such" / "m.json")
    assert not (tmp_path / "no").exists()


# -- hostile content: each a typed error, fast, in bounded memory ------------------------------------


def _bif_with_default(n_parents: int) -> str:
    parts = [f"variable P{i} {{ type discrete [ 2 ] {{ a, b }}; }}" for i in range(n_parents)]
    parts.append("variable C { type discrete [ 2 ] { x, y }; }")
    parts += [f"probability ( P{i} ) {{ table 0.5, 0.5; }}" for i in range(n_parents)]
    given = ", ".join(f"P{i}" for i in range(n_parents))
    parts.append(f"probability ( C | {given} ) {{ default 0.5, 0.5; }}")
    return "\n".join(parts) + "\n"


def test_bif_default_row_of_16_gib_is_a_resource_error():
    text = _bif_with_default(30)                     # 2**30 configurations x 2 states x 8 bytes = 16 GiB
    err, dt, peak = _quick(read_bif, text)
    assert isinstance(err, ResourceError) and "max_states" in str(err) and "'C'" in str(err)
    assert dt < 5 and peak < 50


def test_bif_missing_rows_of_a_huge_table_are_refused_before_allocating():
    text = _bif_with_default(30).replace("default 0.5, 0.5;", "(a, " + "a, " * 28 + "a) 0.5, 0.5;")
    err, _, peak = _quick(read_bif, text)
    assert isinstance(err, ResourceError) and peak < 50


def test_bif_default_row_within_the_limit_still_works():
    m = read_bif(_bif_with_default(3))
    assert m.mechanisms["C"].table.shape == (2, 2, 2, 2)
    with limits.override(max_states=8), pytest.raises(ResourceError, match="max_states=8"):
        read_bif(_bif_with_default(3))


def test_bif_declaring_too_many_states_is_refused():
    with limits.override(max_states=3), pytest.raises(ResourceError, match="states of 'A'"):
        read_bif("variable A { type discrete [ 4 ] { a, b, c, d }; }\nprobability ( A ) { table 1, 0, 0, 0; }")


def _gzip_bomb(n_members: int = 20, member_mib: int = 16) -> bytes:
    one = gzip.compress(b" " * (member_mib << 20), compresslevel=9)   # ~16 KiB each
    return one * n_members                                             # 320 MiB unpacked


@pytest.mark.parametrize("reader", READERS)
def test_gzip_bomb_stops_at_max_file_bytes(reader, tmp_path):
    path = tmp_path / "bomb.gz"
    path.write_bytes(_gzip_bomb())
    err, dt, peak = _quick(reader, path)
    assert isinstance(err, ResourceError) and "max_file_bytes" in str(err)
    assert peak < limits.get("max_file_bytes") / 2**20 + 64


def test_gzip_bomb_as_bytes_and_a_lower_limit():
    with limits.override(max_file_bytes=2**20), pytest.raises(ResourceError, match="decompressed"):
        read_bif(_gzip_bomb(1, 4))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("reader", READERS)
def test_dev_zero_is_refused_at_once(reader):
    err, dt, peak = _quick(reader, "/dev/zero")
    assert isinstance(err, ModelError) and "binary" in str(err)
    assert dt < 2 and peak < 16


def test_endless_text_stops_at_max_file_bytes(tmp_path):
    path = tmp_path / "big.bif"
    path.write_bytes(b"// comment\n" * 200_000)                      # 2.2 MB of text
    with limits.override(max_file_bytes=2**20), pytest.raises(ResourceError, match="max_file_bytes"):
        read_bif(path)


def test_deep_json_is_a_model_error_naming_the_limit(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    err, dt, _ = _quick(load_json, path)
    assert isinstance(err, ModelError) and "max_nesting=64" in str(err) and "deep.json" in str(err)
    assert dt < 5


def test_nesting_depth_ignores_brackets_in_strings():
    assert nesting_depth('{"a": "[[[[{{{{", "b": [[1]]}') == 3
    assert nesting_depth('"\\"[[[["') == 0
    assert nesting_depth("[" * 5000 + "]" * 5000, chunk=7) == 5000


@pytest.mark.parametrize("reader", READERS)
def test_binary_file_is_a_model_error(reader, tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(ModelError, match="binary"):
        reader(path)


@pytest.mark.parametrize("reader", [read_bif, read_xmlbif])
def test_truncated_gzip_is_a_model_error(reader, tmp_path):
    path = tmp_path / "cut.bif.gz"
    path.write_bytes(gzip.compress(b"variable A { type discrete [ 2 ] { a, b }; }\n" * 50)[:-12])
    with pytest.raises(ModelError, match="not a valid gzip file"):
        reader(path)


# -- atomic writers ----------------------------------------------------------------------------------


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("name,writer", WRITERS)
def test_failed_serialisation_leaves_the_old_file(name, writer, tmp_path, sprinkler):
    path = tmp_path / name
    writer(sprinkler, path)
    before = path.read_bytes()
    bad = cn.CausalModel({**sprinkler.mechanisms, "Z": cn.Function(["Wet"], lambda w: w)}) \
        if name.endswith(".json") else cn.CausalModel({"Rain": sprinkler.mechanisms["Rain"],
                                                       "X": cn.LinearGaussian(["Rain"], [1.0])})
    with pytest.raises(ModelError):
        writer(bad, path)
    assert path.read_bytes() == before
    assert _listing(tmp_path) == [name]


@pytest.mark.parametrize("name,writer", WRITERS)
def test_failure_midway_through_the_write_leaves_the_old_file(name, writer, tmp_path, sprinkler, monkeypatch):
    path = tmp_path / name
    writer(sprinkler, path)
    before = path.read_bytes()
    real_fdopen = os.fdopen

    class HalfWriter:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise OSError(28, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.f, name)

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="No space left"):
        writer(sprinkler, path)
    assert path.read_bytes() == before
    assert _listing(tmp_path) == [name]


@pytest.mark.parametrize("name,writer", WRITERS)
def test_failure_before_the_rename_leaves_no_new_file(name, writer, tmp_path, sprinkler, monkeypatch):
    path = tmp_path / name

    def broken_replace(src, dst):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        writer(sprinkler, path)
    assert _listing(tmp_path) == []


def test_atomic_write_keeps_permissions_and_replaces(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("old")
    path.chmod(0o640)
    files.atomic_write(path, "new")
    assert path.read_text() == "new" and (path.stat().st_mode & 0o777) == 0o640
    files.atomic_write(tmp_path / "g.txt", b"\x00bytes")
    assert (tmp_path / "g.txt").read_bytes() == b"\x00bytes"


def test_atomic_write_permission_denied_is_typed(tmp_path, monkeypatch):
    import tempfile

    def deny(**kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", deny)
    with pytest.raises(ModelFilePermissionError):
        files.atomic_write(tmp_path / "x.txt", "x")


def test_gzip_writes_are_reproducible(tmp_path, sprinkler):
    write_bif(sprinkler, tmp_path / "a.bif.gz")
    time.sleep(0.01)
    write_bif(sprinkler, tmp_path / "b.bif.gz")
    assert (tmp_path / "a.bif.gz").read_bytes() == (tmp_path / "b.bif.gz").read_bytes()
