"""The SIMD CPU alignment engine: miRanda's DP (miranda-model §5-7.1) over lanes of independent pairs.

Same results as :mod:`gamut.scanning.engines.cpu` (survivors, order, scores, coordinates, ops), computed in
three steps per *block* of up to :data:`LANES` pairs that share one reference (or, for
references with few pairs in the chunk, one query):

1. **Score-only pass.** Lane ``l`` holds pair ``l``'s query; all lanes read the same reference
   letter, so a column's scores are one contiguous load per row from the block's profile table.
   (When the lanes share a query instead, each lane reads its own reference, shorter ones
   padded with a score that keeps A at 0, and the scores come from column tables of the
   query's distinct rows, filled :data:`TILE` columns at a time.) Queries are bottom-aligned in ``LM`` rows (the longest query of the block): the rows above a
   shorter query are zero rows (score 0, gap costs 0), which stay exactly 0 like DP row 0. Per
   cell the pass keeps ``D = max(A, B, C)`` of the previous column and ``B`` of the current one;
   the innermost loop runs over the lanes with unsigned, constant-stride indices into one state
   array, so LLVM vectorises it (16-bit lanes when the score bounds allow, else 32 or 64 bits).
   A column whose largest ``max(A, C)`` reaches the threshold in some lane is recomputed for
   that lane with the exact scalar rules, which emit its candidates (rare). Every ``CKPT``
   columns the exact state is copied (a checkpoint).
2. **Diagonal suppression** per pair (:func:`gamut.scanning.engines.cpu.order_and_suppress`).
3. **Traceback of survivors only**: the full three-state DP with trace bytes is recomputed in a
   window that starts at a checkpoint before the survivor's end; a traceback that needs columns
   before the window is redone from an earlier checkpoint (column 0 at worst), so results never
   depend on the window size.

:class:`SimdEngine` sorts pairs into blocks (pairs of one reference, queries of similar length;
or pairs of one query, references of similar length), orders blocks so that consecutive ones share their queries (the profile table is then reused),
and runs contiguous runs of blocks on a thread pool, one compiled call per run.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from numba import njit
from numba.extending import overload

from gamut.scanning.alignments import OP_MATCH, OP_QGAP, OP_RGAP, ChunkAlignments
from gamut.scanning.engines.cpu import grow_array, order_and_suppress
from gamut.scanning.params import ScanParams, exact_int_type, gap_rise, row_scheme, score_bound

#: Pairs aligned side by side (one SIMD lane each). With 16-bit lanes a row of a block is two
#: 256-bit vectors; the block's state and profile stay in the L1 cache for miRNA-sized queries.
LANES = 32
#: Columns between checkpoints of the exact DP state (traceback windows start at one); doubled
#: while the checkpoints of a reference would take more than the engine's ``checkpoint_bytes``.
CKPT = 64
#: Columns, beyond the query length, that a traceback window reaches back at first.
TRACE_MARGIN = 16
#: Largest trace (bytes, one per cell) of a whole pair, used when its survivors' windows would
#: recompute more columns than the pair has.
WHOLE_TRACE_BYTES = 64 << 20
#: References with fewer pairs than this in a chunk are aligned in blocks of one query against
#: different references (column tables of TILE columns, at most TILE_KINDS distinct rows).
SHARED_MIN = LANES // 2
TILE = 64
#: A query has at most 11 distinct profile rows (zero rows; normal and seed rows per class).
TILE_KINDS = 12

# State fields per row (st[row, field, lane]): D = max(A, B, C) and B, double-buffered
# (column j reads one buffer and writes the other); A and C of the current column (read by the
# next row); G = running max of max(A, C) down the current column.
_D0, _D1, _B0, _B1, _A, _C, _G = range(7)
_NF = 7
# Profile table fields per row (tab[row, field, lane]): score against reference classes 0..4,
# gap open, gap extend, and NK = -1 in seed rows (C is forced to -1 there), else 0.
_GO, _GE, _NK = 5, 6, 7
_NT = 8

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
    nf = _U(_NF) * w
    zero = _as_dtype_of(0, st)
    for a in range(1, LM + 1):
        s0 = _U(a) * nf
        p0 = s0 - nf
        t0 = _U(a) * _U(_NT) * w
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
def _build_tab(tab, LM, lane_query, qlen, qrow, qprof, qgo, qge, qseed):
    """Fill the block's profile table: lane l holds query ``lane_query[l]`` (-1: empty lane)."""
    tab[:] = 0
    for l in range(LANES):
        q = lane_query[l]
        if q < 0:
            continue
        L = qlen[q]
        P = LM - L
        for i in range(1, L + 1):
            base = ((P + i) * _NT) * LANES + l
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
        s0 = (a * _NF) * LANES + l
        p0 = s0 - _NF * LANES
        t0 = (a * _NT) * LANES + l
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
        if A >= B and A >= C:
            best, tb = A, 1
        elif B >= C:
            best, tb = B, 2
        else:
            best, tb = C, 3
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
def _score_pass(st, tab, LM, R, ref, shared_ref, ctab, roff, nk, kind_prof, ref_codes, lane_start, lane_len,
                threshold, lane_threshold, lane_pad, ck, ckpt, ring, cand):
    """Score-only DP of one block over columns 1..R. Fills the checkpoints ``ck``
    (``ck[k]`` = (D of column k*ckpt - 1, B of column k*ckpt) for k >= 1) and returns the
    candidates (rows: lane, score, i, j) and their count.

    ``shared_ref``: every lane reads ``ref`` (scores from ``tab``); otherwise each lane reads its
    own reference (``ref_codes[lane_start[l]:][:lane_len[l]]``) and the scores come from column
    tables filled :data:`TILE` columns at a time (``roff[a]`` = row a's kind * LANES).
    """
    row = _NF * LANES
    st[:] = 0
    for a in range(1, LM + 1):  # B of column 1: max(A(i, 0) + open, B(i, 0) + extend)
        t0 = (a * _NT) * LANES
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


