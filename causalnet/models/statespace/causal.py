"""State-space models as causal models: unrolling, and do-queries and counterfactuals through the front door.

Unrolled over ``T`` steps, a :class:`~.model.StateSpace` is a
:class:`~causalnet.CausalModel` of **scalar** :class:`~causalnet.LinearGaussian`
nodes, one per component and step: ``Z[t]`` and ``Y[t]`` when the state and
the observation are scalars, else ``Z0[t], Z1[t], ...`` (or the names given
to the model). Scalar nodes are what the library's linear-Gaussian engine and
its Gaussian twin counterfactual engine work on, so every question the generic
engines answer can be asked of the unrolled model.

Correlated noise within a slice is written as a chain: for a covariance ``C``
(``initial_cov``, ``transition_cov`` or ``observation_cov``), component ``i``
regresses on the components before it in the same slice,
``x_i = mu_i + sum_{k<i} w_ik (x_k - mu_k) + s_i u_i`` with ``w_i = C[i,<i]
C[<i,<i]^+`` and ``s_i^2`` the conditional variance. The joint law of the
slice is exactly ``N(mu, C)``; with a diagonal ``C`` there are no
within-slice edges. This is also the SCM the counterfactuals use: the
exogenous ``u_i`` are the standardised innovations of that chain (a ``do`` on
a *whole* slice is independent of the order; a ``do`` on one component of a
correlated slice follows the chain order, components listed first being
causes of later ones).

:func:`query` and :func:`counterfactual` turn a :class:`~.model.StateSpace`
question (``{"Z[10]": 0.0}`` may name a whole state vector) into a request of
the front door on the unrolled model; the Kalman engine (:mod:`.engine`)
answers queries whose ``do`` sets whole state slices and whose evidence is on
observations, the generic linear-Gaussian engines the rest (tested equal).

Symbols: ``n`` rows, ``T`` steps, ``d`` state size, ``p`` observation size.
"""

from __future__ import annotations

import re
import weakref

import numpy as np

from ... import limits
from ...errors import EvidenceError, ModelError
from ...mechanisms.gaussian import LinearGaussian
from ...model import CausalModel
from .checks import as_controls
from .engine import KalmanEngine
from .layout import Unrolled, remember

__all__ = ["component_names", "slice_chain", "to_model", "query", "counterfactual", "expand", "parse_name", "KalmanEngine"]

_NAME = re.compile(r"^(.+)\[(\d+)\]$")
_UNROLLED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # StateSpace -> {(T, controls): (params, model)}
_KEEP = 4                                                             # unrolled lengths kept per model
_DROP = 1e-14                                                             # relative size of a coefficient taken as 0


def component_names(state_names, observation_names, d: int, p: int) -> tuple[tuple, tuple]:
    """The validated component names (defaults ``Z`` / ``Z0..`` and ``Y`` / ``Y0..``)."""
    out = []
    for given, size, base, what in ((state_names, d, "Z", "state_names"), (observation_names, p, "Y",
                                                                              "observation_names")):
        names = (base,) if given is None and size == 1 else tuple(f"{base}{i}" for i in range(size)) \
            if given is None else tuple(given)
        if len(names) != size or not all(isinstance(x, str) and x and "[" not in x for x in names):
            raise ModelError(f"{what} must be {size} non-empty strings without '[', got {given!r}")
        out.append(names)
    states, outputs = out
    allnames = states + outputs
    if len(set(allnames)) != len(allnames):
        raise ModelError(f"state and observation names must be distinct, got {list(states)} and {list(outputs)}")
    if (len(states) > 1 and "Z" in allnames) or (len(outputs) > 1 and "Y" in allnames) or \
            (len(states) == 1 and states[0] != "Z" and "Z" in outputs) or (len(outputs) == 1 and outputs[0] != "Y"
                                                                           and "Y" in states):
        raise ModelError("'Z' and 'Y' name the whole state and observation vectors; choose other component names")
    return states, outputs


