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
[ -s "$W/tx.fa" ] || python3 - "$W" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "bench")
import scan_e2e
w, data = Path(sys.argv[1]), Path(".data")
mirs = [r for r in scan_e2e.read_fasta(data / "mirbase" / "mature.fa.gz") if r[0].startswith("hsa-")]
scan_e2e.write_fasta(w / "hsa.fa", mirs)
scan_e2e.write_fasta(w / "q1.fa", mirs[:1])
scan_e2e.write_fasta(w / "r1.fa", [("site", scan_e2e.complementary_site(mirs[0][1]))])
scan_e2e.write_fasta(w / "tx.fa", scan_e2e.transcriptome_references(data))
scan_e2e.write_fasta(w / "warm.fa", scan_e2e.utr_references(data, 30))
PY
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
