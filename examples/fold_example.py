"""Fold the miRNA precursors in fold_hairpins.fa and draw one as an arc diagram.

    python examples/fold_example.py            # writes fold_let-7a-1.png here
    gamut fold examples/fold_hairpins.fa --min-loop 3 --format tsv     # the same from the shell
"""
from pathlib import Path

import gamut
from gamut.folding.plot import arc_diagram
from gamut.io import read_fasta

here = Path(__file__).parent
for record in read_fasta(here / "fold_hairpins.fa"):
    result = gamut.fold(record.sequence, min_loop=3, name=record.name)  # device="cuda" for the GPU engine
    print(f"{record.name:14s} {len(result):3d} nt {result.pairs:3d} pairs  {result.structure}")
    if record.name == "hsa-let-7a-1":
        arc_diagram(result, "fold_let-7a-1.png")
