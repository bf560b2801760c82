"""The engine contract: each engine says whether it can answer a request exactly, and answers it.

An engine is a class with two methods over a validated
:class:`~causalnet.inference.request.Request`:

``accepts(request) -> bool``
    Cheap: can this engine answer the request *exactly* (or, for a sampling
    engine, at all)? It looks at the model's mechanisms, never computes.
``answer(request) -> distribution``
    The answer, whose ``.method`` names the engine. An exact engine that
    discovers only while computing that no closed form exists raises
    :class:`NoExactAnswer`; the registry then moves on.

A :class:`Registry` holds engines in order of preference. ``method="auto"``
asks the exact engines in turn and falls back to the approximate ones whose
``auto`` flag is set (loopy belief propagation for discrete models, then
sampling), saying why in the result: every exact engine that accepted the
request but passed (its :class:`NoExactAnswer`, or the
:class:`~causalnet.errors.ResourceError` of a table past ``cn.limits``) is
named with its reason in the ``method`` of the answer that follows (exact or
approximate), e.g. ``likelihood weighting (100000 samples); exact engines
passed: discrete: ResourceError: ...``. ``"exact"`` refuses to fall back (it
raises the ResourceError, or a ModelError listing the reasons);
``"sampling"`` goes straight to sampling; a method named by an engine's
``method`` attribute (``"loopy"``, ``"gibbs"``, ``"importance"``) runs that
engine. Soft evidence goes only to engines whose ``soft_evidence`` flag is
set. A new engine plugs in with :meth:`Registry.register` without touching
the others.

Examples
--------
>>> class Constant(Engine):
...     name = "constant"
...     def accepts(self, request):
...         return request.nodes == ["K"]
...     def answer(self, request):
...         return 42
>>> reg = Registry([Constant()])
>>> [e.name for e in reg]
['constant']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..errors import ModelError, ResourceError

__all__ = ["Engine", "Registry", "LazyEngine", "NoExactAnswer"]


class NoExactAnswer(ModelError):
    """An exact engine has no closed form for this request (the registry tries the next engine)."""


class Engine:
    """Base class of engines (see the module docstring).

    Attributes
    ----------
    name : str
        Short name, used in messages.
    exact : bool
        False for engines that estimate (sampling); they run last and only
        when ``method`` is ``"auto"`` or ``"sampling"``.
    method : str or None
        The ``method=`` value that selects this engine alone (``"loopy"``, ...);
        None for the engines of ``"exact"``/``"sampling"``.
    auto : bool
        Whether ``method="auto"`` may fall back to this (non-exact) engine.
    soft_evidence : bool
        Whether the engine honours soft (virtual) evidence.
    """

    name: str = "engine"
    exact: bool = True
    method: str | None = None
    auto: bool = True
    soft_evidence: bool = False

    def accepts(self, request) -> bool:
        """Whether this engine can answer `request` (exactly, when `exact`)."""
        raise NotImplementedError

    def answer(self, request):
        """The answer to `request`; :class:`NoExactAnswer` to decline after all."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class LazyEngine:
    """A registry entry whose engine is built (its module imported) on first need.

    Parameters
    ----------
    name : str
        The engine's name (checked against the built engine's).
    build : callable () -> Engine
        Builds the engine, e.g. ``lambda: inference.gibbs.GibbsEngine()`` through
        a package that loads its modules on first use.
    """

    def __init__(self, name: str, build) -> None:
        self.name = name
        self._build = build

    def load(self) -> Engine:
        engine = self._build()
        if not isinstance(engine, Engine) or engine.name != self.name:
            raise ModelError(f"the lazy engine {self.name!r} built {engine!r}")
        return engine

    def __repr__(self) -> str:
        return f"<LazyEngine {self.name!r} (not loaded)>"


