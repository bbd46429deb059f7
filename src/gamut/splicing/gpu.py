"""CUDA engine: many spliced-alignment cases per launch, forward pass and traceback on the device.

The forward kernel (``cuda/kernels/splice.cu``) fills the same ``last``/``pred`` arrays as the CPU
engines (same tie rule) and leaves them on the device; the traceback kernel
(``cuda/kernels/splice_traceback.cu``) reads them there and returns, per case, the score, the
chain and the alignment operations (what :func:`gamut.splicing.cpu.traceback` gives). Only those
come back to the host. :func:`forward_gpu_many` downloads ``last``/``pred`` instead (tests,
``bench/splice.py --check``). CuPy is imported only inside the functions that launch kernels.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
from numba import njit

from gamut.cuda.device import device_attributes
from gamut.errors import DeviceError
from gamut.splicing.batch import CaseBatch, offsets
from gamut.splicing.cpu import OP_BASE_GAP, OP_MATCH, OP_TARGET_GAP
from gamut.splicing.model import SpliceCase, check_score_range
from gamut.splicing.result import Tracebacks
from gamut.splicing.stream import ENTRY_CODE, FINISH_BIT, FOLD_NOW, PAD_CODE, ROWS, build_plans

CODES = PAD_CODE + 1  # profile rows in the kernel: A C G T N and two unused (entry, no-op)
#: The stream layout the kernel reads, defined once in :mod:`gamut.splicing.stream`.
STREAM_OPTIONS = (f"-DROWS={ROWS}", f"-DENTRY_CODE={ENTRY_CODE}", f"-DPAD_CODE={PAD_CODE}",
                  f"-DFINISH_BIT={FINISH_BIT}", f"-DFOLD_NOW=({FOLD_NOW})")
#: Threads per traceback block (one block per case). Measured on an H100 for the 1,010
#: paper-shaped cases (2026-11-25): 28.1 ms with 256, 20.9 ms with 512, 15.4 ms with 1,024 threads
#: (the largest cases bound the launch, and shorter rows per thread shorten them); a launch of a
#: few cases (at most a quarter of the SM count) also takes a whole SM's shared memory per block.
TB_THREADS = 1024
#: Blocks per SM the traceback kernel's registers are bounded for (__launch_bounds__), by block size.
TB_MIN_BLOCKS = {256: 4, 512: 2, 1024: 1}
#: The walk's window of the moves matrix in the traceback kernel (rows x bytes; TB_WIN_* there).
TB_WIN_ROWS = 128
TB_WIN_BYTES = 64
#: Options of the traceback kernel (and of its host build in the tests).
TRACEBACK_OPTIONS = (f"-DFINISH_BIT={FINISH_BIT}", f"-DOP_MATCH={OP_MATCH}", f"-DOP_BASE_GAP={OP_BASE_GAP}",
                     f"-DOP_TARGET_GAP={OP_TARGET_GAP}", f"-DTB_WIN_ROWS={TB_WIN_ROWS}",
                     f"-DTB_WIN_BYTES={TB_WIN_BYTES}")

KERNEL_FILE = "splice.cu"
TRACEBACK_FILE = "splice_traceback.cu"
DEFAULT_COLS = 8
FEW_CASES_COLS = 4
MAX_WARPS = 16
#: One-warp blocks (one per chunk) that a few cases may put on each SM (:func:`spread_layout`).
ONE_WARP_BLOCKS_PER_SM = 8

#: Why the traceback kernel gave up on a case (its status codes, TB_* in splice_traceback.cu).
TRACEBACK_STATUS = {
    1: "pred names an exon that cannot precede",
    2: "pred holds a value that is neither -1 nor an exon of the case",
    3: "the alignment is longer than the target plus the exons' span",
}


@dataclass
class GpuTiming:
    """Seconds on the device: ``kernel`` (the forward kernel), ``traceback`` (the traceback kernel)
    and ``total`` (events around everything on the device: uploads, kernels, downloads);
    ``stages``: host wall-clock seconds by stage (``pack``, ``upload``, ``launch``, ``wait``: the
    host waiting for the kernels, ``download``, ``collect``; ``api.solve`` adds ``batch`` and
    ``results``); ``device``: device seconds of the ``upload`` and ``download`` copies."""

    kernel: float = 0.0
    traceback: float = 0.0
    total: float = 0.0
    stages: dict = field(default_factory=dict)
    device: dict = field(default_factory=dict)

    def add(self, stage: str, seconds: float, device: bool = False) -> None:
        table = self.device if device else self.stages
        table[stage] = table.get(stage, 0.0) + seconds


def stopwatch(timing: GpuTiming | None) -> Callable[[str | None], None]:
    """``stage(name)``: adds the host seconds since the previous call (the first: since this one)
    to ``timing``'s stage ``name`` (``None``: only restarts the clock); nothing without ``timing``."""
    clock = time.perf_counter()

    def stage(name: str | None) -> None:
        nonlocal clock
        now = time.perf_counter()
        if timing is not None and name is not None:
            timing.add(name, now - clock)
        clock = now

    return stage


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


