"""Model files on disk: bounded reading and atomic writing, shared by every reader and writer.

Reading a file that a user names is reading untrusted input. :func:`read_model_bytes`
therefore

- turns a missing or unreadable path into :class:`~causalnet.errors.ModelFileNotFoundError`
  or :class:`~causalnet.errors.ModelFilePermissionError` (also the builtin
  ``FileNotFoundError`` / ``PermissionError``), naming the path;
- reads in chunks of :data:`CHUNK` bytes and stops past ``limits.get("max_file_bytes")``
  with a :class:`~causalnet.errors.ResourceError` — ``/dev/zero`` or a named pipe that never
  ends cannot exhaust memory;
- decompresses gzip (recognised by its magic bytes) through a capped stream, so a gzip
  bomb stops at the same limit;
- refuses binary content (a NUL byte: no text model format holds one) with a
  :class:`~causalnet.errors.ModelError` after the first chunk.

Writing is atomic (:func:`atomic_write`): the bytes go to a temporary file in the target's
folder, which is flushed, synced and then renamed over the target with :func:`os.replace`.
A failure at any point leaves the old file, or none, never half of one.

Examples
--------
>>> import tempfile, pathlib
>>> from causalnet.io.files import atomic_write, read_model_bytes
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> atomic_write(d / "m.txt", "hello\\n")
>>> read_model_bytes(d / "m.txt")
b'hello\\n'
>>> atomic_write(d / "m.txt.gz", "hello\\n", compress=True)
>>> read_model_bytes(d / "m.txt.gz")
b'hello\\n'
"""

from __future__ import annotations

import errno
import os
import re
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .. import limits
from ..errors import (
    CausalNetError,
    ModelError,
    ModelFileNotFoundError,
    ModelFilePermissionError,
    ModelFileWriteError,
    ResourceError,
)

__all__ = ["CHUNK", "GZIP_MAGIC", "read_model_bytes", "read_source", "decompress", "decode_text", "atomic_write", "atomic_fill",
           "as_path", "parse", "nesting_depth"]

#: Bytes read (or decompressed) per step.
CHUNK = 1 << 20
#: The first two bytes of a gzip stream.
GZIP_MAGIC = b"\x1f\x8b"


def as_path(source: Any, what: str = "a model file") -> Path:
    """`source` as a :class:`~pathlib.Path`; anything but ``str`` / ``os.PathLike`` is a ModelError."""
    if isinstance(source, (str, os.PathLike)):
        return Path(source)
    raise ModelError(f"expected the path of {what}, got {type(source).__name__}")


def _open(path: Path) -> BinaryIO:
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the caller's with-block
    except FileNotFoundError:
        raise ModelFileNotFoundError(f"no such file: {str(path)!r}") from None
    except PermissionError:
        raise ModelFilePermissionError(f"permission denied: cannot read {str(path)!r}") from None
    except IsADirectoryError:
        raise ModelError(f"{str(path)!r} is a directory, not a model file") from None
    except (OSError, ValueError) as e:  # e.g. a name too long, an embedded NUL
        raise ModelFileNotFoundError(f"cannot open {str(path)!r}: {e}") from None
    try:
        mode = os.fstat(f.fileno()).st_mode
    except OSError:  # pragma: no cover - fstat on an open file
        mode = 0
    if stat.S_ISDIR(mode):  # pragma: no cover - open() refuses directories on POSIX
        f.close()
        raise ModelError(f"{str(path)!r} is a directory, not a model file")
    return f


def _too_big(name: str, what: str) -> ResourceError:
    limit = limits.get("max_file_bytes")
    return ResourceError(f"{name}: {what} exceeds the limit max_file_bytes={limit} bytes; raise it with "
                         f"causalnet.limits.set(max_file_bytes=...) or causalnet.limits.override(...)")


def _binary(name: str) -> ModelError:
    return ModelError(f"{name}: binary content (a NUL byte), not a text model file")


def read_model_bytes(path: str | os.PathLike, *, text: bool = True) -> bytes:
    """The (decompressed) bytes of the model file at `path`, read within the limits.

    Parameters
    ----------
    path : str or path-like
    text : bool, default True
        Refuse content holding a NUL byte (every text model format).

    Raises
    ------
    ModelFileNotFoundError
        If `path` does not exist (also ``FileNotFoundError``).
    ModelFilePermissionError
        If it cannot be read (also ``PermissionError``).
    ResourceError
        If it (or its decompressed content) is larger than ``max_file_bytes``.
    ModelError
        If it is a directory, binary, or broken gzip.
    """
    path = as_path(path)
    name = str(path)
    limit = limits.get("max_file_bytes")
    chunks: list[bytes] = []
    size = 0
    with _open(path) as f:
        while True:
            try:
                chunk = f.read(CHUNK)
            except OSError as e:
                raise ModelError(f"cannot read {name!r}: {e}") from None
            if not chunk:
                break
            if not chunks and text and chunk[:2] != GZIP_MAGIC and b"\0" in chunk:
                raise _binary(name)
            size += len(chunk)
            if size > limit:
                raise _too_big(name, "the file")
            chunks.append(chunk)
    data = b"".join(chunks)
    if data[:2] == GZIP_MAGIC:
        data = decompress(data, name=name)
    if text and b"\0" in data:
        raise _binary(name)
    return data


