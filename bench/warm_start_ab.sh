#!/usr/bin/env bash
# Issue 45: a GPU worker's start (2026-11-29, session 14). A `--gpus` worker warmed up with a CPU pass and
# then a GPU pass (0.87-1.77 s on one H200, session 13) before it scanned, where the one-GPU process
# aligned from 1.19 s; the CPU pass is now skipped where the CUDA context is made already. Whole scans of
# the transcriptome set, this tree's code against another's (AB_SRC, see bench/device_env.sh), interleaved:
# `--gpus 0,0` in fast mode (ROUNDS times, default 3) and in default mode (once), and one GPU's own
# process in fast mode (twice, this code); outputs compared with the first's of each mode, spans beside
# the results. Then, unless TESTS= or E2E= is given empty, issue 45's GPU tests and the small cases of
# bench/scan_e2e.py (acceptance 5); STRIPE_TESTS=1: the stripe tests alone. Run on the GPU machine from the repository root, .whl and .data carried.
set -u
. bench/device_env.sh
KIND=${KIND:-nvidia-h200-warm-start}
. bench/tx_setup.sh
warm_other --gpus 0,0 $FAST
for round in $(seq ${ROUNDS:-3}); do
  for v in new old; do
    path=$NEW; [ $v = old ] && path=$OLD
    scan_run gpus00_fast_${v}_$round fast PYTHONPATH=$path -- --gpus 0,0
  done
done
for v in new old; do
  path=$NEW; [ $v = old ] && path=$OLD
  scan_run gpus00_default_$v default PYTHONPATH=$path -- --gpus 0,0
done
for k in 1 2; do scan_run one_gpu_fast_$k fast -- --gpus 0; done
timeline_tables
(cd $OUT && tar czf r.tgz r)  # (the results come back even if what follows runs out of time)
if [ -n "${TESTS-1}" ]; then . bench/gpu_tests.sh; gpu_tests $KIND; fi
if [ -n "${STRIPE_TESTS-}" ]; then  # (the stripe tests alone: the workers' warm-up among them)
  python3 -m pytest -q tests/test_scan_stripes.py -p no:cacheprovider 2>&1 | tail -2 | tee $R/pytest_stripes_$KIND.log
fi
if [ -n "${E2E-1}" ]; then
  python3 bench/scan_e2e.py --device cuda --cases clip,sars --clip 20000 --modes default --repeat 3 --data .data \
    --kind $KIND --out $R --gpus 0 2>&1 | tail -6
fi
cd $OUT && rm -f r.tgz && tar czf r.tgz r && rm -rf r
