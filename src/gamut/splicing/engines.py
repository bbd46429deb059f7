"""Spliced-alignment engines by name: the one registry behind ``engine=`` and ``device=``.

Every engine computes the forward pass (``last``/``pred`` per case) and solves prepared cases
(forward pass, traceback, checked results). ``reference`` and ``fast`` run on the CPU, ``gpu``
on a CUDA device. A new engine is one more entry in :data:`ENGINES`.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Protocol, Sequence

import numpy as np

from gamut.errors import DeviceError, UsageError
from gamut.splicing import cpu
from gamut.splicing.batch import CaseBatch
from gamut.splicing.model import ScoreParams, SpliceCase
from gamut.splicing.result import SpliceResult, Tracebacks, build_results

#: GPU launches are split so that one holds at most this many 4-byte cells of device state
#: (:func:`gamut.splicing.gpu_layout.state_cells`: last/pred, chunk edges, traceback scratch),
#: and at most a quarter of the device's free memory (:func:`launch_cells`).
GPU_BATCH_CELLS = 1_500_000_000

ForwardPass = list[tuple[np.ndarray, np.ndarray]]


class SpliceEngine(Protocol):
    """What :func:`gamut.splicing.api.solve` needs of an engine."""

    name: str
    device: str  # "cpu" or "cuda"

    def forward(self, cases: Sequence[SpliceCase], params: ScoreParams, threads: int | None = None) -> ForwardPass:
        """``(last, pred)`` per case (downloaded from the device on the GPU)."""

    def tracebacks(self, batch: CaseBatch, params: ScoreParams, threads: int | None = None,
                   timing=None) -> Tracebacks:
        """Forward pass and traceback of every case of ``batch`` (not yet checked)."""

    def solve(self, cases: Sequence[SpliceCase], params: ScoreParams, threads: int | None = None,
              timing=None) -> list[SpliceResult]:
        """Forward pass, traceback and checked results of every case."""


class _Solver:
    """``solve``: an engine's tracebacks, checked and made results (:func:`build_results`)."""

    name: str

    def tracebacks(self, batch: CaseBatch, params: ScoreParams, threads: int | None = None,
                   timing=None) -> Tracebacks:
        raise NotImplementedError

    def inconsistent(self, message: str) -> Exception:
        """The error for a traceback that fails its check."""
        return RuntimeError(message)

    def solve(self, cases: Sequence[SpliceCase], params: ScoreParams, threads: int | None = None,
              timing=None) -> list[SpliceResult]:
        """``timing`` (a :class:`gamut.splicing.gpu.GpuTiming`) gets the host stages ``batch`` and ``results``."""
        from gamut.splicing.gpu import stopwatch

        stage = stopwatch(timing)
        batch = CaseBatch(cases)
        stage("batch")
        tracebacks = self.tracebacks(batch, params, threads, timing)
        stage(None)  # the engine timed its own stages
        results = build_results(batch, tracebacks, params.matrix, params.gap, self.name, self.inconsistent)
        stage("results")
        return results


class CpuEngine(_Solver):
    """A CPU forward pass, then the CPU traceback of several cases on ``threads`` threads (default:
    all cores; the compiled code releases the GIL)."""

    device = "cpu"

    def __init__(self, name: str, forward: Callable[[Sequence[SpliceCase], ScoreParams, int | None], ForwardPass]):
        self.name = name
        self._forward = forward

    def forward(self, cases: Sequence[SpliceCase], params: ScoreParams, threads: int | None = None) -> ForwardPass:
        return self._forward(cases, params, threads)

    def tracebacks(self, batch: CaseBatch, params: ScoreParams, threads: int | None = None,
                   timing=None) -> Tracebacks:
        def trace(item: tuple[SpliceCase, tuple[np.ndarray, np.ndarray]]):
            case, (last, pred) = item
            return cpu.traceback(case, params.matrix, params.gap, last, pred)

        cases = [batch.case(c) for c in range(len(batch))]
        items = list(zip(cases, self.forward(cases, params, threads)))
        workers = min(len(items), threads or os.cpu_count() or 1)
        if workers <= 1:
            traced = [trace(item) for item in items]
        else:
            with ThreadPoolExecutor(workers) as pool:
                traced = list(pool.map(trace, items))
        return Tracebacks.concatenate(traced)


