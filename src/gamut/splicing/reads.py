"""Reads to exon chains (issue 29): which annotated transcript explains each read, exactly.

Annotated transcripts on one chromosome and strand whose spans overlap form a **locus**; its
candidate exons are the distinct exon intervals of its transcripts (and any evidence exons that
overlap it). A read is placed by an alignment of it to the genome (PSL from BLAT, or PAF or SAM
from minimap2, or minimap2's spliced mapping through ``mappy`` on a pool of threads,
:mod:`gamut.splicing.read_mapping`: the best one per read, by matching letters) on the locus it
overlaps most, and its Gelfand case is built on the locus' strand: base = the locus with
``flank`` letters on each side (reverse-complemented for a ``-`` locus, exons mirrored with it),
target = the read as the transcript reads (reverse-complemented when it aligned to the other
strand). All cases are solved in batches
(:mod:`gamut.splicing.read_batch`, CPU or GPU), and each chain is named: the transcript
whose exon chain it equals, else ``novel``; a read without an alignment or a locus is
``unplaced`` (counted, never dropped).
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from gamut.errors import InputError
from gamut.io.annotation import Annotation
from gamut.splicing.placements import ReadPlacement
from gamut.splicing.model import reverse_complement  # noqa: F401  (part of this module's API)

if TYPE_CHECKING:
    from gamut.splicing.read_batch import ReadSpans


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


#: Read-alignment formats by file suffix (a compression suffix ignored).
ALIGNMENT_FORMATS = {".psl": "PSL", ".paf": "PAF", ".sam": "SAM"}


def alignment_format(path: str | os.PathLike) -> str | None:
    """``PSL``, ``PAF`` or ``SAM`` by the file's suffix (:data:`ALIGNMENT_FORMATS`), else None."""
    from gamut.io.fasta import uncompressed_name

    name = uncompressed_name(path)
    return next((fmt for suffix, fmt in ALIGNMENT_FORMATS.items() if name.endswith(suffix)), None)


def alignment_records(path: str | os.PathLike) -> Iterator[tuple[str, ReadPlacement, list[tuple[int, int]]]]:
    """``(read id, placement, genome blocks)`` of every alignment in a PSL (``.psl``, BLAT; blocks
    from ``blockSizes``/``tStarts``), PAF (``.paf``, minimap2; no blocks) or SAM (``.sam``:
    minimap2 ``-a``, STAR, HISAT2; blocks and span from the CIGAR, matching letters = aligned
    columns less the mismatches that ``NM`` counts; unmapped records skipped) file, gzip allowed;
    a malformed line is an :class:`InputError` naming the file and line."""
    from gamut.io.fasta import text_lines

    path = os.fspath(path)
    fmt = alignment_format(path)
    if fmt is None:
        raise InputError(f"{path}: read alignments must be PSL (.psl), PAF (.paf) or SAM (.sam), gzip allowed")
    for number, line in text_lines(path):
        fields = line.split("\t", {"PSL": 21, "PAF": 12}.get(fmt, -1))
        if not line.strip() or (fmt == "PSL" and (len(fields) < 21 or not fields[0].strip().isdigit())) or (
                fmt == "SAM" and line.startswith("@")):
            continue  # blank, psLayout header or SAM header lines
        try:
            if fmt == "PSL":
                read, placed = fields[9], ReadPlacement(fields[13], 1 if fields[8][-1] == "+" else -1,
                                                        int(fields[15]), int(fields[16]), int(fields[0]))
                sizes = [int(x) for x in fields[18].rstrip(",").split(",")]
                starts = [int(x) for x in fields[20].rstrip(",").split(",")]
                blocks = [(t, t + n) for t, n in zip(starts, sizes)]
            elif fmt == "PAF":
                read, placed = fields[0], ReadPlacement(fields[5], 1 if fields[4] == "+" else -1,
                                                        int(fields[7]), int(fields[8]), int(fields[9]))
                blocks = []
            else:
                flag = int(fields[1])
                if flag & 4 or fields[2] == "*" or fields[5] == "*":
                    continue  # unmapped
                read, (placed, blocks) = fields[0], _sam_alignment(fields, flag)
        except (IndexError, ValueError):
            raise InputError(f"{path}: line {number}: not a {fmt} line") from None
        if placed.start < 0 or placed.end < placed.start:
            raise InputError(f"{path}: line {number}: alignment span {placed.start}-{placed.end} is not valid")
        yield read, placed, blocks


