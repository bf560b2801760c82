"""Dynamic Bayesian networks: two-slice templates, their unrolling, and exact inference over time.

* :mod:`.network` — :class:`DBN`: the template (``initial`` and ``transition``
  mechanisms), ``unroll(T)``, ``to_dot``, ``filter``/``smooth``/``predict``/
  ``query``/``counterfactual``, ``sample``, ``fit``;
* :mod:`.template` — validating the template and renaming its parents to steps;
* :mod:`.names` — time-indexed names (``"A[5]"``, ``"A[t-1]"``);
* :mod:`.evidence` — evidence, ``do`` and policies as ``(n, T)`` arrays;
* :mod:`.interface` — the interface algorithm on the chain engine;
* :mod:`.results` — :class:`StepMarginals`;
* :mod:`.learn` — maximum likelihood and EM;
* :mod:`.engine` — the interface engine in the front door's query registry.

>>> from causalnet.models.dbn import DBN
>>> DBN.__name__
'DBN'
"""

from ...runtime import lazy_exports

__all__ = ["DBN", "StepMarginals"]

# Re-exported on first use (PEP 562): importing the package loads none of these modules.
__getattr__, __dir__ = lazy_exports(__name__, {
    "DBN": ".network:DBN",
    "StepMarginals": ".results:StepMarginals",
})
