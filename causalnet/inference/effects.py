"""Total, controlled direct, natural direct and natural indirect effects, as exact counterfactuals.

For a treatment ``X`` changed from `control` (``x0``) to `treated` (``x1``), an
outcome ``Y`` and mediators ``M`` (a set of nodes), Pearl's effects are
expectations over worlds that share the same exogenous noise:

* total effect ``TE = E[Y_{x1}] − E[Y_{x0}]``;
* controlled direct effect, one per mediator value ``m``:
  ``CDE(m) = E[Y_{x1, M=m}] − E[Y_{x0, M=m}]``;
* natural direct effect ``NDE = E[Y_{x1, M=M_{x0}}] − E[Y_{x0}]``: the
  treatment changes, each mediator keeps the value it would have had under
  control (a *nested* counterfactual);
* natural indirect effect ``NIE = E[Y_{x0, M=M_{x1}}] − E[Y_{x0}]``: the
  treatment stays at control, the mediators move as under treatment.

``TE = NDE − NIE(reverse)`` always; on models without interaction between
treatment and mediators (every linear model) ``TE = NDE + NIE``. For a
discrete outcome ``E[Y]`` is the probability of one state (``outcome_state``,
by default the last). Each expectation is one request to the counterfactual
engines — the multi-world network on discrete models, the multi-world joint
Gaussian on linear-Gaussian ones — so the effects are exact there, and
batched: per-row treatment values or evidence give one effect per row.
Factual `evidence` gives conditional effects (``evidence={"X": x1}``: the
effects on the treated).

Examples
--------
>>> import causalnet as cn
>>> m = cn.CausalModel({
...     "X": cn.LinearGaussian(sigma=1.0),
...     "M": cn.LinearGaussian(["X"], [2.0], sigma=1.0),
...     "Y": cn.LinearGaussian(["X", "M"], [0.5, 1.5], sigma=1.0),
... })
>>> e = m.effects("X", "Y", treated=1.0, control=0.0)
>>> round(e.total, 9), round(e.natural_direct, 9), round(e.natural_indirect, 9)
(3.5, 0.5, 3.0)

References
----------
.. [1] J. Pearl, "Direct and indirect effects", UAI 2001.
.. [2] J. Pearl, *Causality*, 2nd ed., sec. 4.5 (2009).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..distributions import DiscreteDistribution, Gaussian
from ..errors import EvidenceError, ModelError
from ..mechanisms.base import DISCRETE, REAL
from ..queries import cf
from ..values import decode_states
from .dispatch import answer
from .request import query_request

__all__ = ["CausalEffects", "effects"]


class CausalEffects:
    """The effects of one treatment change on one outcome (see the module docstring).

    Attributes
    ----------
    treatment, outcome : node
    treated, control : value (or per-row array)
    mediators : tuple of nodes
    measure : str
        What the effects are differences of: ``"P(Y=yes)"`` or ``"E[Y]"``.
    total, natural_direct, natural_indirect : float, or ndarray of shape (n,) when batched
    controlled_direct : ndarray of shape (*mediator_cards) or (n, *mediator_cards)
        One value per joint state of discrete mediators. For real mediators
        the mediators are held at 0 (a linear model's CDE is the same for
        every value): a float, or shape (n,).
    mediator_states : tuple of state-name tuples, or None for real mediators
    method : str
        The engine of the nested counterfactuals.
    """

    def __init__(self, *, treatment, outcome, treated, control, mediators, measure, total, natural_direct,
                 natural_indirect, controlled_direct, mediator_states, method) -> None:
        self.treatment = treatment
        self.outcome = outcome
        self.treated = treated
        self.control = control
        self.mediators = tuple(mediators)
        self.measure = measure
        self.total = total
        self.natural_direct = natural_direct
        self.natural_indirect = natural_indirect
        self.controlled_direct = controlled_direct
        self.mediator_states = mediator_states
        self.method = method

    @property
    def batched(self) -> bool:
        return np.ndim(self.total) == 1

    def controlled(self) -> dict:
        """Controlled direct effects by mediator value: ``{"M=m0, K=k1": value, ...}``."""
        if self.mediator_states is None:
            return {", ".join(f"{m}=0" for m in self.mediators): self.controlled_direct}
        cde = np.asarray(self.controlled_direct)
        out = {}
        for idx in itertools.product(*(range(len(s)) for s in self.mediator_states)):
            key = ", ".join(f"{m}={s[i]}" for m, s, i in zip(self.mediators, self.mediator_states, idx))
            v = cde[(slice(None), *idx)] if self.batched else cde[idx]
            out[key] = v if self.batched else float(v)
        return out

    def as_dict(self) -> dict:
        """Effect name -> value (``"controlled direct (M=m)"`` once per mediator value)."""
        out = {"total": self.total, "natural direct": self.natural_direct, "natural indirect": self.natural_indirect}
        if self.mediators:
            out.update({f"controlled direct ({k})": v for k, v in self.controlled().items()})
        return out

    def to_pandas(self):
        """A DataFrame, one row per effect: column ``"effect"``, or one column per batch row."""
        import pandas as pd

        d = self.as_dict()
        if not self.batched:
            return pd.DataFrame({"effect": [float(v) for v in d.values()]}, index=list(d))
        return pd.DataFrame(np.stack([np.asarray(v, dtype=np.float64) for v in d.values()]), index=list(d))

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}: {_fmt(v)}" for k, v in self.as_dict().items())
        return (f"<CausalEffects of {self.treatment} ({_fmt(self.treated)} vs {_fmt(self.control)}) on "
                f"{self.measure} through {list(self.mediators)}: {parts}; {self.method}>")


def _fmt(v) -> str:
    if np.ndim(v) == 0:
        v = v.item() if isinstance(v, np.generic) else v
        return f"{v:.6g}" if isinstance(v, float) else str(v)
    return np.array2string(np.asarray(v), precision=4, threshold=6)


def _mediators(model, treatment, outcome, mediators) -> tuple:
    dag = model.dag
    if mediators is None:
        between = dag.descendants({treatment}) & dag.ancestors({outcome})
        return tuple(v for v in dag.topological_order() if v in between)
    if isinstance(mediators, (str, bytes)) or not isinstance(mediators, (Sequence, set, frozenset)):
        mediators = [mediators]
    out = []
    for m in mediators:
        model.check_node(m, "mediator", EvidenceError)
        if m in (treatment, outcome):
            raise EvidenceError(f"mediator {m!r} is the treatment or the outcome")
        if m in out:
            raise EvidenceError(f"mediator {m!r} is listed twice")
        out.append(m)
    return tuple(out)


def _measure(model, outcome, outcome_state) -> tuple[str, int | None]:
    spec = model.specs[outcome]
    if spec.kind == DISCRETE:
        k = spec.card - 1 if outcome_state is None else int(decode_states(outcome, spec.states, outcome_state))
        return f"P({outcome}={spec.states[k]})", k
    if spec.kind == REAL and spec.shape == ():
        if outcome_state is not None:
            raise EvidenceError(f"outcome_state is for discrete outcomes; {outcome!r} is {spec.describe()}")
        return f"E[{outcome}]", None
    raise ModelError(f"effects need a discrete or scalar real outcome; {outcome!r} is {spec.describe()}")


class _Expectations:
    """``E[Y]`` in one world given the factual evidence, through the counterfactual engines."""

    def __init__(self, model, outcome, state, evidence, method) -> None:
        self.model = model
        self.outcome = outcome
        self.state = state
        self.evidence = evidence
        self.method = method
        self.last_method = None

    def __call__(self, world: Mapping):
        d = answer(query_request(self.model, [cf(self.outcome, dict(world))], self.evidence, method=self.method))
        self.last_method = d.method
        if isinstance(d, DiscreteDistribution):
            return d.probs[..., self.state]
        if isinstance(d, Gaussian):
            return d.mean[..., 0]
        return np.asarray(d.mean(), dtype=np.float64)


def effects(model, treatment: Hashable, outcome: Hashable, treated, control, mediators=None, *,
            evidence: Mapping | None = None, outcome_state=None, method: str = "auto") -> CausalEffects:
    """Total, controlled direct, natural direct and natural indirect effects of ``X: control -> treated``.

    See :meth:`causalnet.CausalModel.effects` and the module docstring.
    """
    model.check_node(treatment, "treatment", EvidenceError)
    model.check_node(outcome, "outcome", EvidenceError)
    if treatment == outcome:
        raise EvidenceError(f"the treatment and the outcome are the same node {treatment!r}")
    meds = _mediators(model, treatment, outcome, mediators)
    measure, state = _measure(model, outcome, outcome_state)
    kinds = {model.specs[m].kind for m in meds}
    if len(kinds) > 1 or kinds - {DISCRETE, REAL}:
        raise ModelError(f"mediators {list(meds)} must be all discrete or all scalar real")
    E = _Expectations(model, outcome, state, evidence, method)
    x1, x0 = {treatment: treated}, {treatment: control}
    y1, y0 = E(x1), E(x0)
    nde = E({**x1, **{m: cf(m, x0) for m in meds}}) - y0
    engine = E.last_method                                               # the nested counterfactual's engine
    nie = E({**x0, **{m: cf(m, x1) for m in meds}}) - y0
    states = None
    if not meds:
        cde = y1 - y0
    elif kinds == {DISCRETE}:
        states = tuple(model.specs[m].states for m in meds)
        values = []
        for idx in itertools.product(*(range(len(s)) for s in states)):
            at = dict(zip(meds, idx))
            values.append(E({**x1, **at}) - E({**x0, **at}))
        cde = np.stack(values, axis=-1)                                   # (..., prod(cards))
        cde = cde.reshape(cde.shape[:-1] + tuple(len(s) for s in states))  # (..., *cards)
    else:
        at = {m: 0.0 for m in meds}
        cde = E({**x1, **at}) - E({**x0, **at})

    def out(v):
        return float(v) if np.ndim(v) == 0 else np.asarray(v, dtype=np.float64)

    return CausalEffects(treatment=treatment, outcome=outcome, treated=treated, control=control, mediators=meds,
                         measure=measure, total=out(y1 - y0), natural_direct=out(nde), natural_indirect=out(nie),
                         controlled_direct=out(cde) if states is None else np.asarray(cde, dtype=np.float64),
                         mediator_states=states, method=engine)
