"""Conformance checks for plug-ins: does a new mechanism or engine keep the library's contracts?

As scikit-learn's ``check_estimator`` does for estimators, :func:`check_mechanism`
runs the checks every shipped node kind passes (the mechanism suite of
``tests/mechanisms/test_mechanism_suite.py`` is these checks) and
:func:`check_engine` those every shipped engine passes, against independent
answers: brute-force enumeration of the joint table for discrete queries,
Monte Carlo on the mutilated model for continuous ones, and the consistency
rule ``P(Y_{X=x} | X=x, e) = P(Y | X=x, e)`` for counterfactuals. A failure
raises :class:`ConformanceError` (an ``AssertionError``, so a test runner
reports it as a failed assertion) naming the check, the plug-in, what was
expected and what came.

Examples
--------
>>> import causalnet as cn
>>> check_mechanism(cn.LinearGaussian(["X"], [2.0], sigma=0.5), {"X": cn.LinearGaussian()})
>>> from causalnet.inference.dispatch import QUERY_ENGINES
>>> check_engine(next(e for e in QUERY_ENGINES if e.name == "discrete"))
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from . import gallery
from .distributions import DiscreteDistribution
from .errors import CausalNetError, ModelError
from .inference.dispatch import COUNTERFACTUAL_ENGINES, QUERY_ENGINES
from .inference.engine import Engine, NoExactAnswer
from .inference.request import counterfactual_request, query_request
from .mechanisms.base import DISCRETE, Mechanism, as_generator
from .mechanisms.cauchy import CauchyLinear
from .mechanisms.conditional_gaussian import ConditionalLinearGaussian
from .mechanisms.function import Function
from .mechanisms.gaussian import LinearGaussian
from .mechanisms.intervened import Intervened
from .mechanisms.tabular import CPT, Categorical
from .model import CausalModel
from .models.crf import CRF
from .models.crf.causal import factor_evidence
from .models.dbn import DBN
from .models.hmm import HMM
from .models.statespace import StateSpace

__all__ = ["check_mechanism", "check_engine", "ConformanceError", "Case", "default_cases", "shipped_engines"]

NODE = "node"


class ConformanceError(CausalNetError, AssertionError):
    """A plug-in broke a contract; the message names the check, the plug-in, the expected and the given."""


def _fail(check: str, who: Any, msg: str) -> None:
    raise ConformanceError(f"{check}: {who!r} {msg}")


# -- mechanisms --------------------------------------------------------------------------------


def _model(parents: Mapping, mech: Mechanism) -> CausalModel:
    """The mechanism's node among its parent roots; an :class:`Intervened` one enters through ``do``."""
    if isinstance(mech, Intervened):
        return CausalModel({**parents, NODE: mech.natural}).do({NODE: mech.value})
    return CausalModel({**parents, NODE: mech})


def check_mechanism(mechanism: Mechanism, parents: Mapping[Hashable, Mechanism] | None = None, *,
                    seed: int = 0) -> None:
    """Check that `mechanism` keeps the :class:`~causalnet.Mechanism` contract.

    The mechanism is placed as node ``"node"`` under `parents` (root
    mechanisms for each of its parents) and checked for: parents as a tuple;
    batch-first values of its spec's shape for ``n = 1`` and ``n = 7``
    (integer states for a discrete node, finite numbers otherwise); the same
    seed giving the same values and noise; noise absent exactly when it is
    deterministic; ``abduct`` inverting ``evaluate`` when ``can_abduct``;
    ``log_prob`` giving one value below ``+inf`` per row, never NaN (or, for a
    deterministic node or a kind that defines no density, a ModelError naming
    the node); a ``repr``, and ``to_dict`` naming the
    class or refusing with a ModelError.

    Parameters
    ----------
    mechanism : Mechanism
    parents : mapping node -> Mechanism, optional
        Roots for the mechanism's parents (required when it has parents).
    seed : int

    Raises
    ------
    ConformanceError
        The first check that fails, e.g. ``"batch first: <MyMech> gave shape
        (7, 2) for n=7, expected (7,)"``.
    ModelError
        When `mechanism` is not a Mechanism or `parents` do not cover its parents.
    """
    if not isinstance(mechanism, Mechanism):
        raise ModelError(f"check_mechanism expects a Mechanism, got {type(mechanism).__name__}")
    parents = dict(parents or {})
    missing = [p for p in mechanism.parents if p not in parents]
    if missing:
        raise ModelError(f"check_mechanism: give root mechanisms for the parents {missing} (parents={{...}})")
    if not isinstance(mechanism.parents, tuple):
        _fail("parents", mechanism, f"has parents of type {type(mechanism.parents).__name__}, expected a tuple")
    m = _model(parents, mechanism)
    spec = m.specs[NODE]
    _check_values(m, mechanism, spec, seed)
    _check_noise(m, mechanism, spec, seed)
    _check_log_prob_and_abduct(m, mechanism, spec, seed)
    if not isinstance(repr(mechanism), str):
        _fail("repr", mechanism, "has a repr that is not a str")
    try:
        d = mechanism.to_dict()
    except ModelError:
        return
    if not isinstance(d, dict) or d.get("type") != type(mechanism).__name__:
        _fail("to_dict", mechanism, f"gave {d!r}, expected a dict with type={type(mechanism).__name__!r}")


