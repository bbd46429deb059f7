#!/usr/bin/env bash
# Whole gamut miranda processes with one worker (--gpus 0) and two workers sharing GPU 0 (--gpus 0,0),
# CLIP (1,921 x 20,000, -quiet) and SARS-CoV-2 cases; run from the repository root with the data in .data/
# (mirbase/mature.fa.gz, clip/ago_clip_fragments.fa.gz, rna/sars-cov-2_batch.fasta). Needs a GPU.
set -e
python3 - <<'PY'
import sys, argparse
sys.path.insert(0, "bench")
from pathlib import Path
import scan_e2e
a = argparse.Namespace(data=Path(".data"), mirnas=1921, cases=["clip", "sars"], big=False, clip=20000, utr_refs=6150, t2_length=20000)
print(scan_e2e.workloads(a, Path("/tmp")))
PY
for g in 0 0,0 0; do
  for case in clip sars; do
    r=/tmp/clip.fa; f=-quiet; [ $case = sars ] && r=.data/rna/sars-cov-2_batch.fasta && f=
    python3 -m gamut miranda /tmp/hsa.fa $r $f --device cuda --gpus $g -out /tmp/o_${case}_$g.txt > /dev/null 2>&1
    /usr/bin/time -f "$case --gpus $g: %e s, %M KB" python3 -m gamut miranda /tmp/hsa.fa $r $f --device cuda --gpus $g -out /tmp/o_${case}_$g.txt 2>&1 | grep -v "^gamut:"
  done
done
cmp /tmp/o_clip_0.txt /tmp/o_clip_0,0.txt && cmp /tmp/o_sars_0.txt /tmp/o_sars_0,0.txt && echo "outputs identical"