def decompress(data: bytes, *, name: str = "<bytes>") -> bytes:
    """Gunzip `data` (one or more members) without ever holding more than ``max_file_bytes``.

    Raises
    ------
    ResourceError
        If the decompressed content exceeds ``max_file_bytes`` (a gzip bomb).
    ModelError
        If `data` is not valid gzip.
    """
    limit = limits.get("max_file_bytes")
    out: list[bytes] = []
    size = 0
    rest = bytes(data)
    try:
        while rest:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)                  # one gzip member
            pending = rest
            while pending:
                piece = d.decompress(pending, min(CHUNK, limit + 1 - size))
                size += len(piece)
                if size > limit:
                    raise _too_big(name, "the decompressed content")
                out.append(piece)
                pending = d.unconsumed_tail
                if d.eof:
                    break
            if not d.eof:
                raise ModelError(f"{name}: not a valid gzip file (truncated)")
            rest = d.unused_data.lstrip(b"\0")
    except zlib.error as e:
        raise ModelError(f"{name}: not a valid gzip file ({e})") from None
    return b"".join(out)


def decode_text(data: bytes, name: str, *, fallback: str | None = None) -> str:
    """`data` as UTF-8 text (or `fallback` encoding); otherwise a ModelError naming `name`."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if fallback is not None:
            return data.decode(fallback)
        raise ModelError(f"{name}: not UTF-8 text ({e})") from None


def read_source(source: Any, looks_like_text: Callable[[str], bool], *,
                fallback: str | None = "latin-1") -> tuple[str, str]:
    """``(text, name)`` of a model given as a path, as its text, or as its bytes.

    A ``str`` for which ``looks_like_text(source)`` holds is the text itself; other
    strings and path-likes are paths, read by :func:`read_model_bytes`. Bytes are
    gunzipped when they start with the gzip magic. Every form is held to
    ``max_file_bytes`` and refused when binary. `name` is the file's name (for
    messages), ``"<string>"`` or ``"<bytes>"``.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > limits.get("max_file_bytes"):
            raise _too_big("<bytes>", "the data")
        if data[:2] == GZIP_MAGIC:
            data = decompress(data, name="<bytes>")
        if b"\0" in data:
            raise _binary("<bytes>")
        return decode_text(data, "<bytes>", fallback=fallback), "<bytes>"
    if isinstance(source, str) and looks_like_text(source):
        if len(source) > limits.get("max_file_bytes"):
            raise _too_big("<string>", "the text")
        if "\0" in source:
            raise _binary("<string>")
        return source, "<string>"
    if not isinstance(source, (str, os.PathLike)):
        raise ModelError(f"expected a path, a text or bytes, got {type(source).__name__}")
    path = Path(source)
    return decode_text(read_model_bytes(path), path.name, fallback=fallback), path.name


def atomic_write(path: str | os.PathLike, data: str | bytes, *, compress: bool = False) -> None:
    """Write `data` to `path` atomically: a temporary file in the same folder, then :func:`os.replace`.

    Parameters
    ----------
    path : str or path-like
    data : str or bytes
        Text is written as UTF-8.
    compress : bool, default False
        Gzip the bytes first (reproducibly: no timestamp).

    Raises
    ------
    ModelFileNotFoundError
        If the folder does not exist, or is a regular file (also ``FileNotFoundError``).
    ModelFilePermissionError
        If the file or its folder is not writable (also ``PermissionError``).
    ModelFileWriteError
        If the write stops part-way: the file-size limit (``EFBIG``), a full disk, an I/O
        error (also ``OSError``, with its ``errno``). The old file is left whole.
    ModelError
        If `path` is a directory.
    """
    import gzip  # stdlib modules a reader never needs load with the first write

    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if compress:
        raw = gzip.compress(raw, mtime=0)

    def fill(f: BinaryIO, tmp: str) -> None:
        f.write(raw)

    atomic_fill(path, fill)


def atomic_fill(path: str | os.PathLike, fill: Callable[[BinaryIO, str], None], *, suffix: str = ".tmp") -> Path:
    """Write `path` atomically through ``fill(f, tmp)``: `f` a binary file open on the temporary file `tmp`.

    The one atomic-write primitive of causalnet: :func:`atomic_write` (every model and
    estimator writer) and :func:`causalnet.render` go through it. The temporary file
    (``.{name}.XXXX{suffix}`` in the target's folder) is flushed, synced, given the old
    file's permissions (or the umask's default) and renamed over `path` with
    :func:`os.replace`; on any failure it is removed and the old file is left whole.
    ``fill`` may also write the temporary file by its name `tmp` (e.g. a subprocess does).

    Parameters
    ----------
    path : str or path-like
    fill : callable ``fill(f, tmp) -> None``
        Writes the content. Exceptions it raises propagate unchanged (after clean-up),
        except ``OSError``, which becomes one of the typed errors below.
    suffix : str, default ".tmp"

    Returns
    -------
    pathlib.Path
        `path`.

    Raises
    ------
    ModelFileNotFoundError, ModelFilePermissionError, ModelFileWriteError, ModelError
        As :func:`atomic_write`; each names `path`.
    """
    import tempfile  # loaded by the first write: a reader never needs it

    path = as_path(path, "the file to write")
    name = str(path)
    folder = path.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=suffix)
    except OSError as e:
        raise _write_error(e, path, stage="folder") from None
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f, tmp)
            f.flush()
            os.fsync(f.fileno())
        _keep_mode(path, tmp)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and not isinstance(e, CausalNetError):
            raise _write_error(e, path, stage="file") from None
        raise
    return Path(name)


