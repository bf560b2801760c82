"""The dynamic Bayesian network: a two-slice template, its unrolling and its questions.

:class:`DBN` holds an initial network (step 0) and a transition network (steps
``t >= 1``; parents ``"X"`` in the same step, ``"X[t-1]"`` in the previous one),
any mechanism kind. ``dbn.unroll(T)`` is an ordinary
:class:`~causalnet.CausalModel` on nodes ``X[0] ... X[T-1]``, so d-separation,
``do``, counterfactuals and diagrams work on it at once.

Filtering, smoothing, prediction and queries of a discrete DBN run the
interface algorithm (:mod:`.interface`) on the chain engine, without building
the unrolled model: memory ``O(n T K^2)`` for ``K`` joint interface states.
Linear-Gaussian DBNs run the Kalman filter and smoother over the step's
variables (:mod:`.gaussian`). Other DBNs are answered by the front door on the
unrolled model (its exact engines where the model allows, e.g. conditional
linear Gaussian; sampling otherwise) and say so in ``.method``. Counterfactuals go through the unrolled model's twin
network (exact for discrete and linear-Gaussian DBNs).

Examples
--------
>>> import causalnet as cn
>>> dbn = cn.DBN(
...     initial={"Z": cn.Categorical([0.5, 0.5]), "X": cn.CPT(["Z"], [[0.9, 0.1], [0.2, 0.8]])},
...     transition={"Z": cn.CPT(["Z[t-1]"], [[0.7, 0.3], [0.3, 0.7]]),
...                 "X": cn.CPT(["Z"], [[0.9, 0.1], [0.2, 0.8]])})
>>> post = dbn.smooth({"X": [0, 0, 1]}, T=3)
>>> post.probs["Z"].shape
(3, 2)
>>> dbn.query("Z[2]", evidence={"X[0]": 0}, do={"Z[1]": 1}).probs.round(2).tolist()
[0.3, 0.7]
"""

from __future__ import annotations

import numpy as np

from ...arguments import as_generator, check_int
from ...distributions import DiscreteDistribution
from ...errors import EvidenceError, ModelError, NumericalError
from ...graph.dag import DAG
from ...graph.drawing import to_dot as _draw
from ...inference.request import PER_ROW, question_text
from ...model import CausalModel
from . import learn as fit_module
from .engine import DBNEngine
from .evidence import horizon, merge_do, policy_do, step_arrays
from .gaussian import KALMAN_METHOD, is_linear_gaussian, kalman_marginals, real_arrays
from .interface import METHOD, SliceProgram
from .names import split_step, step_name
from .results import StepMarginals
from .template import check_slices, interface_of, slice_order, unroll_mechanisms, validate_template

__all__ = ["DBN", "METHOD", "DBNEngine"]


