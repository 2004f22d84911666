"""The tensor layer: :class:`NBXTensor`, its factories, DLPack exchange and printing.

``from nbx_core.tensor import NBXTensor, empty_tensor, check_device`` is what kernels use; the
class lives in :mod:`nbx_core.tensor.core`.
"""

from .core import ZERO_NEW, NBXTensor, check_device, empty_tensor, from_numpy, tensor
from .dlpack import from_dlpack

__all__ = ["ZERO_NEW", "NBXTensor", "check_device", "empty_tensor", "from_dlpack", "from_numpy", "tensor"]
