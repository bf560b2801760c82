"""Strong elimination for conditional Gaussian (CG) networks: real nodes first, in closed form.

A CG network has discrete nodes with discrete parents only and real nodes
that are linear-Gaussian given their parents, with coefficients that depend
on their discrete parents' states. Its joint density factorises as

``p(d, x) = Π_v P(d_v | d_pa(v)) · Π_i N(x_i; b_i[k] + W_i[k]·x_pa(i), s_i[k]²)``

where ``k`` is the configuration of node ``i``'s discrete parents. A *strong*
elimination order (Lauritzen 1992; Lauritzen and Jensen 2001) removes every
real variable before any discrete one, so that no real variable is ever
integrated out of a mixture. Here it is done in one step per group of real
nodes:

1. *Components.* Real nodes that are neither observed nor set by a constant
   ``do`` are joined when one factor mentions both (a node and its unobserved
   real parents, the unobserved real parents of one node); an observed real
   node joins the component of its unobserved real parents, or stands alone
   (its density is then a function of its discrete parents only). Given the
   discrete nodes, different components are independent.
2. *Real elimination.* For a component ``C`` with *boundary* ``B_C`` (the
   discrete parents of its nodes) and every configuration of ``B_C`` at once,
   its nodes are jointly Gaussian (the affine form ``x = c + M u`` of
   :mod:`causalnet.inference.gaussian`, the values of observed or intervened
   real nodes outside ``C`` entering ``c`` as constants). Conditioning on the
   component's observed nodes in closed form gives a *discrete* factor over
   ``B_C`` (the density of the evidence, per row) and, for components holding
   a real target, the conditioned Gaussians. The covariances, eigenvectors
   and gains depend on the structure only and are cached per (targets,
   observed nodes); a query computes the means and densities, linear in the
   number of evidence rows.
3. *Discrete elimination.* The tables of the discrete nodes and those
   boundary factors form a discrete factor graph, solved by
   :func:`~causalnet.inference.discrete.variable_elimination` (greedy
   weighted min-fill) keeping the discrete targets and the boundaries of the
   target components — the strong root. A real target's law is the mixture of
   its component's conditioned Gaussians weighted by the posterior of the
   boundary; MAP of the discrete part is max-product over the same factors.

The cost grows with the configurations of the largest boundary and with the
largest table of the discrete elimination (both estimated before allocation
and checked against :mod:`causalnet.limits`), not with the configurations of
all the ancestors. Each boundary factor is rescaled to a maximum of 1 per row
(the scales are kept in log space), so densities never underflow.

Symbols: ``n`` evidence rows (``r`` = n, or 1 when unbatched), ``K``
configurations of a boundary, ``d`` nodes of a component, ``E`` its observed
nodes.

References
----------
.. [1] S. L. Lauritzen, "Propagation of probabilities, means and variances in
       mixed graphical association models", JASA 87, 1992.
.. [2] S. L. Lauritzen, F. Jensen, "Stable local computation with conditional
       Gaussian distributions", Statistics and Computing 11, 2001.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from .. import limits
from ..errors import EvidenceError, ModelError, NumericalError
from ..mechanisms.base import DISCRETE
from ..mechanisms.conditional_gaussian import ConditionalLinearGaussian
from ..mechanisms.intervened import Intervened
from .discrete import Factor, factor_product, node_table, variable_elimination
from .discrete.ordering import TableTooLarge, check_clique_bytes, greedy_order, table_entry_limit

__all__ = ["RealLaw", "real_law", "ancestral", "CGSolution", "cg_solve", "cg_map"]

_LOG_2PI = float(np.log(2 * np.pi))


class RealLaw:
    """A real node's law as CG arrays: ``x = b[k] + W[k]·x_rpar + s[k]·u`` for the configuration ``k`` of `dpar`.

    Attributes
    ----------
    node : hashable
    dpar, rpar : tuple
        Discrete and real parents.
    b : ndarray of shape (*cards)
    W : ndarray of shape (*cards, len(rpar))
    s : ndarray of shape (*cards)
        The noise coefficient (signed: an affine intervention with a negative
        scale flips it, which matters when the noise is shared by two worlds).
    value : ndarray of shape () or (n,), or None
        Set for a node under a constant or per-row ``do`` (then the arrays are unused).
    """

    __slots__ = ("node", "dpar", "rpar", "b", "W", "s", "value")

    def __init__(self, node, dpar=(), rpar=(), b=None, W=None, s=None, value=None) -> None:
        self.node, self.dpar, self.rpar = node, tuple(dpar), tuple(rpar)
        self.b, self.W, self.s, self.value = b, W, s, value


def real_law(model, v) -> RealLaw:
    """The :class:`RealLaw` of real node `v` of a CG model (see :func:`~causalnet.inference.conditional_gaussian.cg_reason`)."""
    mech = model.mechanisms[v]
    if isinstance(mech, Intervened) and not mech.is_shift:
        return RealLaw(v, value=np.asarray(mech.value, dtype=np.float64))
    natural = mech.natural if isinstance(mech, Intervened) else mech
    if isinstance(natural, ConditionalLinearGaussian):
        dpar, rpar = natural.discrete_parents, natural.real_parents
        b, W, s = natural.intercept, natural.weights, natural.sd
    else:                                                   # LinearGaussian: a discrete parent counts as its index
        dpar = tuple(p for p in natural.parents if model.specs[p].kind == DISCRETE)
        rpar = tuple(p for p in natural.parents if model.specs[p].kind != DISCRETE)
        cards = tuple(model.specs[p].card for p in dpar)
        grid = np.indices(cards) if cards else np.zeros((0,))
        wd = {p: w for w, p in zip(natural.weights, natural.parents)}
        b = np.full(cards, natural.bias, dtype=np.float64)
        for i, p in enumerate(dpar):
            b = b + wd[p] * grid[i]
        W = np.broadcast_to(np.array([wd[p] for p in rpar], dtype=np.float64), (*cards, len(rpar)))
        s = np.full(cards, natural.sigma, dtype=np.float64)
    if natural is not mech:                                 # x -> scale·x + offset
        a, off = mech.affine.scale, mech.affine.offset
        b, W, s = a * b + off, a * W, a * s
    return RealLaw(v, dpar, rpar, np.asarray(b, dtype=np.float64), np.asarray(W, dtype=np.float64),
                   np.asarray(s, dtype=np.float64))


def ancestral(model, nodes) -> list:
    """`nodes` and their ancestors through the (possibly intervened) mechanisms, in topological order.

    The other nodes are barren: summing them out leaves the query unchanged.
    """
    keep, stack = set(), list(nodes)
    while stack:
        v = stack.pop()
        if v not in keep:
            keep.add(v)
            stack.extend(model.mechanisms[v].parents)
    return [v for v in model.dag.topological_order() if v in keep]


# -- components: the structure-only part, cached per (targets, observed nodes) -------------------


class _Component:
    """One group of real nodes: its boundary, configurations and the value-free part of the conditioning.

    Attributes
    ----------
    nodes : list
        Real nodes, topological; `obs` indexes the observed ones.
    boundary : list
        Discrete parents of the nodes, with `cards`; `cfg` (K, |B|) every configuration.
    coef : list of (b (K,), [(j or name, w (K,))])
        Per node: its intercept and weights per configuration, a parent given
        by its index in `nodes` or, outside the component, by its name.
    cov : ndarray of shape (K, d, d)
        Prior covariance; `post_cov` the conditioned one.
    """

    def __init__(self, model, laws: dict, nodes: list, observed: list) -> None:
        self.nodes = nodes
        pos = {v: i for i, v in enumerate(nodes)}
        self.obs = [pos[v] for v in observed]
        self.boundary = list(dict.fromkeys(p for v in nodes for p in laws[v].dpar))
        self.cards = [model.specs[p].card for p in self.boundary]
        K, d, E = int(np.prod(self.cards, dtype=np.int64)), len(nodes), len(self.obs)
        limits.check_bytes(8.0 * K * (3 * d * d + 2 * E * E + 4 * d), what="the conditional Gaussians of a group of "
                           "real nodes", cause=f"{K} configurations of the discrete nodes {self.boundary} (cards "
                           f"{self.cards}) x {d} real nodes {nodes[:8]}{' ...' if d > 8 else ''}")
        grid = np.indices(self.cards).reshape(len(self.cards), -1) if self.cards else np.zeros((0, 1), np.int64)
        self.cfg = grid.T                                                       # (K, |B|)
        bpos = {p: i for i, p in enumerate(self.boundary)}
        M = np.zeros((K, d, d))
        self.coef = []
        for v in nodes:
            law = laws[v]
            k = tuple(self.cfg[:, bpos[p]] for p in law.dpar)
            b = np.broadcast_to(law.b[k], (K,))
            W = np.broadcast_to(law.W[k], (K, len(law.rpar)))
            i = pos[v]
            terms = []                                                          # (inside?, index or name, w (K,))
            for j, p in enumerate(law.rpar):
                if p in pos:                                                    # parents come first: pos[p] < i
                    terms.append((True, pos[p], W[:, j]))
                    M[:, i] += W[:, j][:, None] * M[:, pos[p]]
                else:
                    terms.append((False, p, W[:, j]))
            M[:, i, i] += np.broadcast_to(law.s[k], (K,))
            self.coef.append((b, terms))
        if not np.all(np.isfinite(M)):
            raise NumericalError("the conditional Gaussians overflow float64 (weights or interventions too large)")
        cov = M @ np.swapaxes(M, 1, 2)                                         # (K, d, d)
        self._conditioning(cov)

    def _conditioning(self, cov: np.ndarray) -> None:
        """Eigen-decompose the observed block once: gains, conditioned covariances, log-determinants."""
        obs = self.obs
        self.cov = cov
        if not obs:
            self.post_cov = cov
            return
        S_ee = cov[:, obs][:, :, obs]                                          # (K, E, E)
        S_xe = cov[:, :, obs]                                                  # (K, d, E)
        w, V = np.linalg.eigh(S_ee)                                            # (K, E), (K, E, E)
        tol = np.maximum(w.max(axis=-1), 1.0) * 1e-10 * len(obs)               # (K,)
        self.pos = w > tol[:, None]                                            # (K, E)
        self.inv = np.where(self.pos, 1.0 / np.where(self.pos, w, 1.0), 0.0)   # (K, E)
        self.V = V
        SV = S_xe @ V                                                          # (K, d, E)
        self.G = SV * self.inv[:, None, :]                                     # (K, d, E) gain in the eigenbasis
        post = cov - self.G @ np.swapaxes(SV, 1, 2)
        self.post_cov = (post + np.swapaxes(post, 1, 2)) / 2
        self.logdet = np.sum(np.where(self.pos, np.log(np.where(self.pos, w, 1.0)), 0.0), axis=-1)   # (K,)
        self.rank = self.pos.sum(axis=-1)                                      # (K,)

    def means(self, consts: Mapping, r: int) -> np.ndarray:
        """Prior means (K, r, d); `consts` maps outside real parents to values of shape () or (r,)."""
        K, d = self.cfg.shape[0], len(self.nodes)
        limits.check_bytes(8.0 * K * r * (2 * d + 3 * len(self.obs)), what="the conditioned means of a group of "
                           "real nodes", cause=f"{K} configurations of {self.boundary} x {r} evidence rows x {d} "
                           f"real nodes (fewer rows at once, or raise the limit)")
        c = np.zeros((K, r, d))
        with np.errstate(over="ignore", invalid="ignore"):
            for i, (b, terms) in enumerate(self.coef):
                ci = np.broadcast_to(b[:, None], (K, r)).copy()
                for inside, j, w in terms:
                    if inside:
                        ci += w[:, None] * c[:, :, j]
                    else:
                        ci += w[:, None] * np.broadcast_to(consts[j], (r,))[None, :]
                c[:, :, i] = ci
        return c

    def condition(self, c: np.ndarray, values: np.ndarray, want: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
        """Conditioned means of the nodes `want` (K, r, len(want)) and log densities of the evidence (K, r),
        -inf where the evidence is impossible (outside the support of a degenerate configuration)."""
        want = list(want)
        if not self.obs:
            return c[:, :, want], np.zeros(c.shape[:2])
        resid = values[None] - c[:, :, self.obs]                               # (K, r, E)
        rp = resid @ self.V                                                    # (K, r, E) eigenbasis coordinates
        degenerate = not self.pos.all()
        if degenerate:
            scale = 1.0 + np.abs(values).max(axis=-1)                          # (r,)
            null = np.where(self.pos[:, None, :], 0.0, np.abs(rp)).max(axis=-1)   # (K, r)
            rp = np.where(self.pos[:, None, :], rp, 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            mean = c[:, :, want] + rp @ np.swapaxes(self.G[:, want, :], 1, 2) if want else c[:, :, :0]
            maha = ((rp * rp) @ self.inv[:, :, None])[..., 0]                  # (K, r)
        log_ev = -0.5 * (maha + self.logdet[:, None] + self.rank[:, None] * _LOG_2PI)
        if degenerate:
            log_ev = np.where(null > 1e-8 * scale[None, :], -np.inf, log_ev)
        return mean, log_ev


class _Plan:
    """The structure of one (targets, observed nodes) question on one model: components and discrete factors."""

    def __init__(self, model, targets: tuple, observed: frozenset) -> None:
        specs = model.specs
        relevant = ancestral(model, [*targets, *observed])
        self.discrete = [v for v in relevant if specs[v].kind == DISCRETE]
        reals = [v for v in relevant if specs[v].kind != DISCRETE]
        self.laws = laws = {v: real_law(model, v) for v in reals}
        fixed = {v for v in reals if v in observed or laws[v].value is not None}
        parent = {v: v for v in reals if v not in fixed}

        def find(v):
            while parent[v] != v:
                parent[v] = parent[parent[v]]
                v = parent[v]
            return v

        scopes = {}
        for v in reals:
            if laws[v].value is not None:
                continue
            scope = [u for u in (v, *laws[v].rpar) if u in parent]
            scopes[v] = scope
            for u in scope[1:]:
                parent[find(u)] = find(scope[0])
        groups: dict = {}
        for v in reals:
            if laws[v].value is not None:
                if v in targets:                                               # a constant target: its own group
                    groups[("const", v)] = [v]
                continue
            key = find(scopes[v][0]) if scopes[v] else ("alone", v)
            groups.setdefault(key, []).append(v)
        self.components = []
        self.const_targets = {}
        rank = {v: i for i, v in enumerate(reals)}
        for key, members in groups.items():
            members.sort(key=rank.__getitem__)
            has_target = any(v in targets for v in members)
            obs = [v for v in members if v in observed]
            if isinstance(key, tuple) and key[0] == "const":
                self.const_targets[members[0]] = laws[members[0]].value
                continue
            if not obs and not has_target:
                continue                                                       # integrates to 1
            self.components.append((_Component(model, laws, members, obs), has_target))
        self.cards = {v: specs[v].card for v in self.discrete}
        self.tables = []
        self.row_do: dict = {}
        for v in self.discrete:
            table = node_table(model, v, self.cards, self.row_do)
            if table is None:
                raise ModelError(f"discrete node {v!r} has no table")
            self.tables.append(Factor((*model.dag.parents(v), v), table))
        self.fixed = fixed


class CGSolution:
    """A solved CG question: the joint table of the kept discrete nodes and the target groups' Gaussians.

    Attributes
    ----------
    keep : list
        Discrete nodes of `table` (discrete targets, then the target groups' boundaries).
    table : ndarray of shape (*cards) or (n, *cards)
        Posterior over `keep` (sums to 1 per row).
    log_evidence : float or ndarray of shape (n,)
    """

    def __init__(self, plan: _Plan, keep: list, table: np.ndarray, log_ev, posts: list, consts: dict,
                 n_rows) -> None:
        self.plan, self.keep, self.table, self.log_evidence = plan, keep, table, log_ev
        self.posts, self.consts, self.n_rows = posts, consts, n_rows

    def mixture(self, reals: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The law of `reals` as components over the configurations of `keep`.

        Returns
        -------
        weights : ndarray of shape (Kk,) or (n, Kk)
        states : ndarray of int, shape (Kk, len(keep))
        means : ndarray of shape (Kk, t) or (n, Kk, t)
        covs : ndarray of shape (Kk, t, t)
        """
        cards = [self.plan.cards[v] for v in self.keep]
        batched = self.n_rows is not None
        Kk = int(np.prod(cards, dtype=np.int64))
        grid = np.indices(cards).reshape(len(cards), -1) if cards else np.zeros((0, 1), np.int64)  # (|keep|, Kk)
        kpos = {v: i for i, v in enumerate(self.keep)}
        r = self.n_rows or 1
        t = len(reals)
        means, covs = np.zeros((Kk, r, t)), np.zeros((Kk, t, t))
        for comp, names, mean in self.posts:                                   # mean (K, r, len(names))
            mine = [(a, names.index(v), comp.nodes.index(v)) for a, v in enumerate(reals) if v in names]
            if not mine:
                continue
            idx = (np.ravel_multi_index(tuple(grid[kpos[p]] for p in comp.boundary), comp.cards)
                   if comp.boundary else np.zeros(Kk, dtype=np.int64))           # (Kk,)
            a, m, j = [x[0] for x in mine], [x[1] for x in mine], [x[2] for x in mine]
            means[:, :, a] = mean[idx][:, :, m]
            covs[np.ix_(np.arange(Kk), a, a)] = comp.post_cov[idx][:, j][:, :, j]
        for a, v in enumerate(reals):
            if v in self.consts:
                means[:, :, a] = np.broadcast_to(self.consts[v], (r,))[None, :]
        weights = self.table.reshape((self.n_rows, Kk) if batched else (Kk,))
        means = np.swapaxes(means, 0, 1) if batched else means[:, 0]
        return weights, grid.T, means, covs


def _values(observed: Mapping, nodes: Sequence, r: int) -> np.ndarray:
    vals = [np.broadcast_to(np.asarray(observed[v], dtype=np.float64), (r,)) for v in nodes]
    return np.stack(vals, axis=-1) if vals else np.zeros((r, 0))                # (r, E)


def _plan(model, targets: tuple, observed: frozenset) -> _Plan:
    plans = model.cache.setdefault("cg_plans", {})
    key = (targets, observed)
    if key not in plans:
        if len(plans) > 256:
            plans.clear()
        plans[key] = _Plan(model, targets, observed)
    return plans[key]


def _factors(model, targets: tuple, observed: Mapping, n_rows):
    """Plan, discrete factors, evidence and the log offset: the real nodes eliminated."""
    plan = _plan(model, targets, frozenset(observed))
    r = n_rows or 1
    consts = {v: np.asarray(observed[v], dtype=np.float64) for v in plan.fixed if v in observed}
    consts.update({v: plan.laws[v].value for v in plan.fixed if plan.laws[v].value is not None})
    factors, posts, offset = list(plan.tables), [], np.zeros(r)
    for comp, has_target in plan.components:
        c = comp.means(consts, r)
        want = [i for i, v in enumerate(comp.nodes) if v in targets]
        mean, log_ev = comp.condition(c, _values(observed, [comp.nodes[i] for i in comp.obs], r), want)
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(comp.post_cov))):
            raise NumericalError("the conditional Gaussians overflow float64 (values or weights too large)")
        if has_target:
            posts.append((comp, [comp.nodes[i] for i in want], mean))
        if comp.obs:
            top = log_ev.max(axis=0)                                                   # (r,)
            top = np.where(np.isfinite(top), top, 0.0)
            vals = np.exp(log_ev - top[None, :]).T.reshape(r, *comp.cards)             # (r, *cards)
            offset += top
            factors.append(Factor(comp.boundary, vals, batched=True) if n_rows is not None
                           else Factor(comp.boundary, vals[0]))
    ev = {v: observed[v] for v in plan.discrete if v in observed}
    for v, rows in plan.row_do.items():
        ev[v] = rows
    return plan, factors, ev, consts, posts, (offset if n_rows is not None else float(offset[0]))