#: Shared memory the blocks on one SM may use for score profiles and parked rows (H100: 227 KB).
SHARED_PER_SM = 192 * 1024
#: ... and one block, when blocks are many (two then fit on an SM).
SHARED_PER_BLOCK = 96 * 1024
#: Parked-row slots per warp at most.
MAX_SLOTS = 64


def shared_layout(warps: int, cols: int, blocks_per_sm: int = 0, at_most: int | None = None) -> tuple[int, int]:
    """``(slots, bytes)``: parked-row slots per warp and each block's dynamic shared memory.

    ``blocks_per_sm``: blocks that must be resident together on an SM (the spread layouts), 0 when
    blocks come and go (one block per case); ``at_most``: a cap on the slots (tests).
    """
    budget = SHARED_PER_SM // blocks_per_sm if blocks_per_sm else SHARED_PER_BLOCK
    profile = CODES * 32 * max(16, 2 * cols)  # ScoreVec: 16-byte aligned
    row = 32 * max(16, 4 * cols)  # RowVec of one slot, all lanes
    slots = max(0, min(MAX_SLOTS if at_most is None else at_most, (budget // warps - profile) // row))
    return slots, warps * (profile + slots * row)


def chunk_counts(target_len: Sequence[int] | np.ndarray, cols: int) -> np.ndarray:
    """Chunks of ``32 * cols`` target columns (0..n) of each case, from the target lengths."""
    chunk = 32 * cols
    return (np.asarray(target_len, np.int64) + chunk) // chunk


def state_cells(batch: CaseBatch) -> np.ndarray:
    """Device memory each case needs, in 4-byte cells: ``last`` and ``pred`` (``2 K (n + 1)``), the
    forward pass's chunk edges (8 bytes per stream row and chunk of 256 columns), the traceback's
    2-bit moves of one exon (``longest exon x (n + 1) / 4`` bytes, rows 16-byte aligned) and its
    strip boundary values (two buffers of ``longest exon + 1``; only cases wider than a strip have
    them, counted for every case)."""
    width = batch.target_len + 1
    rows = batch.per_case_sum(batch.exon_lengths) + batch.n_exons * ROWS
    moves = batch.max_exon * moves_pitch(batch.target_len)
    return (2 * batch.n_exons * width + 2 * rows * chunk_counts(batch.target_len, DEFAULT_COLS) + moves // 4
            + 2 * (batch.max_exon + 1))


def moves_pitch(target_len: Sequence[int] | np.ndarray) -> np.ndarray:
    """Bytes per row of the traceback's 2-bit moves over columns ``0..n`` (16-byte aligned rows)."""
    return ((np.asarray(target_len, np.int64) + 4) // 4 + 15) // 16 * 16


class PackedBatch:
    """Device-ready arrays for a batch (host side): the exon streams and fold plans
    (:mod:`gamut.splicing.stream`), targets, output offsets and the traceback's scratch offsets."""

    def __init__(self, cases: Sequence[SpliceCase] | CaseBatch, cols: int, slots: int) -> None:
        batch = cases if isinstance(cases, CaseBatch) else CaseBatch(cases)
        self.batch = batch
        self.cases = batch.cases
        plans = build_plans(batch.base, batch.base_off, batch.starts, batch.ends, batch.exon_off, slots)
        width = batch.target_len + 1
        rows = np.diff(plans.stream_off)
        self.chunks = chunk_counts(batch.target_len, cols)
        self.stream = plans.stream
        self.stream_off = plans.stream_off
        self.stream_rows = _int32(rows, "exon-stream rows of a case (exon lengths plus one row per exon)",
                                  MAX_STREAM_ROWS)
        self.seg_row = plans.seg_row.astype(np.int32)  # < stream rows of the case
        self.fin = plans.fin
        self.fold_ptr = plans.fold_ptr
        self.fold = plans.fold if plans.fold.shape[0] else np.zeros((1, 2), np.int32)  # keeps the device array non-empty
        self.exon_off = batch.exon_off
        self.n_exons = _int32(batch.n_exons, "candidate exons of a case")
        self.starts = batch.starts
        self.ends = batch.ends
        self.target_off = batch.target_off
        self.out_off = offsets(batch.n_exons * width)
        self.bound_off = offsets(self.chunks * rows)
        self.target = batch.target
        self.target_len = _int32(batch.target_len, "target lengths", 2**31 - 1024)
        # Biggest cases first: blocks are dispatched roughly in index order.
        self.case_order = np.argsort(-batch.cells, kind="stable").astype(np.int32)
        # Traceback: cost grows with the target length squared (blocks take the cases in this
        # order); its scratch and output capacity.
        self.tb_order = np.argsort(-batch.target_len, kind="stable").astype(np.int32)
        self.max_exon = batch.max_exon
        self.moves_off = offsets(batch.max_exon * moves_pitch(batch.target_len))
        # Ops: every target symbol once, and every symbol of the chain, whose exons do not overlap.
        self.ops_off = offsets(batch.target_len + batch.covered)

    @property
    def n_cases(self) -> int:
        return len(self.cases)

    def bnd_off(self, cap: int) -> np.ndarray:
        """Offsets of the traceback's strip boundary values (two buffers of ``longest exon + 1``
        ints) for strips of ``cap`` columns: only cases wider than a strip have any."""
        wide = self.target_len.astype(np.int64) + 1 > cap
        return offsets(np.where(wide, 2 * (self.max_exon + 1), 0))


def spread_layout(chunks: Sequence[int] | np.ndarray, sms: int) -> bool:
    """Whether cases of these chunk counts get one one-warp block per chunk (see :func:`launch_shape`):
    a few cases (at most a quarter of the SM count) whose blocks all fit on the SMs at once."""
    chunks = np.asarray(chunks)
    return len(chunks) <= sms // 4 and len(chunks) * int(chunks.max()) <= sms * ONE_WARP_BLOCKS_PER_SM


def wide_layout(chunks: Sequence[int] | np.ndarray, sms: int, max_warps: int = MAX_WARPS) -> bool:
    """Whether a few cases too wide for :func:`spread_layout` get several blocks of ``max_warps``
    warps each, spread over all SMs (their warps take the chunks in passes)."""
    chunks = np.asarray(chunks)
    return len(chunks) <= sms // 4 and not spread_layout(chunks, sms) and int(chunks.max()) > max_warps


def launch_shape(chunks: Sequence[int] | np.ndarray, sms: int, max_warps: int = MAX_WARPS,
                 resident_blocks: int | None = None) -> tuple[int, int]:
    """``(warps per block, blocks per case)`` for cases of these chunk counts on ``sms`` SMs.

    A case's chunks form a pipeline (chunk c waits for chunk c - 1's rows), so all the blocks of a
    case that spans several must be resident at once. A few cases: every chunk gets its own
    one-warp block, so that a single big case uses many SMs. Wider ones (:func:`wide_layout`):
    blocks of up to ``max_warps`` warps, enough warps per block to put a block on every SM, as
    many blocks per case as ``resident_blocks`` (blocks resident on the whole device, from its
    occupancy; default one per SM) allows, taking the chunks in passes. Many cases: one block per
    case with the median chunk count of warps, so that small cases do not reserve idle warps
    (wider cases take their chunks in passes).
    """
    chunks = np.asarray(chunks)
    widest = int(chunks.max())
    if spread_layout(chunks, sms):
        return 1, widest
    if wide_layout(chunks, sms, max_warps):
        warps = wide_warps(chunks, sms, max_warps)
        resident = sms if resident_blocks is None else resident_blocks
        return warps, max(1, min(-(-widest // warps), resident // len(chunks)))
    typical = widest if len(chunks) == 1 else int(np.median(chunks))
    return int(max(1, min(max_warps, typical))), 1


def wide_warps(chunks: Sequence[int] | np.ndarray, sms: int, max_warps: int = MAX_WARPS) -> int:
    """Warps per block in the :func:`wide_layout`: the widest case's chunks over the SMs shared by
    the cases, at most ``max_warps``."""
    chunks = np.asarray(chunks)
    per_case = max(1, sms // len(chunks))
    return int(min(max_warps, max(1, -(-int(chunks.max()) // per_case))))


def _resident_blocks(kernel, threads: int, shared: int, sms: int) -> int:
    """Blocks of ``threads`` threads and ``shared`` bytes of dynamic shared memory that the device
    keeps resident at once (the occupancy calculator)."""
    import cupy as cp

    if shared > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = shared
    function = getattr(kernel, "kernel", None)  # the loaded CUfunction behind CuPy's RawKernel
    if getattr(function, "ptr", None) is not None:
        return sms * int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function.ptr, threads, shared))
    return sms * _blocks_per_sm(kernel.attributes, device_attributes(), threads, shared)


def _blocks_per_sm(kernel: dict, device: dict, threads: int, shared: int) -> int:
    """Blocks one SM holds at once by the kernel's registers and shared memory and the SM's limits
    (a lower bound of the occupancy calculator's answer: registers rounded up to whole 256-register
    warp allocations, 1 KB of shared memory reserved per block)."""
    warps = -(-threads // 32)
    regs = -(-int(kernel["num_regs"]) * 32 // 256) * 256 * warps
    smem = int(kernel.get("shared_size_bytes", 0)) + shared + 1024
    limits = [int(device["MaxThreadsPerMultiProcessor"]) // (warps * 32),
              int(device["MaxRegistersPerMultiprocessor"]) // max(regs, 1),
              int(device["MaxSharedMemoryPerMultiprocessor"]) // smem,
              int(device.get("MaxBlocksPerMultiprocessor", 16))]
    return max(0, min(limits))


@dataclass
class _Launch:
    """A batch on the device after the forward kernel's launch: its arrays and timing events."""

    packed: PackedBatch
    dev: object
    d: dict  # device copies of the packed arrays, by name
    last: object
    pred: object
    begin: object  # event before the uploads
    uploaded: object  # event after them
    forward_start: object  # events around the forward kernel
    forward_end: object
    keep: object = None  # the pinned host buffer of the uploads (alive until the copy is done)
    traceback: "_TracebackPlan | None" = None
    bnd_cells: int = 0  # the traceback's strip boundary values (PackedBatch.bnd_off), all cases


@dataclass
class _TracebackPlan:
    """The traceback kernel of a launch: the function, threads per block, strip columns."""

    kernel: object
    threads: int
    cap: int
    shared: int  # dynamic shared memory per block


#: Arrays of :class:`PackedBatch` the forward kernel reads, and those the traceback kernel adds.
FORWARD_ARRAYS = ("stream", "stream_off", "stream_rows", "fin", "fold_ptr", "fold", "exon_off", "n_exons", "target",
                  "target_off", "target_len", "out_off", "bound_off", "case_order")
TRACEBACK_ARRAYS = ("seg_row", "starts", "ends", "moves_off", "ops_off", "tb_order")


def _upload(arrays: dict) -> tuple[dict, object]:
    """Device copies of host arrays, by name, made by one copy from page-locked memory (the host's
    pageable copies are slow): ``(arrays, pinned buffer to keep alive until the copy is done)``."""
    import cupy as cp

    layout, total = [], 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        layout.append((name, array, total))
        total += (array.nbytes + 255) // 256 * 256
    mem = _pinned(max(total, 256))
    if mem is None:  # no pinned memory to spare: one plain copy each
        return {name: cp.asarray(array) for name, array, _ in layout}, None
    host = np.frombuffer(mem, np.uint8, max(total, 256))
    for _, array, offset in layout:
        host[offset:offset + array.nbytes] = array.reshape(-1).view(np.uint8)
    device = cp.empty(host.size, cp.uint8)
    device.data.copy_from_host_async(ctypes.c_void_p(host.ctypes.data), host.size)
    return {name: device[offset:offset + array.nbytes].view(array.dtype).reshape(array.shape)
            for name, array, offset in layout}, mem


def _traceback_plan(dev, n_cases: int, target_len: np.ndarray, threads: int | None, cap: int | None):
    """Load the traceback kernel for a launch of ``n_cases`` cases and size its blocks."""
    from gamut.cuda import load_module

    attributes = device_attributes(dev.id)
    threads = threads or TB_THREADS
    module = load_module(TRACEBACK_FILE, options=(f"-DTB_THREADS={threads}",
                                                  f"-DTB_MIN_BLOCKS={TB_MIN_BLOCKS.get(threads, 1)}",
                                                  *TRACEBACK_OPTIONS), device_id=dev.id)
    kernel = module.get_function("splice_traceback")
    if cap is None:
        static_attributes = kernel.attributes
        static = int(static_attributes.get("shared_size_bytes", 0))
        # A launch of a few cases (at most a quarter of the SMs) takes an SM per block; more cases
        # share SMs two blocks each, as far as the registers let two blocks be resident at once.
        few = n_cases <= attributes["MultiProcessorCount"] // 4
        per_sm = 1 if few else max(1, min(2, _blocks_per_sm(static_attributes, attributes, threads, 0)))
        cap = traceback_cap(target_len, traceback_budget(attributes, static, per_sm))
    if cap < 64 or cap % 64:
        raise ValueError("the traceback's strip columns must be a positive multiple of 64")
    shared = traceback_dynamic_bytes(cap)
    if shared > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = shared
    return _TracebackPlan(kernel, threads, cap, shared)


def _forward(batch: CaseBatch, matrix: np.ndarray, gap: int, cols: int | None, max_warps: int,
             device_id: int | None, slots: int | None, max_blocks: int | None, timing: GpuTiming | None = None,
             traceback: bool = False, tb_threads: int | None = None, tb_cap: int | None = None) -> _Launch:
    """Pack ``batch``, upload it and launch the forward kernel (``last``/``pred`` stay on the device).
    ``traceback``: also load the traceback kernel and upload its arrays (one copy for both)."""
    import cupy as cp

    from gamut.cuda import load_module

    stage = stopwatch(timing)

    max_abs = int(max(np.abs(matrix).max(), abs(gap)))
    for case in batch.cases:  # the kernel's cells are int32
        check_score_range(case, max_abs)
    dev = cp.cuda.Device(device_id) if device_id is not None else cp.cuda.Device()
    sms = device_attributes(dev.id)["MultiProcessorCount"]
    if cols is None:
        cols = FEW_CASES_COLS if spread_layout(chunk_counts(batch.target_len, FEW_CASES_COLS), sms) else DEFAULT_COLS
    if cols not in (4, 8, 16):
        raise ValueError("cols must be 4, 8 or 16")
    chunks = chunk_counts(batch.target_len, cols)
    with dev:
        module = load_module(KERNEL_FILE, options=(f"-DCOLS={cols}", *STREAM_OPTIONS), device_id=dev.id)
        kernel = module.get_function("splice_forward")
        if wide_layout(chunks, sms, max_warps):
            slots, shared = shared_layout(wide_warps(chunks, sms, max_warps), cols, 1, slots)
            resident = _resident_blocks(kernel, 32 * wide_warps(chunks, sms, max_warps), shared, sms)
            warps, blocks_per_case = launch_shape(chunks, sms, max_warps, resident)
        else:
            warps, blocks_per_case = launch_shape(chunks, sms, max_warps)
            blocks = len(batch) * blocks_per_case
            slots, shared = shared_layout(warps, cols, -(-blocks // sms) if blocks_per_case > 1 else 0, slots)
            resident = _resident_blocks(kernel, 32 * warps, shared, sms) if blocks_per_case > 1 else blocks
        if max_blocks is not None:
            blocks_per_case = max(1, min(blocks_per_case, max_blocks))
        if blocks_per_case > 1 and len(batch) * blocks_per_case > resident:  # would wait for each other forever
            raise DeviceError(f"the GPU keeps {resident} blocks of {warps} warps resident, fewer than the "
                              f"{len(batch) * blocks_per_case} that a spread launch needs")
        plan = _traceback_plan(dev, len(batch), batch.target_len, tb_threads, tb_cap) if traceback else None
        stage("launch")
        packed = PackedBatch(batch, cols, slots)
        host = {name: getattr(packed, name) for name in FORWARD_ARRAYS}
        host["matrix"] = np.ascontiguousarray(matrix, np.int32).ravel()
        if plan is not None:
            host.update({name: getattr(packed, name) for name in TRACEBACK_ARRAYS})
            host["bnd_off"] = packed.bnd_off(plan.cap)
        stage("pack")
        begin = cp.cuda.Event()
        begin.record()
        d, keep = _upload(host)
        uploaded = cp.cuda.Event()
        uploaded.record()
        last = cp.empty(int(packed.out_off[-1]), cp.int32)
        pred = cp.empty(int(packed.out_off[-1]), cp.int32)
        bound = cp.zeros(max(int(packed.bound_off[-1]), 1), cp.int64)  # tags 0: nothing published
        stage("upload")
        if shared > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = shared
        args = (
            d["stream"], d["stream_off"], d["stream_rows"], d["fin"], d["fold_ptr"], d["fold"], d["exon_off"],
            d["n_exons"], d["target"], d["target_off"], d["target_len"], d["out_off"], last, pred,
            bound, d["bound_off"], d["case_order"], d["matrix"], np.int32(gap), np.int32(blocks_per_case),
            np.int32(slots),
        )
        start = cp.cuda.Event()
        start.record()
        kernel((len(batch) * blocks_per_case,), (32 * warps,), args, shared_mem=shared)
        done = cp.cuda.Event()
        done.record()
        stage("launch")
    bnd_cells = int(host["bnd_off"][-1]) if plan is not None else 0
    return _Launch(packed, dev, d, last, pred, begin, uploaded, start, done, keep, plan, bnd_cells)


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
    max_blocks: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(last, pred)`` for every case, computed in one kernel launch and downloaded (tests and
    checks; :func:`solve_gpu` keeps them on the device).

    ``cols``: target columns per lane (4, 8 or 16); by default 4 when the chunks get one block each
    (:func:`spread_layout`: shorter per-row chains) and 8 otherwise (fewer, fuller warps).
    ``slots``: at most this many parked-row slots per warp (tests; default: what shared memory holds).
    ``max_blocks``: at most this many blocks per case (tests: chunks taken in several passes).
    """
    import cupy as cp

    if not cases:
        return []
    launch = _forward(CaseBatch(cases), matrix, gap, cols, max_warps, device_id, slots, max_blocks)
    with launch.dev:
        host_last = _download(launch.last)
        host_pred = _download(launch.pred)
        end = cp.cuda.Event()
        end.record()
        end.synchronize()
        if timing is not None:
            timing.kernel += cp.cuda.get_elapsed_time(launch.forward_start, launch.forward_end) / 1000.0
            timing.total += cp.cuda.get_elapsed_time(launch.begin, end) / 1000.0
    packed = launch.packed
    results = []
    for index, case in enumerate(packed.cases):
        lo, hi = int(packed.out_off[index]), int(packed.out_off[index + 1])
        shape = (case.n_exons, case.target.size + 1)
        results.append((host_last[lo:hi].reshape(shape), host_pred[lo:hi].reshape(shape)))
    return results


def forward_gpu(case: SpliceCase, matrix: np.ndarray, gap: int, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """``(last, pred)`` for one case on the GPU."""
    return forward_gpu_many([case], matrix, gap, **kwargs)[0]


def solve_gpu(
    batch: CaseBatch,
    matrix: np.ndarray,
    gap: int,
    *,
    cols: int | None = None,
    max_warps: int = MAX_WARPS,
    device_id: int | None = None,
    timing: GpuTiming | None = None,
    slots: int | None = None,
    max_blocks: int | None = None,
    tb_threads: int | None = None,
    tb_cap: int | None = None,
) -> Tracebacks:
    """Forward pass and traceback of every case of ``batch`` on the device (one launch each).

    Options as :func:`forward_gpu_many`; ``tb_threads``: threads per traceback block (default
    :data:`TB_THREADS`); ``tb_cap``: columns per
    traceback strip, a multiple of 64 (default: the widest case's, as far as shared memory
    holds; tests set it small to cut cases into strips). Raises :class:`DeviceError` when the
    traceback kernel finds the forward pass's arrays inconsistent.
    """
    import cupy as cp

    launch = _forward(batch, matrix, gap, cols, max_warps, device_id, slots, max_blocks, timing, True, tb_threads,
                      tb_cap)
    packed, d, plan = launch.packed, launch.d, launch.traceback
    stage = stopwatch(timing)

    with launch.dev:
        moves = cp.empty(max(int(packed.moves_off[-1]), 1), cp.uint8)
        bnd = cp.empty(max(launch.bnd_cells, 1), cp.int32)
        ops = cp.empty(max(int(packed.ops_off[-1]), 1), cp.uint8)
        chain = cp.empty(max(int(packed.exon_off[-1]), 1), cp.int32)
        result = cp.empty(4 * packed.n_cases, cp.int32)
        next_case = cp.zeros(1, cp.int32)  # the blocks' queue of cases (largest first)
        start = cp.cuda.Event()
        start.record()
        plan.kernel((packed.n_cases,), (plan.threads,), (
            launch.last, launch.pred, d["out_off"], d["stream"], d["stream_off"], d["seg_row"], d["starts"],
            d["ends"], d["exon_off"], d["n_exons"], d["target"], d["target_off"], d["target_len"], d["matrix"],
            np.int32(gap), moves, d["moves_off"], bnd, d["bnd_off"], ops, d["ops_off"], chain, result,
            d["tb_order"], next_case, np.int32(plan.cap)), shared_mem=plan.shared)
        done = cp.cuda.Event()
        done.record()
        stage("launch")
        done.synchronize()
        stage("wait")
        host_result = _download(result)
        host_ops = _download(ops)
        host_chain = _download(chain)
        end = cp.cuda.Event()
        end.record()
        end.synchronize()
        stage("download")
        if timing is not None:
            timing.kernel += cp.cuda.get_elapsed_time(launch.forward_start, launch.forward_end) / 1000.0
            timing.traceback += cp.cuda.get_elapsed_time(start, done) / 1000.0
            timing.total += cp.cuda.get_elapsed_time(launch.begin, end) / 1000.0
            timing.add("upload", cp.cuda.get_elapsed_time(launch.begin, launch.uploaded) / 1000.0, device=True)
            timing.add("download", cp.cuda.get_elapsed_time(done, end) / 1000.0, device=True)
    tracebacks = collect_tracebacks(packed, host_result, host_ops, host_chain)
    stage("collect")
    return tracebacks


def traceback_dynamic_bytes(cap: int) -> int:
    """Dynamic shared memory of a traceback block with strips of ``cap`` columns (the kernel's
    TB_DYN_BYTES: the row, the target symbols, two staged rows of moves, the walk's window)."""
    return cap * 4 + cap + cap // 2 + TB_WIN_ROWS * TB_WIN_BYTES


def traceback_cap(target_len: Sequence[int] | np.ndarray, budget: int) -> int:
    """Columns per strip of the traceback (a multiple of 64): the widest case's columns ``0..n``
    in one strip when ``budget`` bytes of dynamic shared memory hold them, else what they hold."""
    widest = (int(np.max(target_len)) + 1 + 63) // 64 * 64 if len(target_len) else 64
    per_64 = traceback_dynamic_bytes(64) - traceback_dynamic_bytes(0)  # bytes per 64 columns
    fits = (budget - traceback_dynamic_bytes(0)) // per_64 * 64
    return max(64, min(widest, fits))


def traceback_budget(attributes: Mapping[str, int], static_bytes: int, blocks_per_sm: int) -> int:
    """Dynamic shared memory for one traceback block when ``blocks_per_sm`` blocks share an SM: the
    device's opt-in maximum for one, else an even share of the SM's (1 KB reserved per block)."""
    optin = int(attributes.get("MaxSharedMemoryPerBlockOptin", 48 * 1024))
    if blocks_per_sm > 1:
        sm = int(attributes.get("MaxSharedMemoryPerMultiprocessor", blocks_per_sm * optin))
        optin = min(optin, sm // blocks_per_sm - 1024)
    return max(0, optin - static_bytes)


@njit(cache=True, nogil=True)
def _tails(buffer, ends, counts):  # pragma: no cover - compiled
    """``buffer[ends[c] - counts[c]:ends[c]]`` of every case, concatenated."""
    out = np.empty(counts.sum(), buffer.dtype)
    p = 0
    for c in range(ends.shape[0]):
        n = counts[c]
        out[p:p + n] = buffer[ends[c] - n:ends[c]]
        p += n
    return out


def collect_tracebacks(packed: PackedBatch, result: np.ndarray, ops: np.ndarray, chain: np.ndarray) -> Tracebacks:
    """The traceback kernel's output (``result``: score, ops, chain length and status per case;
    ``ops`` and ``chain`` written backwards from the end of each case's region) as
    :class:`Tracebacks`. Raises :class:`DeviceError` naming the first case the kernel rejected."""
    result = np.asarray(result, np.int32).reshape(-1, 4)
    status = result[:, 3]
    n_ops = result[:, 1].astype(np.int64)
    n_chain = result[:, 2].astype(np.int64)
    cap_ops = np.diff(packed.ops_off)
    bad = np.flatnonzero((status != 0) | (n_ops < 0) | (n_ops > cap_ops) | (n_chain < 1)
                         | (n_chain > packed.n_exons))
    if bad.size:
        c = int(bad[0])
        why = TRACEBACK_STATUS.get(int(status[c]), "the traceback kernel returned impossible counts")
        raise DeviceError(f"the GPU engine gave an inconsistent result ({packed.cases[c].name}: {why}; "
                          f"{bad.size} of {packed.n_cases} cases)")
    return Tracebacks(
        score=result[:, 0].astype(np.int64),
        chain=_tails(np.asarray(chain, np.int32), packed.exon_off[1:], n_chain).astype(np.int64),
        chain_off=offsets(n_chain),
        ops=_tails(np.asarray(ops, np.uint8), packed.ops_off[1:], n_ops),
        ops_off=offsets(n_ops),
    )


def _pinned(nbytes: int):
    """``nbytes`` of page-locked host memory from CuPy's pinned pool, or None when there is none to spare."""
    import cupy as cp

    try:
        return cp.cuda.alloc_pinned_memory(nbytes)
    except cp.cuda.runtime.CUDARuntimeError:
        return None


def _download(array) -> np.ndarray:
    """A device array's copy in page-locked host memory (from CuPy's pinned pool: several times
    faster than a pageable copy for the tens of MB a big case returns)."""
    import cupy as cp

    mem = _pinned(array.nbytes)
    if mem is None:  # no pinned memory to spare: a plain copy
        return cp.asnumpy(array)
    host = np.frombuffer(mem, array.dtype, array.size)
    array.get(out=host)
    return host
