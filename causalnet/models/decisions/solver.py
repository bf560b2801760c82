"""Expected utilities and optimal policies of an influence diagram, on the discrete factor algebra.

A :class:`DecisionProblem` is an influence diagram as tables: the CPT of every chance
node, the actions and informational parents of every decision, the table of
every utility. Everything here computes with the
:class:`~causalnet.inference.discrete.factors.Factor` algebra and
:func:`~causalnet.inference.discrete.elimination.variable_elimination` of
the discrete engine; nothing else.

* :func:`expected_utility` of a policy (one table ``(*info_cards, K)`` per
  decision): ``sum_j E[U_j]``, one elimination per utility over the
  ancestors of its parents (barren nodes pruned).
* :func:`q_table` of a decision ``d`` with the other decisions' policies
  fixed: ``Q(i, a) = sum_j sum_x P(i, x | do(d = a)) U_j(x)`` over the
  information states ``i`` — the decision's own policy is left out of the
  product, which is ``do(d = a)``. ``argmax_a Q(i, a)`` is the best action in
  state ``i`` whenever ``P(i) > 0``.
* :func:`single_policy_updating` (Lauritzen & Nilsson): start from uniform
  policies, replace each decision's policy in turn by its best response
  (:func:`q_table`), in a given order, sweep until nothing changes. On a
  *soluble* diagram, in an exact solution order (:func:`solution_order`),
  the first sweep is optimal; with perfect recall the no-forgetting
  information sets make every diagram soluble in reverse decision order,
  which is backward induction.
* :func:`requisite_parents`: the informational parents that can matter, by
  d-separation, reducing from the last decision to the first until nothing
  changes.

Utilities may be negative: a utility factor is shifted by its minimum (factors
hold non-negative numbers) and the shift added back (``E[U] = E[U - c] + c``;
in a ``Q`` table it adds ``c P(i)``, the same for every action).

Symbols: ``K`` actions, ``i`` an information state.

References
----------
.. [1] S. L. Lauritzen and D. Nilsson, "Representing and solving decision
   problems with limited information", Management Science 47(9), 2001.
.. [2] D. Koller and B. Milch, "Multi-agent influence diagrams for
   representing and solving games", Games and Economic Behavior 45, 2003.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ...graph.dag import DAG
from ...graph.separation import bayes_ball
from ...inference.discrete.elimination import variable_elimination
from ...inference.discrete.factors import Factor

__all__ = ["DecisionProblem", "expected_utility", "q_table", "information_probs", "single_policy_updating",
           "uniform_policy", "requisite_parents", "solution_order", "is_extremal", "TIE_RTOL"]

TIE_RTOL = 1e-9
"""Two actions tie when their expected utilities differ by at most ``TIE_RTOL`` times the utility scale."""


@dataclass(frozen=True)
class DecisionProblem:
    """An influence diagram as tables.

    Attributes
    ----------
    cards : dict node -> int
        States of every chance node and actions of every decision.
    chance : dict node -> (parents, table)
        ``table`` of shape ``(*parent_cards, card)`` (decisions under a
        fixed policy or ``do`` are chance nodes here).
    decisions : tuple
        The decisions still to be chosen, in their order.
    info : dict decision -> tuple of nodes
        The information set each decision's policy reads.
    utilities : dict node -> (parents, table)
        ``table`` of shape ``(*parent_cards,)``.
    """

    cards: dict
    chance: dict
    decisions: tuple
    info: dict
    utilities: dict
    _factors: dict = field(default_factory=dict, compare=False, repr=False)

    def with_info(self, info: Mapping) -> DecisionProblem:
        """The same problem with other information sets."""
        return replace(self, info=dict(info), _factors={})

    def parents_map(self) -> dict:
        """node -> parents, over chance nodes, decisions (their information sets) and utilities."""
        out = {v: tuple(p) for v, (p, _) in self.chance.items()}
        out.update({d: tuple(self.info[d]) for d in self.decisions})
        out.update({u: tuple(p) for u, (p, _) in self.utilities.items()})
        return out

    def dag(self) -> DAG:
        """The diagram's DAG with the current information arcs."""
        pm = self.parents_map()
        return DAG([(p, v) for v, ps in pm.items() for p in ps], nodes=list(pm))

    def chance_factor(self, v: Hashable) -> Factor:
        f = self._factors.get(v)
        if f is None:
            parents, table = self.chance[v]
            f = self._factors[v] = Factor.from_cpt(v, parents, table)
        return f

    def utility_factor(self, u: Hashable) -> tuple[Factor | None, float]:
        """``(factor of U - c, c)`` with ``c`` the minimum of the table (factor None for a constant utility)."""
        key = ("utility", u)
        got = self._factors.get(key)
        if got is None:
            parents, table = self.utilities[u]
            c = float(np.min(table))
            got = self._factors[key] = (Factor(parents, table - c) if parents else None, c)
        return got

    def utility_scale(self) -> float:
        """``sum_j max |U_j|`` (at least 1): the scale of the tie tolerance."""
        return max(1.0, sum(float(np.max(np.abs(t))) for _, t in self.utilities.values()))


