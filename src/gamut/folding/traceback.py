"""Iterative traceback (no recursion, any length): one optimal structure from a filled matrix.

Works on both storages: the dense matrix of the CPU1/CPU2/multicore engines (``M[i, j] = C(i, j)``)
and the tiled half-open triangle of the blocked CPU and GPU engines (``C(i, j) = D(i, j + 1)``).
At each interval it prefers, in order: ``s[j]`` unpaired, ``s[i]`` unpaired, ``(i, j)`` paired,
then the leftmost split ``k`` with ``C(i, k) + C(k+1, j) = C(i, j)``. The GPU engine runs the
same rules on the device (``nussinov_traceback`` and ``nussinov_batch`` in ``nussinov.cu``), so
every engine returns the same structure.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from gamut.folding.sequence import BOND_MASK
from gamut.folding.tiled import tiled_value

DENSE, TILED = 0, 1


@njit(cache=True, nogil=True, inline="always")
def _c(kind, dense, tiles, nb, i, j):
    """``C(i, j)`` for the closed interval (0 when empty)."""
    if j <= i:
        return 0
    if kind == DENSE:
        return np.int64(dense[i, j])
    return np.int64(tiled_value(tiles, nb, i, j + 1))


@njit(cache=True, nogil=True)
def _traceback(kind, dense, tiles, nb, codes, min_loop):
    n = codes.shape[0]
    partner = np.full(n, -1, dtype=np.int64)
    stack = np.empty(2 * n + 2, dtype=np.int64)
    top = 0
    if n > 1:
        stack[0] = 0
        stack[1] = n - 1
        top = 2
    while top:
        top -= 2
        i = stack[top]
        j = stack[top + 1]
        while i < j:
            v = _c(kind, dense, tiles, nb, i, j)
            if v == 0:
                break
            if _c(kind, dense, tiles, nb, i, j - 1) == v:
                j -= 1
                continue
            if _c(kind, dense, tiles, nb, i + 1, j) == v:
                i += 1
                continue
            if (j - i - 1 >= min_loop and (BOND_MASK >> (5 * np.int64(codes[i]) + np.int64(codes[j]))) & 1
                    and _c(kind, dense, tiles, nb, i + 1, j - 1) + 1 == v):
                partner[i] = j
                partner[j] = i
                i += 1
                j -= 1
                continue
            # The leftmost split k: C(i, k) + C(k+1, j) moves by at most 1 per step of k, so a
            # candidate short of v by `deficit` rules out the next deficit - 1 as well.
            found = -1
            k = i + 1
            while k < j - 1:
                deficit = v - _c(kind, dense, tiles, nb, i, k) - _c(kind, dense, tiles, nb, k + 1, j)
                if deficit == 0:
                    found = k
                    break
                k += max(deficit, 1)
            if found < 0:  # cannot happen for a correctly filled matrix
                partner[0] = -2
                return partner
            stack[top] = found + 1
            stack[top + 1] = j
            top += 2
            j = found
    return partner


@njit(cache=True, nogil=True)
def greedy_pairs(codes, min_loop):
    """Pairs of a quick valid structure (a lower bound on the optimum): each base ``j`` pairs with
    the nearest of the last few open bases that may close a loop with it, as in bracket matching;
    the open bases skipped over stay unpaired inside the new pair."""
    stack = np.empty(codes.shape[0], dtype=np.int64)
    top = 0
    pairs = 0
    for j in range(codes.shape[0]):
        found = -1
        for x in range(top - 1, max(top - 1 - min_loop - 8, -1), -1):
            i = stack[x]
            if j - i - 1 >= min_loop and (BOND_MASK >> (5 * np.int64(codes[i]) + np.int64(codes[j]))) & 1:
                found = x
                break
        if found >= 0:
            top = found
            pairs += 1
        else:
            stack[top] = j
            top += 1
    return pairs


def traceback_dense(M: np.ndarray, codes: np.ndarray, min_loop: int) -> np.ndarray:
    """Partner table (``-1`` = unpaired) of one optimal structure from a dense matrix."""
    empty = np.zeros((1, 1, 1), dtype=M.dtype)
    return _check(_traceback(DENSE, M, empty, 1, codes, np.int64(min_loop)))


def traceback_tiled(tiles: np.ndarray, codes: np.ndarray, min_loop: int) -> np.ndarray:
    """Partner table of one optimal structure from the tiled half-open triangle."""
    nb = (codes.shape[0] + tiles.shape[1]) // tiles.shape[1]
    empty = np.zeros((1, 1), dtype=tiles.dtype)
    return _check(_traceback(TILED, empty, tiles, nb, codes, np.int64(min_loop)))


def _check(partner: np.ndarray) -> np.ndarray:
    if partner.size and partner[0] == -2:
        raise RuntimeError("traceback found no optimal move: the score matrix is inconsistent")
    return partner


def dot_bracket(partner: np.ndarray) -> str:
    """Dot-bracket string of a partner table."""
    idx = np.arange(partner.size)
    out = np.full(partner.size, ord("."), dtype=np.uint8)
    out[(partner >= 0) & (partner > idx)] = ord("(")
    out[(partner >= 0) & (partner < idx)] = ord(")")
    return out.tobytes().decode("ascii")
