"""Policies: per decision, a table from its information states to an action.

A :class:`DecisionRule` is one decision's table of shape ``(*info_cards, K)``
(row ``i`` the probabilities of the ``K`` actions in information state ``i``;
one-hot rows for a deterministic rule); a :class:`Policy` holds one rule per
decision; a :class:`Solution` is what :meth:`InfluenceDiagram.solve
<causalnet.InfluenceDiagram.solve>` returns: the maximum expected utility
and an optimal policy.

Examples
--------
>>> import causalnet as cn
>>> m = cn.gallery.load("oil-wildcatter")
>>> sol = m.solve()
>>> round(sol.meu, 6)
22.5
>>> sol.policy["Drill"].action(Test="yes", Result="closed")
'drill'
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import EvidenceError

__all__ = ["DecisionRule", "Policy", "Solution", "Tie"]


class DecisionRule:
    """One decision's rule: the action (probabilities) in each information state.

    Parameters
    ----------
    decision : node
    parents : sequence of nodes
        The information the rule reads, in the table's axis order.
    parent_states : sequence of tuples
        The state names of each parent.
    actions : tuple
        The decision's action names.
    table : ndarray of shape (*info_cards, K)
        Rows sum to 1.

    Attributes
    ----------
    deterministic : bool
        Every row is one-hot.
    """

    def __init__(self, decision: Hashable, parents: Sequence[Hashable], parent_states: Sequence[tuple],
                 actions: Sequence, table: np.ndarray) -> None:
        self.decision = decision
        self.parents = tuple(parents)
        self.parent_states = tuple(tuple(s) for s in parent_states)
        self.actions = tuple(actions)
        t = np.array(table, dtype=np.float64)
        t.setflags(write=False)
        self.table = t
        self.deterministic = bool(np.all((t == 0) | (t == 1)))

    @property
    def choice(self) -> np.ndarray:
        """``(*info_cards,)`` the index of the most probable action in each state (the action, when deterministic)."""
        return np.argmax(self.table, axis=-1)

    def _index(self, states: Mapping) -> tuple:
        idx = []
        for p, names in zip(self.parents, self.parent_states):
            if p not in states:
                raise EvidenceError(f"decision {self.decision!r} reads {list(self.parents)}; {p!r} is missing")
            s = states[p]
            if s in names:
                idx.append(names.index(s))
            elif isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < len(names):
                idx.append(int(s))
            else:
                raise EvidenceError(f"{p!r} has no state {s!r}; states: {list(names)}")
        return tuple(idx)

    def probs(self, states: Mapping | None = None, **kw) -> np.ndarray:
        """``(K,)`` the action probabilities in the information state given by name (a dict or keywords)."""
        return self.table[self._index({**(states or {}), **kw})]

    def action(self, states: Mapping | None = None, **kw):
        """The (most probable) action in an information state, e.g. ``rule.action(Test="yes", Result="closed")``.

        Raises
        ------
        EvidenceError
            A parent missing or a state it does not have.
        """
        return self.actions[int(np.argmax(self.probs(states, **kw)))]

    def to_pandas(self):
        """One row per information state: the parents' states, then the action (or one column per action)."""
        import pandas as pd

        grid = list(np.ndindex(*self.table.shape[:-1]))
        rows = {p: [self.parent_states[j][i[j]] for i in grid] for j, p in enumerate(self.parents)}
        if self.deterministic:
            rows[self.decision] = [self.actions[int(np.argmax(self.table[i]))] for i in grid]
        else:
            for k, a in enumerate(self.actions):
                rows[f"P({self.decision}={a})"] = [float(self.table[i][k]) for i in grid]
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        kind = "deterministic" if self.deterministic else "stochastic"
        return f"<DecisionRule {self.decision!r} | {list(self.parents)}: {kind}, {len(self.actions)} actions>"


@dataclass(frozen=True)
class Tie:
    """An information state where several actions are optimal.

    Attributes
    ----------
    decision : node
    state : dict parent -> state name
    actions : tuple
        The optimal actions (the policy takes the first).
    """

    decision: Hashable
    state: dict
    actions: tuple


class Policy(Mapping):
    """A rule per decision (a read-only mapping decision -> :class:`DecisionRule`).

    Parameters
    ----------
    rules : mapping decision -> DecisionRule
    ties : sequence of Tie, optional
        Information states where another action is as good (found when solving).
    """

    def __init__(self, rules: Mapping[Hashable, DecisionRule], ties: Sequence[Tie] = ()) -> None:
        self._rules = dict(rules)
        self._ties = tuple(ties)

    def __getitem__(self, decision: Hashable) -> DecisionRule:
        try:
            return self._rules[decision]
        except (KeyError, TypeError):
            raise EvidenceError(f"the policy has no decision {decision!r}; decisions: {list(self._rules)}") from None

    def __iter__(self) -> Iterator:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    @property
    def ties(self) -> tuple:
        """The :class:`Tie` s: reachable information states where several actions are optimal."""
        return self._ties

    def to_pandas(self) -> dict:
        """decision -> DataFrame (:meth:`DecisionRule.to_pandas`)."""
        return {d: r.to_pandas() for d, r in self._rules.items()}

    def __repr__(self) -> str:
        body = ", ".join(f"{d!r} | {list(r.parents)}" for d, r in self._rules.items())
        return f"<Policy {body}>"


@dataclass(frozen=True)
class Solution:
    """The answer of :meth:`InfluenceDiagram.solve <causalnet.InfluenceDiagram.solve>`.

    Attributes
    ----------
    meu : float
        The maximum expected utility (the expected utility of `policy`).
    policy : Policy
        An optimal policy (with perfect recall, or a locally optimal one for a
        LIMID that is not soluble; see `exact`).
    method : str
        How it was found.
    exact : bool
        Whether `meu` is guaranteed to be the maximum (False only for a LIMID
        that is not soluble, where single policy updating gives a local optimum).
    sweeps : int
        Sweeps of single policy updating.
    """

    meu: float
    policy: Policy
    method: str
    exact: bool
    sweeps: int

    @property
    def ties(self) -> tuple:
        """The policy's ties (:attr:`Policy.ties`)."""
        return self.policy.ties

    def __repr__(self) -> str:
        return f"<Solution meu={self.meu:.6g} ({self.method}); {self.policy!r}>"
