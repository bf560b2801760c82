"""The bnlearn repository's networks: shipped with causalnet, or found in pgmpy.

The bnlearn Bayesian network repository (M. Scutari, https://www.bnlearn.com/bnrepository/)
distributes classic discrete networks (ALARM, ASIA, INSURANCE, ...) as BIF files.
causalnet ships the small and medium ones as package data (gzipped BIF in
``causalnet/data/``), so ``gallery:alarm`` works with no extra dependency; the large
ones (barley, diabetes, mildew, munin, pathfinder, ...) are found in pgmpy's copy when
pgmpy is installed. pgmpy is located, never imported.

Examples
--------
>>> from causalnet.io import bnlearn
>>> "alarm" in bnlearn.packaged_names()
True
>>> bnlearn.path("alarm").name
'alarm.bif.gz'
>>> bnlearn.path("../alarm") is None
True
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

__all__ = ["DATA_DIR", "packaged_names", "pgmpy_names", "pgmpy_path", "names", "path"]

#: Where causalnet's own copies of the networks live (``<name>.bif.gz``).
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

_SUFFIX = ".bif.gz"
_NAME = re.compile(r"[\w.-]+")


def _valid(name: object) -> bool:
    return isinstance(name, str) and _NAME.fullmatch(name) is not None and ".." not in name


def _names_in(d: Path | None) -> list[str]:
    if d is None or not d.is_dir():
        return []
    return sorted(p.name[: -len(_SUFFIX)] for p in d.glob(f"*{_SUFFIX}"))


def _file_in(d: Path | None, name: str) -> Path | None:
    if d is None or not _valid(name):
        return None
    p = d / f"{name}{_SUFFIX}"
    return p if p.is_file() else None


def _pgmpy_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("pgmpy")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        d = Path(loc) / "utils" / "example_models"
        if d.is_dir():
            return d
    return None


def packaged_names() -> list[str]:
    """Names of the networks shipped with causalnet, sorted."""
    return _names_in(DATA_DIR)


def pgmpy_names() -> list[str]:
    """Names of the bnlearn networks shipped with pgmpy as BIF files (``[]`` without pgmpy).

    pgmpy is located, not imported. Sorted; e.g. ``["alarm", "andes", "asia", ...]``.
    """
    return _names_in(_pgmpy_dir())


def pgmpy_path(name: str) -> Path | None:
    """The path of pgmpy's shipped ``<name>.bif.gz``, or None (no pgmpy, or no such network).

    Examples
    --------
    >>> p = pgmpy_path("asia")
    >>> p is None or p.name == "asia.bif.gz"
    True
    """
    return _file_in(_pgmpy_dir(), name)


def names() -> list[str]:
    """Every network available: causalnet's own and pgmpy's, sorted."""
    return sorted(set(packaged_names()) | set(pgmpy_names()))


def path(name: str) -> Path | None:
    """The BIF file of network `name`: causalnet's copy, else pgmpy's, else None."""
    return _file_in(DATA_DIR, name) or pgmpy_path(name)
