# Pass 1 in 16-bit lanes (scan_pass1_grid2) on one GPU, in one call (2026-11-28/29): the engine alone per
# tuning (bench/pass1_probe.py), whole one-GPU processes with it and without it (GAMUT_GPU_PACKED=0),
# and the scan's GPU tests. Run on the GPU machine from the repository root, with .whl and .data; KIND
# names the results.
. bench/device_env.sh
KIND=${KIND:-nvidia-h200-2026-11-29a}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | uniq -c
if [ -n "${PROBE-1}" ]; then
  timeout 240 python3 bench/pass1_probe.py --data .data --out $R --kind $KIND ${VARIANTS:+--variants $VARIANTS} 2>&1 | tail -9
fi
if [ -n "${E2E-1}" ]; then
  timeout 200 python3 bench/scan_scaling.py --data .data --gpu-sets 0 --modes ${MODES:-fast,default} --repeat 2 \
    --small-copies ${SMALL:-1} --kind $KIND --out $R 2>&1 | tail -8
  GAMUT_GPU_PACKED=0 timeout 120 python3 bench/scan_scaling.py --data .data --gpu-sets 0 --modes fast --repeat 2 \
    --small-copies 0 --kind ${KIND}_int32 --out $R 2>&1 | tail -5
fi
if [ -n "${TESTS-1}" ]; then
  { echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c | xargs) ($KIND)"
    echo "# command: python3 -m pytest -q -m gpu tests/test_scan_gpu.py tests/test_scan_stripes.py tests/test_scan_extreme_params.py -p no:cacheprovider"
    timeout 280 python3 -m pytest -q -m gpu tests/test_scan_gpu.py tests/test_scan_stripes.py tests/test_scan_extreme_params.py \
      -p no:cacheprovider 2>&1 | tail -6
  } > $R/pytest_gpu_$KIND.log 2>&1
  tail -4 $R/pytest_gpu_$KIND.log
fi
cd $OUT && tar czf r.tgz r && rm -rf r
