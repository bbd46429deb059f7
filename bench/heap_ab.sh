#!/usr/bin/env bash
# Issue 45: the heap settings of gamut's worker processes (gamut.io.heap; GAMUT_HEAP_REUSE=0 leaves the C
# library's defaults). Dask's nanny starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which maps every
# buffer above 128 KiB afresh; a Dask worker built a chunk's hits and rows 1.8x slower than a one-GPU
# process (run d, 2026-11-29). A/B on one host, whole `gamut scan` processes on the transcriptome set:
# fast mode (--noenergy --score-threshold 160) on one GPU, on --gpus ALL and on a Dask cluster of one worker
# per GPU (as docs/cluster.md says), heap settings on (1) and off (0), interleaved; DEFAULT_MODE=1 adds
# default mode (TSV with energies) on one GPU and --gpus ALL. Two runs each; outputs compared with the
# first's bytes; spans (GAMUT_TIMELINE) beside the results. TESTS=1 then runs issue 45's GPU tests and
# E2E=1 the small cases of scan_e2e.py (KIND names them). Run on the GPU machine from the repository root,
# with .whl and .data carried.
set -u
. bench/device_env.sh
. bench/gpu_cluster.sh
KIND=${KIND:-nvidia-h200-heap}
. bench/tx_setup.sh
for k in 1 2; do
  scan_run one_gpu_$k fast X=1 -- --gpus 0
  for h in 1 0; do scan_run gpus_heap${h}_$k fast GAMUT_HEAP_REUSE=$h -- --gpus $ALL; done
done
for h in 1 0 1; do
  start_gpu_cluster 1 GAMUT_HEAP_REUSE=$h GAMUT_TIMELINE=$R/tl_workers.jsonl --
  for k in 1 2; do
    rm -f $R/tl_workers.jsonl
    scan_run dask_heap${h}_$k fast X=1 -- --cluster $ADDR
    mv $R/tl_workers.jsonl $R/tlw_dask_heap${h}_$k.jsonl 2>/dev/null
  done
  stop_gpu_cluster
done
if [ -n "${DEFAULT_MODE-}" ]; then
  for k in 1 2; do
    scan_run one_gpu_default_$k default X=1 -- --gpus 0
    for h in 1 0; do scan_run gpus_default_heap${h}_$k default GAMUT_HEAP_REUSE=$h -- --gpus $ALL; done
  done
fi
timeline_tables
if [ -n "${TESTS-}" ]; then . bench/gpu_tests.sh; gpu_tests $KIND; fi
if [ -n "${E2E-}" ]; then
  python3 bench/scan_e2e.py --device cuda --cases clip,sars --clip 20000 --modes default --repeat 3 --data .data \
    --kind $KIND --out $R --gpus 0 2>&1 | tail -6
fi
cd $OUT && tar czf r.tgz r && rm -rf r
