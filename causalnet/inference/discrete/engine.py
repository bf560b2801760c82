"""The discrete engine: tabulate a model whose nodes are all discrete, then eliminate variables.

Every discrete mechanism becomes a table of shape ``(*parent_cards, card)`` in
the DAG's parent order: a :class:`~causalnet.mechanisms.tabular.Tabular` node
is its table; a deterministic discrete node is tabulated over every parent
configuration; a constant ``do`` is a one-hot root; a shift intervention
(a callable, or :func:`causalnet.shift`) composes the natural table with its
map on the states; a *per-row* ``do`` becomes a uniform root observed at the
per-row states (conditioning on a root is intervening on it).
:func:`model_tables` gives these tables as tabulated (the twin networks of
counterfactuals start from them); :func:`discrete_network` validates them once
into the model's one
:class:`~causalnet.inference.discrete.network.DiscreteNetwork` (the
:class:`~causalnet.inference.discrete.elimination.DiscreteBN` that answers,
its ``row_evidence`` holding the per-row ``do`` values), cached on the model.
:class:`DiscreteEngine` hands it the request's evidence, validated already, as
node ints (:func:`engine_evidence`, :meth:`DiscreteBN.query_indices`).
A plain query of a shape the model was not asked before is answered without
the network, by :func:`.direct.direct_query`, as long as a budget of CPU time
lasts; a repeated shape goes to the network, which compiles and caches its
program (:class:`DirectLedger` holds the rule and its justification).

A target that is fixed — observed per row, or the same twin node asked in two
worlds — is put back into the joint as a point mass by :func:`embed_point_masses`.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ... import mechanisms as _mechanisms  # mechanisms.compact: loaded by the first non-table node
from ...distributions import DiscreteDistribution
from ...errors import EvidenceError, ModelError
from ...mechanisms.base import DISCRETE
from ...mechanisms.intervened import Intervened
from ...mechanisms.tabular import Tabular, is_plain_tabular
from .. import discrete as _discrete  # its first_batch module: loaded by the first batch of evidence rows
from ..engine import Engine
from .direct import direct_query
from .elimination import DiscreteBN
from .policy import PRIOR_TREE_AFTER_S

__all__ = ["DiscreteEngine", "model_tables", "discrete_network", "engine_evidence", "shift_map", "node_table",
           "embed_point_masses", "METHOD",
           "DirectLedger", "DIRECT_KEY", "DIRECT_BUDGET_S", "DIRECT_SHAPES", "direct_answer"]

METHOD = "exact (variable elimination)"


def _grid(cards: Sequence[int]) -> list[np.ndarray]:
    """Every parent configuration, as one (prod(cards),) index array per parent."""
    if not cards:
        return []
    mesh = np.indices(cards).reshape(len(cards), -1)
    return [mesh[i] for i in range(len(cards))]


def model_tables(model) -> tuple[dict, dict, dict] | None:
    """The tables of `model` when every node is discrete and tabulable, else None (cached on the model).

    Returns
    -------
    cpts : dict node -> ndarray of shape (*[cards[p] for p in dag.parents(v)], card)
        As tabulated (not yet validated nor row-normalised).
    cards : dict node -> int
    row_evidence : dict node -> ndarray of shape (n,)
        Nodes under a per-row ``do`` (uniform roots observed at these states).
    """
    cached = model.cache.get("discrete_tables", False)
    if cached is not False:
        return cached
    specs = model.specs
    result = None
    if all(s.kind == DISCRETE for s in specs.values()):
        cpts, cards, row_ev = {}, {v: len(specs[v].states) for v in model.nodes}, {}
        order, index = model.dag.nodes, model.dag.index
        for v in model.nodes:
            dag_parents = [order[i] for i in sorted(index.par[index.pos[v]])]      # DAG parent order
            table = node_table(model, v, cards, row_ev, dag_parents)
            if table is None:
                break
            cpts[v] = table
        else:
            result = (cpts, cards, row_ev)
    model.cache["discrete_tables"] = result
    return result


def discrete_network(model) -> DiscreteBN | None:
    """The validated network of `model` (cached on the model), or None when it is not all discrete.

    A :class:`~causalnet.inference.discrete.network.DiscreteNetwork` (the
    :class:`~causalnet.inference.discrete.elimination.DiscreteBN` that answers
    it) whose ``row_evidence`` holds the per-row ``do`` values.
    """
    tables = model_tables(model)
    if tables is None:
        return None
    bn = model.cache.get("discrete_bn")
    if bn is None:
        cpts, cards, row_ev = tables
        bn = model.cache["discrete_bn"] = DiscreteBN(model.dag, cpts, cards, row_evidence=row_ev)
    return bn


def node_table(model, v, cards: dict, row_evidence: dict, dag_parents: list | None = None) -> np.ndarray | None:
    """The table of node `v` of an all-discrete model, axes in DAG parent order then `v`; None if not tabulable.

    `cards` maps every node to its number of states; a per-row ``do`` on `v`
    adds its states to `row_evidence` (and gives a uniform root).
    `dag_parents`: ``list(model.dag.parents(v))`` when the caller has it.
    """
    mech = model.mechanisms[v]
    table = _table(model, v, mech, cards, row_evidence)
    if table is None:
        return None
    order = list(mech.parents)
    dag_order = list(model.dag.parents(v)) if dag_parents is None else dag_parents
    if order != dag_order:
        table = np.transpose(table, [order.index(p) for p in dag_order] + [len(order)])
    return np.ascontiguousarray(table)


def _table(model, v, mech, cards, row_ev):
    K = cards[v]
    if isinstance(mech, Tabular):
        return mech.table
    if isinstance(mech, _mechanisms.compact.Compact):   # noisy-OR, noisy-MAX, logistic: expanded (ResourceError past limits)
        return mech.table_for(v, [model.specs[p] for p in mech.parents])
    if isinstance(mech, Intervened) and not mech.is_shift:
        val = np.asarray(mech.value)
        if val.ndim == 1:
            row_ev[v] = val.astype(np.int64)
            return np.full(K, 1.0 / K)
        return np.eye(K)[int(val)]
    if isinstance(mech, Intervened):
        inner = _table(model, v, mech.natural, cards, row_ev)
        if inner is None:
            return None
        return inner @ np.eye(K)[shift_map(v, mech, K)]                # old state -> new state
    if mech.deterministic:
        pcards = [cards[p] for p in mech.parents]
        n = int(np.prod(pcards)) if pcards else 1
        vals = mech.evaluate(v, dict(zip(mech.parents, _grid(pcards))), None, model.specs[v], n=n)
        return np.eye(K)[np.asarray(vals).reshape(-1)].reshape(*pcards, K)
    return None


def shift_map(v: Hashable, mech: Intervened, K: int) -> np.ndarray:
    """A shift intervention's function on the states 0..K-1 of node `v`, checked.

    Raises
    ------
    ModelError
        If the function fails or does not map every state to a state.
    """
    try:
        with np.errstate(all="ignore"):
            f = np.asarray(mech.value(np.arange(K)))
    except Exception as e:
        raise ModelError(f"the shift intervention on {v!r} raised {type(e).__name__}: {e}") from e
    ok = f.shape == (K,) and f.dtype.kind in "iuf" and np.all(np.isfinite(f)) and np.all(f == np.round(f))
    if not ok or f.min() < 0 or f.max() >= K:
        raise ModelError(f"the shift intervention on {v!r} must map states 0..{K - 1} to states, got "
                         f"{f.tolist() if f.size <= 20 else f.shape}")
    return f.astype(np.int64)


def engine_evidence(request, net: DiscreteBN) -> tuple[dict, dict, int | None]:
    """The request's observed values plus the per-row ``do`` values (as observed roots).

    Returns
    -------
    by_name : dict node -> int or ndarray of shape (n,)
    by_index : dict node int -> int or intp ndarray of shape (n,)
        For the network's ``*_indices`` methods (no second validation).
    n : int or None
    """
    ev = {k: (int(v) if np.ndim(v) == 0 else v) for k, v in request.observed.items()}
    for k, arr in net.row_evidence.items():
        if k in ev:
            raise EvidenceError(f"{k!r} is both intervened on per row and observed")
        ev[k] = arr
    idx, n = net.index_evidence(ev)
    return ev, idx, n


def embed_point_masses(pf: np.ndarray, free: Sequence, targets: Sequence, fixed: Mapping, cards: Sequence[int],
                       n_rows: int | None) -> np.ndarray:
    """The joint over `targets` from the joint `pf` over the `free` ones.

    A target not in `free` is fixed (a point mass at ``fixed[t]``, a state or
    an ``(n,)`` array of states); a target listed twice (the same variable in
    two worlds) puts its mass where the copies agree.

    Returns
    -------
    ndarray of shape (*cards) or (n, *cards)
    """
    batched = n_rows is not None
    if not free:
        pf = np.ones(n_rows) if batched else np.ones(())
    out = np.zeros(((n_rows,) if batched else ()) + tuple(cards))
    for full in np.ndindex(*cards):
        val: dict = {}
        if any(val.setdefault(name, k) != k for name, k in zip(targets, full)):
            continue
        idx = tuple(val[f] for f in free)
        p = pf[(slice(None), *idx)] if batched else pf[idx]
        for name in set(targets) - set(free):
            p = p * (np.asarray(fixed[name]) == val[name])
        out[(slice(None), *full) if batched else full] = p
    return out


#: ``model.cache`` entry: the direct path's :class:`DirectLedger`.
DIRECT_KEY = "discrete_direct"
#: CPU seconds the direct path may spend on a model's new query shapes before the network takes over:
#: the prior tree's own budget (:data:`~.policy.PRIOR_TREE_AFTER_S`), see :class:`DirectLedger`.
DIRECT_BUDGET_S = PRIOR_TREE_AFTER_S
#: Shapes a ledger remembers (then forgets all at once; a forgotten shape is only answered directly again).
DIRECT_SHAPES = 4096


class DirectLedger:
    """What the direct path (:func:`.direct.direct_query`) has answered on one model, and what it cost.

    The rule: a plain query (scalar evidence, no ``do``, every node a CPT)
    whose shape — its targets in order and its set of evidence nodes — the
    model has not been asked before is answered directly, without building
    the network or compiling a program; a shape asked again goes to the
    network, whose compiled program for it is then cached (compilation is
    paid only for shapes that repeat). New shapes go direct until the
    direct answers have spent :data:`DIRECT_BUDGET_S` CPU seconds: that is
    the rent against which the network's prior tree is bought (it answers
    any new shape in about a clique per numpy call, cheaper than a direct
    elimination), so the network then takes over, credited with the time
    spent, and builds the tree at its next scalar query. A network whose
    prior tree is built and usable answers every shape; one whose tree is
    unusable (cliques too large) leaves new shapes to the direct path.

    Models are immutable (``do``, ``fit`` and every builder return a new
    model with an empty cache), so the ledger never outlives what it describes.
    """

    __slots__ = ("shapes", "spent", "answered", "credited")

    def __init__(self) -> None:
        self.shapes: set = set()
        self.spent = 0.0             # CPU seconds of the direct answers
        self.answered = 0            # queries the direct path answered
        self.credited = False        # whether `spent` was handed to the network's policy

    def __repr__(self) -> str:
        return (f"<DirectLedger {len(self.shapes)} shapes, {self.answered} answered directly, "
                f"{1e3 * self.spent:.2f} ms CPU{', handed over' if self.credited else ''}>")

    def route(self, model, key: tuple) -> bool:
        """Whether the query of shape `key` goes to the direct path (and note the shape as asked)."""
        seen = key in self.shapes
        if not seen:
            if len(self.shapes) >= DIRECT_SHAPES:
                self.shapes.clear()
            self.shapes.add(key)
        net = model.cache.get("discrete_bn")
        if net is not None and net.policy.built:
            return not seen and net.policy.tree is None     # a usable tree answers new shapes cheaper
        if seen:
            return False
        if self.spent < DIRECT_BUDGET_S:
            return True
        if not self.credited:                               # budget spent: the network takes over
            self.credited = True
            discrete_network(model).policy.spent(self.spent)
        return False


def _direct_key(request, obs: dict) -> tuple | None:
    """The shape of a request (its factual evidence `obs`) the direct path can answer, or None."""
    if request.n_rows is not None or request.soft or request.row_do:
        return None
    names = tuple(request.nodes)
    if len(set(names)) != len(names) or not obs.keys().isdisjoint(names):
        return None
    for x in obs.values():
        if np.ndim(x) != 0:
            return None
    return names, frozenset(obs)


def _direct_answer(request) -> DiscreteDistribution | None:
    """A query of a shape new to its all-``Tabular`` model by :func:`direct_answer`, or None."""
    m = request.model
    if not is_plain_tabular(m):
        return None
    obs = request.observed
    key = _direct_key(request, obs)
    if key is None:
        return None
    return direct_answer(m, key[0], {k: int(x) for k, x in obs.items()})


def direct_answer(m, names: tuple, evidence: dict) -> DiscreteDistribution | None:
    """The answer of :func:`.direct.direct_query` to a validated plain query of the all-``Tabular`` model
    `m` (targets `names`, distinct and unobserved; `evidence` node -> state index), or None.

    :class:`DirectLedger` decides: None when the shape was asked before (the
    network compiles and caches its program), when the direct budget is
    spent, or when the direct path declines (impossible or underflowing
    evidence, a table past the limits): the network's path then answers.
    """
    ledger = m.cache.get(DIRECT_KEY)
    if ledger is None:
        ledger = m.cache[DIRECT_KEY] = DirectLedger()
    if not ledger.route(m, (names, frozenset(evidence))):
        return None
    t0 = time.process_time()
    got = direct_query(m, names, evidence)
    ledger.spent += time.process_time() - t0
    if got is None:
        return None
    ledger.answered += 1
    probs, log_ev = got
    if callable(log_ev):
        deferred = log_ev

        def log_ev():                                   # underflow: the network's rescaling program
            got = deferred()
            if got is None:
                net = discrete_network(m)
                idx, _ = net.index_evidence(dict(evidence))
                got = net.query_indices((), idx, None)[1]
            return got

    specs = m.specs                                     # probs: finite, >= 0, normalized by direct_query
    return DiscreteDistribution.from_normalized(names, probs, tuple([specs[t].states for t in names]),
                                                method=METHOD, log_evidence=log_ev)


class DiscreteEngine(Engine):
    """Exact queries on all-discrete models: the prior tree or compiled variable elimination
    (:class:`~causalnet.inference.discrete.policy.QueryPolicy` chooses)."""

    name = "discrete"

    def accepts(self, request) -> bool:
        if request.is_counterfactual:
            return False
        m = request.model
        if "discrete_tables" not in m.cache and is_plain_tabular(m):
            return True                                 # tabulable by construction: tabulated when needed
        return model_tables(m) is not None

    def answer(self, request) -> DiscreteDistribution:
        m = request.model
        got = _direct_answer(request)
        if got is not None:
            return got
        net = None
        if request.batched and "discrete_bn" not in m.cache:   # a first batched query: its ancestors only
            net = _discrete.first_batch.first_batch_network(request)
        if net is None:
            net = discrete_network(m)
        ev, idx, n = engine_evidence(request, net)
        names = request.nodes
        free = [t for t in names if t not in ev]
        index = net.dag.index.pos
        probs, log_ev = net.query_indices(tuple(index[t] for t in free), idx, n, joint=True)
        if len(free) < len(names):
            probs = embed_point_masses(probs, free, names, ev, [net.cards[t] for t in names], n)
        # n, not request.n_rows: a model built under a per-row do answers one row per do value
        return DiscreteDistribution(names, probs, [m.specs[t].states for t in names], batched=n is not None,
                                    method=METHOD, log_evidence=log_ev)

    def map(self, request) -> tuple[dict, np.ndarray | float]:
        """MAP/MPE: ``(node -> state name or array of names, log joint)``."""
        m = request.model
        net = discrete_network(m)
        if net is None:
            raise ModelError("map needs a discrete model (every node discrete and tabulable)")
        ev, idx, n = engine_evidence(request, net)
        targets = request.nodes
        if set(targets) & set(net.row_evidence):
            both = sorted(map(str, set(targets) & set(net.row_evidence)))
            raise EvidenceError(f"{both} are both targets and intervened on per row")
        index = net.dag.index.pos
        assign, logp = net.map_indices(tuple(index[t] for t in targets), idx, n)
        named = {}
        for k, v in assign.items():
            states = np.asarray(m.specs[k].states, dtype=object)
            named[k] = states[v] if np.ndim(v) else states[int(v)]
        return named, logp
