#!/usr/bin/env bash
# Worker processes per GPU (issue 45): whole `gamut scan` processes of the transcriptome set on
# --gpus $GPUS (default 0,1,2,3) with GAMUT_WORKERS_PER_GPU in $PER (default 1 2 3), in fast
# (--noenergy -sc 160) and default mode, each with GAMUT_TIMELINE spans (how long the workers' warm-up
# takes), beside one GPU, outputs compared with one GPU's; then three one-pair processes (start-up).
# Run from the repository root with the data in .data/; OUT: the folder for the timelines; MODES
# (default "fast default"), ONE=0 (no one-GPU run), TAG (a prefix of the timelines' names).
set -u
OUT=${OUT:-/tmp/wpg}
W=${W:-/tmp/wpg_work}
mkdir -p "$OUT" "$W"
python3 bench/transcriptome_inputs.py "$W"
GPUS=${GPUS:-0,1,2,3}
TIMEFORMAT="%R"
scan() { python3 -m gamut scan "$W/hsa.fa" "$@" 2>/dev/null; }
for g in 0 "$GPUS"; do scan "$W/warm.fa" --device cuda --gpus "$g" -o "$W/warm.tsv"; done
for mode in ${MODES:-fast default}; do
  flags="--device cuda"
  [ "$mode" = fast ] && flags="$flags --noenergy --score-threshold 160"
  if [ "${ONE:-1}" != 0 ] || [ ! -s "$W/one_$mode.tsv" ]; then
    rm -f "$W/one_$mode.tsv"
    echo "$mode, one GPU: $( { time scan "$W/tx.fa" $flags --gpus 0 -o "$W/one_$mode.tsv"; } 2>&1 ) s"
  fi
  for per in ${PER:-1 2 3}; do
    rm -f "$W/o.tsv"
    wall=$( { time GAMUT_WORKERS_PER_GPU=$per GAMUT_TIMELINE="$OUT/timeline_${TAG:-}${mode}_per$per.jsonl" \
              scan "$W/tx.fa" $flags --gpus "$GPUS" -o "$W/o.tsv"; } 2>&1 )
    echo "$mode, --gpus $GPUS, $per per GPU: $wall s ($(cmp -s "$W/one_$mode.tsv" "$W/o.tsv" && echo identical || echo DIFFERENT))"
  done
done
for k in 1 2 3; do echo "one pair: $( { time python3 -m gamut scan "$W/q1.fa" "$W/r1.fa" --device cuda -o "$W/o1.tsv"; } 2>&1 ) s"; done
