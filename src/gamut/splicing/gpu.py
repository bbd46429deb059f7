"""CUDA engine: many spliced-alignment cases per launch, forward pass and traceback on the device.

The forward kernel (``cuda/kernels/splice.cu``) fills the same ``last``/``pred`` arrays as the CPU
engines (same tie rule) and leaves them on the device; the traceback kernel
(``cuda/kernels/splice_traceback.cu``) reads them there and returns, per case, the score, the
chain and the alignment operations (what :func:`gamut.splicing.cpu.traceback` gives). Only those
come back to the host. :func:`forward_gpu_many` downloads ``last``/``pred`` instead (to check
them against the CPU engines). CuPy is imported only inside the functions that launch kernels;
how a batch is laid out for them is :mod:`gamut.splicing.gpu_layout`.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from numba import njit

from gamut.cuda.device import device_attributes
from gamut.errors import DeviceError
from gamut.splicing.batch import CaseBatch, offsets
from gamut.splicing.gpu_layout import (DEFAULT_COLS, FEW_CASES_COLS, MAX_WARPS, STREAM_OPTIONS, TB_MIN_BLOCKS,
                                       TB_THREADS, TB_THREADS_MANY, TRACEBACK_OPTIONS, PackedBatch, chunk_counts, launch_shape,
                                       shared_layout, sm_occupancy, spread_layout, traceback_budget,
                                       traceback_cap, traceback_dynamic_bytes, wide_layout, wide_warps)
from gamut.splicing.model import SpliceCase
from gamut.splicing.result import Tracebacks

KERNEL_FILE = "splice.cu"
TRACEBACK_FILE = "splice_traceback.cu"

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


def _resident_blocks(kernel, threads: int, shared: int, sms: int) -> int:
    """Blocks of ``threads`` threads and ``shared`` bytes of dynamic shared memory that the device
    keeps resident at once (the occupancy calculator)."""
    import cupy as cp

    if shared > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = shared
    function = getattr(kernel, "kernel", None)  # the loaded CUfunction behind CuPy's RawKernel
    if getattr(function, "ptr", None) is not None:
        return sms * int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function.ptr, threads, shared))
    return sms * sm_occupancy(kernel.attributes, device_attributes(), threads, shared)


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
    few = n_cases <= attributes["MultiProcessorCount"] // 4
    threads = threads or (TB_THREADS if few else TB_THREADS_MANY)
    module = load_module(TRACEBACK_FILE, options=(f"-DTB_THREADS={threads}",
                                                  f"-DTB_MIN_BLOCKS={TB_MIN_BLOCKS.get(threads, 1)}",
                                                  *TRACEBACK_OPTIONS), device_id=dev.id)
    kernel = module.get_function("splice_traceback")
    if cap is None:
        static_attributes = kernel.attributes
        static = int(static_attributes.get("shared_size_bytes", 0))
        # A launch of a few cases (at most a quarter of the SMs) takes an SM per block; more cases
        # share SMs: two blocks each as far as the registers let them, more where that many are
        # resident with the widest case in one strip.
        whole = traceback_dynamic_bytes(traceback_cap(target_len, 1 << 30))
        per_sm = 1 if few else max(1, min(2, sm_occupancy(static_attributes, attributes, threads, 0)),
                                   sm_occupancy(static_attributes, attributes, threads, whole))
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
    batch.check_score_range(max_abs)  # the kernel's cells are int32
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
    cases: Sequence[SpliceCase] | CaseBatch,
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
    (:func:`gamut.splicing.gpu_layout.spread_layout`: shorter per-row chains) and 8 otherwise (fewer, fuller warps).
    ``slots``: at most this many parked-row slots per warp (tests; default: what shared memory holds).
    ``max_blocks``: at most this many blocks per case (tests: chunks taken in several passes).
    """
    batch = cases if isinstance(cases, CaseBatch) else CaseBatch(cases)
    if not len(batch):
        return []
    launch = _forward(batch, matrix, gap, cols, max_warps, device_id, slots, max_blocks)
    with launch.dev:
        (host_last, host_pred), _ = _download_all(launch, timing, launch.last, launch.pred)
    packed = launch.packed
    results = []
    for index in range(packed.n_cases):
        lo, hi = int(packed.out_off[index]), int(packed.out_off[index + 1])
        shape = (int(packed.batch.n_exons[index]), int(packed.batch.target_len[index]) + 1)
        results.append((host_last[lo:hi].reshape(shape), host_pred[lo:hi].reshape(shape)))
    return results


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
    :data:`gamut.splicing.gpu_layout.TB_THREADS`, or ``TB_THREADS_MANY`` for a launch of many
    cases); ``tb_cap``: columns per
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
        (host_result, host_ops, host_chain), end = _download_all(launch, timing, result, ops, chain)
        stage("download")
        if timing is not None:
            timing.traceback += cp.cuda.get_elapsed_time(start, done) / 1000.0
            timing.add("upload", cp.cuda.get_elapsed_time(launch.begin, launch.uploaded) / 1000.0, device=True)
            timing.add("download", cp.cuda.get_elapsed_time(done, end) / 1000.0, device=True)
    tracebacks = collect_tracebacks(packed, host_result, host_ops, host_chain)
    stage("collect")
    return tracebacks


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
        raise DeviceError(f"the GPU engine gave an inconsistent result ({packed.batch.names[c]}: {why}; "
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


def _download_all(launch: _Launch, timing: GpuTiming | None, *arrays) -> tuple[list[np.ndarray], object]:
    """``arrays`` downloaded (:func:`_download`) and the event recorded once they are; adds the
    forward kernel's time and the total (from the upload) to ``timing``. Call under ``launch.dev``."""
    import cupy as cp

    hosts = [_download(array) for array in arrays]
    end = cp.cuda.Event()
    end.record()
    end.synchronize()
    if timing is not None:
        timing.kernel += cp.cuda.get_elapsed_time(launch.forward_start, launch.forward_end) / 1000.0
        timing.total += cp.cuda.get_elapsed_time(launch.begin, end) / 1000.0
    return hosts, end


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
