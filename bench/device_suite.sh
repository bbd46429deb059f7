#!/usr/bin/env bash
# GPU checks and benchmarks in one call on the lent device machine (see docs/scan_gpu.md).
#   bash bench/device_suite.sh STAGE [STAGE ...]      stages: env tests scan fold splice big energy e2e scaling timeline sample startup access
# Wheels for packages the device image lacks travel in .whl/ (carry it); logs and results go to
# $OUT (or bench/results/device when $OUT is unset).
set -uo pipefail
OUT=${OUT:-bench/results/device}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/src:$PWD/tests
else
  export PYTHONPATH=$PWD/src:$PWD/tests
fi
export NUMBA_CACHE_DIR=/tmp/numba-cache PYTHONUNBUFFERED=1
export GAMUT_SERVER=${GAMUT_SERVER:-off}  # every command its own process (scan_e2e --served starts its own server)
# The device image sets PYTHONDONTWRITEBYTECODE=1, so every process would compile ~900 modules from
# source (0.8 s of each start-up); an installation has its bytecode, so keep it (in /tmp: the
# image's site-packages may be read-only).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=/tmp/pycache
mkdir -p ../shared && [ -e ../shared/data ] || { [ -d .data ] && ln -sfn "$PWD/.data" ../shared/data; }
run() {  # run NAME TIMEOUT CMD...: log to $OUT/NAME.log, keep going on failure
  local name=$1 limit=$2; shift 2
  echo "=== $name: $*"
  local t0=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.log" | tail -n 40
  echo "=== $name: rc=${PIPESTATUS[0]} in $((SECONDS - t0)) s"
}
for stage in "$@"; do
  case $stage in
    env) nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
         python3 -c "import cupy, numba; print('cupy', cupy.__version__, 'numba', numba.__version__, 'cuda', cupy.cuda.runtime.runtimeGetVersion())" ;;
    tests) run pytest_gpu "${TESTS_LIMIT:-570}" python3 -m pytest -m gpu -q -rfE --tb=short -p no:cacheprovider \
             --timeout 480 ${TESTS:-tests/} ;;
    scan) run scan_gpu "${SCAN_LIMIT:-300}" python3 bench/scan_gpu.py --out "$OUT" --threads 16 --kind "${KIND:-nvidia-h100-x1}" ${SCAN_ARGS:-} ;;
    fold) run fold_gpu "${FOLD_LIMIT:-300}" python3 bench/fold.py --target gpu --out "$OUT" ${FOLD_ARGS:-} ;;
    splice) run splice_gpu "${SPLICE_LIMIT:-420}" python3 bench/splice.py --device cuda --check --wide --variants auto --out-dir "$OUT" ${SPLICE_ARGS:-} ;;
    e2e) run scan_e2e "${E2E_LIMIT:-420}" python3 bench/scan_e2e.py --device cuda --out "$OUT" --kind "${KIND:-nvidia-h100-x1}" ${E2E_ARGS:-} ;;
    big) run scan_big "${BIG_LIMIT:-400}" python3 bench/scan_gpu.py --out "$OUT" --threads 16 --tables none --big --kind "${KIND:-nvidia-h100-x1}-big" ${BIG_ARGS:-} ;;
    scaling) run scan_scaling "${SCALING_LIMIT:-580}" python3 bench/scan_scaling.py --out "$OUT" --kind "${KIND:-multi-gpu}" \
               --data .data ${SCALING_ARGS:-} ;;
    timeline) for case in utr clip; do
                run "timeline_$case" "${TIMELINE_LIMIT:-200}" python3 bench/partition_timeline.py --case "$case" --data .data \
                  --gpus "${TIMELINE_GPUS:-0,1}" --out "$OUT/partition_timeline_$case.md"
              done ;;
    sample) for case in one sars clip utr; do
              run "sample_$case" "${SAMPLE_LIMIT:-120}" python3 bench/sample_profile.py --case "$case" --data .data \
                --out "$OUT/sample_${case}_cuda.md"
            done ;;
    startup) run startup "${STARTUP_LIMIT:-300}" python3 bench/startup.py --floors --data .data --out "$OUT/startup" ${STARTUP_ARGS:-} ;;
    access) run access_gpu "${ACCESS_LIMIT:-360}" python3 bench/access.py --gpu --scan --repeat 3 --cpu-refs 240 --data .data \
              --out "$OUT" --kind "${KIND:-nvidia-h100-x1}" ${ACCESS_ARGS:-} ;;
    energy) run energy_gpu "${ENERGY_LIMIT:-240}" python3 bench/energy_gpu.py --out "$OUT" --kind "${KIND:-nvidia-h100-x1}" ${ENERGY_ARGS:-} ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
# One archive comes back more reliably than many files (the device tool returns at most 8).
if [ "${PACK:-1}" = 1 ]; then
  tar -C "$OUT" -cf /tmp/device_results.tar . && find "$OUT" -mindepth 1 -delete && mv /tmp/device_results.tar "$OUT/"
fi
