"""Markov networks: undirected models as products of factors, with exact, loopy and Gibbs inference.

A Markov network over discrete variables is ``P(x) = Π_f ψ_f(x_f) / Z``: a
product of nonnegative *factors* (:class:`Potential`, also ``cn.Factor``) over
small sets of variables, normalised by the partition function ``Z``. A
Bayesian network is the special case whose factors are its CPTs
(``m.to_markov_network()``, the moral graph); an Ising model is one with a
factor per grid edge.

:class:`MarkovNetwork` answers

* ``query`` — exact variable elimination (greedy min-fill order, batched
  evidence as one-hot factors with a batch axis) when its intermediate tables
  fit ``cn.limits``; otherwise (``method="auto"``) loopy belief propagation;
  ``method="gibbs"`` samples;
* ``map`` — exact (max-marginals decoded one variable at a time) or by
  max-product loopy propagation;
* ``partition_function`` / ``log_partition_function`` — exact, or the Bethe
  approximation at the loopy fixed point (``method="loopy"``, exact on trees);
* ``log_prob`` of full assignments, ``sample`` by Gibbs, ``to_dot``/``render``,
  ``to_factor_graph``.

Symbols: ``n`` evidence rows, ``V`` variables, ``K`` states.

Examples
--------
>>> import numpy as np
>>> mn = MarkovNetwork.from_edges({("A", "B"): [[2.0, 1.0], [1.0, 2.0]], ("B", "C"): [[3.0, 1.0], [1.0, 3.0]]})
>>> round(mn.partition_function(), 9)
24.0
>>> mn.query("C", evidence={"A": 1}).probs.round(4).tolist()
[0.4167, 0.5833]
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from .. import limits
from ..distributions import DiscreteDistribution
from ..errors import EvidenceError, ModelError, RenderError, ResourceError, ShapeError
from ..mechanisms.base import as_generator
from ..values import decode_states
from .discrete import discrete_network
from .factor_graph import FactorGraph
from .gibbs import GibbsPlan, chain_diagnostics, check_moving, gibbs_run
from .loopy import bethe_log_partition, loopy_marginals, propagate

__all__ = ["Potential", "MarkovNetwork", "METHODS", "markov_network_of"]

METHODS = ("auto", "exact", "loopy", "gibbs")
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY"


class Potential:
    """A nonnegative table over discrete variables (``cn.Factor``).

    Parameters
    ----------
    variables : sequence of hashable
        Distinct variable names, one per table axis.
    table : array_like of shape (*cards)
        Nonnegative, finite, not all zero.
    states : mapping variable -> names, or a list of name lists aligned with `variables`, optional
        Defaults to ``0..K-1`` for each variable.

    Raises
    ------
    ModelError, ShapeError
    """

    def __init__(self, variables: Sequence[Hashable], table, states=None) -> None:
        if isinstance(variables, (str, bytes)):
            variables = [variables]
        self.variables = tuple(variables)
        if len(set(self.variables)) != len(self.variables):
            raise ModelError(f"a factor repeats a variable: {list(self.variables)}")
        t = np.array(table, dtype=np.float64)
        if t.ndim != len(self.variables):
            raise ShapeError(f"a factor over {list(self.variables)} needs {len(self.variables)} axes, got shape "
                             f"{t.shape}")
        if not np.isfinite(t).all() or (t.size and t.min() < 0) or not t.any():
            raise ModelError(f"the factor over {list(self.variables)} must be finite, nonnegative and not all zero")
        t.setflags(write=False)
        self.table = t
        if states is None:
            states = {}
        if not isinstance(states, Mapping):
            states = dict(zip(self.variables, states))
        self.states = {}
        for v, k in zip(self.variables, t.shape):
            names = tuple(states.get(v, range(k)))
            if len(names) != k:
                raise ShapeError(f"variable {v!r} has {k} states in the factor but {len(names)} names {list(names)}")
            self.states[v] = names

    def __repr__(self) -> str:
        return f"Factor({list(self.variables)}, shape={self.table.shape})"


class MarkovNetwork:
    """A product of factors over discrete variables (see the module docstring).

    Parameters
    ----------
    factors : sequence of Potential
        Variables shared by several factors must have the same states in each.

    Attributes
    ----------
    variables : list
        In order of first appearance.
    cards : dict variable -> int
    states : dict variable -> tuple of names
    """

    def __init__(self, factors: Sequence[Potential]) -> None:
        factors = list(factors)
        if not factors or not all(isinstance(f, Potential) for f in factors):
            raise ModelError("a MarkovNetwork needs a non-empty list of cn.Factor objects")
        self.factors = factors
        self.states: dict = {}
        for f in factors:
            for v in f.variables:
                if v in self.states and self.states[v] != f.states[v]:
                    raise ModelError(f"variable {v!r} has states {list(self.states[v])} in one factor and "
                                     f"{list(f.states[v])} in another")
                self.states.setdefault(v, f.states[v])
        self.variables = list(self.states)
        self.cards = {v: len(s) for v, s in self.states.items()}
        self._index = {v: i for i, v in enumerate(self.variables)}

    @classmethod
    def from_edges(cls, pairwise: Mapping, unary: Mapping | None = None, states: Mapping | None = None):
        """A pairwise network: ``{(a, b): table (K_a, K_b)}`` plus optional ``{a: vector}`` unary factors."""
        fs = [Potential(list(edge), t, states={v: states[v] for v in edge if v in states} if states else None)
              for edge, t in pairwise.items()]
        fs += [Potential([v], t, states={v: states[v]} if states and v in states else None)
               for v, t in (unary or {}).items()]
        return cls(fs)

    def __repr__(self) -> str:
        return f"<MarkovNetwork {len(self.variables)} variables, {len(self.factors)} factors>"

    # -- structure ---------------------------------------------------------------------

    def edges(self) -> list:
        """Pairs of variables sharing a factor (the Markov network's graph)."""
        out = set()
        for f in self.factors:
            for i, a in enumerate(f.variables):
                for b in f.variables[i + 1:]:
                    out.add((a, b) if self._index[a] < self._index[b] else (b, a))
        return sorted(out, key=lambda e: (self._index[e[0]], self._index[e[1]]))

    def to_factor_graph(self) -> FactorGraph:
        """The factor graph (variables numbered in :attr:`variables` order)."""
        return FactorGraph([self.cards[v] for v in self.variables],
                           [(tuple(self._index[v] for v in f.variables), f.table) for f in self.factors],
                           self.variables)

    def to_dot(self) -> str:
        """DOT text of the undirected graph (``graph { "A" -- "B"; }``)."""
        def q(v):
            return '"' + str(v).replace('"', '\\"') + '"'
        lines = ["graph {"] + [f"  {q(v)};" for v in self.variables]
        lines += [f"  {q(a)} -- {q(b)};" for a, b in self.edges()]
        return "\n".join(lines + ["}"]) + "\n"

    def render(self, path, format: str | None = None):
        """Write the graph as DOT text (``.dot``/``.gv``) or, with Graphviz's ``dot`` program, SVG/PNG."""
        import shutil
        import subprocess
        from pathlib import Path

        path = Path(path)
        fmt = format or {".gv": "dot"}.get(path.suffix, path.suffix.lstrip("."))
        if fmt == "dot":
            path.write_text(self.to_dot())
            return path
        exe = shutil.which("dot")
        if fmt not in ("svg", "png") or exe is None:
            raise RenderError(f"cannot render a Markov network as {fmt!r}: use .dot, or install Graphviz's dot "
                              f"program for svg/png")
        out = subprocess.run([exe, f"-T{fmt}", "-o", str(path)], input=self.to_dot(), text=True,
                             capture_output=True)
        if out.returncode != 0:
            raise RenderError(f"dot failed: {out.stderr.strip()}")
        return path

    # -- evidence ------------------------------------------------------------------------

    def _check_var(self, v, what: str):
        if v not in self._index:
            raise EvidenceError(f"unknown {what} {v!r}; variables: {self.variables[:10]}"
                                f"{'...' if len(self.variables) > 10 else ''}")

    def _evidence(self, evidence: Mapping | None) -> tuple[dict, int | None]:
        ev, n = {}, None
        for k, val in (evidence or {}).items():
            self._check_var(k, "evidence variable")
            a = decode_states(k, self.states[k], val)
            if a.ndim == 1:
                if n is not None and a.shape[0] != n:
                    raise EvidenceError(f"batched evidence must share one length; {k!r} has {a.shape[0]}, not {n}")
                n = a.shape[0]
            ev[k] = a
        if n == 0:
            raise EvidenceError("evidence is an empty batch")
        return ev, n

    def _unary(self, ev: dict, n: int | None, soft: Mapping | None) -> np.ndarray:
        K = max(self.cards.values())
        rows = n or 1
        limits.check_bytes(8.0 * rows * len(self.variables) * K, what="the local evidence", knob="batch_bytes",
                           cause=f"{rows} rows x {len(self.variables)} variables")
        u = np.ones((rows, len(self.variables), K))
        for k, a in ev.items():
            i = self._index[k]
            u[:, i, :] = 0.0
            u[np.arange(rows), i, a] = 1.0
        for k, lik in (soft or {}).items():
            self._check_var(k, "soft evidence variable")
            lik = np.asarray(lik, dtype=np.float64)
            if lik.shape[-1] != self.cards[k] or not np.isfinite(lik).all() or lik.min() < 0 \
                    or not (lik.reshape(-1, self.cards[k]).max(axis=1) > 0).all():
                raise EvidenceError(f"soft evidence on {k!r} must be a nonnegative likelihood of shape "
                                    f"({self.cards[k]},) or (n, {self.cards[k]}), not all zero")
            u[:, self._index[k], :self.cards[k]] *= lik
        return u

    # -- exact variable elimination -----------------------------------------------------------

    def _eliminate(self, keep: list, ev: dict, n: int | None, soft: Mapping | None, op=np.sum):
        """Sum (or max) out every variable but `keep`: ``(table over keep (n, *cards), batched)``."""
        factors = [(list(f.variables), f.table, False) for f in self.factors]
        u = self._unary(ev, n, soft)
        batched = n is not None
        for k in set(ev) | set(soft or {}):
            i = self._index[k]
            factors.append(([k], u[:, i, :self.cards[k]] if batched else u[0, i, :self.cards[k]], batched))
        order = self._order([v for v in self.variables if v not in keep], factors)
        for v in order:
            touching = [f for f in factors if v in f[0]]
            factors = [f for f in factors if v not in f[0]]
            factors.append(self._combine(touching, [v], op))
        out = self._combine(factors, [], op)
        vs, t, b = out
        perm = [vs.index(v) for v in keep]
        t = np.transpose(t, ([0] if b else []) + [p + b for p in perm])
        if batched and not b:
            t = np.broadcast_to(t, (n,) + t.shape)
        return t

    def _order(self, elim: list, factors: list) -> list:
        """Greedy min-fill (ties: smallest table) elimination order."""
        adj = {v: set() for v in self.variables}
        for vs, _, _ in factors:
            for a in vs:
                adj[a].update(u for u in vs if u != a)
        order, left = [], set(elim)
        while left:
            def cost(v):
                nb = adj[v]
                fill = sum(1 for a in nb for b in nb if a < b and b not in adj[a]) if len(nb) < 30 else len(nb) ** 2
                return fill, float(np.prod([self.cards[u] for u in nb]))
            v = min(left, key=lambda v: (cost(v), self._index[v]))
            for a in adj[v]:
                adj[a].update(adj[v] - {a})
                adj[a].discard(v)
            order.append(v)
            left.discard(v)
        return order

    def _combine(self, fs: list, out_of: list, op) -> tuple:
        """The product of factors `fs`, with the variables `out_of` summed (or maxed) out."""
        scope = []
        for vs, _, _ in fs:
            scope += [v for v in vs if v not in scope]
        keep = [v for v in scope if v not in out_of]
        batched = any(b for _, _, b in fs)
        n = next((t.shape[0] for _, t, b in fs if b), None)
        size = float(np.prod([self.cards[v] for v in scope])) * (n or 1)
        limits.check_bytes(8.0 * size, what=f"an elimination table over {len(scope)} variables",
                           cause=f"{len(scope)} variables with cards {[self.cards[v] for v in scope][:8]}")
        if len(scope) > len(_LETTERS):
            raise ResourceError(f"an elimination step joins {len(scope)} variables; at most {len(_LETTERS)}")
        letter = {v: _LETTERS[i] for i, v in enumerate(scope)}
        if op is np.sum:
            subs = ["".join((["Z"] if b else []) + [letter[v] for v in vs]) for vs, _, b in fs]
            out = ("Z" if batched else "") + "".join(letter[v] for v in keep)
            t = np.einsum(",".join(subs) + "->" + out, *[t for _, t, _ in fs], optimize=True) if fs else np.ones(())
            return keep, t, batched
        full = np.ones(((n,) if batched else ()) + tuple(self.cards[v] for v in scope))
        for vs, t, b in fs:
            shape = ([n] if batched else []) + [self.cards[v] if v in vs else 1 for v in scope]
            perm = ([0] if b else []) + [vs.index(v) + b for v in scope if v in vs]
            t = np.transpose(t, perm).reshape(shape if b or not batched else shape[1:])
            full = full * t
        axes = tuple(scope.index(v) + batched for v in out_of if v in scope)
        return keep, (full.max(axis=axes) if axes else full), batched

    # -- queries -------------------------------------------------------------------------------

    def _check_method(self, method, allowed=METHODS):
        if method not in allowed:
            raise ModelError(f"method must be one of {list(allowed)}, got {method!r}")

    def query(self, targets, *, evidence: Mapping | None = None, soft_evidence: Mapping | None = None,
              method: str = "auto", n_samples: int = 100_000, seed=None, **options) -> DiscreteDistribution:
        """The joint distribution of `targets` given `evidence` (and soft evidence).

        ``method="auto"`` runs exact variable elimination and falls back to
        loopy belief propagation when a table exceeds ``cn.limits`` (the
        result's ``method`` names the limit); ``"loopy"`` takes ``max_iter``,
        ``tol``, ``damping``, ``schedule``; ``"gibbs"`` takes ``chains`` and
        ``burn_in``.

        Returns
        -------
        DiscreteDistribution
            ``probs`` of shape ``(*cards)`` or ``(n, *cards)``.
        """
        self._check_method(method)
        names = [targets] if isinstance(targets, str) or not isinstance(targets, (list, tuple)) else list(targets)
        for t in names:
            self._check_var(t, "target")
        if len(set(names)) != len(names) or set(names) & set(evidence or {}):
            raise EvidenceError(f"targets {names} must be distinct and not observed")
        ev, n = self._evidence(evidence)
        states = [self.states[t] for t in names]
        excluded = ""
        if method in ("auto", "exact"):
            try:
                t = self._eliminate(names, ev, n, soft_evidence)
                z = t.reshape((n, -1) if n else (1, -1)).sum(axis=1)
                if not (z > 0).all():
                    raise EvidenceError(f"the evidence has probability zero{' in some rows' if n else ''}")
                probs = t / z.reshape((-1,) + (1,) * len(names)) if n else t / z[0]
                return DiscreteDistribution(names, probs, states, batched=n is not None,
                                            method="exact (variable elimination)", log_evidence=None)
            except ResourceError as e:
                if method == "exact":
                    raise
                excluded = f"; exact engines passed: variable elimination: ResourceError: {e}"
        if method == "gibbs":
            return self._gibbs_query(names, ev, n, soft_evidence, n_samples, seed, **options)
        fg = self.to_factor_graph()
        u = self._unary(ev, n, soft_evidence)
        probs, conv, it, bad = loopy_marginals(fg, u, [self._index[t] for t in names], **_loopy_options(options))
        if bad.any():
            raise EvidenceError("the evidence has probability zero: loopy propagation found no consistent state")
        ok = bool(conv.all())
        return DiscreteDistribution(names, probs if n else probs[0], states, batched=n is not None,
                                    method=f"loopy belief propagation ({it} iterations, "
                                           f"{'converged' if ok else 'not converged'}){excluded}",
                                    converged=ok, iterations=it)

    def _gibbs_query(self, names, ev, n, soft, n_samples, seed, chains=4, burn_in=None):
        rng = as_generator(seed)
        rows = n or 1
        plan = GibbsPlan.from_factors(self.variables, [self.cards[v] for v in self.variables],
                                      [([self._index[v] for v in f.variables], f.table) for f in self.factors])
        sweeps = -(-max(int(n_samples), 1) // chains)
        burn_in = max(100, sweeps // 10) if burn_in is None else int(burn_in)
        x, fixed, soft_log = self._start(plan, ev, rows, chains, soft, rng)
        blocks = plan.blocks(fixed)
        targets = [self._index[t] for t in names]
        draws, moved = gibbs_run(plan, x, blocks, soft_log, targets, sweeps, burn_in, rng)
        check_moving(plan, x, moved, [i for i in range(len(self.variables)) if i not in fixed], rows, chains,
                     n is not None)
        cards = [self.cards[t] for t in names]
        d = chain_diagnostics(draws.T.reshape(rows, chains, sweeps), int(np.prod(cards)))
        shape = ((rows,) if n else ()) + tuple(cards)
        pick = (lambda a: a.reshape(shape)) if n else (lambda a: a[0].reshape(shape))
        return DiscreteDistribution(names, pick(d["probs"]), [self.states[t] for t in names], batched=n is not None,
                                    method=f"gibbs sampling ({chains} chains x {sweeps} sweeps after {burn_in})",
                                    std_err=pick(d["std_err"]),
                                    diagnostics={"ess": pick(d["ess"]), "r_hat": pick(d["r_hat"]), "chains": chains})

    def _start(self, plan, ev, rows, chains, soft, rng):
        """Chain states of positive probability (uniform draws, kept where the log joint is finite)."""
        R, V = rows * chains, len(self.variables)
        fixed = {self._index[k] for k in ev}
        soft_log = {}
        with np.errstate(divide="ignore"):
            for k, lik in (soft or {}).items():
                a = np.broadcast_to(np.asarray(lik, dtype=np.float64), (rows, self.cards[k]))
                soft_log[self._index[k]] = np.repeat(np.log(a), chains, axis=0)
        x = np.zeros((R, V), dtype=np.int64)
        done = np.zeros(R, dtype=bool)
        cards = np.array([self.cards[v] for v in self.variables])
        for _ in range(200):
            cand = (rng.random((R, V)) * cards).astype(np.int64)
            for k, a in ev.items():
                cand[:, self._index[k]] = np.repeat(np.broadcast_to(a, (rows,)), chains)
            lp = np.zeros(R)
            for fam, lt, st in zip(plan.families, plan.log_tables, plan.strides):
                lp += lt[cand[:, fam] @ st]
            for i, sl in soft_log.items():
                lp += sl[np.arange(R), cand[:, i]]
            ok = np.isfinite(lp) & ~done
            x[ok] = cand[ok]
            done |= ok
            if done.all():
                return x, fixed, soft_log
        raise EvidenceError("Gibbs sampling found no state of positive probability to start from (200 uniform "
                            "draws per chain): the evidence may be impossible; use method='exact' or 'loopy'")

    def map(self, *, evidence: Mapping | None = None, method: str = "exact", **options) -> tuple[dict, np.ndarray]:
        """The most probable assignment of the unobserved variables: ``(variable -> state(s), log P(x, e))``.

        ``"exact"`` decodes max-marginals one variable at a time (each a max-product elimination); ``"loopy"``
        takes each variable's largest max-product belief.
        """
        self._check_method(method, ("exact", "loopy"))
        ev, n = self._evidence(evidence)
        free = [v for v in self.variables if v not in ev]
        fixed = dict(ev)
        if method == "loopy":
            out = propagate(self.to_factor_graph(), self._unary(ev, n, None), mode="max", **_loopy_options(options))
            for v in free:
                fixed[v] = out.beliefs[:, self._index[v], :self.cards[v]].argmax(axis=-1)
        else:
            for v in free:
                t = self._eliminate([v], fixed, n if n else None, None, op=np.max)
                fixed[v] = np.asarray(t).reshape((n or 1), -1).argmax(axis=-1)
        x = {v: (np.asarray(fixed[v]).reshape(-1) if n else np.asarray(fixed[v]).reshape(-1)[:1]) for v in self.variables}
        logp = self.log_prob({v: np.broadcast_to(x[v], (n or 1,)) for v in self.variables})
        named = {v: (np.asarray(self.states[v], dtype=object)[x[v]] if n else self.states[v][int(x[v][0])])
                 for v in free}
        return named, (logp if n else float(logp[0]))

    def log_partition_function(self, *, method: str = "exact", **options) -> float:
        """``log Z``: exact (variable elimination) or the Bethe approximation at the loopy fixed point."""
        self._check_method(method, ("exact", "loopy"))
        if method == "exact":
            scale = sum(float(np.log(f.table.max())) for f in self.factors)
            scaled = MarkovNetwork([Potential(f.variables, f.table / f.table.max(), f.states) for f in self.factors])
            return float(np.log(scaled._eliminate([], {}, None, None))) + scale
        fg = self.to_factor_graph()
        u = np.ones((1, len(self.variables), fg.K))
        out = propagate(fg, u, **_loopy_options(options))
        return float(bethe_log_partition(fg, u, out)[0])

    def partition_function(self, *, method: str = "exact", **options) -> float:
        """``Z = Σ_x Π_f ψ_f(x_f)`` (see :meth:`log_partition_function`)."""
        return float(np.exp(self.log_partition_function(method=method, **options)))

    def log_prob(self, values: Mapping) -> np.ndarray:
        """``log P(x)`` of full assignments (every variable: a state or ``(n,)`` states), shape (n,)."""
        x, n = {}, None
        for v in self.variables:
            if v not in values:
                raise EvidenceError(f"log_prob needs a value for every variable; {v!r} is missing")
            x[v] = np.atleast_1d(decode_states(v, self.states[v], values[v]))
            n = max(n or 1, x[v].shape[0])
        out = np.zeros(n)
        with np.errstate(divide="ignore"):
            for f in self.factors:
                out += np.log(f.table[tuple(np.broadcast_to(x[v], (n,)) for v in f.variables)])
        return out - self.log_partition_function()

    def sample(self, n: int, *, seed=None, burn_in: int = 1000, thin: int = 1) -> dict:
        """`n` draws of every variable by one Gibbs chain (after `burn_in` sweeps, every `thin`-th sweep)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 or thin < 1:
            raise ModelError(f"n and thin must be positive integers, got n={n!r}, thin={thin!r}")
        rng = as_generator(seed)
        plan = GibbsPlan.from_factors(self.variables, [self.cards[v] for v in self.variables],
                                      [([self._index[v] for v in f.variables], f.table) for f in self.factors])
        x, fixed, _ = self._start(plan, {}, 1, 1, None, rng)
        blocks = plan.blocks(fixed)
        cards = plan.cards
        strides = np.array([int(np.prod(cards[j + 1:])) for j in range(cards.size)], dtype=np.int64)
        draws, _ = gibbs_run(plan, x, blocks, {}, list(range(cards.size)), n * thin, burn_in, rng)
        flat = draws[::thin, 0]                                                      # (n,)
        return {v: (flat // strides[i]) % cards[i] for i, v in enumerate(self.variables)}


def _loopy_options(options: Mapping) -> dict:
    allowed = ("max_iter", "tol", "damping", "schedule")
    bad = [k for k in options if k not in allowed]
    if bad:
        raise ModelError(f"unknown option {bad[0]!r}; loopy propagation takes {list(allowed)}")
    return {"max_iter": 100, "tol": 1e-8, "damping": 0.0, "schedule": "flooding", **options}


def markov_network_of(model) -> MarkovNetwork:
    """The Markov network of an all-discrete causal model: one factor per node, its CPT over its family.

    Its graph is the moral graph; ``Z = 1`` and every query equals the model's.

    Raises
    ------
    ModelError
        If a node is not discrete and tabulable.
    """
    net = discrete_network(model)
    if net is None:
        raise ModelError("to_markov_network needs a discrete model (every node discrete and tabulable)")
    states = {v: model.specs[v].states for v in model.dag.nodes}
    return MarkovNetwork([Potential([*model.dag.parents(v), v], net.cpts[v],
                                    {u: states[u] for u in (*model.dag.parents(v), v)}) for v in model.dag.nodes])