def slice_chain(cov: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The chain form of ``N(0, cov)``: weights ``w_i`` over the earlier components and noise scales ``s_i``.

    Returns
    -------
    weights : list of ndarray, entry i of shape (i,)
    scales : ndarray (size,)
        ``x_i = sum_k w_ik x_k + s_i u_i`` reproduces ``cov`` exactly (semi-definite too).
    """
    size = cov.shape[0]
    weights, scales = [], np.empty(size)
    for i in range(size):
        w = cov[i, :i] @ np.linalg.pinv(cov[:i, :i], hermitian=True) if i else np.zeros(0)
        weights.append(w)
        scales[i] = np.sqrt(max(cov[i, i] - (w @ cov[:i, i] if i else 0.0), 0.0))
    return weights, scales


def _nodes_of_slice(mechs, names, parents_prev, coef_prev, bias, cov, t, scale):
    """Add one slice's nodes: ``x = bias + coef_prev @ parents_prev + chain(cov)``."""
    weights, scales = slice_chain(cov)
    nodes = [f"{c}[{t}]" for c in names]
    for i, node in enumerate(nodes):
        w = weights[i]
        pw = coef_prev[i] - w @ coef_prev[:i] if len(parents_prev) else np.zeros(0)
        b = bias[i] - w @ bias[:i]
        pars = [(q, float(c)) for q, c in zip(parents_prev, pw) if abs(c) > _DROP * scale]
        pars += [(q, float(c)) for q, c in zip(nodes[:i], w) if abs(c) > _DROP]
        mechs[node] = LinearGaussian([q for q, _ in pars], [c for _, c in pars], bias=float(b), sigma=float(scales[i]))
    return nodes


def to_model(ss, T: int, controls=None) -> CausalModel:
    """`ss` unrolled over `T` steps (see the module docstring); the model remembers its layout for the engine."""
    if not isinstance(T, (int, np.integer)) or isinstance(T, bool) or T < 1:
        raise ModelError(f"T must be a positive integer, got {T!r}")
    P = ss.params
    limits.check_bytes(8.0 * T * (P.d + P.p) * (2 * P.d + P.p + 8) * 8, what=f"the StateSpace unrolled over T = {T} steps",
                       cause=f"{T * (P.d + P.p)} scalar nodes")
    offsets = as_controls(controls, P, 1, T)
    offsets = None if offsets is None else offsets[0]                               # (T-1, d)
    mechs: dict = {}
    scale = max(1.0, float(np.abs(P.transition).max()), float(np.abs(P.observation).max()))
    states, outputs = [], []
    for t in range(T):
        if t == 0:
            zs = _nodes_of_slice(mechs, ss.state_names, [], np.zeros((P.d, 0)), P.initial_mean, P.initial_cov, 0,
                                 scale)
        else:
            bias = np.zeros(P.d) if offsets is None else offsets[t - 1]
            zs = _nodes_of_slice(mechs, ss.state_names, states[-1], P.transition, bias, P.transition_cov, t, scale)
        states.append(zs)
        outputs.append(_nodes_of_slice(mechs, ss.observation_names, zs, P.observation, np.zeros(P.p),
                                       P.observation_cov, t, scale))
    model = CausalModel(mechs)
    record = Unrolled(P, int(T), offsets, states, outputs, dict(model.mechanisms))
    for t in range(T):
        record.steps.update({v: ("Z", t, i) for i, v in enumerate(states[t])})
        record.steps.update({v: ("Y", t, i) for i, v in enumerate(outputs[t])})
    remember(model, record)
    return model


def parse_name(name) -> tuple[str, int]:
    """``"Z1[10]"`` -> ``("Z1", 10)``."""
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None:
        raise EvidenceError(f"{name!r} is not a time-indexed name such as 'Z[3]' or 'Y[0]'")
    return match.group(1), int(match.group(2))


def expand(ss, name) -> list[str]:
    """The component nodes a name stands for: ``"Z[t]"`` -> every state component at t; a component as itself."""
    base, t = parse_name(name)
    if base == "Z":
        return [f"{c}[{t}]" for c in ss.state_names]
    if base == "Y":
        return [f"{c}[{t}]" for c in ss.observation_names]
    if base in ss.state_names or base in ss.observation_names:
        return [name]
    raise EvidenceError(f"{name!r} names no state or observation; components: "
                        f"{list(ss.state_names) + list(ss.observation_names)} (or 'Z[t]', 'Y[t]' for the vectors)")


def _spread(ss, values: dict, what: str) -> dict:
    """A mapping over names (vectors allowed) -> a mapping over component nodes."""
    out = {}
    for name, value in values.items():
        nodes = expand(ss, name)
        if len(nodes) == 1:
            out[nodes[0]] = value
            continue
        a = np.asarray(value, dtype=np.float64)
        if a.ndim == 0:
            a = np.full(len(nodes), float(a))
        if a.shape[-1] != len(nodes) or a.ndim > 2:
            raise EvidenceError(f"{what} value for {name!r} must be a scalar, a ({len(nodes)},) vector or "
                                f"(n, {len(nodes)}) rows, got shape {a.shape}")
        out.update({v: a[..., i] for i, v in enumerate(nodes)})
    return out


def _evidence(ss, evidence) -> dict:
    if evidence is None:
        return {}
    if isinstance(evidence, dict):
        return _spread(ss, evidence, "evidence")
    y = np.asarray(evidence, dtype=np.float64)
    if y.ndim == 1 and ss.n_outputs == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[1] != ss.n_outputs:
        raise EvidenceError(f"evidence as an array must have shape (T, {ss.n_outputs}) with NaN where missing, "
                            f"got {y.shape}")
    return {f"{c}[{t}]": y[t, i] for t in range(y.shape[0]) for i, c in enumerate(ss.observation_names)
            if not np.isnan(y[t, i])}


def _prepare(ss, targets, evidence, do, controls):
    names = [targets] if isinstance(targets, str) else list(targets)
    nodes = [v for name in names for v in expand(ss, name)]
    ev = _evidence(ss, evidence)
    dd = _spread(ss, dict(do or {}), "do")
    steps = [parse_name(v)[1] for v in (*nodes, *ev, *dd)]
    T = max(steps) + 1                                   # later steps change no answer
    return _unrolled(ss, T, _controls_for(ss, controls, T)), nodes, ev, dd


def _unrolled(ss, T: int, controls):
    """``ss.to_model(T, controls)``, built once per parameter set (a few lengths kept while `ss` lives)."""
    key = (T, None if controls is None else (controls.shape, controls.tobytes()))
    kept = _UNROLLED.setdefault(ss, {})
    hit = kept.get(key)
    if hit is not None and hit[0] is ss.params:
        return hit[1]
    model = ss.to_model(T, controls)
    if len(kept) >= _KEEP:
        kept.pop(next(iter(kept)))
    kept[key] = (ss.params, model)
    return model


def _controls_for(ss, controls, T):
    """The first ``T - 1`` control rows (a query needs steps up to the last it names)."""
    if controls is None:
        return None
    u = np.asarray(controls, dtype=np.float64)
    if u.ndim == 1 and ss.params.k == 1:
        u = u[:, None]
    return u[: T - 1]


def query(ss, targets, *, evidence=None, do=None, controls=None):
    """``ss.query``: a request of the front door on the unrolled model (the Kalman engine answers)."""
    model, nodes, ev, dd = _prepare(ss, targets, evidence, do, controls)
    return model.query(nodes, evidence=ev, do=dd, method="exact")


def counterfactual(ss, targets, *, evidence=None, do=None, controls=None):
    """``ss.counterfactual``: the Gaussian twin engine on the unrolled model."""
    model, nodes, ev, dd = _prepare(ss, targets, evidence, do, controls)
    return model.counterfactual(nodes, evidence=ev, do=dd, method="exact")
