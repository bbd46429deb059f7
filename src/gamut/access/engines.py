"""The accessibility engines, one registry (:data:`ENGINES`, by the device they run on): ``cpu``
(ViennaRNA on every core, the reference) and ``cuda`` (our kernels, :mod:`gamut.access.gpu`). Both
are folders with the same interface: ``fold(sequences)``, ``stretches(sequences, ends, lengths,
progress)`` and ``record_groups(records)``, used in a ``with`` block; ``name`` is the engine's."""
from __future__ import annotations

from typing import Any, Callable

from gamut.access.model import AccessParams
from gamut.cuda.device import resolve_device


def _cpu(params: AccessParams, threads: int | None, device_id: int) -> Any:
    from gamut.access.cpu import CpuFolder

    return CpuFolder(params, threads)


def _cuda(params: AccessParams, threads: int | None, device_id: int) -> Any:
    from gamut.access.gpu import GpuFolder

    return GpuFolder(params, device_id)


#: Folder factories ``(params, threads, device_id)`` by device.
ENGINES: dict[str, Callable[[AccessParams, int | None, int], Any]] = {"cpu": _cpu, "cuda": _cuda}


def make_folder(params: AccessParams, device: str = "auto", threads: int | None = None, device_id: int = 0) -> Any:
    """The folder for ``device`` (``auto`` takes the GPU where :func:`gamut.cuda.device.resolve_device`
    would): CPU processes ``threads``, or CUDA device ``device_id``."""
    return ENGINES[resolve_device(device, "access")](params, threads, device_id)
