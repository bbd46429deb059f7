"""CPU engines for Nussinov folding (Li, Ranka & Sahni 2014, after Chang et al. 2010).

All three fill ``M[i, j] = C(i, j)``, the maximum number of pairs in ``s[i..j]`` (closed interval,
0-based), for ``i <= j`` with the simplified recurrence::

    C(i, j) = max( C(i+1, j-1) + bond(s[i], s[j])   if j - i - 1 >= min_loop,
                   max_{i <= k < j} C(i, k) + C(k+1, j) )

(``C(i, i) = 0``; the split with ``k = i`` or ``k = j-1`` leaves ``s[i]`` or ``s[j]`` unpaired).

- :func:`fill_cpu1`: the naive code (CPU1): reads ``C(k+1, j)`` down a column.
- :func:`fill_cpu2`: the cache-efficient code (CPU2): each value is also stored transposed in the
  lower triangle, ``M[j, i] = C(i, j)``, so ``C(k+1, j) = M[j, k+1]`` is read along a row.
- :func:`fill_multicore`: CPU2 with the cells of each diagonal spread over cores (OMP2), the
  threads synchronising once per band of diagonals.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from gamut.folding.sequence import BOND_MASK

INT16_LIMIT = 65534  # n < 65534 keeps every count (at most n // 2) below 32767


def matrix_dtype(n: int) -> type:
    """Smallest signed integer type that holds every score of a length-``n`` sequence."""
    return np.int16 if n < INT16_LIMIT else np.int32


@njit(cache=True, nogil=True, inline="always")
def _bond(a, b) -> int:
    return (BOND_MASK >> (5 * np.int64(a) + np.int64(b))) & 1


@njit(cache=True, nogil=True)
def fill_cpu1(codes, min_loop, M):
    """CPU1: the naive diagonal-by-diagonal fill of the upper triangle of ``M`` (zeroed, n x n)."""
    n = codes.shape[0]
    for diag in range(1, n):
        for row in range(n - diag):
            col = row + diag
            best = M.dtype.type(0)
            if diag > min_loop and _bond(codes[row], codes[col]):
                inner = M[row + 1, col - 1] if diag >= 2 else 0
                best = M.dtype.type(inner + 1)
            for k in range(row, col):
                t = M.dtype.type(M[row, k] + M[k + 1, col])
                best = max(best, t)
            M[row, col] = best


@njit(cache=True, nogil=True)
def _max_split(a, b, lo, hi, best):
    """``max(best, max_{lo <= k < hi} a[k] + b[k+1])`` in the arrays' own type (vectorises)."""
    for k in range(lo, hi):
        best = max(best, a.dtype.type(a[k] + b[k + 1]))
    return best


@njit(cache=True, nogil=True, inline="always")
def _cell_cpu2(codes, min_loop, M, row, col):
    diag = col - row
    best = M.dtype.type(0)
    if diag > min_loop and _bond(codes[row], codes[col]):
        inner = M[row + 1, col - 1] if diag >= 2 else 0
        best = M.dtype.type(inner + 1)
    best = _max_split(M[row], M[col], row, col, best)
    M[row, col] = best
    M[col, row] = best


@njit(cache=True, nogil=True)
def fill_cpu2(codes, min_loop, M):
    """CPU2: like CPU1 but reading ``C(k+1, j)`` from the transposed copy ``M[j, k+1]``."""
    n = codes.shape[0]
    for diag in range(1, n):
        for row in range(n - diag):
            _cell_cpu2(codes, min_loop, M, row, row + diag)


@njit(cache=True, nogil=True, parallel=True)
def fill_multicore(codes, min_loop, M, band=32, chunks=2):
    """OMP2: CPU2 with the cells of each diagonal spread over ``chunks`` threads.

    Threads meet once per ``band`` diagonals instead of once per diagonal: a thread owning rows
    ``[a, b)`` also recomputes the ``band - 1`` rows below ``b`` that its later diagonals need
    (writing the same values as their owner), so within a band it reads only its own cells.
    """
    n = codes.shape[0]
    for d0 in range(1, n, band):
        d1 = min(d0 + band, n)
        rows = n - d0
        parts = min(chunks, max(1, rows // (4 * band)))
        for c in prange(parts):
            a = rows * c // parts
            b = rows * (c + 1) // parts
            for d in range(d0, d1):
                hi = min(b + (d1 - 1 - d), n - d)
                for row in range(a, hi):
                    _cell_cpu2(codes, min_loop, M, row, row + d)


FILLERS = {"cpu1": fill_cpu1, "cpu2": fill_cpu2, "multicore": fill_multicore}


def fill_matrix(codes: np.ndarray, min_loop: int, engine: str = "multicore") -> np.ndarray:
    """Allocate and fill the n x n score matrix with a CPU ``engine``; ``M[i, j] = C(i, j)`` for i <= j."""
    n = int(codes.shape[0])
    M = np.zeros((n, n), dtype=matrix_dtype(n))
    if not n:
        return M
    if engine == "multicore":
        import numba

        fill_multicore(codes, np.int64(min_loop), M, 32, numba.get_num_threads())
    else:
        FILLERS[engine](codes, np.int64(min_loop), M)
    return M
