"""What bounds a kernel's loop, read without a GPU: per-loop SASS of the kernels one op compiles.

    python scripts/sass_loops.py aten::conv2d "T(32, 64, 56, 56, cl=True)" "T(64, 64, 3, 3, cl=True)" \
        None 1 1

The op runs once on the aot backend (sm_90a). Every argument after the op's name is a Python
expression, where ``T(*shape, dtype="bfloat16", cl=False)`` is an uninitialised NBX tensor (``cl``:
channels-last, for 4-D shapes). For each kernel the op compiles, the script prints:

- registers and spilled bytes (ptxas) and shared memory;
- each loop (a backward branch in the SASS), with its instructions, tensor-core instructions
  (HGMMA, HMMA) and global loads (LDG, LDGSTS, UTMALDG) for one trip.

A warp issues one instruction a cycle, and one wgmma keeps the tensor cores busy for only a few
dozen. So a loop whose trip has hundreds of instructions for a few wgmma is bound by instruction
issue, however its tiles are chosen. The 3x3 convolutions were: 208 instructions for 4 wgmma, at
0.70x torch. With half the instructions they ran at 0.95x.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    # Run as a script, compile for sm_90a; imported (the tests read loops()), leave the environment
    # of the importing process alone.
    os.environ["NBX_BACKEND"] = "aot"

# nbx_core first: it tells Triton, before Triton is imported, to compile rather than interpret
# (a caller on the cpu backend passes TRITON_INTERPRET=1 down to this process).
import nbx_core  # noqa: E402, F401, I001
import triton  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from nbx_core import dtypes as D  # noqa: E402
from nbx_core.ops.views import permute  # noqa: E402
from nbx_core.registry import get_registry  # noqa: E402
from nbx_core.tensor import NBXTensor, empty_tensor  # noqa: E402

BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
_LINE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", re.M)
_BACK = re.compile(r"BRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)")
MMA = ("HGMMA", "HMMA")
LOADS = ("LDG", "LDGSTS", "UTMALDG")


def T(*shape: int, dtype: str = "bfloat16", cl: bool = False) -> NBXTensor:
    """An uninitialised tensor; ``cl`` lays a 4-D one out channels-last."""
    dt = D.as_dtype(dtype)
    if cl:
        n, c, h, w = shape
        return permute(empty_tensor((n, h, w, c), dt), 0, 3, 1, 2)
    return empty_tensor(shape, dt)


def loops(sass: str) -> list[tuple[int, int, list[str]]]:
    """(start, end, instructions) of every loop: the span of each backward branch."""
    code = [(int(a, 16), text) for a, text in _LINE.findall(sass)]
    found = []
    for addr, text in code:
        m = _BACK.search(text)
        if m and int(m.group(1), 16) < addr:
            start = int(m.group(1), 16)
            found.append((start, addr, [t for a, t in code if start <= a <= addr]))
    return found


def _opcode(text: str) -> str:
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def _ptxas(ptx: str) -> str:
    """ptxas's 'Used N registers, N bytes spill stores' line for the kernel's PTX."""
    tool = BIN / "ptxas-blackwell" if (BIN / "ptxas-blackwell").exists() else BIN / "ptxas"
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    out = subprocess.run(
        [str(tool), "-v", "--gpu-name=sm_90a", f.name, "-o", os.devnull], capture_output=True, text=True
    ).stderr
    os.unlink(f.name)
    lines = [ln.split("info    : ")[-1].strip() for ln in out.splitlines() if "registers" in ln or "spill" in ln]
    return "; ".join(lines)


def report(name: str, compiled: Any) -> str:
    """The summary of one compiled kernel (its registers, shared memory and loops)."""
    with tempfile.NamedTemporaryFile("wb", suffix=".cubin", delete=False) as f:
        f.write(compiled.asm["cubin"])
    sass = subprocess.run([str(BIN / "cuobjdump"), "-sass", f.name], capture_output=True, text=True).stdout
    os.unlink(f.name)
    out = [f"{name}: shared {compiled.metadata.shared} B; {_ptxas(compiled.asm['ptx'])}"]
    for start, end, body in loops(sass):
        ops = [_opcode(t) for t in body]
        mma = sum(op.startswith(MMA) for op in ops)
        loads = sum(op.split(".")[0] in LOADS for op in ops)
        out.append(f"  loop {start:#x}-{end:#x}: {len(body)} instructions, {mma} tensor-core, {loads} global loads")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    compiled: list[tuple[str, Any]] = []
    warmup = JITFunction.warmup

    def keep(self: JITFunction, *args: Any, **kwargs: Any) -> Any:
        c = warmup(self, *args, **kwargs)
        compiled.append((self.fn.__name__, c))
        return c

    JITFunction.warmup = keep
    args = [eval(a, {"T": T}) for a in argv[2:]]  # noqa: S307 - a developer's own command line
    get_registry().lookup(argv[1])(*args)
    for name, c in compiled:
        print(report(name, c))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
