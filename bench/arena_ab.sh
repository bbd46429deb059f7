#!/usr/bin/env bash
# Issue 45: one malloc arena for every thread (MALLOC_ARENA_MAX=1, glibc's environment setting) beside
# gamut's heap settings, A/B on one host (bench/thread_heap_probe.py: a new thread's first read of a
# large file took 4x its second under gamut's settings). bench/thread_heap_probe.py on the transcriptome
# set; whole `gamut scan` processes on it: one GPU in fast mode and default mode, and a Dask cluster of
# one worker per GPU (a fresh cluster's first and second scan, fast mode), each variant interleaved; outputs
# compared with the first's bytes; spans beside the results. Run on the GPU machine from the repository
# root, with .whl and .data carried.
set -u
. bench/device_env.sh
. bench/gpu_cluster.sh
KIND=${KIND:-nvidia-h200-arena}
. bench/tx_setup.sh
python3 bench/thread_heap_probe.py $W/tx.fa 2>&1 | tee -a $R/runs.txt
for k in 1 2; do
  for a in 0 1; do scan_run one_gpu_a${a}_$k fast $( [ $a = 1 ] && echo MALLOC_ARENA_MAX=1 || echo X=1 ) -- --gpus 0; done
done
round=0
for a in 0 1 0 1; do
  round=$((round + 1))
  env_a=X=1; [ $a = 1 ] && env_a=MALLOC_ARENA_MAX=1
  start_gpu_cluster 1 $env_a GAMUT_TIMELINE=$R/tl_workers.jsonl --
  for k in 1 2; do
    rm -f $R/tl_workers.jsonl
    scan_run dask_a${a}_r${round}_$k fast $env_a -- --cluster $ADDR
    mv $R/tl_workers.jsonl $R/tlw_dask_a${a}_r${round}_$k.jsonl 2>/dev/null
  done
  stop_gpu_cluster
done
for k in 1 2; do
  for a in 0 1; do scan_run one_gpu_default_a${a}_$k default $( [ $a = 1 ] && echo MALLOC_ARENA_MAX=1 || echo X=1 ) -- --gpus 0; done
done
timeline_tables
cd $OUT && tar czf r.tgz r && rm -rf r
