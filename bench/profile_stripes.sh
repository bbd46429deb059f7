#!/usr/bin/env bash
# Where a several-GPU scan spends its time (issue 45): the transcriptome set, --noenergy -sc 160, whole
# gamut scan processes on one GPU and on --gpus 0,1, each with GAMUT_TIMELINE spans, then again under
# py-spy (every process, sampled, --gil: the threads holding the interpreter lock; raw collapsed
# stacks; PYSPY_ALL=1: every running thread too), PER_GPU="1 3": --gpus 0,1 with that many workers per GPU, then two plain one-GPU processes on the two halves of the references at once (the bound).
# Run from the repository root with the data in .data/ and py-spy on PATH; OUT: a folder for the results.
set -u
OUT=${OUT:-/tmp/profile_out}
W=${W:-/tmp/pw}
mkdir -p "$OUT" "$W"
python3 bench/transcriptome_inputs.py "$W" --stripes 2
FAST="--noenergy --score-threshold 160 --device cuda"
scan() { python3 -m gamut scan "$W/hsa.fa" "$@"; }
for g in 0 0,1; do scan "$W/warm.fa" $FAST --gpus $g -o "$W/warm.tsv"; done
TIMEFORMAT="wall %R s"
t() { time "$@"; }
for g in ${GPU_SETS:-0 0,1}; do
  tag=${g//,/-}
  echo "== gpus $g"; t scan "$W/tx.fa" $FAST --gpus $g -o "$W/o_$tag.tsv"
  echo "== gpus $g timeline"; GAMUT_TIMELINE="$OUT/timeline_$tag.jsonl" t scan "$W/tx.fa" $FAST --gpus $g -o "$W/o_$tag.tsv"
  echo "== gpus $g py-spy --gil"
  py-spy record --subprocesses --gil --threads --nonblocking --format raw -r 200 -o "$OUT/pyspy_gil_$tag.txt" -- \
    python3 -m gamut scan "$W/hsa.fa" "$W/tx.fa" $FAST --gpus $g -o "$W/o_$tag.tsv" 2>&1 | tail -3
  if [ -n "${PYSPY_ALL:-}" ]; then
    echo "== gpus $g py-spy all"
    py-spy record --subprocesses --threads --nonblocking --format raw -r 200 -o "$OUT/pyspy_all_$tag.txt" -- \
      python3 -m gamut scan "$W/hsa.fa" "$W/tx.fa" $FAST --gpus $g -o "$W/o_$tag.tsv" 2>&1 | tail -3
  fi
done
for per in ${PER_GPU:-}; do
  echo "== gpus 0,1, $per workers per GPU"; GAMUT_WORKERS_PER_GPU=$per t scan "$W/tx.fa" $FAST --gpus 0,1 -o "$W/o_per$per.tsv"
  cmp "$W/o_0.tsv" "$W/o_per$per.tsv" || echo "OUTPUT DIFFERS"
done
echo "== halves at once, one plain process per GPU"
time { CUDA_VISIBLE_DEVICES=0 scan "$W/stripe0.fa" $FAST -o "$W/ha.tsv" & CUDA_VISIBLE_DEVICES=1 scan "$W/stripe1.fa" $FAST -o "$W/hb.tsv" & wait; }
echo "== one pair (start-up)"; t python3 -m gamut scan "$W/q1.fa" "$W/r1.fa" --device cuda -o "$W/o1.tsv"
cmp "$W/o_0.tsv" "$W/o_0-1.tsv" && echo "outputs identical"
