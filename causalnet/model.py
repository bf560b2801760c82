"""CausalModel: a DAG whose every node has a mechanism.

A :class:`CausalModel` maps node names to :class:`~causalnet.mechanisms.base.Mechanism`
objects; the parents each mechanism declares are the DAG's edges. The model
samples (vectorized ancestral sampling), runs forward from given inputs and
noise, scores full assignments, intervenes (``do``) by replacing mechanisms —
returning a new model — and answers probabilistic, interventional and
counterfactual queries through the engines of :mod:`causalnet.inference`.

Symbols: ``n`` batch.

Examples
--------
>>> import causalnet as cn
>>> m = cn.CausalModel({
...     "Rain": cn.Categorical([0.8, 0.2], states=["no", "yes"]),
...     "Wet": cn.CPT(["Rain"], [[0.9, 0.1], [0.2, 0.8]], states=["dry", "wet"]),
... })
>>> round(float(m.query("Wet", evidence={"Rain": "yes"})["wet"]), 3)
0.8
>>> m.do({"Rain": "yes"}).dag.parents("Rain")
()
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from . import graph as _graphs  # graph.drawing: loaded by the first DOT text
from . import inference as _inference  # inference.effects, .markov, .forward, .frames: loaded on first use
from . import learning, limits
from .arguments import check_int, is_dask_collection, is_frame
from .errors import CausalNetWarning, EvidenceError, ModelError, ShapeError
from .graph.dag import DAG
from .inference.dispatch import run_counterfactual, run_map, run_query
from .mechanisms.base import DISCRETE, REAL, TENSOR, Mechanism, Spec, as_generator
from .mechanisms.intervened import Intervened
from .values import Samples, Trace, check_finite, decode_states

__all__ = ["CausalModel", "Samples", "Trace", "fit"]


# -- the model -------------------------------------------------------------------


class CausalModel:
    """A causal DAG with one mechanism per node.

    Parameters
    ----------
    mechanisms : mapping node -> Mechanism
        In any order; the DAG is read from the mechanisms' parents.
    latent : iterable of nodes, optional
        Nodes that are never observed (drawn dashed; adjustment never uses them).

    Raises
    ------
    ModelError
        If a mechanism is not a Mechanism, names an unknown parent, or does not
        fit its parents (wrong table shape, non-discrete parent of a CPT, ...).
    GraphError
        If the parents form a cycle (the message names it).

    Examples
    --------
    >>> import causalnet as cn
    >>> m = cn.CausalModel({"X": cn.LinearGaussian(), "Y": cn.LinearGaussian(["X"], [2.0])})
    >>> m.dag.parents("Y")
    ('X',)
    """

    def __init__(self, mechanisms: Mapping[Hashable, Mechanism], *, latent: Iterable[Hashable] = ()) -> None:
        if not isinstance(mechanisms, Mapping):
            raise ModelError(f"CausalModel expects a mapping node -> mechanism, got {type(mechanisms).__name__}")
        mechs: dict = {}
        for node, mech in mechanisms.items():
            try:
                hash(node)
            except TypeError:
                raise ModelError(f"node name {node!r} is not hashable") from None
            if not isinstance(mech, Mechanism):
                raise ModelError(f"node {node!r}: expected a Mechanism (e.g. cn.CPT, cn.LinearGaussian), "
                                 f"got {type(mech).__name__}")
            mechs[node] = mech
        for node, mech in mechs.items():
            for p in mech.parents:
                if p not in mechs:
                    close = _close_match(str(p), [str(k) for k in mechs], n=1)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    raise ModelError(f"node {node!r} has parent {p!r}, which has no mechanism{hint}")
        edges = [(p, node) for node, mech in mechs.items() for p in mech.parents]
        dag = DAG(edges, nodes=list(mechs), latent=latent)
        specs: dict = {}
        for node in dag.topological_order():
            mech = mechs[node]
            spec = mech.spec(node, {p: specs[p] for p in mech.parents})
            if not isinstance(spec, Spec):
                raise ModelError(f"mechanism of node {node!r} returned no Spec")
            specs[node] = spec
        self._init(mechs, dag, specs)

    def _init(self, mechs: dict, dag: DAG, specs: dict) -> None:
        self._mechs = mechs
        self._dag = dag
        self._specs = specs
        self._cache: dict = {}

    @classmethod
    def _from_parts(cls, mechs: dict, dag: DAG, specs: dict) -> CausalModel:
        self = cls.__new__(cls)
        self._init(mechs, dag, specs)
        return self

    # -- views ------------------------------------------------------------------------

    @property
    def dag(self) -> DAG:
        """The causal DAG (with latent and intervened marks)."""
        return self._dag

    @property
    def nodes(self) -> tuple:
        return self._dag.nodes

    @property
    def mechanisms(self) -> Mapping:
        """Read-only mapping node -> mechanism."""
        return MappingProxyType(self._mechs)

    @property
    def specs(self) -> Mapping:
        """Read-only mapping node -> :class:`Spec`."""
        return MappingProxyType(self._specs)

    @property
    def cache(self) -> dict:
        """Per-model store for what engines derive from the model (tables, affine forms).

        A model is immutable, so whatever an engine computes from it stays
        valid; engines key their entries by their own name.
        """
        return self._cache

    def spec(self, node: Hashable) -> Spec:
        return self._specs[self.check_node(node)]

    def states(self, node: Hashable) -> tuple:
        """State names of a discrete node."""
        spec = self.spec(node)
        if spec.kind != DISCRETE:
            raise ModelError(f"node {node!r} is {spec.describe()}, not discrete")
        return spec.states

    @property
    def latent(self) -> frozenset:
        return self._dag.latent

    @property
    def kinds(self) -> frozenset:
        """The set of node kinds present (``"discrete"``, ``"real"``, ``"tensor"``, ...)."""
        return frozenset(s.kind for s in self._specs.values())

    def __repr__(self) -> str:
        kinds = ", ".join(sorted(self.kinds))
        return f"<CausalModel {len(self._mechs)} nodes ({kinds}), {len(self._dag.edges)} edges>"

    def __contains__(self, node: object) -> bool:
        return node in self._dag

    def check_node(self, node: Hashable, what: str = "node", exc: type = ModelError) -> Hashable:
        """Return `node` if the model has it; else raise `exc` naming it (with a suggestion).

        Parameters
        ----------
        node : hashable
        what : str
            How the message names the argument (``"target"``, ``"evidence node"``, ...).
        exc : CausalNetError subclass
        """
        try:
            ok = node in self._mechs
        except TypeError:
            ok = False
        if not ok:
            close = _close_match(str(node), [str(k) for k in self._mechs], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise exc(f"unknown {what} {node!r}{hint}")
        return node

    # -- values ---------------------------------------------------------------------------

    def coerce(self, node: Hashable, value: Any, exc: type = EvidenceError) -> np.ndarray:
        """A user value for `node` as an array: state indices for a discrete node.

        Scalars stay 0-d; a batch keeps its leading axis. Discrete values are
        decoded by :func:`causalnet.values.decode_states` (one rule for
        scalars and arrays: names first).

        Raises
        ------
        `exc` (EvidenceError by default), ShapeError
            Unknown state, non-numeric or non-finite value, wrong shape.
        """
        spec = self._specs[node]
        if spec.kind == DISCRETE:
            try:
                return decode_states(node, spec.states, value)
            except EvidenceError as e:
                raise exc(str(e)) from None
        if isinstance(value, (Mapping, set, frozenset, str, bytes)) or callable(value):
            raise exc(f"value for {node!r} must be numeric (a real node), got {type(value).__name__} {_short(value)}")
        try:
            raw = np.asarray(value)
        except (TypeError, ValueError, OverflowError):
            raise exc(f"value for {node!r} is not numeric (or is a ragged array): {_short(value)}") from None
        if raw.dtype.kind in "cSUV":                      # refuse before any cast: complex never becomes real
            raise exc(f"value for {node!r} must be real numbers, got {raw.dtype} values: {_short(value)}")
        try:
            arr = np.asarray(raw, dtype=spec.dtype)
        except (TypeError, ValueError, OverflowError):
            raise exc(f"value for {node!r} is not numeric (or is a ragged array): {_short(value)}") from None
        if np.issubdtype(arr.dtype, np.integer) and raw.dtype.kind == "f" and not np.all(raw == np.round(raw)):
            raise exc(f"node {node!r} holds integers, got non-integral values")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise exc(f"value for {node!r} contains NaN or inf")
        if arr.ndim not in (len(spec.shape), len(spec.shape) + 1):
            one, batch = ((f"shape {spec.shape}", f"(n, {', '.join(map(str, spec.shape))})") if spec.shape
                          else ("a scalar", "(n,) (one value per row)"))
            raise ShapeError(f"value for {node!r} must be {one} or a batch of shape {batch}, got shape {arr.shape}")
        return arr

    def batch_size(self, arrays: Mapping[Hashable, np.ndarray], n: int | None = None,
                   what: str = "values") -> int | None:
        """The one batch size of node values (None when every value is unbatched).

        A value is batched when it has one more axis than its node's per-row
        shape; all batched values (and `n`, when given) must agree.

        Raises
        ------
        ShapeError
            Naming each value's batch size when they differ.
        """
        sizes = {}
        for k, a in arrays.items():
            spec = self._specs[k]
            if np.ndim(a) == len(spec.shape) + 1:
                sizes[k] = np.shape(a)[0]
        distinct = set(sizes.values())
        if n is not None:
            distinct.add(n)
        if len(distinct) > 1:
            raise ShapeError(f"{what} have different batch sizes: "
                             f"{', '.join(f'{k!r}: {v}' for k, v in sizes.items())}" + (f" (n={n})" if n else ""))
        return distinct.pop() if distinct else None

    # -- sampling and forward ---------------------------------------------------------

    def sample(self, n: int, seed: Any = None) -> Samples:
        """Draw `n` joint samples by vectorized ancestral sampling.

        Parameters
        ----------
        n : int
        seed : int or numpy Generator, optional

        Returns
        -------
        Samples
            node -> ``(n, ...)`` array.

        Raises
        ------
        ModelError
            If `n` is not a non-negative int, or `seed` is not a seed.
        ResourceError
            If `n` rows of every node would exceed ``limits.max_table_bytes``.
        """
        n = check_int(n, "n", low=0)
        tr = self.forward(n=n, seed=seed)
        return Samples(dict(tr), self._specs)

    def forward(self, values: Mapping[Hashable, Any] | None = None, noise: Mapping[Hashable, Any] | None = None,
                *, n: int | None = None, seed: Any = None, keep: Iterable[Hashable] | None = None) -> Trace:
        """Run the structural equations in topological order.

        Parameters
        ----------
        values : mapping node -> array, optional
            Values to use as given (inputs of root nodes; a value for an inner
            node clamps it, like an activation patch). Batch first.
        noise : mapping node -> array, optional
            Exogenous noise per node; noise not given is drawn with `seed`.
        n : int, optional
            Batch size when no array fixes it.
        seed : int or Generator, optional
        keep : iterable of nodes, optional
            Keep only these nodes in the Trace (saves memory on big tensor models).

        Returns
        -------
        Trace
            ``.method`` names the forward engine that ran (:mod:`causalnet.inference.forward`).

        Raises
        ------
        ModelError
            Unknown nodes, bad values, or a mechanism that produces NaN or inf
            (the message names the node).
        ShapeError
            Batch sizes that disagree.
        """
        forward = _inference.forward                 # loaded by the first forward pass
        return forward.run_forward(forward.ForwardRequest(self, values, noise, n, seed, keep, self._forward_nodes))

    def _forward_nodes(self, values, noise, n, seed, keep) -> Trace:
        """:meth:`forward` node by node, every input validated: the reference run."""
        given, nz, nb = self._forward_inputs(values, noise, n)
        keep_set = None if keep is None else {self.check_node(k, "node in keep") for k in keep}
        rng = as_generator(seed)
        out: dict = {}
        used: dict = {}
        needed = self._last_use() if keep_set is not None else None
        for i, node in enumerate(self._dag.topological_order()):
            spec = self._specs[node]
            if node in given:
                v = given[node]
                v = v if np.ndim(v) == len(spec.shape) + 1 else np.broadcast_to(v, (nb, *v.shape)).copy()
                out[node] = spec.check_value(node, v, n=nb)
            else:
                out[node], u = self._run_node(node, out, nz, nb, rng)
                if u is not None:
                    used[node] = u
            if needed is not None:
                for p in self._mechs[node].parents:
                    if needed[p] == i and p not in keep_set:
                        del out[p]
        if keep_set is not None:
            out = {k: v for k, v in out.items() if k in keep_set}
        return Trace(out, self._specs, used)

    def _run_node(self, node: Hashable, out: dict, nz: dict, nb: int, rng) -> tuple[np.ndarray, Any]:
        """One structural equation: ``(value, noise used)``; user noise that does not fit is a ModelError."""
        mech = self._mechs[node]
        spec = self._specs[node]
        u = nz[node] if node in nz else mech.sample_noise(nb, rng, spec)
        pa = {p: out[p] for p in mech.parents}
        if node not in nz:
            with np.errstate(all="ignore"):
                x = mech.evaluate(node, pa, u, spec, n=nb)
            return (check_finite(node, x) if spec.kind == REAL else x), u
        if spec.kind == DISCRETE and np.any((u < 0) | (u >= 1)):
            raise ModelError(f"noise for the discrete node {node!r} is u ~ U(0, 1); got values outside [0, 1)")
        try:
            with np.errstate(all="ignore"):
                x = mech.evaluate(node, pa, u, spec, n=nb)
        except (IndexError, ValueError, TypeError) as e:
            if isinstance(e, ModelError):
                raise
            raise ModelError(f"noise for {node!r} does not fit its mechanism: {e}") from None
        return spec.check_value(node, check_finite(node, x, "its mechanism on the given noise")
                                if spec.kind == REAL else x, n=nb), u

    def _forward_inputs(self, values, noise, n) -> tuple[dict, dict, int]:
        """Validated ``(values, noise, batch size)`` of :meth:`forward`; nothing is changed."""
        for arg, name in ((values, "values"), (noise, "noise")):
            if arg is not None and not isinstance(arg, Mapping):
                raise ModelError(f"forward: {name} must be a mapping node -> array, got {type(arg).__name__}")
        if n is not None:
            n = check_int(n, "n", low=0)
        given = {}
        for k, v in (values or {}).items():
            self.check_node(k, "node in values")
            given[k] = self.coerce(k, v, ModelError)
        nb = self.batch_size(given, n, "values")
        nz = {}
        for k, v in (noise or {}).items():
            self.check_node(k, "node in noise")
            try:
                a = np.asarray(v)
            except (TypeError, ValueError):
                a = np.asarray(None)
            if a.dtype.kind not in "iuf":
                raise ModelError(f"noise for {k!r} must be a numeric array, got {_short(v)}")
            if a.ndim == 0:
                raise ShapeError(f"noise for {k!r} must be batch-first (n, ...), got a scalar")
            if not np.all(np.isfinite(a)):
                raise ModelError(f"noise for {k!r} contains NaN or inf")
            if nb is None:
                nb = a.shape[0]
            elif a.shape[0] != nb:
                raise ShapeError(f"noise for {k!r} has {a.shape[0]} rows, expected the batch size {nb}")
            nz[k] = a
        nb = 1 if nb is None else nb
        limits.check_bytes(8.0 * nb * max(len(self._mechs), 1), what=f"a forward run of {nb} rows",
                           cause=f"{nb} rows x {len(self._mechs)} nodes")
        return given, nz, nb

    def _last_use(self) -> dict:
        """node -> index (in topological order) of its last child; for freeing memory."""
        if "last_use" not in self._cache:
            order = self._dag.topological_order()
            pos = {v: i for i, v in enumerate(order)}
            last = {v: pos[v] for v in order}
            for v in order:
                for p in self._mechs[v].parents:
                    last[p] = max(last[p], pos[v])
            self._cache["last_use"] = last
        return self._cache["last_use"]

    def log_prob(self, values: Mapping[Hashable, Any]) -> np.ndarray:
        """``(n,)`` log-likelihood of full assignments (every node given).

        Deterministic nodes contribute 0 where the value equals what the
        mechanism computes and -inf otherwise.

        Raises
        ------
        EvidenceError
            A missing or unknown node, a bad value, batch sizes that disagree.
        ModelError
            A mechanism whose density is NaN at the given values.
        """
        if not isinstance(values, Mapping):
            raise EvidenceError(f"log_prob expects a mapping node -> values, got {type(values).__name__}")
        for k in values:
            self.check_node(k, "node in values", EvidenceError)
        vals = {}
        for node in self._mechs:
            if node not in values:
                raise EvidenceError(f"log_prob needs a value for every node; {node!r} is missing")
            vals[node] = self.coerce(node, values[node])
        nb = self.batch_size(vals, None, "values") or 1
        for k, v in vals.items():
            if np.ndim(v) == len(self._specs[k].shape):
                vals[k] = np.broadcast_to(v, (nb, *np.shape(v)))
        total = np.zeros(nb)
        for node in self._dag.topological_order():
            total = total + self._node_log_prob(node, vals, nb)
        return total

    def _node_log_prob(self, node: Hashable, vals: dict, nb: int) -> np.ndarray:
        mech = self._mechs[node]
        spec = self._specs[node]
        pa = {p: vals[p] for p in mech.parents}
        with np.errstate(all="ignore"):
            if not mech.deterministic:
                lp = np.asarray(mech.log_prob(node, vals[node], pa, spec), dtype=np.float64)
                if np.any(np.isnan(lp) | (lp == np.inf)):
                    raise ModelError(f"node {node!r}: the density of its mechanism is NaN or +inf at the given "
                                     f"values")
                return lp
            got = mech.evaluate(node, pa, None, spec, n=nb)
            if spec.kind == REAL:
                check_finite(node, got)
            same = got == vals[node] if spec.kind == DISCRETE else \
                np.isclose(got, vals[node], rtol=1e-12, atol=1e-12)
            if same.ndim > 1:
                same = same.reshape(nb, -1).all(axis=1)
            return np.where(same, 0.0, -np.inf)

    # -- interventions ----------------------------------------------------------------

    def do(self, interventions: Mapping[Hashable, Any]) -> CausalModel:
        """The model under the intervention: a new model; this one is unchanged.

        Parameters
        ----------
        interventions : mapping node -> value
            A constant (a state name or index for a discrete node), a per-row
            array of length n, an affine intervention (:func:`causalnet.shift`,
            :func:`causalnet.affine`, solved exactly by the Gaussian and Cauchy
            engines), or any callable of the node's natural value (e.g.
            ``lambda x: x + 1``; the node keeps its parents then).

        Returns
        -------
        CausalModel
            Intervened nodes have constant mechanisms and no parents (or the
            callable applied to their natural value).

        Raises
        ------
        ModelError
            Unknown node (with a suggestion), a value that does not fit the
            node, or per-row values of different lengths.
        """
        if not isinstance(interventions, Mapping):
            raise ModelError(f"do expects a mapping node -> value, got {type(interventions).__name__}")
        new_mechs = dict(self._mechs)
        marks = set(self._dag.intervened)
        fixed = {}
        for node, value in interventions.items():
            self.check_node(node, "node in do")
            old = self._mechs[node]
            if isinstance(old, Intervened):
                warnings.warn(f"{node!r} is already intervened on; the new do replaces it", CausalNetWarning,
                              stacklevel=2)
                old = old.natural
            if not callable(value):
                value = fixed[node] = self.coerce(node, value, ModelError)
            new_mechs[node] = Intervened(value, old)
            marks.add(node)
        self.batch_size(fixed, None, "per-row do values")
        edges = [(p, v) for v, m in new_mechs.items() for p in m.parents]
        dag = DAG(edges, nodes=list(new_mechs), latent=self._dag.latent - marks, intervened=marks)
        return CausalModel._from_parts(new_mechs, dag, dict(self._specs))

    @property
    def interventions(self) -> dict:
        """node -> intervention value for nodes under ``do``."""
        return {k: m.value for k, m in self._mechs.items() if isinstance(m, Intervened)}

    # -- queries ------------------------------------------------------------------------

    def query(self, targets, *, evidence: Mapping | None = None, do: Mapping | None = None,
              method: str = "auto", n_samples: int = 100_000, seed: Any = None,
              soft_evidence: Mapping | None = None, **options):
        """The distribution of `targets` given `evidence`, under ``do``.

        Parameters
        ----------
        targets : node, list of nodes, or a query string
            A string such as ``"P(Y | do(X=1), Z=0)"`` is parsed (never
            evaluated); its evidence and do merge with the keywords.
        evidence : mapping node -> value, pandas DataFrame, or Dask DataFrame, optional
            States (names or indices) or values; arrays of length n answer n
            queries in one vectorized pass (results batch-first). A DataFrame
            answers one query per row, a missing cell (NaN/None/pd.NA) leaving
            that node unobserved in that row
            (:func:`causalnet.inference.frames.query_frame`); a Dask DataFrame
            gives a lazy Dask DataFrame of the answers, one partition at a time
            (``result.to_pandas()`` columns).
        do : mapping node -> value, optional
            As in :meth:`do` (per-row arrays join the batch).
        method : {"auto", "exact", "sampling", "loopy", "gibbs", "importance"}
            ``"auto"`` uses an exact engine where the model allows (discrete:
            variable elimination; linear-Gaussian: joint Gaussian;
            linear-Cauchy: affine forms) and falls back otherwise: to loopy
            belief propagation for a discrete model whose exact tables exceed
            ``cn.limits``, to likelihood weighting for the rest;
            ``result.method`` says which ran and which limit excluded the
            exact engine. ``"loopy"`` (``result.converged``,
            ``.iterations``), ``"gibbs"`` (``.std_err``, ``.diagnostics``
            with ESS and R-hat) and ``"importance"`` (a proposal informed by
            loopy propagation) are the approximate engines of discrete
            models (see ``docs/approximate.md``).
        n_samples : int
            Samples for the sampling engines.
        seed : int or Generator, optional
        soft_evidence : mapping node -> array_like, optional
            Virtual evidence: a likelihood over the node's states, shape
            ``(K,)`` or ``(n, K)`` (batched); not necessarily normalised, never
            all zero. Discrete nodes only.
        **options
            Options of the approximate engines: ``max_iter``, ``tol``,
            ``damping``, ``schedule`` (``"flooding"`` or ``"residual"``) for
            loopy (and auto, importance); ``burn_in``, ``chains`` for Gibbs.

        Returns
        -------
        DiscreteDistribution, Gaussian, Cauchy, or EmpiricalDistribution

        Raises
        ------
        EvidenceError, ModelError, ShapeError
            Bad targets, evidence, interventions or options, checked before
            any engine runs (:mod:`causalnet.inference.request`).
        """
        if is_frame(evidence):
            return _inference.frames.query(self, targets, evidence=evidence, do=do, method=method,  # loaded here
                                           n_samples=n_samples, seed=seed, soft_evidence=soft_evidence, **options)
        return run_query(self, targets, evidence=evidence, do=do, method=method, n_samples=n_samples, seed=seed,
                         soft_evidence=soft_evidence, **options)

    def map(self, targets=None, *, evidence: Mapping | None = None, do: Mapping | None = None,
            method: str = "exact", soft_evidence: Mapping | None = None, **options):
        """Most probable assignment of `targets` (MPE over all unobserved nodes when None).

        Discrete models only. Returns ``(assignment, log_prob)``: a dict node ->
        state name (or array of names when the evidence is batched) and the log
        joint probability of the assignment with the evidence. With `targets`
        a subset of the nodes, this is marginal MAP: the other unobserved nodes
        are summed out before maximising (exact variable elimination, sum before max).
        `soft_evidence` (likelihood vectors ``(K,)`` or ``(n, K)``, as in
        :meth:`query`) multiplies the joint by each likelihood scaled to a
        maximum of 1 (so ``log_prob`` includes ``Σ log(L(y) / max L)``).
        ``method="loopy"``: the MPE by max-product loopy belief propagation
        (exact on a tree with a unique maximum), marginal MAP by sum-product
        propagation and decimation (options ``max_iter``, ``tol``, ``damping``,
        ``schedule``).
        """
        return run_map(self, targets, evidence=evidence, do=do, method=method, soft_evidence=soft_evidence,
                       **options)

    def to_markov_network(self):
        """The moral Markov network (one factor per node: its CPT); :func:`~causalnet.inference.markov.markov_network_of`."""
        return _inference.markov.markov_network_of(self)

    def counterfactual(self, targets, *, evidence: Mapping | None = None, do: Mapping | None = None,
                       method: str = "auto", n_samples: int = 100_000, seed: Any = None,
                       soft_evidence: Mapping | None = None):
        """``P(targets_{do} | evidence)``: abduction, action, prediction.

        `evidence` is observed in the factual world and `targets` are read in
        the world where ``do`` was applied; a node may be both (what it was,
        what it would have been). Discrete nodes use the monotone inverse-CDF
        SCM and an exact twin network; linear-Gaussian models (also under
        :func:`causalnet.shift`/:func:`causalnet.affine`) an exact joint
        Gaussian over both worlds; models with additive noise whose noise is
        fully determined by the evidence abduct exactly; otherwise the answer
        is sampled (stated in ``result.method`` with a standard error). Every
        result carries ``.scm`` naming the SCM used. `soft_evidence` (likelihood
        vectors on factual discrete nodes, ``(K,)`` or ``(n, K)``) is honoured
        by the exact discrete twin network.
        """
        return run_counterfactual(self, targets, evidence=evidence, do=do, method=method,
                                  n_samples=n_samples, seed=seed, soft_evidence=soft_evidence)

    def effects(self, treatment: Hashable, outcome: Hashable, treated, control, mediators=None, *,
                evidence: Mapping | None = None, outcome_state=None, method: str = "auto") -> _inference.effects.CausalEffects:
        """Total, controlled direct, natural direct and natural indirect effects of a treatment change.

        Each effect is a difference of expectations over counterfactual worlds
        sharing the exogenous noise (:mod:`causalnet.inference.effects`):
        ``TE = E[Y_{x1}] − E[Y_{x0}]``, ``CDE(m) = E[Y_{x1,m}] − E[Y_{x0,m}]``,
        ``NDE = E[Y_{x1, M=M_{x0}}] − E[Y_{x0}]``,
        ``NIE = E[Y_{x0, M=M_{x1}}] − E[Y_{x0}]``. Exact on discrete models
        (multi-world network) and linear-Gaussian ones (multi-world joint
        Gaussian).

        Parameters
        ----------
        treatment, outcome : node
        treated, control : value
            The treatment values ``x1`` and ``x0`` (states or numbers; per-row
            arrays give one effect per row).
        mediators : node or list of nodes, optional
            Default: every node on a directed path from `treatment` to `outcome`.
        evidence : mapping node -> value, optional
            Factual evidence: conditional effects (batched like any query).
        outcome_state : state, optional
            For a discrete outcome, the effects are on ``P(Y = outcome_state)``
            (default: its last state).
        method : {"auto", "exact", "sampling"}

        Returns
        -------
        CausalEffects
            ``.total``, ``.natural_direct``, ``.natural_indirect``,
            ``.controlled_direct`` (one per mediator value), a readable repr
            and ``.to_pandas()``.

        Raises
        ------
        EvidenceError, ModelError
            Unknown nodes, bad values, mediators that are the treatment or
            the outcome, an outcome that is neither discrete nor scalar real,
            or a model no exact engine answers when ``method="exact"``.

        Examples
        --------
        >>> import causalnet as cn
        >>> m = cn.CausalModel({"X": cn.Categorical([0.5, 0.5]),
        ...                     "M": cn.CPT(["X"], [[0.8, 0.2], [0.3, 0.7]]),
        ...                     "Y": cn.CPT(["X", "M"], [[[0.9, 0.1], [0.5, 0.5]], [[0.6, 0.4], [0.2, 0.8]]])})
        >>> e = m.effects("X", "Y", treated=1, control=0)
        >>> round(e.total, 4), round(e.natural_direct, 4), round(e.natural_indirect, 4)
        (0.5, 0.3, 0.2)
        """
        return _inference.effects.effects(self, treatment, outcome, treated, control, mediators,
                                          evidence=evidence, outcome_state=outcome_state, method=method)

    # -- data ---------------------------------------------------------------------------------

    def fit(self, data, **options) -> CausalModel:
        """A new model with this structure, mechanism kinds and state names, fitted to `data`.

        The model itself is unchanged (models are immutable). Options as in
        :func:`causalnet.fit` (``method``, ``prior``, ``equivalent_sample_size``,
        ``n_iter``, ``tol``, ``seed``, ``progress``, ``restarts``); with
        ``method="em"`` EM starts from this model's parameters.

        Examples
        --------
        >>> import causalnet as cn
        >>> m = cn.gallery.load("sprinkler")
        >>> refit = m.fit(m.sample(20_000, seed=0).to_pandas())
        >>> bool(abs(refit.query("Wet").probs - m.query("Wet").probs).max() < 0.02)
        True
        """
        return learning.fit_model(self, data, **options)

    @property
    def fit_info(self):
        """The EM trace of a fitted model (iterations, log-likelihood per iteration, converged), else None."""
        return learning.fit_info(self)

    def predict(self, data, columns=None):
        """`data` (a DataFrame) with missing cells of discrete nodes — or the whole `columns` — filled by MAP states.

        Each row is one query: its observed cells are the evidence
        (:func:`causalnet.inference.frames.predict`). A Dask DataFrame gives a
        lazy Dask DataFrame, predicted one partition at a time.
        """
        if is_dask_collection(data):
            return _inference.frames.predict_partitions(self, data, columns)
        return _inference.frames.predict(self, data, columns)

    def predict_proba(self, data, node: Hashable) -> np.ndarray:
        """``(n, K)``: the posterior of discrete `node` given each row of `data` (the node's own cell ignored)."""
        return _inference.frames.predict_proba(self, data, node)

    # -- diagrams ---------------------------------------------------------------------------

    def to_dot(self, **options) -> str:
        """DOT text of the model's DAG with node kinds; see :func:`causalnet.graph.drawing.to_dot`."""
        _graphs.drawing.check_dot_options("to_dot", options)
        return _graphs.drawing.to_dot(self, **options)

    def dot_node_attrs(self, node: Hashable) -> dict:
        """Per-node drawing attributes: the node kind's shape and colour."""
        spec = self._specs[node]
        mech = self._mechs[node]
        if isinstance(mech, Intervened):
            mech = mech.natural
        attrs = {"tooltip": f"{type(mech).__name__}: {spec.describe()}"}
        attrs.update(self._kind_style(node)[1])
        return attrs

    def dot_legend(self) -> list:
        """``[(label, attributes)]``: one legend row per node kind drawn in this model, in node order."""
        rows = {}
        for v in self.nodes:
            label, attrs = self._kind_style(v)
            rows.setdefault(label, attrs)
        return list(rows.items())

    def _kind_style(self, node: Hashable) -> tuple[str, dict]:
        """(legend label, shape and colour) of `node`'s kind."""
        spec = self._specs[node]
        mech = self._mechs[node]
        if isinstance(mech, Intervened):
            mech = mech.natural
        kind = getattr(mech, "kind", spec.kind)
        if spec.kind == DISCRETE:
            label, attrs = "discrete", {"shape": "ellipse"}
        elif spec.kind == TENSOR:
            label, attrs = "deterministic tensor", {"shape": "box"}
        elif mech.deterministic:
            label, attrs = "deterministic", {"shape": "box", "style": "rounded"}
        else:
            label, attrs = "continuous", {"shape": "ellipse"}
        if kind == "cauchy":
            label = "Cauchy-linear" + (" (deterministic)" if mech.deterministic else "")
        colour = _KIND_COLOURS.get("cauchy" if kind == "cauchy" else spec.kind)  # one colour per legend label
        if colour:
            attrs["fillcolor"] = colour
            attrs["style"] = (attrs.get("style", "") + ",filled").lstrip(",")
        return label, attrs


#: Fill colour per mechanism kind in diagrams.
_KIND_COLOURS = {DISCRETE: "#dbe9f6", REAL: "#e3f1de", TENSOR: "#fbe7c6", "cauchy": "#f6dbe6"}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def fit(structure, data, **options) -> CausalModel:
    """Fit a :class:`CausalModel` to `data` given its structure (a DAG, an edge list or a graph string).

    See :func:`causalnet.learning.fit` for the options (``method="mle" | "bayes" | "em"``,
    ``prior``, ``equivalent_sample_size``, ``states``, ``latent``, ``n_iter``, ``tol``,
    ``seed``, ``progress``, ``restarts``).

    Examples
    --------
    >>> import causalnet as cn
    >>> data = cn.gallery.load("sprinkler").sample(5_000, seed=1).to_pandas()
    >>> m = cn.fit("Rain -> Sprinkler -> Wet; Rain -> Wet", data)
    >>> m.states("Wet")
    ('dry', 'wet')
    """
    return learning.fit(structure, data, model_class=CausalModel, **options)


def _close_match(word: str, choices: list, n: int = 1) -> list:
    """``difflib.get_close_matches`` (difflib is imported here, on a bad name only)."""
    import difflib

    return difflib.get_close_matches(word, choices, n=n)