@njit(cache=True, nogil=True)
def _fill_window(prof, go, ge, seed, ref, L, c, j_end, dprev, bcol, trace):
    """The full three-state DP with trace bytes over the window of columns c..j_end, rows 1..L.

    ``dprev[i]`` = D(i, c-1) and ``bcol[i]`` = B(i, c) (exact; ignored when c = 0, where the
    column is all zero). Columns c+1..j_end get trace bytes (the layout of :mod:`gamut.scanning.engines.cpu`)
    in ``trace[i * width + (j - c)]``, width = j_end - c + 1.
    """
    width = j_end - c + 1
    pa = np.zeros(L + 1, np.int64)
    pb = np.zeros(L + 1, np.int64)
    pcc = np.zeros(L + 1, np.int64)
    if c > 0:
        rc = ref[c - 1]
        for i in range(1, L + 1):
            A = max(dprev[i - 1] + np.int64(prof[i, rc]), 0)
            if seed[i]:
                C = np.int64(-1)
            else:
                C = max(pa[i - 1] + go[i], pcc[i - 1] + ge[i])
            pa[i] = A
            pb[i] = bcol[i]
            pcc[i] = C
    ca = np.zeros(L + 1, np.int64)
    cb = np.zeros(L + 1, np.int64)
    cc = np.zeros(L + 1, np.int64)
    for jj in range(1, width):
        j = c + jj
        rc = ref[j - 1]
        for i in range(1, L + 1):
            dA, dB, dC = pa[i - 1], pb[i - 1], pcc[i - 1]
            if dA >= dB and dA >= dC:
                m, tA = dA, 1
            elif dB >= dC:
                m, tA = dB, 2
            else:
                m, tA = dC, 3
            A = m + np.int64(prof[i, rc])
            if A <= 0:
                A, tA = 0, 0
            o = pa[i] + go[i]
            e = pb[i] + ge[i]
            extB = e > o
            B = e if extB else o
            if seed[i]:
                C, extC = np.int64(-1), False
            else:
                o = ca[i - 1] + go[i]
                e = cc[i - 1] + ge[i]
                extC = e > o
                C = e if extC else o
            if A >= B and A >= C:
                best, tb = A, 1
            elif B >= C:
                best, tb = B, 2
            else:
                best, tb = C, 3
            if best <= 0:
                tb = 0
            trace[i * width + jj] = tA | (4 if extB else 0) | (8 if extC else 0) | (tb << 4)
            ca[i] = A
            cb[i] = B
            cc[i] = C
        pa, ca = ca, pa
        pb, cb = cb, pb
        pcc, cc = cc, pcc