def _indicator(v, states, card: int, n_rows) -> Factor:
    """The evidence ``v = states`` as a factor that keeps `v` (shape (card,) or (n, card))."""
    s = np.asarray(states, dtype=np.int64)
    onehot = np.eye(card)[s]
    return Factor([v], onehot, batched=s.ndim == 1 and n_rows is not None)


def cg_solve(model, targets: Sequence[Hashable], observed: Mapping, n_rows: int | None) -> CGSolution:
    """Solve ``P(targets | observed)`` on a CG model (see the module docstring).

    Parameters
    ----------
    model : CausalModel
        A CG network (possibly intervened).
    targets : sequence of node names
    observed : mapping node -> value of shape () or (n,)
        Real values, and discrete state indices.
    n_rows : int or None
        The batch size (None: unbatched).

    Raises
    ------
    EvidenceError
        If the evidence has probability zero (in some row).
    ResourceError
        If a boundary's configurations or a discrete table pass :mod:`causalnet.limits`.
    """
    targets = tuple(targets)
    plan, factors, ev, consts, posts, offset = _factors(model, targets, observed, n_rows)
    keep = [t for t in targets if model.specs[t].kind == DISCRETE]
    keep += [p for comp, _, _ in posts for p in comp.boundary if p not in keep]
    scalar = {v: s for v, s in ev.items() if v not in keep}
    for v in keep:
        if v in ev:
            factors.append(_indicator(v, ev[v], plan.cards[v], n_rows))
    joint = variable_elimination(factors, keep, evidence=scalar) if factors else Factor((), np.ones(()))
    vals = joint.values
    if n_rows is not None and not joint.batched:
        vals = np.broadcast_to(vals, (n_rows, *vals.shape))
    total = vals.reshape((n_rows, -1) if n_rows is not None else (-1,)).sum(axis=-1)
    if np.any(total <= 0):
        where = f" (row {int(np.flatnonzero(np.atleast_1d(total) <= 0)[0])})" if n_rows is not None else ""
        raise EvidenceError(f"the evidence has probability zero under the model{where}")
    table = vals / (total.reshape(-1, *([1] * len(keep))) if n_rows is not None else total)
    with np.errstate(divide="ignore"):
        log_ev = np.log(total) + offset
    return CGSolution(plan, keep, table, log_ev if n_rows is not None else float(log_ev), posts, consts, n_rows)


