"""Step 1 of the SIMD engine (:mod:`gamut.scanning.engines.simd`): the lane layout and the
score-only pass over a block of up to :data:`LANES` pairs.

Lane ``l`` holds pair ``l``'s query; all lanes read the same reference letter, so a column's
scores are one contiguous load per row from the block's profile table. (When the lanes share a
query instead, each lane reads its own reference, shorter ones padded with a score that keeps A
at 0, and the scores come from column tables of the query's distinct rows, filled :data:`TILE`
columns at a time.) Queries are bottom-aligned in ``LM`` rows (the longest query of the block):
the rows above a shorter query are zero rows (score 0, gap costs 0), which stay exactly 0 like
DP row 0. Per cell the pass keeps ``D = max(A, B, C)`` of the previous column and ``B`` of the
current one; the innermost loop runs over the lanes with unsigned, constant-stride indices into
one state array, so LLVM vectorises it (16-bit lanes when the score bounds allow, else 32 or 64
bits). A column whose largest ``max(A, C)`` reaches the threshold in some lane is recomputed for
that lane with the exact scalar rules, which emit its candidates (rare). Every ``CKPT`` columns
the exact state is copied (a checkpoint) for the tracebacks (:mod:`.simd_traceback`).
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import overload

from gamut.scanning.engines.simd_traceback import best_state

#: Pairs aligned side by side (one SIMD lane each). With 16-bit lanes a row of a block is two
#: 256-bit vectors; the block's state and profile stay in the L1 cache for miRNA-sized queries.
LANES = 32
#: Columns between checkpoints of the exact DP state (traceback windows start at one); doubled
#: while the checkpoints of a reference would take more than the engine's ``checkpoint_bytes``.
CKPT = 64
#: When the lanes of a block hold different references, their scores come from column tables of
#: TILE columns and at most TILE_KINDS distinct rows.
TILE = 64
#: A query has at most 11 distinct profile rows (zero rows; normal and seed rows per class).
TILE_KINDS = 12

# State fields per row (st[row, field, lane]): D = max(A, B, C) and B, double-buffered
# (column j reads one buffer and writes the other); A and C of the current column (read by the
# next row); G = running max of max(A, C) down the current column.
_D0, _D1, _B0, _B1, _A, _C, _G = range(7)
NF = 7
# Profile table fields per row (tab[row, field, lane]): score against reference classes 0..4,
# gap open, gap extend, and NK = -1 in seed rows (C is forced to -1 there), else 0.
_GO, _GE, _NK = 5, 6, 7
NT = 8

_U = np.uint64


def _as_dtype_of(x, arr):
    """``x`` converted (wrapping) to ``arr``'s element type (compiled code only)."""
    return arr.dtype.type(x)


@overload(_as_dtype_of, inline="always")
def _as_dtype_of_impl(x, arr):
    dt = arr.dtype

    def impl(x, arr):
        return dt(x)

    return impl


@njit(cache=True, nogil=True, inline="always")
def _column(st, tab, sc, roff, coff, LM, din, bin_, dout, bout):
    """One reference column for all rows and lanes: the vectorised inner loop.

    Row a's scores are ``sc[coff + roff[a] + lane]`` (the block's profile table, or the column
    table when lanes hold different references).

    Reads D of the previous column (field ``din``) and B of this column (``bin_``); writes this
    column's D (``dout``), the next column's B (``bout``), A, C and the running max G. The
    casts keep every operation in the lane type (the bounds are checked by the caller), and the
    unsigned indices with constant strides let LLVM prove the lanes independent.
    """
    w = _U(LANES)
    nf = _U(NF) * w
    zero = _as_dtype_of(0, st)
    for a in range(1, LM + 1):
        s0 = _U(a) * nf
        p0 = s0 - nf
        t0 = _U(a) * _U(NT) * w
        pc = _U(coff) + _U(roff[a])
        for l0 in range(LANES):
            l = _U(l0)
            go = tab[t0 + _U(_GO) * w + l]
            ge = tab[t0 + _U(_GE) * w + l]
            A = _as_dtype_of(st[p0 + _U(din) * w + l] + sc[pc + l], st)
            A = A if A > zero else zero
            x1 = _as_dtype_of(st[p0 + _U(_A) * w + l] + go, st)
            x2 = _as_dtype_of(st[p0 + _U(_C) * w + l] + ge, st)
            C = x1 if x1 > x2 else x2
            C = _as_dtype_of(C | tab[t0 + _U(_NK) * w + l], st)
            B = st[s0 + _U(bin_) * w + l]
            m = A if A > B else B
            st[s0 + _U(dout) * w + l] = m if m > C else C
            y1 = _as_dtype_of(A + go, st)
            y2 = _as_dtype_of(B + ge, st)
            st[s0 + _U(bout) * w + l] = y1 if y1 > y2 else y2
            st[s0 + _U(_A) * w + l] = A
            st[s0 + _U(_C) * w + l] = C
            g = st[p0 + _U(_G) * w + l]
            mac = A if A > C else C
            st[s0 + _U(_G) * w + l] = g if g > mac else mac


