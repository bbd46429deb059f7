"""CUDA engine: many spliced-alignment cases in one launch (kernel ``cuda/kernels/splice.cu``).

CuPy is imported only inside these functions. The kernel fills the same ``last``/``pred``
arrays as the CPU engines (same tie rule); the traceback runs on the CPU
(:func:`gamut.splice.cpu.traceback`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gamut.errors import DeviceError
from gamut.splice.model import SpliceCase, check_score_range
from gamut.splice.stream import ENTRY_CODE, FINISH_BIT, FOLD_NOW, PAD_CODE, ROWS, build_plan

CODES = PAD_CODE + 1  # profile rows in the kernel: A C G T N and two unused (entry, no-op)
#: The stream layout the kernel reads, defined once in :mod:`gamut.splice.stream`.
STREAM_OPTIONS = (f"-DROWS={ROWS}", f"-DENTRY_CODE={ENTRY_CODE}", f"-DPAD_CODE={PAD_CODE}",
                  f"-DFINISH_BIT={FINISH_BIT}", f"-DFOLD_NOW=({FOLD_NOW})")

KERNEL_FILE = "splice.cu"
DEFAULT_COLS = 8
FEW_CASES_COLS = 4
MAX_WARPS = 16


@dataclass
class GpuTiming:
    """Seconds spent on the device: ``kernel`` (events around the launch) and ``total`` (with copies)."""

    kernel: float = 0.0
    total: float = 0.0


#: Exon-stream rows of one case the kernel indexes in int (row tags ``row + 1`` and tile steps
#: ``tiles + 31`` must stay below 2^31).
MAX_STREAM_ROWS = 2**31 - 64


def _int32(values, what: str, limit: int = 2**31 - 1) -> np.ndarray:
    """``values`` as the kernel's int32; :class:`DeviceError` naming ``limit`` when one exceeds it."""
    values = np.asarray(values, np.int64)
    if values.size and int(values.max()) > limit:
        raise DeviceError(f"{what} reach {int(values.max()):,}; the GPU engine handles at most {limit:,} "
                          "(use the CPU engine, or fewer or shorter candidate exons)")
    return values.astype(np.int32)


def _offsets(sizes: Sequence[int]) -> np.ndarray:
    out = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(np.asarray(sizes, np.int64), out=out[1:])
    return out


#: Shared memory the blocks on one SM may use for score profiles and parked rows (H100: 227 KB).
SHARED_PER_SM = 192 * 1024
#: ... and one block, when blocks are many (two then fit on an SM).
SHARED_PER_BLOCK = 96 * 1024
#: Parked-row slots per warp at most.
MAX_SLOTS = 64


