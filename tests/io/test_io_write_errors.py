"""Every file writer under a failing file system (issue 31): typed errors naming the path, old files whole.

The writers all go through :func:`causalnet.io.files.atomic_fill`. Three failures
are provoked for each of them:

- the parent "folder" is a regular file (``NotADirectoryError`` from the OS);
- the process's file-size limit (``RLIMIT_FSIZE``, with ``SIGXFSZ`` ignored) stops the
  write part-way (``EFBIG``), in a subprocess so that the limit does not touch pytest;
- permission is denied on the folder or on the rename (the message names the file).

Every call goes through ``conftest.guarded`` with ``files=``: a typed error, the old
file byte for byte, and no temporary left beside it.
"""

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import causalnet as cn
from causalnet.errors import (
    CausalNetError,
    ModelError,
    ModelFileNotFoundError,
    ModelFilePermissionError,
    ModelFileWriteError,
    RenderError,
)
from causalnet.io import files
from tests.conftest import guarded, make_sprinkler

ROOT = Path(__file__).resolve().parents[2]


def _hmm():
    return cn.HMM(2, "categorical", n_symbols=3, startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.2, 0.8]],
                  emissionprob=[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])


def _head():
    from causalnet.models.causal_head import CausalHead

    return CausalHead.initialise(vocab_size=5, hidden=4, num_id=4, seed=0)


# name -> (file name, write(path)); each writes a model of a few hundred bytes or more
WRITERS = {
    "save_json": ("m.json", lambda p: cn.save_json(make_sprinkler(), p)),
    "write_bif": ("m.bif", lambda p: cn.write_bif(make_sprinkler(), p)),
    "write_bif.gz": ("m.bif.gz", lambda p: cn.write_bif(make_sprinkler(), p)),
    "write_xmlbif": ("m.xml", lambda p: cn.write_xmlbif(make_sprinkler(), p)),
    "HMM.save": ("h.json", lambda p: _hmm().save(p)),
    "CausalHead.save": ("c.json", lambda p: _head().save(p)),
    "render(dot)": ("g.dot", lambda p: cn.render(cn.DAG([(f"V{i}", f"V{i + 1}") for i in range(30)]), p)),
    "atomic_write": ("t.txt", lambda p: files.atomic_write(p, "x" * 5000)),
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_parent_that_is_a_file_is_a_typed_error_naming_the_path(name, tmp_path):
    fname, write = WRITERS[name]
    blocker = tmp_path / "notadir"
    blocker.write_text("I am a file")
    target = blocker / fname
    err = guarded(write, target, files=[blocker])
    assert isinstance(err, CausalNetError), err
    assert isinstance(err, (ModelFileNotFoundError, RenderError))
    assert str(blocker) in str(err)
    assert blocker.read_text() == "I am a file"


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_deeper_missing_parent_under_a_file_is_typed(name, tmp_path):
    fname, write = WRITERS[name]
    blocker = tmp_path / "f"
    blocker.write_text("x")
    err = guarded(write, blocker / "sub" / fname, files=[blocker])
    assert isinstance(err, CausalNetError) and str(blocker) in str(err)


_EFBIG_SCRIPT = textwrap.dedent("""
    import json, os, resource, signal, sys
    sys.path.insert(0, {root!r})
    from tests.io.test_io_write_errors import WRITERS
    from tests.conftest import guarded
    from pathlib import Path

    folder = Path(sys.argv[1])
    out = {{}}
    for name, (fname, write) in WRITERS.items():
        path = folder / name.replace("(", "_").replace(")", "_") / fname
        path.parent.mkdir()
        write(path)                                   # a first, complete version
        out[name] = {{"size": path.stat().st_size}}
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)     # EFBIG as an error, not a signal
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
    for name, (fname, write) in WRITERS.items():
        path = folder / name.replace("(", "_").replace(")", "_") / fname
        before = path.read_bytes()
        err = guarded(write, path, files=[path])
        out[name].update(type=type(err).__name__, message=str(err), errno=getattr(err, "errno", None),
                         oserror=isinstance(err, OSError), intact=path.read_bytes() == before,
                         listing=sorted(os.listdir(path.parent)))
    print(json.dumps(out))
""")


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_the_file_size_limit_is_a_typed_error_and_the_old_file_stays_whole(tmp_path):
    script = tmp_path / "efbig.py"
    script.write_text(_EFBIG_SCRIPT.format(root=str(ROOT)))
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script), str(work)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(report) == set(WRITERS)
    for name, r in report.items():
        assert r["size"] > 64, (name, r)              # the limit really cuts the write short
        assert r["intact"], (name, r)
        if name == "render(dot)":
            assert r["type"] == "RenderError", (name, r)
        else:
            assert r["type"] == "ModelFileWriteError" and r["oserror"] and r["errno"] == errno.EFBIG, (name, r)
            assert "file-size limit" in r["message"], (name, r)
        stem = WRITERS[name][0].split(".")[0]                      # m.json, or the arrays m.npz beside it
        assert f"/{stem}." in r["message"], (name, r)              # names the file
        assert not [f for f in r["listing"] if f.endswith(".tmp")], (name, r)


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_permission_denied_names_the_file_not_only_its_folder(name, tmp_path, monkeypatch):
    import tempfile

    fname, write = WRITERS[name]
    target = tmp_path / fname

    def deny(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", deny)   # root ignores chmod
    err = guarded(write, target, files=[target])
    assert isinstance(err, (ModelFilePermissionError, RenderError)), err
    assert f"{tmp_path}/{fname.split('.')[0]}." in str(err)          # the file (or its arrays beside it)
    if not isinstance(err, RenderError):
        assert isinstance(err, PermissionError)


def test_permission_denied_on_the_rename_names_the_file(tmp_path, monkeypatch):
    target = tmp_path / "m.json"
    cn.save_json(make_sprinkler(), target)

    def deny(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", deny)
    err = guarded(cn.save_json, make_sprinkler().do({"Rain": "yes"}), target, files=[target])
    assert isinstance(err, ModelFilePermissionError) and "m.json" in str(err) and "not writable" in str(err)


def test_a_full_disk_is_a_typed_oserror_with_its_errno(tmp_path, monkeypatch):
    target = tmp_path / "m.bif"
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.f, name)

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    err = guarded(cn.write_bif, make_sprinkler(), target, files=[target])
    assert isinstance(err, ModelFileWriteError) and isinstance(err, OSError)
    assert err.errno == errno.ENOSPC and err.filename == str(target)
    assert "m.bif" in str(err) and "No space left" in str(err)


def test_writing_over_a_directory_is_a_model_error(tmp_path):
    (tmp_path / "m.json").mkdir()
    err = guarded(cn.save_json, make_sprinkler(), tmp_path / "m.json")
    assert isinstance(err, ModelError) and "directory" in str(err)


def test_atomic_fill_passes_the_fillers_own_errors_through_and_cleans_up(tmp_path):
    target = tmp_path / "x.txt"
    target.write_text("old")

    def fill(f, tmp):
        f.write(b"half")
        raise ModelError("the content could not be made")

    with pytest.raises(ModelError, match="could not be made"):
        files.atomic_fill(target, fill)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]
    files.atomic_fill(target, lambda f, tmp: f.write(np.arange(3, dtype=np.uint8).tobytes()))
    assert target.read_bytes() == b"\x00\x01\x02"
