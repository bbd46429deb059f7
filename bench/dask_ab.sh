#!/usr/bin/env bash
# Issue 45: why a Dask worker, alone on its GPU, builds a chunk's hits and rows 2x slower than a one-GPU
# process (run q: 8.3 ms and 11.8 ms a chunk against 4.3 ms and 5.9 ms). A/B of the worker's setting on one
# host, whole `gamut scan --cluster` processes on the transcriptome set (fast mode), clusters of two GPU
# workers started as docs/cluster.md says: as documented; Dask's profiler off; without a nanny (no
# pre-spawn environment); three chunks per GPU engine at once (GAMUT_GPU_LANES=3). Then py-spy (every
# thread, and --gil) of the documented cluster's two workers through one run. One GPU and --gpus 0,1 as
# references. VARIANTS (default: the four above) picks others: "name ENV=... -- worker args"; a name
# ending in _t32 gives the scan --threads 32, one holding "per2" starts two workers per GPU (--nworkers 2).
# On a machine of one GPU, --gpus 0,1 is left out. TESTS=1: then issue 45's GPU tests (KIND names them).
# Run on the GPU machine from the repository root, with .whl and .data carried.
set -u
. bench/device_env.sh
. bench/gpu_cluster.sh
W=/tmp/w
python3 bench/transcriptome_inputs.py $W >/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
FAST="--noenergy --score-threshold 160"
scan() { python3 -m gamut scan $W/hsa.fa "$@" --device cuda $FAST; }
N=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
scan $W/warm.fa --gpus 0 -o $W/warm.tsv; [ $N -gt 1 ] && scan $W/warm.fa --gpus 0,1 -o $W/warm.tsv
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
run one_gpu --gpus 0
[ $N -gt 1 ] && run gpus01 --gpus 0,1
VARIANTS=${VARIANTS:-"documented X=1 --;profiler_off DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False --;no_nanny X=1 -- --no-nanny;lanes3 GAMUT_GPU_LANES=3 --"}
IFS=';' read -ra VS <<< "$VARIANTS"
for v in "${VS[@]}"; do
  set -- $v; name=$1; shift
  per=1; case "$name" in *per2*) per=2;; esac
  start_gpu_cluster $per GAMUT_TIMELINE=$R/tl_workers.jsonl "$@"
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
  stop_gpu_cluster
done
run one_gpu_again --gpus 0
timeline_tables
if [ -n "${TESTS-}" ]; then . bench/gpu_tests.sh; gpu_tests ${KIND:-nvidia-h200-dask-ab}; fi
cd $OUT && tar czf r.tgz r && rm -rf r
