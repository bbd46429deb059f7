"""The reference alignment engine of the tests: miRanda's three-state DP over whole matrices.

The production engines (:mod:`gamut.scanning.engines.simd`, :mod:`gamut.scanning.engines.gpu`)
are compared with this one, and this one with the plain-Python transcription
(:mod:`scan_reference`). Everything here is exact integer arithmetic following miranda-model
§5-7.1: the full trace matrix of a pair, its candidates, diagonal suppression and traceback.
:func:`align_block` aligns a block of pairs in one compiled call that releases the GIL, so blocks
run in parallel on threads (see :class:`CpuEngine`).

Trace byte per cell (row-major ``trace[i, j]``): bits 0-1 ``tA`` (0..3), bit 2 set when
``tB`` = 2 (extension), bit 3 set when ``tC`` = 3 (extension), bits 4-5 ``tBest`` (0..3).
``best(i, j) > 0`` exactly when ``tBest != 0``, so traceback needs only these bytes.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from gamut.scanning.alignments import OP_MATCH, OP_QGAP, OP_RGAP, ChunkAlignments
from gamut.scanning.engines.common import QueryCache, grow_array, order_and_suppress
from gamut.scanning.params import (
    exact_int_type,
    gap_rise,
    query_tables,
    row_scheme,
    score_bound,
)

STATE_A, STATE_B, STATE_C = 1, 2, 3


@njit(cache=True, nogil=True)
def fill_matrix(qrev, ref, profile, gap_open, gap_ext, seed_row, threshold, trace):
    """Run the DP over all cells; fill ``trace`` and return candidates (score, i, j).

    ``qrev``: reversed query classes (length L, row i is ``qrev[i-1]``); ``ref``: reference classes
    (uint8); ``profile[i, c]``: score of row i against reference class c; gap arrays and ``seed_row`` are
    indexed by row (0..L). ``trace`` has shape (L+1, R+1). Candidates come in generation order
    (i ascending, then j ascending).

    Row by row: A and C depend only on the row above, so they are computed in a branch-free,
    vectorisable pass; B is a serial scan along the row; ``best``, the trace byte and the
    candidate test are vectorisable again. The DP rows use ``profile``'s integer type: int16
    when every value provably fits (see :func:`dp_tables`), else int32 or int64.
    """
    L = qrev.shape[0]
    R = ref.shape[0]
    upA = np.zeros(R + 1, profile.dtype)
    upB = np.zeros(R + 1, profile.dtype)
    upC = np.zeros(R + 1, profile.dtype)
    rowA = np.zeros(R + 1, profile.dtype)
    rowB = np.zeros(R + 1, profile.dtype)
    rowC = np.zeros(R + 1, profile.dtype)
    tAC = np.zeros(R + 1, np.uint8)
    extB = np.zeros(R + 1, np.uint8)
    score = np.empty(R + 1, profile.dtype)
    cs = np.empty(64, np.int64)
    ci = np.empty(64, np.int32)
    cj = np.empty(64, np.int32)
    n = 0
    for i in range(1, L + 1):
        go = gap_open[i]
        ge = gap_ext[i]
        seed = seed_row[i] != 0
        prow = profile[i]
        for j in range(1, R + 1):
            score[j] = prow[ref[j - 1]]
        # Pass 1 (no dependence along the row): A with its diagonal choice, and C.
        for j in range(1, R + 1):
            dA = upA[j - 1]
            dB = upB[j - 1]
            dC = upC[j - 1]
            b_ge_c = dB >= dC
            mbc = dB if b_ge_c else dC
            a_wins = dA >= mbc
            m = dA if a_wins else mbc
            tA = np.uint8(1) if a_wins else (np.uint8(2) if b_ge_c else np.uint8(3))
            A = m + score[j]
            pos = A > 0
            rowA[j] = A if pos else 0
            tA = tA if pos else np.uint8(0)
            o = upA[j] + go
            e = upC[j] + ge
            ext = e > o
            C = e if ext else o
            rowC[j] = -1 if seed else C
            tAC[j] = tA | (np.uint8(8) if (ext and not seed) else np.uint8(0))
        # Pass 2 (the only serial part, a scan along the row): B and its extension bit.
        B = rowA[0]  # zero, in the DP's integer type
        left = rowA[0]
        for j in range(1, R + 1):
            o = left + go
            e = B + ge
            ext = e > o
            B = e if ext else o
            rowB[j] = B
            extB[j] = np.uint8(4) if ext else np.uint8(0)
            left = rowA[j]
        # Pass 3 (vectorisable): best with its preference, the trace byte, candidates.
        row_cands = 0
        trow = trace[i]
        for j in range(1, R + 1):
            A = rowA[j]
            B = rowB[j]
            C = rowC[j]
            c_wins_b = C > B
            mbc = C if c_wins_b else B
            a_wins = A >= mbc
            best = A if a_wins else mbc
            tb = np.uint8(1) if a_wins else (np.uint8(3) if c_wins_b else np.uint8(2))
            positive = best > 0
            tb = tb if positive else np.uint8(0)
            best = best if positive else 0
            trow[j] = tAC[j] | extB[j] | (tb << np.uint8(4))
            # 5. candidates: best >= threshold, not ending in state B (only counted here)
            row_cands += np.int32((best >= threshold) & (tb != 2))
        if row_cands:  # rare: collect them, recomputing best from the row values
            if n + row_cands > cs.shape[0]:
                cs = grow_array(cs, n + row_cands)
                ci = grow_array(ci, n + row_cands)
                cj = grow_array(cj, n + row_cands)
            for j in range(1, R + 1):
                tb = (trow[j] >> 4) & 3
                best = max(rowA[j], rowB[j], rowC[j], 0)
                if tb != 2 and best >= threshold:
                    cs[n] = best
                    ci[n] = i
                    cj[n] = j
                    n += 1
        upA, rowA = rowA, upA
        upB, rowB = rowB, upB
        upC, rowC = rowC, upC
    return cs[:n], ci[:n], cj[:n]


@njit(cache=True, nogil=True)
def trace_back(trace, i_end, j_end, ops):
    """Follow the trace from (i_end, j_end); write ops (in reverse) into ``ops``.

    Returns (i0, j0, n_ops): the cell where the traceback stopped and how many ops it wrote.
    """
    i = i_end
    j = j_end
    state = (trace[i, j] >> 4) & 3
    n = 0
    while i > 0 and j > 0:
        t = trace[i, j]
        if (t >> 4) & 3 == 0 or state == 0:
            break
        if state == STATE_A:
            ops[n] = OP_MATCH
            state = t & 3
            i -= 1
            j -= 1
        elif state == STATE_B:
            ops[n] = OP_QGAP
            state = STATE_B if t & 4 else STATE_A
            j -= 1
        else:
            ops[n] = OP_RGAP
            state = STATE_C if t & 8 else STATE_A
            i -= 1
        n += 1
    return i, j, n


@njit(cache=True, nogil=True)
def trace_survivors(trace, cs, ci, cj, keep):
    """Tracebacks of the survivors ``keep`` (indices into the candidates), in that order."""
    L = trace.shape[0] - 1
    R = trace.shape[1] - 1
    s = keep.shape[0]
    score = np.empty(s, np.int64)
    i_end = np.empty(s, np.int32)
    j_end = np.empty(s, np.int32)
    i_start = np.empty(s, np.int32)
    j_start = np.empty(s, np.int32)
    offsets = np.zeros(s + 1, np.int64)
    ops = np.empty(64, np.uint8)
    buf = np.empty(L + R + 2, np.uint8)
    for k in range(s):
        idx = keep[k]
        score[k] = cs[idx]
        i_end[k] = ci[idx]
        j_end[k] = cj[idx]
        i0, j0, n_ops = trace_back(trace, ci[idx], cj[idx], buf)
        i_start[k] = i0
        j_start[k] = j0
        base = offsets[k]
        if base + n_ops > ops.shape[0]:
            ops = grow_array(ops, base + n_ops)
        for x in range(n_ops):
            ops[base + x] = buf[n_ops - 1 - x]
        offsets[k + 1] = base + n_ops
    return score, i_end, j_end, i_start, j_start, offsets, ops[: offsets[s]]


def score_extremes(tables) -> tuple[int, int, int]:
    """(top, high, low) of a query's :class:`~gamut.scanning.params.QueryTables`: the sum of its rows'
    best positive scores, its largest score, and its most negative score or gap cost (at most -1)."""
    top = int(np.maximum(tables.profile, 0).max(axis=0).sum())
    high = int(tables.profile.max())
    low = min(int(tables.gap_open.min()), int(tables.gap_extend.min()), int(tables.profile.min()), -1)
    return top, high, low


def dp_tables(tables, ref_length: int = 0, rise: int = 0):
    """(profile[row, class], gap_open, gap_extend) in the narrowest exact integer type for the DP rows
    against references of up to ``ref_length`` letters (``rise``: :func:`~gamut.scanning.params.gap_rise`).

    Stored values lie in [min(gap_open, -1), bound] (bound: :func:`~gamut.scanning.params.score_bound`):
    B and C are at least an opening from a non-negative A. int16 halves memory traffic and
    doubles SIMD width; int32 or int64 are used when the bounds do not fit.
    """
    top, high, low = score_extremes(tables)
    dtype = exact_int_type(score_bound(top, rise, ref_length) + max(high, rise), 2 * low)
    profile_rows = np.ascontiguousarray(tables.profile.T, dtype=dtype)  # [row, class]: one row per DP row
    return (profile_rows, tables.gap_open.astype(dtype), tables.gap_extend.astype(dtype))


@njit(cache=True, nogil=True)
def align_block(qrev_flat, q_off, prof_flat, go_flat, ge_flat, seed_flat, row_off, refs, r_off,
                pair_q, pair_r, threshold):
    """Align the pairs ``(pair_q[p], pair_r[p])`` one after the other in one compiled call.

    Query q's reversed classes are ``qrev_flat[q_off[q]:q_off[q+1]]`` and its DP rows 0..L
    (profile rows, gap costs, seed flags) ``*_flat[row_off[q]:row_off[q+1]]``; reference r is
    ``refs[r_off[r]:r_off[r+1]]``. Returns per pair its survivor count and, per survivor, the
    fields of :class:`~gamut.scanning.alignments.ChunkAlignments` (op offsets local to this block).
    """
    n = pair_q.shape[0]
    need = 1
    for p in range(n):
        L = q_off[pair_q[p] + 1] - q_off[pair_q[p]]
        R = r_off[pair_r[p] + 1] - r_off[pair_r[p]]
        need = max(need, (L + 1) * (R + 1))
    workspace = np.empty(need, np.uint8)  # one trace buffer, reused by every pair of the block
    counts = np.zeros(n, np.int64)
    cap = 64
    score = np.empty(cap, np.int64)
    i_end = np.empty(cap, np.int64)
    j_end = np.empty(cap, np.int64)
    i_start = np.empty(cap, np.int64)
    j_start = np.empty(cap, np.int64)
    op_start = np.empty(cap, np.int64)
    op_end = np.empty(cap, np.int64)
    ops = np.empty(256, np.uint8)
    rows = 0
    n_ops = 0
    for p in range(n):
        q = pair_q[p]
        a = q_off[q]
        L = q_off[q + 1] - a
        b = row_off[q]
        ref = refs[r_off[pair_r[p]]:r_off[pair_r[p] + 1]]
        R = ref.shape[0]
        if L == 0 or R == 0:
            continue
        trace = workspace[: (L + 1) * (R + 1)].reshape((L + 1, R + 1))
        cs, ci, cj = fill_matrix(qrev_flat[a:a + L], ref, prof_flat[b:b + L + 1], go_flat[b:b + L + 1],
                                 ge_flat[b:b + L + 1], seed_flat[b:b + L + 1], threshold, trace)
        if cs.shape[0] == 0:
            continue
        keep = order_and_suppress(cs, ci, cj, L, R)
        s_score, s_ie, s_je, s_is, s_js, s_off, s_ops = trace_survivors(trace, cs, ci, cj, keep)
        k = s_score.shape[0]
        counts[p] = k
        if rows + k > score.shape[0]:
            score = grow_array(score, rows + k)
            i_end = grow_array(i_end, rows + k)
            j_end = grow_array(j_end, rows + k)
            i_start = grow_array(i_start, rows + k)
            j_start = grow_array(j_start, rows + k)
            op_start = grow_array(op_start, rows + k)
            op_end = grow_array(op_end, rows + k)
        if n_ops + s_ops.shape[0] > ops.shape[0]:
            ops = grow_array(ops, n_ops + s_ops.shape[0])
        for x in range(k):
            score[rows + x] = s_score[x]
            i_end[rows + x] = s_ie[x]
            j_end[rows + x] = s_je[x]
            i_start[rows + x] = s_is[x]
            j_start[rows + x] = s_js[x]
            op_start[rows + x] = n_ops + s_off[x]
            op_end[rows + x] = n_ops + s_off[x + 1]
        ops[n_ops:n_ops + s_ops.shape[0]] = s_ops
        rows += k
        n_ops += s_ops.shape[0]
    return (counts, score[:rows], i_end[:rows], j_end[:rows], i_start[:rows], j_start[:rows],
            op_start[:rows], op_end[:rows], ops[:n_ops])


class QueryBank:
    """Every query's DP tables concatenated once; :meth:`typed` gives them in the integer type that
    :meth:`dtype` chooses for a chunk (the widest any of its queries needs, see :func:`dp_tables`)."""

    def __init__(self, queries, params) -> None:
        n = len(queries.offsets) - 1
        lengths = np.diff(queries.offsets)
        schemes: dict[int, object] = {}
        tables = []
        for q in range(n):
            L = int(lengths[q])
            if L not in schemes:
                schemes[L] = row_scheme(L, params)
            tables.append(query_tables(queries.class_codes(q), params, schemes[L]))
        self.rise = gap_rise(params)
        extremes = np.array([score_extremes(t) for t in tables], np.int64).reshape(-1, 3)
        self.top = int(extremes[:, 0].max(initial=0))
        self.high = max(int(extremes[:, 1].max(initial=0)), self.rise)
        self.low = int(extremes[:, 2].min(initial=-1))
        self.q_off = np.asarray(queries.offsets, np.int64)
        self.qrev = (np.concatenate([t.qrev for t in tables]) if n else np.zeros(0, np.int8)).astype(np.int8)
        rows = lengths + 1
        self.row_off = np.zeros(n + 1, np.int64)
        np.cumsum(rows, out=self.row_off[1:])
        cat = lambda parts, shape: np.concatenate(parts).astype(np.int64) if n else np.zeros(shape, np.int64)  # noqa: E731
        self._tables = (np.ascontiguousarray(cat([t.profile.T for t in tables], (0, 5))),
                        cat([t.gap_open for t in tables], (0,)), cat([t.gap_extend for t in tables], (0,)))
        self._typed: dict = {}
        self.seed_row = np.concatenate([t.seed_row for t in tables]).astype(np.uint8) if n else np.zeros(0, np.uint8)

    def dtype(self, ref_length: int) -> type:
        """The DP rows' integer type against references of at most ``ref_length`` letters."""
        return exact_int_type(score_bound(self.top, self.rise, ref_length) + self.high, 2 * self.low)

    def typed(self, dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(profile, gap_open, gap_extend) of every query in ``dtype`` (cached)."""
        if dtype not in self._typed:
            self._typed[dtype] = tuple(np.ascontiguousarray(a.astype(dtype)) for a in self._tables)
        return self._typed[dtype]


class CpuEngine:
    """Multicore reference engine: blocks of pairs, each aligned by one compiled call (:func:`align_block`),
    spread over ``threads`` threads (the calls release the GIL)."""

    name = "cpu"
    energy_device = "cpu"
    occupies_cores = True
    preferred_chunk_cells = 64_000_000
    preferred_chunk_pairs = 50_000
    #: Blocks per thread and chunk: enough for an even load when pair sizes differ.
    BLOCKS_PER_THREAD = 4

    def __init__(self, threads: int | None = None) -> None:
        self.threads = max(1, threads or os.cpu_count() or 1)
        self._banks: QueryCache[QueryBank] = QueryCache(QueryBank)

    def bank(self, queries, params) -> QueryBank:
        """The query tables of ``queries`` (built once per query set and parameters)."""
        return self._banks.get(queries, params)

    def align(self, queries, references, pairs, params):
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        n = pairs.shape[0]
        if n == 0:
            return ChunkAlignments.empty(0)
        bank = self.bank(queries, params)
        refs = references.codes.view(np.uint8)  # classes 0..4: no sign checks
        r_off = np.asarray(references.offsets, np.int64)
        pq = np.ascontiguousarray(pairs[:, 0])
        pr = np.ascontiguousarray(pairs[:, 1])
        threshold = params.score_cutoff
        profile, gap_open, gap_extend = bank.typed(bank.dtype(int(np.diff(r_off)[pr].max())))
        # Blocks of about equal cells (contiguous runs of pairs).
        cells = np.diff(bank.q_off)[pq] * np.diff(r_off)[pr]
        blocks = min(n, 1 if self.threads == 1 else self.threads * self.BLOCKS_PER_THREAD)
        cum = np.cumsum(cells)
        cuts = np.searchsorted(cum, cum[-1] * np.arange(1, blocks) / blocks, side="right")
        bounds = np.unique(np.concatenate(([0], cuts, [n])))

        def one(k: int):
            a, b = int(bounds[k]), int(bounds[k + 1])
            return align_block(bank.qrev, bank.q_off, profile, gap_open, gap_extend, bank.seed_row,
                               bank.row_off, refs, r_off, pq[a:b], pr[a:b], threshold)

        count = len(bounds) - 1
        if self.threads == 1 or count == 1:
            parts = [one(k) for k in range(count)]
        else:
            with ThreadPoolExecutor(min(self.threads, count)) as pool:
                parts = list(pool.map(one, range(count)))
        return ChunkAlignments.concat([_block_alignments(p) for p in parts],
                                      [np.arange(bounds[k], bounds[k + 1]) for k in range(count)], n)


def _block_alignments(part) -> ChunkAlignments:
    """One block's :func:`align_block` result as the :class:`ChunkAlignments` of its pairs."""
    counts = part[0]
    sv_stop = np.cumsum(counts)
    return ChunkAlignments(sv_stop - counts, sv_stop, *part[1:])

