# Issue 45 on 4x H200 in one device call (2026-11-28, night): do CUDA context starts overlap; what four plain
# one-GPU processes on a stripe each can give (fast and default mode); the scaling run at this commit; and
# one worker per GPU. Run on the GPU machine from the repository root, with .whl and .data.
. bench/device_env.sh
nproc; nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
echo "== context starts"
for g in 0,1,2,3 0,0,1,1,2,2,3,3; do python3 bench/cuda_context_starts.py --gpus $g; done 2>&1 | tee $R/ctx.jsonl
echo "== plain bound fast"; OUT=$R/ppb_fast W=/tmp/ppb_f GPUS="0 1 2 3" bash bench/plain_processes_bound.sh 2>&1
echo "== plain bound default"; OUT=$R/ppb_default W=/tmp/ppb_d FLAGS=" " GPUS="0 1 2 3" bash bench/plain_processes_bound.sh 2>&1
python3 bench/scan_scaling.py --data .data --gpu-sets 0 0,1,2,3 --dask --modes fast,default --repeat 1 --timeline \
  --small-copies ${SMALL:-0} --kind ${KIND:-nvidia-h200-x4-2026-11-28k} --out $R 2>&1 | tail -12
W=/tmp/ppb_f; TIMEFORMAT="%R"
for mode in fast default; do
  flags="--device cuda"; [ $mode = fast ] && flags="$flags --noenergy --score-threshold 160"
  rm -f $W/per1.tsv
  echo "$mode, --gpus 0,1,2,3, one worker per GPU: $( { time GAMUT_WORKERS_PER_GPU=1 GAMUT_TIMELINE=$R/timeline_per1_$mode.jsonl \
    python3 -m gamut scan $W/hsa.fa $W/tx.fa $flags --gpus 0,1,2,3 -o $W/per1.tsv 2>/dev/null; } 2>&1 ) s"
done
cd $OUT && tar czf r.tgz r && rm -rf r
