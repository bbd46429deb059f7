"""The CUDA energy kernel (``energy.cu``) built for the host: its fold routine run as one lane of a
warp on the CPU, so the device code path itself is checked against the Numba engine on any
machine with g++."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
from host_build import build_host_library

from gamut.scanning.energy import gpu as G

HARNESS = "energy_host"


def build_energy_host(out_dir: str | Path) -> str:
    """Compile the host build of energy.cu (table layout as -D options) into ``out_dir``."""
    return build_host_library(HARNESS, out_dir, options=G.table_buffers()[2])


class HostEngine:
    """The kernel's fold routine compiled for the CPU (one lane per warp)."""

    def __init__(self, library_path: str) -> None:
        self.lib = ctypes.CDLL(library_path)
        self.lib.host_energy_work_bytes.restype = ctypes.c_longlong

    def work_bytes(self, m: int, cell_bytes: int) -> int:
        return int(self.lib.host_energy_work_bytes(m, cell_bytes))

    def fold(self, raw: np.ndarray, offsets: np.ndarray, cell_bytes: int) -> np.ndarray:
        """Raw kernel results (int32; ENERGY_OVERFLOW where int16 cells overflowed)."""
        small, big, _ = G.table_buffers()
        raw = np.ascontiguousarray(raw, np.uint8) if raw.size else np.zeros(1, np.uint8)
        offsets = np.ascontiguousarray(offsets, np.int64)
        out = np.zeros(offsets.shape[0] - 1, np.int32)
        maxm = int(np.diff(offsets).max(initial=0)) + 2
        ptr = lambda a: ctypes.c_void_p(a.ctypes.data)  # noqa: E731
        self.lib.host_energy_fold(ptr(small), ptr(big), ptr(raw), ptr(offsets), ctypes.c_int(out.shape[0]),
                                  ctypes.c_int(maxm), ctypes.c_int(cell_bytes), ptr(out))
        return out

    def energies(self, seqs: list[str], cell_bytes: int = 2) -> np.ndarray:
        """Energies as the GPU path makes them: int16 cells first, overflowed strings again in int32."""
        raw, offsets = G._checked(seqs)
        out = self.fold(raw, offsets, cell_bytes)
        return G.refold_overflowed(out, raw, offsets, lambda r, o: self.fold(r, o, 4))