@njit(cache=True, nogil=True)
def build_tab(tab, LM, lane_query, qlen, qrow, qprof, qgo, qge, qseed):
    """Fill the block's profile table: lane l holds query ``lane_query[l]`` (-1: empty lane)."""
    tab[:] = 0
    for l in range(LANES):
        q = lane_query[l]
        if q < 0:
            continue
        L = qlen[q]
        P = LM - L
        for i in range(1, L + 1):
            base = ((P + i) * NT) * LANES + l
            src = qrow[q] + i
            for c in range(5):
                tab[base + c * LANES] = qprof[src, c]
            tab[base + _GO * LANES] = qgo[src]
            tab[base + _GE * LANES] = qge[src]
            tab[base + _NK * LANES] = -1 if qseed[src] else 0


@njit(cache=True, nogil=True)
def _push(cand, n, l, score, i, j):
    """Append the candidate (lane l, score, i, j) to ``cand``, growing it; returns (cand, n)."""
    if n >= cand.shape[0]:
        bigger = np.empty((2 * cand.shape[0], 4), np.int64)
        bigger[:n] = cand[:n]
        cand = bigger
    cand[n, 0] = l
    cand[n, 1] = score
    cand[n, 2] = i
    cand[n, 3] = j
    return cand, n + 1


@njit(cache=True, nogil=True)
def _flush_diagonals(ring, emitted, LM, cand, n):
    """Move the best candidates still held in ``ring`` by the lanes that ``emitted`` some (slots
    0..LM) to ``cand``, emptying those slots. Lanes without candidates (nearly all, for miRNAs)
    cost nothing."""
    for l in range(ring.shape[0]):
        if not emitted[l]:
            continue
        for slot in range(LM + 1):
            if ring[l, slot, 0] >= 0:
                cand, n = _push(cand, n, l, ring[l, slot, 1], ring[l, slot, 2], ring[l, slot, 3])
                ring[l, slot, 0] = -1
    return cand, n


@njit(cache=True, nogil=True)
def _emit(st, tab, sc, roff, coff, LM, l, P, din, bin_, j, threshold, ring, cand, n):
    """Candidates of lane ``l`` in column ``j`` (exact scalar rules, miranda-model §5.4-5); returns (cand, n).

    Only each diagonal's best candidate (score desc, j asc, i asc: the order of miranda-model §6) is kept:
    it either survives diagonal suppression and kills the rest of its diagonal, or is killed by a
    better survivor within 6 diagonals that kills them too. So a long query's candidates take
    memory in proportion to its diagonals, not its cells. ``ring[l, d % (LM + 1)]`` holds
    (diagonal, score, i, j) of the diagonals that column j can still reach (j - L .. j - 1); a
    diagonal found in a slot that another one needs is finished and moves to ``cand``.
    """
    aup = 0
    cup = 0
    for a in range(P + 1, LM + 1):
        s0 = (a * NF) * LANES + l
        p0 = s0 - NF * LANES
        t0 = (a * NT) * LANES + l
        go = np.int64(tab[t0 + _GO * LANES])
        ge = np.int64(tab[t0 + _GE * LANES])
        A = max(np.int64(st[p0 + din * LANES]) + np.int64(sc[coff + roff[a] + l]), 0)
        if tab[t0 + _NK * LANES] != 0:
            C = np.int64(-1)
        else:
            C = max(aup + go, cup + ge)
        B = np.int64(st[s0 + bin_ * LANES])
        aup = A
        cup = C
        best, tb = best_state(A, B, C)
        if best <= 0:
            best, tb = 0, 0
        if best >= threshold and tb != 2:
            i = a - P
            d = j - i + LM
            slot = d % (LM + 1)
            if ring[l, slot, 0] != d:
                if ring[l, slot, 0] >= 0:
                    cand, n = _push(cand, n, l, ring[l, slot, 1], ring[l, slot, 2], ring[l, slot, 3])
                ring[l, slot, 0] = d
                ring[l, slot, 1] = best
                ring[l, slot, 2] = i
                ring[l, slot, 3] = j
            elif best > ring[l, slot, 1]:  # same diagonal, later column: only a higher score ranks first
                ring[l, slot, 1] = best
                ring[l, slot, 2] = i
                ring[l, slot, 3] = j
    return cand, n