def shared_layout(warps: int, cols: int, blocks_per_sm: int = 0, at_most: int | None = None) -> tuple[int, int]:
    """``(slots, bytes)``: parked-row slots per warp and each block's dynamic shared memory.

    ``blocks_per_sm``: blocks that must be resident together on an SM (one-warp layout), 0 when
    blocks come and go (one block per case); ``at_most``: a cap on the slots (tests).
    """
    budget = SHARED_PER_SM // blocks_per_sm if blocks_per_sm else SHARED_PER_BLOCK
    profile = CODES * 32 * max(16, 2 * cols)  # ScoreVec: 16-byte aligned
    row = 32 * max(16, 4 * cols)  # RowVec of one slot, all lanes
    slots = max(0, min(MAX_SLOTS if at_most is None else at_most, (budget // warps - profile) // row))
    return slots, warps * (profile + slots * row)


def chunk_counts(cases: Sequence[SpliceCase], cols: int) -> list[int]:
    """Chunks of ``32 * cols`` target columns (0..n) of each case."""
    chunk = 32 * cols
    return [(c.target.size + chunk) // chunk for c in cases]


class PackedBatch:
    """Concatenated, device-ready arrays for a list of cases (host side): each case's padded exon
    stream and fold plan (:mod:`gamut.splice.stream`), its target and output offsets."""

    def __init__(self, cases: Sequence[SpliceCase], cols: int, slots: int) -> None:
        self.cases = list(cases)
        widths = [c.target.size + 1 for c in self.cases]
        ks = [c.n_exons for c in self.cases]
        plans = [build_plan(c.base, c.starts, c.ends, slots) for c in self.cases]
        rows = [p.rows for p in plans]
        self.chunks = chunk_counts(self.cases, cols)
        self.stream = np.concatenate([p.stream for p in plans])
        self.stream_off = _offsets(rows)
        self.stream_rows = _int32(rows, "exon-stream rows of a case (exon lengths plus one row per exon)",
                                  MAX_STREAM_ROWS)
        self.fin = np.concatenate([p.fin for p in plans]).astype(np.int32)
        fold_off = _offsets([p.fold.shape[0] for p in plans])
        self.fold_ptr = _int32(np.concatenate([p.fold_ptr + fold_off[i] for i, p in enumerate(plans)]),
                               "parked-exon folds of a launch")
        self.fold = np.concatenate([p.fold for p in plans]).astype(np.int32).reshape(-1, 2)
        if self.fold.shape[0] == 0:
            self.fold = np.zeros((1, 2), np.int32)  # never read; keeps the device array non-empty
        self.exon_off = _offsets(ks)
        self.n_exons = _int32(ks, "candidate exons of a case")
        self.target_off = _offsets([c.target.size for c in self.cases])
        self.out_off = _offsets([k * w for k, w in zip(ks, widths)])
        self.bound_off = _offsets([ch * r for ch, r in zip(self.chunks, rows)])
        self.target = np.concatenate([c.target for c in self.cases])
        self.target_len = _int32([c.target.size for c in self.cases], "target lengths", 2**31 - 1024)
        # Biggest cases first: blocks are dispatched roughly in index order.
        self.case_order = np.argsort([-c.cells for c in self.cases], kind="stable").astype(np.int32)


def spread_layout(chunks: Sequence[int], sms: int) -> bool:
    """Whether cases of these chunk counts get one one-warp block per chunk (see :func:`launch_shape`):
    a few cases (at most a quarter of the SM count) whose blocks all fit on the SMs at once."""
    return len(chunks) <= sms // 4 and len(chunks) * max(chunks) <= sms * 8


def launch_shape(chunks: Sequence[int], sms: int, max_warps: int = MAX_WARPS) -> tuple[int, int]:
    """``(warps per block, blocks per case)`` for cases of these chunk counts on ``sms`` SMs.

    A few cases: every chunk gets its own one-warp block, so that a single big case uses many SMs
    (a case's chunks form a pipeline, so all its blocks must be resident at once). Many cases:
    one block per case with the median chunk count of warps, so that small cases do not reserve
    idle warps (wider cases take their chunks in passes).
    """
    if spread_layout(chunks, sms):
        return 1, max(chunks)
    typical = max(chunks) if len(chunks) == 1 else int(np.median(chunks))
    return int(max(1, min(max_warps, typical))), 1


def forward_gpu_many(
    cases: Sequence[SpliceCase],
    matrix: np.ndarray,
    gap: int,
    *,
    cols: int | None = None,
    max_warps: int = MAX_WARPS,
    device_id: int | None = None,
    timing: GpuTiming | None = None,
    slots: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(last, pred)`` for every case, computed in one kernel launch.

    ``cols``: target columns per lane (4, 8 or 16); by default 4 when the chunks get one block each
    (:func:`spread_layout`: shorter per-row chains) and 8 otherwise (fewer, fuller warps).
    ``slots``: at most this many parked-row slots per warp (tests; default: what shared memory holds).
    """
    import cupy as cp

    from gamut.cuda import load_module

    if not cases:
        return []
    for case in cases:  # the kernel's cells are int32
        check_score_range(case, int(max(np.abs(matrix).max(), abs(gap))))
    dev = cp.cuda.Device(device_id) if device_id is not None else cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    if cols is None:
        cols = FEW_CASES_COLS if spread_layout(chunk_counts(cases, FEW_CASES_COLS), sms) else DEFAULT_COLS
    if cols not in (4, 8, 16):
        raise ValueError("cols must be 4, 8 or 16")
    warps, blocks_per_case = launch_shape(chunk_counts(cases, cols), sms, max_warps)
    blocks = len(cases) * blocks_per_case
    slots, shared = shared_layout(warps, cols, -(-blocks // sms) if blocks_per_case > 1 else 0, slots)
    packed = PackedBatch(cases, cols, slots)
    with dev:
        start_total = cp.cuda.Event()
        start_total.record()
        module = load_module(KERNEL_FILE, options=(f"-DCOLS={cols}", *STREAM_OPTIONS), device_id=dev.id)
        kernel = module.get_function("splice_forward")
        d = {name: cp.asarray(getattr(packed, name)) for name in (
            "stream", "stream_off", "stream_rows", "fin", "fold_ptr", "fold", "exon_off", "n_exons",
            "target", "target_off", "target_len", "out_off", "bound_off", "case_order")}
        last = cp.empty(int(packed.out_off[-1]), cp.int32)
        pred = cp.empty(int(packed.out_off[-1]), cp.int32)
        bound = cp.zeros(max(int(packed.bound_off[-1]), 1), cp.int64)  # tags 0: nothing published
        mat = cp.asarray(np.ascontiguousarray(matrix, np.int32).ravel())
        if shared > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = shared
        args = (
            d["stream"], d["stream_off"], d["stream_rows"], d["fin"], d["fold_ptr"], d["fold"], d["exon_off"],
            d["n_exons"], d["target"], d["target_off"], d["target_len"], d["out_off"], last, pred,
            bound, d["bound_off"], d["case_order"], mat, np.int32(gap), np.int32(blocks_per_case), np.int32(slots),
        )
        begin = cp.cuda.Event()
        end = cp.cuda.Event()
        begin.record()
        kernel((len(packed.cases) * blocks_per_case,), (32 * warps,), args, shared_mem=shared)
        end.record()
        host_last = _download(last)
        host_pred = _download(pred)
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


def _download(array) -> np.ndarray:
    """A device array's copy in page-locked host memory (from CuPy's pinned pool: several times
    faster than a pageable copy for the tens of MB a big case returns)."""
    import cupy as cp

    try:
        mem = cp.cuda.alloc_pinned_memory(array.nbytes)
    except cp.cuda.runtime.CUDARuntimeError:  # no pinned memory to spare: a plain copy
        return cp.asnumpy(array)
    host = np.frombuffer(mem, array.dtype, array.size)
    array.get(out=host)
    return host


def forward_gpu(case: SpliceCase, matrix: np.ndarray, gap: int, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """``(last, pred)`` for one case on the GPU."""
    return forward_gpu_many([case], matrix, gap, **kwargs)[0]
