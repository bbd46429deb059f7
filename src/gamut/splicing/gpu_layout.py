"""How the GPU engine lays a batch out for its kernels, on the host (no CuPy here).

The kernels' compile-time options, the packed arrays they read (:class:`PackedBatch`), the
launch shapes of the forward kernel (warps per block, blocks per case, shared memory per block),
the device memory a case needs (:func:`state_cells`, which splits big batches into launches) and
the traceback kernel's strips of columns. :mod:`gamut.splicing.gpu` launches the kernels.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from gamut.errors import DeviceError
from gamut.splicing.batch import CaseBatch, offsets
from gamut.splicing.cpu import OP_BASE_GAP, OP_MATCH, OP_TARGET_GAP
from gamut.splicing.model import SpliceCase
from gamut.splicing.stream import ENTRY_CODE, FINISH_BIT, FOLD_NOW, PAD_CODE, ROWS, build_plans

CODES = PAD_CODE + 1  # profile rows in the kernel: A C G T N and two unused (entry, no-op)
#: The stream layout the kernel reads, defined once in :mod:`gamut.splicing.stream`.
STREAM_OPTIONS = (f"-DROWS={ROWS}", f"-DENTRY_CODE={ENTRY_CODE}", f"-DPAD_CODE={PAD_CODE}",
                  f"-DFINISH_BIT={FINISH_BIT}", f"-DFOLD_NOW=({FOLD_NOW})")
#: Threads per traceback block (one block per case): the most a block holds, because the largest
#: cases bound the launch and more threads give each of them shorter rows per thread; a launch of
#: a few cases (at most a quarter of the SM count) also takes a whole SM's shared memory per block.
TB_THREADS = 1024
#: Threads per traceback block in a launch of many cases (more than a quarter of the SM count):
#: several smaller blocks per SM, each row's barrier and max-scan spanning fewer warps (100,000
#: reads of 1-3 kb: bench/splice_reads.py).
TB_THREADS_MANY = 128
#: Blocks per SM the traceback kernel's registers are bounded for (__launch_bounds__), by block size.
TB_MIN_BLOCKS = {64: 16, 128: 8, 256: 4, 512: 2, 1024: 1}
#: The walk's window of the moves matrix in the traceback kernel (rows x bytes; TB_WIN_* there).
TB_WIN_ROWS = 128
TB_WIN_BYTES = 64
#: Options of the traceback kernel (and of its host build in the tests).
TRACEBACK_OPTIONS = (f"-DFINISH_BIT={FINISH_BIT}", f"-DOP_MATCH={OP_MATCH}", f"-DOP_BASE_GAP={OP_BASE_GAP}",
                     f"-DOP_TARGET_GAP={OP_TARGET_GAP}", f"-DTB_WIN_ROWS={TB_WIN_ROWS}",
                     f"-DTB_WIN_BYTES={TB_WIN_BYTES}")

DEFAULT_COLS = 8
FEW_CASES_COLS = 4
MAX_WARPS = 16
#: One-warp blocks (one per chunk) that a few cases may put on each SM (:func:`spread_layout`).
ONE_WARP_BLOCKS_PER_SM = 8


#: Exon-stream rows of one case the kernel indexes in int (row tags ``row + 1`` and tile steps
#: ``tiles + 31`` must stay below 2^31).
MAX_STREAM_ROWS = 2**31 - 64


def int32_for_kernel(values, what: str, limit: int = 2**31 - 1) -> np.ndarray:
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
        plans = build_plans(batch.base, batch.base_off, batch.starts, batch.ends, batch.exon_off, slots)
        width = batch.target_len + 1
        rows = plans.stream_rows
        self.chunks = chunk_counts(batch.target_len, cols)
        self.stream = plans.stream
        self.stream_off = plans.stream_off
        self.stream_rows = int32_for_kernel(rows, "exon-stream rows of a case (exon lengths plus one row per exon)",
                                  MAX_STREAM_ROWS)
        self.seg_row = plans.seg_row.astype(np.int32)  # < stream rows of the case
        self.fin = plans.fin
        self.fold_ptr = plans.fold_ptr
        self.fold = plans.fold if plans.fold.shape[0] else np.zeros((1, 2), np.int32)  # keeps the device array non-empty
        self.exon_off = batch.exon_off
        self.n_exons = int32_for_kernel(batch.n_exons, "candidate exons of a case")
        self.starts = batch.starts
        self.ends = batch.ends
        self.target_off = batch.target_off
        self.out_off = offsets(batch.n_exons * width)
        self.bound_off = offsets(self.chunks * rows)
        self.target = batch.target
        self.target_len = int32_for_kernel(batch.target_len, "target lengths", 2**31 - 1024)
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
        return len(self.batch)

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


def sm_occupancy(kernel: dict, device: dict, threads: int, shared: int) -> int:
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
