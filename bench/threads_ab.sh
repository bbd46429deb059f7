#!/usr/bin/env bash
# Issue 45: how many Numba threads each GPU worker process gets. A worker of this machine got its share of
# the cores (cores / workers); on 2x H200, a Dask worker given all 32 instead of 16 built its chunks'
# hits and rows 1.7x faster and ended its stripe 0.4 s sooner (bench/dask_ab.sh, run r). A/B on one host,
# whole `gamut scan` processes on the transcriptome set, fast mode (--noenergy --score-threshold 160):
# one GPU; --gpus ALL with --threads as given in THREADS ("" = the default); a Dask cluster of one
# worker per GPU (as docs/cluster.md says) with DASK_THREADS; DEFAULT_MODE=1 adds default mode (TSV with
# energies) on one GPU and on ALL with DEFAULT_THREADS. Two runs each; outputs compared with the first's
# bytes; spans beside the results. Run on the GPU machine from the repository root, .whl and .data carried.
set -u
. bench/device_env.sh
. bench/gpu_cluster.sh
. bench/tx_setup.sh
run() {  # name, mode (fast|default), scan flags: two runs
  local name=$1 mode=$2; shift 2
  for k in 1 2; do scan_run ${name}_$k $mode X=1 -- "$@"; done
}
run one_gpu fast --gpus 0
for t in ${THREADS-"" 16 32}; do run gpus${ALL//,/}_t${t:-default} fast --gpus $ALL ${t:+--threads $t}; done
if [ -n "${DASK_THREADS-}" ]; then
  start_gpu_cluster 1 X=1 --
  for t in $DASK_THREADS; do run dask${ALL//,/}_t$t fast --cluster $ADDR ${t:+--threads $t}; done
  stop_gpu_cluster
fi
if [ -n "${DEFAULT_MODE-}" ]; then
  run one_gpu_default default --gpus 0
  for t in ${DEFAULT_THREADS-""}; do run gpus${ALL//,/}_default_t${t:-default} default --gpus $ALL ${t:+--threads $t}; done
fi
timeline_tables
cd $OUT && tar czf r.tgz r && rm -rf r