def _check_values(m: CausalModel, mech: Mechanism, spec, seed: int) -> None:
    for n in (1, 7):
        x = np.asarray(m.sample(n, seed=seed)[NODE])
        if x.shape != (n, *spec.shape):
            _fail("batch first", mech, f"gave shape {x.shape} for n={n}, expected {(n, *spec.shape)}")
        try:
            spec.check_value(NODE, x, n=n)
        except CausalNetError as e:
            _fail("spec", mech, f"gave values its own spec refuses: {e}")
        if spec.kind == DISCRETE and x.dtype != np.int64:
            _fail("states", mech, f"gave dtype {x.dtype} for a discrete node, expected int64 state indices")
        if spec.kind != DISCRETE and not np.all(np.isfinite(x)):
            _fail("finite", mech, "gave NaN or inf values from finite parents")
    a, b = m.sample(50, seed=seed)[NODE], m.sample(50, seed=seed)[NODE]
    if not np.array_equal(a, b):
        _fail("seed", mech, "gave different values for the same seed (draw noise from the rng passed in)")


def _check_noise(m: CausalModel, mech: Mechanism, spec, seed: int) -> None:
    noise = [mech.sample_noise(6, as_generator(seed), spec) for _ in range(2)]
    if (noise[0] is None) != (noise[1] is None) or (noise[0] is not None and not np.array_equal(*noise)):
        _fail("seed", mech, "drew different noise for the same seed")
    if mech.deterministic and not isinstance(mech, Intervened) and noise[0] is not None:
        _fail("noise", mech, "is deterministic but drew noise, expected None")
    if noise[0] is not None and np.shape(noise[0])[:1] != (6,):
        _fail("noise", mech, f"drew noise of shape {np.shape(noise[0])} for n=6, expected the batch axis first")


def _check_log_prob_and_abduct(m: CausalModel, mech: Mechanism, spec, seed: int) -> None:
    s = m.sample(20, seed=seed)
    pa = {p: s[p] for p in m.dag.parents(NODE)}
    try:
        lp = np.asarray(mech.log_prob(NODE, s[NODE], pa, spec))
    except ModelError as e:
        # a deterministic node has no density, nor has a kind that does not define one (the base says so)
        may = mech.deterministic or type(mech).log_prob is Mechanism.log_prob
        if not (may and repr(NODE) in str(e)):
            _fail("log_prob", mech, f"refused its own sample with {e!r}; only a deterministic node or one without "
                  f"a density may, naming the node")
    else:
        if lp.shape != (20,) or np.any(np.isnan(lp)) or np.any(lp == np.inf):
            _fail("log_prob", mech, f"gave shape {lp.shape} (NaN or +inf: {not np.all(np.isfinite(lp[lp > -np.inf]))}) "
                  f"for 20 rows, expected (20,) values < inf")
    if not mech.can_abduct:
        return
    u = mech.sample_noise(20, as_generator(seed + 1), spec)
    x = mech.evaluate(NODE, pa, u, spec, n=20)
    x2 = mech.evaluate(NODE, pa, mech.abduct(NODE, x, pa, spec), spec, n=20)
    if not np.allclose(x2, x, rtol=1e-10, atol=1e-10):
        worst = float(np.max(np.abs(np.asarray(x2, float) - np.asarray(x, float))))
        _fail("abduct", mech, f"does not invert evaluate: evaluate(abduct(x)) is {worst:.3g} away from x")


