"""What an influence diagram is asked: solve it, score a policy, price information and control.

Each function takes an :class:`~causalnet.models.decisions.diagram.InfluenceDiagram`
(through its public views) and works on its :class:`~.solver.DecisionProblem`:

* :func:`solve`: with perfect recall, the information of each decision is
  what it and every earlier decision knew plus the earlier decisions
  (no-forgetting), reduced to its requisite part; single policy updating
  from the last decision to the first is then backward induction, exact in
  one sweep. As a LIMID, single policy updating on the decisions' own
  parents, in an exact solution order when there is one.
* :func:`expected_utility` of any policy, given as rules, tables, callables
  or fixed actions (:func:`split_policy` reads them).
* :func:`value_of_information`, :func:`value_of_control`: MEU differences
  of re-solved diagrams.
* :func:`regret`: the twin network of a model in which a switch chooses, per
  world, between the action taken and the policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...errors import EvidenceError, GraphError, ModelError, ShapeError
from ...inference.discrete.engine import node_table
from ...mechanisms.base import DISCRETE
from ...mechanisms.decisions import Decision, Utility
from ...mechanisms.intervened import Intervened
from ...mechanisms.tabular import CPT, TOL, Categorical
from ...model import CausalModel
from .policy import DecisionRule, Policy, Solution, Tie
from .solver import (
    TIE_RTOL,
    DecisionProblem,
    requisite_parents,
    single_policy_updating,
    solution_order,
)
from .solver import (
    expected_utility as _eu,
)

__all__ = ["problem", "split_policy", "policy_rules", "solve", "expected_utility", "is_soluble", "requisite",
           "value_of_information", "value_of_control", "regret", "Regret"]


def problem(diagram, limid: bool) -> DecisionProblem:
    """The diagram as tables; decision information sets with perfect recall unless `limid`.

    Raises
    ------
    ModelError
        A chance node that is not discrete (or not tabulable), a per-row ``do``.
    """
    specs = diagram.specs
    cards = {v: specs[v].card for v in diagram.nodes if specs[v].kind == DISCRETE}
    chance, utilities = {}, {}
    for v in diagram.nodes:
        mech = diagram.mechanisms[v]
        if v in diagram.decisions:
            continue
        if isinstance(mech, Utility):
            parents = diagram.dag.parents(v)
            order = [mech.parents.index(p) for p in parents]
            utilities[v] = (parents, np.transpose(mech.table, order) if order else mech.table)
            continue
        if specs[v].kind != DISCRETE:
            raise ModelError(f"node {v!r} is {specs[v].describe()}; influence diagrams are solved on discrete chance "
                             f"nodes")
        row_ev: dict = {}
        table = node_table(diagram, v, cards, row_ev)
        if table is None or row_ev:
            raise ModelError(f"node {v!r} ({type(mech).__name__}) cannot be tabulated for solving")
        chance[v] = (diagram.dag.parents(v), table)
    info = {d: diagram.information(d, limid=limid) for d in diagram.decisions}
    return DecisionProblem(cards, chance, tuple(diagram.decisions), info, utilities)


# -- reading policies --------------------------------------------------------------------------


def _rule_table(diagram, d, value) -> tuple[tuple, np.ndarray] | None:
    """``(parents, table)`` of a policy entry for decision `d`, or None for a fixed action (a plain do)."""
    actions = diagram.states(d)
    K = len(actions)
    parents = diagram.dag.parents(d)
    if isinstance(value, DecisionRule):
        if value.decision != d or value.actions != actions:
            raise ModelError(f"the rule for {value.decision!r} with actions {list(value.actions)} does not fit "
                             f"decision {d!r} with actions {list(actions)}")
        bad = set(value.parents) & (diagram.dag.descendants(d) | {d})
        missing = [p for p in value.parents if p not in diagram]
        if missing or bad:
            what = missing[0] if missing else sorted(map(str, bad))[0]
            raise GraphError(f"the rule for {d!r} reads {what!r}, which is not known before {d!r}")
        return tuple(value.parents), np.asarray(value.table)
    cards = [len(diagram.states(p)) for p in parents]
    if callable(value):
        return parents, _tabulate(diagram, d, value, parents, actions)
    arr = np.asarray(value) if not isinstance(value, (str, bytes)) else np.asarray(0)
    if arr.ndim == 0:
        return None
    want = (*cards, K)
    if arr.dtype.kind not in "iuf":
        raise ModelError(f"the policy of {d!r} must be numbers (a table of shape {want}), got {arr.dtype} values")
    if arr.shape != want:
        raise ShapeError(f"the policy table of {d!r} has shape {arr.shape}; informational parents {list(parents)} "
                         f"have cards {tuple(cards)} and {d!r} has {K} actions, so expected {want}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ModelError(f"the policy table of {d!r} must hold probabilities (finite, >= 0)")
    sums = arr.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > TOL):
        row = tuple(int(i) for i in np.argwhere(np.abs(sums - 1.0) > TOL)[0])
        raise ModelError(f"the policy table of {d!r}: row {row} sums to {float(sums[row]):.12g}, expected 1")
    return parents, arr


def _tabulate(diagram, d, fn, parents, actions) -> np.ndarray:
    names = [diagram.states(p) for p in parents]
    table = np.zeros((*[len(s) for s in names], len(actions)))
    for idx in np.ndindex(*table.shape[:-1]):
        try:
            a = fn(*[names[j][i] for j, i in enumerate(idx)])
        except Exception as e:
            raise ModelError(f"the policy of {d!r} raised {type(e).__name__}: {e}") from e
        table[idx + (_action_index(diagram, d, a),)] = 1.0
    return table


def _action_index(diagram, d, a) -> int:
    actions = diagram.states(d)
    try:
        if a in actions:
            return actions.index(a)
    except TypeError:
        pass
    if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)) and 0 <= a < len(actions):
        return int(a)
    raise EvidenceError(f"decision {d!r} has no action {a!r}; actions: {list(actions)}")


def split_policy(diagram, interventions: Mapping) -> tuple[dict, dict]:
    """``(rules, plain)``: decision -> ``(parents, table)`` for table/callable/rule entries, node -> value for the rest.

    A fixed action for a decision stays a plain ``do`` value (checked here).
    """
    rules, plain = {}, {}
    for node, value in interventions.items():
        diagram.check_node(node, "node in the policy")
        if node in diagram.decisions:
            got = _rule_table(diagram, node, value)
            if got is None:
                plain[node] = diagram.states(node)[_action_index(diagram, node, value.item() if isinstance(
                    value, np.ndarray) else value)]
            else:
                rules[node] = got
        elif isinstance(diagram.mechanisms[node], Utility):
            raise ModelError(f"{node!r} is a utility; utilities cannot be intervened on")
        else:
            plain[node] = value
    return rules, plain


def policy_rules(diagram, policy) -> dict:
    """decision -> ``(parents, table)`` for every decision (a fixed action is a one-hot table over no parents).

    Raises
    ------
    ModelError
        A decision without a rule, or an entry for a node that is not a decision.
    """
    if isinstance(policy, Policy):
        policy = dict(policy)
    if not isinstance(policy, Mapping):
        raise ModelError(f"a policy is a Policy or a mapping decision -> rule, got {type(policy).__name__}")
    for node in policy:
        diagram.check_node(node, "decision in the policy")
        if node not in diagram.decisions:
            raise ModelError(f"{node!r} is not a decision without a policy; decisions: {list(diagram.decisions)}")
    missing = [d for d in diagram.decisions if d not in policy]
    if missing:
        raise ModelError(f"the policy gives no rule for decision {missing[0]!r}; every decision needs one")
    rules, plain = split_policy(diagram, policy)
    for d, a in plain.items():
        rules[d] = ((), np.eye(len(diagram.states(d)))[diagram.states(d).index(a)])
    return rules


# -- solving -----------------------------------------------------------------------------------


def _ties(prob: DecisionProblem, d, q: np.ndarray, p_info: np.ndarray, states) -> list:
    """The reachable information states of `d` (``P(i) > 0``) where several actions are within the tie tolerance."""
    tol = TIE_RTOL * prob.utility_scale() * p_info                          # (*info_cards,)
    best = q >= q.max(axis=-1, keepdims=True) - tol[..., None]             # (*info_cards, K)
    out = []
    for idx in np.argwhere((best.sum(axis=-1) > 1) & (p_info > 0)):
        idx = tuple(int(i) for i in idx)
        state = {p: states[p][i] for p, i in zip(prob.info[d], idx)}
        out.append(Tie(d, state, tuple(states[d][k] for k in np.flatnonzero(best[idx]))))
    return out


def solve(diagram, limid: bool) -> Solution:
    """See :meth:`InfluenceDiagram.solve <causalnet.InfluenceDiagram.solve>`."""
    if not diagram.decisions:
        raise ModelError("the diagram has no decision without a policy; there is nothing to solve")
    prob = problem(diagram, limid)
    if not limid:
        prob = prob.with_info(requisite_parents(prob))
        order, exact, method = list(reversed(prob.decisions)), True, "backward induction (perfect recall)"
        order_used = order
        policies, last, sweeps = single_policy_updating(prob, order, max_sweeps=1)
    else:
        order = solution_order(prob)
        exact = order is not None
        method = "single policy updating" + (" (soluble: exact)" if exact else " (not soluble: local optimum)")
        order_used = order or list(reversed(prob.decisions))
        policies, last, sweeps = single_policy_updating(prob, order_used)
    states = {v: diagram.states(v) for v in prob.cards}
    rules, ties = {}, []
    for d in prob.decisions:
        info = prob.info[d]
        rules[d] = DecisionRule(d, info, [states[p] for p in info], states[d], policies[d])
        ties += _ties(prob, d, *last[d], states)
    q, _ = last[order_used[-1]]
    meu = float(np.sum(q * policies[order_used[-1]]))      # the last update saw every other policy final
    return Solution(meu=meu, policy=Policy(rules, ties), method=method, exact=exact, sweeps=sweeps)


def expected_utility(diagram, policy) -> float:
    """See :meth:`InfluenceDiagram.expected_utility <causalnet.InfluenceDiagram.expected_utility>`."""
    rules = policy_rules(diagram, policy)
    prob = problem(diagram, True)
    prob = prob.with_info({d: p for d, (p, _) in rules.items()})
    return _eu(prob, {d: t for d, (_, t) in rules.items()})


def is_soluble(diagram) -> bool:
    """Whether the diagram, as a LIMID on its own informational arcs, has an exact solution ordering."""
    return solution_order(problem(diagram, True)) is not None


def requisite(diagram, decision, limid: bool) -> tuple:
    """The requisite information of `decision` (perfect recall unless `limid`)."""
    return tuple(requisite_parents(problem(diagram, limid))[decision])


def value_of_information(diagram, node, decision) -> float:
    """MEU with an arc ``node -> decision`` minus MEU."""
    diagram.check_node(node)
    if decision not in diagram.decisions:
        diagram.check_node(decision, "decision")
        raise ModelError(f"{decision!r} is not a decision without a policy; decisions: {list(diagram.decisions)}")
    if node in diagram.utilities:
        raise ModelError(f"{node!r} is a utility; the value of information is of chance nodes and decisions")
    if node == decision or node in diagram.dag.descendants(decision):
        raise GraphError(f"{node!r} cannot be observed before {decision!r}: it is {decision!r} or one of its "
                         f"descendants")
    base = diagram.solve().meu
    if node in diagram.dag.parents(decision):
        return 0.0
    new = Decision([*diagram.mechanisms[decision].parents, node], states=diagram.states(decision))
    return diagram.with_mechanisms({decision: new}, diagram.decisions).solve().meu - base


def value_of_control(diagram, node) -> float:
    """MEU when chance node `node` is a decision knowing its parents, minus MEU.

    The new decision is made right after the last decision among its ancestors.
    """
    diagram.check_node(node)
    if node in diagram.decisions or node in diagram.utilities or isinstance(diagram.mechanisms[node], Intervened):
        raise ModelError(f"{node!r} is not a chance node; the value of control is of chance nodes")
    if diagram.specs[node].kind != DISCRETE:
        raise ModelError(f"{node!r} is {diagram.specs[node].describe()}; only discrete nodes can become decisions")
    base = diagram.solve().meu
    anc = diagram.dag.ancestors(node)
    order = list(diagram.decisions)
    at = max([i + 1 for i, d in enumerate(order) if d in anc], default=0)
    order.insert(at, node)
    new = Decision(diagram.dag.parents(node), states=diagram.states(node))
    return diagram.with_mechanisms({node: new}, order).solve().meu - base


# -- regret ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Regret:
    """What following a policy would have changed, given what happened.

    Attributes
    ----------
    value : float or ndarray of shape (n,)
        ``counterfactual - factual`` (positive: the policy would have done better).
    counterfactual : float or ndarray
        Expected utility in the world where the policy was followed, given the evidence.
    factual : float or ndarray
        Expected utility in the actual world, given the evidence.
    scm : str
        The structural causal model of the counterfactual.
    """

    value: float | np.ndarray
    counterfactual: float | np.ndarray
    factual: float | np.ndarray
    scm: str

    def __float__(self) -> float:
        return float(self.value)


def _fresh(name: str, taken) -> str:
    while name in taken:
        name += "'"
    return name


def _switch_model(diagram, rules: dict) -> tuple[CausalModel, str, dict]:
    """The chance part of the diagram with, per decision, ``D = act if S = factual else policy(info)``."""
    prob = problem(diagram, True)
    mechs = {v: CPT(p, t, states=diagram.states(v)) if p else Categorical(t, states=diagram.states(v))
             for v, (p, t) in prob.chance.items()}
    switch = _fresh("policy followed", diagram.nodes)
    mechs[switch] = Categorical([0.5, 0.5], states=["factual", "policy"])
    acts = {}
    for d in diagram.decisions:
        parents, table = rules[d]
        K = len(diagram.states(d))
        act = acts[d] = _fresh(f"{d} taken", set(diagram.nodes) | set(mechs))
        mechs[act] = Categorical(np.full(K, 1.0 / K), states=diagram.states(d))
        full = np.empty((2, K, *table.shape))                               # (S, act, *info, K)
        full[0] = np.eye(K).reshape(K, *([1] * (table.ndim - 1)), K)
        full[1] = table
        mechs[d] = CPT([switch, act, *parents], full, states=diagram.states(d))
    return CausalModel(mechs), switch, acts


def regret(diagram, evidence: Mapping, policy) -> Regret:
    """See :meth:`InfluenceDiagram.regret <causalnet.InfluenceDiagram.regret>`."""
    if not isinstance(evidence, Mapping):
        raise EvidenceError(f"regret expects evidence as a mapping node -> state, got {type(evidence).__name__}")
    for v in evidence:
        diagram.check_node(v, "evidence node", EvidenceError)
        if v in diagram.utilities:
            raise EvidenceError(f"{v!r} is a utility; give the evidence on the nodes it depends on")
    missing = [d for d in diagram.decisions if d not in evidence]
    if missing:
        raise EvidenceError(f"regret needs the action taken at every decision; {missing[0]!r} is missing from the "
                            f"evidence")
    rules = policy_rules(diagram, diagram.solve().policy if policy is None else policy)
    model, switch, acts = _switch_model(diagram, rules)
    ev = {k: v for k, v in evidence.items() if k not in acts}
    ev.update({acts[d]: evidence[d] for d in diagram.decisions})
    ev[switch] = "factual"
    factual = counterfactual = 0.0
    scm = ""
    for u in diagram.utilities:
        parents, table = problem(diagram, True).utilities[u]
        if not parents:
            c = float(table)
            factual, counterfactual = factual + c, counterfactual + c
            continue
        cf = model.counterfactual(list(parents), evidence=ev, do={switch: "policy"})
        scm = cf.scm
        axes = (tuple(range(-len(parents), 0)), tuple(range(len(parents))))
        counterfactual = counterfactual + np.tensordot(np.asarray(cf.probs, dtype=np.float64), table, axes=axes)
        factual = factual + _factual(model, parents, table, ev, diagram)
    factual, counterfactual = _scalar(factual), _scalar(counterfactual)
    return Regret(value=_scalar(np.asarray(counterfactual) - np.asarray(factual)), counterfactual=counterfactual,
                  factual=factual, scm=scm or "monotone inverse-CDF")


def _factual(model, parents, table, ev: dict, diagram):
    """``E[U | evidence]`` in the factual world: observed parents index the table, the others are queried."""
    idx = tuple(diagram.coerce(p, ev[p]) if p in ev else slice(None) for p in parents)
    free = [p for p in parents if p not in ev]
    sub = table[idx] if any(p in ev for p in parents) else table
    if not free:
        return sub
    probs = np.asarray(model.query(free, evidence=ev).probs, dtype=np.float64)
    return np.tensordot(probs, sub, axes=(tuple(range(-len(free), 0)), tuple(range(len(free)))))


def _scalar(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x
