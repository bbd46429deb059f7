"""CUDA engine: many spliced-alignment cases in one launch (kernel ``cuda/kernels/splice.cu``).

CuPy is imported only inside these functions. The kernel fills the same ``last``/``pred``
arrays as the CPU engines (same tie rule); the traceback runs on the CPU
(:func:`gamut.splice.cpu.traceback`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gamut.splice.model import SpliceCase

KERNEL_FILE = "splice.cu"
DEFAULT_COLS = 8
FEW_CASES_COLS = 4
MAX_WARPS = 16


@dataclass
class GpuTiming:
    """Seconds spent on the device: ``kernel`` (events around the launch) and ``total`` (with copies)."""

    kernel: float = 0.0
    total: float = 0.0


def _offsets(sizes: Sequence[int]) -> np.ndarray:
    out = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(np.asarray(sizes, np.int64), out=out[1:])
    return out


class PackedBatch:
    """Concatenated, device-ready arrays for a list of cases (host side)."""

    def __init__(self, cases: Sequence[SpliceCase], cols: int) -> None:
        self.cases = list(cases)
        chunk = 32 * cols
        widths = [c.target.size + 1 for c in self.cases]
        ks = [c.n_exons for c in self.cases]
        rows = [c.stream_rows for c in self.cases]
        self.chunks = [(w + chunk - 1) // chunk for w in widths]
        self.base_off = _offsets([c.base.size for c in self.cases])
        self.exon_off = _offsets(ks)
        self.target_off = _offsets([c.target.size for c in self.cases])
        self.out_off = _offsets([k * w for k, w in zip(ks, widths)])
        self.bound_off = _offsets([ch * r for ch, r in zip(self.chunks, rows)])
        self.progress_off = _offsets(self.chunks)
        self.base = np.concatenate([c.base for c in self.cases])
        self.starts = np.concatenate([c.starts for c in self.cases]).astype(np.int32)
        self.ends = np.concatenate([c.ends for c in self.cases]).astype(np.int32)
        self.by_end = np.concatenate([np.argsort(c.ends, kind="stable") for c in self.cases]).astype(np.int32)
        self.n_exons = np.asarray(ks, np.int32)
        self.target = np.concatenate([c.target for c in self.cases])
        self.target_len = np.asarray([c.target.size for c in self.cases], np.int32)
        self.stream_rows = np.asarray(rows, np.int64)
        # Biggest cases first: blocks are dispatched roughly in index order.
        self.case_order = np.argsort([-c.cells for c in self.cases], kind="stable").astype(np.int32)

    @property
    def widths(self) -> list[int]:
        return [c.target.size + 1 for c in self.cases]


def forward_gpu_many(
    cases: Sequence[SpliceCase],
    matrix: np.ndarray,
    gap: int,
    *,
    cols: int | None = None,
    max_warps: int = MAX_WARPS,
    device_id: int | None = None,
    timing: GpuTiming | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(last, pred)`` for every case, computed in one kernel launch.

    ``cols``: target columns per lane (4, 8 or 16); by default 4 for a few cases (their chunks
    spread over the SMs: shorter per-row chains) and 8 for many (fewer, fuller warps).
    """
    import cupy as cp

    from gamut.cuda import load_module

    if not cases:
        return []
    dev = cp.cuda.Device(device_id) if device_id is not None else cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    if cols is None:
        cols = FEW_CASES_COLS if len(cases) <= sms // 4 else DEFAULT_COLS
    if cols not in (4, 8, 16):
        raise ValueError("cols must be 4, 8 or 16")
    packed = PackedBatch(cases, cols)
    with dev:
        start_total = cp.cuda.Event()
        start_total.record()
        module = load_module(KERNEL_FILE, options=(f"-DCOLS={cols}",), device_id=dev.id)
        kernel = module.get_function("splice_forward")
        d = {name: cp.asarray(getattr(packed, name)) for name in (
            "base", "base_off", "starts", "ends", "by_end", "exon_off", "n_exons", "target",
            "target_off", "target_len", "out_off", "bound_off", "stream_rows", "progress_off",
            "case_order")}
        last = cp.empty(int(packed.out_off[-1]), cp.int32)
        pred = cp.empty(int(packed.out_off[-1]), cp.int32)
        bound = cp.empty(max(int(packed.bound_off[-1]), 1), cp.int32)
        progress = cp.zeros(max(int(packed.progress_off[-1]), 1), cp.int32)
        mat = cp.asarray(np.ascontiguousarray(matrix, np.int32).ravel())
        if int(packed.stream_rows.max()) >= 2**31 - 64:
            raise ValueError("a case has more than 2^31 exon-stream rows")
        # Few cases: every chunk gets its own one-warp block, so that a single big case uses many
        # SMs (a case's chunks form a pipeline, so all its blocks must be resident at once).
        # Many cases: one block per case with the median chunk count of warps, so that small
        # cases do not reserve idle warps (wider cases take their chunks in passes).
        spread = len(packed.cases) * max(packed.chunks)
        if len(packed.cases) <= sms // 4 and spread <= sms * 8:
            warps, blocks_per_case = 1, max(packed.chunks)
        else:
            typical = max(packed.chunks) if len(packed.cases) == 1 else int(np.median(packed.chunks))
            warps, blocks_per_case = int(max(1, min(max_warps, typical))), 1
        shared = warps * 5 * 32 * max(16, cols * 2)  # ScoreVec is 16-byte aligned
        if shared > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = shared
        args = (
            d["base"], d["base_off"], d["starts"], d["ends"], d["by_end"], d["exon_off"], d["n_exons"],
            d["target"], d["target_off"], d["target_len"], d["out_off"], last, pred,
            bound, d["bound_off"], d["stream_rows"], progress, d["progress_off"],
            d["case_order"], mat, np.int32(gap), np.int32(blocks_per_case),
        )
        begin = cp.cuda.Event()
        end = cp.cuda.Event()
        begin.record()
        kernel((len(packed.cases) * blocks_per_case,), (32 * warps,), args, shared_mem=shared)
        end.record()
        host_last = cp.asnumpy(last)
        host_pred = cp.asnumpy(pred)
        end.synchronize()
        if timing is not None:
            timing.kernel += cp.cuda.get_elapsed_time(begin, end) / 1000.0
            timing.total += cp.cuda.get_elapsed_time(start_total, end) / 1000.0
    results = []
    for index, case in enumerate(packed.cases):
        lo, hi = int(packed.out_off[index]), int(packed.out_off[index + 1])
        shape = (case.n_exons, case.target.size + 1)
        results.append((host_last[lo:hi].reshape(shape), host_pred[lo:hi].reshape(shape)))
    return results


def forward_gpu(case: SpliceCase, matrix: np.ndarray, gap: int, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """``(last, pred)`` for one case on the GPU."""
    return forward_gpu_many([case], matrix, gap, **kwargs)[0]
