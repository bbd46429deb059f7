"""The CUDA alignment engine's pipeline on one device (kernels in ``gamut/cuda/kernels/scan_dp.cu``):
pass 1, checks and repairs of segment starts, sorting and diagonal suppression of candidates,
tracebacks, and the collection of results (see :mod:`gamut.scanning.engines.gpu`).

A backend runs the kernels: :class:`CupyBackend` on a CUDA device, or any object with the same
methods (:class:`~gamut.scanning.engines.gpu.GpuEngine` takes them as ``backends``).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
from numba import njit

from gamut.errors import DeviceError
from gamut.scanning.alignments import DIAGONAL_WINDOW, ChunkAlignments
from gamut.scanning.engines.gpu_plan import (
    PACKED_LIMIT,
    PACKED_ROWS,
    GpuTuning,
    counting_order,
    dense_slots,
    gap_scalars,
    gather_sequences,
    task_tables,
)
from gamut.scanning.params import ScanParams
from gamut.scanning.sequences import SequenceSet

KERNEL_FILE = "scan_dp.cu"
CAND_FIELDS = 4  # (task, i, j, score)
#: Candidates one launch may hold (the kernels take the buffer's capacity as an int).
MAX_CANDIDATES = 2**31 - 1
#: Profile score of the unused top rows of a bucket (keeps their A at 0; see scan_dp.cu).
PAD_SCORE = -(1 << 28)
#: Kernels instantiated per row bucket (``name<rows>``).
TEMPLATE_KERNELS = ("scan_pass1", "scan_pass1_grid", "scan_pass1_grid2", "scan_repair", "scan_trace")


@njit(cache=True, nogil=True)
def suppress_sorted(pair, rows, cols, query_rows, max_ref):
    """Diagonal suppression (miranda-model §6) over candidates sorted by (pair, score desc, j, i).

    Returns a boolean mask of survivors; same rule as :func:`gamut.scanning.engines.common.order_and_suppress`.
    ``query_rows`` and ``max_ref`` bound every candidate's i and j (they only size the diagonal table).
    """
    n = pair.shape[0]
    keep = np.zeros(n, np.bool_)
    blocked = np.zeros(max_ref + query_rows + 2 * DIAGONAL_WINDOW + 2, np.uint8)
    offset = query_rows + DIAGONAL_WINDOW
    start = 0
    while start < n:
        p = pair[start]
        end = start
        while end < n and pair[end] == p:
            end += 1
        for k in range(start, end):
            d = cols[k] - rows[k] + offset
            if blocked[d]:
                continue
            keep[k] = True
            for x in range(d - DIAGONAL_WINDOW, d + DIAGONAL_WINDOW + 1):
                blocked[x] = 1
        for k in range(start, end):
            if keep[k]:
                d = cols[k] - rows[k] + offset
                for x in range(d - DIAGONAL_WINDOW, d + DIAGONAL_WINDOW + 1):
                    blocked[x] = 0
        start = end
    return keep


@njit(cache=True, nogil=True)
def gather_ops(ops, counts):
    """Concatenate each survivor's ops (stored end first, ``counts[x]`` of row x) in alignment order."""
    n = counts.shape[0]
    offsets = np.zeros(n + 1, np.int64)
    for x in range(n):
        offsets[x + 1] = offsets[x] + counts[x]
    out = np.empty(offsets[n], np.uint8)
    for x in range(n):
        c = counts[x]
        base = offsets[x]
        for y in range(c):
            out[base + y] = ops[x, c - 1 - y]
    return out, offsets