@njit(cache=True, nogil=True)
def _trace_window(trace, width, c, i_end, j_end, ops):
    """Traceback of the candidate (i_end, j_end) through a window filled by :func:`_fill_window`
    (columns c..c + width - 1). Returns (i0, j0, n_ops) with the ops, in reverse, in ``ops``;
    n_ops = -1 when the traceback needs column c > 0 (the caller retries from an earlier
    checkpoint)."""
    i = i_end
    j = j_end
    state = (trace[i * width + (j - c)] >> 4) & 3
    n = 0
    while i > 0 and j > 0:
        if state == 0:
            break
        if j == c:
            return i, j, -1
        t = trace[i * width + (j - c)]
        if (t >> 4) & 3 == 0:
            break
        if state == 1:
            ops[n] = OP_MATCH
            state = t & 3
            i -= 1
            j -= 1
        elif state == 2:
            ops[n] = OP_QGAP
            state = 2 if t & 4 else 1
            j -= 1
        else:
            ops[n] = OP_RGAP
            state = 3 if t & 8 else 1
            i -= 1
        n += 1
    return i, j, n




@njit(cache=True, nogil=True)
def _window_trace(prof, go, ge, seed, ref, L, c, i_end, j_end, dprev, bcol, trace, ops):
    """Traceback of the candidate (i_end, j_end) in the window of columns c..j_end (see
    :func:`_fill_window` and :func:`_trace_window`)."""
    _fill_window(prof, go, ge, seed, ref, L, c, j_end, dprev, bcol, trace)
    return _trace_window(trace, j_end - c + 1, c, i_end, j_end, ops)