_CIGAR_RUN = re.compile(r"(\d+)([MIDNSHP=X])")
_CIGAR = re.compile(r"(?:\d+[MIDNSHP=X])+")


def _sam_alignment(fields: list[str], flag: int) -> tuple[ReadPlacement, list[tuple[int, int]]]:
    """A mapped SAM record's placement and genome blocks (the CIGAR's runs on the genome between
    introns, ``N``); a CIGAR that does not parse whole is a ValueError."""
    cigar = fields[5]
    if not _CIGAR.fullmatch(cigar):
        raise ValueError(cigar)
    runs = [(int(n), op) for n, op in _CIGAR_RUN.findall(cigar)]
    start = int(fields[3]) - 1
    g, blocks, aligned, indels, differ = start, [], 0, 0, 0
    for n, op in runs:
        if op in "M=XD":
            if blocks and blocks[-1][1] == g:
                blocks[-1] = (blocks[-1][0], g + n)
            else:
                blocks.append((g, g + n))
        if op in "M=XDN":
            g += n
        aligned += n if op in "M=X" else 0
        indels += n if op in "ID" else 0
        differ += n if op == "X" else 0
    tags = {f[:2]: f[5:] for f in fields[11:] if len(f) > 5 and f[2:5] == ":i:"}
    mismatches = int(tags["NM"]) - indels if "NM" in tags else differ
    return ReadPlacement(fields[2], -1 if flag & 16 else 1, start, g, aligned - mismatches), blocks


def _best_placements(placements: Iterable[tuple[str, ReadPlacement]]) -> dict[str, ReadPlacement]:
    """Each read's placement with the most matching letters (the first of equals)."""
    best: dict[str, ReadPlacement] = {}
    for read, placed in placements:
        if read not in best or placed.matches > best[read].matches:
            best[read] = placed
    return best


def read_placements(path: str | os.PathLike) -> dict[str, ReadPlacement]:
    """Each read's best alignment (most matching letters) in a PSL, PAF or SAM file (:func:`alignment_records`)."""
    return _best_placements((read, placed) for read, placed, _ in alignment_records(path))


def evidence_exons(path: str | os.PathLike) -> list[tuple[str, int, int]]:
    """Candidate exons ``(chrom, start, end)`` from a PSL or SAM file (every alignment's blocks) or
    an annotation (GTF, GFF3, BED12: every transcript's exons), gzip allowed."""
    from gamut.io.annotation import read_annotation

    if alignment_format(path) in ("PSL", "SAM"):
        return [(placed.chrom, a, b) for _, placed, blocks in alignment_records(path) for a, b in blocks]
    annotation = read_annotation(path)
    return [(annotation.chroms[annotation.chrom[k]], int(a), int(b)) for k in range(len(annotation))
            for a, b in zip(annotation.exon_start[annotation.exon_off[k]:annotation.exon_off[k + 1]],
                            annotation.exon_end[annotation.exon_off[k]:annotation.exon_off[k + 1]])]


class ReadChain(NamedTuple):
    """A read's assignment: its locus (None: unplaced), the locus' strand, the chain as genome
    exons (ascending), the transcript it equals (``novel``, ``unplaced``), the chain's score, the
    alignment's identity (matches over aligned columns), the junctions (genome ``end-start``
    intron bounds) that no transcript of the locus has, the transcripts it is part of, the chain's
    exons as 1-based numbers of the locus' distinct exons (by genome position) and the read's
    alignment as a spliced CIGAR on the genome's forward strand (M, I, D, N)."""

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
    exon_ids: tuple[int, ...] = ()
    cigar: str = ""


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


class Placer(Protocol):
    """What places reads as they come (:class:`gamut.splicing.read_mapping.ReadMapper`)."""

    def placed_batches(self, batches: Iterable[list[tuple[str, str]]]) -> Iterator[tuple[list, ReadSpans]]:
        """Each batch of reads with where its reads aligned, in the order of ``batches``."""


#: Placed reads per engine call: GPU launches of many loci, progress steps on the CPU.
GPU_READS_PER_CALL = 8192
CPU_READS_PER_CALL = 256


