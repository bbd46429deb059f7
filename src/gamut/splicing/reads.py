"""Reads to exon chains (issue 29): which annotated transcript explains each read, exactly.

Annotated transcripts on one chromosome and strand whose spans overlap form a **locus**; its
candidate exons are the distinct exon intervals of its transcripts (and any evidence exons that
overlap it). A read is placed by an alignment of it to the genome (PSL from BLAT, or PAF from
minimap2, or minimap2's spliced mapping through ``mappy`` when installed: the best one per read,
by matching letters) on the locus it overlaps most, and its Gelfand case is built on the locus'
strand: base = the locus with ``flank`` letters on each side (reverse-complemented for a ``-``
locus, exons mirrored with it), target = the read as the transcript reads (reverse-complemented
when it aligned to the other strand). All cases are solved in batches
(:func:`gamut.splicing.api.splice_many`, CPU or GPU), and each chain is named: the transcript
whose exon chain it equals, else ``novel``; a read without an alignment or a locus is
``unplaced`` (counted, never dropped).
"""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from gamut.errors import InputError
from gamut.io.annotation import Annotation
from gamut.splicing.model import SpliceCase

_COMPLEMENT = str.maketrans("ACGTNacgtn", "TGCANtgcan")


def reverse_complement(sequence: str) -> str:
    return sequence.translate(_COMPLEMENT)[::-1]


@dataclass(frozen=True)
class Locus:
    """Overlapping transcripts of one chromosome and strand: their span (0-based half-open), the
    distinct exons (rows ``(start, end)``, ascending) and each transcript's exons as indices
    into them (ascending)."""

    name: str
    chrom: str
    strand: int  # +1 / -1
    start: int
    end: int
    exons: np.ndarray
    transcripts: dict[str, tuple[int, ...]]


def annotation_loci(annotation: Annotation, evidence: list[tuple[str, int, int]] = ()) -> list[Locus]:
    """The loci of an annotation, by chromosome, strand and position; ``evidence`` exons
    ``(chrom, start, end)`` (another annotation's, other reads' alignment blocks) that overlap a
    locus (either strand) join its candidates, and its span grows to hold them."""
    groups: dict[tuple[str, int], list[tuple[int, int, str, list[tuple[int, int]]]]] = defaultdict(list)
    for k, name in enumerate(annotation.names):
        a, b = annotation.exon_off[k], annotation.exon_off[k + 1]
        exons = sorted(zip(annotation.exon_start[a:b].tolist(), annotation.exon_end[a:b].tolist()))
        key = (annotation.chroms[annotation.chrom[k]], int(annotation.strand[k]))
        groups[key].append((exons[0][0], exons[-1][1], name, exons))
    by_chrom: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for chrom, a, b in evidence:
        if b > a >= 0:
            by_chrom[chrom].append((int(a), int(b)))
    loci = []
    for (chrom, strand), items in sorted(groups.items()):
        items.sort()
        cluster: list = []
        reach = 0  # the cluster's end so far
        for item in items + [None]:
            if cluster and (item is None or item[0] >= reach):
                loci.append(_locus(chrom, strand, cluster, by_chrom.get(chrom, ())))
                cluster = []
            if item is not None:
                reach = max(reach, item[1]) if cluster else item[1]
                cluster.append(item)
    return loci


def _locus(chrom: str, strand: int, cluster: list, evidence: list[tuple[int, int]]) -> Locus:
    start, end = min(c[0] for c in cluster), max(c[1] for c in cluster)
    extra = {(a, b) for a, b in evidence if a < end and b > start}
    distinct = sorted({e for *_, exons in cluster for e in exons} | extra)
    index = {e: i for i, e in enumerate(distinct)}
    start, end = min(start, distinct[0][0]), max(end, max(b for _, b in distinct))
    transcripts = {name: tuple(index[e] for e in exons) for _, _, name, exons in cluster}
    sign = "+" if strand > 0 else "-"
    return Locus(f"{chrom}:{start + 1}-{end}{sign}", chrom, strand, start, end,
                 np.asarray(distinct, np.int64).reshape(-1, 2), transcripts)


@dataclass(frozen=True)
class ReadPlacement:
    """A read's best alignment to the genome: chromosome, the strand the read aligned on (+1: as
    given, -1: its reverse complement), 0-based half-open span, matching letters."""

    chrom: str
    strand: int
    start: int
    end: int
    matches: int


