"""The MFE kernels (``turner_mfe.cu``) built for the host: a :class:`~gamut.folding.turner.gpu_mfe.Runner`
that carries out a job's launches as :class:`~gamut.folding.turner.gpu_mfe.CupyRunner` does, as loops on
the CPU, so the device code and the planning around it are checked against ViennaRNA without a GPU."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
from host_build import build_host_library

from gamut.folding.turner.batch_tuning import BatchShape, BatchTuning, resident_blocks
from gamut.folding.turner.energy_tables import turner_tables
from gamut.folding.turner.gpu_mfe import BatchLaunch, FoldJob, long_parts, work_ints
from gamut.folding.turner.options import TurnerOptions

HARNESS = "turner_mfe_host"


def build_turner_mfe_host(out_dir: str | Path) -> str:
    """Compile the host build of turner_mfe.cu (table layout as -D options) into ``out_dir``."""
    return build_host_library(HARNESS, out_dir, options=(*turner_tables(TurnerOptions()).defines, "-Wall"))


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


#: Hopper's shared memory (opt-in a block, a multiprocessor) and a kernel's registers and static
#: shared memory, for the variants' shapes on the host.
HOST_SHARED_LIMITS = (232448, 233472)
HOST_KERNEL_REGS = 72
HOST_STATIC_SHARED = 16


class HostRunner:
    """Runner on the CPU (one thread); ``sms`` multiprocessors (a batch of more sequences than their
    blocks has its blocks loop over sequences and reuse their work areas); ``tuning``: the batch
    launches' variants (the default launches unless given)."""

    def __init__(self, library_path: str, free_bytes: int = 1 << 32, sms: int = 1,
                 resident_threads: int = 4096, tuning: BatchTuning | None = None) -> None:
        self.lib = ctypes.CDLL(library_path)
        self.lib.host_tmfe_work_ints.restype = ctypes.c_longlong
        self._free = free_bytes
        self._sms = sms
        #: Threads the long path fills per diagonal (a device's resident threads; long_parts).
        self.resident_threads = resident_threads
        self.tuning = tuning or BatchTuning()
        #: The launches carried out: ("batch", count, nmax, blocks) or ("long", n).
        self.launches: list[tuple] = []
        #: The batch launches' shapes, in turn.
        self.shapes: list[BatchShape] = []

    def free_bytes(self) -> int:
        return self._free

    def multiprocessors(self) -> int:
        return self._sms

    def shared_limits(self) -> tuple[int, int]:
        return HOST_SHARED_LIMITS

    def resident_blocks(self, kernel: str, threads: int, shared_bytes: int) -> int:
        return resident_blocks(HOST_KERNEL_REGS, HOST_STATIC_SHARED, threads, shared_bytes, HOST_SHARED_LIMITS[1])

    def run(self, job: FoldJob, shapes: list[BatchShape | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        o = job.options
        E = np.ascontiguousarray(job.E, np.int32)
        HPX = np.ascontiguousarray(job.HPX, np.int32)
        S = np.ascontiguousarray(job.S, np.uint8)
        count = job.lengths.size
        out = np.full(max(1, S.size), ord("."), np.uint8)
        energy = np.zeros(max(1, count), np.int32)
        err = np.zeros(max(1, count), np.int32)
        model = (_ptr(E), _ptr(HPX), ctypes.c_int(o.dangles), ctypes.c_int(int(o.no_lp)), ctypes.c_int(o.max_bp_span))
        for launch, shape in zip(job.launches, shapes):
            if isinstance(launch, BatchLaunch):
                size = work_ints(launch.nmax, o.no_lp)
                if self.lib.host_tmfe_work_ints(launch.nmax, int(o.no_lp)) != size:
                    raise AssertionError("gpu_mfe.work_ints differs from tmfe_work_ints")
                # no cell may be read before it is written
                work = np.full(max(1, shape.global_areas * size), -12345, np.int32)
                starts = np.ascontiguousarray(job.starts[launch.ids], np.int64)
                lengths = np.ascontiguousarray(job.lengths[launch.ids], np.int32)
                e = np.zeros(launch.ids.size, np.int32)
                f = np.zeros(launch.ids.size, np.int32)
                head = (*model, _ptr(S), _ptr(starts), _ptr(lengths), ctypes.c_int(launch.ids.size),
                        ctypes.c_int(launch.nmax))
                tail = (_ptr(out), _ptr(e), _ptr(f))
                grid = (ctypes.c_int(shape.blocks), ctypes.c_int(shape.threads))
                if shape.kernel == "tmfe_batch":
                    self.lib.host_tmfe_batch(*head, _ptr(work), ctypes.c_longlong(size), *tail, *grid)
                elif shape.kernel == "tmfe_batch_shared":
                    self.lib.host_tmfe_batch_shared(*head, ctypes.c_longlong(size), *tail, *grid)
                else:
                    self.lib.host_tmfe_batch_warps(*head, _ptr(work), ctypes.c_longlong(size), *tail,
                                                   ctypes.c_int(int(shape.in_shared)), *grid)
                energy[launch.ids] = e
                err[launch.ids] = f
                self.launches.append(("batch", int(launch.ids.size), launch.nmax, shape.blocks))
                self.shapes.append(shape)
            else:
                x = launch.seq
                n = int(job.lengths[x])
                a = int(job.starts[x])
                work = np.full(work_ints(n, o.no_lp), -12345, np.int32)
                seq = np.ascontiguousarray(S[a:a + n])
                struct = np.zeros(n, np.uint8)
                e = np.zeros(1, np.int32)
                f = np.zeros(1, np.int32)
                for d in range(n):  # CupyRunner._long's launches
                    parts = long_parts(n - d, self.resident_threads)
                    if self.lib.host_tmfe_diagonal_parts(n - d, self.resident_threads) != parts:
                        raise AssertionError("gpu_mfe.long_parts differs from diagonal_parts")
                    self.lib.host_tmfe_diagonal(*model, _ptr(seq), ctypes.c_int(n), _ptr(work), ctypes.c_int(d),
                                                ctypes.c_int(parts))
                self.lib.host_tmfe_finish(*model, _ptr(seq), ctypes.c_int(n), _ptr(work), _ptr(struct), _ptr(e),
                                          _ptr(f))
                out[a:a + n] = struct
                energy[x], err[x] = e[0], f[0]
                self.launches.append(("long", n))
        return energy[:count], err[:count], out[:S.size]
