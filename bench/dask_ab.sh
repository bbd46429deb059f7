#!/usr/bin/env bash
# Issue 45: why a Dask worker, alone on its GPU, builds a chunk's hits and rows 2x slower than a one-GPU
# process (run q: 8.3 ms and 11.8 ms a chunk against 4.3 ms and 5.9 ms). A/B of the worker's setting on one
# host, whole `gamut scan --cluster` processes on the transcriptome set (fast mode), clusters of two GPU
# workers started as docs/cluster.md says: as documented; Dask's profiler off; without a nanny (no
# pre-spawn environment); three chunks per GPU engine at once (GAMUT_GPU_LANES=3). Then py-spy (every
# thread, and --gil) of the documented cluster's two workers through one run. One GPU and --gpus 0,1 as
# references. VARIANTS (default: the four above) picks others: "name ENV=... -- worker args"; a name
# ending in _t32 gives the scan --threads 32, one holding "per2" starts two workers per GPU (--nworkers 2).
# Run on the GPU machine from the repository root, with .whl and .data carried.
set -u
. bench/device_env.sh
W=/tmp/w
python3 bench/transcriptome_inputs.py $W >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
FAST="--noenergy --score-threshold 160"
scan() { python3 -m gamut scan $W/hsa.fa "$@" --device cuda $FAST; }
scan $W/warm.fa --gpus 0 -o $W/warm.tsv; scan $W/warm.fa --gpus 0,1 -o $W/warm.tsv
FIRST=""
run() {  # name, scan flags
  local name=$1; shift
  rm -f $W/o.tsv
  local s=$(date +%s.%N)
  GAMUT_TIMELINE=$R/tl_$name.jsonl scan $W/tx.fa "$@" -o $W/o.tsv
  local rc=$? e=$(date +%s.%N) same=first
  if [ -z "$FIRST" ]; then FIRST=$name; mv $W/o.tsv $W/first.tsv; else cmp -s $W/first.tsv $W/o.tsv && same=same || same=DIFFERS; fi
  echo "$name rc=$rc wall=$(python3 -c "print(f'{$e-$s:.2f}')") $same" | tee -a $R/runs.txt
}
PIDS=()
cluster() {  # env assignments for the workers..., -- extra worker arguments
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  rm -f $W/s.json
  python3 -m distributed.cli.dask_scheduler --host 127.0.0.1 --port 0 --no-dashboard --scheduler-file $W/s.json \
    >/dev/null 2>&1 & PIDS+=($!)
  while [ ! -s $W/s.json ]; do sleep 0.2; done; sleep 0.3
  local per=1; case "$name" in *per2*) per=2;; esac
  for g in 0 1; do
    env "${envs[@]}" CUDA_VISIBLE_DEVICES=$g GAMUT_TIMELINE=$R/tl_workers.jsonl python3 -m distributed.cli.dask_worker \
      --scheduler-file $W/s.json --nworkers $per --nthreads 1 --name gpu$g --no-dashboard --host 127.0.0.1 \
      --preload gamut.dask_preload "$@" >/dev/null 2>&1 & PIDS+=($!)
  done
  ADDR=$(python3 -c "
import json; from distributed import Client
c = Client(scheduler_file='$W/s.json', timeout=60); c.wait_for_workers(2 * $per, timeout=180)
print(json.load(open('$W/s.json'))['address'])")
}
stop() { kill "${PIDS[@]}" 2>/dev/null; sleep 2; kill -9 "${PIDS[@]}" 2>/dev/null; pkill -9 -f distributed.cli 2>/dev/null; PIDS=(); sleep 1; }
run one_gpu --gpus 0
run gpus01 --gpus 0,1
VARIANTS=${VARIANTS:-"documented X=1 --;profiler_off DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False --;no_nanny X=1 -- --no-nanny;lanes3 GAMUT_GPU_LANES=3 --"}
IFS=';' read -ra VS <<< "$VARIANTS"
for v in "${VS[@]}"; do
  set -- $v; name=$1; shift
  cluster "$@"
  extra=""; case "$name" in *_t32) extra="--threads 32";; esac
  for k in 1 2; do rm -f $R/tl_workers.jsonl; run dask_${name}_$k --cluster $ADDR $extra; mv $R/tl_workers.jsonl $R/tlw_dask_${name}_$k.jsonl 2>/dev/null; done
  if [ $name = documented ] && [ -z "${NO_PYSPY-}" ]; then
    WPIDS=$(python3 -c "
import os; from distributed import Client
c = Client(scheduler_file='$W/s.json', timeout=60); print(' '.join(str(p) for p in c.run(os.getpid).values()))")
    SPY=()
    for p in $WPIDS; do
      py-spy record --pid $p --threads --idle --nonblocking --format raw -r 200 -d 9 -o $R/pyspy_all_$p.txt >/dev/null 2>&1 & SPY+=($!)
      py-spy record --pid $p --threads --gil --nonblocking --format raw -r 200 -d 9 -o $R/pyspy_gil_$p.txt >/dev/null 2>&1 & SPY+=($!)
    done
    sleep 1; run dask_documented_pyspy --cluster $ADDR; wait "${SPY[@]}"
  fi
  stop
done
run one_gpu_again --gpus 0
for f in $R/tl*.jsonl; do python3 bench/timeline.py $f --out ${f%.jsonl} --title $(basename $f .jsonl) >/dev/null 2>&1; done
rm -f $R/*.png
cd $OUT && tar czf r.tgz r && rm -rf r
