"""The scan's alignment engines, by name: ``simd`` (CPU, Numba) and ``cuda`` (CuPy kernels).

:func:`make_engine` picks one for ``device="auto"|"cpu"|"cuda"``; each engine implements
:class:`~gamut.scanning.alignments.AlignmentEngine`. The engines import lazily, so choosing the
CPU never imports CuPy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from gamut.scanning.alignments import AlignmentEngine


def _simd(threads: int | None, gpus: str | Sequence[int] | None) -> AlignmentEngine:
    from gamut.scanning.engines.simd import SimdEngine

    return SimdEngine(threads)


def _cuda(threads: int | None, gpus: str | Sequence[int] | None) -> AlignmentEngine:
    from gamut.cuda import parse_gpus
    from gamut.scanning.engines.gpu import GpuEngine

    return GpuEngine(parse_gpus(gpus), threads=threads)


#: Engine factories by name, and the engine that serves each resolved device.
ENGINES: dict[str, Callable[[int | None, str | Sequence[int] | None], AlignmentEngine]] = {
    "simd": _simd, "cuda": _cuda}
ENGINE_FOR_DEVICE = {"cpu": "simd", "cuda": "cuda"}


#: ``--device auto``, measured rule (docs/scan_gpu.md, "--device auto"): a scan runs on the GPU
#: only when the CPU engine would take longer than the GPU engine plus the GPU process' extra
#: start-up. Seconds a ``--device cuda`` process starts slower than a ``--device cpu`` one
#: (importing CuPy, the CUDA context, loading the kernels).
AUTO_GPU_EXTRA_STARTUP_S = 1.0
#: Whole-process cells per second per CPU core with the CPU engine (reading to writing).
AUTO_CPU_CELLS_PER_CORE_S = 0.4e9
#: Whole-process cells per second with the GPU engine on one GPU.
AUTO_GPU_CELLS_S = 1.0e11


def auto_gpu_min_cells(threads: int | None = None) -> float:
    """The fewest cells (query x reference letters) for which ``--device auto`` picks the GPU with
    ``threads`` CPU threads (default: every core this process may use): the break-even point
    ``cells / cpu_rate = AUTO_GPU_EXTRA_STARTUP_S + cells / gpu_rate``; infinite when the CPU
    engine is the faster one."""
    from gamut.io.threads import usable_cores  # numba's import only where a count is needed

    cores = threads or usable_cores()
    cpu_rate = AUTO_CPU_CELLS_PER_CORE_S * cores
    if cpu_rate >= AUTO_GPU_CELLS_S:
        return float("inf")
    return AUTO_GPU_EXTRA_STARTUP_S * cpu_rate / (1.0 - cpu_rate / AUTO_GPU_CELLS_S)


def pick_device(device: str = "auto", threads: int | None = None, gpus: str | Sequence[int] | None = None,
                cells: int | None = None) -> str:
    """``cpu`` or ``cuda`` for a scan of ``cells`` cells. ``auto`` takes the CPU below
    :func:`auto_gpu_min_cells` (without importing CuPy or touching the driver), unless GPUs are
    named with ``gpus``; otherwise it follows :func:`gamut.cuda.resolve_device`."""
    if device == "auto" and gpus is None and cells is not None and cells < auto_gpu_min_cells(threads):
        return "cpu"
    from gamut.cuda import resolve_device

    return resolve_device(device, "scan")


def make_engine(device: str = "auto", threads: int | None = None,
                gpus: str | Sequence[int] | None = None, *, cells: int | None = None) -> AlignmentEngine:
    """The alignment engine for ``device`` (``auto``: a CUDA GPU when one is usable and the scan,
    of ``cells`` cells when given, is large enough to gain from it: :func:`pick_device`)."""
    return ENGINES[ENGINE_FOR_DEVICE[pick_device(device, threads, gpus, cells)]](threads, gpus)