class Registry:
    """Engines in order of preference; :meth:`answer` runs the first that applies.

    Parameters
    ----------
    engines : iterable of Engine
    what : str
        What the registry answers ("query", "counterfactual"), for messages.

    Attributes
    ----------
    version : int
        Bumped by every :meth:`register` and :meth:`unregister`.
    """

    def __init__(self, engines: Iterable[Engine | LazyEngine] = (), what: str = "query") -> None:
        self._engines: list = []
        self.what = what
        self.version = 0
        for e in engines:
            self.register(e)

    def register(self, engine: Engine | LazyEngine, *, before: str | None = None) -> None:
        """Add `engine` (last among its kind, or before the engine named `before`).

        A :class:`LazyEngine` stands for an engine whose module loads when the
        registry first needs it (an earlier engine answers most requests).
        """
        if not isinstance(engine, (Engine, LazyEngine)):
            raise ModelError(f"an engine must be an Engine, got {type(engine).__name__}")
        names = self.names()
        if before is not None and before not in names:
            raise ModelError(f"no engine named {before!r} in this registry; engines: {names}")
        if before is not None:
            self._engines.insert(names.index(before), engine)
        else:
            self._engines.append(engine)
        self.version += 1

    def unregister(self, engine: Engine) -> None:
        """Remove `engine` (the same object that was registered)."""
        if not any(e is engine for e in self._all()):
            raise ModelError(f"{engine!r} is not registered")
        self._engines = [e for e in self._engines if e is not engine]
        self.version += 1

    def leader(self):
        """The engine tried first (a :class:`LazyEngine` if not loaded yet), or None; loads nothing."""
        return self._engines[0] if self._engines else None

    def _get(self, i: int) -> Engine:
        """The i-th engine, its module loaded now if it was registered lazily."""
        e = self._engines[i]
        if isinstance(e, LazyEngine):
            e = self._engines[i] = e.load()
        return e

    def _all(self) -> list[Engine]:
        return [self._get(i) for i in range(len(self._engines))]

    def _lazy(self) -> Iterator[Engine]:
        """The engines in order, each loaded only when the iteration reaches it."""
        i = 0
        while i < len(self._engines):
            yield self._get(i)
            i += 1

    def __iter__(self) -> Iterator[Engine]:
        return iter(self._all())

    def first_exact(self, request) -> Engine | None:
        """The exact engine that ``method="auto"`` or ``"exact"`` would try first for `request` (None: none accepts).

        Loads the engines up to that one only. The front door's compiled query
        shapes (:mod:`causalnet.inference.shapes`) use it to learn once which
        engine answers a shape; :attr:`version` changes whenever an engine is
        registered or removed, so that what they learned is dropped.
        """
        soft = bool(getattr(request, "soft", None))
        for engine in self._lazy():
            if engine.exact and (engine.soft_evidence or not soft) and engine.accepts(request):
                return engine
        return None

    def names(self) -> list[str]:
        """The engines' names, in order of preference (loads nothing)."""
        return [e.name for e in self._engines]

    def exact_names(self) -> list[str]:
        return [e.name for e in self._all() if e.exact]

    def answer(self, request):
        """Answer `request` by its ``method``; the result's ``method`` names the engine.

        Under ``method="auto"``, an answer's ``method`` also names every exact
        engine that passed before it, with its reason (a limit, or no closed form).

        Raises
        ------
        ResourceError
            ``method="exact"`` and an exact engine's tables would pass ``cn.limits``.
        ModelError
            ``method="exact"`` and no exact engine answers (with the reasons),
            or no engine of the chosen method applies.
        """
        reasons, too_big = [], None
        soft = bool(getattr(request, "soft", None))

        def usable():                       # lazily: engines after the one that answers never load
            return (e for e in self._lazy() if e.soft_evidence or not soft)

        if request.method not in ("auto", "exact", "sampling"):
            for engine in usable():
                if engine.method == request.method and engine.accepts(request):
                    return engine.answer(request)
            raise ModelError(f"method={request.method!r} does not apply to this {self.what} (it answers plain "
                             f"queries on discrete models)")
        if request.method != "sampling":
            for engine in usable():
                if not engine.exact:
                    continue
                try:
                    if not engine.accepts(request):
                        continue
                    return _passed(engine.answer(request), reasons)
                except NoExactAnswer as e:
                    reasons.append(f"{engine.name}: {e}")
                except ResourceError as e:
                    too_big = too_big or e
                    reasons.append(f"{engine.name}: ResourceError: {e}")
            if request.method == "exact":
                if too_big is not None:
                    raise too_big
                why = f" ({'; '.join(reasons)})" if reasons else ""
                raise ModelError(f"no exact engine answers this {self.what}{why} (exact engines: "
                                 f"{', '.join(self.exact_names())}); use method='sampling' or 'auto'")
        for engine in usable():
            if engine.exact or (engine.method is not None and not engine.auto):
                continue
            if request.method == "sampling" and engine.method is not None:
                continue
            if engine.accepts(request):
                return _passed(engine.answer(request), reasons)
        if soft and not any(e.soft_evidence for e in self._all() if e.accepts(request)):
            raise ModelError(f"no engine takes soft evidence for this {self.what}; soft evidence needs a "
                             f"discrete node and a discrete or sampled model")
        raise ModelError(f"no engine answers this {self.what}")


def _passed(result, reasons: list):
    """`result`, its ``method`` followed by the engines that passed before it and why."""
    if reasons and isinstance(getattr(result, "method", None), str):
        result.method = f"{result.method}; exact engines passed: {'; '.join(reasons)}"
    return result