# -- engines -----------------------------------------------------------------------------------


class _PointMass(NamedTuple):
    mean: float
    var: float = 0.0


class Case(NamedTuple):
    """One question for :func:`check_engine`: ``kind`` is ``"query"`` or ``"counterfactual"``."""

    name: str
    model: CausalModel
    kind: str
    targets: Any
    evidence: Mapping | None = None
    do: Mapping | None = None
    soft_evidence: Mapping | None = None


def default_cases() -> list[Case]:
    """The battery :func:`check_engine` asks by default: discrete (with soft evidence, a tree, an unrolled
    HMM, an unrolled DBN and a linear-chain CRF), linear-Gaussian and linear-Cauchy models."""
    spr = gallery.load("sprinkler")
    tree = CausalModel({"A": Categorical([0.3, 0.7]), "B": CPT(["A"], [[0.9, 0.1], [0.2, 0.8]]),
                        "C": CPT(["B"], [[0.6, 0.4], [0.1, 0.9]]), "D": CPT(["B"], [[0.5, 0.5], [0.7, 0.3]])})
    hmm = HMM(2, "categorical", n_symbols=3, startprob=[0.6, 0.4], transmat=[[0.7, 0.3], [0.2, 0.8]],
              emissionprob=[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]]).to_model(4)
    obs = CPT(["H"], [[0.8, 0.2], [0.3, 0.7]])
    dbn = DBN(initial={"H": Categorical([0.6, 0.4]), "O": obs},
              transition={"H": CPT(["H[t-1]", "O[t-1]"], [[[0.9, 0.1], [0.6, 0.4]], [[0.2, 0.8], [0.3, 0.7]]]),
                          "O": obs}).unroll(4)
    rng = np.random.default_rng(0)
    crf = CRF.from_weights(rng.normal(size=(3, 2)), rng.normal(size=(2, 2)), ["A", "B"], ["a0", "a1", "a2"])
    crf_model = crf.to_model(X=[{"a0": 1.0}, {"a1": 1.0, "a2": 1.0}, {"a2": 1.0}])
    lg = CausalModel({"X": LinearGaussian(bias=0.5, sigma=1.0), "Y": LinearGaussian(["X"], [2.0], sigma=0.5),
                      "Z": LinearGaussian(["X", "Y"], [1.0, -1.0], bias=0.2, sigma=1.0)})
    import scipy.stats as st  # scipy.stats is slow to import: only when the battery is built

    fn = CausalModel({"X": LinearGaussian(bias=0.5), "Y": Function(["X"], np.tanh, noise=st.norm(0.0, 0.5))})
    ca = CausalModel({"U": CauchyLinear(loc=0.0, scale=1.0), "V": CauchyLinear(["U"], [2.0], loc=1.0, scale=0.5)})
    cg = CausalModel({"T": Categorical([0.3, 0.7]), "A": LinearGaussian(bias=0.5, sigma=1.0),
                      "Y": ConditionalLinearGaussian(["T", "A"], [1.0, -2.0], [[0.5], [2.0]], [0.4, 1.5])})
    return [
        Case("discrete prior", spr, "query", "Wet"),
        Case("discrete evidence", spr, "query", "Wet", {"Rain": "yes"}),
        Case("discrete do and evidence", spr, "query", "Wet", {"Rain": "yes"}, {"Sprinkler": "on"}),
        Case("discrete joint", spr, "query", ["Rain", "Sprinkler"], {"Wet": "wet"}),
        Case("discrete batched evidence", spr, "query", "Rain", {"Wet": np.array(["wet", "dry", "wet"])}),
        Case("discrete counterfactual", spr, "counterfactual", "Rain", {"Sprinkler": "on", "Wet": "wet"},
             {"Sprinkler": "on"}),
        Case("discrete soft evidence", spr, "query", "Rain", None, None, {"Wet": [0.2, 0.9]}),
        Case("discrete tree", tree, "query", "A", {"C": 1, "D": 0}),
        Case("unrolled HMM", hmm, "query", "Z[2]", {"X[0]": 0, "X[1]": 2, "X[3]": 1}),
        Case("unrolled HMM counterfactual", hmm, "counterfactual", "X[3]", {"X[0]": 0, "X[2]": 2}, {"Z[1]": 1}),
        Case("unrolled DBN", dbn, "query", "H[2]", {"O[0]": 1, "O[3]": 0}),
        Case("linear-chain CRF", crf_model, "query", "y[1]", factor_evidence(crf_model)),
        Case("gaussian prior", lg, "query", "Z"),
        Case("gaussian do", lg, "query", "Z", None, {"Y": 1.0}),
        Case("unrolled state-space model", StateSpace([[0.9]], [[1.0]], [[0.5]], [[1.0]], [0.0], [[1.0]]).to_model(4),
             "query", "Z[3]", None, {"Z[1]": 0.5}),
        Case("gaussian counterfactual", lg, "counterfactual", "Z", {"X": 0.3, "Y": 1.0}, {"X": 0.3}),
        Case("additive-noise counterfactual", fn, "counterfactual", "Y", {"X": 0.3, "Y": 1.0}, {"X": 0.3}),
        Case("conditional Gaussian counterfactual", cg, "counterfactual", "Y", {"T": 1, "A": 0.3, "Y": 0.5},
             {"T": 1}),
        Case("cauchy prior", ca, "query", "V"),
        Case("cauchy do", ca, "query", "V", None, {"U": 1.0}),
    ]


