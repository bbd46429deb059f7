"""The exon stream the GPU kernel sweeps, laid out on the host (no CuPy here).

A case's sorted exons become one stream of rows: for exon ``k`` an *entry* row, then one row
per exon symbol, padded with no-op rows to a multiple of ``ROWS`` (the rows a lane computes per
step), so that a tile of ``ROWS`` rows never spans two exons. Each row is one byte:

- 0..4: the base symbol of a DP row, plus :data:`FINISH_BIT` on the exon's last row;
- :data:`ENTRY_CODE`: the exon's entry row; :data:`PAD_CODE`: a no-op row (keeps the row above).

Predecessor folding is planned here too. The entry row of exon ``k`` needs the best last row of
the exons ``l`` with ``end_l <= start_k``; since exons are sorted by start, that set grows with
``k`` and exon ``l`` joins it at ``elig[l]``, the first exon starting at or after ``end_l``.
Folding is a max with ties to the smaller index, so its order does not matter: an exon whose
successor is already eligible (``elig[l] == l + 1``) is folded into the running best as soon as
its last row is computed (:data:`FOLD_NOW`); an exon that overlaps the next ones is *parked*
until the entry of ``elig[l]`` (in a shared-memory slot of the kernel, or re-read from the global
``last`` array when all ``slots`` are busy: :data:`FOLD_GLOBAL`), and an exon that no exon can
follow is never folded (:data:`FOLD_NEVER`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

#: Rows a lane computes per step (the kernel's ROWS); every exon's segment is padded to it.
ROWS = 4
ENTRY_CODE = 5
PAD_CODE = 6
FINISH_BIT = 8
#: Finish actions (``fin``): fold right away, never, or park in the global array; >= 0 is a slot.
FOLD_NOW = -2
FOLD_NEVER = -3
FOLD_GLOBAL = -1


@njit(cache=True, nogil=True)
def _assign_slots(elig, slots):  # pragma: no cover - compiled
    """Finish action of every exon (see the module docstring); greedy slot reuse."""
    k_total = elig.shape[0]
    fin = np.empty(k_total, np.int32)
    busy_until = np.zeros(max(slots, 1), np.int64)  # entry index at which the slot is read
    for l in range(k_total):
        e = elig[l]
        if e >= k_total:
            fin[l] = FOLD_NEVER
        elif e == l + 1:
            fin[l] = FOLD_NOW
        else:
            fin[l] = FOLD_GLOBAL
            for s in range(slots):
                if busy_until[s] <= l:
                    busy_until[s] = e
                    fin[l] = s
                    break
    return fin


@njit(cache=True, nogil=True)
def _same_exons(starts, ends, exon_off, a, b):  # pragma: no cover - compiled
    """Whether cases ``a`` and ``b`` have the same exons."""
    n = exon_off[a + 1] - exon_off[a]
    if exon_off[b + 1] - exon_off[b] != n:
        return False
    for i in range(n):
        if starts[exon_off[a] + i] != starts[exon_off[b] + i] or ends[exon_off[a] + i] != ends[exon_off[b] + i]:
            return False
    return True


@njit(cache=True, nogil=True)
def _plans(base, base_off, starts, ends, exon_off, same_base, slots, rows):  # pragma: no cover - compiled
    """Streams and fold plans of a batch of cases (see :func:`build_plans`), one pass per case. A
    case shares the stream of an earlier case with its base and exons: ``same_base[c]`` is the
    previous case on its base (or -1), and the last 16 distinct exon sets there are tried."""
    n_cases = exon_off.shape[0] - 1
    k_all = starts.shape[0]
    seg_row = np.empty(k_all, np.int64)
    stream_off = np.zeros(n_cases + 1, np.int64)
    stream_rows = np.empty(n_cases, np.int64)
    owner = np.arange(n_cases)  # the case whose stream case c reads
    elig = np.empty(k_all, np.int64)
    fin = np.empty(k_all, np.int32)
    n_fold = 0
    total = 0
    for c in range(n_cases):
        lo, hi = exon_off[c], exon_off[c + 1]
        acc = 0
        for k in range(lo, hi):
            seg_row[k] = acc
            acc += (ends[k] - starts[k] + rows) // rows * rows
        stream_rows[c] = acc
        p, tries = same_base[c], 0
        while p >= 0 and tries < 16:  # earlier cases on the same base, each stream once
            if owner[p] == p:
                if _same_exons(starts, ends, exon_off, p, c):
                    owner[c] = p
                    break
                tries += 1
            p = same_base[p]
        if owner[c] != c:
            stream_off[c] = stream_off[owner[c]]
        else:
            stream_off[c] = total
            total += acc
        elig[lo:hi] = np.searchsorted(starts[lo:hi], ends[lo:hi])  # side="left"
        fin[lo:hi] = _assign_slots(elig[lo:hi], slots)
        for k in range(lo, hi):
            if fin[k] >= FOLD_GLOBAL:
                n_fold += 1
    stream_off[n_cases] = total
    stream = np.full(total, PAD_CODE, np.uint8)
    fold_ptr = np.zeros(k_all + n_cases, np.int32)
    fold = np.empty((n_fold, 2), np.int32)
    f = 0
    for c in range(n_cases):
        lo, hi = exon_off[c], exon_off[c + 1]
        b = base_off[c]
        for k in range(lo, hi):
            if owner[c] != c:
                break
            row = stream_off[c] + seg_row[k]
            stream[row] = ENTRY_CODE
            length = ends[k] - starts[k]
            for i in range(length):
                stream[row + 1 + i] = base[b + starts[k] + i]
            stream[row + length] |= FINISH_BIT
        # Folds in order of the entry that reads them (stable: by exon index within an entry).
        ptr = lo + c  # K + 1 pointers per case
        count = np.zeros(hi - lo + 1, np.int64)
        for k in range(lo, hi):
            if fin[k] >= FOLD_GLOBAL:
                count[elig[k]] += 1
        fold_ptr[ptr] = f
        pos = np.empty(hi - lo + 1, np.int64)
        for e in range(hi - lo + 1):
            pos[e] = f
            f += count[e]
            if e < hi - lo:
                fold_ptr[ptr + e + 1] = f
        for k in range(lo, hi):
            if fin[k] >= FOLD_GLOBAL:
                e = elig[k]
                fold[pos[e], 0] = k - lo
                fold[pos[e], 1] = fin[k]
                pos[e] += 1
    return stream, stream_off, stream_rows, seg_row, fin, fold_ptr, fold


@dataclass(frozen=True)
class StreamPlans:
    """Streams and fold plans of a batch, concatenated (arrays as the kernels read them).

    Case ``c``'s stream is ``stream_rows[c]`` rows from ``stream_off[c]`` (cases with the same
    base and exons share one; ``stream_off[C]`` is the stream's size); exon ``k`` (an index
    into the batch's concatenated exons) has its entry row at ``seg_row[k]`` of its case's
    stream and finish action ``fin[k]``; the ``K + 1`` fold pointers of case ``c`` start at
    ``fold_ptr[exon_off[c] + c]`` and index ``fold`` (rows ``(exon within the case, slot)``).
    """

    stream: np.ndarray  # uint8
    stream_off: np.ndarray  # int64 (C + 1,)
    stream_rows: np.ndarray  # int64 (C,)
    seg_row: np.ndarray  # int64 (K,)
    fin: np.ndarray  # int32 (K,)
    fold_ptr: np.ndarray  # int32 (K + C,)
    fold: np.ndarray  # int32 (F, 2)


def build_plans(base: np.ndarray, base_off: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                exon_off: np.ndarray, slots: int, rows: int = ROWS) -> StreamPlans:
    """Streams and fold plans of concatenated cases: case ``c`` has sorted exons
    ``starts/ends[exon_off[c]:exon_off[c + 1]]`` on the base that begins at ``base[base_off[c]]``;
    cases with the same base and exons share one stream."""
    base_off = np.asarray(base_off, np.int64)
    by_base = np.argsort(base_off, kind="stable")
    same_base = np.full(base_off.size, -1, np.int64)  # the previous case on the same base
    if base_off.size > 1:
        repeat = base_off[by_base[1:]] == base_off[by_base[:-1]]
        same_base[by_base[1:][repeat]] = by_base[:-1][repeat]
    out = _plans(np.ascontiguousarray(base, np.uint8), base_off, np.asarray(starts, np.int64),
                 np.asarray(ends, np.int64), np.asarray(exon_off, np.int64), same_base, int(slots), int(rows))
    return StreamPlans(*out)