def assign_reads(genome: dict[str, str], annotation: Annotation, reads: Iterable[tuple[str, str]],
                 placements: Mapping[str, ReadPlacement] | Placer, *, flank: int = 100, device: str = "auto",
                 threads: int | None = None, progress: Callable[[int], None] | None = None,
                 evidence: list[tuple[str, int, int]] = (), engine: str | None = None,
                 batch_size: int | None = None, timing=None, **scores) -> list[ReadChain]:
    """Every read's :class:`ReadChain`, in the order of ``reads`` (see the module); ``placements``:
    each read's best alignment by read id (:func:`read_placements`), or a :class:`Placer` that
    places the reads batch by batch, ahead of the solver; ``evidence``
    adds candidate exons (:func:`annotation_loci`); ``progress`` is called with the number of
    reads done after each batch; ``scores`` are :class:`gamut.splicing.model.ScoreParams`'
    ``match``, ``mismatch``, ``gap``, ``matrix``; ``timing``: a
    :class:`gamut.splicing.gpu.GpuTiming` to add the device times to.

    ``reads`` (any iterable: a file's records are read as they are needed) go ``batch_size`` at a
    time (default :data:`GPU_READS_PER_CALL` on the GPU, :data:`CPU_READS_PER_CALL` on CPUs): the
    placed ones of a batch form one :class:`~gamut.splicing.batch.CaseBatch`
    (:func:`gamut.splicing.read_batch.read_batch`), solved on a thread of its own while the next
    batch is read, placed (by a :class:`Placer`) and prepared and the last one is checked
    (:func:`gamut.splicing.result.check_tracebacks`) and named (once per locus and chain)."""
    from concurrent.futures import ThreadPoolExecutor

    from gamut.splicing.engines import ENGINES, choose_engine
    from gamut.splicing.model import ScoreParams
    from gamut.splicing.read_batch import LocusTable, ReadSpans, read_batch

    if flank < 0:
        raise InputError(f"flank must be >= 0, got {flank}")
    params = ScoreParams(**scores)
    solver = ENGINES[choose_engine(device, engine)]
    table = LocusTable(annotation_loci(annotation, evidence), genome)
    size = batch_size or (GPU_READS_PER_CALL if solver.device == "cuda" else CPU_READS_PER_CALL)
    names = _ChainNames(table)
    cases: dict = {}
    out: list[ReadChain] = []

    def solve(placed):
        return placed, solver.tracebacks(placed.batch, params, threads, timing)

    def collect(pending) -> None:
        placed, tb = pending.result()
        out.extend(names.collect(placed, tb, solver, params))
        if progress is not None:
            progress(len(placed.names))

    if isinstance(placements, Mapping):
        batches = ((chunk, ReadSpans.of(placements, [name for name, _ in chunk])) for chunk in _chunks(reads, size))
    else:
        batches = placements.placed_batches(_chunks(reads, size))
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, 1e-4))  # the solver thread gets the GIL back promptly between its steps
    try:
        with ThreadPoolExecutor(1) as ahead, contextlib.closing(batches):  # closed: a placer's pool stops
            pending = None
            for chunk, spans in batches:  # read, placed and encoded while the last chunk is solved
                placed = read_batch(genome, table, chunk, spans, flank, cases)
                placed.batch.check_score_range(params.max_abs)
                submitted = ahead.submit(solve, placed)
                if pending is not None:
                    collect(pending)
                pending = submitted
            if pending is not None:
                collect(pending)
    finally:
        sys.setswitchinterval(switch)
    return out


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    """``items`` in lists of ``size`` (the last may be shorter)."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


class _ChainNames:
    """Solved batches of reads (:class:`~gamut.splicing.read_batch.ReadBatch`) as
    :class:`ReadChain` objects; the naming of a chain (transcript, exons, novel junctions,
    compatible transcripts) is made once per locus and chain."""

    def __init__(self, table) -> None:
        self.loci = table.loci
        self.minus = table.strand < 0
        self.named: dict[tuple[int, tuple[int, ...]], tuple] = {}

    def name(self, k: int, chain: tuple[int, ...]) -> tuple:
        key = (k, chain)
        found = self.named.get(key)
        if found is None:
            locus = self.loci[k]
            transcript, novel = _name_chain(locus, chain)
            exons = tuple((int(locus.exons[x, 0]), int(locus.exons[x, 1])) for x in chain)
            found = self.named[key] = (locus.name, locus.strand, exons, transcript, novel,
                                       _compatible(locus, chain), tuple(x + 1 for x in chain))
        return found

    def collect(self, placed, tb, solver, params) -> list[ReadChain]:
        """The chains of the reads of ``placed`` (its cases solved as ``tb``), checked."""
        from gamut.splicing.result import chain_inputs, check_tracebacks

        part = placed.batch
        reads = np.flatnonzero(placed.case >= 0)  # the read of each case
        checked = check_tracebacks(part, tb, params.matrix, params.gap, solver.inconsistent)
        score = tb.score.tolist()
        identity = (checked.matches / np.maximum(np.diff(tb.ops_off), 1)).tolist()
        cigar = checked.cigars(self.minus[placed.locus[reads]])
        rows, owner = chain_inputs(part, tb)  # the cases' input indices: locus rows
        rows = rows[np.lexsort((rows, owner))].tolist()
        bounds = tb.chain_off.tolist()
        out = [ReadChain(name, None, 0, (), "unplaced", None, None) for name in placed.names]
        for c, (r, k) in enumerate(zip(reads.tolist(), placed.locus[reads].tolist())):
            locus, strand, exons, transcript, novel, compatible, ids = self.name(k, tuple(rows[bounds[c]:bounds[c + 1]]))
            out[r] = ReadChain(out[r].read_id, locus, strand, exons, transcript, score[c], identity[c], novel,
                               compatible, ids, cigar[c])
        return out


def _chain_texts(chains: list[ReadChain]) -> list[tuple[str, str, str, str]]:
    """Per read, its exons (``start-end`` list, 0-based half-open genome), exon ids, novel
    junctions and compatible transcripts as text (comma-separated), formatted once per locus and chain."""
    texts: dict[tuple, tuple[str, str, str, str]] = {}

    def spans(items) -> str:
        return ",".join(f"{a}-{b}" for a, b in items)

    out = []
    for c in chains:
        key = (c.locus, c.exons)
        found = texts.get(key)
        if found is None:
            found = texts[key] = (spans(c.exons), ",".join(map(str, c.exon_ids)), spans(c.novel_junctions),
                                  ",".join(c.compatible))
        out.append(found)
    return out


#: The columns of the read-chain table, in order.
CHAIN_COLUMNS = ("read_id", "locus", "strand", "transcript", "score", "identity", "exons", "exon_ids",
                 "novel_junctions", "compatible", "cigar")


def chain_columns(chains: list[ReadChain]) -> dict[str, list]:
    """The assignments as columns (:data:`CHAIN_COLUMNS`): lists of :func:`_chain_texts`, score
    None and identity NaN for an unplaced read, identity rounded to 4 decimals."""
    texts = _chain_texts(chains)
    return {
        "read_id": [c.read_id for c in chains],
        "locus": [c.locus or "" for c in chains],
        "strand": [_STRAND[c.strand] for c in chains],
        "transcript": [c.transcript for c in chains],
        "score": [c.score for c in chains],
        "identity": [np.nan if c.identity is None else round(c.identity, 4) for c in chains],
        "exons": [t[0] for t in texts],
        "exon_ids": [t[1] for t in texts],
        "novel_junctions": [t[2] for t in texts],
        "compatible": [t[3] for t in texts],
        "cigar": [c.cigar for c in chains],
    }


_STRAND = {1: "+", -1: "-", 0: ""}


def chains_frame(chains: list[ReadChain]):
    """The assignments as a DataFrame (:func:`chain_columns`; score as nullable integers)."""
    import pandas as pd

    columns = chain_columns(chains)
    columns["score"] = pd.array(columns["score"], dtype="Int64")
    return pd.DataFrame(columns)


def chains_tsv(chains: list[ReadChain]) -> str:
    """The assignments as tab-separated text with a header (:data:`CHAIN_COLUMNS`; empty fields
    for an unplaced read's score and identity), as pandas' ``to_csv`` writes :func:`chains_frame`."""
    columns = chain_columns(chains)
    columns["score"] = ["" if v is None else str(v) for v in columns["score"]]
    columns["identity"] = ["" if v != v else repr(v) for v in columns["identity"]]  # NaN: unplaced
    return "\n".join(["\t".join(CHAIN_COLUMNS), *map("\t".join, zip(*columns.values()))]) + "\n"
