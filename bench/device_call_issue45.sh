# One device call of issue 45's work (2026-11-28, night): the scaling run at this commit, then py-spy of
# default mode (one GPU; --gpus 0,1). Run on a GPU machine from the repository root, with .whl and .data.
. bench/device_env.sh
KIND=${KIND:-nvidia-h200-x2-2026-11-28j}
SETS=${SETS:-0 0,1}
python3 bench/scan_scaling.py --data .data --gpu-sets $SETS --dask --modes fast,default --repeat ${REPEAT:-2} --timeline \
  --small-copies 0 --kind $KIND --out $R 2>&1 | tail -15
if [ -n "${PROFILE:-}" ]; then
  W=/tmp/pw; mkdir -p $W; python3 bench/transcriptome_inputs.py $W >/dev/null
  for g in 0 0,1; do
    py-spy record --subprocesses --threads --nonblocking --format raw -r 200 -o "$R/pyspy_default_all_${g/,/-}.txt" -- \
      python3 -m gamut scan "$W/hsa.fa" "$W/tx.fa" --device cuda --gpus $g -o "$W/d.tsv" 2>&1 | tail -1
  done
fi
cd $OUT && tar czf r.tgz r && rm -rf r