def alignment_records(path: str | os.PathLike) -> Iterator[tuple[str, ReadPlacement, list[tuple[int, int]]]]:
    """``(read id, placement, genome blocks)`` of every line of a PSL (``.psl``, BLAT; blocks from
    ``blockSizes``/``tStarts``) or PAF (``.paf``, minimap2; no blocks) file, gzip allowed; a
    malformed line is an :class:`InputError` naming the file and line."""
    from gamut.io.fasta import text_lines, uncompressed_name

    path = os.fspath(path)
    name = uncompressed_name(path)
    psl = name.endswith(".psl")
    if not psl and not name.endswith(".paf"):
        raise InputError(f"{path}: read alignments must be PSL (.psl) or PAF (.paf), gzip allowed")
    for number, line in text_lines(path):
        fields = line.split("\t")
        if not line.strip() or (psl and (len(fields) < 21 or not fields[0].strip().isdigit())):
            continue  # blank, or psLayout header lines
        try:
            if psl:
                read, placed = fields[9], ReadPlacement(fields[13], 1 if fields[8][-1] == "+" else -1,
                                                        int(fields[15]), int(fields[16]), int(fields[0]))
                sizes = [int(x) for x in fields[18].rstrip(",").split(",")]
                starts = [int(x) for x in fields[20].rstrip(",").split(",")]
                blocks = [(t, t + n) for t, n in zip(starts, sizes)]
            else:
                read, placed = fields[0], ReadPlacement(fields[5], 1 if fields[4] == "+" else -1,
                                                        int(fields[7]), int(fields[8]), int(fields[9]))
                blocks = []
        except (IndexError, ValueError):
            raise InputError(f"{path}: line {number}: not a {'PSL' if psl else 'PAF'} line") from None
        if placed.start < 0 or placed.end < placed.start:
            raise InputError(f"{path}: line {number}: alignment span {placed.start}-{placed.end} is not valid")
        yield read, placed, blocks


def read_placements(path: str | os.PathLike) -> dict[str, ReadPlacement]:
    """Each read's best alignment (most matching letters) in a PSL or PAF file (:func:`alignment_records`)."""
    best: dict[str, ReadPlacement] = {}
    for read, placed, _ in alignment_records(path):
        if read not in best or placed.matches > best[read].matches:
            best[read] = placed
    return best


def evidence_exons(path: str | os.PathLike) -> list[tuple[str, int, int]]:
    """Candidate exons ``(chrom, start, end)`` from a PSL file (every alignment's blocks) or an
    annotation (GTF, GFF3, BED12: every transcript's exons), gzip allowed."""
    from gamut.io.annotation import read_annotation
    from gamut.io.fasta import uncompressed_name

    if uncompressed_name(path).endswith(".psl"):
        return [(placed.chrom, a, b) for _, placed, blocks in alignment_records(path) for a, b in blocks]
    annotation = read_annotation(path)
    return [(annotation.chroms[annotation.chrom[k]], int(a), int(b)) for k in range(len(annotation))
            for a, b in zip(annotation.exon_start[annotation.exon_off[k]:annotation.exon_off[k + 1]],
                            annotation.exon_end[annotation.exon_off[k]:annotation.exon_off[k + 1]])]


def mapped_placements(genome_path: str | os.PathLike, reads: list[tuple[str, str]],
                      threads: int | None = None) -> dict[str, ReadPlacement]:
    """Each read's best placement by minimap2's spliced mapping (its Python binding ``mappy``,
    preset ``splice``): the hit with the most matching letters. Without ``mappy`` installed, a
    :class:`~gamut.errors.UsageError` says how to get it or to pass alignments instead."""
    from gamut.errors import UsageError

    try:
        import mappy
    except ImportError:
        raise UsageError("placing reads needs their alignments (--alignments: PSL from BLAT or PAF from "
                         "minimap2) or minimap2's Python binding: pip install mappy") from None
    aligner = mappy.Aligner(os.fspath(genome_path), preset="splice", n_threads=threads or os.cpu_count() or 1)
    if not aligner:
        raise InputError(f"{os.fspath(genome_path)}: minimap2 could not read or index the genome")
    best: dict[str, ReadPlacement] = {}
    buffer = mappy.ThreadBuffer()
    for read_id, sequence in reads:
        for hit in aligner.map(sequence, buf=buffer):
            placed = ReadPlacement(hit.ctg, hit.strand, hit.r_st, hit.r_en, hit.mlen)
            if read_id not in best or placed.matches > best[read_id].matches:
                best[read_id] = placed
    return best