def check_engine(engine: Engine, cases: Sequence[Case] | None = None, *, n_samples: int = 100_000,
                 seed: int = 0) -> None:
    """Check that `engine` keeps the :class:`~causalnet.inference.engine.Engine` contract on `cases`.

    For every case: ``accepts`` returns a bool, the same one twice, without
    raising; when it accepts, ``answer`` returns a result whose ``.method`` is
    a str (or, for an exact engine, declines with ``NoExactAnswer``), and the
    result agrees with an independent answer: brute-force enumeration of the
    joint table for discrete queries, soft evidence weighting it (to 1e-9 for
    an exact engine and for loopy belief propagation on a tree, 6 standard
    errors for a sampling one; loopy belief propagation off a tree, which has
    no error bound, must give a distribution of the right shape), Monte Carlo
    on ``model.do(do)`` for continuous queries without evidence (mean within 6
    standard errors, spread within 5%; median and interquartile range for
    Cauchy results), the factual query for a counterfactual whose
    intervention repeats the evidence, and the generic discrete twin network
    for one that does not. An engine selected by name (``engine.method``,
    e.g. ``"loopy"``) is asked with that method; a case with soft evidence
    goes only to engines that declare ``soft_evidence`` (as the registry
    does). The engine must accept at least one case.

    Parameters
    ----------
    engine : Engine
    cases : sequence of Case, optional
        Default :func:`default_cases`.
    n_samples, seed
        For sampling engines and the Monte Carlo references.

    Raises
    ------
    ConformanceError
        The first check that fails, naming the case.
    """
    if not isinstance(engine, Engine):
        raise ModelError(f"check_engine expects an Engine, got {type(engine).__name__}")
    if not isinstance(engine.name, str) or not engine.name:
        _fail("name", engine, f"has name {engine.name!r}, expected a non-empty str")
    if not isinstance(engine.exact, (bool, np.bool_)):
        _fail("exact", engine, f"has exact={engine.exact!r}, expected True or False")
    answered = 0
    for case in default_cases() if cases is None else cases:
        if case.soft_evidence and not engine.soft_evidence:
            continue                    # the registry gives soft evidence only to engines that declare it
        request = _request(case, engine, n_samples, seed)
        try:
            ok = [engine.accepts(request) for _ in range(2)]
        except Exception as e:  # an engine declines a question, it does not crash on it
            _fail("accepts", engine, f"raised {e!r} on case {case.name!r}; it must return False instead")
        if not all(isinstance(a, (bool, np.bool_)) for a in ok) or ok[0] != ok[1]:
            _fail("accepts", engine, f"returned {ok} on case {case.name!r}, expected the same bool twice")
        if not ok[0]:
            continue
        try:
            result = engine.answer(request)
        except NoExactAnswer:
            if not engine.exact:
                _fail("answer", engine, f"raised NoExactAnswer on case {case.name!r} but is not an exact engine")
            continue
        if not isinstance(getattr(result, "method", None), str):
            _fail("method", engine, f"answered case {case.name!r} with no str .method naming the engine")
        _compare(engine, case, result, n_samples, seed)
        answered += 1
    if not answered:
        _fail("accepts", engine, "accepted none of the cases; give cases it answers")


