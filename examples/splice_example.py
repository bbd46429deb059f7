"""Spliced alignment example: generate a small gene with decoy exons, align a mutated cDNA to it.

    python examples/splice_example.py            # Python API
    python examples/splice_example.py --files    # also write FASTA/BED and print the CLI to run
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import gamut
from gamut.splicing.model import decode
from gamut.splicing.report import format_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test suite's case generator
from splice_generate import generate_base, make_target  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", action="store_true", help="write splice_base.fa, splice_exons.bed, splice_target.fa")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    base, exons, true_exons = generate_base(rng, base_length=6000, n_exons=40, gene_length=400, exon_mean=80)
    target = make_target(rng, base, exons, true_exons, substitution=0.08, indel=0.005)
    result = gamut.splice(decode(base), [tuple(map(int, e)) for e in exons], decode(target), device=args.device)
    print(format_report("example_base", result, alignment=True))
    print("true exons:", sorted(int(k) for k in true_exons), " chosen:", sorted(result.chain))
    if args.files:
        with open("splice_base.fa", "w") as handle:
            handle.write(f">example_base\n{decode(base)}\n")
        with open("splice_exons.bed", "w") as handle:
            handle.writelines(f"example_base\t{s}\t{e}\tcand{i}\n" for i, (s, e) in enumerate(exons))
        with open("splice_target.fa", "w") as handle:
            handle.write(f">example_cdna\n{decode(target)}\n")
        print("gamut splice splice_base.fa splice_exons.bed splice_target.fa --gff3 chain.gff3 --table chain.tsv")


if __name__ == "__main__":
    main()
