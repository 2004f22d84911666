"""nbx_core.runtime.traits: the one interface to what the interpreter and a GPU do differently."""

import pytest

from nbx_core import backend
from nbx_core.errors import IndexOutOfRangeError
from nbx_core.runtime import launch, traits
from nbx_core.runtime.kernels import copy, dot, index_range, precise
from nbx_core.tensor import tensor
from nbx_core.testing import numeric


def test_each_backend_has_its_traits():
    cpu, cuda, aot = traits.traits("cpu"), traits.traits("cuda"), traits.traits("aot")
    assert cpu.interpreted and cpu.rounds_bf16_by_hand and cpu.widens_bf16_dot and cpu.runs_kernels
    assert not (cpu.has_libdevice or cpu.has_inline_asm or cpu.tiles_on_chip)
    for gpu in (cuda, aot):
        assert gpu.has_libdevice and gpu.has_inline_asm and gpu.tiles_on_chip
        assert not (gpu.interpreted or gpu.rounds_bf16_by_hand or gpu.widens_bf16_dot)
    assert cuda.runs_kernels and not aot.runs_kernels


def test_the_process_traits_are_its_backends_and_kernels_read_them():
    assert traits.TRAITS == traits.traits(backend.current()) and launch.TRAITS is traits.TRAITS
    assert launch.BACKEND == traits.TRAITS.name
    assert dot._WIDEN.value == traits.TRAITS.widens_bf16_dot
    assert precise._LIBDEVICE.value == traits.TRAITS.has_libdevice
    assert copy._ROUND_BF16_BY_HAND.value == traits.TRAITS.rounds_bf16_by_hand


@pytest.mark.skipif(not numeric(), reason="index values are checked by kernels that run")
def test_check_range_names_op_argument_and_value():
    index_range.check_range("aten::scatter_", "index", tensor([[0, 2], [1, 0]]), 3)
    with pytest.raises(
        IndexOutOfRangeError,
        match=r"aten::scatter_: index holds 5, out of bounds for a dimension "
        r"of size 3",
    ):
        index_range.check_range("aten::scatter_", "index", tensor([[0, 5], [1, 0]]).t(), 3)


def test_plugin_kernels_read_the_traits_too():
    activation = pytest.importorskip("nbx_elementwise.activation")
    flash = pytest.importorskip("nbx_attention.flash_attention")
    assert activation._FAST_RCP.value == traits.TRAITS.has_inline_asm
    assert flash.WARP_SPECIALIZE == (not traits.TRAITS.interpreted)
