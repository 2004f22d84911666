"""nbx_core.runtime.traits: the one interface to what the interpreter and a GPU do differently."""

import pytest
import triton
import triton.language as tl

from nbx_core import backend
from nbx_core.backend import kernel_device_type
from nbx_core.errors import IndexOutOfRangeError
from nbx_core.runtime import launch, traits
from nbx_core.runtime.kernels import dot, index_range, precise
from nbx_core.tensor import tensor
from nbx_core.testing import numeric


def test_each_backend_has_its_traits():
    cpu, cuda, aot = traits.traits("cpu"), traits.traits("cuda"), traits.traits("aot")
    assert cpu.interpreted and cpu.widens_bf16_dot and cpu.runs_kernels
    assert not (cpu.has_libdevice or cpu.has_inline_asm or cpu.tiles_on_chip)
    for gpu in (cuda, aot):
        assert gpu.has_libdevice and gpu.has_inline_asm and gpu.tiles_on_chip
        assert not (gpu.interpreted or gpu.widens_bf16_dot)
    assert cuda.runs_kernels and not aot.runs_kernels


def test_the_process_traits_are_its_backends_and_kernels_read_them():
    assert traits.TRAITS == traits.traits(backend.current()) and launch.TRAITS is traits.TRAITS
    assert launch.BACKEND == traits.TRAITS.name
    assert dot._WIDEN.value == traits.TRAITS.widens_bf16_dot
    assert precise._LIBDEVICE.value == traits.TRAITS.has_libdevice


@pytest.mark.skipif(not numeric(), reason="index values are checked by kernels that run")
def test_check_range_names_op_argument_and_value():
    index_range.check_range("aten::scatter_", "index", tensor([[0, 2], [1, 0]], device=kernel_device_type()), 3)
    with pytest.raises(
        IndexOutOfRangeError,
        match=r"aten::scatter_: index holds 5, out of bounds for a dimension "
        r"of size 3",
    ):
        index_range.check_range("aten::scatter_", "index", tensor([[0, 5], [1, 0]], device=kernel_device_type()).t(), 3)


def test_plugin_kernels_read_the_traits_too():
    activation = pytest.importorskip("nbx_elementwise.activation")
    flash = pytest.importorskip("nbx_attention.flash_attention")
    assert activation._FAST_RCP.value == traits.TRAITS.has_inline_asm
    assert flash.WARP_SPECIALIZE == (not traits.TRAITS.interpreted)


@triton.jit
def _narrow_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x.to(tl.bfloat16), mask=offs < n)


@pytest.mark.skipif(not numeric(), reason="values are compared where kernels run")
def test_a_kernels_bfloat16_results_round_to_nearest_even_as_a_gpus_do():
    import torch

    from nbx_core import dtypes as D
    from nbx_core.tensor import empty_tensor
    from nbx_core.testing import from_torch, to_torch

    # Halfway cases both ways, values just above and below them, the largest finite float32, NaN, inf.
    halfway = torch.tensor([0x3F808000, 0x3F818000, 0x3F808001, 0x3F817FFF, 0x7F7FFFFF], dtype=torch.int32)
    x = torch.cat([halfway.view(torch.float32), torch.randn(997), torch.tensor([float("nan"), -float("inf")])])
    xs = from_torch(x)
    y = empty_tensor((x.numel(),), D.bfloat16, xs.device)
    launch.launch(_narrow_kernel, (triton.cdiv(x.numel(), 256),), xs, y, x.numel(), BLOCK=256)
    got, want = to_torch(y), x.bfloat16()
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got[~want.isnan()], want[~want.isnan()])
