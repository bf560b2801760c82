"""The CRF's chain engine in the front door: exact label marginals on a CRF's factor-node network.

:func:`factor_chain_shape` reads the network of :func:`causalnet.models.crf.causal.to_model`
off a model's mechanisms (node names and mechanism types, once per model,
kept in ``model.cache``): root tables ``x[t]`` and ``y[t]``, a binary factor
``f[t]`` over ``(x[t], y[t])`` and a binary factor ``g[t]`` over
``(y[t], y[t+1])``, nothing intervened on. Any model of that shape qualifies.

:class:`CRFChainEngine` (name ``"CRF chain"``, in ``QUERY_ENGINES`` ahead of
the generic engines) answers a query on one label ``y[t]`` by one
forward-backward pass: an observed ``f[t] = v`` is the unary
``log P(f[t] = v | x[t], y[t])`` (summed over ``x[t]`` when it is not
observed), an observed ``g[t] = v`` the pairwise ``log P(g[t] = v | y[t],
y[t+1])``, an unobserved factor nothing (it sums to one), an observed label a
clamp. With every factor observed ``true`` that is the CRF's own posterior,
so ``CRF.query`` asks the front door for it. ``.method`` is
``"exact (CRF chain forward-backward)"``.

Symbols: ``n`` rows, ``T`` steps, ``K`` labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ...distributions import DiscreteDistribution
from ...errors import EvidenceError
from ...inference.chain import forward_backward
from ...inference.dispatch import QUERY_ENGINES
from ...inference.engine import Engine
from ...mechanisms.intervened import Intervened
from ...mechanisms.tabular import Tabular

__all__ = ["FactorChainShape", "factor_chain_shape", "CRFChainEngine", "METHOD"]

METHOD = "exact (CRF chain forward-backward)"
_NAME = re.compile(r"^([yxfg])\[(\d+)\]$")


@dataclass
class FactorChainShape:
    """A CRF's factor network read off a model: ``T`` steps over ``K`` labels."""

    T: int
    K: int


def _detect(model) -> FactorChainShape | None:
    mechs = model.mechanisms
    T = (len(mechs) + 1) // 4
    if T < 1 or len(mechs) != 4 * T - 1 or any(isinstance(m, Intervened) for m in mechs.values()):
        return None
    if any(f"{v}[{t}]" not in mechs for t in range(T) for v in "xyf") or \
            any(f"g[{t}]" not in mechs for t in range(T - 1)):
        return None
    K = len(model.states("y[0]"))
    for t in range(T):
        x, y, f = mechs[f"x[{t}]"], mechs[f"y[{t}]"], mechs[f"f[{t}]"]
        if not (isinstance(x, Tabular) and isinstance(y, Tabular) and isinstance(f, Tabular)) or x.parents \
                or y.parents or f.parents != (f"x[{t}]", f"y[{t}]") or len(y.states) != K or len(f.states) != 2:
            return None
        if t + 1 < T:
            g = mechs[f"g[{t}]"]
            if not isinstance(g, Tabular) or g.parents != (f"y[{t}]", f"y[{t + 1}]") or len(g.states) != 2:
                return None
    return FactorChainShape(T, K)


def factor_chain_shape(model) -> FactorChainShape | None:
    """The CRF factor-network shape of `model`, or None (once per model, kept in ``model.cache``)."""
    if "crf factor chain shape" not in model.cache:
        model.cache["crf factor chain shape"] = _detect(model)
    return model.cache["crf factor chain shape"]


def _rows(a, n: int) -> np.ndarray:
    a = np.asarray(a)
    return a.astype(np.int64) if a.ndim == 1 else np.full(n, int(a), dtype=np.int64)


class CRFChainEngine(Engine):
    """Exact label marginals on a CRF's factor network by forward-backward (see the module docstring)."""

    name = "CRF chain"

    def accepts(self, request) -> bool:
        if request.is_counterfactual or len(request.targets) != 1 or factor_chain_shape(request.model) is None:
            return False
        m = _NAME.match(request.nodes[0]) if isinstance(request.nodes[0], str) else None
        return m is not None and m.group(1) == "y"

    def answer(self, request):
        model, shape = request.model, factor_chain_shape(request.model)
        n, T, K = request.n_rows or 1, shape.T, shape.K
        mechs = model.mechanisms
        ev = {v: _rows(a, n) for (_, v), a in request.evidence.items()}
        unary = np.zeros((n, T, K))
        pairwise = np.zeros((n, max(T - 1, 0), K, K))
        with np.errstate(divide="ignore"):
            for t in range(T):
                unary[:, t] += np.log(mechs[f"y[{t}]"].table)
                if f"y[{t}]" in ev:
                    unary[:, t] += np.log(np.eye(K)[ev[f"y[{t}]"]])
                if f"f[{t}]" in ev:
                    table = mechs[f"f[{t}]"].table                                 # (card_x, K, 2)
                    v = ev[f"f[{t}]"]
                    if f"x[{t}]" in ev:
                        p = table[ev[f"x[{t}]"], :, v]                             # (n, K)
                    else:
                        p = np.einsum("x,xkn->nk", mechs[f"x[{t}]"].table, table[:, :, v])
                    unary[:, t] += np.log(p)
                if t + 1 < T and f"g[{t}]" in ev:
                    pairwise[:, t] = np.log(np.moveaxis(mechs[f"g[{t}]"].table[:, :, ev[f"g[{t}]"]], -1, 0))
        post = forward_backward(unary, pairwise)
        bad = ~np.isfinite(post.log_z)
        if bad.any():
            raise EvidenceError(f"the evidence has probability zero under the CRF factor network (rows "
                                f"{np.flatnonzero(bad)[:5].tolist()})")
        node = request.nodes[0]
        t = int(_NAME.match(node).group(2))
        p = post.marginals[:, t]                                                   # (n, K)
        return DiscreteDistribution([node], p if request.batched else p[0], [model.states(node)],
                                    batched=request.batched, method=METHOD,
                                    log_evidence=post.log_z if request.batched else float(post.log_z[0]))


QUERY_ENGINES.register(CRFChainEngine(), before="discrete")