def _request(case: Case, engine: Engine, n_samples: int, seed: int):
    method = engine.method or ("auto" if engine.exact else "sampling")      # "loopy", "gibbs", ... by name
    if case.kind == "counterfactual":
        return counterfactual_request(case.model, case.targets, case.evidence, case.do, method=method,
                                      n_samples=n_samples, seed=seed)
    return query_request(case.model, case.targets, case.evidence, case.do, method=method, n_samples=n_samples,
                         seed=seed, soft_evidence=case.soft_evidence)


def _compare(engine: Engine, case: Case, result: Any, n_samples: int, seed: int) -> None:
    if case.kind == "counterfactual":
        ev = dict(case.evidence or {})
        if any(k not in ev or ev[k] != v for k, v in (case.do or {}).items()):
            # a real intervention: the generic twin network (itself held to the consistency rule below)
            twin = next(e for e in COUNTERFACTUAL_ENGINES if e.name == "discrete twin network")
            ref = twin.answer(counterfactual_request(case.model, case.targets, ev, case.do, method="exact"))
        elif isinstance(case.targets, str) and case.targets in ev:    # observed: a point mass at its value
            ref = _PointMass(float(ev[case.targets]))
        else:    # consistency: the intervention repeats the evidence, so the answer is the factual one
            ref = QUERY_ENGINES.answer(query_request(case.model, case.targets, ev, None, method="exact"))
        _agree(engine, case, result, ref)
    elif isinstance(result, DiscreteDistribution):
        _agree(engine, case, result, _enumerate(case))
    elif not case.evidence:
        _monte_carlo(engine, case, result, n_samples, seed)


def _agree(engine: Engine, case: Case, result: Any, ref: Any) -> None:
    if isinstance(ref, DiscreteDistribution):
        got = np.asarray(getattr(result, "probs", np.nan), dtype=float)
        se = getattr(result, "std_err", None)
        tree = (getattr(result, "diagnostics", None) or {}).get("tree")
        if engine.exact or tree:                            # loopy BP is exact on a tree
            tol = 1e-9
        elif tree is False:         # off a tree its fixed point has no error bound: a distribution of the right shape
            sums = got.reshape(got.shape[0] if case.evidence and getattr(result, "batched", False) else 1, -1).sum(-1)
            if got.shape != ref.probs.shape or np.any(got < 0) or np.any(got > 1) or not np.allclose(sums, 1.0):
                _fail("answer", engine, f"answered case {case.name!r} with {got.round(6).tolist()}, not a "
                      f"distribution of shape {ref.probs.shape}")
            return
        else:
            tol = 6 * np.asarray(se if se is not None else 0.0) + 2e-3
        if got.shape != ref.probs.shape or not np.all(np.abs(got - ref.probs) <= tol):
            _fail("answer", engine, f"answered case {case.name!r} with {got.round(6).tolist()}, expected "
                  f"{ref.probs.round(6).tolist()}")
        return
    got, want = _moments(result), _moments(ref)
    tol = 1e-8 if engine.exact else 0.05
    if got is None or not np.allclose(got, want, rtol=tol, atol=tol):
        _fail("answer", engine, f"answered case {case.name!r} with mean, variance {got}, expected {want}")


def _moments(result: Any):
    """Means then variances of a Gaussian, mixture or weighted-sample result; None for another kind."""
    mean = getattr(result, "mean", None)
    mean = mean() if callable(mean) else mean
    cov = getattr(result, "cov", None)
    cov = cov() if callable(cov) else cov
    if cov is not None:
        var = np.diag(np.atleast_2d(cov))
    elif getattr(result, "var", None) is not None:
        var = result.var() if callable(result.var) else result.var
    else:
        return None
    return None if mean is None else np.concatenate([np.ravel(mean), np.ravel(var)])


