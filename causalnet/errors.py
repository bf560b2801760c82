"""The causalnet exception hierarchy.

Every error the library raises on bad input is one of these. Each subclass also
derives from the matching builtin (``ValueError``, ``RuntimeError``) so that code
written against the builtins keeps working.

Hierarchy::

    CausalNetError
    ├── GraphError          bad structure: cycles, unknown nodes, bad node sets
    ├── ModelError          bad mechanisms: tables, parameters, parents
    │   ├── ShapeError      arrays of the wrong shape
    │   └── NotFittedError  an estimator used before `fit` (also AttributeError, as scikit-learn's)
    ├── EvidenceError       evidence naming unknown nodes/states, impossible evidence
    ├── NotIdentifiable     a causal effect not identifiable from the graph
    ├── RenderError         no renderer, or the renderer failed
    ├── ResourceError       a table, tensor or file would exceed a limit (also MemoryError)
    ├── NumericalError      a computation left the finite numbers (also FloatingPointError)
    ├── ModelFileNotFoundError   a model file does not exist (also FileNotFoundError)
    ├── ModelFilePermissionError a model file cannot be read or written (also PermissionError)
    └── ModelFileWriteError      a write stopped part-way: file-size limit, full disk (also OSError)

    CausalNetWarning        legal but suspicious input
"""

__all__ = [
    "CausalNetError",
    "GraphError",
    "ModelError",
    "ShapeError",
    "NotFittedError",
    "EvidenceError",
    "NotIdentifiable",
    "RenderError",
    "ResourceError",
    "NumericalError",
    "ModelFileNotFoundError",
    "ModelFilePermissionError",
    "ModelFileWriteError",
    "CausalNetWarning",
]


class CausalNetError(Exception):
    """Base class of every causalnet error."""


class GraphError(CausalNetError, ValueError):
    """A graph is malformed or a graph query names bad nodes."""


class ModelError(CausalNetError, ValueError):
    """A mechanism or model is malformed."""


class ShapeError(ModelError, ValueError):
    """An array has the wrong shape for the node it belongs to."""


class NotFittedError(ModelError, AttributeError):
    """An estimator (HMM, CRF, the causal head's classifier) was used before it was fitted.

    Like scikit-learn's ``sklearn.exceptions.NotFittedError`` it is both a
    ``ValueError`` and an ``AttributeError``, so code and scikit-learn checks
    written against that pair catch it.
    """


class EvidenceError(CausalNetError, ValueError):
    """Evidence names an unknown node or state, or has probability zero."""


class NotIdentifiable(CausalNetError):
    """A causal quantity cannot be computed from the graph and the data."""


class RenderError(CausalNetError, RuntimeError):
    """A diagram could not be rendered."""


class ResourceError(CausalNetError, MemoryError):
    """A table, tensor, result or file would exceed a limit of :mod:`causalnet.limits`.

    The message names the estimate, its cause (treewidth, CPT size, file size)
    and the knob that raises the limit.
    """


class NumericalError(CausalNetError, FloatingPointError):
    """A computation produced NaN or infinity from finite input (e.g. a diverging fit)."""


class ModelFileNotFoundError(CausalNetError, FileNotFoundError):
    """A model or data file does not exist."""


class ModelFilePermissionError(CausalNetError, PermissionError):
    """A model or data file cannot be read or written for lack of permission."""


class ModelFileWriteError(CausalNetError, OSError):
    """A file could not be written: the file-size limit (``EFBIG``), a full disk, an I/O error.

    Also an ``OSError`` carrying the original ``errno`` and the path as ``filename``;
    the message names the path. The writers are atomic, so the old file is left whole.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else OSError.__str__(self)


class CausalNetWarning(UserWarning):
    """Legal but suspicious input, e.g. two interventions on one node."""
