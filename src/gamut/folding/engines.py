"""Fold engines by name: the one registry behind ``engine=`` and ``device=``.

An engine folds one sequence's codes into ``(pairs, partner table or None, corner block or
None)``, checked before it is returned. A batch engine folds many short sequences at once and
stands in for the engine named in :attr:`FoldEngine.batch` when a list is folded. A new engine is
one more entry in :data:`ENGINES` (or :data:`BATCH_ENGINES`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Optional

import numpy as np

from gamut.cuda import resolve_device
from gamut.errors import DeviceError, InputError, UsageError
from gamut.folding.traceback import greedy_pairs, traceback_dense, traceback_tiled
from gamut.io.memory import available_memory

#: Tile size of the blocked CPU engine.
CPU_TILE = 64

#: ``(pairs, partner, corner)``: the pair count, the partner table (``-1`` = unpaired; ``None``
#: without traceback) and the top-right ``k x k`` block of the score matrix (``None`` unless asked).
Folded = tuple[int, Optional[np.ndarray], Optional[np.ndarray]]


@dataclass(frozen=True)
class FoldEngine:
    """``fold(codes, min_loop, traceback, corner, progress)`` on ``device`` (``cpu`` or ``cuda``);
    ``batch``: the batch engine that folds this engine's short sequences together."""

    name: str
    device: str
    fold: Callable[[np.ndarray, int, bool, int, bool], Folded]
    batch: str | None = None


@dataclass(frozen=True)
class BatchEngine:
    """``fold(flat, starts, lengths, min_loop, traceback) -> (scores, structures)`` (see
    :mod:`gamut.folding.batch`); an inconsistent result raises ``error``."""

    name: str
    fold: Callable[[np.ndarray, np.ndarray, np.ndarray, int, bool], tuple[np.ndarray, np.ndarray]]
    error: type[Exception]


def _check_host_memory(nbytes: int, what: str) -> None:
    available = available_memory()
    if available is not None and nbytes > available:
        raise InputError(f"{what} needs {nbytes / 1e9:.1f} GB of memory, only {available / 1e9:.1f} GB available")


def _corner_dense(M: np.ndarray, k: int) -> np.ndarray:
    n = M.shape[0]
    return np.triu(M[:k, n - k:].astype(np.int64), k=k - n) if k else np.zeros((0, 0), np.int64)


def fold_blocked(codes: np.ndarray, min_loop: int, traceback: bool, corner: int, progress: bool = False) -> Folded:
    """The tiled, multicore CPU engine (the CPU default); ``progress`` shows a bar while it fills."""
    from gamut.folding.cpu import matrix_dtype
    from gamut.folding.tiled import (
        corner_block,
        diagonal_work,
        fill_tiled,
        tile_count,
        tiled_value,
    )
    from gamut.progress import progress_bar

    n = int(codes.shape[0])
    itemsize = np.dtype(matrix_dtype(n)).itemsize
    _check_host_memory(tile_count(n, CPU_TILE)[1] * CPU_TILE * CPU_TILE * itemsize, f"folding {n:,} nt")
    with progress_bar(f"fold [blocked] {n:,} nt", int(diagonal_work(n, CPU_TILE).sum()), progress,
                      unit="ops") as advance:
        tiles = fill_tiled(codes, min_loop, CPU_TILE, advance=advance if progress else None)
    nb = (n + CPU_TILE) // CPU_TILE
    pairs = int(tiled_value(tiles, nb, 0, n))
    partner = traceback_tiled(tiles, codes, min_loop) if traceback else None
    check_pairs(pairs, partner, codes, min_loop, "engine 'blocked'", RuntimeError)
    return pairs, partner, corner_block(tiles, n, min(corner, n)) if corner else None


def fold_dense(engine: str, codes: np.ndarray, min_loop: int, traceback: bool, corner: int,
               progress: bool = False) -> Folded:
    """A CPU engine on the dense ``n x n`` matrix: ``multicore`` (OMP2), ``cpu2`` or ``cpu1``."""
    from gamut.folding.cpu import fill_matrix, matrix_dtype

    n = int(codes.shape[0])
    _check_host_memory(n * n * np.dtype(matrix_dtype(n)).itemsize, f"folding {n:,} nt with engine '{engine}'")
    M = fill_matrix(codes, min_loop, engine)
    pairs = int(M[0, n - 1]) if n else 0
    partner = traceback_dense(M, codes, min_loop) if traceback else None
    check_pairs(pairs, partner, codes, min_loop, f"engine '{engine}'", RuntimeError)
    return pairs, partner, _corner_dense(M, min(corner, n)) if corner else None


