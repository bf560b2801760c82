"""InfluenceDiagram: a causal model with decisions (interventions chosen by a policy) and utilities.

An influence diagram is a :class:`~causalnet.CausalModel` whose nodes are
chance nodes (discrete mechanisms), :class:`~causalnet.Decision` nodes (what
we choose, knowing their informational parents) and
:class:`~causalnet.Utility` nodes (what we value: real-valued leaves). Its
checks: utilities have no children, and — unless it is a LIMID
(``limid=True``) — the decisions are totally ordered, by directed paths
(informational arcs) or by ``order=``.

A policy turns every decision into an ordinary node (a table from its
informational parents to the actions), so ``m.do(policy)`` is again a model on
which every query, d-separation and diagram works; a fixed action is a plain
``do``. Queries on a diagram run on the part of it they need (the ancestors of
the targets and evidence): a decision without a policy there is a
:class:`~causalnet.errors.ModelError` naming it; utilities, which no chance
node depends on, are left out.

Diagrams draw decisions as boxes, utilities as diamonds and informational
arcs dashed.

Examples
--------
>>> import causalnet as cn
>>> m = cn.InfluenceDiagram({
...     "Weather": cn.Categorical([0.7, 0.3], states=["sun", "rain"]),
...     "Forecast": cn.CPT(["Weather"], [[0.8, 0.2], [0.3, 0.7]], states=["sunny", "rainy"]),
...     "Umbrella": cn.Decision(["Forecast"], states=["leave", "take"]),
...     "Joy": cn.Utility(["Weather", "Umbrella"], [[100, 70], [0, 80]]),
... })
>>> sol = m.solve()
>>> round(sol.meu, 4), sol.policy["Umbrella"].action(Forecast="rainy")
(82.6, 'take')
>>> round(float(m.do(sol.policy).query("Umbrella")["take"]), 4)
0.35
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from ...errors import GraphError, ModelError
from ...graph.dag import DAG
from ...mechanisms.decisions import Decision, Utility, no_policy_error
from ...mechanisms.tabular import CPT, Categorical
from ...model import CausalModel
from ...queries import parse_query
from . import analysis
from .policy import Policy, Solution

__all__ = ["InfluenceDiagram"]


class InfluenceDiagram(CausalModel):
    """A causal model with decision and utility nodes, and what it takes to solve it.

    Parameters
    ----------
    mechanisms : mapping node -> Mechanism
        Chance nodes (discrete: ``Categorical``, ``CPT``, ...), ``Decision``
        and ``Utility`` nodes.
    latent : iterable of nodes, optional
    order : sequence of decisions, optional
        The order in which the decisions are made, when no directed path
        orders them; it must agree with the DAG.
    limid : bool, default False
        A limited-memory diagram: decisions know only their parents (no
        perfect recall) and need not be ordered; :meth:`solve` uses single
        policy updating.

    Raises
    ------
    ModelError
        A utility with children, a node name used twice, the mechanisms' own checks.
    GraphError
        Decisions not totally ordered (and neither `order` nor `limid`), or
        an `order` that disagrees with the DAG.
    """

    def __init__(self, mechanisms: Mapping[Hashable, Any], *, latent: Iterable[Hashable] = (),
                 order: Sequence[Hashable] | None = None, limid: bool = False) -> None:
        super().__init__(mechanisms, latent=latent)
        self._setup(order, limid)
        self._all_order = self._decisions

    def _setup(self, order, limid: bool, drawn: Iterable[Hashable] = ()) -> None:
        mechs = self.mechanisms
        if not isinstance(limid, bool):
            raise ModelError(f"limid must be True or False, got {limid!r}")
        self._limid = limid
        self._utilities = tuple(v for v in self.nodes if isinstance(mechs[v], Utility))
        for u in self._utilities:
            kids = self.dag.children(u)
            if kids:
                raise ModelError(f"utility {u!r} has children {list(kids)}; utilities are leaves (what is valued, "
                                 f"never a cause)")
        undecided = [v for v in self.dag.topological_order() if isinstance(mechs[v], Decision)]
        self._drawn = frozenset(drawn) | frozenset(undecided)
        self._decisions = self._check_order(undecided, order)

    def _check_order(self, undecided: list, order, paths: bool = False) -> tuple:
        """The decision order: `order` checked against the DAG, or the topological one (checked to be a chain
        of directed paths unless the diagram is a LIMID, or when `paths`); sets ``_ordered``."""
        dag = self.dag
        if order is not None:
            if isinstance(order, (str, bytes)) or not isinstance(order, Iterable):
                raise ModelError(f"order must be a list of decisions, got {order!r}")
            order = list(order)
            if sorted(map(str, order)) != sorted(map(str, undecided)) or len(set(order)) != len(order):
                raise GraphError(f"order {list(order)} must list every decision once; decisions: {undecided}")
            for i, d in enumerate(order):
                later = [e for e in order[i + 1:] if e in dag.ancestors(d)]
                if later:
                    raise GraphError(f"order puts {d!r} before {later[0]!r}, but {later[0]!r} is an ancestor of "
                                     f"{d!r} in the DAG")
            self._ordered = True
            return tuple(order)
        self._ordered = False
        if not self._limid or paths:
            for a, b in zip(undecided, undecided[1:]):
                if a not in dag.ancestors(b):
                    raise GraphError(f"decisions {a!r} and {b!r} are not ordered by informational arcs (no directed "
                                     f"path from one to the other): pass order=[...] to say which is made first, "
                                     f"or limid=True for a limited-memory diagram")
            self._ordered = True
        return tuple(undecided)

    # -- views ------------------------------------------------------------------------

    @property
    def decisions(self) -> tuple:
        """The decisions without a policy, in the order they are made."""
        return self._decisions

    @property
    def decision_order(self) -> tuple:
        """Every decision of the diagram as built, in order (including those given a policy or a ``do`` since)."""
        return self._all_order

    @property
    def utilities(self) -> tuple:
        """The utility nodes."""
        return self._utilities

    @property
    def limid(self) -> bool:
        """Whether this is a limited-memory diagram (no perfect recall)."""
        return self._limid

    @property
    def chance_nodes(self) -> tuple:
        """Every node that is neither an undecided decision nor a utility."""
        skip = set(self._decisions) | set(self._utilities)
        return tuple(v for v in self.nodes if v not in skip)

    def information(self, decision: Hashable, *, limid: bool | None = None) -> tuple:
        """What `decision` knows: its parents, and with perfect recall also the earlier decisions and what they knew.

        Parameters
        ----------
        decision : node
        limid : bool, optional
            Default: the diagram's own. True: the parents only.

        Raises
        ------
        ModelError
            If `decision` is not a decision of the diagram.
        GraphError
            Perfect recall asked of a LIMID whose decisions are not ordered.
        """
        d = self._check_decision(decision)
        if self._limid if limid is None else limid:
            return self.dag.parents(d)
        if self._limid and not self._ordered:
            self._check_order(list(self._decisions), None, paths=True)
        k = self._decisions.index(d)
        known = set()
        for e in self._decisions[:k + 1]:
            known |= set(self.dag.parents(e))
        known |= set(self._decisions[:k])
        bad = known & self.dag.descendants(d)
        if bad:
            raise GraphError(f"with perfect recall {d!r} knows {sorted(map(str, bad))}, which it causes; the "
                             f"decision order disagrees with the DAG (or use limid=True)")
        return tuple(v for v in self.dag.topological_order() if v in known)

    def _check_decision(self, decision: Hashable) -> Hashable:
        self.check_node(decision, "decision")
        if decision not in self._decisions:
            raise ModelError(f"{decision!r} is not a decision without a policy; decisions: {list(self._decisions)}")
        return decision

    def __repr__(self) -> str:
        return (f"<InfluenceDiagram {len(self.chance_nodes)} chance nodes, {len(self._decisions)} decisions, "
                f"{len(self._utilities)} utilities{' (LIMID)' if self._limid else ''}>")

    # -- policies -------------------------------------------------------------------------

    def do(self, interventions) -> InfluenceDiagram:
        """The diagram under a policy and/or interventions: a new diagram; this one is unchanged.

        Parameters
        ----------
        interventions : Policy, or mapping node -> value
            For a decision: a :class:`~causalnet.models.decisions.DecisionRule`,
            a table of shape ``(*informational_parent_cards, n_actions)``
            (rows sum to 1), a callable of the informational parents' states
            (in parent order) returning an action, or a fixed action (a plain
            ``do``). For any other node: as in :meth:`CausalModel.do`.

        Returns
        -------
        InfluenceDiagram
            Decisions with a table policy become ``CPT`` nodes (drawn as
            boxes still); the others with a fixed action are intervened.

        Raises
        ------
        ModelError, ShapeError, EvidenceError
            A table of the wrong shape, an unknown action, an unknown node.
        """
        if isinstance(interventions, Policy):
            interventions = dict(interventions)
        if not isinstance(interventions, Mapping):
            raise ModelError(f"do expects a Policy or a mapping node -> value, got {type(interventions).__name__}")
        rules, plain = analysis.split_policy(self, interventions)
        mechs = dict(self.mechanisms)
        for d, (parents, table) in rules.items():
            mechs[d] = CPT(parents, table, states=self.states(d)) if parents else \
                Categorical(table, states=self.states(d))
        edges = [(p, v) for v, m in mechs.items() for p in m.parents]
        dag = DAG(edges, nodes=list(mechs), latent=self.latent, intervened=self.dag.intervened)
        base = self._derive(CausalModel._from_parts(mechs, dag, dict(self.specs)))
        if not plain:
            return base
        return self._derive(CausalModel.do(base, plain))

    def with_mechanisms(self, changes: Mapping[Hashable, Any], order: Sequence[Hashable]) -> InfluenceDiagram:
        """The same diagram with some nodes' mechanisms replaced (same states) and the given decision order.

        Interventions and policies already applied stay. Used to re-solve
        with an added informational arc or a chance node made a decision.

        Raises
        ------
        ModelError, GraphError
            A mechanism that does not fit, a cycle, an order that disagrees with the DAG.
        """
        mechs = dict(self.mechanisms)
        mechs.update(changes)
        edges = [(p, v) for v, m in mechs.items() for p in m.parents]
        dag = DAG(edges, nodes=list(mechs), latent=self.latent, intervened=self.dag.intervened)
        specs = dict(self.specs)
        for v, mech in changes.items():
            got = mech.spec(v, {p: specs[p] for p in mech.parents})
            if got != specs[v]:
                raise ModelError(f"the new mechanism of {v!r} holds {got.describe()}, not {specs[v].describe()}")
        new = InfluenceDiagram._from_parts(mechs, dag, specs)
        new._setup(list(order), self._limid, self._drawn | {v for v, m in changes.items() if isinstance(m, Decision)})
        new._all_order = tuple(order)
        return new

    def _derive(self, model: CausalModel) -> InfluenceDiagram:
        new = InfluenceDiagram._from_parts(dict(model.mechanisms), model.dag, dict(model.specs))
        order = [d for d in self._decisions if isinstance(new.mechanisms[d], Decision)]
        new._setup(order, self._limid, self._drawn)
        new._all_order = self._all_order
        return new

    # -- queries -----------------------------------------------------------------------------

    def relevant_model(self, nodes: Iterable[Hashable], intervened: Iterable[Hashable] = ()) -> CausalModel:
        """The model restricted to `nodes` and their ancestors (what a query on them needs).

        Decisions in `intervened` are about to be set by the query's own ``do``.

        Raises
        ------
        ModelError
            If a decision without a policy is among them (the message says a
            policy or ``do`` is needed).
        """
        nodes = [self.check_node(v) for v in nodes]
        keep = self.dag.ancestors(nodes, include_self=True)
        for d in self._decisions:
            if d in keep and d not in set(intervened):
                raise no_policy_error(d)
        mechs = {v: m for v, m in self.mechanisms.items() if v in keep}
        edges = [(p, v) for v, m in mechs.items() for p in m.parents]
        dag = DAG(edges, nodes=list(mechs), latent=self.latent & keep, intervened=self.dag.intervened & keep)
        return CausalModel._from_parts(mechs, dag, {v: self.specs[v] for v in mechs})

    def _asked(self, targets, evidence, do) -> tuple[InfluenceDiagram, list, list]:
        model = self.do(do) if do else self
        inside: list = []
        if isinstance(targets, str) and "(" in targets:
            q = parse_query(targets)
            names = [t.name for t in q.targets + q.evidence] + list(q.do)
            inside = list(q.do)
        elif isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable):
            names = [targets]
        else:
            names = list(targets)
        if isinstance(evidence, Mapping):
            names += list(evidence)
        elif evidence is not None and hasattr(evidence, "columns"):
            names += list(evidence.columns)
        return model, names, inside

    def query(self, targets, *, evidence=None, do=None, **options):
        """:meth:`CausalModel.query` on the part of the diagram the question needs.

        Decisions in `do` may be given policies (as in :meth:`do`).

        Raises
        ------
        ModelError
            If the question depends on a decision without a policy.
        """
        model, names, inside = self._asked(targets, evidence, do)
        soft = options.get("soft_evidence")
        if isinstance(soft, Mapping):
            names += list(soft)
        return CausalModel.query(model.relevant_model(names, inside), targets, evidence=evidence, **options)

    def counterfactual(self, targets, *, evidence=None, do=None, **options):
        """:meth:`CausalModel.counterfactual` on the part of the diagram the question needs."""
        model, names, inside = self._asked(targets, evidence, None)
        names += list(do or {})
        return CausalModel.counterfactual(model.relevant_model(names, [*inside, *(do or {})]), targets,
                                          evidence=evidence, do=do, **options)

    # -- solving ---------------------------------------------------------------------------

    def solve(self, *, limid: bool | None = None) -> Solution:
        """The maximum expected utility and an optimal policy.

        Parameters
        ----------
        limid : bool, optional
            Default: the diagram's own `limid`. False: perfect recall
            (each decision knows the earlier decisions and what they knew);
            the requisite information is found by d-separation and the
            decisions are solved from the last to the first (backward
            induction). True: single policy updating on the decisions'
            own parents, exact when the diagram is soluble
            (:meth:`is_soluble`), else a local optimum (``Solution.exact``
            False).

        Returns
        -------
        Solution
            ``.meu``, ``.policy`` (one rule per decision over its requisite
            information), ``.ties``.

        Raises
        ------
        ModelError
            A chance node that is not discrete, or no decision to solve.
        ResourceError
            A table over the limits of :mod:`causalnet.limits`.
        """
        return analysis.solve(self, self._limid if limid is None else limid)

    def expected_utility(self, policy) -> float:
        """The expected total utility when the decisions follow `policy`.

        Parameters
        ----------
        policy : Policy, or mapping decision -> rule
            As in :meth:`do`; every decision needs one.

        Raises
        ------
        ModelError, ShapeError, EvidenceError
            A decision without a rule, a table of the wrong shape or whose rows
            do not sum to 1, an unknown action.
        """
        return analysis.expected_utility(self, policy)

    def is_soluble(self) -> bool:
        """Whether single policy updating on the decisions' own parents is exact (Lauritzen & Nilsson)."""
        return analysis.is_soluble(self)

    def requisite_parents(self, decision: Hashable, *, limid: bool | None = None) -> tuple:
        """The part of `decision`'s information that can change its best action (d-separation).

        With perfect recall (the default unless the diagram is a LIMID) the
        information includes the earlier decisions and what they knew.
        """
        return analysis.requisite(self, self._check_decision(decision), self._limid if limid is None else limid)

    def value_of_information(self, node: Hashable, decision: Hashable) -> float:
        """Expected value of perfect information: MEU when `node` is observed before `decision`, minus MEU.

        Raises
        ------
        GraphError
            If `node` is a descendant of `decision` (it cannot be known before).
        """
        return analysis.value_of_information(self, node, decision)

    def value_of_control(self, node: Hashable) -> float:
        """MEU when chance node `node` becomes a decision (knowing its parents), minus MEU."""
        return analysis.value_of_control(self, node)

    def regret(self, evidence: Mapping, policy=None):
        """Counterfactual expected utility had `policy` (default: the optimal one) been followed, minus the factual one.

        Parameters
        ----------
        evidence : mapping node -> state
            What was observed after acting: the action taken at every decision
            and any chance nodes.
        policy : optional
            As in :meth:`expected_utility`; default ``self.solve().policy``.

        Returns
        -------
        Regret
            ``.value = .counterfactual - .factual``, exact on the twin network
            of the monotone inverse-CDF SCM.
        """
        return analysis.regret(self, evidence, policy)

    # -- diagrams ------------------------------------------------------------------------------

    def dot_node_attrs(self, node: Hashable) -> dict:
        """Decisions are boxes, utilities diamonds; chance nodes as in any model."""
        if node in self._drawn:
            return {"shape": "box", "style": "filled", "fillcolor": "#fde2c8",
                    "tooltip": f"decision: {list(self.specs[node].states)}"}
        if node in self._utilities:
            return {"shape": "diamond", "style": "filled", "fillcolor": "#d8f0d0", "tooltip": "utility"}
        return super().dot_node_attrs(node)

    def dot_edge_attrs(self, parent: Hashable, child: Hashable) -> dict:
        """Informational arcs (into a decision) are dashed."""
        return {"style": "dashed"} if child in self._drawn else {}

    def dot_legend(self) -> list:
        rows = [r for r in super().dot_legend() if r[0] not in ("continuous", "deterministic")]
        if self._drawn:
            rows.append(("decision", {"shape": "box", "style": "filled", "fillcolor": "#fde2c8"}))
        if self._utilities:
            rows.append(("utility", {"shape": "diamond", "style": "filled", "fillcolor": "#d8f0d0"}))
        return rows
