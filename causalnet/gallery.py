"""Ready models and graphs by name.

The gallery is a registry of named builders. Each entry has a *kind*
(``"graph"`` for a bare :class:`~causalnet.graph.dag.DAG`; models such as discrete
causal models, HMMs or transformers register their own kinds), a builder
called on every load (so callers get a fresh object), and a one-line
description.

:func:`load` returns what the builder makes (a model when the entry is a
model); :func:`graph` always returns a DAG (a model's ``.dag``).

Graphs
------
``sprinkler``
    Rain -> Sprinkler, Rain -> Wet, Sprinkler -> Wet (the DESIGN's example).
``m-bias``
    X <- U1 -> M <- U2 -> Y and X -> Y, with U1 and U2 latent: adjusting for
    the pre-treatment collider M opens a biasing path.
``frontdoor``
    Smoking -> Tar -> Cancer with a latent Genotype -> Smoking, Cancer
    (Pearl 1995): no backdoor set, but Tar is a front-door set.
``asia``
    The "chest clinic" network of Lauritzen & Spiegelhalter (1988), with
    the lowercase names used by bnlearn and pgmpy.
``waste-incinerator`` (kind ``"mixed"``)
    A conditional Gaussian network in the style of Lauritzen's (1992) waste
    incinerator: discrete Burning, Filter and Waste; real Efficiency, CO2,
    Dust, Metal, Emission and Light, linear-Gaussian given the discrete
    states (the numbers are illustrative, not the original ones).
``mixed-treatment`` (kind ``"mixed"``)
    A conditional Gaussian treatment model: a discrete Severity
    (mild/moderate/severe) confounds a binary Treatment and a three-state
    Diagnosis; a real Dose (mg, given Treatment and the real body Weight) and
    the Diagnosis, Severity drive a real Lab value (illustrative numbers).

Decisions
---------
``oil-wildcatter`` (kind ``"influence diagram"``)
    Raiffa's (1968) oil wildcatter: test the site (cost 10) or not, then drill
    (cost 70) or not, knowing the seismic result; the oil is dry, wet or
    soaking (0.5, 0.3, 0.2) and pays 0, 120 or 270. Maximum expected utility
    22.5: test, then drill unless the structure is diffuse.

Approximate inference
---------------------
``ising-10x10``
    A 10 x 10 Ising model (a :class:`~causalnet.inference.markov.MarkovNetwork`).
``diagnosis-noisy-or``
    A QMR-style diagnosis network of noisy-OR findings.

Networks
--------
The bnlearn repository's networks (``alarm``, ``insurance``, ``child``, ``sachs``, ...)
are registered as discrete models read from the BIF files causalnet ships
(:mod:`causalnet.io.bnlearn`); the large ones appear too when pgmpy, which ships them,
is installed.

Layering: the gallery sits on top of :mod:`causalnet.io` and :mod:`causalnet.models`
(it builds their objects); nothing below it imports it.

Adding an entry (for later modules) is one call, e.g.
``_register("hmm-weather", "hmm", _build_weather_hmm, "two-state weather HMM")``;
re-registering a name replaces it, so a graph can be upgraded to a full model
whose ``.dag`` is that graph.

Examples
--------
>>> from causalnet import gallery
>>> gallery.graph("frontdoor").parents("Cancer")
('Tar', 'Genotype')
>>> "asia" in gallery.names()
True

References
----------
.. [1] S. L. Lauritzen, D. J. Spiegelhalter, "Local computations with
       probabilities on graphical structures and their application to expert
       systems", J. R. Stat. Soc. B 50(2), 1988.
.. [2] J. Pearl, "Causal diagrams for empirical research", Biometrika 82, 1995.
.. [3] H. Raiffa, "Decision Analysis: Introductory Lectures on Choices under
       Uncertainty", Addison-Wesley, 1968.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import GraphError
from .graph.dag import DAG
from .inference.markov import MarkovNetwork
from .io import bnlearn
from .io.bif import read_bif
from .mechanisms.compact import NoisyOR
from .mechanisms.conditional_gaussian import ConditionalLinearGaussian
from .mechanisms.decisions import Decision, Utility
from .mechanisms.gaussian import LinearGaussian
from .mechanisms.tabular import CPT, Categorical
from .model import CausalModel
from .models.causal_head import synthetic_number_task
from .models.decisions.diagram import InfluenceDiagram

__all__ = ["names", "describe", "kind", "load", "graph"]


@dataclass(frozen=True)
class _Entry:
    kind: str
    builder: Callable[[], Any]
    description: str


_REGISTRY: dict[str, _Entry] = {}


def _register(name: str, kind: str, builder: Callable[[], Any], description: str) -> None:
    """Add or replace a gallery entry (for library modules, not users)."""
    if not isinstance(name, str) or not name:
        raise GraphError(f"gallery names are non-empty strings, got {name!r}")
    _REGISTRY[name] = _Entry(kind, builder, description)


def _entry(name: Any) -> _Entry:
    entry = _REGISTRY.get(name) if isinstance(name, str) else None
    if entry is None:
        known = list(_REGISTRY)
        close = difflib.get_close_matches(str(name), known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise GraphError(f"no gallery entry {name!r}; {hint}known: {', '.join(known)}")
    return entry


def names(kind: str | None = None) -> list[str]:
    """Names in the gallery, in registration order; only those of `kind` if given."""
    return [n for n, e in _REGISTRY.items() if kind is None or e.kind == kind]


def describe(name: str) -> str:
    """The one-line description of entry `name`."""
    return _entry(name).description


def kind(name: str) -> str:
    """The kind of entry `name` (``"graph"`` for bare DAGs)."""
    return _entry(name).kind


def load(name: str) -> Any:
    """A fresh copy of entry `name`: a model when the entry is one, else its DAG.

    Raises
    ------
    GraphError
        If `name` is unknown (the message lists the known names).
    """
    return _entry(name).builder()


def graph(name: str) -> DAG:
    """The DAG of entry `name` (a model's ``.dag``).

    Raises
    ------
    GraphError
        If `name` is unknown (the message lists the known names).
    """
    obj = load(name)
    if isinstance(obj, DAG):
        return obj
    dag = getattr(obj, "dag", None)
    if not isinstance(dag, DAG):
        raise GraphError(f"gallery entry {name!r} ({kind(name)}) has no DAG")
    return dag


# -- graphs --------------------------------------------------------------------


def _sprinkler() -> DAG:
    return DAG([("Rain", "Sprinkler"), ("Rain", "Wet"), ("Sprinkler", "Wet")])


def _m_bias() -> DAG:
    return DAG(
        [("U1", "X"), ("U1", "M"), ("U2", "M"), ("U2", "Y"), ("X", "Y")],
        nodes=["X", "Y", "M", "U1", "U2"],
        latent=["U1", "U2"],
    )


def _frontdoor() -> DAG:
    return DAG(
        [("Genotype", "Smoking"), ("Genotype", "Cancer"), ("Smoking", "Tar"), ("Tar", "Cancer")],
        nodes=["Smoking", "Tar", "Cancer", "Genotype"],
        latent=["Genotype"],
    )


def _asia() -> DAG:
    return DAG(
        [
            ("asia", "tub"),
            ("smoke", "lung"),
            ("smoke", "bronc"),
            ("tub", "either"),
            ("lung", "either"),
            ("either", "xray"),
            ("either", "dysp"),
            ("bronc", "dysp"),
        ],
        nodes=["asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp"],
    )


_register("sprinkler", "graph", _sprinkler, "Rain -> Sprinkler -> Wet <- Rain: a confounded effect of Sprinkler on Wet")
_register("m-bias", "graph", _m_bias, "X <- U1 -> M <- U2 -> Y, X -> Y (U1, U2 latent): adjusting for M adds bias")
_register("frontdoor", "graph", _frontdoor, "Smoking -> Tar -> Cancer, latent Genotype -> Smoking, Cancer: front-door")
_register("asia", "graph", _asia, "Lauritzen & Spiegelhalter's chest clinic (8 nodes)")


# -- models ----------------------------------------------------------------------
# Registered after the graphs: "sprinkler" and "asia" become full discrete models
# whose .dag is the graph above.


def _sprinkler_model():
    return CausalModel({
        "Rain": Categorical([0.8, 0.2], states=["no", "yes"]),
        "Sprinkler": CPT(["Rain"], [[0.6, 0.4], [0.99, 0.01]], states=["off", "on"]),
        "Wet": CPT(["Rain", "Sprinkler"], [[[1.0, 0.0], [0.1, 0.9]], [[0.2, 0.8], [0.01, 0.99]]],
                   states=["dry", "wet"]),
    })


def _asia_model():
    """The chest-clinic numbers as distributed with bnlearn (states yes/no)."""
    yn = ["yes", "no"]
    return CausalModel({
        "asia": Categorical([0.01, 0.99], states=yn),
        "tub": CPT(["asia"], [[0.05, 0.95], [0.01, 0.99]], states=yn),
        "smoke": Categorical([0.5, 0.5], states=yn),
        "lung": CPT(["smoke"], [[0.1, 0.9], [0.01, 0.99]], states=yn),
        "bronc": CPT(["smoke"], [[0.6, 0.4], [0.3, 0.7]], states=yn),
        "either": CPT(["lung", "tub"], [[[1.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]], states=yn),
        "xray": CPT(["either"], [[0.98, 0.02], [0.05, 0.95]], states=yn),
        "dysp": CPT(["bronc", "either"], [[[0.9, 0.1], [0.8, 0.2]], [[0.7, 0.3], [0.1, 0.9]]], states=yn),
    })


def _linear_gaussian_model():
    """A confounded linear SCM: Ability -> Education -> Income <- Ability, Income -> Savings."""
    return CausalModel({
        "Ability": LinearGaussian(sigma=1.0),
        "Education": LinearGaussian(["Ability"], [0.8], bias=12.0, sigma=1.5),
        "Income": LinearGaussian(["Education", "Ability"], [2.0, 3.0], bias=10.0, sigma=4.0),
        "Savings": LinearGaussian(["Income"], [0.25], bias=-2.0, sigma=2.0),
    })


def _waste_incinerator_model():
    """A conditional Gaussian network shaped like Lauritzen's (1992) waste incinerator (illustrative numbers)."""
    clg = ConditionalLinearGaussian
    return CausalModel({
        "Burning": Categorical([0.85, 0.15], states=["stable", "unstable"]),
        "Filter": Categorical([0.95, 0.05], states=["intact", "defect"]),
        "Waste": Categorical([2 / 7, 5 / 7], states=["industrial", "household"]),
        # filter efficiency (log scale) by Waste x Filter
        "Efficiency": clg(["Waste", "Filter"], [[-3.2, -0.5], [-3.9, -0.4]], [[[]] * 2] * 2,
                          [[0.05, 0.05], [0.05, 0.05]]),
        "CO2": clg(["Burning"], [-2.0, -1.0], [[], []], [0.1, 0.3]),
        # dust emission: a base level by Burning x Waste, plus the efficiency
        "Dust": clg(["Burning", "Waste", "Efficiency"], [[6.5, 6.0], [7.5, 7.0]], [[[1.0], [1.0]], [[1.0], [1.0]]],
                    [[0.03, 0.04], [0.1, 0.1]]),
        "Metal": clg(["Waste"], [0.5, -0.5], [[], []], [0.01, 0.01]),
        "Emission": LinearGaussian(["Dust", "Metal"], [1.0, 1.0], bias=0.0, sigma=0.045),
        "Light": LinearGaussian(["Dust"], [-0.5], bias=3.0, sigma=0.5),
    })


def _mixed_treatment_model():
    """Binary treatment, real dose, discrete diagnosis, real lab value (a CG network, illustrative numbers)."""
    clg = ConditionalLinearGaussian
    return CausalModel({
        "Severity": Categorical([0.5, 0.3, 0.2], states=["mild", "moderate", "severe"]),
        "Treatment": CPT(["Severity"], [[0.8, 0.2], [0.5, 0.5], [0.2, 0.8]], states=["no", "yes"]),
        "Weight": LinearGaussian([], [], bias=75.0, sigma=12.0),
        # untreated: no dose (a tiny spread); treated: 10 mg plus 0.5 mg per kg
        "Dose": clg(["Treatment", "Weight"], [0.0, 10.0], [[0.0], [0.5]], [0.01, 16.0]),
        "Diagnosis": CPT(["Severity", "Treatment"],
                         [[[0.70, 0.25, 0.05], [0.85, 0.13, 0.02]],
                          [[0.40, 0.40, 0.20], [0.65, 0.27, 0.08]],
                          [[0.10, 0.40, 0.50], [0.35, 0.40, 0.25]]],
                         states=["recovering", "stable", "worse"]),
        # a lab marker (e.g. CRP, mg/L) by Severity x Diagnosis, lowered by the dose
        "Lab": clg(["Severity", "Diagnosis", "Dose"],
                   [[5.0, 12.0, 25.0], [8.0, 18.0, 35.0], [12.0, 25.0, 50.0]],
                   [[[-0.05], [-0.08], [-0.10]], [[-0.06], [-0.10], [-0.15]], [[-0.08], [-0.12], [-0.20]]],
                   [[4.0, 9.0, 25.0], [6.0, 16.0, 36.0], [9.0, 25.0, 64.0]]),
    })


def _bnlearn_builder(name: str):
    def build():
        path = bnlearn.path(name)
        if path is None:  # pragma: no cover - registered only when the file exists
            raise GraphError(f"the bnlearn network {name!r} is not available; the large ones need pgmpy, which "
                             f"ships them: pip install causalnet[pgmpy]")
        return read_bif(path)

    return build


_register("sprinkler", "discrete", _sprinkler_model,
          "Rain -> Sprinkler -> Wet <- Rain: a confounded effect of Sprinkler on Wet (discrete model)")
_register("asia", "discrete", _asia_model, "Lauritzen & Spiegelhalter's chest clinic (8 binary nodes)")
_register("linear-gaussian", "gaussian", _linear_gaussian_model,
          "Ability -> Education -> Income <- Ability, Income -> Savings (linear-Gaussian SCM)")
_register("waste-incinerator", "mixed", _waste_incinerator_model,
          "discrete Burning, Filter, Waste and six real nodes: a conditional Gaussian network (Lauritzen 1992 style)")
_register("mixed-treatment", "mixed", _mixed_treatment_model,
          "binary Treatment, real Dose and Weight, discrete Severity and Diagnosis, real Lab (CG network)")


def _ising(side: int = 10, coupling: float = 0.25, seed: int = 0):
    """A side x side Ising model: spins -1/+1, ``exp(J s_i s_j)`` per grid edge, small random fields."""
    rng = np.random.default_rng(seed)
    pair = np.exp(coupling * np.array([[1.0, -1.0], [-1.0, 1.0]]))
    spins = ("-1", "+1")
    edges = {}
    for i in range(side):
        for j in range(side):
            if i + 1 < side:
                edges[(f"S[{i},{j}]", f"S[{i + 1},{j}]")] = pair
            if j + 1 < side:
                edges[(f"S[{i},{j}]", f"S[{i},{j + 1}]")] = pair
    fields = {f"S[{i},{j}]": np.exp(h * np.array([-1.0, 1.0]))
              for (i, j), h in zip(np.ndindex(side, side), rng.normal(0, 0.1, side * side))}
    states = {v: spins for v in fields}
    return MarkovNetwork.from_edges(edges, unary=fields, states=states)


def _noisy_or_diagnosis(diseases: int = 8, findings: int = 24, seed: int = 0):
    """A QMR-style two-layer diagnosis network: rare diseases, noisy-OR findings of 1 to 4 causes each."""
    rng = np.random.default_rng(seed)
    yes_no = ["absent", "present"]
    mechs = {f"disease{i}": Categorical([0.97, 0.03], states=yes_no) for i in range(diseases)}
    for j in range(findings):
        k = int(rng.integers(1, 5))
        causes = [f"disease{i}" for i in sorted(rng.choice(diseases, size=k, replace=False))]
        mechs[f"finding{j}"] = NoisyOR(causes, rng.uniform(0.3, 0.9, size=k).round(2), leak=0.02,
                                       on="present", states=yes_no)
    return CausalModel(mechs)


_register("ising-10x10", "markov", _ising, "a 10 x 10 Ising model (coupling 0.25, small random fields): a MarkovNetwork")
_register("diagnosis-noisy-or", "discrete", _noisy_or_diagnosis,
          "QMR-style diagnosis: 8 rare diseases, 24 noisy-OR findings of 1 to 4 causes")


def _oil_wildcatter():
    """Raiffa's oil wildcatter: Test -> Result -> Drill, Oil -> Result, utilities TestCost and Payoff."""
    results = ["closed", "open", "diffuse", "not tested"]
    seismic = [[0.1, 0.3, 0.6], [0.3, 0.4, 0.3], [0.5, 0.4, 0.1]]          # P(result | oil), Raiffa's numbers
    table = np.zeros((3, 2, 4))                                             # (Oil, Test, Result)
    table[:, 0, 3] = 1.0                                                    # no test: no result
    table[:, 1, :3] = seismic
    return InfluenceDiagram({
        "Oil": Categorical([0.5, 0.3, 0.2], states=["dry", "wet", "soaking"]),
        "Test": Decision([], states=["no", "yes"]),
        "Result": CPT(["Oil", "Test"], table, states=results),
        "Drill": Decision(["Test", "Result"], states=["no", "drill"]),
        "TestCost": Utility(["Test"], [0.0, -10.0]),
        "Payoff": Utility(["Drill", "Oil"], [[0.0, 0.0, 0.0], [-70.0, 50.0, 200.0]]),
    })


_register("oil-wildcatter", "influence diagram", _oil_wildcatter,
          "Raiffa's oil wildcatter: test, then drill knowing the seismic result (MEU 22.5)")


def _register_bnlearn() -> None:
    own = set(bnlearn.packaged_names())
    for name in bnlearn.names():
        if name not in _REGISTRY:
            where = "shipped with causalnet" if name in own else "read from the BIF file pgmpy ships"
            _register(name, "discrete", _bnlearn_builder(name), f"the bnlearn repository's {name!r} network ({where})")


_register_bnlearn()


def _number_task():
    return synthetic_number_task()


_register("number-task", "dataset", _number_task,
          "token sequences with numbers (frozen backbone features) for training the CausalQwen head")
