# Issue 45's closing measurements on one host (2026-11-28, night): the scaling run with the golden miRanda
# cases on every GPU set and the Dask cluster, issue 45's GPU tests, and the small cases of scan_e2e.py
# (acceptance 5). Run on the GPU machine from the repository root, with .whl and .data; KIND names the results.
# DASK: the GPU sets of the Dask clusters, one after the other (e.g. "0,1 0,0,1,1": one worker per GPU, then
# two; default: the largest of SETS); DASK_MODES: the modes scanned on them (default fast; e.g. fast,default).
# SPLIT=1: then one GPU as one process against two stripe workers on it, by size (bench/one_gpu_split.sh).
. bench/device_env.sh
KIND=${KIND:-nvidia-h200-x2-2026-11-28l}
SETS=${SETS:-0 0,1}
GOLDEN=${GOLDEN---golden tests/data/miranda}
python3 bench/scan_scaling.py --data .data --gpu-sets $SETS --dask ${DASK-} --dask-modes ${DASK_MODES:-fast} --modes fast,default --repeat ${REPEAT:-1} --timeline \
  --small-copies ${SMALL:-1} $GOLDEN --kind $KIND --out $R 2>&1 | tail -12
if [ -n "${TESTS-1}" ]; then . bench/gpu_tests.sh; gpu_tests $KIND; fi
if [ -n "${E2E-1}" ]; then
  python3 bench/scan_e2e.py --device cuda --cases clip,sars --clip 20000 --modes default --repeat 3 --data .data \
    --kind $KIND --out $R --gpus 0 2>&1 | tail -6
fi
if [ -n "${SPLIT-}" ]; then . bench/tx_setup.sh; . bench/one_gpu_split.sh; fi
cd $OUT && tar czf r.tgz r && rm -rf r
