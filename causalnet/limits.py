"""Resource limits: the knobs every engine and reader consults before it allocates.

An engine estimates its largest table or tensor *before* allocating it and calls
:func:`check_bytes`; past the limit it raises :class:`~causalnet.errors.ResourceError`
(also a :class:`MemoryError`) naming the estimate, the cause and the knob. Readers
cap file sizes, decompressed sizes and nesting depth the same way.

The limits are process-wide defaults that a ``with`` block can raise or lower::

    >>> import causalnet as cn
    >>> cn.limits.get("max_table_bytes") == 2 * 2**30
    True
    >>> with cn.limits.override(max_table_bytes=2**20):
    ...     cn.limits.get("max_table_bytes")
    1048576

Knobs
-----
max_table_bytes : int
    Largest single table, tensor or intermediate result an engine may allocate
    (default 2 GiB).
batch_bytes : int
    Memory budget for one chunk of a batched computation (default 256 MiB);
    larger batches are processed in chunks of this size.
max_file_bytes : int
    Largest model file a reader accepts, after decompression (default 256 MiB).
max_nesting : int
    Deepest nesting of a JSON model file (default 64).
max_states : int
    Most states of one discrete node, and most entries a BIF ``default`` row may
    expand to (default 10**7 entries).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .errors import ResourceError

__all__ = ["get", "set", "override", "check_bytes", "DEFAULTS"]

DEFAULTS: dict[str, int] = {
    "max_table_bytes": 2 * 2**30,
    "batch_bytes": 256 * 2**20,
    "max_file_bytes": 256 * 2**20,
    "max_nesting": 64,
    "max_states": 10**7,
}

_current: dict[str, int] = dict(DEFAULTS)


def _check_name(name: str) -> None:
    if name not in DEFAULTS:
        raise KeyError(f"unknown limit {name!r}; limits: {sorted(DEFAULTS)}")


def get(name: str) -> int:
    """The current value of limit `name`."""
    _check_name(name)
    return _current[name]


def set(**limits: int) -> None:  # noqa: A001 - mirrors the knob names
    """Set limits process-wide, e.g. ``cn.limits.set(max_table_bytes=8 * 2**30)``."""
    for name, value in limits.items():
        _check_name(name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"limit {name!r} must be a positive int, got {value!r}")
    _current.update(limits)


@contextmanager
def override(**limits: int) -> Iterator[None]:
    """Within a ``with`` block, use other limits; restored on exit."""
    saved = dict(_current)
    set(**limits)
    try:
        yield
    finally:
        _current.clear()
        _current.update(saved)


def check_bytes(nbytes: float, *, what: str, cause: str, knob: str = "max_table_bytes") -> None:
    """Raise :class:`ResourceError` if `nbytes` exceeds limit `knob`.

    Parameters
    ----------
    nbytes : float
        The estimate, in bytes (a float so that huge products do not overflow).
    what : str
        What would be allocated, e.g. ``"the clique table of {'A', 'B', 'C'}"``.
    cause : str
        Why it is that large, e.g. ``"treewidth 31 (32 variables of 2 states)"``.
    knob : str
        The limit consulted.
    """
    limit = get(knob)
    if nbytes > limit:
        raise ResourceError(
            f"{what} would need {_fmt(nbytes)} ({cause}), over the limit {knob}={_fmt(limit)}; "
            f"raise it with causalnet.limits.set({knob}=...) or causalnet.limits.override(...)"
        )


def _fmt(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f} PiB"
