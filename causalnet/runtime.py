"""Runtime knobs: which backend each kernel family runs, where compiled kernels live, CI or not.

One module holds every process-wide switch that is not a resource limit
(those are in :mod:`causalnet.limits`), and every environment variable
causalnet reads.

Backends
--------
Several families of kernels have a compiled (numba) path beside their numpy
(or plain Python) reference; the answers agree to rounding, and the choice is
a matter of speed only:

=========  ==========================================================  =================================
family     kernels                                                     ``"auto"`` compiles when
=========  ==========================================================  =================================
graph      the Bayes-ball d-separation search                          Python searches spent 1 s
chain      HMM/CRF sweeps: forward, backward, Viterbi, ragged          the chain has >= AUTO_MIN_T steps
tensor     fused add & LayerNorm, small attention, GELU                plan programs spent 1 s in numpy
strings    factorising Arrow string columns of DataFrames              numpy-side encoding took 0.5 s, or 0.05 s once numba is warm (or would)
learning   conditional Gaussian moment sums (``fit`` on mixed data)     numpy sums spent 1 s (tables >= 20,000 rows)
=========  ==========================================================  =================================

Each family's backend is ``"auto"`` (default), ``"numba"`` (always compile)
or ``"numpy"`` (never; the graph family also accepts its old name
``"python"``). :func:`set_backend` and the context manager :func:`backend` set
it at run time; ``CAUSALNET_<FAMILY>_BACKEND`` at start-up.

Environment variables
---------------------
All are read when first needed, never written (except ``numba``'s own cache
setting, see below). A flag is true when set to anything but ``""``, ``0``,
``false``, ``no`` or ``off`` (any case):

``CAUSALNET_GRAPH_BACKEND``, ``CAUSALNET_CHAIN_BACKEND``, ``CAUSALNET_TENSOR_BACKEND``,
``CAUSALNET_GIBBS_BACKEND``, ``CAUSALNET_STRINGS_BACKEND``, ``CAUSALNET_LEARNING_BACKEND``
    ``auto``, ``numba`` or ``numpy``; another value is ignored with a warning.
``CAUSALNET_CACHE_DIR``
    Where compiled kernels are cached (default: the per-user cache,
    ``$XDG_CACHE_HOME/causalnet`` or ``~/.cache/causalnet``; ``~/Library/Caches``
    on macOS, ``%LOCALAPPDATA%`` on Windows). Set it to ``off`` to compile in
    every process without a cache.
``CAUSALNET_TRACEBACK``
    Flag: the ``causalnet`` command shows the traceback of an internal error.
``CI``
    Flag: a CI service is running the code; progress bars stay hidden
    (:func:`in_ci`, :mod:`causalnet.progress`).

Compiled kernels
----------------
Kernels are declared with :func:`jit` and compiled on their first call;
``numba`` itself is imported only then, so ``import causalnet`` never pays for
it. Each compiled kernel is saved in a per-user cache directory,
``<cache>/numba/<causalnet version>-numba<numba version>``: never inside the
installed package (where a stale ``__pycache__`` could shadow a checkout), and
invalidated by numba when a kernel's source file changes (its timestamp and
size) and by a new directory for a new causalnet or numba version. A cache
directory that cannot be written (read-only, full) gives one
:class:`~causalnet.errors.CausalNetWarning` and the kernels are compiled in
memory instead, with the same answers.

>>> from causalnet import runtime
>>> with runtime.backend("chain", "numpy"):
...     runtime.get_backend("chain")
'numpy'
>>> runtime.env_flag("CAUSALNET_SURELY_UNSET")
False
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import CausalNetWarning, ModelError

__all__ = [
    "VERSION", "FAMILIES", "BACKENDS", "ENV_PREFIX", "env_flag", "env_choice", "in_ci",
    "get_backend", "set_backend", "backend", "numba_available", "load_numba", "numba_warm", "cache_dir", "jit", "Kernel",
    "compile_now", "on_change",
    "generated_module", "lazy_exports",
]

#: causalnet's version (``causalnet.__version__``), part of the kernel cache's path
VERSION = "0.1.0"
FAMILIES = ("graph", "chain", "tensor", "gibbs", "strings", "learning")
BACKENDS = ("auto", "numba", "numpy")
ENV_PREFIX = "CAUSALNET_"
_FALSE = ("", "0", "false", "no", "off")
_ALIASES = {"python": "numpy"}

_backends: dict[str, str] = {}
_listeners: dict[str, list[Callable[[], None]]] = {f: [] for f in FAMILIES}
_state: dict[str, Any] = {"numba": None, "cache": None, "warned": False, "ran": False}


def env_flag(name: str) -> bool:
    """Whether environment variable `name` is set to a true value (not ``""/0/false/no/off``)."""
    return os.environ.get(name, "").strip().lower() not in _FALSE


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """The value of environment variable `name` if it is one of `choices` (any case), else `default`.

    A value outside `choices` warns once (:class:`~causalnet.errors.CausalNetWarning`) and is ignored.
    """
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    raw = _ALIASES.get(raw, raw)
    if raw not in choices:
        warnings.warn(f"{name}={raw!r} is not one of {list(choices)}; using {default!r}", CausalNetWarning,
                      stacklevel=3)
        return default
    return raw


def in_ci() -> bool:
    """Whether a CI service runs this process (the ``CI`` flag): no progress bars then."""
    return env_flag("CI")


def _family(family: str) -> str:
    if family not in FAMILIES:
        raise ModelError(f"unknown kernel family {family!r}; families: {list(FAMILIES)}")
    return family


def get_backend(family: str) -> str:
    """The backend setting of `family` (``"graph"``, ``"chain"``, ``"tensor"``): ``"auto"``, ``"numba"`` or ``"numpy"``."""
    name = _backends.get(_family(family))
    if name is None:
        name = _backends[family] = env_choice(f"{ENV_PREFIX}{family.upper()}_BACKEND", BACKENDS, "auto")
    return name


def set_backend(family: str, name: str) -> str:
    """Set `family`'s backend to ``"auto"``, ``"numba"`` or ``"numpy"``; returns the previous setting.

    Raises
    ------
    ModelError
        For an unknown family or backend name, or ``"numba"`` when numba is not installed.
    """
    prev = get_backend(family)
    key = _ALIASES.get(name, name) if isinstance(name, str) else name
    if key not in BACKENDS:
        raise ModelError(f"{family} backend must be one of {list(BACKENDS)}; got {name!r}")
    if key == "numba" and not numba_available():
        raise ModelError(f"{family} backend 'numba' was requested but numba is not installed (pip install numba)")
    _backends[family] = key
    _notify(family)
    return prev


def on_change(family: str, callback: Callable[[], None]) -> None:
    """Call `callback()` whenever `family`'s backend is set (a kernel module caching a flag refreshes it)."""
    _listeners[_family(family)].append(callback)


