#!/usr/bin/env bash
# Issue 45 (session 14): one GPU as one process (`--gpus 0`) against two stripe workers on it (`--gpus
# 0,0`), by size: the transcriptome set's references in COPIES copies (default "1 3 10"; ten is the
# issue's set), fast mode, ROUNDS (default 2) rounds interleaved; outputs compared per size. Where does a
# second process on the GPU start to pay for its start? Run on the GPU machine from the repository root,
# after bench/device_env.sh and bench/tx_setup.sh (sourced by the caller), with .whl and .data carried.
for c in ${COPIES:-1 3 10}; do
  [ -f $W/tx$c.fa ] || python3 -c "
import sys; sys.path.insert(0, 'bench'); import scan_e2e
from pathlib import Path
scan_e2e.write_fasta(Path('$W/tx$c.fa'), scan_e2e.transcriptome_references(Path('.data'), $c))"
  for round in $(seq ${ROUNDS:-2}); do
    for g in 0 0,0; do
      rm -f $W/o.tsv
      s=$(date +%s.%N)
      python3 -m gamut scan $W/hsa.fa $W/tx$c.fa --device cuda --gpus $g $FAST -o $W/o.tsv
      rc=$? e=$(date +%s.%N) same=first
      if [ $g = 0 ] && [ $round = 1 ]; then mv $W/o.tsv $W/split_first_$c.tsv; else cmp -s $W/o.tsv $W/split_first_$c.tsv && same=same || same=DIFFERS; fi
      echo "split copies=$c gpus=$g round=$round rc=$rc wall=$(python3 -c "print(f'{$e-$s:.2f}')") $same" | tee -a $R/runs.txt
    done
  done
done
