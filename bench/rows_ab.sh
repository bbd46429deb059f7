#!/usr/bin/env bash
# Issue 45: default mode's host work (energies, 4.46 GB of TSV), this tree's code against another's
# (AB_SRC, default .data/ab/src: e.g. `git archive 904d5b3 src | tar -x -C .data/ab`), on one host:
# whole `gamut scan` processes on the transcriptome set, alternating new and old, REPEAT (3) of each: one
# GPU in default mode; two stripe workers on GPU 0 (`--gpus 0,0`, the several-GPU path's host work) in
# default mode; one GPU in fast mode. Outputs compared with the first's bytes of each mode (new and old
# must agree); spans in $R/tl_*.jsonl beside the results (hits, energies, chunk built, chunk rendered,
# chunk written). TESTS=1: then issue 45's GPU tests (KIND names them). Run on the GPU machine from the
# repository root, with .whl and .data carried.
set -u
. bench/device_env.sh
KIND=${KIND:-nvidia-h200-rows-ab}
. bench/tx_setup.sh
warm_other --gpus 0
REPEAT=${REPEAT:-3}
for k in $(seq $REPEAT); do
  for v in new old; do
    path=$NEW; [ $v = old ] && path=$OLD
    scan_run default_${v}_$k default PYTHONPATH=$path -- --gpus 0
  done
done
for k in $(seq $REPEAT); do
  for v in new old; do
    path=$NEW; [ $v = old ] && path=$OLD
    scan_run stripes00_${v}_$k default PYTHONPATH=$path -- --gpus 0,0
  done
done
for k in $(seq 2); do
  for v in new old; do
    path=$NEW; [ $v = old ] && path=$OLD
    scan_run fast_${v}_$k fast PYTHONPATH=$path -- --gpus 0
  done
done
timeline_tables
if [ -n "${TESTS-}" ]; then . bench/gpu_tests.sh; gpu_tests $KIND; fi
cd $OUT && tar czf r.tgz r && rm -rf r
