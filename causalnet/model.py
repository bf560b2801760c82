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

import difflib
import warnings
from collections.abc import Hashable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .errors import CausalNetWarning, EvidenceError, ModelError, ShapeError
from .graph.dag import DAG
from .mechanisms.base import DISCRETE, REAL, TENSOR, Mechanism, Spec, as_generator
from .mechanisms.intervened import Intervened
from .mechanisms.tabular import state_index

__all__ = ["CausalModel", "Samples", "Trace"]


class Samples(Mapping):
    """Sampled or computed node values: a read-only mapping node -> ``(n, ...)`` array.

    Discrete nodes hold state indices; :meth:`named` and :meth:`to_pandas`
    give state names.

    Attributes
    ----------
    n : int
        Number of rows.
    weights : ndarray of shape (n,) or None
        Importance weights (likelihood weighting), normalised to sum to 1.
    """

    def __init__(self, values: Mapping[Hashable, np.ndarray], specs: Mapping[Hashable, Spec] | None = None,
                 weights: np.ndarray | None = None) -> None:
        self._values = dict(values)
        self._specs = dict(specs or {})
        self.weights = weights
        ns = {np.shape(v)[0] for v in self._values.values() if np.ndim(v)}
        self.n = ns.pop() if len(ns) == 1 else (0 if not ns else -1)

    def __getitem__(self, node: Hashable) -> np.ndarray:
        try:
            return self._values[node]
        except KeyError:
            close = difflib.get_close_matches(str(node), [str(k) for k in self._values], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise KeyError(f"no values for node {node!r}{hint}") from None

    def __iter__(self) -> Iterator:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} n={self.n}: {', '.join(map(str, self._values))}>"

    def named(self, node: Hashable) -> np.ndarray:
        """Values of a discrete node as state names (an object array)."""
        spec = self._specs.get(node)
        vals = self[node]
        if spec is None or spec.kind != DISCRETE:
            return vals
        return np.asarray(spec.states, dtype=object)[vals]

    def to_pandas(self):
        """A pandas DataFrame: one column per scalar node; discrete nodes as Categoricals.

        Tensor nodes are left out (they have no single column).
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Samples.to_pandas needs pandas, which causalnet does not require: pip install pandas") \
                from None

        cols = {}
        for k, v in self._values.items():
            spec = self._specs.get(k)
            if np.ndim(v) != 1:
                continue
            if spec is not None and spec.kind == DISCRETE:
                cols[k] = pd.Categorical.from_codes(v, categories=list(spec.states))
            else:
                cols[k] = v
        df = pd.DataFrame(cols)
        if self.weights is not None:
            df["_weight"] = self.weights
        return df


class Trace(Samples):
    """Every node's value from one forward run, plus the noise that produced it.

    Attributes
    ----------
    noise : dict
        node -> the exogenous noise used (stochastic nodes only).
    """

    def __init__(self, values, specs=None, noise=None) -> None:
        super().__init__(values, specs)
        self.noise = dict(noise or {})


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
                    close = difflib.get_close_matches(str(p), [str(k) for k in mechs], n=1)
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

    def spec(self, node: Hashable) -> Spec:
        return self._specs[self._check_node(node)]

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

    def _check_node(self, node: Hashable, what: str = "node", exc: type = ModelError) -> Hashable:
        try:
            ok = node in self._mechs
        except TypeError:
            ok = False
        if not ok:
            close = difflib.get_close_matches(str(node), [str(k) for k in self._mechs], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise exc(f"unknown {what} {node!r}{hint}")
        return node

    # -- values ---------------------------------------------------------------------------

    def _coerce(self, node: Hashable, value: Any, exc: type = EvidenceError) -> np.ndarray:
        """Evidence/input value -> array (state indices for discrete nodes). Scalars stay 0-d."""
        spec = self._specs[node]
        if spec.kind == DISCRETE:
            try:
                return np.asarray(state_index(node, spec.states, value))
            except EvidenceError as e:
                raise exc(str(e)) from None
        try:
            raw = np.asarray(value)
            arr = np.asarray(value, dtype=spec.dtype)
        except (TypeError, ValueError):
            raise exc(f"value for {node!r} is not numeric: {value!r}") from None
        if np.issubdtype(arr.dtype, np.integer) and raw.dtype.kind == "f" and not np.all(raw == np.round(raw)):
            raise exc(f"node {node!r} holds integers, got non-integral values")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise exc(f"value for {node!r} contains NaN or inf")
        if arr.ndim not in (len(spec.shape), len(spec.shape) + 1):
            raise ShapeError(f"node {node!r} expects shape (n, *{spec.shape}) or {spec.shape}, got {arr.shape}")
        return arr

    def _batch_size(self, arrays: Mapping[Hashable, np.ndarray], n: int | None, what: str) -> int | None:
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
        """
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise ModelError(f"n must be a non-negative integer, got {n!r}")
        tr = self.forward(n=int(n), seed=seed)
        return Samples(tr._values, self._specs)

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
        """
        values = dict(values or {})
        noise = dict(noise or {})
        given = {}
        for k, v in values.items():
            self._check_node(k, "node in values")
            given[k] = self._coerce(k, v, ModelError)
        for k in noise:
            self._check_node(k, "node in noise")
        nb = self._batch_size(given, n, "values")
        nz = {k: np.asarray(v) for k, v in noise.items()}
        for k, a in nz.items():
            if a.ndim == 0:
                raise ShapeError(f"noise for {k!r} must be batch-first (n, ...), got a scalar")
            if nb is None:
                nb = a.shape[0]
            elif a.shape[0] != nb:
                raise ShapeError(f"noise for {k!r} has {a.shape[0]} rows, expected the batch size {nb}")
        if nb is None:
            nb = 1
        keep_set = None if keep is None else {self._check_node(k, "node in keep") for k in keep}
        rng = None
        out: dict = {}
        used: dict = {}
        needed = self._last_use() if keep_set is not None else None
        order = self._dag.topological_order()
        for i, node in enumerate(order):
            spec = self._specs[node]
            if node in given:
                v = given[node]
                v = v if np.ndim(v) == len(spec.shape) + 1 else np.broadcast_to(v, (nb, *v.shape)).copy()
                out[node] = spec.check_value(node, v, n=nb)
            else:
                mech = self._mechs[node]
                if node in nz:
                    u = nz[node]
                else:
                    if rng is None:
                        rng = as_generator(seed)
                    u = mech.sample_noise(nb, rng, spec)
                if u is not None:
                    used[node] = u
                pa = {p: out[p] for p in mech.parents}
                out[node] = mech.evaluate(node, pa, u, spec, n=nb)
            if needed is not None:
                for p in self._mechs[node].parents:
                    if needed[p] == i and p not in keep_set:
                        del out[p]
        if keep_set is not None:
            out = {k: v for k, v in out.items() if k in keep_set}
        return Trace(out, self._specs, used)

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
        """
        vals = {}
        for node in self._mechs:
            if node not in values:
                raise EvidenceError(f"log_prob needs a value for every node; {node!r} is missing")
            vals[node] = self._coerce(node, values[node])
        for k in values:
            self._check_node(k, "node in values", EvidenceError)
        nb = self._batch_size(vals, None, "values") or 1
        for k, v in vals.items():
            if np.ndim(v) == len(self._specs[k].shape):
                vals[k] = np.broadcast_to(v, (nb, *np.shape(v)))
        total = np.zeros(nb)
        for node in self._dag.topological_order():
            mech = self._mechs[node]
            spec = self._specs[node]
            pa = {p: vals[p] for p in mech.parents}
            if mech.deterministic:
                got = mech.evaluate(node, pa, None, spec, n=nb)
                same = np.isclose(got, vals[node], rtol=1e-12, atol=1e-12) if spec.kind != DISCRETE \
                    else got == vals[node]
                if same.ndim > 1:
                    same = same.reshape(nb, -1).all(axis=1)
                with np.errstate(divide="ignore"):
                    total = total + np.log(same.astype(np.float64))
            else:
                total = total + mech.log_prob(node, vals[node], pa, spec)
        return total

    # -- interventions ----------------------------------------------------------------

    def do(self, interventions: Mapping[Hashable, Any]) -> CausalModel:
        """The model under the intervention: a new model; this one is unchanged.

        Parameters
        ----------
        interventions : mapping node -> value
            A constant (a state name or index for a discrete node), a per-row
            array of length n, or a callable of the node's natural value (a
            shift intervention, e.g. ``lambda x: x + 1``; the node keeps its
            parents then).

        Returns
        -------
        CausalModel
            Intervened nodes have constant mechanisms and no parents (or the
            callable applied to their natural value).

        Raises
        ------
        ModelError
            Unknown node (with a suggestion) or a value that does not fit the node.
        """
        if not isinstance(interventions, Mapping):
            raise ModelError(f"do expects a mapping node -> value, got {type(interventions).__name__}")
        new_mechs = dict(self._mechs)
        cut = []
        shift = []
        for node, value in interventions.items():
            self._check_node(node, "node in do")
            old = self._mechs[node]
            if isinstance(old, Intervened):
                warnings.warn(f"{node!r} is already intervened on; the new do replaces it", CausalNetWarning,
                              stacklevel=2)
                old = old.natural
            if callable(value):
                natural = old
                new_mechs[node] = Intervened(value, natural)
                shift.append(node)
            else:
                v = self._coerce(node, value, ModelError)
                new_mechs[node] = Intervened(v, old)
                cut.append(node)
        edges = [(p, v) for v, m in new_mechs.items() for p in m.parents]
        marks = set(self._dag.intervened) | set(cut) | set(shift)
        dag = DAG(edges, nodes=list(new_mechs), latent=self._dag.latent - marks, intervened=marks)
        return CausalModel._from_parts(new_mechs, dag, dict(self._specs))

    @property
    def interventions(self) -> dict:
        """node -> intervention value for nodes under ``do``."""
        return {k: m.value for k, m in self._mechs.items() if isinstance(m, Intervened)}

    # -- queries ------------------------------------------------------------------------

    def query(self, targets, *, evidence: Mapping | None = None, do: Mapping | None = None,
              method: str = "auto", n_samples: int = 100_000, seed: Any = None):
        """The distribution of `targets` given `evidence`, under ``do``.

        Parameters
        ----------
        targets : node, list of nodes, or a query string
            A string such as ``"P(Y | do(X=1), Z=0)"`` is parsed (never
            evaluated); its evidence and do merge with the keywords.
        evidence : mapping node -> value, optional
            States (names or indices) or values; arrays of length n answer n
            queries in one vectorized pass (results batch-first).
        do : mapping node -> value, optional
            As in :meth:`do`.
        method : {"auto", "exact", "sampling"}
            ``"auto"`` uses an exact engine where the model allows (discrete:
            variable elimination; linear-Gaussian: joint Gaussian) and falls
            back to likelihood weighting otherwise; ``result.method`` says
            which ran.
        n_samples : int
            Samples for the sampling engine.
        seed : int or Generator, optional

        Returns
        -------
        DiscreteDistribution, Gaussian, or SampleDistribution
        """
        from .inference.dispatch import run_query

        return run_query(self, targets, evidence=evidence, do=do, method=method, n_samples=n_samples, seed=seed)

    def map(self, targets=None, *, evidence: Mapping | None = None, do: Mapping | None = None):
        """Most probable assignment of `targets` (MPE over all unobserved nodes when None).

        Discrete models only. Returns ``(assignment, log_prob)``: a dict node ->
        state name (or array of names when the evidence is batched) and the log
        joint probability of the assignment with the evidence.
        """
        from .inference.dispatch import run_map

        return run_map(self, targets, evidence=evidence, do=do)

    def counterfactual(self, targets, *, evidence: Mapping | None = None, do: Mapping | None = None,
                       method: str = "auto", n_samples: int = 100_000, seed: Any = None):
        """``P(targets_{do} | evidence)``: abduction, action, prediction.

        Discrete nodes use the monotone inverse-CDF SCM and an exact twin
        network; linear-Gaussian models an exact joint Gaussian over both
        worlds; models with additive noise whose noise is fully determined by
        the evidence abduct exactly; otherwise the answer is sampled (stated in
        ``result.method`` with a standard error). Every result carries ``.scm``
        naming the SCM used.
        """
        from .inference.counterfactual import run_counterfactual

        return run_counterfactual(self, targets, evidence=evidence, do=do, method=method,
                                  n_samples=n_samples, seed=seed)

    # -- diagrams ---------------------------------------------------------------------------

    def to_dot(self, **options) -> str:
        """DOT text of the model's DAG with node kinds; see :func:`causalnet.io.dot.to_dot`."""
        from .io.dot import to_dot

        return to_dot(self, **options)

    def _dot_node_attrs(self, node: Hashable) -> dict:
        """Per-node drawing attributes: the node kind's shape and colour."""
        spec = self._specs[node]
        mech = self._mechs[node]
        if isinstance(mech, Intervened):
            mech = mech.natural
        attrs = {"tooltip": f"{type(mech).__name__}: {spec.describe()}"}
        if spec.kind == DISCRETE:
            attrs.update(shape="ellipse")
        elif spec.kind == TENSOR:
            attrs.update(shape="box")
        elif mech.deterministic:
            attrs.update(shape="box", style="rounded")
        else:
            attrs.update(shape="ellipse")
        kind = getattr(mech, "kind", spec.kind)
        colour = {DISCRETE: "#dbe9f6", REAL: "#e3f1de", TENSOR: "#fbe7c6", "cauchy": "#f6dbe6"}.get(kind)
        if colour:
            attrs["fillcolor"] = colour
            attrs["style"] = (attrs.get("style", "") + ",filled").lstrip(",")
        return attrs
