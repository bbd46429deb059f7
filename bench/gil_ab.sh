#!/usr/bin/env bash
# Issue 45, default mode (TSV with energies, 4.46 GB), second call: a stripe worker's threads (align, hits,
# text) share one interpreter lock; is the lock's hand-over what bounds them? A/B on one host, whole
# `gamut scan` processes on the transcriptome set, one GPU and --gpus 0,1: the interpreter's switch
# interval (GAMUT_BENCH_SWITCH_INTERVAL through bench/switch_interval/sitecustomize.py, every process),
# worker processes per GPU (GAMUT_WORKERS_PER_GPU);
# then py-spy (--gil, and every thread) of one GPU and of --gpus 0,1. Outputs compared with the first's
# bytes; spans (GAMUT_TIMELINE) beside the results. Run on the GPU machine from the repository root, with
# .whl and .data carried.
set -u
. bench/device_env.sh
W=/tmp/w
export PYTHONPATH=$PWD/bench/switch_interval:$PYTHONPATH
python3 bench/transcriptome_inputs.py $W >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
nproc
scan() { python3 -m gamut scan $W/hsa.fa "$@" --device cuda; }
scan $W/warm.fa --gpus 0 -o $W/warm.tsv; scan $W/warm.fa --gpus 0,1 -o $W/warm.tsv
for i in 1 2 3; do
  s=$(date +%s.%N); python3 -m gamut scan $W/q1.fa $W/r1.fa --device cuda -o $W/one.tsv; e=$(date +%s.%N)
  echo "startup $(python3 -c "print(f'{$e-$s:.2f}')")" | tee -a $R/runs.txt
done
FIRST=""
run() {  # name, env assignments..., -- scan flags
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  rm -f $W/o.tsv $R/tl_$name.jsonl
  local s=$(date +%s.%N)
  env "${envs[@]}" GAMUT_TIMELINE=$R/tl_$name.jsonl python3 -m gamut scan $W/hsa.fa $W/tx.fa --device cuda "$@" -o $W/o.tsv
  local rc=$? e=$(date +%s.%N)
  local same=first
  if [ -z "$FIRST" ]; then FIRST=$name; mv $W/o.tsv $W/first.tsv; else cmp -s $W/first.tsv $W/o.tsv && same=same || same=DIFFERS; fi
  echo "$name rc=$rc wall=$(python3 -c "print(f'{$e-$s:.2f}')") $same"  | tee -a $R/runs.txt
}
run d1_k1 X=1 -- --gpus 0
run d2_k1 X=1 -- --gpus 0,1
run d1_k1_si05 GAMUT_BENCH_SWITCH_INTERVAL=0.0005 -- --gpus 0
run d2_k1_si05 GAMUT_BENCH_SWITCH_INTERVAL=0.0005 -- --gpus 0,1
run d1_k1_si01 GAMUT_BENCH_SWITCH_INTERVAL=0.0001 -- --gpus 0
run d2_k1_si01 GAMUT_BENCH_SWITCH_INTERVAL=0.0001 -- --gpus 0,1
run d2_k1_w3 GAMUT_WORKERS_PER_GPU=3 -- --gpus 0,1
run d2_k1_w4 GAMUT_WORKERS_PER_GPU=4 -- --gpus 0,1
run d2_k1_w3_si05 GAMUT_WORKERS_PER_GPU=3 GAMUT_BENCH_SWITCH_INTERVAL=0.0005 -- --gpus 0,1
run d2_k1_again X=1 -- --gpus 0,1
FIRST=""
run f1_k1 X=1 -- --noenergy --score-threshold 160 --gpus 0
run f2_k1 X=1 -- --noenergy --score-threshold 160 --gpus 0,1
run f2_k1_si05 GAMUT_BENCH_SWITCH_INTERVAL=0.0005 -- --noenergy --score-threshold 160 --gpus 0,1
for g in 0 0,1; do
  py-spy record --subprocesses --gil --threads --nonblocking --format raw -r 200 -o $R/pyspy_gil_d${g/,/-}.txt -- \
    python3 -m gamut scan $W/hsa.fa $W/tx.fa --device cuda --gpus $g -o $W/o.tsv 2>&1 | tail -1
  py-spy record --subprocesses --threads --nonblocking --format raw -r 200 -o $R/pyspy_all_d${g/,/-}.txt -- \
    python3 -m gamut scan $W/hsa.fa $W/tx.fa --device cuda --gpus $g -o $W/o.tsv 2>&1 | tail -1
done
for f in $R/tl_*.jsonl; do python3 bench/timeline.py $f --out ${f%.jsonl} --title $(basename $f .jsonl) >/dev/null 2>&1; done
cd $OUT && tar czf r.tgz r && rm -rf r