@njit(cache=True, nogil=True)
def align_blocks(block_ref, block_lanes, block_lm, block_new, pair_query, pair_ref, ref_codes, ref_off,
                 qlen, qrow, qprof, qgo, qge, qseed, threshold, lane_threshold, pad_score, checkpoint_bytes,
                 sv_start, sv_stop):
    """Align a run of blocks; one compiled call (no Python per pair).

    ``block_lanes[b, l]``: the pair in lane l of block b (index into ``pair_query``/``pair_ref``;
    -1 empty); ``block_ref[b]``: the reference all lanes share, or -1 when the lanes share the
    query instead (each lane then reads its own reference, shorter ones padded with
    ``pad_score``); ``block_new[b]``: the block's queries differ from the previous block's.
    Per-query tables ``qprof`` (rows of all queries, row 0 of each included), ``qgo``, ``qge``,
    ``qseed`` start at ``qrow[q]``; ``qprof``'s dtype is the lane type. Checkpoints take at most
    about ``checkpoint_bytes`` (their interval grows from :data:`CKPT` as needed).
    Sets ``sv_start``, ``sv_stop`` (indexed like ``pair_query``) of this run's pairs, as rows of
    its own output, and returns the survivor columns (score, i_end, j_end, i_start, j_start,
    op_start, op_end as one (n, 7) array) and the ops.
    """
    nb = block_ref.shape[0]
    dt = qprof.dtype
    max_lm = 1
    max_r = 1
    for b in range(nb):
        max_lm = max(max_lm, block_lm[b])
        for l in range(LANES):
            p = block_lanes[b, l]
            if p >= 0:
                max_r = max(max_r, ref_off[pair_ref[p] + 1] - ref_off[pair_ref[p]])
    st = np.zeros((max_lm + 1) * _NF * LANES, dt)
    tab = np.zeros((max_lm + 1) * _NT * LANES, dt)
    ckpt = CKPT
    per_column = 2 * (max_lm + 1) * LANES * qprof.itemsize
    while (max_r // ckpt + 1) * per_column > checkpoint_bytes and ckpt < max_r:
        ckpt *= 2
    ck = np.zeros((max_r // ckpt + 1, 2, max_lm + 1, LANES), dt)
    cand = np.empty((256, 4), np.int64)
    ring = np.full((LANES, max_lm + 1, 4), -1, np.int64)  # per lane: the open diagonals' best candidates
    lane_pad = np.zeros(LANES, np.int64)
    cap = 64
    out = np.empty((cap, 7), np.int64)  # score, i_end, j_end, i_start, j_start, op_start, op_end
    ops = np.empty(1024, np.uint8)
    n_out = 0
    n_ops = 0
    trace = np.empty(1 << 16, np.uint8)
    buf = np.empty(256, np.uint8)
    dprev = np.zeros(max_lm + 1, np.int64)
    bcol = np.zeros(max_lm + 1, np.int64)
    lane_query = np.full(LANES, -1, np.int64)
    lane_start = np.zeros(LANES, np.int64)
    lane_len = np.zeros(LANES, np.int64)
    roff_shared = np.arange(max_lm + 1) * (_NT * LANES)
    roff_kinds = np.zeros(max_lm + 1, np.int64)
    kind_prof = np.zeros((TILE_KINDS, 6), dt)
    ctab = np.zeros(TILE * TILE_KINDS * LANES, dt)
    for b in range(nb):
        LM = block_lm[b]
        shared = block_ref[b] >= 0
        R = 0
        for l in range(LANES):
            p = block_lanes[b, l]
            lane_query[l] = pair_query[p] if p >= 0 else -1
            lane_pad[l] = LM - qlen[lane_query[l]] if p >= 0 else LM
            lane_start[l] = ref_off[pair_ref[p]] if p >= 0 else 0
            lane_len[l] = ref_off[pair_ref[p] + 1] - lane_start[l] if p >= 0 else 0
            R = max(R, lane_len[l])
        if shared:
            ref = ref_codes[ref_off[block_ref[b]] : ref_off[block_ref[b] + 1]]
            lane_len[:] = R
        else:
            ref = ref_codes[:0]
        if block_new[b]:
            _build_tab(tab, LM, lane_query, qlen, qrow, qprof, qgo, qge, qseed)
        nk = 0
        if not shared:  # one query: its distinct profile rows ("kinds")
            q0 = qrow[lane_query[0]]
            for a in range(1, LM + 1):
                found = -1
                for k in range(nk):
                    same = True
                    for c in range(5):
                        same &= kind_prof[k, c] == qprof[q0 + a, c]
                    if same:
                        found = k
                        break
                if found < 0:
                    found = nk
                    for c in range(5):
                        kind_prof[nk, c] = qprof[q0 + a, c]
                    kind_prof[nk, 5] = pad_score
                    nk += 1
                roff_kinds[a] = found * LANES
        roff = roff_shared if shared else roff_kinds
        cand, n = _score_pass(st, tab, LM, R, ref, shared, ctab, roff, nk, kind_prof, ref_codes, lane_start,
                              lane_len, threshold, lane_threshold, lane_pad, ck, ckpt, ring, cand)
        # Candidates grouped by lane (stable: column-major order inside a lane).
        counts = np.zeros(LANES + 1, np.int64)
        for k in range(n):
            counts[cand[k, 0] + 1] += 1
        for l in range(LANES):
            counts[l + 1] += counts[l]
        pos = counts[:LANES].copy()
        by_lane = np.empty(n, np.int64)
        for k in range(n):
            l = cand[k, 0]
            by_lane[pos[l]] = k
            pos[l] += 1
        for l in range(LANES):
            p = block_lanes[b, l]
            if p < 0:
                continue
            q = lane_query[l]
            L = qlen[q]
            P = lane_pad[l]
            if not shared:
                ref = ref_codes[lane_start[l] : lane_start[l] + lane_len[l]]
            R = ref.shape[0]
            m = counts[l + 1] - counts[l]
            sv_start[p] = n_out
            sv_stop[p] = n_out
            if m == 0:
                continue
            cs = np.empty(m, np.int64)
            ci = np.empty(m, np.int32)
            cj = np.empty(m, np.int32)
            for k in range(m):
                row = by_lane[counts[l] + k]
                cs[k] = cand[row, 1]
                ci[k] = cand[row, 2]
                cj[k] = cand[row, 3]
            keep = order_and_suppress(cs, ci, cj, L, R)
            sv_start[p] = n_out
            q0 = qrow[q]
            prof = qprof[q0 : q0 + L + 1]
            go = qgo[q0 : q0 + L + 1].astype(np.int64)
            ge = qge[q0 : q0 + L + 1].astype(np.int64)
            seed = qseed[q0 : q0 + L + 1]
            # Windows cost about (L + margin) columns each; past R columns in all, one trace of the
            # whole pair is cheaper (long queries: thousands of survivors, windows as wide as L).
            whole = keep.shape[0] * (L + TRACE_MARGIN) > R and (L + 1) * (R + 1) <= WHOLE_TRACE_BYTES
            if whole:
                if (L + 1) * (R + 1) > trace.shape[0]:
                    trace = np.empty((L + 1) * (R + 1), np.uint8)
                _fill_window(prof, go, ge, seed, ref, L, 0, R, dprev, bcol, trace)
            for s in range(keep.shape[0]):
                idx = keep[s]
                i_end = np.int64(ci[idx])
                j_end = np.int64(cj[idx])
                if whole:
                    if L + j_end + 2 > buf.shape[0]:
                        buf = np.empty(2 * (L + j_end + 2), np.uint8)
                    i0, j0, nop = _trace_window(trace, R + 1, 0, i_end, j_end, buf)
                else:
                    k = max(j_end - i_end - TRACE_MARGIN, 0) // ckpt
                    while True:
                        c = k * ckpt
                        if c > 0:
                            for i in range(L + 1):
                                dprev[i] = ck[k, 0, P + i, l]
                                bcol[i] = ck[k, 1, P + i, l]
                        need = (L + 1) * (j_end - c + 1)
                        if need > trace.shape[0]:
                            trace = np.empty(2 * need, np.uint8)
                        if L + j_end + 2 > buf.shape[0]:
                            buf = np.empty(2 * (L + j_end + 2), np.uint8)
                        i0, j0, nop = _window_trace(prof, go, ge, seed, ref, L, c, i_end, j_end, dprev, bcol, trace, buf)
                        if nop >= 0:
                            break
                        k = max(0, j_end - 2 * (j_end - c)) // ckpt  # twice as wide, down to column 0
                if n_out >= out.shape[0]:
                    bigger = np.empty((2 * out.shape[0], 7), np.int64)
                    bigger[:n_out] = out[:n_out]
                    out = bigger
                if n_ops + nop > ops.shape[0]:
                    ops = grow_array(ops, n_ops + nop)
                for x in range(nop):
                    ops[n_ops + x] = buf[nop - 1 - x]
                out[n_out, 0] = cs[idx]
                out[n_out, 1] = i_end
                out[n_out, 2] = j_end
                out[n_out, 3] = i0
                out[n_out, 4] = j0
                out[n_out, 5] = n_ops
                out[n_out, 6] = n_ops + nop
                n_ops += nop
                n_out += 1
            sv_stop[p] = n_out
    return out[:n_out].copy(), ops[:n_ops].copy()


@dataclass
class QueryArrays:
    """Every query's DP rows (miranda-model §4), concatenated: query q's rows 0..L are ``qrow[q]:qrow[q+1]``.

    ``prof[row, c]``: score against reference class c (the transposed
    :attr:`~gamut.scanning.params.QueryTables.profile`); ``go``, ``ge``, ``seed`` per row; and per
    query the bounds that choose the lane type (:meth:`lane_dtype`).
    """

    qlen: np.ndarray
    qrow: np.ndarray
    prof: np.ndarray  # int64 (rows, 5)
    go: np.ndarray
    ge: np.ndarray
    seed: np.ndarray  # uint8
    top: np.ndarray  # sum of the rows' best positive scores
    high: np.ndarray  # largest score
    low: np.ndarray  # smallest score or gap cost, at most -1
    rise: int = 0  # the most a gap step adds (see gap_rise)
    cast: dict = field(default_factory=dict)

    @classmethod
    def build(cls, queries, params: ScanParams) -> "QueryArrays":
        """Tables of all queries of a :class:`~gamut.scanning.hits.SequenceSet`, one
        :func:`~gamut.scanning.params.row_scheme` per distinct length (same values as
        :func:`~gamut.scanning.params.query_tables`)."""
        offsets = np.asarray(queries.offsets, np.int64)
        qlen = np.diff(offsets)
        qrow = np.zeros(qlen.shape[0] + 1, np.int64)
        np.cumsum(qlen + 1, out=qrow[1:])
        rows = int(qrow[-1])
        prof = np.zeros((rows, 5), np.int64)
        go = np.zeros(rows, np.int64)
        ge = np.zeros(rows, np.int64)
        seed = np.zeros(rows, np.uint8)
        codes = np.asarray(queries.codes, np.int64)
        for L in np.unique(qlen):
            L = int(L)
            scheme = row_scheme(L, params)
            members = np.flatnonzero(qlen == L)
            # reversed query: row i (1..L) holds letter L - i of the query
            letters = codes[offsets[members][:, None] + (L - np.arange(1, L + 1))[None, :]]
            at = qrow[members][:, None] + np.arange(1, L + 1)[None, :]
            prof[at] = scheme.scores[np.arange(1, L + 1)[None, :], letters]
            go[qrow[members][:, None] + np.arange(L + 1)] = scheme.gap_open
            ge[qrow[members][:, None] + np.arange(L + 1)] = scheme.gap_extend
            seed[qrow[members][:, None] + np.arange(L + 1)] = scheme.seed_row
        starts = qrow[:-1]
        top = np.add.reduceat(np.maximum(prof.max(axis=1), 0), starts) if rows else np.zeros(0, np.int64)
        high = np.maximum.reduceat(prof.max(axis=1), starts) if rows else np.zeros(0, np.int64)
        lows = np.minimum(np.minimum(prof.min(axis=1), go), ge)
        low = np.minimum(np.minimum.reduceat(lows, starts), -1) if rows else np.zeros(0, np.int64)
        return cls(qlen, qrow, prof, go, ge, seed, top, high, low, gap_rise(params))

    def bound(self, used: np.ndarray, ref_length: int) -> int:
        """The largest value a cell can hold for queries ``used`` against references of at most
        ``ref_length`` letters (:func:`~gamut.scanning.params.score_bound`)."""
        return score_bound(int(self.top[used].max()), self.rise, ref_length)

    def lane_dtype(self, used: np.ndarray, ref_length: int = 0) -> type:
        """The narrowest lane type in which the score-only pass is exact for queries ``used``
        against references of at most ``ref_length`` letters.

        Cells hold D in [0, bound] and A, B, C in [low, bound] (bound: :meth:`bound`, low: the most
        negative score or gap cost, or -1); the pass also forms D + score, A + open and
        C + extend, so bound + max(high, rise) and 2 * low must fit.
        """
        high = max(int(self.high[used].max()), self.rise)
        return exact_int_type(self.bound(used, ref_length) + high, 2 * int(self.low[used].min()))

    def tables(self, dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(prof, go, ge) in the lane type (cached)."""
        if dtype not in self.cast:
            self.cast[dtype] = (self.prof.astype(dtype), self.go.astype(dtype), self.ge.astype(dtype))
        return self.cast[dtype]


class SimdEngine:
    """Multicore SIMD CPU engine (see the module docstring). ``threads``: None = all cores;
    ``checkpoint_bytes``: checkpoint memory per thread (results never depend on it)."""

    name = "simd"
    energy_device = "cpu"
    #: Larger chunks give the blocking more queries per reference to fill its lanes.
    preferred_chunk_cells = 1 << 30
    preferred_chunk_pairs = 200_000

    def __init__(self, threads: int | None = None, checkpoint_bytes: int = 32 << 20) -> None:
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.checkpoint_bytes = checkpoint_bytes  # per thread
        self._queries: tuple = (None, None, None)  # (query set, params, QueryArrays) of the last call

    def query_arrays(self, queries, params: ScanParams) -> QueryArrays:
        """:class:`QueryArrays` of ``queries``, reused while the same set and parameters come back."""
        last, last_params, arrays = self._queries
        if last is not queries or last_params != params:
            arrays = QueryArrays.build(queries, params)
            self._queries = (queries, params, arrays)
        return arrays

    def align(self, queries, references, pairs: np.ndarray, params: ScanParams) -> ChunkAlignments:
        """Survivors of every pair (see :class:`~gamut.scanning.alignments.AlignmentEngine`).

        ``queries`` and ``references`` are :class:`~gamut.scanning.hits.SequenceSet` objects.
        """
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        n = pairs.shape[0]
        if n == 0:
            return ChunkAlignments.empty(0)
        qa = self.query_arrays(queries, params)
        r_off = np.asarray(references.offsets, np.int64)
        ref_codes = np.ascontiguousarray(references.codes).view(np.uint8)
        pair_query = np.ascontiguousarray(pairs[:, 0])
        used = np.zeros(qa.qlen.shape[0], bool)
        used[pair_query] = True
        longest = int(np.diff(r_off)[pairs[:, 1]].max())
        dtype = qa.lane_dtype(used, longest)
        qprof, qgo, qge = qa.tables(dtype)
        threshold = int(params.score_threshold)
        lane_threshold = dtype(min(max(threshold, 0), int(np.iinfo(dtype).max) - 2))
        pad_score = -qa.bound(used, longest) - 1  # D + pad_score < 0: A stays 0 past a lane's end

        pair_ref = np.ascontiguousarray(pairs[:, 1])
        block_ref, block_lanes, block_lm, block_new = make_blocks(pair_ref, np.diff(r_off), qa.qlen, pair_query)
        rlen = np.diff(r_off)[pair_ref]
        block_r = np.where(block_lanes >= 0, rlen[np.maximum(block_lanes, 0)], 0).max(axis=1)
        runs = split_runs(block_lm * (block_r + 1), self.threads)
        args = (pair_query, pair_ref, ref_codes, r_off, qa.qlen, qa.qrow, qprof, qgo, qge, qa.seed, threshold,
                lane_threshold, pad_score, self.checkpoint_bytes)

        sv_start = np.zeros(n, np.int64)
        sv_stop = np.zeros(n, np.int64)

        def run(span: tuple[int, int]):
            a, b = span
            new = block_new[a:b].copy()
            new[0] = True
            return align_blocks(block_ref[a:b], block_lanes[a:b], block_lm[a:b], new, *args, sv_start, sv_stop)

        if self.threads == 1 or len(runs) == 1:
            results = [run(s) for s in runs]
        else:
            with ThreadPoolExecutor(self.threads) as pool:
                results = list(pool.map(run, runs))
        return merge_runs(results, runs, block_lanes, sv_start, sv_stop)


def merge_runs(results: list, runs: list, block_lanes: np.ndarray, sv_start: np.ndarray,
               sv_stop: np.ndarray) -> ChunkAlignments:
    """One :class:`ChunkAlignments` from the runs' outputs (``sv_*`` hold rows of each run's own
    output until shifted here)."""
    counts = [r[0].shape[0] for r in results]
    row_base = np.cumsum([0] + counts)[:-1]
    op_base = np.cumsum([0] + [r[1].shape[0] for r in results])[:-1]
    bounds = np.array(runs, np.int64).reshape(-1, 2)
    _shift_rows(sv_start, sv_stop, block_lanes, bounds, row_base)
    cols = np.concatenate([r[0] for r in results])
    shift = np.repeat(op_base, counts)
    ops = np.concatenate([r[1] for r in results])
    return ChunkAlignments(sv_start, sv_stop, cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3], cols[:, 4],
                           cols[:, 5] + shift, cols[:, 6] + shift, ops)


@njit(cache=True, nogil=True)
def _shift_rows(sv_start, sv_stop, block_lanes, bounds, row_base):
    for k in range(bounds.shape[0]):
        for b in range(bounds[k, 0], bounds[k, 1]):
            for l in range(LANES):
                p = block_lanes[b, l]
                if p >= 0:
                    sv_start[p] += row_base[k]
                    sv_stop[p] += row_base[k]


@njit(cache=True, nogil=True)
def _pack(pair_ref, pair_rank, pair_query, qlen, n_refs, n_ranks):
    """Pairs ordered by (group, rank) with two stable counting sorts, cut into blocks of LANES
    pairs of one group (``pair_ref``: the group, a reference or a query). Returns (block_group,
    block_lanes (indices into the given pairs), block_lm, key): key is a hash of the block's
    queries (equal queries, equal keys)."""
    n = pair_ref.shape[0]
    count = np.zeros(max(n_refs, n_ranks) + 1, np.int64)
    by_rank = np.empty(n, np.int64)
    for k in range(n):
        count[pair_rank[k] + 1] += 1
    for x in range(n_ranks):
        count[x + 1] += count[x]
    for k in range(n):
        by_rank[count[pair_rank[k]]] = k
        count[pair_rank[k]] += 1
    count[:] = 0
    for k in range(n):
        count[pair_ref[k] + 1] += 1
    for x in range(n_refs):
        count[x + 1] += count[x]
    start = count[: n_refs + 1].copy()
    order = np.empty(n, np.int64)
    for k in range(n):
        p = by_rank[k]
        order[count[pair_ref[p]]] = p
        count[pair_ref[p]] += 1
    n_blocks = 0
    for r in range(n_refs):
        n_blocks += (start[r + 1] - start[r] + LANES - 1) // LANES
    block_ref = np.empty(n_blocks, np.int64)
    lanes = np.full((n_blocks, LANES), -1, np.int64)
    b = 0
    for r in range(n_refs):
        for k in range(start[r], start[r + 1]):
            if (k - start[r]) % LANES == 0:
                block_ref[b] = r
                b += 1
            lanes[b - 1, (k - start[r]) % LANES] = order[k]
    lm = np.zeros(n_blocks, np.int64)
    key = np.zeros(n_blocks, np.uint64)
    for b in range(n_blocks):
        h = np.uint64(1469598103934665603)
        for l in range(LANES):
            p = lanes[b, l]
            q = pair_query[p] if p >= 0 else -1
            if p >= 0:
                lm[b] = max(lm[b], qlen[q])
            h = (h ^ np.uint64(q + 1)) * np.uint64(1099511628211)
        key[b] = h
    return block_ref, lanes, lm, key


def make_blocks(pair_ref: np.ndarray, ref_len: np.ndarray, qlen: np.ndarray, pair_query: np.ndarray):
    """Pack pairs into blocks of :data:`LANES` pairs.

    Pairs of a reference with at least :data:`SHARED_MIN` pairs share that reference (queries
    sorted by length); the others are grouped by query (references sorted by length).
    Returns (block_ref (-1: lanes share the query), block_lanes (n_blocks, LANES), block_lm,
    block_new); blocks are ordered so that blocks with the same queries (a cross product) follow
    each other, and ``block_new[b]`` says whether block b's queries differ from block b-1's.
    """
    n_queries = qlen.shape[0]
    n_refs = ref_len.shape[0]
    per_ref = np.bincount(pair_ref, minlength=n_refs)
    shared = per_ref[pair_ref] >= SHARED_MIN
    parts = []
    for mask, by_ref in ((shared, True), (~shared, False)):
        index = np.flatnonzero(mask)
        if index.shape[0] == 0:
            continue
        if by_ref:  # groups: references; lanes: queries by length
            rank = np.empty(n_queries, np.int64)
            rank[np.lexsort((np.arange(n_queries), qlen))] = np.arange(n_queries)
            group, key_of = pair_ref[index], rank[pair_query[index]]
            n_groups, n_keys = n_refs, n_queries
        else:  # groups: queries; lanes: references by length
            rank = np.empty(n_refs, np.int64)
            rank[np.lexsort((np.arange(n_refs), ref_len))] = np.arange(n_refs)
            group, key_of = pair_query[index], rank[pair_ref[index]]
            n_groups, n_keys = n_queries, n_refs
        block_group, lanes, lm, key = _pack(group, key_of, pair_query[index], qlen, n_groups, n_keys)
        lanes = np.where(lanes >= 0, index[np.maximum(lanes, 0)], -1)
        block_ref = block_group if by_ref else np.full(block_group.shape[0], -1, np.int64)
        by = np.lexsort((block_ref, key))
        parts.append((block_ref[by], lanes[by], lm[by]))
    block_ref = np.concatenate([p[0] for p in parts])
    lanes = np.concatenate([p[1] for p in parts])
    lm = np.concatenate([p[2] for p in parts])
    return block_ref, lanes, lm, _new_queries(lanes, pair_query)


@njit(cache=True, nogil=True)
def _new_queries(lanes, pair_query):
    """Whether each block's lane queries differ from the previous block's."""
    nb = lanes.shape[0]
    new = np.ones(nb, np.bool_)
    for b in range(1, nb):
        same = True
        for l in range(LANES):
            p, o = lanes[b, l], lanes[b - 1, l]
            qp = pair_query[p] if p >= 0 else -1
            qo = pair_query[o] if o >= 0 else -1
            same &= qp == qo
        new[b] = not same
    return new


def split_runs(cost: np.ndarray, threads: int) -> list[tuple[int, int]]:
    """Contiguous runs of blocks of about equal cost: 4 per thread (1 when single-threaded)."""
    nb = cost.shape[0]
    parts = 1 if threads == 1 else min(nb, 4 * threads)
    edges = np.searchsorted(np.cumsum(cost), np.linspace(0, cost.sum(), parts + 1)[1:-1], side="right")
    bounds = [0, *sorted(set(int(e) for e in edges if 0 < e < nb)), nb]
    return [(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]
