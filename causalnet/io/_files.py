"""Reading model files: one place for the "missing or unreadable file" errors."""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelError

__all__ = ["read_bytes"]


def read_bytes(path: str | Path) -> bytes:
    """The bytes of `path`; a missing or unreadable file is a ModelError naming it."""
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ModelError(f"no such file: {str(path)!r}") from None
    except OSError as e:
        raise ModelError(f"cannot read {str(path)!r}: {e}") from None
