"""Every error a user can cause is an :class:`NbxError` subclass.

Messages say what was wrong, where (op, argument, node, plugin, file) and what would fix it.
"""

from __future__ import annotations


class NbxError(Exception):
    """Base class of every error NBX raises on bad input or configuration."""


class NbxTypeError(NbxError, TypeError):
    """An argument has the wrong type or dtype."""


class NbxValueError(NbxError, ValueError):
    """An argument has the right type but a value the op cannot take."""


class ShapeError(NbxValueError):
    """Shapes do not fit: a view that cannot be formed, shapes that do not broadcast."""


class IndexOutOfRangeError(NbxError, IndexError):
    """A dim or an index lies outside the tensor."""


class DeviceError(NbxError):
    """A tensor is on the wrong device for the op or the backend."""


class OutOfMemoryError(NbxError, MemoryError):
    """A device or host allocation failed."""


class BackendError(NbxError):
    """The requested backend is unknown or cannot run here."""


class RegistryError(NbxError):
    """Base class of registry and plugin-loading errors."""


class DuplicateKernelError(RegistryError):
    """Two providers register one op name."""


class DuplicatePatternError(DuplicateKernelError):
    """Two fusion patterns claim the same subgraph and no preference chooses one."""


class PluginLoadError(RegistryError):
    """A plugin failed to import or its hook raised."""


class KernelImportError(RegistryError):
    """A lazy kernel target failed to import or is not callable."""


class InvalidOpNameError(RegistryError):
    """An op name is not of the form ``namespace::op`` or ``namespace::op.overload``."""


class UnresolvedOpError(RegistryError):
    """One or more op names have no provider."""


class InvalidTargetError(RegistryError):
    """A kernel target is neither a callable nor a ``package.module:attr`` string."""


class RegistryConfigError(RegistryError):
    """The plugin selection (NBX_* variables, CLI flags or a RegistryConfig) is contradictory or names
    something that does not exist."""


class GraphError(NbxError):
    """A graph file is malformed or its inputs do not match its declaration."""


class ExportError(NbxError):
    """A torch program cannot be turned into an NBX graph."""


def op_error(cls: type[NbxError], op: str, message: str) -> NbxError:
    """Build ``cls`` with the message prefixed by the op name, the house style for op errors."""
    return cls(f"{op}: {message}")


class GraphFormatError(GraphError):
    """graph.json is not valid JSON or does not follow the nbx-graph schema."""


class GraphVersionError(GraphFormatError):
    """graph.json has a format or schema version this NBX cannot read."""


class GraphReferenceError(GraphFormatError):
    """A node, output or mutation names a value that is not defined before it."""


class GraphArityError(GraphError):
    """A node declares a number of outputs its op does not return."""


class GraphWeightsError(GraphError):
    """weights.safetensors is missing, corrupt, or lacks a weight or holds it with another shape/dtype."""


class GraphInputError(GraphError):
    """Inputs given to a program do not match its declared names, dtypes or shapes."""


class GraphSymbolError(GraphError):
    """A symbolic size in a graph has no value for the dims a run's inputs bind (division by zero, a
    result beyond 2**62, a symbol no input binds)."""


class BundleError(GraphError):
    """A graph's kernel bundle (``kernels/``, made by ``nbx compile``) is corrupt, truncated or
    unusable here, or lacks a kernel while ``NBX_REQUIRE_BUNDLE=1`` forbids compiling one."""
