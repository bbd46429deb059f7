"""The global partition function's kernels (``plfold.cu`` with one window per sequence) built for the
host: a :class:`~gamut.folding.turner.gpu_pf.PfRunner` that runs every launch of
:class:`~gamut.folding.turner.gpu_pf.CupyPfRunner`, in the same order, as loops on the CPU, so the
device code and the batching around it are checked against ViennaRNA on any machine with g++."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
from host_build import build_host_library

from gamut.access.boltzmann import turner_boltzmann_tables
from gamut.access.gpu import PackedBatch, check_batch, scale_table, work_doubles
from gamut.folding.turner.gpu_pf import kernel_defines
from gamut.folding.turner.options import TurnerOptions

HARNESS = "turner_pf_host"


def build_turner_pf_host(out_dir: str | Path, options: TurnerOptions) -> str:
    """Compile the host build of plfold.cu for ``options`` into ``out_dir``."""
    tag = f"_d{options.dangles}_lp{int(options.no_lp)}"
    return build_host_library(HARNESS, out_dir, options=kernel_defines(options), tag=tag)


class HostPfRunner:
    """:class:`~gamut.folding.turner.gpu_pf.PfRunner` on the CPU (one thread), for ``options``
    (the library built for them)."""

    def __init__(self, library_path: str, options: TurnerOptions, free_bytes: int = 1 << 30) -> None:
        self.lib = ctypes.CDLL(library_path)
        self.lib.host_turner_pf_work_doubles.restype = ctypes.c_longlong
        self.tables = turner_boltzmann_tables(options)
        self._free = free_bytes
        #: The batches folded, as (positions, window, span, scale, with probabilities).
        self.batches: list[tuple[int, int, int, float, bool]] = []
        #: The lanes a cell of each batch.
        self.lanes: list[int] = []
        self.released = False

    def free_bytes(self) -> int:
        return self._free

    def release(self) -> None:
        self.released = True

    def partition(self, batch: PackedBatch, window: int, span: int, scale: float,
                  rows: tuple[np.ndarray, int] | None, lanes: int) -> np.ndarray:
        n = batch.positions
        if self.lib.host_turner_pf_work_doubles(n, span, window) != work_doubles(n, window, span):
            raise AssertionError("gamut.access.gpu.work_doubles differs from plf_work_doubles")
        count = len(batch.pieces)
        work = np.zeros(work_doubles(n, window, span))
        out = np.zeros(count if rows is None else rows[1])
        bad = np.zeros(1, np.int32)
        scales = scale_table(scale, window, self.tables.gen)  # held: the library gets its address only
        starts = np.ascontiguousarray(batch.starts, np.int64)
        row_index = None if rows is None else np.ascontiguousarray(rows[0], np.int64)
        ptr = lambda a: ctypes.c_void_p(None if a is None else a.ctypes.data)  # noqa: E731
        self.lib.host_turner_pf(ptr(self.tables.doubles), ptr(self.tables.ints), ptr(batch.S), ptr(batch.SB),
                                ptr(batch.SE), ctypes.c_longlong(n), ctypes.c_int(window), ctypes.c_int(span),
                                ptr(work), ptr(bad), ptr(scales), ctypes.c_int(lanes), ptr(starts),
                                ctypes.c_longlong(count),
                                ptr(row_index), ptr(out))
        self.batches.append((n, window, span, scale, rows is not None))
        self.lanes.append(lanes)
        check_batch(bool(bad[0]), window)
        return out
