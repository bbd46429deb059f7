"""Reads to exon chains on a simulated locus: which isoform explains each read.

    python examples/splice_reads_example.py [plot.png]

Generates a small genome with annotated genes (three isoforms each), draws reads from the
isoforms (1% errors, either orientation) with the placements an aligner would give, assigns every
read (``gamut.splicing.reads.assign_reads``, the same as ``gamut splice --genome ... --reads ...``),
prints how many got the isoform they came from, and plots one locus: its annotated isoforms and,
below, the chains of the reads placed there, coloured by the transcript they were assigned.
"""
from __future__ import annotations

import sys

import numpy as np

from gamut.io.annotation import read_annotation
from gamut.splicing.reads import annotation_loci, assign_reads, read_placements
from gamut.splicing.simulate import simulated_genome, simulated_reads


def main(plot: str | None = None) -> None:
    import os
    import tempfile

    rng = np.random.default_rng(7)
    genome = simulated_genome(rng, genes=4)
    reads, paf = simulated_reads(rng, genome, 60, rate=0.01, indel_share=0.2)
    with tempfile.TemporaryDirectory() as tmp:
        gtf, alignments = os.path.join(tmp, "genes.gtf"), os.path.join(tmp, "reads.paf")
        with open(gtf, "w") as handle:
            handle.write(genome.gtf())
        with open(alignments, "w") as handle:
            handle.write("\n".join(paf) + "\n")
        annotation = read_annotation(gtf)
        chains = assign_reads({"chr1": genome.sequence}, annotation, reads, read_placements(alignments), device="cpu")
    right = sum(c.transcript == c.read_id.split("_", 1)[1] for c in chains)
    print(f"{right} of {len(chains)} reads get the isoform they came from")
    locus = annotation_loci(annotation)[1]
    placed = [c for c in chains if c.locus == locus.name]
    print(f"locus {locus.name}: {len(locus.transcripts)} isoforms, {len(placed)} reads")
    for c in placed[:6]:
        print(f"  {c.read_id:>10}  -> {c.transcript:6}  score {c.score:5}  exons {len(c.exons)}")
    if plot:
        draw(locus, placed, plot)
        print(f"wrote {plot}")


def draw(locus, placed, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted(locus.transcripts)
    colours = {name: plt.cm.tab10(k) for k, name in enumerate(names)}
    colours["novel"] = "black"
    rows = [(name, [tuple(locus.exons[k]) for k in locus.transcripts[name]], colours[name], 0.6) for name in names]
    rows += [(c.read_id, list(c.exons), colours.get(c.transcript, "grey"), 0.35) for c in placed]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.2))
    for y, (label, exons, colour, height) in enumerate(reversed(rows)):
        ax.plot([exons[0][0], exons[-1][1]], [y, y], color=colour, lw=0.8)
        for a, b in exons:
            ax.add_patch(plt.Rectangle((a, y - height / 2), b - a, height, color=colour))
    ax.set_yticks(range(len(rows)), [label for label, *_ in reversed(rows)], fontsize=6)
    ax.axhline(len(placed) - 0.5, color="grey", lw=0.5, ls=":")
    ax.set_xlim(locus.start - 50, locus.end + 50)
    ax.set_xlabel(f"{locus.chrom} position (strand {'+' if locus.strand > 0 else '-'})")
    ax.set_title(f"Locus {locus.name}: annotated isoforms (top) and the reads' exon chains, "
                 "coloured by assigned isoform", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
