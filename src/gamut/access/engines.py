"""The accessibility engines, one registry: ``cpu`` (ViennaRNA on every core, the reference) and
``cuda`` (our kernels, :mod:`gamut.access.gpu`). Both are folders with the same interface:
``fold(sequences)`` and ``stretches(sequences, ends, lengths, progress)``, used in a ``with`` block."""
from __future__ import annotations

from typing import Any

from gamut.access.model import AccessParams
from gamut.cuda.device import resolve_device

#: Engine names by the device they run on.
ENGINES = ("cpu", "cuda")


def make_folder(params: AccessParams, device: str = "auto", threads: int | None = None, device_id: int = 0) -> Any:
    """The folder for ``device`` (``auto`` takes the GPU where one is usable): a
    :class:`~gamut.access.cpu.CpuFolder` on ``threads`` processes or a
    :class:`~gamut.access.gpu.GpuFolder` on CUDA device ``device_id``; its ``name`` is the engine's."""
    if resolve_device(device, "access") == "cuda":
        from gamut.access.gpu import GpuFolder

        return GpuFolder(params, device_id)
    from gamut.access.cpu import CpuFolder

    return CpuFolder(params, threads)
