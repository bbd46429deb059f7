"""Write the inputs of the transcriptome scans (issue 45) into a folder, for the shell benchmarks
(``profile_stripes.sh``, ``workers_per_gpu.sh``, ``plain_processes_bound.sh``):

- ``hsa.fa``: the 1,921 human miRNAs; ``tx.fa``: the ``transcriptome`` case of :mod:`scan_e2e`;
- ``warm.fa``: 30 utr references (a warm-up scan); ``q1.fa`` and ``r1.fa``: one miRNA and one site
  of it (a one-pair process: the start-up);
- with ``--stripes N``: ``stripe0.fa`` .. the references cut into N runs of about equal letters, in order.

    python3 bench/transcriptome_inputs.py FOLDER [--stripes N] [--data .data]

A folder that already holds ``tx.fa`` keeps it and the other inputs; the stripes are written each time.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import scan_e2e  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--stripes", type=int, default=0)
    ap.add_argument("--data", type=Path, default=Path(".data"))
    args = ap.parse_args()
    w = args.folder
    w.mkdir(parents=True, exist_ok=True)
    refs = None
    if not (w / "tx.fa").exists():
        mirs = [r for r in scan_e2e.read_fasta(args.data / "mirbase" / "mature.fa.gz") if r[0].startswith("hsa-")]
        scan_e2e.write_fasta(w / "hsa.fa", mirs)
        scan_e2e.write_fasta(w / "q1.fa", mirs[:1])
        scan_e2e.write_fasta(w / "r1.fa", [("site", scan_e2e.complementary_site(mirs[0][1]))])
        scan_e2e.write_fasta(w / "warm.fa", scan_e2e.utr_references(args.data, 30))
        refs = scan_e2e.transcriptome_references(args.data)
        scan_e2e.write_fasta(w / "tx.fa", refs)
    n = args.stripes
    if n:  # (written each time: a folder may hold the stripes of another count)
        refs = refs or scan_e2e.transcriptome_references(args.data)
        cum = np.cumsum([len(s) for _, s in refs])
        cuts = [0] + [int(np.searchsorted(cum, cum[-1] * k / n)) + 1 for k in range(1, n)] + [len(refs)]
        for k in range(n):
            scan_e2e.write_fasta(w / f"stripe{k}.fa", refs[cuts[k]:cuts[k + 1]])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
