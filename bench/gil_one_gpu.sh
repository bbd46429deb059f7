#!/usr/bin/env bash
# Issue 45: what holds a one-GPU scan's interpreter lock. The transcriptome set, whole `gamut scan`
# processes on GPU 0 (fast and default mode), each once with its spans (GAMUT_TIMELINE), then under
# py-spy at 500 Hz: --gil (the thread holding the lock) and every running thread, raw collapsed stacks in
# $R; `python3 bench/pyspy_summary.py $R/pyspy_*.txt` sums them by thread and by gamut function.
# Run on the GPU machine from the repository root, with .whl (py-spy's wheel in it) and .data carried.
set -u
. bench/device_env.sh
. bench/tx_setup.sh
for mode in fast default; do
  scan_run ${mode}_1 $mode X=1 -- --gpus 0
  scan_run ${mode}_2 $mode X=1 -- --gpus 0
done
for mode in fast default; do
  flags=$FAST; [ $mode = default ] && flags=""
  for kind in gil all; do
    opt=--gil; [ $kind = all ] && opt=""
    s=$(date +%s.%N)
    py-spy record $opt --threads --nonblocking --format raw -r 500 -o $R/pyspy_${kind}_$mode.txt -- \
      python3 -m gamut scan $W/hsa.fa $W/tx.fa --device cuda --gpus 0 $flags -o $W/o.tsv > $R/pyspy_${kind}_$mode.log 2>&1
    e=$(date +%s.%N)
    echo "pyspy_${kind}_$mode wall=$(python3 -c "print(f'{$e-$s:.2f}')")" | tee -a $R/runs.txt
    cmp -s $W/first_$mode.tsv $W/o.tsv || echo "pyspy_${kind}_$mode OUTPUT DIFFERS" | tee -a $R/runs.txt
  done
done
python3 bench/pyspy_summary.py $R/pyspy_*.txt > $R/pyspy_summary.md 2>&1
timeline_tables
if [ "${SMALL:-1}" = 1 ]; then  # issue 45's acceptance 5: the small cases on this host kind
  python3 bench/scan_e2e.py --device cuda --cases clip,sars --clip 20000 --modes default --repeat 3 --data .data \
    --gpus 0 --kind ${KIND:-nvidia-h200} --out $R > $R/small.log 2>&1; tail -5 $R/small.log
fi
cd $OUT && tar czf r.tgz r && rm -rf r
