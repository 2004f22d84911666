"""The tensor layer: :class:`NBXTensor`, its factories, DLPack exchange and printing.

``from nbx_core.tensor import NBXTensor, empty_tensor, check_device`` is what kernels use. The
class and its factories live in :mod:`nbx_core.tensor.core`, its op methods in
:mod:`nbx_core.tensor.methods`, which reach the ops through the registry by ATen name, and the
argument checks of op wrappers in :mod:`nbx_core.tensor.args`.
"""

from .args import check_device
from .core import ZERO_NEW, NBXTensor, empty_tensor, from_dlpack, from_numpy, new_storage, tensor

__all__ = [
    "ZERO_NEW",
    "NBXTensor",
    "check_device",
    "empty_tensor",
    "from_dlpack",
    "from_numpy",
    "new_storage",
    "tensor",
]
