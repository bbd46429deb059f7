#!/usr/bin/env bash
# Issue 45: the head start of a scan on a Dask cluster of GPUs (its workers on this machine read and plan
# their stripes from the reference file while the client reads it) against the code before it, on one
# host: AB_SRC names that code's src folder (carried, e.g. `git archive b29b990 src | tar -x -C .data/ab`).
# Whole `gamut scan` processes on the transcriptome set, fast mode: one GPU; then, for each variant (new,
# old, new), a cluster of one worker per GPU started as docs/cluster.md says, and two scans on it (a
# fresh cluster's first and second); outputs compared with the one-GPU output's bytes; spans of the
# client (tl_*) and the workers (tlw_*) beside the results. Run on the GPU machine from the repository
# root, with .whl and .data carried.
set -u
. bench/device_env.sh
. bench/gpu_cluster.sh
KIND=${KIND:-nvidia-h200-head-start}
. bench/tx_setup.sh
NEW=$PYTHONPATH
OLD=${PYTHONPATH/$PWD\/src/$PWD/${AB_SRC:-.data/ab/src}}
FIRST=""
run() {  # name, PYTHONPATH, scan flags
  local name=$1 path=$2; shift 2
  rm -f $W/o.tsv
  local s=$(date +%s.%N)
  PYTHONPATH=$path GAMUT_TIMELINE=$R/tl_$name.jsonl python3 -m gamut scan $W/hsa.fa $W/tx.fa --device cuda "$@" $FAST -o $W/o.tsv
  local rc=$? e=$(date +%s.%N) same=first
  if [ -z "$FIRST" ]; then FIRST=$name; mv $W/o.tsv $W/first.tsv; else cmp -s $W/first.tsv $W/o.tsv && same=same || same=DIFFERS; fi
  echo "$name rc=$rc wall=$(python3 -c "print(f'{$e-$s:.2f}')") $same" | tee -a $R/runs.txt
}
run one_gpu_1 $NEW --gpus 0
run one_gpu_2 $NEW --gpus 0
round=0
for v in new old new old; do
  round=$((round + 1))
  path=$NEW; [ $v = old ] && path=$OLD
  start_gpu_cluster 1 PYTHONPATH=$path GAMUT_TIMELINE=$R/tl_workers.jsonl --
  for k in 1 2; do
    rm -f $R/tl_workers.jsonl
    run dask_${v}_r${round}_$k $path --cluster $ADDR
    mv $R/tl_workers.jsonl $R/tlw_dask_${v}_r${round}_$k.jsonl 2>/dev/null
  done
  stop_gpu_cluster
done
run one_gpu_3 $NEW --gpus 0
for f in $R/tl*.jsonl; do python3 bench/timeline.py $f --out ${f%.jsonl} --title $(basename $f .jsonl) >/dev/null 2>&1; done
rm -f $R/*.png
if [ -n "${TESTS-}" ]; then . bench/gpu_tests.sh; gpu_tests $KIND; fi
cd $OUT && tar czf r.tgz r && rm -rf r