def _eliminate(pool: list, order: list, maximize: bool) -> tuple[list, list]:
    """Sum (or max) out `order` from the factors of `pool`; for max, the argmax tables for the traceback."""
    trace = []
    for z in order:
        take = [f for f in pool if z in f.vars]
        pool = [f for f in pool if z not in f.vars]
        if not take:
            continue
        union = tuple(dict.fromkeys(v for f in take for v in f.vars))
        if maximize:
            prod = factor_product(take, keep=union)
            out, arg = prod.max_marginalize([z])
            trace.append((z, out.vars, out.batched, arg[z]))
            pool.append(out)
        else:
            pool.append(factor_product(take, keep=tuple(v for v in union if v != z)))
    return pool, trace


def _order(pool: list, elim: list) -> list:
    adj, card = {}, {}
    for f in pool:
        for v, k in zip(f.vars, f.cards):
            adj.setdefault(v, set()).update(f.vars)
            card[v] = k
    for v in adj:
        adj[v].discard(v)
    todo = [v for v in elim if v in adj]
    rank = {v: i for i, v in enumerate(adj)}
    try:
        return greedy_order(adj, card, todo, "weighted-min-fill", rank, max_entries=table_entry_limit())
    except TableTooLarge as big:
        check_clique_bytes([big.clique], card, {v: v for v in card},
                           what="an intermediate factor of the discrete elimination")
        raise