def _notify(family: str) -> None:
    for callback in _listeners[family]:
        callback()


@contextmanager
def backend(family: str, name: str) -> Iterator[None]:
    """Run a block with `family`'s backend set to `name` (see :func:`set_backend`), then restore it."""
    prev = set_backend(family, name)
    try:
        yield
    finally:
        _backends[family] = prev
        _notify(family)


@functools.cache
def numba_available() -> bool:
    """Whether numba can be imported (found, not imported: that is left to the first compiled call)."""
    return importlib.util.find_spec("numba") is not None


def numba_warm() -> bool:
    """Whether a compiled kernel has been made to run in this process (a :func:`jit` kernel's dispatcher, made
    on its first call or by :meth:`Kernel.dispatcher`), or compiled or loaded for given signatures
    (:func:`compile_now`): numba's one-time set-up is paid.

    The first kernel of a process costs 0.3-0.6 s of CPU beyond importing
    numba (numba sets itself up), even when it is loaded from the cache;
    after it another cached kernel loads in about 0.02 s.
    """
    return _state["ran"]


def load_numba():
    """The ``numba`` module, imported on first use."""
    if _state["numba"] is None:
        import numba

        _state["numba"] = numba
    return _state["numba"]


def _default_root() -> Path:
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "causalnet" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "causalnet"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "causalnet"


