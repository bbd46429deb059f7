"""CPU engines for Gelfand's spliced alignment: the sequential reference and a fast multicore one.

Every engine computes the same two arrays over the sorted exons (``K`` exons, target length ``n``):

- ``last[k, j]``: ``S(E(k), j, k)``, the best score of aligning ``target[:j]`` to a chain that
  ends with exon ``k`` (the exon's last DP row; the only row the paper keeps per exon);
- ``pred[k, j]``: the exon that precedes ``k`` when the alignment enters exon ``k`` at target
  column ``j`` (``-1`` when ``k`` starts the chain, with ``target[:j]`` aligned to gaps).

Tie rule (identical in every engine): the entry value of exon ``k`` at column ``j`` is the
maximum of ``j * gap`` (chain start) and ``last[l, j]`` over exons ``l`` with
``end_l <= start_k``; ties go to the chain start, then to the smallest sorted index ``l``.
:func:`traceback` then picks the best final exon (smallest sorted index on ties) and, inside an
exon, prefers diagonal over vertical (base symbol against a gap) over horizontal moves.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numba
import numpy as np
from numba import njit, prange

from gamut.splicing.model import SpliceCase

NEG = np.int32(-(2**29))
#: Smallest case (target length x total exon length) that the fast engine splits among threads.
PARALLEL_MIN_CELLS = 20_000_000

# Alignment operations in traceback output.
OP_MATCH = 0  # base symbol against target symbol
OP_BASE_GAP = 1  # base symbol against a gap (deletion from the target)
OP_TARGET_GAP = 2  # gap against a target symbol (insertion in the target)


@njit(cache=True, nogil=True)
def _reference_forward(base, starts, ends, target, matrix, gap, last, pred):
    """Equations (1)-(2) of Nolasco & Moreano, exon by exon, predecessors scanned one by one."""
    n_exons = starts.size
    n = target.size
    entry = np.empty(n + 1, np.int64)
    prev = np.empty(n + 1, np.int64)
    cur = np.empty(n + 1, np.int64)
    for k in range(n_exons):
        # max over b_l preceding b_k of S(E(l), j, l); the virtual start row scores j * gap.
        for j in range(n + 1):
            best = j * gap
            arg = -1
            for l in range(k):  # a predecessor starts before k, so it comes earlier when sorted
                if ends[l] <= starts[k] and last[l, j] > best:
                    best = last[l, j]
                    arg = l
            entry[j] = best
            pred[k, j] = arg
        # Equation (2): the first symbol of b_k.
        a = base[starts[k]]
        cur[0] = entry[0] + gap
        for j in range(1, n + 1):
            cur[j] = max(entry[j - 1] + matrix[a, target[j - 1]], entry[j] + gap, cur[j - 1] + gap)
        # Equation (1): the other symbols of b_k.
        for i in range(starts[k] + 1, ends[k]):
            prev[:] = cur
            a = base[i]
            cur[0] = prev[0] + gap
            for j in range(1, n + 1):
                cur[j] = max(prev[j - 1] + matrix[a, target[j - 1]], prev[j] + gap, cur[j - 1] + gap)
        for j in range(n + 1):
            last[k, j] = cur[j]


@njit(cache=True, nogil=True, inline="always")
def _row_step(row, p, ramp, gap, tmp):
    """One DP row below ``row`` (scores ``p[j]`` of its base symbol against target column j),
    left in ``tmp`` as ``h[j] - ramp[j]`` (``ramp[j] = j * gap``); ``row`` is not changed.

    ``c[j] = max(diag + score, up + gap)`` (vectorisable), then the horizontal moves
    ``h[j] = max(c[j], h[j-1] + gap)``, computed as ``j*gap + prefix_max(c[j'] - j'*gap)`` so the
    serial part is a single max per cell.
    """
    n1 = row.size
    tmp[0] = row[0] + gap
    for j in range(1, n1):
        d = row[j - 1] + p[j]
        u = row[j] + gap
        tmp[j] = max(d, u) - ramp[j]
    run = tmp[0]
    for j in range(1, n1):
        run = max(run, tmp[j])  # branch-free: data-dependent branches mispredict
        tmp[j] = run


@njit(cache=True, nogil=True)
def _exon_rows(base, start, end, profile, ramp, gap, row, tmp):
    """Run the exon's rows over ``row`` (its entry row on input, its last row on output)."""
    n1 = row.size
    for i in range(start, end):
        _row_step(row, profile[base[i]], ramp, gap, tmp)
        for j in range(n1):
            row[j] = tmp[j] + ramp[j]


@njit(cache=True, nogil=True)
def _profile(target, matrix):
    """``profile[a, j] = matrix[a, target[j - 1]]`` for j >= 1 (column 0 unused)."""
    n = target.size
    prof = np.zeros((matrix.shape[0], n + 1), np.int32)
    for a in range(matrix.shape[0]):
        for j in range(1, n + 1):
            prof[a, j] = matrix[a, target[j - 1]]
    return prof


@njit(cache=True, nogil=True)
def _fold_predecessors(last, ends, by_end, start, folded, best, best_arg, c0, c1):
    """Fold the exons that end at or before ``start`` (``by_end[folded:]``, in end order) into the
    running best last row over columns ``c0:c1``; ties go to the smallest exon index. Returns the
    new number of folded exons."""
    while folded < by_end.size and ends[by_end[folded]] <= start:
        l = by_end[folded]
        for j in range(c0, c1):
            v = last[l, j]
            if v > best[j] or (v == best[j] and l < best_arg[j]):
                best[j] = v
                best_arg[j] = l
        folded += 1
    return folded


@njit(cache=True, nogil=True)
def _entry_row(best, best_arg, gap, c0, c1, row, pred_row):
    """An exon's entry row over columns ``c0:c1``: the best predecessor's last row, or ``j * gap``
    (chain start, ``pred = -1``), which wins ties."""
    for j in range(c0, c1):
        v = j * gap
        if best[j] > v:
            row[j] = best[j]
            pred_row[j] = best_arg[j]
        else:
            row[j] = v
            pred_row[j] = -1


@njit(cache=True, nogil=True)
def _fast_forward(base, starts, ends, target, matrix, gap, last, pred):
    """One thread: exons in start order, predecessors folded once into a running best row."""
    n_exons = starts.size
    n1 = target.size + 1
    profile = _profile(target, matrix)
    ramp = (np.arange(n1) * gap).astype(np.int32)
    by_end = np.argsort(ends, kind="mergesort")
    best = np.full(n1, NEG, np.int32)
    best_arg = np.full(n1, -1, np.int32)
    row = np.empty(n1, np.int32)
    tmp = np.empty(n1, np.int32)
    folded = 0
    for k in range(n_exons):
        folded = _fold_predecessors(last, ends, by_end, starts[k], folded, best, best_arg, 0, n1)
        _entry_row(best, best_arg, gap, 0, n1, row, pred[k])
        _exon_rows(base, starts[k], ends[k], profile, ramp, gap, row, tmp)
        last[k, :] = row


@njit(cache=True, nogil=True)
def _block_starts(lengths, rows, block_rows):
    """Exon and row-in-exon (0 = entry row) at the first stream row of every block."""
    n_blocks = (rows + block_rows - 1) // block_rows
    blk_k = np.zeros(n_blocks, np.int64)
    blk_i = np.zeros(n_blocks, np.int64)
    k = 0
    i = 0
    for b in range(n_blocks):
        blk_k[b] = k
        blk_i[b] = i
        for _ in range(block_rows):
            if k >= lengths.size:
                break
            if i == lengths[k]:
                k += 1
                i = 0
            else:
                i += 1
    return blk_k, blk_i


@njit(cache=True, nogil=True)
def _tile(base, starts, ends, lengths, by_end, profile, ramp, gap, last, pred, prev, best, best_arg,
          folded, edge, c, c0, c1, r, row0, row1, k, i, has_left, has_right, left_diag):
    """Stream rows ``row0:row1`` over columns ``c0:c1`` (the CPU twin of one GPU warp's chunk)."""
    slot = r % 3
    tmp = np.empty(c1 - c0, np.int32)
    for row in range(row0, row1):
        left = edge[c - 1, slot, row - row0] if has_left else NEG
        if i == 0:
            folded[c] = _fold_predecessors(last, ends, by_end, starts[k], folded[c], best, best_arg, c0, c1)
            _entry_row(best, best_arg, gap, c0, c1, prev, pred[k])
        else:
            p = profile[base[starts[k] + i - 1]]
            d = left_diag + p[c0]
            u = prev[c0] + gap
            tmp[0] = max(d, u) - ramp[c0]
            for j in range(c0 + 1, c1):
                d = prev[j - 1] + p[j]
                u = prev[j] + gap
                tmp[j - c0] = max(d, u) - ramp[j]
            run = left - ramp[c0] + gap  # h[c0 - 1] - ramp[c0 - 1]
            for j in range(c0, c1):
                run = max(run, tmp[j - c0])
                prev[j] = run + ramp[j]
            if i == lengths[k]:
                for j in range(c0, c1):
                    last[k, j] = prev[j]
        if has_right:
            edge[c, slot, row - row0] = prev[c1 - 1]
        left_diag = left
        if i == lengths[k]:
            k += 1
            i = 0
        else:
            i += 1


@njit(cache=True, nogil=True, parallel=True)
def _tiled_forward(base, starts, ends, target, matrix, gap, last, pred, n_chunks, block_rows):
    """Multicore single case: tiles of (stream-row block x column chunk) by anti-diagonals.

    The GPU kernel's data flow on CPU threads: every column chunk keeps its own running best of
    the predecessors' last rows (inter-exon dependencies are column-local) and the column left of
    a chunk is handed over per row through ``edge`` (a ring of three blocks, so that tiles of one
    anti-diagonal never write what another reads).
    """
    n_exons = starts.size
    n1 = target.size + 1
    profile = _profile(target, matrix)
    ramp = (np.arange(n1) * gap).astype(np.int32)
    by_end = np.argsort(ends, kind="mergesort")
    lengths = ends - starts
    rows = lengths.sum() + n_exons
    blk_k, blk_i = _block_starts(lengths, rows, block_rows)
    n_blocks = blk_k.size
    prev = np.empty(n1, np.int32)
    best = np.full(n1, NEG, np.int32)
    best_arg = np.full(n1, -1, np.int32)
    folded = np.zeros(n_chunks, np.int64)
    edge = np.empty((n_chunks, 3, block_rows), np.int32)
    for diag in range(n_blocks + n_chunks - 1):
        lo = max(0, diag - n_blocks + 1)
        hi = min(n_chunks - 1, diag)
        for c in prange(lo, hi + 1):
            r = diag - c
            c0 = c * n1 // n_chunks
            c1 = (c + 1) * n1 // n_chunks
            row0 = r * block_rows
            row1 = min(rows, row0 + block_rows)
            left_diag = NEG
            if c > 0 and r > 0:
                left_diag = edge[c - 1, (r - 1) % 3, block_rows - 1]
            _tile(base, starts, ends, lengths, by_end, profile, ramp, gap, last, pred, prev, best, best_arg,
                  folded, edge, c, c0, c1, r, row0, row1, blk_k[r], blk_i[r], c > 0, c < n_chunks - 1, left_diag)


def _arrays(case: SpliceCase) -> tuple[np.ndarray, np.ndarray]:
    shape = (case.n_exons, case.target.size + 1)
    return np.empty(shape, np.int32), np.empty(shape, np.int32)


def forward_reference(case: SpliceCase, matrix: np.ndarray, gap: int) -> tuple[np.ndarray, np.ndarray]:
    """``(last, pred)`` by the sequential reference (O(K^2 n) predecessor scans)."""
    last, pred = _arrays(case)
    _reference_forward(case.base, case.starts, case.ends, case.target, matrix, np.int64(gap), last, pred)
    return last, pred


def forward_fast(case: SpliceCase, matrix: np.ndarray, gap: int, parallel: bool = True,
                 block_rows: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """``(last, pred)`` by the fast engine; ``parallel`` splits the target columns among all
    cores (tiles by anti-diagonals) for large cases (``PARALLEL_MIN_CELLS``) with a target of
    256+ nt, else one thread (a barrier per anti-diagonal would cost more than it gains)."""
    last, pred = _arrays(case)
    n1 = case.target.size + 1
    n_chunks = min(numba.get_num_threads(), n1 // 128)
    if parallel and n_chunks > 1 and case.cells >= PARALLEL_MIN_CELLS:
        _tiled_forward(case.base, case.starts, case.ends, case.target, matrix, np.int32(gap), last, pred,
                       n_chunks, block_rows)
    else:
        _fast_forward(case.base, case.starts, case.ends, case.target, matrix, np.int32(gap), last, pred)
    return last, pred


def forward_fast_many(
    cases: Sequence[SpliceCase], matrix: np.ndarray, gap: int, threads: int | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Batch mode: one case per thread (the serial fast engine releases the GIL)."""
    threads = threads or numba.get_num_threads()

    def one(case: SpliceCase) -> tuple[np.ndarray, np.ndarray]:
        last, pred = _arrays(case)
        _fast_forward(case.base, case.starts, case.ends, case.target, matrix, np.int32(gap), last, pred)
        return last, pred

    if threads <= 1 or len(cases) <= 1:
        return [one(case) for case in cases]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, cases))


@njit(cache=True, nogil=True)
def _exon_moves(base, start, length, profile, ramp, gap, row, tmp, moves):
    """:func:`_exon_rows` that also records each cell's move in ``moves[i, j]`` (row 0 unused):
    diagonal, then vertical, then horizontal on ties, decided once the row is known."""
    width = row.size
    for i in range(1, length + 1):
        p = profile[base[start + i - 1]]
        _row_step(row, p, ramp, gap, tmp)
        mv = moves[i]
        mv[0] = OP_BASE_GAP
        for j in range(1, width):
            d = row[j - 1] + p[j]
            u = row[j] + gap
            h = tmp[j - 1] + ramp[j - 1] + gap
            mv[j] = OP_MATCH if (d >= u and d >= h) else (OP_BASE_GAP if u >= h else OP_TARGET_GAP)
        for j in range(width):
            row[j] = tmp[j] + ramp[j]


@njit(cache=True, nogil=True)
def _traceback(base, starts, ends, target, matrix, gap, last, pred):
    n = target.size
    n_exons = starts.size
    best = 0
    for k in range(1, n_exons):
        if last[k, n] > last[best, n]:
            best = k
    score = last[best, n]
    cap = n + 1
    for k in range(n_exons):
        cap += ends[k] - starts[k]
    ops = np.empty(cap, np.uint8)
    chain = np.empty(n_exons, np.int64)
    profile = _profile(target, matrix)
    ramp = (np.arange(n + 1) * gap).astype(np.int32)  # |scores| < 2**28 (checked on input)
    tmp = np.empty(n + 1, np.int32)
    n_ops = 0
    n_chain = 0
    k = best
    j = n
    while True:
        chain[n_chain] = k
        n_chain += 1
        length = ends[k] - starts[k]
        width = j + 1
        row = np.empty(width, np.int32)
        for jj in range(width):
            p = pred[k, jj]
            row[jj] = ramp[jj] if p < 0 else last[p, jj]
        moves = np.empty((length + 1, width), np.uint8)
        _exon_moves(base, starts[k], length, profile, ramp, np.int32(gap), row, tmp[:width], moves)
        i = length
        while i > 0:
            m = moves[i, j]
            ops[n_ops] = m
            if m == OP_MATCH:
                i -= 1
                j -= 1
            elif m == OP_BASE_GAP:
                i -= 1
            else:
                j -= 1
            n_ops += 1
        p = pred[k, j]
        if p >= 0 and (p >= k or ends[p] > starts[k]):
            raise ValueError("pred names an exon that cannot precede")
        if p < 0:
            while j > 0:
                ops[n_ops] = OP_TARGET_GAP
                j -= 1
                n_ops += 1
            break
        k = p
    return score, chain[:n_chain][::-1].copy(), ops[:n_ops][::-1].copy()


def traceback(case: SpliceCase, matrix: np.ndarray, gap: int, last: np.ndarray, pred: np.ndarray
              ) -> tuple[int, np.ndarray, np.ndarray]:
    """``(score, chain, ops)`` from an engine's ``last``/``pred``: the best final exon (smallest
    sorted index on ties), the chain's sorted exon indices in order and the alignment operations
    (``OP_*``) in order.

    Exons are recomputed one at a time, so memory stays O(exon x target). Raises ``RuntimeError``
    when ``pred`` names a predecessor that cannot precede; :func:`gamut.splicing.result.build_results`
    checks the rest (that the alignment spells the chain and target and scores ``score``).
    """
    try:
        score, chain, ops = _traceback(case.base, case.starts, case.ends, case.target, matrix, np.int64(gap), last, pred)
    except ValueError as exc:
        raise RuntimeError(f"{case.name}: {exc}: the last/pred arrays are inconsistent") from None
    return int(score), chain, ops
