#!/usr/bin/env bash
# What N plain one-GPU processes can give at best (issue 45): the transcriptome set's references cut into
# $N stripes of about equal letters (in order), each a separate `gamut scan` process on GPU k (of
# $GPUS, dealt round-robin: "0 1 2 3", or "0 0 1 1" for two per GPU), all started together, nothing
# merged; the wall until the last one ends, beside one process on the whole set and three one-pair
# processes (start-up). Each process' own timeline goes to OUT (when its CUDA context was ready: do
# context starts overlap across processes?). Run from the repository root with the data in .data/.
set -u
OUT=${OUT:-/tmp/ppb}
W=${W:-/tmp/ppb_work}
read -r -a gpus <<< "${GPUS:-0 1 2 3}"
n=${#gpus[@]}
mkdir -p "$OUT" "$W"
python3 bench/transcriptome_inputs.py "$W" --stripes "$n"
FLAGS=${FLAGS:---noenergy --score-threshold 160}
TIMEFORMAT="%R"
scan() { python3 -m gamut scan "$W/hsa.fa" "$@" --device cuda 2>/dev/null; }
scan "$W/r1.fa" $FLAGS -o "$W/warm.tsv"
echo "one process, whole set: $( { time scan "$W/tx.fa" $FLAGS -o "$W/whole.tsv"; } 2>&1 ) s"
wall=$( { time {
  for k in $(seq 0 $((n - 1))); do
    CUDA_VISIBLE_DEVICES=${gpus[$k]} GAMUT_TIMELINE="$OUT/timeline_stripe$k.jsonl" scan "$W/stripe$k.fa" $FLAGS -o "$W/s$k.tsv" &
  done
  wait; }; } 2>&1 )
echo "$n plain processes on GPUs ${gpus[*]}, a stripe each, at once: $wall s"
for k in 1 2 3; do
  echo "one pair: $( { time python3 -m gamut scan "$W/q1.fa" "$W/r1.fa" --device cuda -o "$W/o1.tsv" 2>/dev/null; } 2>&1 ) s"
done
