"""All placed reads as one :class:`~gamut.splicing.batch.CaseBatch`, built as arrays (no object
per read): reads encoded at once, each read's locus found in compiled code, the reads that
aligned against their locus' strand reverse-complemented in place, and each locus' base and
exons stored once and shared by its reads' cases."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from gamut.errors import InputError
from gamut.splicing.batch import CaseBatch, offsets
from gamut.splicing.model import ENCODE_TABLE, N_CODE, SpliceCase, reverse_complement

#: Complement of each symbol code (A C G T N).
_COMPLEMENT_CODES = np.array([3, 2, 1, 0, N_CODE], np.uint8)
_ENCODE_BYTES = ENCODE_TABLE.tobytes()  # for bytes.translate, which is faster than indexing


@dataclass(frozen=True)
class EncodedReads:
    """Reads as symbol codes end to end: read ``k`` is ``codes[off[k]:off[k + 1]]``."""

    names: list[str]
    codes: np.ndarray  # uint8
    off: np.ndarray  # int64 (R + 1,)

    def __len__(self) -> int:
        return len(self.names)


def encode_reads(reads: list[tuple[str, str]]) -> EncodedReads:
    """``(name, letters)`` reads as codes (:func:`gamut.splicing.model.encode`'s alphabet); an
    unknown letter is an :class:`InputError` naming the read and position."""
    names = [name for name, _ in reads]
    off = offsets([len(sequence) for _, sequence in reads])
    text = "".join(sequence for _, sequence in reads).encode("latin-1", errors="replace")
    codes = np.frombuffer(text.translate(_ENCODE_BYTES), np.uint8)
    if len(text) != off[-1]:  # a letter outside latin-1 took more than one byte: find it the slow way
        from gamut.splicing.model import encode

        for name, sequence in reads:
            encode(sequence, f"read {name}")
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        k = int(np.searchsorted(off, bad[0], side="right")) - 1
        pos = int(bad[0] - off[k])
        raise InputError(f"read {names[k]}: unknown letter '{reads[k][1][pos]}' at position {pos + 1}")
    return EncodedReads(names, codes, off)


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


@njit(cache=True, nogil=True)
def _oriented(codes, off, take, flip, out_off, complement):  # pragma: no cover - compiled
    """Reads ``take`` end to end (read ``j`` at ``out_off[j]``), each reverse-complemented where ``flip``."""
    out = np.empty(out_off[-1], np.uint8)
    for j in range(take.shape[0]):
        a, b, p = off[take[j]], off[take[j] + 1], out_off[j]
        if flip[j]:
            for i in range(b - a):
                out[p + i] = complement[codes[b - 1 - i]]
        else:
            out[p:p + b - a] = codes[a:b]
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
    ends per chromosome, to find the loci a span overlaps in compiled code."""

    def __init__(self, loci: list) -> None:
        self.loci = sorted(loci, key=lambda x: (x.chrom, x.start, x.end))
        self.starts = np.array([x.start for x in self.loci], np.int64)
        self.ends = np.array([x.end for x in self.loci], np.int64)
        self.reach = self.ends.copy()
        self.range: dict[str, tuple[int, int]] = {}
        for k, locus in enumerate(self.loci):
            lo, _ = self.range.get(locus.chrom, (k, k))
            self.range[locus.chrom] = (lo, k + 1)
        for lo, hi in self.range.values():
            self.reach[lo:hi] = np.maximum.accumulate(self.ends[lo:hi])

    def best(self, chroms: list[str], starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Per span, the index (into :attr:`loci`) of the locus it overlaps most, or -1."""
        names, which = np.unique(np.asarray(chroms, dtype=object), return_inverse=True) if chroms else ([], [])
        bounds = np.array([self.range.get(c, (0, 0)) for c in names], np.int64).reshape(-1, 2)[which]
        return _best_loci(self.starts, self.ends, self.reach, bounds[:, 0].copy(), bounds[:, 1].copy(),
                          np.asarray(starts, np.int64), np.asarray(ends, np.int64))


@dataclass(frozen=True)
class ReadBatch:
    """The placed reads' cases (:attr:`batch`, in read order) and, per read, the index into
    :attr:`loci` of its locus (-1: unplaced) and its case (-1: unplaced)."""

    batch: CaseBatch
    loci: list
    locus: np.ndarray  # int64 (R,)
    case: np.ndarray  # int64 (R,)


def read_batch(genome: dict[str, str], loci: list, reads: list[tuple[str, str]], placements: dict,
               flank: int) -> ReadBatch:
    """The Gelfand case of every placed read (see :mod:`gamut.splicing.reads`) as one batch: the
    read as its locus' transcript reads it, against the locus' base and exons (mirrored on a ``-``
    locus; shared by all its reads)."""
    encoded = encode_reads(reads)
    table = LocusTable([x for x in loci if x.chrom in genome])
    found = [placements.get(name) for name in encoded.names]
    placed = np.flatnonzero([p is not None for p in found])
    spans = [found[k] for k in placed.tolist()]
    where = np.full(len(reads), -1, np.int64)
    where[placed] = table.best([p.chrom for p in spans], [p.start for p in spans], [p.end for p in spans])
    take = np.flatnonzero(where >= 0)
    used, which = np.unique(where[take], return_inverse=True)
    cases = [locus_case(genome[table.loci[k].chrom], table.loci[k], flank) for k in used.tolist()]
    target_len = np.diff(encoded.off)[take]
    empty = take[target_len == 0]
    if empty.size:
        raise InputError(f"read {encoded.names[int(empty[0])]}: empty sequence")
    base_len = np.array([c.base.size for c in cases], np.int64)
    base_start = offsets(base_len)
    n_locus = np.array([c.n_exons for c in cases], np.int64)
    locus_rows = offsets(n_locus)
    n_exons = n_locus[which]
    row_off = offsets(n_exons)
    rows = np.arange(int(row_off[-1]), dtype=np.int64) - np.repeat(row_off[:-1] - locus_rows[which], n_exons)
    strand = np.array([x.strand for x in table.loci], np.int64)
    read_strand = np.array([found[k].strand for k in take.tolist()], np.int64)
    flip = read_strand != strand[where[take]]
    concat = (lambda name: np.concatenate([getattr(c, name) for c in cases]) if cases else np.zeros(0, np.int64))
    batch = CaseBatch.from_arrays(
        base=concat("base").astype(np.uint8), base_off=base_start[:-1][which], base_len=base_len[which],
        n_exons=n_exons, starts=concat("starts")[rows], ends=concat("ends")[rows], order=concat("order")[rows],
        target_len=target_len,
        target=_oriented(encoded.codes, encoded.off, take, flip, offsets(target_len), _COMPLEMENT_CODES),
        names=[encoded.names[k] for k in take.tolist()])
    case = np.full(len(reads), -1, np.int64)
    case[take] = np.arange(take.size)
    return ReadBatch(batch, table.loci, where, case)
