"""Exact counterfactuals on conditional Gaussian (CG) networks: a twin network that is again a CG network.

Abduction, action and prediction share each node's exogenous noise between
the factual world and the worlds where the intervention changes it:

* a **real** node ``x = b[k] + W[k]·x_pa + s[k]·u`` keeps its *standardised*
  noise ``u = (x − mean_k) / sd_k ~ N(0, 1)``, where ``k`` is the
  configuration of its discrete parents; in another world it is
  ``x' = b[k'] + W[k']·x'_pa + s[k']·u`` — a counterfactual change of a
  discrete parent (``k → k'``) rescales the shared noise by ``sd_k'``;
* a **discrete** node keeps the inverse-CDF noise of the discrete engine
  (``u ~ U(0, 1)``, ``x = min{k : u < F(k | pa)}``), exact as a discrete
  variable over the intervals cut by the CDF breakpoints
  (:func:`~causalnet.inference.counterfactual.noise_intervals`).

Each shared noise is a root of the twin network (a standard normal real
node, or a discrete node over the intervals) and each copy of a node is a
deterministic function of its parents in its world and that root: a
:class:`~causalnet.mechanisms.conditional_gaussian.ConditionalLinearGaussian`
with variance 0 (the noise enters as one more real parent, with weight
``s[k]``), or a 0/1 table. The twin network is therefore itself a CG network
and :func:`~causalnet.inference.cg_elimination.cg_solve` answers it exactly,
over any number of worlds (constant, per-row, shift and affine
interventions). Nested interventions (``M = M_{X=0}``) are left to the
sampled engine.
"""

from __future__ import annotations

import numpy as np

from ..errors import EvidenceError
from ..graph.dag import DAG
from ..mechanisms.base import DISCRETE, REAL
from ..mechanisms.conditional_gaussian import ConditionalLinearGaussian
from ..mechanisms.gaussian import LinearGaussian
from ..mechanisms.intervened import Intervened
from ..mechanisms.tabular import CPT, Categorical
from .cg_elimination import cg_solve, real_law
from .conditional_gaussian import cg_reason, cg_result
from .counterfactual import WorldCopies, noise_intervals
from .discrete import shift_map
from .engine import Engine, NoExactAnswer
from .request import FACTUAL

__all__ = ["ConditionalGaussianTwinEngine", "TwinModel", "SCM_CG"]

SCM_CG = ("conditional Gaussian SCM: a real node is x = b[k] + W[k]·pa + sd[k]·u with the standardised noise "
          "u = (x - mean_k) / sd_k ~ N(0,1) of its discrete parents' configuration k shared by the worlds (a "
          "counterfactual change of a discrete parent k -> k' rescales it: x' = mean_k'(pa') + sd_k'·u); a discrete "
          "node is the monotone inverse-CDF SCM: u ~ U(0,1), x = min{k : u < F(k | pa)}")


