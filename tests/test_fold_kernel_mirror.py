"""A line-by-line Python mirror of the CUDA kernels in ``nussinov.cu`` (any tile size), run on the CPU.

It checks the GPU algorithm's indexing (tile order, split-K ranges, the staged diagonal tiles,
the boundary row/column of the pair term, the anti-diagonal sweep) against the CPU blocked engine,
cell for cell, so CI covers the kernels' logic without a GPU. ``test_fold_gpu.py`` runs the real
kernels against the same CPU engine on a GPU machine.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gamut.folding.tiled import fill_tiled, tile_count

BOND_MASK = (1 << 3) | (1 << 15) | (1 << 7) | (1 << 11) | (1 << 13) | (1 << 17)
KERNEL = Path(__file__).resolve().parents[1] / "src" / "gamut" / "cuda" / "kernels" / "nussinov.cu"


def tile_index(I, J, nb):
    d = J - I
    return d * nb - d * (d - 1) // 2 + I


def closes(seq, n, min_loop, i, j):
    if j > n or j - i < min_loop + 2:
        return False
    return (BOND_MASK >> (5 * int(seq[i]) + int(seq[j - 1]))) & 1 == 1


def nussinov_diagonal(tiles, seq, n, nb, min_loop, I, T):
    S = np.zeros((T, T), np.int64)
    base = I * T
    for delta in range(1, T):
        for t in range(T):  # the block's threads; each reads only earlier diagonals
            li, lj = t, t + delta
            if lj < T:
                v = 0
                for k in range(li + 1, lj):
                    v = max(S[li][k] + S[k][lj], v)
                if closes(seq, n, min_loop, base + li, base + lj):
                    v = max(v, S[li + 1][lj - 1] + 1)
                S[li][lj] = v
    tiles[tile_index(I, I, nb)] = S


def nussinov_maxplus(tiles, nb, d, kchunk, I, block_y, grid_y):
    J = I + d
    k0 = I + 1 + block_y * kchunk
    k1 = min(k0 + kchunk, J)
    T = tiles.shape[1]
    acc = np.zeros((T, T), np.int64)
    for K in range(k0, k1):
        A, B = tiles[tile_index(I, K, nb)], tiles[tile_index(K, J, nb)]
        acc = np.maximum(acc, (A[:, :, None] + B[None, :, :]).max(axis=1))
    C = tiles[tile_index(I, J, nb)]
    if grid_y == 1:
        C[:] = acc
    else:  # atomicMax
        np.maximum(C, acc, out=C)


def nussinov_finish(tiles, seq, n, nb, d, min_loop, I, T):
    J = I + d
    C = tiles[tile_index(I, J, nb)].reshape(-1)
    L = tiles[tile_index(I, I, nb)].reshape(-1)
    R = tiles[tile_index(J, J, nb)].reshape(-1)
    S = np.zeros((T, T), np.int64)
    X = np.zeros((T, T), np.int64)
    below = np.zeros(T, np.int64)
    left = np.zeros(T, np.int64)
    for t in range(T):
        for r in range(T):
            S[r][t] = C[r * T + t]
            rv = R[r * T + t]
            if t > r:
                X[r][t] = L[r * T + t]
                X[t][r] = rv
        if t >= 1:
            below[t] = tiles[tile_index(I + 1, J, nb)].reshape(-1)[t - 1]
        if t < T - 1:
            left[t] = tiles[tile_index(I, J - 1, nb)].reshape(-1)[(t + 1) * T + T - 1]
        else:
            left[t] = tiles[tile_index(I + 1, J - 1, nb)].reshape(-1)[T - 1] if d >= 2 else 0
    ibase, jbase = I * T, J * T
    for s in range(2 * T - 1):
        for t in range(T):  # cells of one anti-diagonal never read each other
            li, lj = T - 1 - t, s - t
            if 0 <= lj < T:
                v = S[li][lj]
                for k in range(li + 1, T):
                    v = max(X[li][k] + S[k][lj], v)
                for k in range(lj):
                    v = max(S[li][k] + X[lj][k], v)
                if closes(seq, n, min_loop, ibase + li, jbase + lj):
                    if li + 1 < T:
                        inner = S[li + 1][lj - 1] if lj > 0 else left[li]
                    else:
                        inner = below[lj] if lj > 0 else left[T - 1]
                    v = max(v, inner + 1)
                S[li][lj] = v
    tiles[tile_index(I, J, nb)] = S


def fill_like_gpu(codes, min_loop, T, target_blocks):
    """The host loop of ``gamut.folding.gpu.fill_gpu`` with the kernels above."""
    n = len(codes)
    nb, count = tile_count(n, T)
    tiles = np.zeros((count, T, T), np.int64)
    for I in range(nb):
        nussinov_diagonal(tiles, codes, n, nb, min_loop, I, T)
    for d in range(1, nb):
        width = nb - d
        if d >= 2:
            depth = d - 1
            splits = min(depth, max(1, -(-target_blocks // width)))
            chunk = -(-depth // splits)
            splits = -(-depth // chunk)
            for I in range(width):
                for y in range(splits):
                    nussinov_maxplus(tiles, nb, d, chunk, I, y, splits)
        for I in range(width):
            nussinov_finish(tiles, codes, n, nb, d, min_loop, I, T)
    return tiles


@pytest.mark.parametrize(
    "n,min_loop,tile,target",
    [(0, 1, 4, 4), (1, 1, 4, 4), (7, 0, 4, 1), (31, 1, 4, 0), (45, 3, 8, 8), (64, 0, 8, 3), (90, 2, 8, 100),
     (100, 1, 16, 5)],
)
def test_kernel_mirror_equals_cpu_blocked(n, min_loop, tile, target):
    codes = np.random.default_rng(n * 7 + tile).integers(0, 5, n).astype(np.uint8)
    assert np.array_equal(fill_like_gpu(codes, min_loop, tile, target), fill_tiled(codes, min_loop, tile, np.int32))


def test_mirror_matches_kernel_source():
    """The constants and launch shape mirrored here are the ones in the CUDA source."""
    source = KERNEL.read_text()
    assert "(1u << 3) | (1u << 15) | (1u << 7) | (1u << 11) | (1u << 13) | (1u << 17)" in source
    assert "return d * nb - d * (d - 1) / 2 + I;" in source
    assert "if (j > n || j - i < min_loop + 2) return false;" in source
    assert "const int k0 = I + 1 + blockIdx.y * kchunk;" in source
    assert "for (int s = 0; s < 2 * TILE - 1; ++s)" in source