def fold_on_gpu(codes: np.ndarray, min_loop: int, traceback: bool, corner: int, progress: bool = False) -> Folded:
    """Fill on the GPU, trace the structure there too: only the partner table and the corner come back."""
    from gamut.folding import gpu
    from gamut.folding.tiled import corner_block

    n = int(codes.shape[0])
    tiles = gpu.fill_gpu(codes, min_loop)
    pairs = gpu.score_of(tiles, n)
    partner = None
    if traceback:
        try:
            partner = gpu.traceback_gpu(tiles, codes, min_loop)
        except RuntimeError as exc:
            raise DeviceError(f"the GPU engine's score triangle for {n:,} nt is inconsistent ({exc})") from exc
    block = corner_block(tiles, n, min(corner, n)) if corner else None
    del tiles
    check_pairs(pairs, partner, codes, min_loop, "the GPU engine", DeviceError)
    return pairs, partner, block


def check_pairs(pairs: int, partner: np.ndarray | None, codes: np.ndarray, min_loop: int, engine: str,
                error: type[Exception]) -> None:
    """Raise ``error`` unless ``pairs`` lies between a quick valid structure's pair count and
    ``n / 2`` and equals the traceback's pair count: an inconsistent fill is reported, never returned."""
    n = int(codes.shape[0])
    low = int(greedy_pairs(codes, np.int64(min_loop)))
    found = None if partner is None else int(np.count_nonzero(partner > np.arange(n)))
    if low <= pairs <= n // 2 and found in (None, pairs):
        return
    if found is not None and found != pairs:
        detail = f"its traceback finds {found:,}"
    else:
        detail = f"a valid structure with {low:,} exists" if pairs < low else f"at most {n // 2:,} are possible"
    raise error(
        f"folding {n:,} nt with {engine} gave an inconsistent result: the fill scores {pairs:,} pairs but "
        f"{detail} (nothing is returned; please report this, and use the CPU engine meanwhile)"
    )


def _batch_on_cpu(flat, starts, lengths, min_loop, traceback):
    from gamut.folding.batch import fold_batch_cpu

    return fold_batch_cpu(flat, starts, lengths, min_loop, traceback)


def _batch_on_gpu(flat, starts, lengths, min_loop, traceback):
    from gamut.folding import gpu

    return gpu.fold_batch_gpu(flat, starts, lengths, min_loop)


ENGINES: dict[str, FoldEngine] = {engine.name: engine for engine in (
    FoldEngine("blocked", "cpu", fold_blocked, batch="cpu-batch"),
    FoldEngine("multicore", "cpu", partial(fold_dense, "multicore")),
    FoldEngine("cpu2", "cpu", partial(fold_dense, "cpu2")),
    FoldEngine("cpu1", "cpu", partial(fold_dense, "cpu1")),
    FoldEngine("gpu", "cuda", fold_on_gpu, batch="gpu-batch"),
)}
BATCH_ENGINES: dict[str, BatchEngine] = {engine.name: engine for engine in (
    BatchEngine("cpu-batch", _batch_on_cpu, RuntimeError),
    BatchEngine("gpu-batch", _batch_on_gpu, DeviceError),
)}
#: What ``engine=`` accepts: ``auto`` (from ``device``) or an engine's name.
CHOICES = ("auto", *ENGINES)
#: The engines ``auto`` picks on the CPU and on a usable GPU.
CPU_DEFAULT, GPU_DEFAULT = "blocked", "gpu"


def choose_engine(engine: str = "auto", device: str = "auto") -> str:
    """Resolve ``engine`` and ``device`` to one name of :data:`ENGINES`.

    ``device="auto"`` takes the GPU when one is present (the fold GPU engine is listed in
    :data:`gamut.cuda.device.VERIFIED_GPU_ENGINES`); ``device="cuda"`` or ``engine="gpu"`` always can.
    """
    if engine not in CHOICES:
        raise UsageError(f"unknown fold engine '{engine}' (choose from {', '.join(CHOICES)})")
    if engine == "auto":
        return GPU_DEFAULT if resolve_device(device, "fold") == "cuda" else CPU_DEFAULT
    if ENGINES[engine].device == "cuda":
        if device == "cpu":
            raise UsageError(f"engine '{engine}' cannot run with device 'cpu'")
        resolve_device("cuda")
    elif device == "cuda":
        raise UsageError(f"engine '{engine}' runs on the CPU; use engine 'gpu' (or 'auto') with device 'cuda'")
    return engine