class DBN:
    """A dynamic Bayesian network given by its two-slice template.

    Parameters
    ----------
    initial : mapping variable -> Mechanism
        The network of step 0 (parents: variable names of step 0).
    transition : mapping variable -> Mechanism
        The mechanism of each variable at steps ``t >= 1``; a parent ``"X"`` is
        ``X`` at the same step, ``"X[t-1]"`` is ``X`` at the previous step.
    latent : iterable of variables, optional
        Variables never observed (latent at every step of the unrolled model).

    Raises
    ------
    ModelError
        A variable without a mechanism in either map, a mechanism that does not fit its
        parents, or a variable whose kind or states differ between the two slices.
    GraphError
        An unknown parent or a cycle within a slice (the message names the node).
    """

    fit_info = None

    def __init__(self, initial, transition, *, latent=()) -> None:
        init, trans = validate_template(initial, transition)
        latent = frozenset(latent)
        for v in latent:
            if v not in trans:
                raise ModelError(f"DBN latent variable {v!r} is not a variable; variables: {sorted(trans)}")
        self._initial, self._transition, self._latent = init, trans, latent
        self._variables = slice_order(trans)
        self._interface = interface_of(trans, self._variables)
        self._two = self.unroll(2)
        check_slices(self._two.specs, self._variables)
        self._program_cache = None                     # the slice program, built on first use

    # -- views ------------------------------------------------------------------------

    @property
    def variables(self) -> tuple:
        """The variables, in a topological order of the transition slice."""
        return self._variables

    @property
    def interface(self) -> tuple:
        """The forward interface: variables some transition mechanism reads at the previous step."""
        return self._interface

    @property
    def initial(self) -> dict:
        return dict(self._initial)

    @property
    def transition(self) -> dict:
        return dict(self._transition)

    @property
    def latent(self) -> frozenset:
        return self._latent

    @property
    def is_discrete(self) -> bool:
        """True when every variable is discrete (the interface algorithm answers)."""
        return all(self._two.specs[step_name(v, 0)].is_discrete for v in self._variables)

    def spec(self, var: str):
        """The :class:`~causalnet.Spec` (kind, states, shape) of variable `var`."""
        if var not in self._transition:
            raise ModelError(f"{var!r} is not a variable of the DBN; variables: {list(self._variables)}")
        return self._two.specs[step_name(var, 0)]

    def states(self, var: str) -> tuple:
        """State names of discrete variable `var`."""
        if var not in self._transition:
            raise ModelError(f"{var!r} is not a variable of the DBN; variables: {list(self._variables)}")
        return self._two.states(step_name(var, 0))

    def __repr__(self) -> str:
        return f"DBN(variables={list(self._variables)}, interface={list(self._interface)})"

    # -- the unrolled model ----------------------------------------------------------------

    def unroll(self, T: int) -> CausalModel:
        """The :class:`~causalnet.CausalModel` over ``T`` steps, nodes ``X[0] ... X[T-1]``."""
        T = check_int(T, "T", low=1)
        mechs = unroll_mechanisms(self._initial, self._transition, T)
        model = CausalModel(mechs, latent=[step_name(v, t) for v in self._latent for t in range(T)])
        model.cache["dbn template"] = (self, T)
        return model

    def to_dot(self, unrolled: int | None = None, **options) -> str:
        """DOT text of the two-slice template (folded), or of the model unrolled over `unrolled` steps.

        The folded drawing shows slice ``t-1`` (only the interface) and slice
        ``t`` in two clusters, with the transition's edges; options as in
        :func:`causalnet.graph.drawing.to_dot`.
        """
        if unrolled is not None:
            T = check_int(unrolled, "unrolled", low=1)
            model = self.unroll(T)
            clusters = options.pop("clusters", {f"t = {t}": [step_name(v, t) for v in self._variables]
                                                for t in range(T)})
            return model.to_dot(clusters=clusters, **options)
        edges = [(p if p.endswith("[t-1]") else f"{p}[t]", f"{v}[t]")
                 for v, m in self._transition.items() for p in m.parents]
        nodes = [f"{v}[t-1]" for v in self._interface] + [f"{v}[t]" for v in self._variables]
        latent = [f"{v}[{s}]" for v in self._latent for s in ("t-1", "t") if f"{v}[{s}]" in nodes]
        drawing = _Folded(DAG(edges, nodes=nodes, latent=latent), self._two)
        clusters = options.pop("clusters", {"slice t-1": [f"{v}[t-1]" for v in self._interface],
                                            "slice t": [f"{v}[t]" for v in self._variables]})
        return _draw(drawing, clusters=clusters, **options)

    # -- questions ----------------------------------------------------------------------------

    def program(self) -> SliceProgram:
        """The interface algorithm's tables (discrete DBNs; built once)."""
        if self._program_cache is None:
            self._program_cache = SliceProgram(self._two, self._variables, self._interface)
        return self._program_cache

    def _inputs(self, evidence, T, do, policy) -> tuple[dict, dict, int | None]:
        """Evidence and ``do`` (policy included) as ``(n, T)`` state arrays, and the batch size."""
        states = {v: self.states(v) for v in self._variables}
        ev, n = step_arrays(evidence, states, T, "evidence")
        dos, n = step_arrays(do, states, T, "do", n)
        pol, n = policy_do(policy, states, T, n)
        if n == 0:
            raise EvidenceError("the evidence or do is an empty batch (0 rows); a batch needs at least one row")
        dos = merge_do(dos, pol, n)
        nn = 1 if n is None else n
        ev = {v: np.broadcast_to(a, (nn, T)) for v, a in ev.items()}
        return ev, dos, n

    def _horizon(self, T, *maps) -> int:
        if T is None:
            T = horizon(*maps)
            if T == 0:
                raise EvidenceError("give the number of steps T (no time-indexed name fixes it)")
        return check_int(T, "T", low=1, error=EvidenceError)

    def _discrete_pass(self, evidence, T, do, policy, smooth, steps=None, out_vars=None):
        ev, dos, n = self._inputs(evidence, T, do, policy)
        nn = 1 if n is None else n
        prog = self.program()
        msgs = prog.messages(ev, dos, nn, T)
        probs = prog.marginals(msgs, ev, dos, nn, T, out_vars or self._variables, smooth=smooth, steps=steps)
        return probs, msgs, n

    def filter(self, evidence=None, T: int | None = None, *, do=None, policy=None) -> StepMarginals:
        """Filtered marginals ``P(X[t] | evidence at steps 0..t)`` of every variable, ``t = 0 .. T-1``.

        Parameters
        ----------
        evidence : mapping, optional
            ``{"A[3]": value}`` (scalar, state name or ``(n,)`` per-row values) or
            ``{"A": sequence}`` of shape ``(T',)`` or ``(n, T')`` (None/NaN/-1: unobserved).
        T : int, optional
            The number of steps (default: 1 + the last step the evidence names).
        do : mapping, optional
            Interventions ``{"A[5]": value}`` (or whole sequences, -1 for none).
        policy : mapping, optional
            ``{"A": f}`` with ``f(t)`` the action at step t or None (no intervention).

        Returns
        -------
        StepMarginals
            ``.probs[var]`` of shape ``(n, T, K)`` (``(T, K)`` unbatched), ``.log_evidence``.
        """
        return self._marginals(evidence, T, do, policy, smooth=False)

    def smooth(self, evidence=None, T: int | None = None, *, do=None, policy=None) -> StepMarginals:
        """Smoothed marginals ``P(X[t] | all the evidence)`` of every variable; arguments as :meth:`filter`."""
        return self._marginals(evidence, T, do, policy, smooth=True)

    def predict(self, evidence=None, steps: int = 1, *, T: int | None = None, do=None,
                policy=None) -> StepMarginals:
        """Predicted marginals of the `steps` steps after the evidence, ``P(X[T+k] | evidence)``, k = 0..steps-1.

        ``T`` (default: 1 + the last step the evidence names) is where the
        prediction starts; `do` and `policy` may act on the predicted steps.
        """
        steps = check_int(steps, "steps", low=1, error=EvidenceError)
        T0 = self._horizon(T, evidence)
        res = self._marginals(evidence, T0 + steps, do, policy, smooth=False)
        keep = res.steps >= T0
        res.steps = res.steps[keep]
        res.probs = {v: p[..., keep, :] for v, p in res.probs.items()}
        res.means = {v: p[..., keep] for v, p in res.means.items()}
        res.variances = {v: p[..., keep] for v, p in res.variances.items()}
        res.dists = {k: d for k, d in res.dists.items() if split_step(k)[1] >= T0}
        return res

    def _marginals(self, evidence, T, do, policy, *, smooth: bool) -> StepMarginals:
        T = self._horizon(T, evidence, do)
        states = {v: self.states(v) if self._two.specs[step_name(v, 0)].is_discrete else () for v in self._variables}
        if self.is_discrete:
            probs, msgs, n = self._discrete_pass(evidence, T, do, policy, smooth)
            return StepMarginals(np.arange(T), probs, states, method=METHOD, batched=n is not None,
                                 log_evidence=msgs.log_z)
        if is_linear_gaussian(self._initial, self._transition):
            try:
                return self._kalman(evidence, T, do, policy, smooth, states)
            except NumericalError:           # a singular innovation (a set or noiseless variable observed)
                pass
        return self._unrolled_marginals(evidence, T, do, policy, smooth, states)

    def _kalman(self, evidence, T, do, policy, smooth, states) -> StepMarginals:
        """Linear-Gaussian DBNs: Kalman filter / RTS smoother over the step's variables (:mod:`.gaussian`)."""
        y, n = real_arrays(evidence, self._variables, T, "evidence")
        setv, n = real_arrays(self._do_mapping(do, policy, T), self._variables, T, "do", n)
        nn = 1 if n is None else n
        y = np.full((nn, T, len(self._variables)), np.nan) if y is None else np.broadcast_to(y, (nn, *y.shape[1:]))
        setv = None if setv is None else np.broadcast_to(setv, (nn, *setv.shape[1:]))
        means, var, ll = kalman_marginals(self._initial, self._transition, self._variables, y, setv, smooth)
        k = {v: i for i, v in enumerate(self._variables)}
        return StepMarginals(np.arange(T), {}, states, method=KALMAN_METHOD, batched=n is not None, log_evidence=ll,
                             means={v: means[..., i] for v, i in k.items()},
                             variances={v: var[..., i] for v, i in k.items()})

    def _unrolled_marginals(self, evidence, T, do, policy, smooth, states) -> StepMarginals:
        """Continuous DBNs: every node's marginal from the front door on the unrolled model (exact engines)."""
        do = self._do_mapping(do, policy, T)
        ev = self._step_evidence(evidence, T)
        dists, method = {}, None
        for t in (range(T) if not smooth else [T - 1]):
            model = self.unroll(t + 1)
            sub_do = {k: x for k, x in do.items() if split_step(k)[1] <= t}
            model = model.do(sub_do) if sub_do else model
            seen = {k: x for k, x in ev.items() if split_step(k)[1] <= t}
            for s in (range(T) if smooth else [t]):
                for v in self._variables:
                    if step_name(v, s) in seen:             # observed: no distribution to report
                        continue
                    d = model.query(step_name(v, s), evidence=seen or None)
                    dists[step_name(v, s)] = d
                    method = d.method
        return StepMarginals(np.arange(T), {}, states, method=f"unrolled model: {method}",
                             batched=False, dists=dists)

    def _do_mapping(self, do, policy, T) -> dict:
        """`do` and `policy` as one mapping of time-indexed names (for the unrolled model)."""
        out = dict(do or {})
        for var, f in (policy or {}).items():
            if not callable(f):
                out[var] = f
                continue
            if var not in self._transition:
                raise EvidenceError(f"policy names {var!r}, which is not a variable of the DBN")
            for t in range(T):
                val = f(t)
                if val is not None:
                    if step_name(var, t) in out:
                        raise EvidenceError(f"do and policy both set {step_name(var, t)!r}")
                    out[step_name(var, t)] = val
        for k in out:
            split_step(k, self._transition)
        return out

    def _step_evidence(self, evidence, T) -> dict:
        """Evidence as a mapping of time-indexed names (sequences unpacked; NaN/None steps dropped)."""
        out = {}
        for k, v in (evidence or {}).items():
            if k in self._transition:
                arr = np.asarray(v, dtype=float)
                if arr.ndim != 1:
                    raise EvidenceError(f"evidence sequence of {k!r}: continuous DBNs take one (T',) sequence")
                for t, x in enumerate(arr):
                    if not np.isnan(x):
                        out[step_name(k, t)] = x
            else:
                var, t = split_step(k, self._transition)
                if t >= T:
                    raise EvidenceError(f"evidence on {k!r} is at or past the horizon T={T}")
                out[k] = v
        return out

    def _show(self, var, value) -> str:
        """One step's value as a question shows it: a state name, a number, or ``<per-row>``."""
        if np.ndim(value) > 0:
            return PER_ROW
        if self.spec(var).states is not None and isinstance(value, (int, np.integer)):
            states = self.states(var)
            return str(states[value]) if 0 <= value < len(states) else str(value)
        return f"{value:.6g}" if isinstance(value, (float, np.floating)) else str(value)

    def _question(self, targets, evidence, do, policy, T) -> str:
        """``P(A[5] | do(A[3]=1), O[0]=0, ...)``: the question the interface and Kalman paths answer."""
        def terms(mapping, unobserved):
            out = []
            for k, v in (mapping or {}).items():
                if k in self._transition:                              # a whole sequence (T',) or rows (n, T')
                    arr = np.asarray(v, dtype=object)
                    if arr.ndim != 1:
                        out.append((k, PER_ROW))
                        continue
                    out += [(step_name(k, t), self._show(k, x)) for t, x in enumerate(v)
                            if not unobserved(x) and t < T]
                else:
                    out.append((k, self._show(split_step(k, self._transition)[0], v)))
            return out

        def missing(x):
            return x is None or (isinstance(x, (float, np.floating)) and np.isnan(x)) or \
                (isinstance(x, (int, np.integer)) and x < 0)

        sets = terms(self._do_mapping(do, policy, T), missing)
        seen = terms(evidence, missing)
        return question_text(None, list(targets), [(None, None, f"{k}={v}") for k, v in seen],
                             [(None, f"{k}={v}") for k, v in sets])

    def query(self, target, *, evidence=None, do=None, policy=None, T: int | None = None):
        """``P(target | evidence, do(...))`` with time-indexed names (``"Health[7]"``).

        A single discrete target runs the interface algorithm (``.method`` says
        so) over the steps up to the last one any argument names; several
        targets, or continuous variables, go to the front door on the unrolled
        model (its ``.method`` names the engine).

        Parameters
        ----------
        target : str or list of str
        evidence, do, policy : as in :meth:`filter`
        T : int, optional
            The horizon (default: 1 + the last step named anywhere).

        Returns
        -------
        DiscreteDistribution (``.probs`` ``(n, K)`` when the evidence is batched), or the front door's answer.
        """
        targets = [target] if isinstance(target, str) else list(target)
        if not targets:
            raise EvidenceError("query needs a target, e.g. 'A[3]'")
        tsteps = [split_step(x, self._transition) for x in targets]
        T = self._horizon(T, {x: 0 for x in targets}, evidence, do,
                          {k: v for k, v in (policy or {}).items() if not callable(v)})
        for x, (_, t) in zip(targets, tsteps):
            if t >= T:
                raise EvidenceError(f"target {x!r} is at step {t}, past the horizon T={T} (steps 0..{T - 1})")
        if len(targets) == 1 and self.is_discrete:
            (var, t), = tsteps
            probs, msgs, n = self._discrete_pass(evidence, T, do, policy, True, steps=[t], out_vars=[var])
            p = probs[var][:, 0]                                                       # (n, K)
            batched = n is not None
            return DiscreteDistribution([targets[0]], p if batched else p[0], [self.states(var)], batched=batched,
                                        method=METHOD, log_evidence=msgs.log_z if batched else float(msgs.log_z[0]),
                                        query=self._question(targets, evidence, do, policy, T))
        if len(targets) == 1 and is_linear_gaussian(self._initial, self._transition):
            seen = self._step_evidence(evidence, T)
            if targets[0] not in seen:
                try:
                    states = {v: () for v in self._variables}
                    out = self._kalman(evidence, T, do, policy, True, states)[targets[0]]
                    out.query = self._question(targets, evidence, do, policy, T)
                    return out
                except NumericalError:       # a singular innovation: the unrolled model's joint Gaussian answers
                    pass
        model = self.unroll(T)
        return model.query(targets if len(targets) > 1 else targets[0], evidence=self._step_evidence(evidence, T)
                           or None, do=self._do_mapping(do, policy, T) or None)

    def counterfactual(self, target, *, evidence=None, do=None, policy=None, T: int | None = None):
        """``P(target_{do} | evidence)`` over time, e.g. "had the treatment stopped at t=5".

        Answered on the unrolled model by the front door's counterfactual
        engines (the twin network, exact for discrete and linear-Gaussian
        DBNs; ``.method`` and ``.scm`` say which); `do` and `policy` define the
        counterfactual world.
        """
        targets = [target] if isinstance(target, str) else list(target)
        for x in targets:
            split_step(x, self._transition)
        T = self._horizon(T, {x: 0 for x in targets}, evidence, do,
                          {k: v for k, v in (policy or {}).items() if not callable(v)})
        world = self._do_mapping(do, policy, T)
        if not world:
            raise EvidenceError("a counterfactual needs an intervention (do= or policy=)")
        return self.unroll(T).counterfactual(targets if len(targets) > 1 else targets[0],
                                             evidence=self._step_evidence(evidence, T) or None, do=world)

    def sample(self, T: int, n: int = 1, seed=None) -> dict:
        """``n`` sequences of ``T`` steps: ``{var: (n, T) array}`` (state indices for discrete variables)."""
        T = check_int(T, "T", low=1)
        n = check_int(n, "n", low=1)
        draws = self.unroll(T).sample(n, seed=as_generator(seed))
        return {v: np.stack([np.asarray(draws[step_name(v, t)]) for t in range(T)], axis=1)
                for v in self._variables}

    def log_likelihood(self, sequences) -> np.ndarray:
        """``(n,)`` log-probability of each (possibly partly observed) sequence, ``{var: (n, T)}`` (discrete DBNs)."""
        return fit_module.log_likelihood(self, sequences)

    def fit(self, sequences, *, n_iter: int = 100, tol: float = 1e-8, pseudocount: float = 0.0) -> DBN:
        """A new DBN with this template's structure and states, fitted to `sequences`.

        Fully observed discrete sequences: maximum likelihood (counts). Hidden
        variables (a variable absent from `sequences`, or unobserved cells:
        -1, None, NaN): EM from this DBN's parameters, whose log-likelihood
        never decreases (``.fit_info["log_likelihood"]``). Continuous
        variables (fully observed): each mechanism kind's own estimator on the
        stacked steps. See :mod:`.learn`.

        Parameters
        ----------
        sequences : mapping var -> (n, T) array, mapping of time-indexed names, or a pandas DataFrame
            A DataFrame is long (one row per step, columns = variables, optional
            ``"sequence"`` column grouping rows into sequences) or wide (``"A[t]"`` columns).
        """
        return fit_module.fit(self, sequences, n_iter=n_iter, tol=tol, pseudocount=pseudocount)

    def replace(self, initial=None, transition=None) -> DBN:
        """A new DBN with some mechanisms replaced (same latent variables)."""
        init = dict(self._initial, **(initial or {}))
        trans = dict(self._transition, **(transition or {}))
        return DBN(init, trans, latent=self._latent)


class _Folded:
    """The folded two-slice drawing: a DAG over ``X[t-1]`` and ``X[t]`` with the model's node styles."""

    def __init__(self, dag, two) -> None:
        self.dag, self._two = dag, two

    def dot_node_attrs(self, node) -> dict:
        var, lag = node.rsplit("[", 1)
        return self._two.dot_node_attrs(step_name(var, 0 if lag == "t-1]" else 1))

    def dot_legend(self) -> list:
        return self._two.dot_legend()
