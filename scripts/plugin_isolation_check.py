"""For each plugin: a virtual environment holding nbx-core and that plugin alone lists exactly the
plugin's names and core's, and one of its ops runs.

    python scripts/plugin_isolation_check.py [VENV_DIR]   (needs network or a warm pip cache)
"""

import json
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAMILIES = ["elementwise", "linalg", "reduction", "norm", "index", "conv", "attention", "spectral"]
SMOKE = {
    "elementwise": 'r.call("aten::gelu", x)',
    "linalg": 'r.call("aten::mm", x[0, 0], x[0, 1])',
    "reduction": 'r.call("aten::sum", x, [1])',
    "norm": 'r.call("aten::layer_norm", x, [8])',
    "index": 'r.call("aten::flip", x, [0])',
    "conv": 'r.call("aten::max_pool2d", x, [2, 2])',
    "attention": 'r.call("aten::softmax", x, -1)',
    "spectral": 'r.call("aten::fft_rfft", x)',
}
PROGRAM = """import numpy as np, nbx_core
from nbx_core.registry import get_registry
r = get_registry()
x = nbx_core.tensor(np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32))
print(({call}).shape)
"""


def names(family: str) -> set[str]:
    return set((REPO / "nbx_core" / "oplists" / f"{family}.txt").read_text().split())


def main() -> int:
    env = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/nbx-isolation-venv")
    if not env.exists():
        venv.create(env, with_pip=True)
    py, nbx = str(env / "bin" / "python"), str(env / "bin" / "nbx")
    subprocess.run([py, "-m", "pip", "install", "-q", "-e", str(REPO)], check=True)
    failed = 0
    for fam in FAMILIES:
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO / "plugins" / fam)], check=True)
        try:
            doc = json.loads(
                subprocess.run(
                    [nbx, "registry", "list", "--format", "json"], capture_output=True, text=True, check=True
                ).stdout
            )
            listed = {o["name"] for o in doc["ops"]}
            exact = listed == names(fam) | names("core") and not doc["problems"]
            run = subprocess.run([py, "-c", PROGRAM.format(call=SMOKE[fam])], capture_output=True, text=True)
            ok = exact and run.returncode == 0
            failed += not ok
            print(
                f"{fam}: lists exactly its names and core's: {exact}; runs: {run.returncode == 0} "
                f"{run.stdout.strip() or run.stderr.strip()[-200:]}"
            )
        finally:
            subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", f"nbx-{fam}"], check=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
