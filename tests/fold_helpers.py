"""Independent checks for folding tests: brute-force optimum and structure validation."""
from __future__ import annotations

import ctypes
from functools import lru_cache
from pathlib import Path

import numpy as np

from host_build import load_host_library

PAIRS = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}


def rna(sequence: str) -> str:
    return sequence.upper().replace("T", "U")


def brute_force_pairs(sequence: str, min_loop: int) -> int:
    """Largest pair count over every non-crossing structure, enumerated one by one (tiny inputs)."""
    s = rna(sequence)

    def counts(i: int, j: int):
        """Yield the pair count of every structure on s[i..j]."""
        if i >= j:
            yield 0
            return
        yield from counts(i + 1, j)  # s[i] unpaired
        for k in range(i + min_loop + 1, j + 1):
            if (s[i], s[k]) in PAIRS:
                inside = list(counts(i + 1, k - 1))
                for right in counts(k + 1, j):
                    for left in inside:
                        yield 1 + left + right

    return max(counts(0, len(s) - 1))


def slow_max_pairs(sequence: str, min_loop: int) -> int:
    """Memoised 'first base unpaired or paired with k' recurrence (a different decomposition)."""
    return slow_interval_pairs(sequence, min_loop)(0, len(sequence) - 1) if sequence else 0


def slow_interval_pairs(sequence: str, min_loop: int):
    """``best(i, j)``: the maximum pair count of ``sequence[i..j]`` by the slow recurrence."""
    s = rna(sequence)

    @lru_cache(maxsize=None)
    def best(i: int, j: int) -> int:
        if j - i < min_loop + 1:
            return 0
        value = best(i + 1, j)
        for k in range(i + min_loop + 1, j + 1):
            if (s[i], s[k]) in PAIRS:
                value = max(value, 1 + best(i + 1, k - 1) + best(k + 1, j))
        return value

    return best


def check_structure(sequence: str, structure: str, pairs: int, min_loop: int) -> None:
    """Assert ``structure`` is balanced, non-crossing, pairs only AU/GC/GU with loops >= min_loop."""
    s = rna(sequence)
    assert len(structure) == len(s)
    assert set(structure) <= set("(.)")
    stack: list[int] = []
    found = 0
    for pos, ch in enumerate(structure):
        if ch == "(":
            stack.append(pos)
        elif ch == ")":
            assert stack, f"unmatched ')' at {pos}"
            i = stack.pop()
            assert (s[i], s[pos]) in PAIRS, f"{s[i]}{s[pos]} at {i},{pos} cannot pair"
            assert pos - i - 1 >= min_loop, f"loop of {pos - i - 1} < {min_loop} at {i},{pos}"
            found += 1
    assert not stack, "unmatched '('"
    assert found == pairs


class FoldHarness:
    """``tests/host/nussinov_harness.cu`` built with g++: the CUDA kernels' index helpers, the
    device traceback and the batch kernel run on the CPU (block-serially) for tests without a GPU.
    Skips the calling test when g++ is missing."""

    def __init__(self, directory: Path) -> None:
        self.lib = h = load_host_library("nussinov_harness", directory)
        for name in ("host_tile_index", "host_tile_offset"):
            getattr(h, name).restype = ctypes.c_longlong
            getattr(h, name).argtypes = [ctypes.c_int] * 3
        ptr = ctypes.c_void_p
        h.host_traceback.restype = ctypes.c_int
        h.host_traceback.argtypes = [ptr, ptr, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ptr]
        h.host_batch_fold.restype = ctypes.c_int
        h.host_batch_fold.argtypes = [ptr, ctypes.c_int, ctypes.c_int, ptr]

    def traceback(self, tiles: np.ndarray, codes: np.ndarray, min_loop: int, threads: int = 256) -> np.ndarray:
        """The device traceback (``nussinov_traceback``) on an int32 tiled triangle; raises
        ``RuntimeError`` as :func:`gamut.folding.gpu.traceback_gpu` does."""
        tiles = np.ascontiguousarray(tiles, dtype=np.int32)
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        n = int(codes.shape[0])
        nb = (n + tiles.shape[1]) // tiles.shape[1]
        partner = np.full(max(n, 1), -1, np.int32)
        status = self.lib.host_traceback(tiles.ctypes.data, codes.ctypes.data, n, nb, min_loop, threads,
                                         partner.ctypes.data)
        if status:
            raise RuntimeError("traceback found no optimal move: the score matrix is inconsistent")
        return partner[:n].astype(np.int64)

    def batch_fold(self, codes: np.ndarray, min_loop: int) -> tuple[int, str]:
        """One block of the batch kernel (``nussinov_batch``): ``(score, dot-bracket)``."""
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        out = np.zeros(max(codes.size, 1), np.uint8)
        score = self.lib.host_batch_fold(codes.ctypes.data, codes.size, min_loop, out.ctypes.data)
        return score, out[:codes.size].tobytes().decode()