def cache_dir() -> Path | None:
    """This version's kernel cache directory, created and tested writable; None when caching is off or impossible.

    ``CAUSALNET_CACHE_DIR`` (or the per-user default) plus
    ``numba/<version>-numba<numba version>``. When the directory cannot be
    created or written, one :class:`~causalnet.errors.CausalNetWarning` says
    so and None is returned (kernels then compile in memory, in every process).
    """
    if _state["cache"] is None:
        raw = os.environ.get(f"{ENV_PREFIX}CACHE_DIR", "").strip()
        if raw.lower() in _FALSE[1:]:
            _state["cache"] = (None,)
            return None
        numba = load_numba()
        path = (Path(raw).expanduser() if raw else _default_root()) / "numba" / f"{VERSION}-numba{numba.__version__}"
        try:
            import tempfile

            path.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=path).close()
            _state["cache"] = (path,)
        except OSError as exc:
            _cache_failed(f"the kernel cache {str(path)!r} cannot be written ({exc.strerror or exc})")
            _state["cache"] = (None,)
    return _state["cache"][0]


def _cache_failed(why: str) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(f"{why}; compiled kernels are compiled in this process instead (set {ENV_PREFIX}CACHE_DIR "
                      f"to a writable directory to keep them)", CausalNetWarning, stacklevel=4)


class _SafeCache:
    """numba's function cache, with a failed save (disk full, directory gone) turned into one warning."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def save_overload(self, sig, data) -> None:
        try:
            self._inner.save_overload(sig, data)
        except OSError as exc:
            _cache_failed(f"a compiled kernel could not be saved to the cache ({exc.strerror or exc})")


def compile_now(fn: Callable, signatures: list | None = None, **opts):
    """``numba.njit(signatures, **opts)(fn)`` with its on-disk cache in :func:`cache_dir` (or none).

    With `signatures` numba compiles (or loads from the cache) now, and
    :func:`numba_warm` is true from then on; without, on the first call.
    ``cache`` defaults to True; a helper with ``inline="always"`` is never
    cached alone.
    """
    d = _dispatcher(fn, signatures, **opts)
    if signatures:
        _state["ran"] = True                     # compiled or loaded now: numba has set itself up
    return d


def _dispatcher(fn: Callable, signatures: list | None, **opts):
    """:func:`compile_now`'s dispatcher, made (and compiled for `signatures`) with the per-user cache."""
    numba = load_numba()
    want = opts.pop("cache", True) and not opts.get("inline") == "always"
    path = cache_dir() if want and Path(fn.__code__.co_filename).is_file() else None
    args = () if signatures is None else (signatures,)
    if path is None:
        return numba.njit(*args, cache=False, **opts)(fn)
    config = numba.core.config
    prev = config.CACHE_DIR
    config.CACHE_DIR = str(path)            # numba's user-provided locator reads it while the dispatcher is made
    try:
        d = numba.njit(cache=True, **opts)(fn)
    finally:
        config.CACHE_DIR = prev
    locator = getattr(getattr(getattr(d, "_cache", None), "_impl", None), "locator", None)
    where = getattr(locator, "get_cache_path", lambda: "")()
    if not str(where).startswith(str(path)):   # never fall back to a cache beside the package's sources
        return numba.njit(*args, cache=False, **opts)(fn)
    d._cache = _SafeCache(d._cache)
    for sig in signatures or ():
        d.compile(sig)
    if signatures is not None:
        d.disable_compile()
    return d