class _CGTwin(WorldCopies):
    """The twin (multi-world) CG network of a counterfactual request, built on demand from the targets and evidence.

    A node keeps its factual copy in every world whose interventions do not
    reach it; a changed copy is a constant (``do``, applied to the twin model
    at the end) or its natural — possibly shifted — mechanism in that world,
    driven by the shared noise root of the node.
    """

    def __init__(self, request) -> None:
        super().__init__(request)
        self.model = request.model
        self.mechs: dict = {}
        self.dos: dict = {}
        self.noise: dict = {}

    def _shares_noise(self, v) -> bool:
        return self.runs_natural_copy(v)

    def _u(self, v) -> str:
        """The shared noise root of `v` (added once)."""
        if v not in self.noise:
            name = self.noise[v] = f"u{self.order[v]}"
            if self.model.specs[v].kind == DISCRETE:
                _, weights, _ = noise_intervals(self._table(v), v)
                self.mechs[name] = Categorical(weights)
            else:
                self.mechs[name] = LinearGaussian()
        return self.noise[v]

    def _table(self, v) -> np.ndarray:
        return self.model.mechanisms[v].table                             # (*pa in declared order, K)

    def _copy(self, world: str, v, mech, shared: bool) -> object:
        """The mechanism of `v`'s copy in `world` (parents renamed), driven by the shared noise when `shared`."""
        specs = self.model.specs
        if specs[v].kind == DISCRETE:
            natural = mech.natural if isinstance(mech, Intervened) else mech
            parents = [self.name(world, p) for p in natural.parents]
            K = specs[v].card
            if not shared:
                table = natural.table
                return CPT(parents, table, states=specs[v].states) if parents else Categorical(table,
                                                                                            states=specs[v].states)
            _, _, states = noise_intervals(self._table(v), v)               # (*pa, m)
            if isinstance(mech, Intervened):
                states = shift_map(v, mech, K)[states]
            return CPT([*parents, self._u(v)], np.eye(K)[states], states=specs[v].states)
        law = real_law(self.request.worlds[world].model if world != FACTUAL else self.model, v)
        parents = [self.name(world, p) for p in (*law.dpar, *law.rpar)]
        if not shared:
            return ConditionalLinearGaussian(parents, law.b, law.W, law.s ** 2)
        W = np.concatenate([law.W, law.s[..., None]], axis=-1)             # the noise is one more real parent
        return ConditionalLinearGaussian([*parents, self._u(v)], law.b, W, np.zeros_like(law.b))

    def _factual(self, v) -> None:
        self.mechs[self.names[(FACTUAL, v)]] = self._copy(FACTUAL, v, self.model.mechanisms[v], self._shares_noise(v))

    def _changed(self, world: str, v) -> None:
        w = self.request.worlds[world]
        if v in w.nested:
            raise NoExactAnswer("nested counterfactuals on conditional Gaussian models are sampled")
        name = self.names[(world, v)]
        mech = w.model.mechanisms[v]
        spec = self.model.specs[v]
        if isinstance(mech, Intervened) and not mech.is_shift:            # do: a constant or per-row value
            self.mechs[name] = (Categorical(np.full(spec.card, 1.0 / spec.card), states=spec.states)
                                if spec.kind == DISCRETE else LinearGaussian())
            self.dos[name] = mech.value
        else:
            self.mechs[name] = self._copy(world, v, mech, True)

    def observed(self) -> dict:
        out: dict = {}
        for (w, v), a in self.request.evidence.items():
            key = self.name(w, v)
            if key in self.dos:
                raise EvidenceError(f"{v!r} is observed in the counterfactual world where it is set by do")
            if key in out and not np.array_equal(out[key], a):
                raise EvidenceError(f"{v!r} is observed with different values in two worlds, but the "
                                    f"intervention does not change it: the evidence is impossible")
            out[key] = a
        return out


class ConditionalGaussianTwinEngine(Engine):
    """Exact counterfactuals on CG networks: the twin network of shared standardised Gaussian and
    inverse-CDF noises, solved by the CG strong elimination (see the module docstring)."""

    name = "conditional Gaussian twin"

    def accepts(self, request) -> bool:
        if not request.is_counterfactual or any(w.nested for w in request.worlds.values()):
            return False
        if {s.kind for s in request.model.specs.values()} != {DISCRETE, REAL}:
            return False                    # all-discrete and all-real models have their own twin engines
        return all(cg_reason(w.model) is None for w in request.worlds.values())

    def answer(self, request):
        twin = _CGTwin(request)
        names = [twin.name(w, v) for w, v in request.targets]
        observed = twin.observed()
        if len(set(names)) < len(names):
            raise NoExactAnswer("a target is read in two worlds where the intervention does not change it")
        model = TwinModel(twin.mechs, twin.dos)
        sol = cg_solve(model, names, observed, request.n_rows)
        kind = "multi-world network" if request.is_multiworld else "twin network"
        return cg_result(model, names, request.labels, sol, batched=request.batched,
                         method=f"exact ({kind}, conditional Gaussian strong elimination)", scm=SCM_CG)


class TwinModel:
    """The model-like view the CG engine reads of a twin network: ``dag``, ``specs``, ``mechanisms``, ``cache``.

    Parameters
    ----------
    mechs : dict internal name -> Mechanism
    dos : dict internal name -> constant or per-row value
        Copies set by ``do`` (their mechanisms become :class:`~causalnet.mechanisms.intervened.Intervened`).
    """

    def __init__(self, mechs: dict, dos: dict) -> None:
        self.dag = DAG([(p, c) for c, m in mechs.items() for p in m.parents], nodes=list(mechs))
        self.specs: dict = {}
        for v in self.dag.topological_order():
            self.specs[v] = mechs[v].spec(v, {p: self.specs[p] for p in mechs[v].parents})
        self.mechanisms = {v: (Intervened(dos[v], m) if v in dos else m) for v, m in mechs.items()}
        self.cache: dict = {}