def uniform_policy(problem: DecisionProblem, d: Hashable) -> np.ndarray:
    """The uniform policy of `d`: ``(*info_cards, K)`` filled with ``1/K``."""
    shape = (*[problem.cards[p] for p in problem.info[d]], problem.cards[d])
    return np.full(shape, 1.0 / problem.cards[d])


def _ancestral(pm: Mapping, nodes) -> set:
    seen, stack = set(), list(nodes)
    while stack:
        v = stack.pop()
        if v not in seen:
            seen.add(v)
            stack.extend(pm[v])
    return seen


def _factors(problem: DecisionProblem, policies: Mapping, nodes, skip=None) -> list[Factor]:
    out = []
    for v in nodes:
        if v in problem.chance:
            out.append(problem.chance_factor(v))
        elif v in problem.decisions and v != skip:
            out.append(Factor.from_cpt(v, problem.info[v], policies[v]))
    return out


def expected_utility(problem: DecisionProblem, policies: Mapping) -> float:
    """``sum_j E[U_j]`` when every decision follows its policy.

    Parameters
    ----------
    problem : DecisionProblem
    policies : mapping decision -> ndarray of shape (*info_cards, K)
        Rows sum to 1 (deterministic policies are one-hot rows).

    Returns
    -------
    float
    """
    pm = problem.parents_map()
    total = 0.0
    for u, (parents, _) in problem.utilities.items():
        f, c = problem.utility_factor(u)
        total += c
        if f is None:
            continue
        nodes = _ancestral(pm, parents)
        total += float(variable_elimination([*_factors(problem, policies, nodes), f], ()).values)
    return total


def information_probs(problem: DecisionProblem, policies: Mapping, d: Hashable) -> np.ndarray:
    """``P(i)``, shape ``(*info_cards,)``, of `d`'s information states under the policies of the others."""
    return q_table(problem, policies, d)[1]


_J = ("utility index",)
"""The auxiliary variable that sums the utilities inside one elimination (a tuple: never a node name)."""


def q_table(problem: DecisionProblem, policies: Mapping, d: Hashable) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, P(i))``: ``Q(i, a)``, shape ``(*info_cards, K)``, is ``P(i)`` times the expected utility of action
    ``a`` in information state ``i``; ``P(i)`` has shape ``(*info_cards,)``.

    The other decisions follow `policies`; `d`'s own entry is ignored. One
    elimination computes every utility at once: an auxiliary variable ``J``
    over ``0..m`` (``m`` utilities) with one factor per utility,
    ``F_j(J, pa_j) = U_j(pa_j) - c_j`` at ``J = j`` and 1 elsewhere, so that
    the product over ``j`` is ``U_j - c_j`` at ``J = j`` and 1 at ``J = 0``;
    keeping ``J`` gives ``P(i)`` (at ``J = 0``) and every utility's share.
    """
    info = tuple(problem.info[d])
    keep = (*info, d)
    pm = problem.parents_map()
    utils = [(f, c) for f, c in (problem.utility_factor(u) for u in problem.utilities)]
    shift = sum(c for _, c in utils)
    utils = [f for f, _ in utils if f is not None]
    m = len(utils) + 1
    fs = [Factor((_J,), np.ones(m)), Factor((d,), np.ones(problem.cards[d]))]
    for j, f in enumerate(utils, start=1):
        arr = np.ones((m, *f.cards))                            # (m, *pa_cards)
        arr[j] = f.values
        fs.append(Factor((_J, *f.vars), arr))
    nodes = _ancestral(pm, (*keep, *(v for f in utils for v in f.vars))) - {d}
    fs += _factors(problem, policies, nodes, skip=d)
    r = np.asarray(variable_elimination(fs, (*keep, _J)).values)   # (*info_cards, K, m)
    p_info = r[..., 0, 0]
    q = r[..., 1:].sum(axis=-1) + shift * p_info[..., None]
    return q, p_info


def _descendants(pm: Mapping, d: Hashable) -> set:
    children: dict = {}
    for v, ps in pm.items():
        for p in ps:
            children.setdefault(p, []).append(v)
    seen, stack = set(), [d]
    while stack:
        v = stack.pop()
        for c in children.get(v, ()):
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return seen


def best_response(problem: DecisionProblem, policies: Mapping, d: Hashable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(policy, q, p_info)``: the one-hot best response of `d`, its ``Q`` table and ``P(i)``.

    Where the current policy of `d` is deterministic and within the tie
    tolerance of the best, it is kept (so sweeps stop); otherwise the first
    best action is taken.
    """
    q, p_info = q_table(problem, policies, d)
    tol = TIE_RTOL * problem.utility_scale() * np.maximum(p_info, 1e-300)[..., None]
    best = q.max(axis=-1, keepdims=True)
    choice = np.argmax(q, axis=-1)
    current = np.asarray(policies[d])
    if np.all((current == 0) | (current == 1)):
        cur = np.argmax(current, axis=-1)
        cur_q = np.take_along_axis(q, cur[..., None], axis=-1)
        choice = np.where((cur_q >= best - tol)[..., 0], cur, choice)
    return np.eye(problem.cards[d])[choice], q, p_info


