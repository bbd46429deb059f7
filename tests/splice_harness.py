"""The splice traceback kernel built for the host (``tests/host/splice_traceback_harness.cu``
with g++), and a
stand-in for the GPU engine that uses it: CPU forward pass, then the kernel's own traceback code
run block-serially on the packed batch, then the engine's host side (:func:`collect_tracebacks`)."""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Callable

import numpy as np

from gamut.splicing import cpu
from gamut.splicing.batch import CaseBatch
from gamut.splicing.gpu import collect_tracebacks
from gamut.splicing.gpu_layout import TRACEBACK_OPTIONS, PackedBatch, traceback_cap
from gamut.splicing.result import Tracebacks
from host_build import load_host_library


class SpliceHarness:
    """``host_splice_traceback``: the kernel ``splice_traceback`` for every case of a batch, with
    ``threads`` threads per block (at most 1024)."""

    def __init__(self, directory: Path, **defines: int) -> None:
        """``defines``: compile-time constants of the kernel to override (``TB_WIN_ROWS``,
        ``TB_WIN_BYTES``, ``TB_CHUNK``: tiny windows and chunks make every reload path frequent).
        Skips the calling test when g++ is missing."""
        tag = "_".join(f"{k}{v}" for k, v in sorted(defines.items()))
        options = [o for o in TRACEBACK_OPTIONS if o.split("=")[0][2:] not in defines]
        options += [f"-D{k}={v}" for k, v in defines.items()]
        self.lib = load_host_library("splice_traceback_harness", directory, options=["-Wall", "-Werror", *options],
                                     tag=tag)
        self.lib.host_splice_traceback.restype = ctypes.c_int

    def run(self, packed: PackedBatch, last: np.ndarray, pred: np.ndarray, matrix: np.ndarray, gap: int,
            threads: int = 256, cap: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(result, ops, chain)`` buffers as the kernel leaves them, for ``last``/``pred``
        concatenated at ``packed.out_off``; strips of ``cap`` columns (default: the widest case
        in one strip)."""
        keep = []

        def arg(array, dtype):
            a = np.ascontiguousarray(array, dtype)
            keep.append(a)
            return ctypes.c_void_p(a.ctypes.data)

        if cap is None:
            cap = traceback_cap(packed.target_len, 1 << 30)
        bnd_off = packed.bnd_off(cap)
        moves = np.full(max(int(packed.moves_off[-1]), 1), 0xFF, np.uint8)  # garbage where never written
        bnd = np.full(max(int(bnd_off[-1]), 1), 12345, np.int32)
        ops = np.full(max(int(packed.ops_off[-1]), 1), 9, np.uint8)
        chain = np.full(max(int(packed.exon_off[-1]), 1), -7, np.int32)
        result = np.full(4 * packed.n_cases, -1, np.int32)
        i64, i32, u8 = np.int64, np.int32, np.uint8
        status = self.lib.host_splice_traceback(
            arg(last, i32), arg(pred, i32), arg(packed.out_off, i64), arg(packed.stream, u8),
            arg(packed.stream_off, i64), arg(packed.seg_row, i32), arg(packed.starts, i32), arg(packed.ends, i32),
            arg(packed.exon_off, i64), arg(packed.n_exons, i32), arg(packed.target, u8), arg(packed.target_off, i64),
            arg(packed.target_len, i32), arg(np.asarray(matrix).ravel(), i32), ctypes.c_int(int(gap)),
            ctypes.c_void_p(moves.ctypes.data), arg(packed.moves_off, i64), ctypes.c_void_p(bnd.ctypes.data),
            arg(bnd_off, i64), ctypes.c_void_p(ops.ctypes.data), arg(packed.ops_off, i64),
            ctypes.c_void_p(chain.ctypes.data), ctypes.c_void_p(result.ctypes.data), arg(packed.tb_order, i32),
            ctypes.c_int(packed.n_cases), ctypes.c_int(threads), ctypes.c_int(cap))
        assert status == 0, f"bad thread count or cap ({status})"
        return result, ops, chain


def concatenated(arrays: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Per-case ``(last, pred)`` laid out as the kernels keep them (at ``PackedBatch.out_off``)."""
    if not arrays:
        return np.zeros(0, np.int32), np.zeros(0, np.int32)
    return (np.concatenate([a.ravel() for a, _ in arrays]).astype(np.int32),
            np.concatenate([b.ravel() for _, b in arrays]).astype(np.int32))


def host_solve_gpu(harness: SpliceHarness, threads: int = 256,
                   edit: Callable[[PackedBatch, np.ndarray, np.ndarray], None] | None = None, cap: int | None = None):
    """A stand-in for :func:`gamut.splicing.gpu.solve_gpu`: the CPU fast forward pass, ``edit`` (to
    make the arrays inconsistent), then the host-built traceback kernel and the engine's host side."""

    def solve_gpu(batch: CaseBatch, matrix, gap, **_) -> Tracebacks:
        packed = PackedBatch(batch, 8, 4)
        last, pred = concatenated([cpu.forward_fast(c, matrix, gap) for c in map(batch.case, range(len(batch)))])
        if edit is not None:
            edit(packed, last, pred)
        return collect_tracebacks(packed, *harness.run(packed, last, pred, matrix, gap, threads, cap))

    return solve_gpu