def _reference(cases: Sequence[SpliceCase], params: ScoreParams, threads: int | None) -> ForwardPass:
    return [cpu.forward_reference(c, params.matrix, params.gap) for c in cases]


def _fast(cases: Sequence[SpliceCase], params: ScoreParams, threads: int | None) -> ForwardPass:
    if len(cases) == 1:
        return [cpu.forward_fast(cases[0], params.matrix, params.gap)]
    return cpu.forward_fast_many(cases, params.matrix, params.gap, threads)


def launch_cells() -> int:
    """Cells of device state one launch may hold: :data:`GPU_BATCH_CELLS`, or a quarter of the
    current device's free memory (CuPy's pool included) when that is less."""
    import cupy as cp

    free = cp.cuda.Device().mem_info[0] + cp.get_default_memory_pool().free_bytes()
    return max(1, min(GPU_BATCH_CELLS, free // 16))


def gpu_groups(batch: CaseBatch, limit: int | None = None) -> list[CaseBatch]:
    """``batch`` cut into consecutive launches of at most ``limit`` (default
    :data:`GPU_BATCH_CELLS`) cells of device state each
    (:func:`gamut.splicing.gpu_layout.state_cells`); one launch when it fits."""
    from gamut.splicing.gpu_layout import state_cells

    limit = GPU_BATCH_CELLS if limit is None else limit
    cells = np.cumsum(state_cells(batch))
    if not len(batch) or cells[-1] <= limit:
        return [batch] if len(batch) else []
    groups, lo = [], 0
    while lo < len(batch):
        base = cells[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cells, base + limit, side="right")))
        groups.append(batch.slice(lo, hi))
        lo = hi
    return groups


class GpuEngine(_Solver):
    """Forward pass and traceback on the device, in launches of many cases (split by device
    memory: :func:`gpu_groups`); an inconsistent result raises :class:`DeviceError`."""

    name = "gpu"
    device = "cuda"

    def inconsistent(self, message: str) -> Exception:
        return DeviceError(f"the GPU engine gave an inconsistent result ({message})")

    def forward(self, cases: Sequence[SpliceCase], params: ScoreParams, threads: int | None = None) -> ForwardPass:
        from gamut.splicing.gpu import forward_gpu_many

        return [pair for group in gpu_groups(CaseBatch(cases), launch_cells())
                for pair in forward_gpu_many(group, params.matrix, params.gap)]

    def tracebacks(self, batch: CaseBatch, params: ScoreParams, threads: int | None = None,
                   timing=None) -> Tracebacks:
        """``timing``: a :class:`gamut.splicing.gpu.GpuTiming` to add the device times to."""
        from gamut.splicing import gpu

        return Tracebacks.join([gpu.solve_gpu(group, params.matrix, params.gap, timing=timing)
                                for group in gpu_groups(batch, launch_cells())])


ENGINES: dict[str, SpliceEngine] = {engine.name: engine for engine in (
    CpuEngine("reference", _reference),
    CpuEngine("fast", _fast),
    GpuEngine(),
)}
#: The engine ``device="auto"`` or ``"cpu"`` runs on the CPU, and the one a usable GPU runs.
CPU_DEFAULT, GPU_DEFAULT = "fast", "gpu"


def choose_engine(device: str = "auto", engine: str | None = None) -> str:
    """An engine name of :data:`ENGINES`: ``engine`` if given, else from ``device``."""
    from gamut.cuda import resolve_device

    if engine is not None:
        if engine not in ENGINES:
            raise UsageError(f"unknown engine '{engine}' (choose from {', '.join(ENGINES)})")
        if ENGINES[engine].device == "cuda":
            resolve_device("cuda")
        return engine
    return GPU_DEFAULT if resolve_device(device, "splice") == "cuda" else CPU_DEFAULT
