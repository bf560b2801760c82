"""causalnet.models.decisions: influence diagrams, whose decisions are interventions chosen by a policy.

:class:`InfluenceDiagram` (a :class:`~causalnet.CausalModel` with
:class:`~causalnet.Decision` and :class:`~causalnet.Utility` nodes) is solved
exactly (:meth:`~InfluenceDiagram.solve`: backward induction with perfect
recall, single policy updating for LIMIDs); a :class:`Policy` holds one
:class:`DecisionRule` per decision and ``m.do(policy)`` is the model under it.
The value of information and of control, the requisite information and the
counterfactual regret of what was done are asked of the same diagram.

Modules: :mod:`.diagram` (the model and its checks), :mod:`.policy` (rules,
policies, solutions), :mod:`.solver` (the algorithms on the discrete factor
algebra), :mod:`.analysis` (reading policies, solving, value of information,
regret).
"""

from .analysis import Regret
from .diagram import InfluenceDiagram
from .policy import DecisionRule, Policy, Solution, Tie

__all__ = ["InfluenceDiagram", "Policy", "DecisionRule", "Solution", "Tie", "Regret"]
