"""All placed reads as one :class:`~gamut.splicing.batch.CaseBatch`, built as arrays (no object
per read): where the reads aligned (:class:`ReadSpans`), each read's locus found in compiled code,
the reads encoded in one parallel pass (reverse-complemented where they aligned against their
locus' strand), and each locus' base and exons stored once and shared by its reads' cases."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from gamut.errors import InputError
from gamut.splicing.batch import CaseBatch, offsets
from gamut.splicing.model import ENCODE_TABLE, N_CODE, SpliceCase, reverse_complement

if TYPE_CHECKING:
    from gamut.splicing.placements import ReadPlacement

#: Complement of each symbol code (A C G T N).
_COMPLEMENT_CODES = np.array([3, 2, 1, 0, N_CODE], np.uint8)


@dataclass(frozen=True)
class ReadSpans:
    """Where each read of a batch aligned (its best alignment), one row per read: ``contig``, the
    index into ``contigs`` of its chromosome (-1: no alignment; the other fields are then 0), the
    strand it aligned on (+1: as given, -1: its reverse complement), its 0-based half-open span on
    the genome and its matching letters."""

    contigs: tuple[str, ...]
    contig: np.ndarray  # int64 (R,)
    strand: np.ndarray  # int64 (R,)
    start: np.ndarray  # int64 (R,)
    end: np.ndarray  # int64 (R,)
    matches: np.ndarray  # int64 (R,)

    @classmethod
    def of(cls, placements: Mapping[str, ReadPlacement], names: list[str]) -> ReadSpans:
        """The spans of the reads ``names`` in a mapping of read id to placement (absent: no alignment)."""
        found = [placements.get(name) for name in names]
        contigs: dict[str, int] = {}
        rows = [(contigs.setdefault(p.chrom, len(contigs)), p.strand, p.start, p.end, p.matches) if p is not None
                else (-1, 0, 0, 0, 0) for p in found]
        table = np.array(rows, np.int64).reshape(-1, 5)
        return cls(tuple(contigs), *(np.ascontiguousarray(table[:, k]) for k in range(5)))

    def __len__(self) -> int:
        return self.contig.size


@njit(cache=True, nogil=True, parallel=True)
def _encoded_targets(raw, off, flip, table, complement):  # pragma: no cover - compiled
    """The reads of ``raw`` (letters end to end, read ``j`` at ``off[j]``) as symbol codes in place,
    each reverse-complemented where ``flip``; ``bad[j]``: the first position of a letter outside
    the alphabet in read ``j``, else -1. Reads in parallel."""
    out = np.empty(off[-1], np.uint8)
    bad = np.full(flip.shape[0], -1, np.int64)
    for j in prange(flip.shape[0]):
        p, n = off[j], off[j + 1] - off[j]
        for i in range(n):
            code = table[raw[p + i]]
            if code == 255:
                if bad[j] < 0:
                    bad[j] = i
            elif flip[j]:
                out[p + n - 1 - i] = complement[code]
            else:
                out[p + i] = code
    return out, bad


def encoded_targets(reads: list[tuple[str, str]], take: np.ndarray, lengths: np.ndarray,
                    flip: np.ndarray) -> np.ndarray:
    """Reads ``take`` (indices into ``reads``, of ``lengths`` letters) as codes end to end
    (:func:`gamut.splicing.model.encode`'s alphabet), reverse-complemented where ``flip``; an
    unknown letter is an :class:`InputError` naming the read and position, an empty read one
    naming the read."""
    empty = np.flatnonzero(lengths == 0)
    if empty.size:
        raise InputError(f"read {reads[int(take[empty[0]])][0]}: empty sequence")
    # latin-1 with "?" for anything else: one byte per letter, and "?" is not in the alphabet.
    raw = np.frombuffer("".join([reads[k][1] for k in take.tolist()]).encode("latin-1", errors="replace"), np.uint8)
    off = offsets(lengths)
    codes, bad = _encoded_targets(raw, off, np.asarray(flip, np.bool_), ENCODE_TABLE, _COMPLEMENT_CODES)
    wrong = np.flatnonzero(bad >= 0)
    if wrong.size:
        name, sequence = reads[int(take[wrong[0]])]
        pos = int(bad[wrong[0]])
        raise InputError(f"read {name}: unknown letter '{sequence[pos]}' at position {pos + 1}")
    return codes


@njit(cache=True, nogil=True)
def _best_loci(starts, ends, reach, lo, hi, qstart, qend):  # pragma: no cover - compiled
    """Per query, the index of the locus among ``lo[q]..hi[q] - 1`` (one chromosome's loci, by
    start) that ``qstart..qend`` overlaps most (the first of equals by start), or -1."""
    out = np.full(qstart.shape[0], -1, np.int64)
    for q in range(qstart.shape[0]):
        a, b = qstart[q], qend[q]
        k = lo[q] + np.searchsorted(starts[lo[q]:hi[q]], b) - 1  # the last locus starting before the span ends
        most = 0
        while k >= lo[q] and reach[k] > a:
            overlap = min(ends[k], b) - max(starts[k], a)
            if overlap > most or (overlap == most and overlap > 0):
                out[q] = k
                most = overlap
            k -= 1
    return out


def locus_case(chrom: str, locus, flank: int) -> SpliceCase:
    """A locus' case, checked, with a placeholder target: its base is the locus with ``flank``
    letters each side (reverse-complemented on a ``-`` locus, its exons mirrored), its exons the
    locus' rows. Exon coordinates on the base start at ``max(0, locus.start - flank)``."""
    from gamut.splicing.model import make_case

    lo, hi = max(0, locus.start - flank), min(len(chrom), locus.end + flank)
    base, exons = chrom[lo:hi], locus.exons - lo
    if locus.strand < 0:
        base, exons = reverse_complement(base), len(base) - exons[:, ::-1]
    return make_case(base, np.ascontiguousarray(exons, np.int64), "N", name=f"locus {locus.name}")


class LocusTable:
    """Loci by chromosome and start (``loci`` in that order), with the running maximum of their
    ends per chromosome, to find the loci a span overlaps in compiled code; ``chroms``: only the
    loci on these chromosomes (those of the genome)."""

    def __init__(self, loci: list, chroms=None) -> None:
        self.loci = sorted((x for x in loci if chroms is None or x.chrom in chroms),
                           key=lambda x: (x.chrom, x.start, x.end))
        self.strand = np.array([x.strand for x in self.loci], np.int64)
        self.starts = np.array([x.start for x in self.loci], np.int64)
        self.ends = np.array([x.end for x in self.loci], np.int64)
        self.reach = self.ends.copy()
        self.range: dict[str, tuple[int, int]] = {}
        for k, locus in enumerate(self.loci):
            lo, _ = self.range.get(locus.chrom, (k, k))
            self.range[locus.chrom] = (lo, k + 1)
        for lo, hi in self.range.values():
            self.reach[lo:hi] = np.maximum.accumulate(self.ends[lo:hi])

    def best(self, spans: ReadSpans) -> np.ndarray:
        """Per read, the index (into :attr:`loci`) of the locus its span overlaps most, or -1 (no
        alignment, or no locus there)."""
        # Per chromosome, then per read; the last row (no loci) is that of the reads without alignment.
        ranges = np.array([self.range.get(c, (0, 0)) for c in spans.contigs] + [(0, 0)], np.int64)
        bounds = ranges[spans.contig]
        return _best_loci(self.starts, self.ends, self.reach, bounds[:, 0].copy(), bounds[:, 1].copy(),
                          spans.start, spans.end)


@dataclass(frozen=True)
class ReadBatch:
    """The placed reads' cases (:attr:`batch`, in read order) and, per read, its name, the index
    into the table's loci of its locus (-1: unplaced) and its case (-1: unplaced)."""

    batch: CaseBatch
    names: list[str]
    locus: np.ndarray  # int64 (R,)
    case: np.ndarray  # int64 (R,)


def read_batch(genome: dict[str, str], table: LocusTable, reads: list[tuple[str, str]],
               spans: ReadSpans | Mapping[str, ReadPlacement], flank: int,
               cases: dict[int, SpliceCase] | None = None) -> ReadBatch:
    """The Gelfand case of every placed read (see :mod:`gamut.splicing.reads`) as one batch: the
    read as its locus' transcript reads it, against the locus' base and exons (mirrored on a ``-``
    locus; shared by all its reads). ``spans``: where the reads aligned, a row per read, or a
    mapping of read id to placement; ``table``'s loci must lie on chromosomes of ``genome``;
    ``cases`` keeps each locus' case (:func:`locus_case`) from one batch of reads to the next."""
    cases = {} if cases is None else cases
    if isinstance(spans, Mapping):
        spans = ReadSpans.of(spans, [name for name, _ in reads])
    if len(spans) != len(reads):
        raise ValueError(f"{len(spans)} read spans for {len(reads)} reads")
    where = table.best(spans)
    take = np.flatnonzero(where >= 0)
    flip = spans.strand[take] != table.strand[where[take]]
    target_len = np.array([len(reads[k][1]) for k in take.tolist()], np.int64)
    target = encoded_targets(reads, take, target_len, flip)
    used, which = np.unique(where[take], return_inverse=True)
    for k in used.tolist():
        if k not in cases:
            cases[k] = locus_case(genome[table.loci[k].chrom], table.loci[k], flank)
    shared = [cases[k] for k in used.tolist()]
    base_len = np.array([c.base.size for c in shared], np.int64)
    n_locus = np.array([c.n_exons for c in shared], np.int64)
    n_exons = n_locus[which]
    row_off = offsets(n_exons)  # each read's rows: its locus' exon rows
    rows = np.arange(int(row_off[-1]), dtype=np.int64) - np.repeat(row_off[:-1] - offsets(n_locus)[which], n_exons)

    def concat(name: str) -> np.ndarray:
        return np.concatenate([getattr(c, name) for c in shared]) if shared else np.zeros(0, np.int64)

    batch = CaseBatch.from_arrays(
        base=concat("base").astype(np.uint8), base_off=offsets(base_len)[:-1][which], base_len=base_len[which],
        n_exons=n_exons, starts=concat("starts")[rows], ends=concat("ends")[rows], order=concat("order")[rows],
        target_len=target_len, target=target,
        names=[reads[k][0] for k in take.tolist()])
    case = np.full(len(reads), -1, np.int64)
    case[take] = np.arange(take.size)
    return ReadBatch(batch, [name for name, _ in reads], where, case)
