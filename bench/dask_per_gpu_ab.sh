#!/usr/bin/env bash
# Issue 45: Dask workers per GPU, A/B on one host. The transcriptome set, fast mode (--noenergy
# -sc 160): one GPU's own process; clusters started beforehand as docs/cluster.md says, with one and
# with two workers on each GPU (bench/scan_scaling.py --dask, REPEAT scans each, outputs compared with one
# GPU's); then `gamut scan --cluster local --device cuda` (the cluster started by the command) with
# GAMUT_WORKERS_PER_GPU=1 and 2, outputs compared too. KIND names the results; SETS/DASK as
# scan_scaling.py's (default: this host's GPUs). TESTS=1: then the GPU tests (bench/gpu_tests.sh).
# Run on the GPU machine from the repository root, with .whl and .data carried.
set -u
. bench/device_env.sh
N=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
ALL=$(seq -s, 0 $((N - 1)))
TWICE=$(for g in $(seq 0 $((N - 1))); do printf "%s,%s," $g $g; done); TWICE=${TWICE%,}
KIND=${KIND:-nvidia-h200}
python3 bench/scan_scaling.py --data .data --gpu-sets ${SETS:-$ALL} --dask ${DASK:-$ALL $TWICE} --modes fast \
  --repeat ${REPEAT:-3} --timeline --small-copies 0 --kind $KIND --out $R 2>&1 | tail -14
. bench/tx_setup.sh
scan_run one_gpu fast X=1 -- --gpus 0
for per in 1 2 1 2; do
  scan_run local_per${per} fast GAMUT_WORKERS_PER_GPU=$per -- --cluster local
done
timeline_tables
if [ -n "${TESTS-}" ]; then . bench/gpu_tests.sh; gpu_tests $KIND; fi
cd $OUT && tar czf r.tgz r && rm -rf r
