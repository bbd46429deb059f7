"""The Turner engines by device, one registry (:data:`ENGINES`): ``cpu`` (ViennaRNA on every
core, :mod:`gamut.folding.turner.cpu`, the reference) and ``cuda`` (our kernels:
:mod:`gamut.folding.turner.gpu_mfe` and :mod:`gamut.folding.turner.gpu_pf`, imported when first
used). Both are used in a ``with`` block and answer

- ``mfe(sequences, options) -> (energies, structures)``: int32 dcal/mol and the dot-bracket
  structures (bytes or a uint8 array end to end, or a list of strings); ``sequences`` is a
  sequence of strings, usually :class:`~gamut.io.packed.PackedSequences` (the
  checked letters end to end, which the GPU engine folds without a string per record);
- ``pf(sequences, options) -> (energies, structures, [PartitionResult, ...])``.

``--device auto`` takes the CPU for small work (the GPU's process start-up would cost more than it
saves, as for the scan) and the GPU otherwise, once its tests have passed on a GPU
(:data:`gamut.cuda.device.VERIFIED_GPU_ENGINES` lists ``fold-turner``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from gamut.cuda.device import DEVICES, resolve_device
from gamut.errors import UsageError
from gamut.folding.turner.options import TurnerOptions

#: The analysis name of the Turner GPU engine in :data:`gamut.cuda.device.VERIFIED_GPU_ENGINES`.
ANALYSIS = "fold-turner"
#: Seconds a GPU process starts slower than a CPU one (CuPy, the CUDA context, the kernels):
#: ``auto`` keeps work that all cores fold faster than this on the CPU.
AUTO_GPU_EXTRA_STARTUP_S = 1.0


class GpuEngine:
    """Our kernels (the ``mfe`` and ``pf`` modules of issue 46's contract), on the current GPU."""

    name = "gpu"

    def __enter__(self) -> GpuEngine:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def mfe(self, sequences: Sequence[str], options: TurnerOptions) -> tuple[np.ndarray, Any]:
        """Energies and the structures end to end (``sequences``: :class:`PackedSequences` are
        taken as they are)."""
        from gamut.folding.turner.gpu_mfe import mfe_batch_flat

        energies, structures, _ = mfe_batch_flat(sequences, options)
        return energies, structures

    def pf(self, sequences: Sequence[str], options: TurnerOptions) -> tuple[np.ndarray, Any, list]:
        from gamut.folding.turner.gpu_pf import pf_batch

        energies, structures = self.mfe(sequences, options)
        return energies, structures, pf_batch(list(sequences), options)


def _cpu(threads: int | None) -> Any:
    from gamut.folding.turner.cpu import CpuEngine

    return CpuEngine(threads)


def _cuda(threads: int | None) -> Any:
    return GpuEngine()


#: Engine factories ``(threads) -> engine`` by the device they run on.
ENGINES: dict[str, Callable[[int | None], Any]] = {"cpu": _cpu, "cuda": _cuda}


def pick_device(device: str, lengths: np.ndarray, partition: bool = False, threads: int | None = None) -> str:
    """``cpu`` or ``cuda`` for folding sequences of ``lengths``: ``auto`` takes the CPU when every
    core would fold them within :data:`AUTO_GPU_EXTRA_STARTUP_S` (without touching CuPy), else
    what :func:`gamut.cuda.device.resolve_device` says; ``cuda`` without a GPU is a DeviceError."""
    if device not in DEVICES:
        raise UsageError(f"unknown device '{device}' (choose from {', '.join(DEVICES)})")
    if device == "auto":
        from gamut.folding.turner.cpu import seconds_estimate
        from gamut.io.threads import usable_cores

        cores = threads or usable_cores()
        if seconds_estimate(lengths, partition) / cores < AUTO_GPU_EXTRA_STARTUP_S:
            return "cpu"
    return resolve_device(device, ANALYSIS)


def make_engine(device: str, threads: int | None = None) -> Any:
    """The engine of a resolved ``device`` (``cpu`` or ``cuda``)."""
    return ENGINES[device](threads)

