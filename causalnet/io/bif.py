"""BIF files (and XMLBIF, re-exported): discrete Bayesian networks as causal models.

BIF is the text format of the bnlearn repository (and pgmpy, JavaBayes,
Hugin exporters); XMLBIF is its XML sibling (version 0.3). Both hold
discrete variables with named states and one conditional probability table
per variable. Our own parsers read them — no pgmpy needed — into a
:class:`~causalnet.model.CausalModel` of :class:`~causalnet.mechanisms.tabular.Categorical`
and :class:`~causalnet.mechanisms.tabular.CPT` nodes, with parents in the
order the file declares them, and writers emit them with ``repr`` precision,
so write-then-read gives back the tables bit for bit.

BIF in brief (the bnlearn dialect, plus the original one's quirks)::

    network unknown {
    }
    variable Rain {
      type discrete [ 2 ] { no, yes };
      property latent = true ;          // any property; this one marks a latent node
    }
    probability ( Rain ) {
      table 0.8, 0.2;
    }
    probability ( Wet | Rain, Sprinkler ) {
      (no, off) 0.9, 0.1;               // one row per parent configuration
      default 0.5, 0.5;                 // rows not listed (optional)
    }

``//`` and ``/* */`` comments, quoted names (``"light-on"``), and commas or
blanks as separators are accepted; ``probability ( A B C )`` (no ``|``) means
``A`` given ``B, C``. A ``table`` line in a conditional block lists the child's
states slowest and the last parent fastest (the order of pgmpy's
``TabularCPD.values``); an XMLBIF ``TABLE`` lists, for each parent
configuration (last ``GIVEN`` fastest), the child's probabilities.

Files print probabilities to limited precision, so rows may sum to 1 only
up to rounding (bnlearn's own files are off by up to 3e-7). Readers accept
a row whose sum is within `tol` of 1 and rescale it when it is off by more
than the CPT tolerance (1e-9); rows already within 1e-9 are kept bit for
bit. Files ending in ``.gz`` (or starting with the gzip magic bytes) are
decompressed transparently.

Every parse error is a :class:`~causalnet.errors.ModelError` naming the
file, the line and column, and what was expected; nothing is built until
the whole file has been checked. Files are read through
:mod:`causalnet.io.files` (a missing file is a ``FileNotFoundError``, the
size is capped, binary content refused), and a table that a ``default`` row
would expand is checked against ``causalnet.limits`` (``max_states``,
``max_table_bytes``) before it is allocated. Writers are atomic.

Files in the common dialect (every bnlearn file) are read by the whole-block passes of
:mod:`causalnet.io.bif_scan`; every other text, and every error, by the token parser of
:mod:`causalnet.io.bif_parser` (loaded by the first such file). XMLBIF lives in
:mod:`causalnet.io.xmlbif` (its functions are re-exported here); the checks both formats share in :mod:`causalnet.io.tables`; the
bnlearn networks in :mod:`causalnet.io.bnlearn` (``bnlearn_names`` and
``bnlearn_path`` here are its ``pgmpy_names`` and ``pgmpy_path``).

Examples
--------
>>> import causalnet as cn
>>> from causalnet.io.bif import read_bif, to_bif
>>> m = read_bif('''
... variable Rain { type discrete [ 2 ] { no, yes }; }
... variable Wet { type discrete [ 2 ] { dry, wet }; }
... probability ( Rain ) { table 0.8, 0.2; }
... probability ( Wet | Rain ) { (no) 0.9, 0.1; (yes) 0.2, 0.8; }
... ''')
>>> m.mechanisms["Wet"].table.tolist()
[[0.9, 0.1], [0.2, 0.8]]
>>> print(to_bif(m).splitlines()[2])
variable Rain {
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .. import io as _io  # io.bif_parser (the token parser): loaded by the first text off the quick path
from ..errors import ModelError
from ..model import CausalModel
from ..runtime import lazy_exports
from .bif_scan import scan_bif
from .files import atomic_write, read_source
from .tables import DEFAULT_TOL, build_discrete_model, check_tol, discrete_parts

__all__ = [
    "read_bif",
    "write_bif",
    "to_bif",
    "read_xmlbif",  # noqa: F822 (re-exported on first use, below)
    "write_xmlbif",  # noqa: F822 (re-exported on first use, below)
    "to_xmlbif",  # noqa: F822 (re-exported on first use, below)
    "bnlearn_names",  # noqa: F822 (re-exported on first use, below)
    "bnlearn_path",  # noqa: F822 (re-exported on first use, below)
]

# XMLBIF and the bnlearn files, re-exported here on first use (PEP 562): reading BIF loads neither module.
__getattr__, __dir__ = lazy_exports(__name__, {
    "read_xmlbif": "..xmlbif:read_xmlbif",
    "write_xmlbif": "..xmlbif:write_xmlbif",
    "to_xmlbif": "..xmlbif:to_xmlbif",
    "bnlearn_names": "..bnlearn:pgmpy_names",
    "bnlearn_path": "..bnlearn:pgmpy_path",
})

# -- BIF reading -------------------------------------------------------------------------


def _looks_like_bif(text: str) -> bool:
    return "{" in text or "\n" in text


def read_bif(source: str | Path | bytes, *, tol: float = DEFAULT_TOL) -> CausalModel:
    """Read a BIF file (or text) into a discrete causal model.

    Parameters
    ----------
    source : path, str or bytes
        A file path (``.bif`` or gzipped ``.bif.gz``), or the BIF text itself
        (any string containing ``{`` or a newline).
    tol : float, default 1e-6
        Rows whose probabilities sum to 1 within `tol` are accepted; those
        off by more than 1e-9 are rescaled to sum to 1.

    Returns
    -------
    CausalModel
        One :class:`Categorical` or :class:`CPT` node per variable, in the
        file's order; CPT shape ``(*parent_cards, K)`` with parents in the
        order of the ``probability ( child | parents )`` header. State
        names are strings.

    Raises
    ------
    ModelError
        On any syntax or consistency error, naming the line and column and
        what was expected (an unknown parent or state, a row of the wrong
        length, a missing row, a negative probability, parents that form a
        cycle, ...).
    """
    tol = check_tol(tol)
    text, name = read_source(source, _looks_like_bif)
    parts = scan_bif(text, tol)              # the common dialect in whole-block passes (io/bif_scan.py)
    if parts is not None:
        return build_discrete_model(*parts, [], name)
    return _io.bif_parser.BifParser(text, name, tol).parse()   # everything else, every error: token by token


# -- BIF writing --------------------------------------------------------------------------

_BARE = r'(?:[^\s{}()\[\];|,"/]|/(?![/*]))+\Z'   # a name written without quotes (compiled by the first use)

def _bif_name(name: str, what: str) -> str:
    if re.match(_BARE, name):
        return name
    if '"' in name:
        raise ModelError(f"{what} {name!r} contains a double quote, which BIF cannot hold")
    return f'"{name}"'


def to_bif(model: CausalModel, *, name: str = "unknown") -> str:
    """BIF text of a discrete model (see :func:`write_bif`)."""
    parts = discrete_parts(model, "BIF")
    latent = {str(v) for v in model.latent}
    out = [f"network {_bif_name(str(name), 'network name')} {{", "}"]
    for node, _, states, _ in parts:
        st = ", ".join(_bif_name(s, f"state of {node!r}") for s in states)
        out.append(f"variable {_bif_name(node, 'node name')} {{")
        out.append(f"  type discrete [ {len(states)} ] {{ {st} }};")
        if node in latent:
            out.append("  property latent = true ;")
        out.append("}")
    states_of = {node: states for node, _, states, _ in parts}
    for node, parents, _, table in parts:
        head = _bif_name(node, "node name")
        if not parents:
            out.append(f"probability ( {head} ) {{")
            out.append("  table " + ", ".join(map(repr, table.tolist())) + ";")
        else:
            out.append(f"probability ( {head} | {', '.join(_bif_name(p, 'node name') for p in parents)} ) {{")
            flat = table.reshape(-1, table.shape[-1]).tolist()                    # (prod(pcards), K)
            pstates = [[_bif_name(s, f"state of {p!r}") for s in states_of[p]] for p in parents]
            for idx, row in zip(np.ndindex(*table.shape[:-1]), flat):
                cfg = ", ".join(ps[i] for ps, i in zip(pstates, idx))
                out.append(f"  ({cfg}) " + ", ".join(map(repr, row)) + ";")
        out.append("}")
    return "\n".join(out) + "\n"


def write_bif(model: CausalModel, path: str | Path, *, name: str = "unknown") -> None:
    """Write a discrete model (Categorical and CPT nodes) as a BIF file.

    Probabilities are written with ``repr`` precision, so :func:`read_bif`
    gives back the same tables bit for bit. State and node names are written
    as text (quoted when they hold blanks or punctuation), so integer states
    come back as strings. Latent nodes carry ``property latent = true ;``.
    A path ending in ``.gz`` is gzipped.

    Parameters
    ----------
    model : CausalModel
    path : path
    name : str, default "unknown"
        The network's name.

    Raises
    ------
    ModelError
        If a node is not Categorical/CPT, or is intervened on.
    """
    text = to_bif(model, name=name)
    atomic_write(path, text, compress=str(path).endswith(".gz"))