def _materialize(scope: dict) -> None:
    """Replace every :class:`Kernel` in a module's globals by its numba dispatcher (numba resolves globals)."""
    for name, value in list(scope.items()):
        if isinstance(value, Kernel):
            scope[name] = value.dispatcher()


class Kernel:
    """A numba kernel declared at import, with numba imported and the kernel made on its first call.

    Calling it calls the compiled function. On first use every other
    :class:`Kernel` in the defining module's globals is made too, so compiled
    kernels call each other (and inline helpers) as numba functions.

    Attributes
    ----------
    py_func : callable
        The Python function (the reference semantics; callable without numba).
    """

    def __init__(self, fn: Callable, opts: dict) -> None:
        self.py_func = fn
        self._opts = opts
        self._d = None
        functools.update_wrapper(self, fn)

    def dispatcher(self):
        """The numba dispatcher (made now if needed)."""
        if self._d is None:
            self._d = compile_now(self.py_func, **self._opts)
            _state["ran"] = True            # made for a call (numba sets itself up then): numba_warm from now on
            _materialize(self.py_func.__globals__)
        return self._d

    @property
    def signatures(self) -> list:
        """The signatures compiled so far (empty before the first call)."""
        return [] if self._d is None else self._d.signatures

    def __call__(self, *args, **kwargs):
        return self.dispatcher()(*args, **kwargs)


def jit(fn: Callable | None = None, **opts) -> Kernel | Callable[[Callable], Kernel]:
    """Declare a numba kernel: ``@jit`` or ``@jit(nogil=True, error_model="numpy")``.

    Options are ``numba.njit``'s; ``cache`` defaults to True (the per-user
    cache of :func:`cache_dir`; helpers with ``inline="always"`` are compiled
    into their callers and not cached alone). Nothing is imported or compiled
    until the first call.
    """
    if fn is None:
        return lambda f: Kernel(f, opts)
    return Kernel(fn, opts)


def generated_module(name: str, source: str, scope: dict):
    """A module executed from generated `source` (with `scope` as its globals), kept in the cache directory.

    numba caches only functions with a source file; generated kernels get one
    here, named by the hash of their source, so their compilation is cached
    like the others. Without a cache directory the source is executed in
    memory (compiled in every process).
    """
    root = cache_dir()
    if root is None:
        module = type(sys)(f"causalnet_generated_{name}")
        module.__dict__.update(scope)
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - our own generated source
        return module
    import hashlib
    import tempfile

    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = root / "generated" / f"{name}_{digest}.py"
    if not path.is_file():
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as f:
                tmp = f.name
                f.write(source)
            os.replace(tmp, path)
        except OSError as exc:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
            _cache_failed(f"a generated kernel could not be written ({exc.strerror or exc})")
            _state["cache"] = (None,)
            return generated_module(name, source, scope)
    modname = f"causalnet_generated_{name}_{digest}"
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(scope)
    sys.modules[modname] = module       # numba finds a cached kernel's globals by its module's name
    spec.loader.exec_module(module)
    return module


def lazy_exports(package: str, names: dict[str, str]) -> tuple[Callable, Callable]:
    """A package's ``__getattr__`` and ``__dir__`` for names it re-exports on first use (PEP 562).

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : dict
        Public name -> ``".module"`` (a submodule) or ``".module:attr"``, relative to `package`.

    The first access of a name imports its module and binds the name in the
    package, so later accesses cost nothing; ``import causalnet`` loads only
    what it names eagerly.
    """
    def __getattr__(name: str):
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        mod, _, attr = target.partition(":")
        value = importlib.import_module(mod, package)
        if attr:
            try:
                value = getattr(value, attr)
            except AttributeError:                   # a sub-package's submodule its __init__ does not bind
                value = importlib.import_module(f"{mod}.{attr}", package)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