class Collector:
    """The results of one :meth:`~gamut.scanning.engines.gpu.GpuEngine.align` call as device
    batches finish them.

    Device threads fill disjoint pairs; :meth:`parts` gives every batch as the
    :class:`ChunkAlignments` of its pairs, for :meth:`ChunkAlignments.concat`. Pairs whose
    traceback left its window are ``failed``: the caller redoes them on the CPU.
    """

    def __init__(self) -> None:
        self._batches: list[tuple] = []
        self._failed: list[np.ndarray] = []
        self._lock = threading.Lock()

    def add_batch(self, arrays: tuple, pairs: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """Pairs ``pairs`` take rows ``lo:hi`` of ``arrays`` (score, i_end, j_end, i_start, j_start, op offsets, ops)."""
        score, i_end, j_end, i_start, j_start, offsets, ops = arrays
        part = ChunkAlignments(lo, hi, score, i_end, j_end, i_start, j_start, offsets[:-1], offsets[1:], ops)
        with self._lock:
            self._batches.append((part, pairs))

    def add_failed(self, pairs: np.ndarray) -> None:
        with self._lock:
            self._failed.append(np.asarray(pairs, np.int64))

    def failed(self) -> np.ndarray:
        """The pairs (indices in the call) to redo on the CPU."""
        return np.concatenate(self._failed) if self._failed else np.zeros(0, np.int64)

    def parts(self) -> tuple[list[ChunkAlignments], list[np.ndarray]]:
        """The batches' results and, for each, the indices of its pairs in the call."""
        return [b[0] for b in self._batches], [b[1] for b in self._batches]


class CupyBackend:
    """Runs the kernels on CUDA device ``device_id`` through CuPy."""

    def __init__(self, device_id: int) -> None:
        import cupy

        self.cp = cupy
        self.xp = cupy
        self.device_id = device_id
        self.peak_bytes = 0
        self._streams: list = []
        self._lock = threading.Lock()

    def device(self):
        return self.cp.cuda.Device(self.device_id)

    @cached_property
    def packed_lanes(self) -> bool:
        """Whether the device runs DPX's packed 16-bit instructions natively (compute capability 9.0+;
        older devices emulate them, slower than the int32 pass 1)."""
        return int(self.cp.cuda.Device(self.device_id).compute_capability) >= 90

    def stream(self, index: int):
        """Non-blocking stream ``index`` of this backend, kept for reuse: CuPy's memory pool keeps
        freed blocks per stream, so fresh streams per call would strand memory."""
        with self._lock:
            while len(self._streams) <= index:
                with self.device():
                    self._streams.append(self.cp.cuda.Stream(non_blocking=True))
            return self._streams[index]

    def asarray(self, a: np.ndarray):
        return self.cp.asarray(a)

    def to_host(self, a) -> np.ndarray:
        return self.cp.asnumpy(a)

    def free_bytes(self) -> int:
        return int(self.cp.cuda.runtime.memGetInfo()[0])

    def synchronize(self) -> None:
        """Wait for the current stream's work (a copy from pageable memory may still be in flight
        when ``asarray`` returns)."""
        self.cp.cuda.get_current_stream().synchronize()

    def note_memory(self) -> None:
        self.peak_bytes = max(self.peak_bytes, int(self.cp.get_default_memory_pool().total_bytes()))

    def launch(self, name: str, rows: int, n: int, args: list, block: int, plain: bool = False) -> None:
        """Launch kernel ``name<rows>`` (or the extern "C" kernel ``name`` when ``plain``) on n threads."""
        from gamut.cuda import load_module

        kernels = tuple(f"{k}<{rows}>" for k in TEMPLATE_KERNELS if k != "scan_pass1_grid2" or rows in PACKED_ROWS)
        module = load_module(KERNEL_FILE, name_expressions=kernels, device_id=self.device_id)
        fn = module.get_function(name if plain else f"{name}<{rows}>")
        if n > 0:
            fn(((n + block - 1) // block,), (block,), tuple(args))
        self.note_memory()


@dataclass(frozen=True)
class TaskPairs:
    """The batch pair of task t: ``(t // n_rt) * n_r + map[t % n_rt]`` (``scan_task_pair`` in
    scan_dp.cu). A grid batch: ``n_rt`` reference segments per query, ``map`` their references;
    a listed batch: ``n_rt`` its task count, ``n_r`` 0, ``map`` each task's pair."""

    n_rt: int
    n_r: int
    map: Any  # backend int32 array

    def args(self) -> list:
        return [np.int64(self.n_rt), np.int64(self.n_r), self.map]

    def on_host(self, task: np.ndarray, backend) -> np.ndarray:
        q = task.astype(np.int64) // self.n_rt
        return q * self.n_r + backend.to_host(self.map)[task - q * self.n_rt]


@dataclass
class KernelArgs:
    """Arrays and scalars every kernel takes (SCAN_ARGS_PARAMS in scan_dp.cu)."""

    refs: Any
    ref_off: Any
    ref_len: Any
    pair_q: Any
    pair_r: Any
    pair_cp: Any
    prof: Any
    q_pad: Any
    seglen: int
    cpint: int
    warm: int
    gaps: tuple[int, int, int, int]
    threshold: int

    def args(self) -> list:
        i32 = np.int32
        return [
            self.refs, self.ref_off, self.ref_len, self.pair_q, self.pair_r, self.pair_cp, self.prof, self.q_pad,
            i32(self.seglen), i32(self.cpint), i32(self.warm), *(i32(g) for g in self.gaps), i32(self.threshold),
        ]


class DeviceRun:
    """The stages every batch goes through on one backend (pass 1 and its checks are the callers'):
    the repair of segment starts, the sort and diagonal suppression of candidates, the tracebacks
    and the results; and :meth:`run`, the batches of an explicit list of pairs of one row bucket
    (:mod:`.gpu_grid` runs chunks of consecutive pairs without listing them)."""

    def __init__(self, backend, tuning: GpuTuning, params: ScanParams) -> None:
        self.be = backend
        self.xp = backend.xp
        self.t = tuning
        self.params = params
        self.gaps = gap_scalars(params)
        # the kernels' int32 (their scores stay within it: check_int32_scores; a cutoff <= 0 takes every cell)
        self.threshold = max(-(2**31 - 1), min(params.score_cutoff, 2**31 - 1))
        #: Counters: tasks, repaired tasks, candidates, survivors, pairs whose traceback left its window;
        #: seconds per stage (host setup, task tables, pass 1, checks and repairs, sort and
        #: suppression, tracebacks, results).
        self.stats = {"tasks": 0, "repaired_tasks": 0, "candidates": 0, "survivors": 0, "trace_fallback_pairs": 0,
                      "setup_s": 0.0, "tasks_s": 0.0, "pass1_s": 0.0, "verify_repair_s": 0.0, "suppress_s": 0.0,
                      "trace_s": 0.0, "assemble_s": 0.0}

    # -- shared stages ---------------------------------------------------------------------
    def _zeros(self, shape, dtype):
        return self.xp.zeros(shape, dtype=dtype)

    def _lap(self, key: str, since: float) -> float:
        now = time.perf_counter()
        self.stats[key] += now - since
        return now

    def _collect(self, kernel: str, rows: int, n: int, args_before: list, args_after: list, cap: int):
        """Launch a candidate-emitting kernel, growing the buffer and re-running on overflow.

        Returns the candidates (n, 4: task, i, j, score) on the device; more than
        :data:`MAX_CANDIDATES` in one launch is a :class:`DeviceError` (never a partial result).
        """
        cap = min(cap, MAX_CANDIDATES)
        while True:
            count = self._zeros(1, np.uint64)  # the kernels' 64-bit ScanCount
            cands = self.xp.empty((max(cap, 1), CAND_FIELDS), dtype=np.int32)
            self.be.launch(kernel, rows, n, [*args_before, count, np.int32(cap), cands, *args_after], self.t.block)
            got = int(self.be.to_host(count)[0])
            if got <= cap:
                return cands[:got]
            if got > MAX_CANDIDATES:
                raise DeviceError(
                    f"{got:,} alignment candidates in one GPU launch; the GPU engine holds at most "
                    f"{MAX_CANDIDATES:,} (raise the score threshold -sc, or use --device cpu)"
                )
            cap = min(int(got * 1.25) + 1024, MAX_CANDIDATES)

    def _repair(self, rows: int, kargs: KernelArgs, cands, n_tasks: int, rp_seg: np.ndarray, pair_task0: np.ndarray,
                pair_tasks: np.ndarray, d_cp, d_entry):
        """Recompute, from exact checkpoints, the segments of the pairs of ``kargs`` (one per
        repaired pair) from ``rp_seg`` on wherever a speculative start differs; the candidates of
        recomputed tasks replace theirs in ``cands``."""
        be, xp = self.be, self.xp
        m = rp_seg.shape[0]
        recomputed = self._zeros(max(n_tasks, 1), np.uint8)
        rcands = self._collect(
            "scan_repair", rows, m,
            [np.int32(m), be.asarray(np.arange(m, dtype=np.int32)), be.asarray(rp_seg.astype(np.int32)),
             be.asarray(pair_task0[:-1].astype(np.int64)), be.asarray(pair_tasks.astype(np.int32)), *kargs.args(),
             d_cp, d_entry, recomputed],
            [], max(1024, m * 16),
        )
        redone = recomputed[:n_tasks].astype(bool)
        self.stats["repaired_tasks"] += int(redone.sum())
        return xp.concatenate([cands[~redone[cands[:, 0]]], rcands])

    def _survivors(self, task_map: TaskPairs, cands, n_pairs: int, rows: int, max_ref: int):
        """The candidates of a batch of ``n_pairs`` pairs (the pair of each candidate's task by
        ``task_map``) ordered by (pair, score desc, j asc, i asc) and diagonal-suppressed: device
        int32 (pair, i, j) and host int32 (pair, i, j, score) of the survivors.

        On the device (:meth:`_device_survivors`) unless ``device_suppress`` is off: then on the host.
        """
        n = int(cands.shape[0])
        self.stats["candidates"] += n
        if n == 0:
            z = self.xp.zeros(0, np.int32)
            return z, z, z, np.zeros((4, 0), np.int32)
        if self.t.device_suppress:
            device, host = self._device_survivors(task_map, cands, n_pairs, rows, max_ref)
        else:
            c = self.be.to_host(cands)
            p = task_map.on_host(c[:, 0], self.be)
            order = np.lexsort((c[:, 1], c[:, 2], -c[:, 3].astype(np.int64), p))
            p, i, j, score = p[order], c[order, 1], c[order, 2], c[order, 3]
            keep = suppress_sorted(p, i, j, rows, max_ref)
            host = np.stack([a[keep].astype(np.int32) for a in (p, i, j, score)])
            device = self.be.asarray(host)
        self.stats["survivors"] += int(host.shape[1])
        return device[0], device[1], device[2], host

    def _device_survivors(self, task_map: TaskPairs, cands, n_pairs: int, rows: int, max_ref: int):
        """:meth:`_survivors` on the device: candidates grouped by pair (count, prefix sum, scatter),
        each pair's sorted and suppressed by one thread, survivors written in order; two transfers
        to the host. Pairs of more than ``suppress_limit`` candidates (rare) are suppressed on the
        host. Returns the survivors (4, n: pair, i, j, score) on the device and on the host."""
        xp, be, t = self.xp, self.be, self.t
        n = int(cands.shape[0])
        block = t.block
        count = xp.zeros(n_pairs, np.int32)
        mapping = task_map.args()
        be.launch("scan_group_count", rows, n, [np.int64(n), cands, *mapping, count], block, plain=True)
        start = xp.zeros(n_pairs + 1, np.int64)
        xp.cumsum(count, dtype=np.int64, out=start[1:])
        gi, gj, gs = (xp.empty(n, np.int32) for _ in range(3))
        be.launch("scan_group_scatter", rows, n, [np.int64(n), cands, *mapping, start, count, gi, gj, gs], block,
                  plain=True)
        keep = xp.empty(n, np.uint8)
        diag = xp.empty(n, np.int32)
        n_keep = xp.empty(n_pairs, np.int64)
        n_big = xp.zeros(1, np.uint32)
        be.launch("scan_sort_suppress", rows, n_pairs,
                  [np.int64(n_pairs), start, gi, gj, gs, np.int32(DIAGONAL_WINDOW), np.int32(t.suppress_limit), keep,
                   diag, n_keep, n_big], block, plain=True)
        sv_end = xp.cumsum(n_keep)
        total, big = (int(v) for v in be.to_host(xp.concatenate([sv_end[-1:], n_big.astype(np.int64)])))
        if big:  # pairs with very many candidates: sorted on the device, suppressed here
            starts = be.to_host(start)
            for p in np.flatnonzero(np.diff(starts) > t.suppress_limit).tolist():
                a, b = int(starts[p]), int(starts[p + 1])
                mask = suppress_sorted(np.zeros(b - a, np.int64), be.to_host(gi[a:b]), be.to_host(gj[a:b]), rows, max_ref)
                keep[a:b] = be.asarray(mask.astype(np.uint8))
                n_keep[p] = int(mask.sum())
            sv_end = xp.cumsum(n_keep)
            total = int(be.to_host(sv_end[-1:])[0])
        out = xp.empty((4, total), np.int32)
        be.launch("scan_compact", rows, n_pairs,
                  [np.int64(n_pairs), start, sv_end, n_keep, gi, gj, gs, keep, np.int64(total), out], block, plain=True)
        return out, be.to_host(out)

    def _trace(self, rows, kargs: KernelArgs, d_cp, sv_pair, sv_i, sv_j):
        """Pass 2 for survivors (``sv_pair`` indexes the pair arrays of ``kargs``): host arrays
        i0, j0, op counts (-1: left its window), the ops end to end and their offsets."""
        xp, be, t = self.xp, self.be, self.t
        n = sv_pair.shape[0]
        K = rows + t.trace_margin
        window = K + t.cpint
        stride = window * rows
        opcap = rows + window
        i0 = np.empty(n, np.int32)
        j0 = np.empty(n, np.int32)
        nops = np.empty(n, np.int32)
        pieces = [np.zeros(0, np.uint8)]
        per_launch = max(1, t.scratch_bytes // stride)
        for a in range(0, n, per_launch):
            b = min(n, a + per_launch)
            m = b - a
            d_out = xp.empty((3, m), dtype=np.int32)  # i0, j0, op counts: one transfer back
            d_ops = xp.empty(m * opcap, dtype=np.uint8)
            scratch = xp.empty(m * stride // 4, dtype=np.uint32)
            be.launch(
                "scan_trace", rows, m,
                [np.int32(m), *(xp.ascontiguousarray(v[a:b]) for v in (sv_pair, sv_i, sv_j)),
                 *kargs.args(), d_cp, np.int32(K), scratch, np.int64(m), d_out[0], d_out[1], d_out[2], d_ops,
                 np.int64(opcap)],
                t.block,
            )
            i0[a:b], j0[a:b], nops[a:b] = be.to_host(d_out)
            widest = int(nops[a:b].max())
            if widest > 0:
                ops = be.to_host(xp.ascontiguousarray(d_ops.reshape(m, opcap)[:, :widest]))
                pieces.append(gather_ops(ops, np.maximum(nops[a:b], 0).astype(np.int64))[0])
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(np.maximum(nops, 0), out=offsets[1:])
        return i0, j0, nops, np.concatenate(pieces), offsets

    @staticmethod
    def _assemble(sv_call_pair: np.ndarray, sv_s, sv_i, sv_j, traced, results: Collector) -> int:
        """Record survivors of the call's pairs ``sv_call_pair`` (grouped by pair); a pair whose
        traceback left its window is recorded as failed (redone on the CPU). Returns how many failed."""
        i0, j0, nops, flat, offs = traced
        n = sv_call_pair.shape[0]
        if n == 0:
            return 0
        starts = np.flatnonzero(np.r_[True, sv_call_pair[1:] != sv_call_pair[:-1]])
        ends = np.append(starts[1:], n)
        bad = np.zeros(n, bool)
        bad[nops < 0] = True
        run_bad = np.logical_or.reduceat(bad, starts)
        results.add_batch((sv_s, sv_i, sv_j, i0, j0, offs, flat), sv_call_pair[starts[~run_bad]],
                          starts[~run_bad], ends[~run_bad])
        if run_bad.any():
            results.add_failed(sv_call_pair[starts[run_bad]])
        return int(run_bad.sum())

    def _finish(self, rows: int, trace_args, d_cp, task_map: TaskPairs, cands, n_pairs: int, max_ref: int,
                clock: float, call_pair, results: Collector) -> None:
        """Sort, suppress, trace and record the candidates of a batch of ``n_pairs`` pairs:
        ``task_map`` gives each candidate's pair in the batch (0..n_pairs-1) from its task;
        ``trace_args(survivor pairs)`` gives the :class:`KernelArgs` and the index into its pair
        arrays of each survivor; ``call_pair(local)`` maps batch pairs (host) to the call's pairs."""
        d_pair, d_i, d_j, host = self._survivors(task_map, cands, n_pairs, rows, max_ref)
        clock = self._lap("suppress_s", clock)
        sv_pair, sv_i, sv_j, sv_s = host
        kargs, sv_index = trace_args(d_pair)
        traced = self._trace(rows, kargs, d_cp, sv_index, d_i, d_j)
        clock = self._lap("trace_s", clock)
        self.stats["trace_fallback_pairs"] += self._assemble(call_pair(sv_pair.astype(np.int64)), sv_s, sv_i, sv_j,
                                                             traced, results)
        self._lap("assemble_s", clock)

    # -- explicit pairs ----------------------------------------------------------------------
    def run(self, rows: int, qtabs: dict, q_of_pair: np.ndarray, references: SequenceSet, r_of_pair: np.ndarray,
            seglen: int, pair_ids: np.ndarray, results: Collector) -> None:
        """Align pairs (q_of_pair[k], r_of_pair[k]) into ``results[pair_ids[k]]``.

        Pairs whose traceback left its window are recorded as failed (redone on the CPU by the caller).
        """
        be, t = self.be, self.t
        began = time.perf_counter()
        n_pairs = q_of_pair.shape[0]
        uq, q_slot = dense_slots(q_of_pair)
        prof, pad = bucket_profiles(qtabs, uq, rows)
        qlen_slot = rows - pad.astype(np.int64)
        ur, r_slot = dense_slots(r_of_pair)
        d_refs, d_ref_off, d_ref_len, rlen_slot = upload_references(be, references, ur)
        d_prof = be.asarray(prof)
        d_pad = be.asarray(pad)
        R = rlen_slot[r_slot]
        L = qlen_slot[q_slot]
        # Longest references first (like the paper), then batches: the longest runs of pairs (in
        # `order`) within the task and state budgets.
        state_bytes = 2 * rows * 4
        budget = min(t.max_state_bytes, be.free_bytes() // 3)
        if n_pairs and R.min() == R.max():  # one reference length (e.g. CLIP fragments): by query, O(n)
            order = counting_order(q_slot, int(uq.shape[0]))
            nseg0, ncp0 = -(-int(R[0]) // seglen), int(R[0]) // t.cpint  # the same for every pair
            per_batch = max(1, min(t.max_tasks // nseg0, (budget // state_bytes) // (nseg0 + ncp0)))
            bounds = list(range(0, n_pairs, per_batch)) + [n_pairs]
        else:
            order = np.argsort((R.max() - R) * max(1, uq.shape[0]) + q_slot, kind="stable") if n_pairs else R
            nseg = (R + seglen - 1) // seglen
            cum_tasks = np.cumsum(nseg[order])
            cum_states = np.cumsum(nseg[order] + R[order] // t.cpint)
            bounds = [0]
            while bounds[-1] < n_pairs:
                start = bounds[-1]
                base_t = cum_tasks[start - 1] if start else 0
                base_s = cum_states[start - 1] if start else 0
                stop = min(int(np.searchsorted(cum_tasks, base_t + t.max_tasks, side="right")),
                           int(np.searchsorted(cum_states, base_s + budget // state_bytes, side="right")))
                bounds.append(max(stop, start + 1))
        self._lap("setup_s", began)
        for start, stop in zip(bounds[:-1], bounds[1:]):
            self._run_batch(rows, order[start:stop], q_slot, r_slot, L, R, seglen, d_refs, d_ref_off, d_ref_len,
                            d_prof, d_pad, pair_ids, results)

    def _run_batch(self, rows, batch, q_slot, r_slot, L, R, seglen, d_refs, d_ref_off, d_ref_len, d_prof,
                   d_pad, pair_ids, results) -> None:
        xp, be, t = self.xp, self.be, self.t
        began = time.perf_counter()
        nb = batch.shape[0]
        b_R = R[batch]
        # Tasks: (local pair, segment). Full segments first, grouped by query for cache locality,
        # then the pairs' partial last segments, longest first (one compiled pass, O(pairs)).
        task_pair, task_seg, pair_tasks, pair_task0, pair_cp = task_tables(
            np.ascontiguousarray(q_slot[batch]), np.ascontiguousarray(b_R), int(q_slot.max()) + 1 if nb else 1,
            seglen, t.cpint)
        n_tasks = int(pair_task0[-1])
        total_cp = int(pair_cp[-1])
        kargs = KernelArgs(
            d_refs, d_ref_off, d_ref_len, be.asarray(q_slot[batch].astype(np.int32)),
            be.asarray(r_slot[batch].astype(np.int32)), be.asarray(pair_cp[:-1].copy()), d_prof, d_pad,
            seglen, t.cpint, t.warm, self.gaps, self.threshold,
        )
        d_task_pair = be.asarray(task_pair)
        d_task_seg = be.asarray(task_seg)
        d_cp = xp.empty(max(total_cp, 1) * 2 * rows, dtype=np.int32)
        d_entry = xp.empty(max(n_tasks, 1) * 2 * rows, dtype=np.int32)
        self.stats["tasks"] += n_tasks
        clock = self._lap("tasks_s", began)
        cands = self._collect(
            "scan_pass1", rows, n_tasks, [np.int32(n_tasks), d_task_pair, d_task_seg, *kargs.args(), d_cp, d_entry],
            [], max(4096, n_tasks),
        )
        clock = self._lap("pass1_s", clock)
        # Check every speculative segment start against the exact checkpoint before it.
        later = xp.flatnonzero(d_task_seg > 0)
        if later.size:
            cp_idx = kargs.pair_cp[d_task_pair[later]] + (d_task_seg[later].astype(np.int64) * seglen) // t.cpint - 1
            ent = d_entry.reshape(-1, 2 * rows)[later]
            ref_state = d_cp.reshape(-1, 2 * rows)[cp_idx]
            bad = be.to_host(later[~xp.all(ent == ref_state, axis=1)])
        else:
            bad = np.zeros(0, np.int64)
        if bad.size:
            first = np.full(nb, np.iinfo(np.int32).max, np.int32)
            np.minimum.at(first, task_pair[bad], task_seg[bad])
            rp_pair = np.nonzero(first < np.iinfo(np.int32).max)[0]
            d_rp = be.asarray(rp_pair)
            rp_kargs = replace(kargs, pair_q=kargs.pair_q[d_rp], pair_r=kargs.pair_r[d_rp], pair_cp=kargs.pair_cp[d_rp])
            n_seg = pair_task0[rp_pair + 1] - pair_task0[rp_pair]
            rp_task0 = np.zeros(rp_pair.shape[0] + 1, np.int64)
            np.cumsum(n_seg, out=rp_task0[1:])
            rp_tasks = pair_tasks[np.repeat(pair_task0[rp_pair] - rp_task0[:-1], n_seg) + np.arange(rp_task0[-1])]
            cands = self._repair(rows, rp_kargs, cands, n_tasks, first[rp_pair], rp_task0, rp_tasks, d_cp, d_entry)
        clock = self._lap("verify_repair_s", clock)
        batch_ids = pair_ids[batch]
        self._finish(rows, lambda d_pair: (kargs, d_pair), d_cp, TaskPairs(max(n_tasks, 1), 0, d_task_pair), cands, nb,
                     int(b_R.max()) if nb else 0, clock, lambda local: batch_ids[local], results)


def bucket_profiles(qtabs: dict, queries: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Profiles of ``queries`` bottom-aligned in ``rows`` rows ((n, 5, rows) int32, unused rows
    :data:`PAD_SCORE`) and each query's padding ``rows - length`` (int32)."""
    prof = np.full((queries.shape[0], 5, rows), PAD_SCORE, np.int32)
    pad = np.zeros(queries.shape[0], np.int32)
    for s, q in enumerate(queries.tolist()):
        profile = qtabs[q].profile
        L = profile.shape[1] - 1
        pad[s] = rows - L
        prof[s, :, rows - L:] = profile[:, 1:]
    return prof, pad


def pair_profiles(prof: np.ndarray) -> np.ndarray:
    """The profiles ``prof`` of :func:`bucket_profiles` two by two, as ``scan_pass1_grid2`` reads
    them: ((n + 1) // 2, 5, rows) uint32 whose low 16 bits are query 2m's score and high 16 bits
    query 2m + 1's (query n - 1 twice when n is odd); the padding score becomes -PACKED_LIMIT."""
    p = np.where(prof == PAD_SCORE, -PACKED_LIMIT, prof).astype(np.int64)
    if p.shape[0] % 2:
        p = np.concatenate([p, p[-1:]])
    return ((p[0::2] & 0xFFFF) | ((p[1::2] & 0xFFFF) << 16)).astype(np.uint32)


def upload_references(backend, references: SequenceSet, which: np.ndarray):
    """References ``which`` end to end on the backend: (letters, offsets, lengths) device arrays and the host lengths."""
    flat, lengths = gather_sequences(references, which)
    offsets = np.zeros(which.shape[0], np.int64)
    if which.shape[0] > 1:
        offsets[1:] = np.cumsum(lengths)[:-1]
    d_refs = backend.asarray(np.ascontiguousarray(flat, dtype=np.int8) if flat.size else np.zeros(1, np.int8))
    # lengths <= MAX_GPU_REFERENCE (checked by the engine): int32
    return d_refs, backend.asarray(offsets), backend.asarray(lengths.astype(np.int32)), lengths