def _write_error(e: OSError, path: Path, *, stage: str) -> CausalNetError:
    """The typed error for an ``OSError`` met while writing `path` (naming it)."""
    name, folder = str(path), str(path.parent)
    why = e.strerror or str(e)
    if isinstance(e, FileNotFoundError):
        return ModelFileNotFoundError(f"cannot write {name!r}: no such folder {folder!r}")
    if isinstance(e, NotADirectoryError):
        return ModelFileNotFoundError(f"cannot write {name!r}: {_not_a_folder(path)} is a file, not a folder")
    if isinstance(e, PermissionError):
        where = (f"its folder {folder!r} is not writable" if stage == "folder"
                 else f"the file, or its folder {folder!r}, is not writable")
        return ModelFilePermissionError(f"permission denied: cannot write {name!r} ({where})")
    if isinstance(e, IsADirectoryError):
        return ModelError(f"cannot write {name!r}: it is a directory")
    if e.errno == errno.EFBIG:
        why = "the file would exceed the file-size limit (ulimit -f / RLIMIT_FSIZE, or the filesystem's)"
    err = ModelFileWriteError(f"cannot write {name!r}: {why}; the old file, if any, is left unchanged")
    err.errno, err.filename = e.errno, name          # str(err) stays the message: no strerror
    return err


def _not_a_folder(path: Path) -> str:
    """The first ancestor of `path` that exists and is not a directory, quoted (for messages)."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return repr(str(parent))
    return repr(str(path.parent))


def _keep_mode(path: Path, tmp: str) -> None:
    """Give the new file the old file's permissions, or the umask's default for a new file."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(tmp, mode)


# -- JSON documents: bounded depth, no duplicate keys, no NaN ---------------------------


class _DuplicateKey(Exception):
    pass


def _pairs(pairs: list) -> dict:
    d = {}
    for k, v in pairs:
        if k in d:
            raise _DuplicateKey(k)
        d[k] = v
    return d


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


_STRING = r'"(?:[^"\\]|\\.)*"'            # a JSON string; compiled by the first use (re caches it)
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


def nesting_depth(text: str, *, chunk: int = 1 << 20) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON `text` (brackets inside strings ignored).

    Linear time, in chunks of `chunk` characters (bounded memory), and without recursion,
    so it is safe on hostile input; run before :func:`json.loads`, whose recursion
    a 10^5-deep document would exhaust.

    >>> nesting_depth('{"a": [[1, 2], "]]]"]}')
    3
    """
    if text.count("[") + text.count("{") <= 1:
        return int("[" in text or "{" in text)
    stripped = re.sub(_STRING, '""', text, flags=re.S)
    depth = deepest = 0
    for start in range(0, len(stripped), chunk):
        b = np.frombuffer(stripped[start:start + chunk].encode("utf-8", "replace"), dtype=np.uint8)
        step = np.isin(b, _OPEN).astype(np.int32) - np.isin(b, _CLOSE).astype(np.int32)
        if not step.any():
            continue
        run = depth + np.cumsum(step)                                   # depth after each character
        deepest = max(deepest, int(run.max()))
        depth = int(run[-1])
    return deepest


def parse(text: str) -> Any:
    """The JSON document in `text`, read by the rules of model files.

    No duplicate keys, no ``NaN``/``Infinity``, nesting at most ``causalnet.limits``
    ``max_nesting`` deep (checked before parsing, so a 10^5-deep document costs a
    linear scan, not a crash).

    Raises
    ------
    ModelError
        Naming the line and column of malformed JSON, the duplicated key, or the depth.
    """
    import json  # loaded by the first JSON read: a BIF or CSV reader never needs it

    cap = limits.get("max_nesting")
    depth = nesting_depth(text)
    if depth > cap:
        raise ModelError(f"malformed model file: JSON nested {depth} levels deep, over the limit max_nesting={cap}; "
                         f"raise it with causalnet.limits.set(max_nesting=...)")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        if not text.strip():
            raise ModelError("the file is empty; expected a causalnet model (JSON)") from None
        raise ModelError(f"line {e.lineno}, column {e.colno}: malformed JSON: {e.msg}") from None
    except _DuplicateKey as e:
        raise ModelError(f"malformed model file: key {e.args[0]!r} appears twice in one JSON object") from None
    except ValueError as e:  # NaN / Infinity
        raise ModelError(f"malformed model file: {e}") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise ModelError("malformed model file: JSON nested too deeply") from None