def single_policy_updating(problem: DecisionProblem, order: Sequence[Hashable], *, max_sweeps: int = 100,
                           init: Mapping | None = None) -> tuple[dict, dict, int]:
    """Single policy updating from uniform policies, in `order`, until a sweep changes nothing.

    Returns
    -------
    policies : dict decision -> one-hot ndarray (*info_cards, K)
    last : dict decision -> (q, p_info) of the last update
    sweeps : int
    """
    policies = {d: uniform_policy(problem, d) for d in problem.decisions}
    if init:
        policies.update(init)
    last: dict = {}
    for sweep in range(1, max_sweeps + 1):
        changed = False
        for d in order:
            new, q, p_info = best_response(problem, policies, d)
            last[d] = (q, p_info)
            if not np.array_equal(new, policies[d]):
                changed = True
                policies[d] = new
        if not changed:
            return policies, last, sweep
    return policies, last, max_sweeps


# -- structure: requisite parents, solubility --------------------------------------------


def _separated(dag: DAG, xs, ys, given) -> bool:
    xs = set(xs) - set(given)
    ys = set(ys) - set(given)
    if not xs or not ys:
        return True
    return dag.d_separated(xs, ys, given=set(given))


def requisite_parents(problem: DecisionProblem) -> dict:
    """decision -> the informational parents that can matter (a sub-tuple of its information set).

    A parent ``n`` of ``d`` is not requisite when it is d-separated from the
    utilities downstream of ``d`` given ``d`` and its other parents; such
    arcs are removed, from the last decision to the first, until nothing
    changes (Lauritzen & Nilsson, Koller & Milch). The requisite parents of
    ``d`` are the ones a Bayes-ball from those utilities reaches given ``d``
    and all its parents (Shachter's requisite observations): one search per
    decision.
    """
    info = {d: tuple(problem.info[d]) for d in problem.decisions}
    utilities = set(problem.utilities)
    changed = True
    while changed:
        changed = False
        for d in reversed(problem.decisions):
            pm = problem.with_info(info).parents_map()
            chi: dict = {v: [] for v in pm}
            for v, ps in pm.items():
                for p in ps:
                    chi[p].append(v)
            down = _descendants(pm, d) & utilities
            up, below = bayes_ball(pm, chi, down, {d, *info[d]}) if down else (set(), set())
            keep = tuple(n for n in info[d] if n in up or n in below)
            if keep != info[d]:
                info[d] = keep
                changed = True
    return info


def is_extremal(problem: DecisionProblem, d: Hashable, others: Sequence[Hashable]) -> bool:
    """Whether `d` is extremal among `others`: its downstream utilities are d-separated from the
    other decisions and their parents given `d` and its parents (Lauritzen & Nilsson)."""
    pm = problem.parents_map()
    fam = {d, *problem.info[d]}
    down = _descendants(pm, d) & set(problem.utilities)
    rest = set()
    for e in others:
        if e != d:
            rest |= {e, *problem.info[e]}
    return _separated(problem.dag(), down, rest, fam)


def solution_order(problem: DecisionProblem) -> list | None:
    """An exact solution ordering (the decisions to update, first to last), or None if the diagram is not soluble.

    Repeatedly takes a decision extremal among those left (preferring the
    latest in the decision order); single policy updating in this order is
    exact.
    """
    left = list(problem.decisions)
    out = []
    while left:
        pick = next((d for d in reversed(left) if is_extremal(problem, d, left)), None)
        if pick is None:
            return None
        out.append(pick)
        left.remove(pick)
    return out
