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
    """A CRF's factor network read off a model: ``T`` steps over ``K`` labels, its tables stacked.

    Attributes
    ----------
    T, K : int
    log_prior : ndarray (T, K)
        ``log P(y[t])``.
    f_given_y : ndarray (T, K, 2)
        ``P(f[t] | y[t])`` with ``x[t]`` summed out under its prior.
    g_table : ndarray (T-1, K, K, 2)
        ``P(g[t] | y[t], y[t+1])``.
    """

    T: int
    K: int
    log_prior: np.ndarray
    f_given_y: np.ndarray
    g_table: np.ndarray


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
    with np.errstate(divide="ignore"):
        log_prior = np.log(np.stack([mechs[f"y[{t}]"].table for t in range(T)]))                 # (T, K)
    f_given_y = np.stack([np.einsum("x,xkv->kv", mechs[f"x[{t}]"].table, mechs[f"f[{t}]"].table)
                          for t in range(T)])                                                     # (T, K, 2)
    g_table = np.stack([mechs[f"g[{t}]"].table for t in range(T - 1)]) if T > 1 else np.zeros((0, K, K, 2))
    return FactorChainShape(T, K, log_prior, f_given_y, g_table)


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
        ev = {v: _rows(a, n) for (_, v), a in request.evidence.items()}
        steps = {kind: [t for t in range(T - (kind == "g")) if f"{kind}[{t}]" in ev] for kind in "yfg"}
        unary = np.broadcast_to(shape.log_prior, (n, T, K)).copy()                   # (n, T, K)
        pairwise = np.zeros((n, max(T - 1, 0), K, K))                                  # (n, T-1, K, K)
        with np.errstate(divide="ignore"):
            for t in steps["y"]:
                unary[:, t] += np.log(np.eye(K)[ev[f"y[{t}]"]])
            if steps["f"]:
                ts = np.array(steps["f"])
                v = np.stack([ev[f"f[{t}]"] for t in ts], axis=1)                     # (n, m)
                p = shape.f_given_y[ts][None, :, :, :] * np.eye(2)[v][:, :, None, :]   # (n, m, K, 2)
                for j, t in enumerate(ts):                                            # an observed token: its row
                    if f"x[{t}]" in ev:                                             # _detect: x[t] is a node
                        p[:, j] = model.mechanisms[f"f[{t}]"].table[ev[f"x[{t}]"]] * np.eye(2)[v[:, j]][:, None, :]
                unary[:, ts] += np.log(p.sum(axis=-1))
            if steps["g"]:
                ts = np.array(steps["g"])
                v = np.stack([ev[f"g[{t}]"] for t in ts], axis=1)                     # (n, m)
                pairwise[:, ts] = np.log(np.take_along_axis(
                    shape.g_table[ts][None], v[:, :, None, None, None], axis=-1)[..., 0])  # (n, m, K, K)
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


# the chain engines come first, CRF before HMM whichever family is imported first (the order is stable)
QUERY_ENGINES.register(CRFChainEngine(), before="HMM chain" if "HMM chain" in QUERY_ENGINES.names() else "discrete")
