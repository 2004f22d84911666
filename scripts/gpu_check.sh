#!/usr/bin/env bash
# The whole GPU pass in one call, for an H200 machine with no network (see README, "Contributing"):
# install the project without dependencies, run the full test suite on the cuda backend, then the
# benchmarks. Logs and JSON results go to the folder given as $1 (default: $OUT).
#   scripts/gpu_check.sh OUTDIR [pytest args...]
# SKIP_TESTS=1, SKIP_BENCH=1, BENCH_FAMILIES=a,b, BENCH_QUICK=1 and SWEEP=a,b (with SWEEP_KERNEL, SWEEP_SHAPES,
# WRITE_TABLES: see below) narrow or extend it;
# MODELS=a,b (or MODELS=all) also runs the whole-model benchmark (benchmarks/models.py) on those models,
# with MODELS_ARGS passed on (e.g. "--no-first-run --merge benchmarks/results/models.json");
# FIRST_RUN=a,b the cold, warm and bundled first runs of those models (benchmarks/first_run.py);
# PROBES=a,b the probes benchmarks/probe_a.py, probe_b.py (e.g. PROBES=mask).
set -uo pipefail
out=${1:-${OUT:?give an output folder}}
shift || true
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 NBX_BACKEND=cuda
plugins=$(for p in ${PLUGINS:-plugins/*/}; do printf -- '-e %s ' "$p"; done)
# shellcheck disable=SC2086
python3 -m pip install -q --no-deps --no-build-isolation -e . $plugins >"$out/install.log" 2>&1 \
    || { tail -20 "$out/install.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >>"$out/gpu.txt"
cat "$out/gpu.txt"
rc=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    python3 -m pytest -q -n "${GPU_TEST_WORKERS:-8}" -p no:cacheprovider "${@:-tests}" 2>&1 | tee "$out/tests-cuda.log" \
        | tail -40 || rc=1
fi
if [ -n "${SWEEP:-}" ]; then
    # candidate launch configurations (benchmarks/sweep.py), e.g. SWEEP=attention,core
    # SWEEP_KERNEL=gemm SWEEP_SHAPES=6304x2304x768,... sweep one kernel of one family at those shapes.
    # WRITE_TABLES=NAME enters the winners in the plugins' tables with benchmarks/results/sweeps/NAME/
    # as their source; the tables and that folder come back as $out/tables.tar, to unpack in the
    # checkout (tar -xf OUT/tables.tar) and commit: the device tool returns few files and shallow folders.
    sweep_out="$out"
    [ -n "${WRITE_TABLES:-}" ] && sweep_out="benchmarks/results/sweeps/$WRITE_TABLES"
    python3 -m benchmarks.sweep --out "$sweep_out" --only "$SWEEP" ${SWEEP_KERNEL:+--kernel "$SWEEP_KERNEL"} \
        ${SWEEP_SHAPES:+--shapes "$SWEEP_SHAPES"} ${WRITE_TABLES:+--write-tables} >"$out/sweep.log" 2>&1 || rc=1
    if [ -n "${WRITE_TABLES:-}" ]; then
        find "$sweep_out" plugins \( -path '*/configs/*.json' -newer "$out/install.log" -o -path "$sweep_out/*" \) \
            -type f -print0 | tar --null -cf "$out/tables.tar" -T -
    fi
fi
for probe in $(tr , " " <<<"${PROBES:-}"); do
    python3 -m "benchmarks.probe_$probe" --out "$out" 2>&1 | tee "$out/probe_$probe.log" | tail -30 || rc=1
done
if [ -n "${MODELS:-}" ]; then
    models=$([ "$MODELS" = all ] && echo "" || echo "--models $MODELS")
    # shellcheck disable=SC2086
    python3 -m benchmarks.models --out "$out" $models ${MODELS_ARGS:-} 2>&1 | tee "$out/models.log" | tail -60 || rc=1
fi
if [ -n "${FIRST_RUN:-}" ]; then
    python3 -m benchmarks.first_run --out "$out" --models "$FIRST_RUN" 2>&1 | tee "$out/first_run.log" | tail -20 || rc=1
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
    # one JSON per family in $out (the device tool returns 8 files: narrow with BENCH_FAMILIES)
    python3 -m benchmarks.run --out "$out" ${BENCH_QUICK:+--quick} ${BENCH_FAMILIES:+--families "$BENCH_FAMILIES"} \
        2>&1 | tee "$out/bench.log" | tail -150 || rc=1
fi
exit $rc
