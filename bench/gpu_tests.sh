# Sourced by the device-call scripts, after bench/device_env.sh: issue 45's GPU tests into
# $R/pytest_gpu_KIND.log (the scan, workers, serve, cuda, record-range, energy and extreme-parameter
# files marked gpu; then the stripe and hand-over tests, which run on the GPU where one is seen).
#   gpu_tests KIND
gpu_tests() {
  { echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c | xargs) ($1)"
    echo "# command: python3 -m pytest -q -m gpu tests/test_scan_gpu.py tests/test_scan_gpu_workers.py tests/test_serve.py tests/test_cuda_device.py tests/test_record_range.py tests/test_energy_gpu.py tests/test_scan_extreme_params.py; then python3 -m pytest -q tests/test_scan_stripes.py tests/test_handoff.py tests/test_heap.py"
    python3 -m pytest -q -m gpu tests/test_scan_gpu.py tests/test_scan_gpu_workers.py tests/test_serve.py tests/test_cuda_device.py \
      tests/test_record_range.py tests/test_energy_gpu.py tests/test_scan_extreme_params.py -p no:cacheprovider 2>&1 | tail -4
    python3 -m pytest -q tests/test_scan_stripes.py tests/test_handoff.py tests/test_heap.py -p no:cacheprovider 2>&1 | tail -2
  } > $R/pytest_gpu_$1.log 2>&1
  tail -3 $R/pytest_gpu_$1.log
}