@dataclass(frozen=True)
class ReadChain:
    """A read's assignment: its locus (None: unplaced), the locus' strand, the chain as genome
    exons (ascending), the transcript it equals (``novel``, ``unplaced``), the chain's score, the
    alignment's identity (matches over aligned columns), the junctions (genome ``end-start``
    intron bounds) that no transcript of the locus has, and the transcripts it is part of."""

    read_id: str
    locus: str | None
    strand: int
    exons: tuple[tuple[int, int], ...]
    transcript: str
    score: int | None
    identity: float | None
    novel_junctions: tuple[tuple[int, int], ...] = ()
    #: Transcripts whose exon chains hold the chain as a run of consecutive exons (a partial read:
    #: an EST covering part of a transcript), the equal one included.
    compatible: tuple[str, ...] = ()


class LocusIndex:
    """The loci of each chromosome by start, with the running maximum of their ends, to find the
    loci a span overlaps in O(log n + hits)."""

    def __init__(self, loci: list[Locus]) -> None:
        by_chrom: dict[str, list[Locus]] = defaultdict(list)
        for locus in loci:
            by_chrom[locus.chrom].append(locus)
        self.loci = {c: sorted(items, key=lambda x: (x.start, x.end)) for c, items in by_chrom.items()}
        self.starts = {c: np.array([x.start for x in items], np.int64) for c, items in self.loci.items()}
        self.reach = {c: np.maximum.accumulate(np.array([x.end for x in items], np.int64))
                      for c, items in self.loci.items()}

    def best(self, chrom: str, start: int, end: int) -> Locus | None:
        """The locus ``start..end`` overlaps most (the first of equals by start), or None."""
        if chrom not in self.loci:
            return None
        items, reach = self.loci[chrom], self.reach[chrom]
        best, most = None, 0
        k = int(np.searchsorted(self.starts[chrom], end)) - 1  # the last locus starting before the span ends
        while k >= 0 and reach[k] > start:
            overlap = min(items[k].end, end) - max(items[k].start, start)
            if overlap > most or (overlap == most and overlap > 0):
                best, most = items[k], overlap
            k -= 1
        return best


def read_cases(genome: dict[str, str], loci: list[Locus], reads: list[tuple[str, str]],
               placements: dict[str, ReadPlacement], flank: int) -> tuple[list[SpliceCase], list[tuple]]:
    """The Gelfand case of each placed read (its exons are the locus' rows, mirrored on a ``-``
    locus), and per read its ``(locus, base_start)`` or None when unplaced (in the order of
    ``reads``). A locus' base and exons are prepared once and shared by its reads' cases."""
    from gamut.splicing.model import encode

    index = LocusIndex(loci)
    prepared: dict[str, tuple[SpliceCase, int]] = {}  # locus -> its case without a target, genome start
    cases, where = [], []
    for read_id, sequence in reads:
        placed = placements.get(read_id)
        locus = None if placed is None else index.best(placed.chrom, placed.start, placed.end)
        if locus is None or locus.chrom not in genome:
            where.append(None)
            continue
        if locus.name not in prepared:
            prepared[locus.name] = _locus_case(genome[locus.chrom], locus, flank)
        shared, lo = prepared[locus.name]
        # The read as the transcript reads it: as given when it aligned on the transcript's strand.
        target = encode(sequence if placed.strand == locus.strand else reverse_complement(sequence),
                        f"read {read_id}")
        if target.size == 0:
            raise InputError(f"read {read_id}: empty sequence")
        cases.append(replace(shared, target=target, name=read_id))
        where.append((locus, lo))
    return cases, where


def _locus_case(chrom: str, locus: Locus, flank: int) -> tuple[SpliceCase, int]:
    """A locus' case, checked, with a placeholder target (base: symbol codes, reverse-complemented
    on a ``-`` locus with its exons mirrored; the exons keep the locus' row order), and its genome
    start."""
    from gamut.splicing.model import make_case

    lo, hi = max(0, locus.start - flank), min(len(chrom), locus.end + flank)
    base, exons = chrom[lo:hi], locus.exons - lo
    if locus.strand < 0:
        base, exons = reverse_complement(base), len(base) - exons[:, ::-1]
    return make_case(base, np.ascontiguousarray(exons, np.int64), "N", name=f"locus {locus.name}"), lo


