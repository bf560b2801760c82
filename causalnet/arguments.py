"""The argument validators: one rule for every count, size, index and real-valued knob the library takes.

A count such as ``n_iter``, ``layers`` or ``n_samples`` is a Python or numpy
integer (``True`` is not a count, nor is ``2.0``); a real knob such as ``tol``,
``temperature`` or ``min_covar`` is a Python or numpy real (not a bool, not
complex), finite unless infinity is meaningful. Bad input raises the
library's own error (:class:`~causalnet.errors.ModelError` unless the caller
names another) with the argument's name, what was expected and what was given.

Examples
--------
>>> check_int(3, "layers", low=1)
3
>>> check_int(0, "layers", low=1)
Traceback (most recent call last):
...
causalnet.errors.ModelError: layers must be a positive integer, got 0
>>> check_real(float("inf"), "tol", allow_inf=True)
inf
>>> check_real(-1, "temperature", nonnegative=True)
Traceback (most recent call last):
...
causalnet.errors.ModelError: temperature must be a finite number >= 0, got -1
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import ModelError

__all__ = ["check_int", "check_real", "check_bool", "as_generator", "is_dask_collection", "is_pandas_frame", "is_frame"]


def check_int(value: Any, what: str, *, low: int | None = None, high: int | None = None,
              error: type[Exception] = ModelError) -> int:
    """`value` as an int: a Python or numpy integer (bools refused), in ``[low, high]`` when given.

    Parameters
    ----------
    value : Any
    what : str
        The argument's name for the message (``"n_iter"``, ``"'X' steps"``).
    low, high : int, optional
        Inclusive bounds.
    error : exception class, default ModelError

    Returns
    -------
    int

    Raises
    ------
    error
        ``"{what} must be a positive integer, got 0"`` and the like.
    """
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not ok or (low is not None and value < low) or (high is not None and value > high):
        if high is not None:
            need = f"an integer in [{low}, {high}]" if low is not None else f"an integer <= {high}"
        else:
            need = {None: "an integer", 0: "a non-negative integer", 1: "a positive integer"}.get(
                low, f"an integer >= {low}")
        raise error(f"{what} must be {need}, got {value!r}")
    return int(value)


def check_real(value: Any, what: str, *, positive: bool = False, nonnegative: bool = False, allow_inf: bool = False,
               error: type[Exception] = ModelError) -> float:
    """`value` as a float: a Python or numpy real (bools and complex refused), never NaN.

    Parameters
    ----------
    value : Any
    what : str
        The argument's name for the message.
    positive, nonnegative : bool
        Require ``> 0`` or ``>= 0``.
    allow_inf : bool
        Accept ``+-inf`` (a tolerance of ``-inf`` means "never stop").
    error : exception class, default ModelError

    Returns
    -------
    float

    Raises
    ------
    error
        ``"{what} must be a positive finite number, got 0.0"`` and the like.
    """
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    v = float(value) if ok else math.nan
    if (not ok or math.isnan(v) or (not allow_inf and math.isinf(v)) or (positive and not v > 0)
            or (nonnegative and not v >= 0)):
        finite = "" if allow_inf else "finite "
        need = (f"a positive {finite}number" if positive else f"a {finite}number >= 0" if nonnegative
                else f"a {finite}number")
        raise error(f"{what} must be {need}, got {value!r}")
    return v


def check_bool(value: Any, what: str, *, error: type[Exception] = ModelError) -> bool:
    """`value` as a bool: ``True``/``False`` or a numpy bool, nothing else (``1`` is not a flag)."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{what} must be True or False, got {value!r}")
    return bool(value)


def as_generator(seed: Any) -> np.random.Generator:
    """``np.random.default_rng`` that also accepts a Generator (returned as is).

    Every stochastic call in causalnet turns its ``seed=`` into a Generator here.

    Raises
    ------
    ModelError
        If `seed` is neither None, an int, a sequence of ints, a SeedSequence nor a Generator
        (e.g. ``seed="x"`` or ``seed=-1``).
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (bool, np.bool_, str, bytes, float, np.floating)):
        raise ModelError(f"seed must be None, a non-negative int or a numpy Generator, got {seed!r}")
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as e:
        raise ModelError(f"seed must be None, a non-negative int or a numpy Generator, got {seed!r} ({e})") from e


def is_dask_collection(obj: Any) -> bool:
    """Whether `obj` is a Dask collection (a Dask DataFrame, Series or Array), without importing Dask.

    Duck typing: the object's class lives in a ``dask`` module and it has
    ``map_partitions`` or ``__dask_graph__``. Dask is only imported when the
    caller passes a Dask object.
    """
    module = type(obj).__module__.split(".")[0]
    return module in ("dask", "dask_expr") and (hasattr(obj, "map_partitions") or hasattr(obj, "__dask_graph__"))


def is_pandas_frame(obj: Any) -> bool:
    """Whether `obj` is a pandas DataFrame (duck typing; never a Dask one)."""
    return (hasattr(obj, "columns") and hasattr(obj, "iloc") and hasattr(obj, "dtypes")
            and not is_dask_collection(obj))


def is_frame(obj: Any) -> bool:
    """Whether `obj` is a table of rows: a pandas DataFrame or a Dask collection (never a dict or None)."""
    return obj is not None and type(obj) is not dict and (is_dask_collection(obj) or is_pandas_frame(obj))
