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


def make_engine(device: str = "auto", threads: int | None = None,
                gpus: str | Sequence[int] | None = None) -> AlignmentEngine:
    """The alignment engine for ``device`` (``auto``: a CUDA GPU when one is usable)."""
    from gamut.cuda import resolve_device

    return ENGINES[ENGINE_FOR_DEVICE[resolve_device(device, "scan")]](threads, gpus)
