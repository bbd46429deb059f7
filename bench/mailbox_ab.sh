#!/usr/bin/env bash
# Issue 45: a Dask cluster's tiles handed to the client through its mailbox (gamut.io.fd_mailbox: the
# memfds over a Unix socket) against Dask's own connection (AB_SRC: the code before, carried, e.g.
# `git archive HEAD src | tar -x -C .data/ab`), on one host: for each variant (new, old, new, old) a
# cluster of PER (default 2) workers per GPU started as docs/cluster.md says, one default-mode scan of the
# transcriptome set (4.46 GB of TSV) and one fast-mode scan; then `--gpus` with two workers per GPU, default
# mode, for reference. Outputs compared with the first's bytes per mode; spans of the client (tl_*) and the
# workers (tlw_*). Run on the GPU machine from the repository root, with .whl and .data carried.
set -u
. bench/device_env.sh
. bench/gpu_cluster.sh
KIND=${KIND:-nvidia-h200-mailbox-ab}
. bench/tx_setup.sh
TWICE=$(for g in $(seq 0 $((N - 1))); do printf "%s,%s," $g $g; done); TWICE=${TWICE%,}
round=0
for v in new old new old; do
  round=$((round + 1))
  path=$NEW; [ $v = old ] && path=$OLD
  start_gpu_cluster ${PER:-2} PYTHONPATH=$path GAMUT_TIMELINE=$R/tl_workers.jsonl --
  for mode in default fast; do
    rm -f $R/tl_workers.jsonl
    scan_run dask_${mode}_${v}_$round $mode PYTHONPATH=$path -- --cluster $ADDR
    mv $R/tl_workers.jsonl $R/tlw_dask_${mode}_${v}_$round.jsonl 2>/dev/null
  done
  stop_gpu_cluster
done
scan_run gpus_default default X=1 -- --gpus $TWICE
timeline_tables
cd $OUT && tar czf r.tgz r && rm -rf r
