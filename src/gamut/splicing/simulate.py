"""Simulated genomes, annotations and reads for reads-to-chains checks (tests, ``bench/splice_reads.py``,
``examples/splice_reads_example.py``): genes on both strands with alternative isoforms (exon
skipping, an alternative last exon), exons down to 3 nt, reads drawn from the transcripts with
substitutions and small indels, given in either orientation, and their PAF placements (as an
aligner would report them: the read's strand on the genome and the transcript's genome span)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gamut.splicing.model import reverse_complement

LETTERS = np.array(list("ACGT"))
_ASCII = np.frombuffer(b"ACGT", np.uint8)
_CODES = np.zeros(256, np.int64)
_CODES[_ASCII] = np.arange(4)


@dataclass(frozen=True)
class SimulatedGenome:
    """One chromosome ``chr1`` and its transcripts: name -> (strand ``+``/``-``, exons ascending)."""

    sequence: str
    transcripts: dict[str, tuple[str, list[tuple[int, int]]]]

    def gtf(self) -> str:
        lines = [f'chr1\tsim\texon\t{a + 1}\t{b}\t.\t{strand}\t.\ttranscript_id "{name}"; gene_id "{name.split(".")[0]}";'
                 for name, (strand, exons) in self.transcripts.items() for a, b in exons]
        return "\n".join(lines) + "\n"

    def transcript_letters(self, name: str) -> str:
        strand, exons = self.transcripts[name]
        text = "".join(self.sequence[a:b] for a, b in exons)
        return text if strand == "+" else reverse_complement(text)


def _random_letters(rng: np.random.Generator, count: int) -> str:
    return _ASCII[rng.integers(0, 4, count)].tobytes().decode("ascii")


def simulated_genome(rng: np.random.Generator, genes: int = 12, exon_length: tuple[int, int] = (40, 200),
                     exons: tuple[int, int] = (3, 9)) -> SimulatedGenome:
    """``genes`` genes (alternating strands) of ``exons`` (low, high exclusive) exons, a fifth of
    them 3-11 nt and the rest in ``exon_length``, each with three isoforms: all but the last exon,
    the same without the second (when it has one), and all but the second to last."""
    pieces, transcripts, pos = [], {}, 0
    for g in range(genes):
        gap = int(rng.integers(300, 800))
        pieces.append(_random_letters(rng, gap))
        pos += gap
        n = int(rng.integers(*exons))
        lengths = np.where(rng.random(n) < 0.2, rng.integers(3, 12, n), rng.integers(*exon_length, n))
        introns = rng.integers(60, 400, n)
        spans, cursor = [], pos
        for k in range(n):
            spans.append((cursor, cursor + int(lengths[k])))
            cursor += int(lengths[k]) + int(introns[k])
        pieces.append(_random_letters(rng, cursor - pos))
        pos = cursor
        strand = "+" if g % 2 == 0 else "-"
        transcripts[f"g{g}.1"] = (strand, spans[:-1])
        if n > 2:
            transcripts[f"g{g}.2"] = (strand, [e for k, e in enumerate(spans[:-1]) if k != 1])
        transcripts[f"g{g}.3"] = (strand, spans[:-2] + [spans[-1]])
    pieces.append(_random_letters(rng, 500))
    return SimulatedGenome("".join(pieces), transcripts)


def mutated(rng: np.random.Generator, sequence: str, rate: float, indel_share: float = 0.0) -> str:
    """``sequence`` (ACGT) with errors at ``rate`` per letter: substitutions, and with ``indel_share``
    that share of them 1-nt insertions (a random letter after it) or deletions instead, half each."""
    codes = _CODES[np.frombuffer(sequence.encode("ascii"), np.uint8)]
    n = codes.size
    error = rng.random(n) < rate
    indel = error & (rng.random(n) < indel_share)
    insert = indel & (rng.random(n) < 0.5)
    substitute = error & ~indel
    codes[substitute] = (codes[substitute] + rng.integers(1, 4, int(substitute.sum()))) % 4
    copies = (~(indel & ~insert)).astype(np.int64) + insert  # deleted: 0, kept: 1, kept + inserted: 2
    out = np.repeat(codes, copies)
    inserted = np.cumsum(copies)[insert] - 1  # the letter after each kept one that gains an insertion
    out[inserted] = rng.integers(0, 4, inserted.size)
    return _ASCII[out].tobytes().decode("ascii")


def simulated_reads(rng: np.random.Generator, genome: SimulatedGenome, count: int, rate: float = 0.01,
                    indel_share: float = 0.0, lengths: tuple[int, int] | None = None
                    ) -> tuple[list[tuple[str, str]], list[str]]:
    """``count`` reads ``r<k>_<transcript>`` (transcripts in turn, only those of ``lengths`` (low,
    high inclusive) letters when given; half of the reads reverse-complemented) and their PAF lines."""
    letters = {name: genome.transcript_letters(name) for name in genome.transcripts}
    names = [n for n, text in letters.items() if lengths is None or lengths[0] <= len(text) <= lengths[1]]
    if not names:
        raise ValueError(f"no simulated transcript has {lengths[0]}-{lengths[1]} letters")
    reads, paf = [], []
    for k in range(count):
        name = names[k % len(names)]
        strand, exons = genome.transcripts[name]
        read = mutated(rng, letters[name], rate, indel_share)
        flipped = bool(rng.random() < 0.5)
        if flipped:
            read = reverse_complement(read)
        on_plus = (strand == "+") != flipped
        read_id = f"r{k}_{name}"
        reads.append((read_id, read))
        paf.append(f"{read_id}\t{len(read)}\t0\t{len(read)}\t{'+' if on_plus else '-'}\tchr1\t{len(genome.sequence)}\t"
                   f"{exons[0][0]}\t{exons[-1][1]}\t{len(read)}\t{len(read)}\t60")
    return reads, paf
