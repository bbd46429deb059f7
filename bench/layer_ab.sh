#!/usr/bin/env bash
# Issue 45: what bounds the one-GPU scan's host threads in default mode (energies, 4.46 GB of TSV). The
# pipeline runs three host threads at once (hits and energies; building a chunk's rows; rendering and
# writing the one before), each calling Numba's parallel kernels: with the OpenMP layer each caller gets a
# team of every core. A/B, whole `gamut scan` processes on the transcriptome set, one GPU: Numba's layer as
# the image has it (OpenMP), TBB (one shared pool; carry its wheel in .whl), OpenMP told to sleep when idle,
# 8 threads per kernel; then py-spy (every thread; --gil) through a default run. Spans in $R/tl_*.jsonl
# (hits, energies, chunk built, chunk rendered, chunk written). Outputs compared with the first of a mode.
# REPEAT (2) runs of each; TESTS=1: then issue 45's GPU tests (KIND names them).
# Run on the GPU machine from the repository root, with .whl (and in it .whl/libtbb.so.12.gz, from tbb's wheel) carried.
set -u
. bench/device_env.sh
TBBLIB=/tmp/tbblib  # libtbb.so.12 of the tbb wheel (pip --target drops a wheel's data files), carried gzipped
mkdir -p $TBBLIB && gunzip -c .whl/libtbb.so.12.gz > $TBBLIB/libtbb.so.12
TBB=(LD_LIBRARY_PATH=$TBBLIB NUMBA_THREADING_LAYER=tbb)
env "${TBB[@]}" python3 -c "
import numba, numba.np.ufunc.parallel as p; p._launch_threads(); print('tbb check:', numba.threading_layer(), numba.__version__)" 2>&1 | tail -1 | tee -a $R/runs.txt
. bench/tx_setup.sh
REPEAT=${REPEAT:-2}
for k in $(seq $REPEAT); do
  scan_run omp_default_$k default X=1 --
  scan_run tbb_default_$k default "${TBB[@]}" --
  scan_run passive_default_$k default OMP_WAIT_POLICY=passive --
  scan_run t8_default_$k default X=1 -- --threads 8
done
for k in $(seq $REPEAT); do
  scan_run omp_fast_$k fast X=1 --
  scan_run tbb_fast_$k fast "${TBB[@]}" --
done
for mode in all gil; do
  flag=--idle; [ $mode = gil ] && flag=--gil
  py-spy record --threads $flag --format raw -r 100 -o $R/pyspy_default_$mode.txt -- \
    python3 -m gamut scan $W/hsa.fa $W/tx.fa --device cuda -o $W/o.tsv >/dev/null 2>&1
  echo "pyspy $mode rc=$?" | tee -a $R/runs.txt
done
timeline_tables
if [ -n "${TESTS-}" ]; then . bench/gpu_tests.sh; gpu_tests ${KIND:-nvidia-h200-layer-ab}; fi
cd $OUT && tar czf r.tgz r && rm -rf r
