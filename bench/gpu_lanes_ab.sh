#!/usr/bin/env bash
# Issue 45, next measurement: chunks a GPU engine aligns at once (GAMUT_GPU_LANES; 2 by default). A lone
# process per GPU (a Dask worker, a one-GPU scan) kept its two chunks in flight 86% of the time and
# aligned 60 chunks/s, where --gpus's two processes of two chunks each aligned 77/s on one GPU (run n).
# For each lane count: bench/scan_scaling.py in fast mode on one GPU, --gpus 0,1 and a Dask cluster of
# both GPUs (its workers get the variable too), two runs each; LANES_DEFAULT_MODE=1 adds default mode.
# Run on the GPU machine from the repository root, with .whl and .data carried; KIND names the results.
set -u
. bench/device_env.sh
KIND=${KIND:-nvidia-h200-x2-lanes}
MODES=fast${LANES_DEFAULT_MODE:+,default}
for lanes in ${LANES:-2 3 4}; do
  GAMUT_GPU_LANES=$lanes python3 bench/scan_scaling.py --data .data --gpu-sets 0 0,1 --dask --modes $MODES --repeat 2 \
    --small-copies 0 --kind ${KIND}_lanes$lanes --out $R 2>&1 | grep -E "^\| (fast|default)"
done
cd $OUT && tar czf r.tgz r && rm -rf r