def _compatible(locus: Locus, chain: tuple[int, ...]) -> tuple[str, ...]:
    """The locus' transcripts whose exons hold ``chain`` as consecutive exons."""
    n = len(chain)
    return tuple(name for name, exons in locus.transcripts.items()
                 if n and any(exons[k:k + n] == chain for k in range(len(exons) - n + 1)))


def _name_chain(locus: Locus, chain: tuple[int, ...]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The transcript whose exons are ``chain`` (else ``novel``) and the chain's junctions no
    transcript of the locus has."""
    for name, exons in locus.transcripts.items():
        if exons == chain:
            return name, ()
    known = {(int(locus.exons[a, 1]), int(locus.exons[b, 0]))
             for exons in locus.transcripts.values() for a, b in zip(exons, exons[1:])}
    junctions = [(int(locus.exons[a, 1]), int(locus.exons[b, 0])) for a, b in zip(chain, chain[1:])]
    return "novel", tuple(j for j in junctions if j not in known)


def assign_reads(genome: dict[str, str], annotation: Annotation, reads: list[tuple[str, str]],
                 placements: dict[str, ReadPlacement], *, flank: int = 100, device: str = "auto",
                 threads: int | None = None, progress: Callable[[int], None] | None = None,
                 evidence: list[tuple[str, int, int]] = (), **scores) -> list[ReadChain]:
    """Every read's :class:`ReadChain`, in the order of ``reads`` (see the module); ``evidence``
    adds candidate exons (:func:`annotation_loci`); ``progress`` is called with the number of
    reads done (the unplaced ones first, then each batch solved); ``scores`` are :func:`gamut.splicing.api.splice_many`'s
    ``match``, ``mismatch``, ``gap``, ``matrix``."""
    from gamut.splicing.api import splice_many

    if flank < 0:
        raise InputError(f"flank must be >= 0, got {flank}")
    loci = annotation_loci(annotation, evidence)
    cases, where = read_cases(genome, loci, reads, placements, flank)
    if progress is not None and len(cases) < len(reads):
        progress(len(reads) - len(cases))  # the unplaced ones are done
    results = iter(splice_many(cases, device=device, threads=threads, progress=progress, **scores))
    out = []
    for (read_id, _), placed in zip(reads, where):
        if placed is None:
            out.append(ReadChain(read_id, None, 0, (), "unplaced", None, None))
            continue
        locus = placed[0]
        result = next(results)
        chain = tuple(sorted(result.chain))  # rows of the case's exons are the locus' (mirrored or not)
        transcript, novel = _name_chain(locus, chain)
        aligned = result.alignment
        columns = len(aligned.base)
        identity = aligned.matches / columns if columns else 0.0
        exons = tuple((int(locus.exons[k, 0]), int(locus.exons[k, 1])) for k in chain)
        out.append(ReadChain(read_id, locus.name, locus.strand, exons, transcript, int(result.score),
                             identity, novel, _compatible(locus, chain)))
    return out


def chains_frame(chains: list[ReadChain]):
    """The assignments as a DataFrame: ``read_id locus strand transcript score identity exons
    novel_junctions compatible`` (exons and junctions as ``start-end`` lists, 0-based half-open
    genome; compatible transcripts comma-separated)."""
    import pandas as pd

    def spans(items) -> str:
        return ",".join(f"{a}-{b}" for a, b in items)

    return pd.DataFrame({
        "read_id": [c.read_id for c in chains],
        "locus": [c.locus or "" for c in chains],
        "strand": ["+" if c.strand > 0 else "-" if c.strand < 0 else "" for c in chains],
        "transcript": [c.transcript for c in chains],
        "score": pd.array([c.score for c in chains], dtype="Int64"),
        "identity": [np.nan if c.identity is None else round(c.identity, 4) for c in chains],
        "exons": [spans(c.exons) for c in chains],
        "novel_junctions": [spans(c.novel_junctions) for c in chains],
        "compatible": [",".join(c.compatible) for c in chains],
    })
