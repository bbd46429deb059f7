#!/usr/bin/env bash
# The first several-GPU scan of an environment where only the one-GPU path was compiled (issue 45's
# noticed item: each stripe worker's warm-up compiled the CPU engine, 49-63 s instead of about 11 s),
# this tree's code against another's (AB_SRC, default .data/ab/src), each with an empty Numba cache of
# its own: a one-GPU scan (compiles the GPU path), the first `--gpus 0,0` scan (two stripe workers on
# GPU 0), a second one, then a small `--device cpu` scan (compiles the CPU engine: the notice says so)
# and another. Fast mode on the transcriptome set; outputs compared with the first's bytes; each run's
# stderr in $R/first_run_*.err. TESTS=1: then the stripe and compile tests. Run on the GPU machine from the repository root, .whl and .data carried.
set -u
. bench/device_env.sh
W=/tmp/w
python3 bench/transcriptome_inputs.py $W >/dev/null
echo "$(nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c | xargs), $(nproc) cores" | tee -a $R/runs.txt
FAST="--noenergy --score-threshold 160"
timed() {  # name, then the command line's arguments: wall time, status, $W/o.tsv's bytes against the first's
  local name=$1 same=-; shift
  rm -f $W/o.tsv
  local s=$(date +%s.%N)
  GAMUT_TIMELINE=$R/tl_$name.jsonl python3 -m gamut "$@" 2> $R/first_run_$name.err
  local rc=$? e=$(date +%s.%N)
  if [ -f $W/o.tsv ]; then
    [ -f $W/first.tsv ] || cp $W/o.tsv $W/first.tsv
    cmp -s $W/o.tsv $W/first.tsv && same=same || same=DIFFERS
  fi
  echo "$name rc=$rc wall=$(python3 -c "print(f'{$e-$s:.2f}')") $same" | tee -a $R/runs.txt
}
for v in new old; do
  path=$NEW; [ $v = old ] && path=$OLD
  export PYTHONPATH=$path NUMBA_CACHE_DIR=/tmp/numba-fresh-$v
  rm -rf $NUMBA_CACHE_DIR
  timed ${v}_1gpu scan $W/hsa.fa $W/tx.fa --device cuda --gpus 0 $FAST -o $W/o.tsv
  timed ${v}_gpus00_first scan $W/hsa.fa $W/tx.fa --device cuda --gpus 0,0 $FAST -o $W/o.tsv
  timed ${v}_gpus00_second scan $W/hsa.fa $W/tx.fa --device cuda --gpus 0,0 $FAST -o $W/o.tsv
  timed ${v}_cpu_first scan examples/mirnas.fa examples/targets.fa --device cpu -o $W/small.txt
  timed ${v}_cpu_second scan examples/mirnas.fa examples/targets.fa --device cpu -o $W/small.txt
done
for f in $R/first_run_*.err; do echo "== $(basename $f)"; cat $f; done | tee -a $R/runs.txt
timeline_tables
if [ -n "${TESTS-}" ]; then  # the stripe and compile tests, with the usual cache
  export PYTHONPATH=$NEW NUMBA_CACHE_DIR=/tmp/numba-cache
  python3 -m pytest -q tests/test_scan_stripes.py tests/test_compiles.py -p no:cacheprovider 2>&1 | tail -2 | tee $R/pytest_first_run.log
fi
cd $OUT && tar czf r.tgz r && rm -rf r