def _enumerate(case: Case) -> DiscreteDistribution:
    """The brute-force answer: the joint table of ``model.do(do)`` enumerated, conditioned, marginalised."""
    m = case.model.do(case.do) if case.do else case.model
    nodes = list(m.dag.nodes)
    cards = [len(m.states(v)) for v in nodes]
    grid = np.array(list(itertools.product(*map(range, cards)))).T           # (nodes, prod(cards))
    joint = np.exp(m.log_prob({v: grid[i] for i, v in enumerate(nodes)})).reshape(cards)
    for v, lik in (case.soft_evidence or {}).items():                       # virtual evidence: a likelihood
        shape = [1] * len(nodes)
        shape[nodes.index(v)] = cards[nodes.index(v)]
        joint = joint * np.asarray(lik, dtype=float).reshape(shape)
    targets = [case.targets] if isinstance(case.targets, str) else list(case.targets)
    ev = dict(case.evidence or {})
    n = next((len(v) for v in ev.values() if np.ndim(v)), None)
    rows = []
    for r in range(n or 1):
        t = joint
        for v, x in ev.items():
            x = x[r] if np.ndim(x) else x
            k = m.states(v).index(x) if isinstance(x, str) else int(x)
            t = np.take(t, [k], axis=nodes.index(v))
        t = t.sum(axis=tuple(i for i, v in enumerate(nodes) if v not in targets))
        t = np.moveaxis(t.reshape([c for v, c in zip(nodes, cards) if v in targets]),
                        [sorted(targets, key=nodes.index).index(v) for v in targets], range(len(targets)))
        rows.append(t / t.sum())
    probs = np.stack(rows) if n else rows[0]
    return DiscreteDistribution(targets, probs, [m.states(v) for v in targets], batched=bool(n), method="enumeration")


def _monte_carlo(engine: Engine, case: Case, result: Any, n_samples: int, seed: int) -> None:
    m = case.model.do(case.do) if case.do else case.model
    x = np.asarray(m.sample(max(n_samples, 100_000), seed=seed + 7)[case.targets], dtype=float)
    if hasattr(result, "loc") and hasattr(result, "scale"):           # Cauchy: median and IQR = 2 scale
        loc, scale = float(np.ravel(result.loc)[0]), float(np.ravel(result.scale)[0])
        q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
        se = np.pi * scale / (2 * np.sqrt(len(x)))
        if abs(med - loc) > 6 * se + 1e-3 or abs((q3 - q1) - 2 * scale) > 0.05 * 2 * scale:
            _fail("answer", engine, f"answered case {case.name!r} with Cauchy({loc:.4g}, {scale:.4g}); Monte Carlo "
                  f"gives median {med:.4g} and half-IQR {(q3 - q1) / 2:.4g}")
        return
    if callable(getattr(result, "quantile", None)):                    # samples: quartiles within 5% of the IQR
        got, want = np.ravel(result.quantile([0.25, 0.5, 0.75])), np.quantile(x, [0.25, 0.5, 0.75])
        if got.shape != (3,) or np.any(np.abs(got - want) > 0.05 * (want[2] - want[0])):
            _fail("answer", engine, f"answered case {case.name!r} with quartiles {got.round(4).tolist()}; Monte Carlo "
                  f"gives {want.round(4).tolist()}")
        return
    got = _moments(result)
    if got is None:
        return
    mean, var = got[0], got[1]
    if abs(mean - x.mean()) > 6 * x.std() / np.sqrt(len(x)) + 1e-3 or abs(var - x.var()) > 0.05 * x.var() + 1e-6:
        _fail("answer", engine, f"answered case {case.name!r} with mean {mean:.4g}, variance {var:.4g}; Monte Carlo "
              f"gives {x.mean():.4g}, {x.var():.4g}")


def shipped_engines() -> list[Engine]:
    """Every engine registered for queries and counterfactuals."""
    return list(QUERY_ENGINES) + list(COUNTERFACTUAL_ENGINES)
