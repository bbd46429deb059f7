#!/usr/bin/env bash
# Issue 45: whole `gamut scan` processes of this tree's code against another's (AB_SRC: that code's src
# folder, carried, e.g. `git archive b3f1d6e src | tar -x -C .data/ab`; or AB_PREPEND: a folder whose
# sitecustomize.py changes this tree in every process, the cluster's workers too), on one host. FASTA_READ=1 first
# times bench/fasta_read.py on the transcriptome set's references (the parse in pieces, 2026-11-29k).
# Then the set in fast mode: one GPU (new, old, new, old; ONE_GPU=0 skips them) and, for each variant
# (new, old, new, old), a cluster of one worker per GPU started as docs/cluster.md says, scanned twice (a
# fresh cluster's first and second scans); outputs compared with the first's bytes; spans of the client
# (tl_*) and the workers (tlw_*) beside the results. TESTS=1: then issue 45's GPU tests. Run on the GPU
# machine from the repository root, with .whl and .data carried.
set -u
. bench/device_env.sh
. bench/gpu_cluster.sh
KIND=${KIND:-nvidia-h200-code-ab}
. bench/tx_setup.sh
[ -n "${AB_PREPEND-}" ] && OLD=$PWD/$AB_PREPEND:$NEW  # the same tree, a sitecustomize.py there changing it
warm_other --gpus 0 $FAST
if [ "${FASTA_READ-0}" = 1 ]; then
  python3 bench/fasta_read.py --file $W/tx.fa --repeat 5 --json $R/fasta_read.json > $R/fasta_read.txt 2>&1
  cat $R/fasta_read.txt
fi
ONE=0
for v in $([ "${ONE_GPU-1}" = 1 ] && echo new old new old); do
  path=$NEW; [ $v = old ] && path=$OLD
  ONE=$((ONE + 1)); scan_run one_gpu_${v}_$ONE fast PYTHONPATH=$path -- --gpus 0
done
round=0
for v in new old new old; do
  round=$((round + 1))
  path=$NEW; [ $v = old ] && path=$OLD
  start_gpu_cluster 1 PYTHONPATH=$path GAMUT_TIMELINE=$R/tl_workers.jsonl --
  for k in 1 2; do
    rm -f $R/tl_workers.jsonl
    scan_run dask_${v}_r${round}_$k fast PYTHONPATH=$path -- --cluster $ADDR
    mv $R/tl_workers.jsonl $R/tlw_dask_${v}_r${round}_$k.jsonl 2>/dev/null
  done
  stop_gpu_cluster
done
timeline_tables
if [ -n "${TESTS-}" ]; then . bench/gpu_tests.sh; gpu_tests $KIND; fi
cd $OUT && tar czf r.tgz r && rm -rf r
