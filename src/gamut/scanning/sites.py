"""Site types and context columns of a chunk's hits, in one compiled pass over its hit columns.

The definitions are those of ``docs/scan.md`` ("Site types, context and genome coordinates"):

- ``t1``: the reference position (1-based) facing miRNA position 1 in miRanda's alignment:
  ``ref_end`` plus the number of ``-`` at the end of the ``aln_utr`` line. miRNA position p
  (1..8) faces reference position ``t1 - (p - 1)`` (the seed read without gaps, as TargetScan
  does); it matches when the reference letter is the Watson-Crick complement of the miRNA letter
  (T = U, case ignored, G:U not a match); a position outside the reference does not match.
- ``site_type``: ``8mer`` (2-8 match, A at t1), ``7mer-m8`` (2-8, no A), ``7mer-A1`` (2-7, not 8,
  A), ``6mer`` (2-7, not 8, no A), ``offset-6mer`` (3-8, not 2), ``none``.
- ``dist_to_end``: ``min(ref_start - 1, length - ref_end)``.
- ``supp_pairs``: miRNA positions 13-16 Watson-Crick paired in miRanda's alignment (0-4).
- ``local_au``: percent A/U/T among the reference letters within 30 nt on each side of the hit
  (NaN when there are none).
- ``seed_start``/``seed_end``: the reference positions facing miRNA 8 and 2 (1-based, inclusive),
  clipped to the hit's span (``seed_end < seed_start`` when nothing is left).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from gamut.io.threads import Parallel, run_kernel
from gamut.scanning.params import SITE_TYPES
from gamut.scanning.results import SiteColumns

if TYPE_CHECKING:
    from gamut.scanning.hits import HitTable
    from gamut.scanning.pipeline.pairs import ScanInput
    from gamut.scanning.results import ChunkResult

#: Site type codes (index into :data:`~gamut.scanning.params.SITE_TYPES`, the ``site_type`` names).
SITE_CODES = {name: code for code, name in enumerate(SITE_TYPES)}
#: miRNA positions whose pairing is "3'-supplementary" (Grimson et al. 2007).
SUPPLEMENTARY = (13, 16)
#: Letters on each side of a hit counted by ``local_au``.
AU_WINDOW = 30

_GAP, _WC = ord("-"), ord("|")
#: 1 for the letters ``local_au`` counts (A, U and T, either case), by byte.
_AU_LETTER = np.zeros(256, np.int64)
_AU_LETTER[np.frombuffer(b"AaUuTt", np.uint8)] = 1


@njit(cache=True, nogil=True)
def _up(c):
    c = c - 32 if 97 <= c <= 122 else c
    return 85 if c == 84 else c  # T -> U


@njit(cache=True, nogil=True)
def _pairs(m, r):
    """Watson-Crick pair of miRNA letter ``m`` and reference letter ``r`` (case and T/U ignored)."""
    m = _up(m)
    r = _up(r)
    return (m == 65 and r == 85) or (m == 85 and r == 65) or (m == 71 and r == 67) or (m == 67 and r == 71)


@njit(cache=True, nogil=True, parallel=True)
def _site_kernel(q_letters, q_off, r_letters, r_off, pairs, hit_pair, ref_start, ref_end, text, text_off, width,
                 window, supp_lo, supp_hi, au_letter):
    n = hit_pair.shape[0]
    site = np.empty(n, np.int8)
    t1_out = np.empty(n, np.int64)
    dist = np.empty(n, np.int64)
    supp = np.empty(n, np.int8)
    au = np.empty(n, np.float32)
    seed_start = np.empty(n, np.int64)
    seed_end = np.empty(n, np.int64)
    for h in prange(n):
        q = pairs[hit_pair[h], 0]
        r = pairs[hit_pair[h], 1]
        qo = q_off[q]
        L = q_off[q + 1] - qo
        ro = r_off[r]
        R = r_off[r + 1] - ro
        w = width[h]
        rline = text_off[h] + 2 * w
        trailing = 0
        while trailing < w and text[rline + w - 1 - trailing] == _GAP:
            trailing += 1
        t1 = ref_end[h] + trailing
        t1_out[h] = t1
        dist[h] = min(ref_start[h] - 1, R - ref_end[h])
        seed_start[h] = max(t1 - 7, ref_start[h])
        seed_end[h] = min(t1 - 1, ref_end[h])
        match = 0  # bit p: miRNA position p (2..8) matches (no array: an allocation per hit slows every thread)
        for p in range(2, 9):
            t = t1 - (p - 1)
            if p <= L and 1 <= t <= R and _pairs(q_letters[qo + p - 1], r_letters[ro + t - 1]):
                match |= 1 << p
        a1 = 1 <= t1 <= R and (r_letters[ro + t1 - 1] == 65 or r_letters[ro + t1 - 1] == 97)
        m2_7 = match & 0b11111100 == 0b11111100
        m8 = match & 0b100000000 != 0
        if m2_7 and m8:
            code = 0 if a1 else 1
        elif m2_7:
            code = 2 if a1 else 3
        elif match & 0b111111000 == 0b111111000:
            code = 4
        else:
            code = 5
        site[h] = code
        # 3'-supplementary pairs: walk the query line from its right end (miRNA position 1).
        qline = text_off[h]
        mline = qline + w
        p = 0
        count = 0
        for x in range(w - 1, -1, -1):
            if text[qline + x] != _GAP:
                p += 1
                if supp_lo <= p <= supp_hi and text[mline + x] == _WC:
                    count += 1
                if p >= supp_hi:
                    break
        supp[h] = count
        # Local AU content around the hit's span: the letters before it, then those after it.
        total = 0
        n_au = 0
        for t in range(max(1, ref_start[h] - window), min(ref_start[h], R + 1)):
            n_au += au_letter[r_letters[ro + t - 1]]
            total += 1
        for t in range(max(ref_end[h], ref_start[h]) + 1, min(R, ref_end[h] + window) + 1):
            n_au += au_letter[r_letters[ro + t - 1]]
            total += 1
        au[h] = np.float32(100.0 * n_au / total) if total > 0 else np.float32(np.nan)
    return site, t1_out, dist, supp, au, seed_start, seed_end


def site_columns(hits: HitTable, pairs: np.ndarray, scan_input: ScanInput, parallel: Parallel = False) -> SiteColumns:
    """The :class:`~gamut.scanning.results.SiteColumns` of every hit of a chunk (``pairs``: its
    (query, reference) indices)."""
    queries, references = scan_input.query_set, scan_input.reference_set
    return SiteColumns(*run_kernel(
        _site_kernel, len(hits), parallel, queries.letters, queries.offsets, references.letters,
        references.offsets, np.asarray(pairs, np.int64), np.asarray(hits.pair, np.int64),
        np.asarray(hits.ref_start, np.int64), np.asarray(hits.ref_end, np.int64), hits.text, hits.text_off,
        hits.width, AU_WINDOW, *SUPPLEMENTARY, _AU_LETTER))


def chunk_sites(result: ChunkResult, scan_input: ScanInput, parallel: Parallel = False) -> SiteColumns:
    """The chunk's :class:`~gamut.scanning.results.SiteColumns`, computed on first use and kept on the result."""
    if result.sites is None:
        result.sites = site_columns(result.hits, result.pairs, scan_input, parallel)
    return result.sites


def site_filter(result: ChunkResult, scan_input: ScanInput, wanted: tuple[str, ...], parallel: Parallel = False) -> None:
    """Clear ``reported`` for hits whose site type is not in ``wanted`` (``--site-types``)."""
    hits = result.hits
    if len(hits) == 0:
        return
    keep = np.zeros(len(SITE_TYPES), bool)
    keep[[SITE_CODES[name] for name in wanted]] = True
    hits.reported &= keep[chunk_sites(result, scan_input, parallel).site]