@njit(cache=True, nogil=True)
def _fill_tile(ctab, j0, width, nk, kind_prof, ref_codes, lane_start, lane_len):
    """Column table for columns j0 .. j0+width-1 when lanes hold different references:
    ``ctab[(jj * TILE_KINDS + k) * LANES + l]`` = score of row kind k against lane l's letter
    (class 5, past the lane's end or in an empty lane: a score that keeps A at 0)."""
    for l in range(LANES):
        for jj in range(width):
            j = j0 + jj
            c = ref_codes[lane_start[l] + j - 1] if j <= lane_len[l] else 5
            base = jj * TILE_KINDS * LANES + l
            for k in range(nk):
                ctab[base + k * LANES] = kind_prof[k, c]


@njit(cache=True, nogil=True)
def score_pass(st, tab, LM, R, ref, shared_ref, ctab, roff, nk, kind_prof, ref_codes, lane_start, lane_len,
                threshold, lane_threshold, lane_pad, ck, ckpt, ring, cand):
    """Score-only DP of one block over columns 1..R. Fills the checkpoints ``ck``
    (``ck[k]`` = (D of column k*ckpt - 1, B of column k*ckpt) for k >= 1) and returns the
    candidates (rows: lane, score, i, j) and their count.

    ``shared_ref``: every lane reads ``ref`` (scores from ``tab``); otherwise each lane reads its
    own reference (``ref_codes[lane_start[l]:][:lane_len[l]]``) and the scores come from column
    tables filled :data:`TILE` columns at a time (``roff[a]`` = row a's kind * LANES).
    """
    row = NF * LANES
    st[:] = 0
    for a in range(1, LM + 1):  # B of column 1: max(A(i, 0) + open, B(i, 0) + extend)
        t0 = (a * NT) * LANES
        for l in range(LANES):
            st[a * row + _B0 * LANES + l] = max(tab[t0 + _GO * LANES + l], tab[t0 + _GE * LANES + l])
    gtop = LM * row + _G * LANES
    n = 0
    emitted = np.zeros(LANES, np.bool_)
    sc = tab
    for j in range(1, R + 1):
        if shared_ref:
            coff = ref[j - 1] * LANES
        else:
            jt = (j - 1) % TILE
            if jt == 0:
                _fill_tile(ctab, j, min(TILE, R - j + 1), nk, kind_prof, ref_codes, lane_start, lane_len)
                sc = ctab
            coff = jt * TILE_KINDS * LANES
        if j & 1:
            din, bin_ = _D0, _B0
            _column(st, tab, sc, roff, coff, LM, _D0, _B0, _D1, _B1)
        else:
            din, bin_ = _D1, _B1
            _column(st, tab, sc, roff, coff, LM, _D1, _B1, _D0, _B0)
        hit = False
        for l0 in range(LANES):
            hit |= st[_U(gtop) + _U(l0)] >= lane_threshold
        if hit:
            for l in range(LANES):
                if st[gtop + l] >= lane_threshold and j <= lane_len[l]:
                    emitted[l] = True
                    cand, n = _emit(st, tab, sc, roff, coff, LM, l, lane_pad[l], din, bin_, j, threshold, ring, cand, n)
        if j % ckpt == 0:
            k = j // ckpt
            for a in range(LM + 1):
                for l in range(LANES):
                    ck[k, 0, a, l] = st[a * row + din * LANES + l]
                    ck[k, 1, a, l] = st[a * row + bin_ * LANES + l]
    return _flush_diagonals(ring, emitted, LM, cand, n)

