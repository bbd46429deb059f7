"""The accessibility kernels (``plfold.cu``) built for the host: a :class:`~gamut.access.gpu.BatchRunner`
that runs every launch of :class:`~gamut.access.gpu.CupyRunner`, in the same order, as loops on the
CPU, so the device code and the batching around it are checked against ViennaRNA on any machine
with g++."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
from host_build import build_host_library

from gamut.access.boltzmann import plfold_tables
from gamut.access.gpu import PackedBatch, check_batch, scale_table, work_doubles

HARNESS = "plfold_host"


def build_plfold_host(out_dir: str | Path) -> str:
    """Compile the host build of plfold.cu (table layout as -D options) into ``out_dir``."""
    return build_host_library(HARNESS, out_dir, options=plfold_tables().defines)


class HostRunner:
    """:class:`~gamut.access.gpu.BatchRunner` on the CPU (one thread)."""

    def __init__(self, library_path: str, free_bytes: int = 1 << 30) -> None:
        self.lib = ctypes.CDLL(library_path)
        self.lib.host_plfold_work_doubles.restype = ctypes.c_longlong
        self._free = free_bytes
        #: The batches folded, as (positions, window, span), and the scale of each.
        self.batches: list[tuple[int, int, int]] = []
        self.scales: list[float] = []

    def free_bytes(self) -> int:
        return self._free

    def release(self) -> None:
        self.released = True

    def table(self, batch: PackedBatch, window: int, span: int, width: int, scale: float = 1.0) -> np.ndarray:
        n = batch.positions
        if self.lib.host_plfold_work_doubles(n, span, window) != work_doubles(n, window, span):
            raise AssertionError("gamut.access.gpu.work_doubles differs from plf_work_doubles")
        tables = plfold_tables()
        work = np.zeros(work_doubles(n, window, span))
        out = np.full(n * width, np.nan)
        bad = np.zeros(1, np.int32)
        scales = scale_table(scale, window, tables.gen)  # held: the library gets its address only
        ptr = lambda a: ctypes.c_void_p(a.ctypes.data)  # noqa: E731
        self.lib.host_plfold(ptr(tables.doubles), ptr(tables.ints), ptr(batch.S), ptr(batch.SB), ptr(batch.SE),
                             ctypes.c_longlong(n), ctypes.c_int(window), ctypes.c_int(span), ctypes.c_int(width),
                             ptr(work), ptr(out), ptr(bad), ptr(scales))
        self.batches.append((n, window, span))
        self.scales.append(scale)
        check_batch(bool(bad[0]), window)
        return out.reshape(n, width)

    def stretches(self, batch: PackedBatch, window: int, span: int, ends: np.ndarray,
                  lengths: np.ndarray, scale: float = 1.0) -> np.ndarray:
        width = int(lengths.max(initial=1))
        table = self.table(batch, window, span, max(1, min(width, window)), scale)
        out = np.full(ends.shape[0], np.nan)
        fits = lengths <= table.shape[1]
        out[fits] = table[ends[fits], lengths[fits] - 1]
        return out