def cg_map(model, targets: Sequence[Hashable] | None, observed: Mapping, n_rows: int | None):
    """MAP of discrete nodes of a CG model: the real nodes integrated out, the other discrete nodes summed out.

    Returns
    -------
    assignment : dict node -> int or ndarray of shape (n,)
    log_prob : float or ndarray of shape (n,)
        ``log p(assignment, evidence)`` (a density in the real evidence).
    """
    plan, factors, ev, _, _, offset = _factors(model, (), observed, n_rows)
    free = [v for v in plan.discrete if v not in ev]
    if targets is None:
        targets = [v for v in model.dag.topological_order() if model.specs[v].kind == DISCRETE and v not in ev]
    for t in targets:
        if model.specs[t].kind != DISCRETE:
            raise ModelError(f"map answers discrete nodes of a conditional Gaussian model; {t!r} is real "
                             f"(query it for its mixture law)")
    outside = [t for t in targets if t not in plan.cards]                       # barren: maximise their own table
    pool = [f.reduce(ev) for f in factors]
    if outside:
        extra = _plan(model, tuple(outside), frozenset(observed))
        pool += [f.reduce(ev) for f in extra.tables if f.vars[-1] not in plan.cards]
        free += [v for v in extra.discrete if v not in plan.cards and v not in ev]
    summed = [v for v in free if v not in targets]
    pool, _ = _eliminate(pool, _order(pool, summed), False)
    pool, trace = _eliminate(pool, _order(pool, list(targets)), True)
    final = factor_product(pool, keep=())
    val = np.asarray(final.values, dtype=np.float64)
    if n_rows is not None:
        val = np.broadcast_to(val, (n_rows,))
    if np.any(val <= 0):
        raise EvidenceError("the evidence has probability zero under the model")
    assign: dict = {}
    rows = np.arange(n_rows) if n_rows is not None else None
    for z, vars_, batched, arg in reversed(trace):
        idx = tuple(assign[v] for v in vars_)
        if batched:
            assign[z] = arg[(rows, *[np.broadcast_to(i, (n_rows,)) for i in idx])]
        elif n_rows is not None and any(np.ndim(i) for i in idx):
            assign[z] = arg[tuple(np.broadcast_to(i, (n_rows,)) for i in idx)]
        else:
            assign[z] = arg[idx] if idx else arg[()]
    out = {t: (np.asarray(assign[t]) if n_rows is not None else int(assign[t])) for t in targets}
    if n_rows is not None:
        out = {t: np.broadcast_to(a, (n_rows,)).copy() for t, a in out.items()}
    logp = np.log(val) + offset
    return out, (logp if n_rows is not None else float(logp))
