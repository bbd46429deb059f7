"""The CUDA scan kernels (``scan_dp.cu``) built for the host: a backend for
:class:`~gamut.scanning.engines.gpu.GpuEngine` that runs each kernel's threads in a loop on the CPU,
so the engine's whole pipeline (segments, checkpoints, repairs, traceback windows) is checked on
any machine with g++."""
from __future__ import annotations

import ctypes
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from host_build import build_host_library

#: Harness in tests/host/ and the extra flags it builds with (the kernels carry CUDA pragmas).
HARNESS = "scan_host"
OPTIONS = ("-Wno-unknown-pragmas",)


def build_scan_host(out_dir: str | Path) -> str:
    """Compile the host build of the scan kernels into ``out_dir``; returns the library's path."""
    return build_host_library(HARNESS, out_dir, options=OPTIONS)


class HostBackend:
    """Runs the scan kernels compiled for the CPU, with the methods of
    :class:`~gamut.scanning.engines.gpu_device.CupyBackend`."""

    def __init__(self, library_path: str) -> None:
        self.lib = ctypes.CDLL(library_path)
        self.xp = np
        self.device_id = -1
        self.peak_bytes = 0
        #: The packed pass 1 runs here as on a Hopper GPU (``GpuTuning.packed`` turns it off).
        self.packed_lanes = True

    def device(self):
        return nullcontext()

    def stream(self, index: int):
        return nullcontext()

    def asarray(self, a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a)

    def to_host(self, a: np.ndarray) -> np.ndarray:
        return a

    def free_bytes(self) -> int:
        return 1 << 30

    def synchronize(self) -> None:
        pass

    def note_memory(self) -> None:
        pass

    def launch(self, name: str, rows: int, n: int, args: list, block: int, plain: bool = False) -> None:
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                conv.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, np.int64):
                conv.append(ctypes.c_longlong(int(a)))
            else:
                conv.append(ctypes.c_int(int(a)))
        getattr(self.lib, f"host_{name}_{0 if plain else rows}")(*conv)


class HostEngineFactory:
    """A picklable engine factory (``make_engine(device, threads, gpus, cells=...)``) for worker
    processes: a :class:`~gamut.scanning.engines.gpu.GpuEngine` on the host build at ``library_path``.
    With ``crash_in_worker``, a worker process (not the parent) exits at once when it builds its
    engine, as a GPU worker killed by the driver would; the parent, which scans beside its workers,
    builds its own engine only once its worker processes have ended (so that the crash is seen
    before the parent could finish the scan alone). With ``meet`` (a file name), the parent builds
    its engine only once a worker has built one, so that both scan partitions."""

    def __init__(self, library_path: str, crash_in_worker: bool = False, meet: str | None = None) -> None:
        self.library_path = str(library_path)
        self.crash_in_worker = crash_in_worker
        self.meet = meet

    def __call__(self, device=None, threads=None, gpus=None, **_):
        import multiprocessing
        import os
        import time

        from gamut.scanning.engines.gpu import GpuEngine

        if self.crash_in_worker and multiprocessing.parent_process() is not None:
            os._exit(3)
        if self.crash_in_worker:
            deadline = time.monotonic() + 120
            while multiprocessing.active_children() and time.monotonic() < deadline:
                time.sleep(0.05)
        if self.meet is not None:  # a worker says it has its engine; the parent waits for that
            if multiprocessing.parent_process() is not None:
                open(self.meet, "a").close()
            else:
                deadline = time.monotonic() + 120
                while not os.path.exists(self.meet) and time.monotonic() < deadline:
                    time.sleep(0.05)
        return GpuEngine([], threads=1, backends=[HostBackend(self.library_path)])

    def __eq__(self, other) -> bool:
        return isinstance(other, HostEngineFactory) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((self.library_path, self.crash_in_worker, self.meet))


def host_engine_factory(library_path: str, crash_in_worker: bool = False, meet: str | None = None) -> HostEngineFactory:
    """The engine factory of worker processes scanning with the host build of the kernels."""
    return HostEngineFactory(library_path, crash_in_worker, meet)
