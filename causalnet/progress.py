"""Progress bars for long work: on for a person watching, off for a machine.

Training loops (CRF, the CausalQwen head, HMM EM, structure search) and the tour
report their progress through :func:`progress_bar`, which wraps ``tqdm.auto.tqdm``
(a terminal bar, or a widget in a notebook). Whether a bar shows is decided once,
by :func:`progress_enabled`:

- ``progress=True`` or ``False`` is obeyed;
- ``progress=None`` (auto) shows a bar when a person is likely watching — standard
  error is a terminal, or the code runs in a Jupyter kernel — and never when the
  environment variable ``CI`` is set to a true value (``CI=true``, as every CI
  service sets it; :func:`causalnet.runtime.in_ci`, the one reading of ``CI``).

A disabled bar is a real ``tqdm`` object with ``disable=True``: it iterates,
accepts ``update``/``set_postfix`` and prints nothing, so callers need no branch.
The library itself never prints; the bar writes to standard error.

Examples
--------
>>> from causalnet.progress import progress_bar
>>> with progress_bar(range(3), progress=False, desc="fit") as bar:
...     total = sum(bar)
>>> total
3
>>> bar = progress_bar(5, progress=False)     # a total: call bar.update(k)
>>> bar.update(2); bar.close()
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Iterable
from typing import Any

from .runtime import in_ci

__all__ = ["progress_bar", "progress_enabled"]


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    ip = getattr(shell, "get_ipython", lambda: None)() if shell is not None else None
    return type(ip).__name__ == "ZMQInteractiveShell"


def progress_enabled(progress: bool | None = None) -> bool:
    """Whether a progress bar should show: `progress` if given, else auto (see the module)."""
    if progress is not None:
        return bool(progress)
    if in_ci():
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        tty = bool(isatty()) if isatty is not None else False
    except (ValueError, OSError):  # a closed or detached stream
        tty = False
    return tty or _in_notebook()


def progress_bar(iterable_or_total: Iterable | int | None = None, *, progress: bool | None = None,
                 desc: str | None = None, **kwargs: Any):
    """A ``tqdm.auto`` bar over an iterable, or over `total` steps when given an int.

    Parameters
    ----------
    iterable_or_total : iterable or int, optional
        What to iterate over, or the number of steps (then advance with ``bar.update(k)``).
    progress : bool or None, default None
        True shows, False hides, None decides automatically (:func:`progress_enabled`).
    desc : str, optional
        The bar's label.
    **kwargs
        Passed on to ``tqdm`` (``leave``, ``unit``, ...).

    Returns
    -------
    tqdm.auto.tqdm
        Disabled (silent, still iterable) when no bar should show.
    """
    try:
        from tqdm.auto import tqdm  # loaded by the first bar, not by ``import causalnet``
    except ImportError:             # tqdm unavailable (removed, or blocked): the work runs without a bar
        return _Silent(iterable_or_total)
    enabled = progress_enabled(progress)
    kwargs.setdefault("leave", False)
    if isinstance(iterable_or_total, numbers.Integral) and not isinstance(iterable_or_total, bool):
        return tqdm(total=int(iterable_or_total), desc=desc, disable=not enabled, **kwargs)
    return tqdm(iterable_or_total, desc=desc, disable=not enabled, **kwargs)


class _Silent:
    """A bar that shows nothing: iterates like tqdm and accepts ``update``/``set_postfix``/``close``."""

    def __init__(self, iterable_or_total) -> None:
        self._it = iterable_or_total if not isinstance(iterable_or_total, numbers.Integral) else None

    def __iter__(self):
        return iter(self._it if self._it is not None else ())

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None

    def set_postfix(self, *args, **kwargs) -> None:
        return None

    def set_description(self, *args, **kwargs) -> None:
        return None

    def close(self) -> None:
        return None
