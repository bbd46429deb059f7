"""Triangle-only tiled storage and the blocked algorithm of Li, Ranka & Sahni (CPU version).

The blocked engines (this CPU one and the CUDA one) work on ``D(i, j)``, the maximum number of
pairs in the half-open interval ``s[i:j]`` for ``0 <= i <= j <= n``, so ``C(i, j) = D(i, j + 1)``
and the answer is ``D(0, n)``. In this form the split is a max-plus product on a shared index::

    D(i, j) = max( D(i+1, j-1) + 1                 if s[i], s[j-1] pair and j - i >= min_loop + 2,
                   max_{i < k < j} D(i, k) + D(k, j) )

The ``(n + 1) x (n + 1)`` upper triangle is cut into ``T x T`` tiles ``(I, J)``, ``I <= J``; only
those ``nb (nb + 1) / 2`` tiles are stored, diagonal by diagonal (``tile_index``). Tiles on one
tile diagonal ``d = J - I`` are independent. For ``d >= 2`` the splits with ``k`` in the tiles
strictly between ``I`` and ``J`` form the product ``max_K A(I, K) (+) A(K, J)`` over finished
tiles; the rest (splits inside tiles ``I`` and ``J``, and the pair term) is finished cell by cell.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
from numba import njit, prange

from gamut.folding.sequence import BOND_MASK


def tile_count(n: int, tile: int) -> tuple[int, int]:
    """``(nb, tiles)``: tiles per side of the ``(n+1)``-point triangle and tiles stored."""
    nb = (n + 1 + tile - 1) // tile
    return nb, nb * (nb + 1) // 2


@njit(cache=True, nogil=True, inline="always")
def tile_index(I, J, nb):
    """Position of tile ``(I, J)``, ``I <= J``, in diagonal-major order."""
    d = np.int64(J - I)
    return d * nb - d * (d - 1) // 2 + I


@njit(cache=True, nogil=True, inline="always")
def tiled_value(tiles, nb, i, j):
    """``D(i, j)`` from the tiled triangle (0 for an empty or reversed interval)."""
    if j <= i:
        return 0
    T = tiles.shape[1]
    return tiles[tile_index(i // T, j // T, nb), i % T, j % T]


def corner_block(tiles, n: int, k: int) -> np.ndarray:
    """The top-right ``k x k`` block ``C(a, n - k + b)`` of a tiled triangle (host, or device: only
    the few tiles it lies in are copied)."""
    T = tiles.shape[1]
    nb = (n + T) // T
    block = np.zeros((k, k), dtype=np.int64)
    fetched: dict[tuple[int, int], np.ndarray] = {}
    for a in range(k):
        for b in range(k):
            i, e = a, n - k + b + 1  # C(a, n - k + b) = D(a, n - k + b + 1)
            if e <= i:
                continue
            key = (i // T, e // T)
            if key not in fetched:
                tile = tiles[int(tile_index(key[0], key[1], nb))]
                fetched[key] = tile.get() if hasattr(tile, "get") else np.asarray(tile)
            block[a, b] = fetched[key][i % T, e % T]
    return block


@njit(cache=True, nogil=True, inline="always")
def _pairs(codes, n, min_loop, i, j):
    """True when ``s[i]`` and ``s[j-1]`` may close the interval ``[i, j)``."""
    if j > n or j - i < min_loop + 2:
        return False
    return (BOND_MASK >> (5 * np.int64(codes[i]) + np.int64(codes[j - 1]))) & 1 == 1


@njit(cache=True, nogil=True)
def _maxplus(dst, A, B):
    """``dst[r, c] = max(dst[r, c], max_k A[r, k] + B[k, c])`` (vectorised over ``c``, 4 k at a time)."""
    T = dst.shape[0]
    one = dst.dtype.type
    for r in range(T):
        row = dst[r]
        k = 0
        while k + 4 <= T:
            a0, a1, a2, a3 = A[r, k], A[r, k + 1], A[r, k + 2], A[r, k + 3]
            b0, b1, b2, b3 = B[k], B[k + 1], B[k + 2], B[k + 3]
            for c in range(T):
                row[c] = max(max(row[c], one(a0 + b0[c])), max(max(one(a1 + b1[c]), one(a2 + b2[c])), one(a3 + b3[c])))
            k += 4
        while k < T:
            a0 = A[r, k]
            b0 = B[k]
            for c in range(T):
                row[c] = max(row[c], one(a0 + b0[c]))
            k += 1


@njit(cache=True, nogil=True)
def _push(row, v, src, start):
    """``row[c] = max(row[c], v + src[c])`` for ``c >= start``."""
    one = row.dtype.type
    for c in range(start, row.shape[0]):
        row[c] = max(row[c], one(v + src[c]))


@njit(cache=True, nogil=True)
def _diagonal_tile(codes, n, min_loop, S, base):
    """Fill diagonal tile ``S`` (rows and columns from ``base``) row by row from the bottom."""
    T = S.shape[0]
    one = S.dtype.type
    for li in range(T - 1, -1, -1):
        row = S[li]
        for lj in range(li + 1, T):
            v = row[lj]
            if _pairs(codes, n, min_loop, base + li, base + lj):
                v = max(v, one(S[li + 1, lj - 1] + 1))
            row[lj] = v
            if lj + 1 < T:
                _push(row, v, S[lj], lj + 1)


@njit(cache=True, nogil=True)
def _finish_tile(codes, n, min_loop, tiles, nb, I, J):
    """Finish tile ``(I, J)``, ``I < J``, whose cells already hold the product over tiles between."""
    T = tiles.shape[1]
    one = tiles.dtype.type
    S = tiles[tile_index(I, J, nb)]
    L = tiles[tile_index(I, I, nb)]
    R = tiles[tile_index(J, J, nb)]
    for li in range(T - 1, -1, -1):
        row = S[li]
        for k in range(li + 1, T):  # splits at k in tile I: D(i, k) from L, D(k, j) from rows below
            _push(row, L[li, k], S[k], 0)
        i = I * T + li
        for lj in range(T):
            j = J * T + lj
            v = row[lj]
            if _pairs(codes, n, min_loop, i, j):
                if li + 1 < T and lj > 0:
                    inner = S[li + 1, lj - 1]
                else:
                    inner = tiled_value(tiles, nb, i + 1, j - 1)
                v = max(v, one(inner + 1))
            row[lj] = v
            if lj + 1 < T:  # splits at k = j in tile J: D(i, j) + D(j, c)
                _push(row, v, R[lj], lj + 1)


@njit(cache=True, nogil=True)
def _tile(codes, n, min_loop, tiles, nb, I, J):
    T = tiles.shape[1]
    if I == J:
        _diagonal_tile(codes, n, min_loop, tiles[tile_index(I, I, nb)], I * T)
        return
    dst = tiles[tile_index(I, J, nb)]
    for K in range(I + 1, J):
        _maxplus(dst, tiles[tile_index(I, K, nb)], tiles[tile_index(K, J, nb)])
    _finish_tile(codes, n, min_loop, tiles, nb, I, J)


@njit(cache=True, nogil=True, parallel=True)
def fill_diagonals(codes, min_loop, tiles, first, stop):
    """Fill tile diagonals ``first .. stop - 1`` of the tiled triangle ``tiles`` (shape
    ``(nb(nb+1)/2, T, T)``, the earlier diagonals finished), the tiles of a diagonal in parallel."""
    n = codes.shape[0]
    T = tiles.shape[1]
    nb = (n + T) // T
    for d in range(first, stop):
        for I in prange(nb - d):
            _tile(codes, n, min_loop, tiles, nb, I, I + d)


def fill_blocked(codes: np.ndarray, min_loop: int, tiles: np.ndarray) -> None:
    """Fill the zeroed tiled triangle ``tiles`` in one call (every tile diagonal)."""
    nb = (int(codes.shape[0]) + tiles.shape[1]) // tiles.shape[1]
    fill_diagonals(codes, np.int64(min_loop), tiles, 0, nb)


def diagonal_work(n: int, tile: int) -> np.ndarray:
    """Max-plus operations of each tile diagonal: ``nb - d`` tiles, each ``d - 1`` tile products
    plus about one product's worth to finish it (a share of the fill's time, for a progress bar)."""
    nb = (n + tile) // tile
    d = np.arange(nb, dtype=np.int64)
    return (nb - d) * (np.maximum(d - 1, 0) + 1) * tile ** 3


#: Seconds of work between two progress updates: long enough that a call's overhead is lost in it.
BAND_SECONDS = 0.1


def fill_blocked_in_bands(codes: np.ndarray, min_loop: int, tiles: np.ndarray,
                          advance: Callable[[int], None]) -> None:
    """:func:`fill_blocked` a band of tile diagonals at a time (the same cells in the same order,
    so the same values), calling ``advance(ops)`` after each band with its share of
    :func:`diagonal_work`. Each band is sized from the last band's speed to take about
    :data:`BAND_SECONDS`."""
    work = diagonal_work(int(codes.shape[0]), tiles.shape[1])
    nb = work.shape[0]
    min_loop = np.int64(min_loop)
    first, rate = 0, 0.0
    while first < nb:
        stop = first + 1
        budget = rate * BAND_SECONDS
        spent = int(work[first])
        while stop < nb and spent + work[stop] <= budget:
            spent += int(work[stop])
            stop += 1
        start = time.perf_counter()
        fill_diagonals(codes, min_loop, tiles, first, stop)
        rate = spent / max(time.perf_counter() - start, 1e-6)
        advance(spent)
        first = stop


def fill_tiled(codes: np.ndarray, min_loop: int, tile: int = 64, dtype=None,
               advance: Callable[[int], None] | None = None) -> np.ndarray:
    """Allocate and fill the tiled triangle on the CPU; ``dtype`` defaults to int16 when it suffices.
    With ``advance``, fill in bands and report each band's operations (see :func:`diagonal_work`)."""
    from gamut.folding.cpu import matrix_dtype

    n = int(codes.shape[0])
    _, count = tile_count(n, tile)
    tiles = np.zeros((count, tile, tile), dtype=dtype or matrix_dtype(n))
    if advance is None:
        fill_blocked(codes, min_loop, tiles)
    else:
        fill_blocked_in_bands(codes, min_loop, tiles, advance)
    return tiles
