"""Step 3 of the SIMD engine (:mod:`gamut.scanning.engines.simd`): tracebacks of survivors only.

The full three-state DP with trace bytes is recomputed in a window of columns that starts at a
checkpoint of the score-only pass (:mod:`.simd_score`) before the survivor's end; a traceback
that needs columns before the window is redone by the caller from an earlier checkpoint (column
0 at worst), so results never depend on the window size.

Trace byte per cell: bits 0-1 ``tA`` (the state A came from diagonally, 0..3), bit 2 set when B
extends a gap, bit 3 set when C extends a gap, bits 4-5 ``tBest`` (the state of the cell's best
value, 0 when it is not positive), so a traceback needs only these bytes (miranda-model §7.1).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from gamut.scanning.alignments import OP_MATCH, OP_QGAP, OP_RGAP


@njit(inline="always")
def best_state(a, b, c):
    """The largest of states A, B and C and its trace code (1, 2, 3), A winning ties, then B
    (miRanda's order, miranda-model §5)."""
    if a >= b and a >= c:
        return a, 1
    if b >= c:
        return b, 2
    return c, 3

#: Columns, beyond the query length, that a traceback window reaches back at first.
TRACE_MARGIN = 16
#: Largest trace (bytes, one per cell) of a whole pair, used when its survivors' windows would
#: recompute more columns than the pair has.
WHOLE_TRACE_BYTES = 64 << 20

@njit(cache=True, nogil=True)
def fill_window(prof, go, ge, seed, ref, L, c, j_end, dprev, bcol, trace):
    """The full three-state DP with trace bytes over the window of columns c..j_end, rows 1..L.

    ``dprev[i]`` = D(i, c-1) and ``bcol[i]`` = B(i, c) (exact; ignored when c = 0, where the
    column is all zero). Columns c+1..j_end get trace bytes (see the module docstring)
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
            m, tA = best_state(dA, dB, dC)
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
            best, tb = best_state(A, B, C)
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
def trace_window(trace, width, c, i_end, j_end, ops):
    """Traceback of the candidate (i_end, j_end) through a window filled by :func:`fill_window`
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
def window_trace(prof, go, ge, seed, ref, L, c, i_end, j_end, dprev, bcol, trace, ops):
    """Traceback of the candidate (i_end, j_end) in the window of columns c..j_end (see
    :func:`fill_window` and :func:`trace_window`)."""
    fill_window(prof, go, ge, seed, ref, L, c, j_end, dprev, bcol, trace)
    return trace_window(trace, j_end - c + 1, c, i_end, j_end, ops)

