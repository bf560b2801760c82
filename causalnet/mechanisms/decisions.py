"""Decision and utility nodes: what we choose, and what we value.

An influence diagram is a causal model with two more node kinds:

* a :class:`Decision` is a discrete node whose value is *chosen*, knowing its
  parents (its *informational* parents). It has no distribution of its own:
  a policy (a table from the parents' states to an action, or ``do``) gives
  it one. Sampling, querying or scoring a model whose decision has no policy
  raises a :class:`~causalnet.errors.ModelError` saying so, never a silent
  uniform choice.
* a :class:`Utility` is a real-valued deterministic leaf: a table of shape
  ``(*parent_cards,)`` giving the value of each configuration of its discrete
  parents. The total utility of a run is the sum of the utility nodes.

:class:`causalnet.InfluenceDiagram` builds models of them and solves them.

Examples
--------
>>> import causalnet as cn
>>> d = cn.Decision([], states=["stay", "go"])
>>> u = cn.Utility(["D"], [0.0, 1.0])
>>> u.table.tolist()
[0.0, 1.0]
>>> cn.CausalModel({"D": d, "U": u}).sample(2)
Traceback (most recent call last):
...
causalnet.errors.ModelError: decision 'D' has no policy: give it one with m.do(policy) (or do={'D': action}), or solve the diagram with m.solve()

Symbols: ``n`` batch, ``K`` actions.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ..errors import ModelError
from .base import DISCRETE, REAL, Mechanism, Spec, as_real_array, check_states

__all__ = ["Decision", "Utility", "no_policy_error"]


def no_policy_error(node: Hashable) -> ModelError:
    """The one error of a decision without a policy, naming `node` and the ways to give it one."""
    return ModelError(f"decision {node!r} has no policy: give it one with m.do(policy) (or do={{{node!r}: action}}), "
                      f"or solve the diagram with m.solve()")


class Decision(Mechanism):
    """A decision node: a discrete choice made knowing its (informational) parents.

    Parameters
    ----------
    parents : sequence of node names
        What is known when the decision is made (discrete nodes: chance
        nodes or earlier decisions).
    states : sequence of K names, or int
        The actions (an int ``K`` names them ``0..K-1``); at least one.

    Raises
    ------
    ModelError
        On bad states, or (when the model is built) a parent that is not discrete.

    Notes
    -----
    The node has no distribution until a policy is given
    (:meth:`causalnet.InfluenceDiagram.do`); :meth:`evaluate` and
    :meth:`log_prob` raise a :class:`~causalnet.errors.ModelError` saying a
    policy or ``do`` is needed.

    Examples
    --------
    >>> Decision(["Test result"], states=["drill", "skip"]).states
    ('drill', 'skip')
    """

    kind = DISCRETE

    def __init__(self, parents: Sequence[Hashable] = (), states=None) -> None:
        super().__init__(parents)
        who = f"Decision over parents {list(self.parents)}"
        if states is None:
            raise ModelError(f"{who}: states are required (a list of action names, or their number)")
        if isinstance(states, (int, np.integer)) and not isinstance(states, (bool, np.bool_)):
            if states < 1:
                raise ModelError(f"{who}: needs at least one action, got states={int(states)}")
            states = list(range(int(states)))
        if isinstance(states, (str, bytes)) or not hasattr(states, "__len__"):
            raise ModelError(f"{who}: states must be a list of action names, got {states!r}")
        if len(states) < 1:
            raise ModelError(f"{who}: needs at least one action, got states={list(states)!r}")
        self._states = check_states(states, len(states), who)

    @property
    def states(self) -> tuple:
        """The action names."""
        return self._states

    @property
    def card(self) -> int:
        """The number of actions ``K``."""
        return len(self._states)

    def spec(self, node, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        for p in self.parents:
            ps = parent_specs[p]
            if ps.kind != DISCRETE:
                raise ModelError(f"decision {node!r}: informational parent {p!r} is {ps.describe()}; decisions "
                                 f"observe discrete nodes")
        return Spec(DISCRETE, states=self._states, shape=(), dtype=np.int64)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        raise no_policy_error(node)

    def log_prob(self, node, value, parents, spec):
        raise no_policy_error(node)

    def to_dict(self) -> dict:
        return {"type": "Decision", "parents": list(self.parents), "states": list(self._states)}

    def __repr__(self) -> str:
        return f"Decision(parents={list(self.parents)}, states={list(self._states)})"


class Utility(Mechanism):
    """A utility node: a real-valued deterministic leaf, a table over its discrete parents.

    Parameters
    ----------
    parents : sequence of node names
        Discrete nodes (chance or decision), in the table's axis order.
    table : array_like of shape (*parent_cards,)
        ``table[i, j]`` is the utility when the parents are in states
        ``(i, j)``; finite reals. A scalar for a utility without parents.

    Raises
    ------
    ModelError
        Non-finite or non-real entries; (when the model is built) a shape that
        does not match the parents' cardinalities, or a parent that is not discrete.

    Examples
    --------
    >>> import numpy as np
    >>> u = Utility(["Drill", "Oil"], [[-70, 50, 200], [0, 0, 0]])
    >>> u.evaluate("U", {"Drill": np.array([0, 1]), "Oil": np.array([2, 2])}, None, None).tolist()
    [200.0, 0.0]
    """

    kind = REAL
    deterministic = True

    def __init__(self, parents: Sequence[Hashable], table) -> None:
        super().__init__(parents)
        who = f"Utility over parents {list(self.parents)}"
        self._table = as_real_array(table, who, "the table", ndim=len(self.parents))

    @property
    def table(self) -> np.ndarray:
        """The utility table, shape ``(*parent_cards,)`` (read-only)."""
        return self._table

    def spec(self, node, parent_specs: Mapping[Hashable, Spec]) -> Spec:
        cards = []
        for p in self.parents:
            ps = parent_specs[p]
            if ps.kind != DISCRETE:
                raise ModelError(f"utility {node!r}: parent {p!r} is {ps.describe()}; a utility table needs "
                                 f"discrete parents")
            cards.append(ps.card)
        if self._table.shape != tuple(cards):
            raise ModelError(f"utility {node!r} has a table of shape {self._table.shape}; parents "
                             f"{tuple(self.parents)} have cards {tuple(cards)}, so expected {tuple(cards)}")
        return Spec(REAL)

    def evaluate(self, node, parents, noise, spec, *, n=None):
        if not self.parents:
            return np.full(1 if n is None else n, float(self._table))
        return self._table[tuple(np.asarray(parents[p]) for p in self.parents)].astype(np.float64)   # (n,)

    def to_dict(self) -> dict:
        return {"type": "Utility", "parents": list(self.parents), "table": self._table.tolist()}

    def __repr__(self) -> str:
        return f"Utility(parents={list(self.parents)}, shape={self._table.shape})"
