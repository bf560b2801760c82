"""The ``query`` command: a probability, do- or counterfactual query on a model.

``causalnet query MODEL "P(Y | do(X=1), Z=0)"`` loads MODEL (``gallery:NAME``, a BIF,
XMLBIF or causalnet JSON file; see :mod:`causalnet.cli.sources`), answers the query
string with :meth:`causalnet.CausalModel.query` and prints the result as a small table,
or with ``--json`` as one JSON object for scripts::

    {"query": "P(Wet | Rain=yes)", "type": "discrete", "variables": ["Wet"],
     "states": [["dry", "wet"]], "probs": [0.1981, 0.8019], "batched": false,
     "method": "exact (variable elimination)"}

``query`` is the question in its canonical text (as the result prints it:
``P(Wet | do(Sprinkler=on), Rain=yes)``, ``P(Wet_{Sprinkler=off} | Sprinkler=on,
Wet=wet)`` for a counterfactual); ``type`` is ``"probability"`` (a single number, in ``value``), ``"discrete"``
(``probs`` has one axis per variable, batch first when ``batched``),
``"gaussian"`` (``mean``, ``cov``), ``"empirical"`` (per-variable ``mean`` and
``std_err``) or ``"other"`` (``repr``).

Examples
--------
>>> from causalnet import gallery
>>> from causalnet.cli.query import result_to_dict
>>> d = result_to_dict("P(Wet | Rain=yes)", gallery.load("sprinkler").query("P(Wet | Rain=yes)"))
>>> d["type"], d["states"], [round(p, 4) for p in d["probs"]]
('discrete', [['dry', 'wet']], [0.1981, 0.8019])
"""

from __future__ import annotations

import argparse
import itertools
import json
from typing import Any

import numpy as np

from ..distributions import DiscreteDistribution, EmpiricalDistribution, Gaussian
from .sources import load_model

__all__ = ["format_result", "result_to_dict", "add_query"]


def _np_fmt(a: Any) -> str:
    return np.array2string(np.asarray(a), precision=4, suppress_small=True)


def _discrete_lines(res: DiscreteDistribution) -> list[str]:
    per_variable = res.states if len(res.variables) > 1 else (res.states,)
    labels = [", ".join(map(str, c)) for c in itertools.product(*per_variable)]   # C order, like probs
    errors = res.std_err.reshape(-1) if res.std_err is not None else [None] * len(labels)
    width = max(map(len, labels))
    lines = [res.label]
    for label, p, se in zip(labels, res.probs.reshape(-1), errors):
        lines.append(f"  {label:<{width}}  {p:.6f}" + ("" if se is None else f"  ± {se:.2g}"))
    return lines


def format_result(res: Any) -> str:
    """A query result as text: a table of states for a discrete result, moments otherwise."""
    if isinstance(res, DiscreteDistribution):
        if res.batched:
            return repr(res)
        lines = _discrete_lines(res)
    elif isinstance(res, Gaussian):
        lines = [f"{res.label} (Gaussian)", f"  mean {_np_fmt(res.mean)}", f"  sd   {_np_fmt(res.std)}"]
    elif isinstance(res, EmpiricalDistribution):
        lines = [res.label] + [f"{v}: mean {_np_fmt(res.mean(v))} ± {_np_fmt(res.std_err(v))}" for v in res.variables]
    else:
        lines = [repr(res)]
    method = getattr(res, "method", None)
    if method:
        lines.append(f"method: {method}")
    scm = getattr(res, "scm", None)
    if scm:
        lines.append(f"SCM: {scm}")
    return "\n".join(lines)


def _plain(x: Any) -> Any:
    """JSON data for numpy values; text for anything else."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return str(x)


def result_to_dict(query: str, res: Any) -> dict:
    """A query result as JSON-ready data (see the module docstring for the fields).

    ``"query"`` is the question the result answers in its canonical text
    (``res.query``: do first, states by name, ``Y_{X=0}`` for counterfactuals);
    `query`, the text as typed, is used for a bare probability.
    """
    out: dict[str, Any] = {"query": getattr(res, "query", None) or query}
    if isinstance(res, (float, int, np.floating)):
        out.update(type="probability", value=float(res))
        return out
    if isinstance(res, DiscreteDistribution):
        per_variable = res.states if len(res.variables) > 1 else (res.states,)
        out.update(type="discrete", variables=list(res.variables), states=[list(s) for s in per_variable],
                   probs=res.probs.tolist(), batched=bool(res.batched))
        if res.std_err is not None:
            out["std_err"] = np.asarray(res.std_err).tolist()
    elif isinstance(res, Gaussian):
        out.update(type="gaussian", variables=list(res.variables), mean=np.asarray(res.mean).tolist(),
                   cov=np.asarray(res.cov).tolist(), batched=bool(res.batched))
    elif isinstance(res, EmpiricalDistribution):
        out.update(type="empirical", variables=list(res.variables),
                   mean={str(v): np.asarray(res.mean(v)).tolist() for v in res.variables},
                   std_err={str(v): np.asarray(res.std_err(v)).tolist() for v in res.variables})
    else:
        out.update(type="other", repr=repr(res))
    for key in ("method", "scm"):
        value = getattr(res, key, None)
        if value:
            out[key] = str(value)
    return out


def _cmd_query(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    res = model.query(args.query, method=args.method, seed=args.seed)
    if args.json:
        print(json.dumps(result_to_dict(args.query, res), default=_plain, ensure_ascii=False))
    elif isinstance(res, float):
        print(f"{args.query} = {res:.6g}")
    else:
        print(format_result(res))
    return 0


def add_query(sub: Any) -> None:
    """Declare ``causalnet query``."""
    q = sub.add_parser(
        "query", help='answer a query string, e.g. "P(Wet | do(Sprinkler=on))"',
        epilog="examples:\n"
               '  causalnet query gallery:sprinkler "P(Wet | do(Sprinkler=on), Rain=yes)"\n'
               '  causalnet query gallery:alarm "P(HYPOVOLEMIA | BP=LOW, HR=HIGH)" --json\n'
               '  causalnet query asia.bif "P(lung=yes | xray=yes)"\n'
               '  causalnet query gallery:sprinkler "P(Wet_{Sprinkler=off}=dry | Sprinkler=on, Wet=wet)"')
    q.add_argument("model", help="gallery:NAME or a .bif/.bif.gz/.xmlbif/.json model file")
    q.add_argument("query", help="P(Y | do(X=1), Z=0), P(Y=1 | ...), or counterfactual P(Y_{X=0}=1 | X=1, Y=1)")
    q.add_argument("--method", default="auto", choices=["auto", "exact", "sampling"])
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--json", action="store_true", help="print the result as one JSON object (for scripts)")
    q.set_defaults(func=_cmd_query)
