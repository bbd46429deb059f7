"""Hits in genome coordinates: reference (transcript) spans mapped through an annotation's exons.

:class:`GenomeMap` matches a scan's references to the transcripts of an
:class:`~gamut.io.annotation.Annotation` once per run (a reference whose exons do not add up to
its length is an error naming it; references the annotation lacks are counted in one warning);
:meth:`GenomeMap.map` maps a chunk's hits with array operations only (no Python per hit).

Coordinates are 0-based half-open. A hit's span (``ref_start``..``ref_end``, 1-based inclusive on
the transcript) becomes one block per exon it touches, in ascending genome order on either strand.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numba import njit

from gamut.errors import InputError
from gamut.io.annotation import Annotation


class AnnotationWarning(UserWarning):
    """Some references are not transcripts of the annotation (their hits get no genome coordinates)."""


@dataclass
class GenomeHits:
    """Genome coordinates of n hits. ``mapped[k]`` False: no coordinates (the reference is not in
    the annotation; the other fields of k are 0). Hit k's blocks are ``block_off[k]:block_off[k+1]``
    of ``block_start``/``block_end`` (ascending); ``thick_start``/``thick_end`` the seed's span
    (``thick_start == thick_end == start`` when the seed is empty)."""

    mapped: np.ndarray  # bool
    chrom: np.ndarray  # int64 index into GenomeMap.chroms (-1 unmapped)
    strand: np.ndarray  # int8 +1/-1 (0 unmapped)
    start: np.ndarray  # int64
    end: np.ndarray
    thick_start: np.ndarray
    thick_end: np.ndarray
    block_off: np.ndarray  # int64, n + 1
    block_start: np.ndarray
    block_end: np.ndarray

    def __len__(self) -> int:
        return int(self.mapped.shape[0])

    def block_counts(self) -> np.ndarray:
        return np.diff(self.block_off)


class GenomeMap:
    """An annotation matched to a scan's references (by id), for mapping hits."""

    def __init__(self, annotation: Annotation, reference_ids: list[str], reference_lengths: np.ndarray) -> None:
        self.annotation = a = annotation
        self.chroms = a.chroms
        tx = np.array([a.ids.get(r, -1) for r in reference_ids], np.int64)
        found = tx >= 0
        lengths = np.asarray(reference_lengths, np.int64)
        bad = np.flatnonzero(found & (a.length[np.maximum(tx, 0)] != lengths))
        if bad.size:
            k = int(bad[0])
            raise InputError(f"{a.path}: transcript '{reference_ids[k]}' has exons of {int(a.length[tx[k]])} nt "
                             f"in all but the reference is {int(lengths[k])} nt"
                             + (f" ({bad.size - 1} more such transcripts)" if bad.size > 1 else ""))
        self.tx = tx
        self.missing = int((~found).sum())
        if self.missing:
            shown = ", ".join(repr(reference_ids[k]) for k in np.flatnonzero(~found)[:3])
            warnings.warn(f"{self.missing} of {len(reference_ids)} references are not transcripts of {a.path} "
                          f"(e.g. {shown}): their hits have no genome coordinates", AnnotationWarning, stacklevel=2)
        # Every exon's first letter as a position in all transcripts laid end to end: increasing.
        base = np.zeros(len(a) + 1, np.int64)
        np.cumsum(a.length, out=base[1:])
        self.tx_base = base
        owner = np.repeat(np.arange(len(a)), np.diff(a.exon_off))
        self.global_exon = base[owner] + a.exon_tx

    def _exon_of(self, tx: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """The exon holding transcript offset ``pos`` (0-based) of transcript ``tx``."""
        return np.searchsorted(self.global_exon, self.tx_base[tx] + pos, side="right") - 1

    def _point(self, e: np.ndarray, pos: np.ndarray, plus: np.ndarray) -> np.ndarray:
        """Genome position (0-based) of transcript offset ``pos`` in exon ``e``."""
        a = self.annotation
        inside = pos - a.exon_tx[e]
        return np.where(plus, a.exon_start[e] + inside, a.exon_end[e] - 1 - inside)

    def map(self, ref: np.ndarray, ref_start: np.ndarray, ref_end: np.ndarray, seed_start: np.ndarray,
            seed_end: np.ndarray) -> GenomeHits:
        """Genome coordinates of hits on references ``ref`` spanning ``ref_start``..``ref_end``
        (1-based inclusive) with seeds ``seed_start``..``seed_end`` (empty when end < start)."""
        a = self.annotation
        n = int(np.asarray(ref).shape[0])
        tx_all = self.tx[ref]
        mapped = tx_all >= 0
        rows = np.flatnonzero(mapped)
        tx = tx_all[rows]
        lo = np.asarray(ref_start, np.int64)[rows] - 1  # 0-based half-open [lo, hi)
        hi = np.asarray(ref_end, np.int64)[rows]
        plus = a.strand[tx] > 0
        first = self._exon_of(tx, lo)
        last = self._exon_of(tx, hi - 1)
        counts = last - first + 1
        off = np.zeros(rows.size + 1, np.int64)
        np.cumsum(counts, out=off[1:])
        total = int(off[-1])
        owner = np.repeat(np.arange(rows.size), counts)
        k = np.arange(total) - off[owner]  # block number within its hit, transcript order
        e = first[owner] + k
        p_lo = np.maximum(lo[owner], a.exon_tx[e])
        p_hi = np.minimum(hi[owner], a.exon_tx[e] + (a.exon_end[e] - a.exon_start[e]))
        inside_lo, inside_hi = p_lo - a.exon_tx[e], p_hi - a.exon_tx[e]
        bplus = plus[owner]
        bs = np.where(bplus, a.exon_start[e] + inside_lo, a.exon_end[e] - inside_hi)
        be = np.where(bplus, a.exon_start[e] + inside_hi, a.exon_end[e] - inside_lo)
        # Ascending genome order: the minus strand's blocks come in descending order, so reverse them.
        order = np.where(bplus, off[owner] + k, off[owner] + counts[owner] - 1 - k)
        block_start = np.empty(total, np.int64)
        block_end = np.empty(total, np.int64)
        block_start[order] = bs
        block_end[order] = be
        # The seed's outer bounds (thick part), clipped to the span already.
        s_lo = np.asarray(seed_start, np.int64)[rows] - 1
        s_hi = np.asarray(seed_end, np.int64)[rows]  # exclusive
        has_seed = s_hi > s_lo
        s_lo_c = np.where(has_seed, s_lo, lo)
        s_last = np.where(has_seed, s_hi - 1, lo)
        g1 = self._point(self._exon_of(tx, s_lo_c), s_lo_c, plus)
        g2 = self._point(self._exon_of(tx, s_last), s_last, plus)
        start_m = block_start[off[:-1]] if total else np.zeros(0, np.int64)
        end_m = block_end[off[1:] - 1] if total else np.zeros(0, np.int64)
        thick_s = np.where(has_seed, np.minimum(g1, g2), start_m)
        thick_e = np.where(has_seed, np.maximum(g1, g2) + 1, start_m)

        def full(values: np.ndarray, fill: int = 0, dtype=np.int64) -> np.ndarray:
            out = np.full(n, fill, dtype)
            out[rows] = values
            return out

        block_off = np.zeros(n + 1, np.int64)
        np.cumsum(full(counts), out=block_off[1:])
        return GenomeHits(mapped, full(a.chrom[tx], -1), full(a.strand[tx], 0, np.int8), full(start_m), full(end_m),
                          full(thick_s), full(thick_e), block_off, block_start, block_end)


def genome_map(annotation_path: str, scan_input) -> GenomeMap:
    """The run's :class:`GenomeMap`: the annotation (read once per process) matched to the
    references at their full length (before -trim: the reference is the transcript)."""
    from gamut.io.annotation import read_annotation

    refs = scan_input.references
    lengths = np.fromiter(map(len, refs), np.int64, len(refs))
    return GenomeMap(read_annotation(annotation_path), [r.id for r in refs], lengths)


@njit(cache=True, nogil=True)
def _digits(buf, pos, v):
    if v < 0:
        buf[pos] = 45
        pos += 1
        v = -v
    n = 1
    t = v
    while t >= 10:
        t //= 10
        n += 1
    for d in range(n - 1, -1, -1):
        buf[pos + d] = 48 + v % 10
        v //= 10
    return pos + n


@njit(cache=True, nogil=True)
def _block_text_kernel(off, first, second, mid, sep, trailing, quote):
    n = off.shape[0] - 1
    size = 0
    for k in range(n):
        size += (off[k + 1] - off[k]) * 42 + 2
    buf = np.empty(size, np.uint8)
    starts = np.empty(n, np.int64)
    lengths = np.empty(n, np.int64)
    pos = 0
    for k in range(n):
        starts[k] = pos
        if quote:
            buf[pos] = 34
            pos += 1
        for i in range(off[k], off[k + 1]):
            if i > off[k]:
                buf[pos] = sep
                pos += 1
            pos = _digits(buf, pos, first[i])
            if mid != 0:
                buf[pos] = mid
                pos = _digits(buf, pos + 1, second[i])
        if trailing and off[k + 1] > off[k]:
            buf[pos] = sep
            pos += 1
        if quote:
            buf[pos] = 34
            pos += 1
        lengths[k] = pos - starts[k]
    return buf[:pos], starts, lengths


def block_text(off: np.ndarray, first: np.ndarray, second: np.ndarray | None = None, *, mid: str = "",
               sep: str = ",", trailing: bool = False, quote: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per hit, its blocks as text, e.g. ``first-second,first-second`` (``mid="-"``) or
    ``first,first,`` (no ``second``, ``trailing``); ``quote`` wraps each in double quotes.
    Returns ``(buffer, starts, lengths)``."""
    first = np.ascontiguousarray(first, np.int64)
    second = first if second is None else np.ascontiguousarray(second, np.int64)
    return _block_text_kernel(np.ascontiguousarray(off, np.int64), first, second, ord(mid) if mid else 0, ord(sep),
                              trailing, quote)
