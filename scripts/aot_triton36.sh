#!/usr/bin/env bash
# Compile the model zoo's kernels (fused ones included) for sm_90 with Triton 3.6, the Triton of the
# GPU machines, on a machine with no GPU. CI's aot pass runs the Triton the test extra installs;
# Triton 3.6 rejects some kernels 3.9 accepts (a specialised int inside a nested tuple argument, for
# one), and this finds them before a GPU run does.
#   scripts/aot_triton36.sh [pytest args...]    (default: the zoo and the aot plan tests)
# The virtual environment is made once, in $VENV (default .venv-triton36, ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv-triton36}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    plugins=$(for p in plugins/*/; do printf -- '-e %s ' "$p"; done)
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q -e ".[test]" $plugins
    "$venv/bin/pip" install -q "triton==3.6.0"
fi
"$venv/bin/python" -c "import triton; assert triton.__version__.startswith('3.6'), triton.__version__"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(tests/models/test_zoo.py tests/graph/test_bundle_aot_plan.py tests/graph/test_fold.py)
NBX_BACKEND=aot "$venv/bin/python" -m pytest -q -n auto -p no:cacheprovider "${targets[@]}"
