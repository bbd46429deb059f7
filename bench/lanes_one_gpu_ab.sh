#!/usr/bin/env bash
# Issue 45: chunks a one-GPU scan aligns at once (GAMUT_GPU_LANES, 2 by default). In fast mode a one-GPU
# process's alignment threads were busy 95% of the scan (session 13's py-spy), so a third or fourth may
# help. Whole scans of the transcriptome set on GPU 0, fast and default mode, lane counts interleaved
# (LANES, default "2 3 4", each ROUNDS times, default 2), outputs compared with the first's; then, with
# TESTS=1, the GPU tests (bench/gpu_tests.sh). Run on the GPU machine from the repository root, with .whl
# and .data carried; KIND names the results.
set -u
. bench/device_env.sh
. bench/tx_setup.sh
for round in $(seq ${ROUNDS:-2}); do
  for mode in fast default; do
    for lanes in ${LANES:-2 3 4}; do
      scan_run ${mode}_lanes${lanes}_$round $mode GAMUT_GPU_LANES=$lanes -- --gpus 0
    done
  done
done
timeline_tables
(cd $OUT && tar czf r.tgz r && rm -rf r/*)  # (the results come back even if the tests run out of time)
if [ -n "${TESTS-}" ]; then . bench/gpu_tests.sh; gpu_tests ${KIND:-nvidia-h200}; fi
