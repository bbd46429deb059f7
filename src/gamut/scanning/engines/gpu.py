"""The CUDA alignment engine: miRanda-exact DP, candidates and tracebacks on one or more GPUs.

Pipeline for a chunk of pairs (kernels in ``gamut/cuda/kernels/scan_dp.cu``):

1. Pass 1, one GPU thread per (pair, reference segment): a score-only DP started ``warm``
   columns before the segment from an all-zero column. It emits candidates (best >= threshold,
   not ending in state B), stores the exact DP state every ``cpint`` columns (checkpoints) and its
   speculative state at the segment's start.
2. Every speculative start state is compared with the previous segment's checkpoint. Segments
   that differ are recomputed from the exact state (repair kernel), so results never depend on
   the warm-up being long enough.
3. Candidates are sorted (score desc, j asc, i asc) and diagonal-suppressed on the CPU (Numba).
4. Pass 2, one thread per survivor: full DP with trace bytes over a window that starts at a
   checkpoint at least ``K`` columns before the candidate, then the traceback. A traceback that
   needs columns before the window (very long gaps) is redone by the CPU engine.

Queries longer than :data:`MAX_GPU_QUERY` letters are aligned by the CPU engine; references longer
than :data:`MAX_GPU_REFERENCE` are an error. CuPy is imported only when a :class:`GpuEngine` is created.
"""
from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numba import njit

from gamut.errors import DeviceError, InputError, UsageError
from gamut.io.textcols import gather
from gamut.scanning.alignments import DIAGONAL_WINDOW, ChunkAlignments
from gamut.scanning.hits import SequenceSet
from gamut.scanning.params import ScanParams, c_trunc, gap_rise, query_tables, row_scheme, score_bound

#: Register-array heights the kernels are instantiated for (a query uses the smallest that fits).
ROW_BUCKETS = (8, 16, 24, 32, 40, 48, 56, 64)
#: Longer queries go to the CPU engine.
MAX_GPU_QUERY = ROW_BUCKETS[-1]
KERNEL_FILE = "scan_dp.cu"
CAND_FIELDS = 4  # (task, i, j, score)
#: Candidates one launch may hold (the kernels take the buffer's capacity as an int).
MAX_CANDIDATES = 2**31 - 1
#: Longest reference the kernels index with int columns (segment ends may pass it by a segment).
MAX_GPU_REFERENCE = 2**31 - 2**24
#: Cells and pairs per ``align`` call the engine asks the runner for, per device.
CHUNK_CELLS_PER_DEVICE = 16_000_000_000
CHUNK_PAIRS_PER_DEVICE = 1_000_000
#: Profile score of the unused top rows of a bucket (keeps their A at 0; see scan_dp.cu).
PAD_SCORE = -(1 << 28)


@dataclass(frozen=True)
class GpuTuning:
    """Work-splitting knobs (all results are exact for any values; they only change speed).

    ``cpint``: columns between checkpoints; ``warm``: warm-up columns before a segment;
    ``min_seg``/``max_seg``: segment length bounds (multiples of ``cpint``); ``target_tasks``:
    threads per device to aim for; ``trace_margin``: extra columns (beyond the query length) a
    traceback window covers; ``max_tasks``/``max_state_bytes``: batch limits per launch;
    ``scratch_bytes``: trace-window memory per pass-2 launch; ``device_suppress``: diagonal
    suppression on the device (pairs of more than ``suppress_limit`` candidates on the host);
    ``bucket_threads``: row buckets aligned at once on a device (each on its own stream).
    """

    cpint: int = 128
    warm: int = 128
    min_seg: int = 512
    max_seg: int = 8192
    target_tasks: int = 400_000
    trace_margin: int = 64
    max_tasks: int = 1 << 21
    max_state_bytes: int = 3 << 30
    scratch_bytes: int = 512 << 20
    block: int = 128
    device_suppress: bool = True
    suppress_limit: int = 4096
    bucket_threads: int = 2


def bucket_for(length: int) -> int:
    """The smallest row bucket holding ``length`` rows (0 when the query is too long)."""
    for b in ROW_BUCKETS:
        if length <= b:
            return b
    return 0


def check_int32_scores(query_length: int, ref_length: int, params: ScanParams) -> None:
    """Refuse parameters whose scores could leave the kernels' int32 cells (the CPU engine widens
    its lanes instead): a bound from the best row score, the query length and the gap rise."""
    z = float(params.scale)
    best_row = max(5, c_trunc(5 * z), c_trunc(-3 * z), c_trunc(-z), c_trunc(z))
    rise = gap_rise(params)
    high = score_bound(query_length * best_row, rise, ref_length) + max(best_row, rise)
    low = 2 * min(params.gap_open, params.gap_extend, c_trunc(z * params.gap_open), c_trunc(z * params.gap_extend),
                  -3 * max(1, c_trunc(abs(z))) - 1)
    limit = 2**31 - 3
    if high >= limit or low <= -limit:
        raise UsageError(f"with these scoring parameters scores could reach {max(high, -low):,}, beyond the GPU "
                         f"engine's 32-bit cells (limit {limit:,}); use --device cpu, which widens them")


def small_unique(ids: np.ndarray, bound: int | None = None) -> np.ndarray:
    """``np.unique(ids)`` for small non-negative ids (all below ``bound``, default max + 1), in
    O(n + bound) (no sort)."""
    ids = np.asarray(ids)
    if ids.shape[0] == 0:
        return np.zeros(0, np.int64)
    present = np.zeros(int(ids.max()) + 1 if bound is None else bound, bool)
    present[ids] = True
    return np.flatnonzero(present)


def dense_slots(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)`` for small non-negative ids, in O(n) (no sort)."""
    ids = np.asarray(ids, np.int64)
    if ids.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    unique = small_unique(ids)
    lookup = np.empty(int(unique[-1]) + 1, np.int64)
    lookup[unique] = np.arange(unique.shape[0])
    return unique, lookup[ids]


def split_over_devices(index: np.ndarray, cells: np.ndarray, n_devices: int) -> list[np.ndarray]:
    """Pairs ``index`` (with ``cells`` each) split over devices: by cells, largest first, dealt
    out in a snake order (0, 1, .., n-1, n-1, .., 0, ...) so that every device gets the same mix
    of sizes; each share in ascending order."""
    if n_devices == 1:
        return [index]
    by_size = index[np.argsort(-cells, kind="stable")]
    pos = np.arange(by_size.shape[0]) % (2 * n_devices)
    device_of = np.where(pos < n_devices, pos, 2 * n_devices - 1 - pos)
    return [np.sort(by_size[device_of == d]) for d in range(n_devices)]


def gap_scalars(params: ScanParams) -> tuple[int, int, int, int]:
    """(open, extend) for normal rows and for seed rows, exactly as :func:`row_scheme` builds them."""
    scheme = row_scheme(20, params)  # rows 1..12 normal, 13..19 seed
    return (int(scheme.gap_open[1]), int(scheme.gap_extend[1]), int(scheme.gap_open[15]), int(scheme.gap_extend[15]))


@njit(cache=True, nogil=True)
def suppress_sorted(pair, rows, cols, qlen, rlen):
    """Diagonal suppression (miranda-model §6) over candidates sorted by (pair, score desc, j, i).

    Returns a boolean mask of survivors; same rule as :func:`gamut.scanning.engines.cpu.order_and_suppress`.
    """
    n = pair.shape[0]
    keep = np.zeros(n, np.bool_)
    size = 1
    for k in range(n):
        need = rlen[pair[k]] + qlen[pair[k]] + 2 * DIAGONAL_WINDOW + 2
        if need > size:
            size = need
    blocked = np.zeros(size, np.uint8)
    start = 0
    while start < n:
        p = pair[start]
        end = start
        while end < n and pair[end] == p:
            end += 1
        offset = qlen[p] + DIAGONAL_WINDOW
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


@njit(cache=True, nogil=True)
def counting_order(keys, n_keys):
    """Stable order of ``keys`` (small non-negative ints below ``n_keys``): a counting sort."""
    counts = np.zeros(n_keys + 1, np.int64)
    for k in keys:
        counts[k + 1] += 1
    for k in range(n_keys):
        counts[k + 1] += counts[k]
    order = np.empty(keys.shape[0], np.int64)
    for x in range(keys.shape[0]):
        order[counts[keys[x]]] = x
        counts[keys[x]] += 1
    return order


@njit(cache=True, nogil=True)
def task_tables(q_slot, R, n_slots, seglen, cpint):
    """Task list of a batch: (pair, segment) for every full segment, pairs grouped by query slot,
    then every partial last segment, longest first; plus each pair's first task and first
    checkpoint (prefix sums) and the task of each (pair, segment) (``pair_tasks``).

    Batches of one reference length below ``seglen`` whose pairs come in query order (CLIP
    fragments, short UTRs) have one task per pair, in pair order: built without the sorts.
    """
    nb = R.shape[0]
    single = nb > 0 and 0 < R[0] < seglen
    for p in range(1, nb):
        if not single:
            break
        single = R[p] == R[0] and q_slot[p] >= q_slot[p - 1]
    if single:
        ids = np.arange(nb).astype(np.int32)
        return (ids, np.zeros(nb, np.int32), ids.copy(), np.arange(nb + 1).astype(np.int64),
                np.arange(nb + 1).astype(np.int64) * (R[0] // cpint))
    return task_tables_sorted(q_slot, R, n_slots, seglen, cpint)


@njit(cache=True, nogil=True)
def task_tables_sorted(q_slot, R, n_slots, seglen, cpint):
    """:func:`task_tables` for any batch (counting sorts by query slot and by partial length)."""
    nb = R.shape[0]
    pair_task0 = np.zeros(nb + 1, np.int64)
    pair_cp = np.zeros(nb + 1, np.int64)
    for p in range(nb):
        pair_task0[p + 1] = pair_task0[p] + (R[p] + seglen - 1) // seglen
        pair_cp[p + 1] = pair_cp[p] + R[p] // cpint
    n_tasks = pair_task0[nb]
    by_query = counting_order(q_slot, n_slots)
    task_pair = np.empty(n_tasks, np.int32)
    task_seg = np.empty(n_tasks, np.int32)
    t = 0
    for x in range(nb):
        p = by_query[x]
        for s in range(R[p] // seglen):
            task_pair[t] = p
            task_seg[t] = s
            t += 1
    rem = np.empty(nb, np.int64)
    for x in range(nb):
        rem[x] = seglen - 1 - R[by_query[x]] % seglen  # longest partial first
    for x in counting_order(rem, seglen):
        p = by_query[x]
        if R[p] % seglen:
            task_pair[t] = p
            task_seg[t] = R[p] // seglen
            t += 1
    pair_tasks = np.empty(n_tasks, np.int32)
    for k in range(n_tasks):
        pair_tasks[pair_task0[task_pair[k]] + task_seg[k]] = k
    return task_pair, task_seg, pair_tasks, pair_task0, pair_cp


@njit(cache=True, nogil=True)
def survivor_rows(batch_of, lo, hi, base):
    """Each pair's survivor rows in the concatenated batches: ``base[batch] + lo`` .. ``+ hi``
    (0 .. 0 for pairs without a batch), in one pass."""
    n = batch_of.shape[0]
    start = np.zeros(n, np.int64)
    stop = np.zeros(n, np.int64)
    for k in range(n):
        b = batch_of[k]
        if b >= 0:
            start[k] = base[b] + lo[k]
            stop[k] = base[b] + hi[k]
    return start, stop


class _Collector:
    """The results of one :meth:`GpuEngine.align` call as device batches finish them.

    Pair k's survivors are rows ``lo[k]:hi[k]`` of batch ``batch_of[k]`` (-1: none); device
    threads fill disjoint pairs; ``assigned`` marks the pairs that have a result (the others are
    redone on the CPU). :meth:`chunk` turns it all into one :class:`ChunkAlignments`.
    """

    def __init__(self, n: int) -> None:
        self._batches: list[tuple] = []
        self._lock = threading.Lock()
        self._batch_of = np.full(n, -1, np.int64)
        self._lo = np.zeros(n, np.int64)
        self._hi = np.zeros(n, np.int64)
        self.assigned = np.zeros(n, bool)

    def add_batch(self, arrays: tuple, pairs: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """Pairs ``pairs`` take rows ``lo:hi`` of ``arrays`` (score, i_end, j_end, i_start, j_start, op offsets, ops)."""
        with self._lock:
            self._batches.append(arrays)
            index = len(self._batches) - 1
        self._batch_of[pairs] = index
        self._lo[pairs] = lo
        self._hi[pairs] = hi

    def survivor_count(self) -> int:
        return int((self._hi - self._lo).sum())

    def chunk(self) -> ChunkAlignments:
        """Every batch's rows concatenated; pairs point into them (no copy per pair)."""
        n = self._batch_of.shape[0]
        if not self._batches:
            return ChunkAlignments.empty(n)
        rows = np.array([int(bt[0].shape[0]) for bt in self._batches], np.int64)
        base = np.cumsum(rows) - rows
        sv_start, sv_stop = survivor_rows(self._batch_of, self._lo, self._hi, base)
        cols = [np.concatenate([bt[f] for bt in self._batches]).astype(np.int64, copy=False) for f in range(5)]
        n_ops = np.array([bt[6].shape[0] for bt in self._batches], np.int64)
        shift = np.repeat(np.cumsum(n_ops) - n_ops, rows)
        op_start = np.concatenate([bt[5][:-1] for bt in self._batches]).astype(np.int64) + shift
        op_end = np.concatenate([bt[5][1:] for bt in self._batches]).astype(np.int64) + shift
        ops = np.concatenate([bt[6] for bt in self._batches]).astype(np.uint8, copy=False)
        return ChunkAlignments(sv_start, sv_stop, *cols, op_start, op_end, ops)


def gather_sequences(seqs: SequenceSet, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The class codes of sequences ``which``, concatenated, and their lengths (no loop per sequence)."""
    lengths = (seqs.offsets[which + 1] - seqs.offsets[which]).astype(np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int8), lengths
    # One compiled copy per sequence, on the calling thread (an alignment thread: the cores are the
    # post-processing's). A per-letter index (np.arange + np.repeat) was 30-50 ms a chunk of 256
    # references of 20 kb on the H100 host.
    codes, _ = gather(seqs.codes.view(np.uint8), seqs.offsets[which], lengths)
    return codes.view(np.int8), lengths


# --------------------------------------------------------------------------------------------
# Backends: where the kernels run. CuPy on a GPU, or (tests) the same C++ compiled for the host.
# --------------------------------------------------------------------------------------------


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

    def note_memory(self) -> None:
        self.peak_bytes = max(self.peak_bytes, int(self.cp.get_default_memory_pool().total_bytes()))

    def launch(self, name: str, rows: int, n: int, args: list, block: int, plain: bool = False) -> None:
        """Launch kernel ``name<rows>`` (or the extern "C" kernel ``name`` when ``plain``) on n threads."""
        from gamut.cuda import load_module

        kernels = tuple(f"{k}<{rows}>" for k in ("scan_pass1", "scan_repair", "scan_trace"))
        module = load_module(KERNEL_FILE, name_expressions=kernels, device_id=self.device_id)
        fn = module.get_function(name if plain else f"{name}<{rows}>")
        if n > 0:
            fn(((n + block - 1) // block,), (block,), tuple(args))
        self.note_memory()


class HostBackend:
    """Runs the same kernel code compiled for the CPU (``scan_host_harness.cu``); for tests."""

    def __init__(self, library_path: str) -> None:
        import ctypes

        self.ctypes = ctypes
        self.lib = ctypes.CDLL(library_path)
        self.xp = np
        self.device_id = -1
        self.peak_bytes = 0

    def device(self):
        from contextlib import nullcontext

        return nullcontext()

    def stream(self, index: int):
        from contextlib import nullcontext

        return nullcontext()

    def asarray(self, a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a)

    def to_host(self, a: np.ndarray) -> np.ndarray:
        return a

    def free_bytes(self) -> int:
        return 1 << 30

    def note_memory(self) -> None:
        pass

    def launch(self, name: str, rows: int, n: int, args: list, block: int, plain: bool = False) -> None:
        c = self.ctypes
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                conv.append(c.c_void_p(a.ctypes.data))
            elif isinstance(a, np.int64):
                conv.append(c.c_longlong(int(a)))
            else:
                conv.append(c.c_int(int(a)))
        getattr(self.lib, f"host_{name}_{0 if plain else rows}")(*conv)


def build_host_library(out_dir: str) -> str:
    """Compile the host test build of the kernels with g++; returns the shared library's path."""
    import os
    import subprocess
    from importlib import resources

    src = resources.files("gamut.cuda").joinpath("kernels", "scan_host_harness.cu")
    lib = os.path.join(out_dir, "scan_host.so")
    subprocess.run(
        ["g++", "-x", "c++", "-std=c++17", "-O2", "-shared", "-fPIC", "-Wno-unknown-pragmas", "-o", lib, str(src)],
        check=True,
        capture_output=True,
    )
    return lib


# --------------------------------------------------------------------------------------------
# The pipeline on one device
# --------------------------------------------------------------------------------------------


@dataclass
class _Common:
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


class _DeviceRun:
    """Aligns a set of pairs that share one row bucket on one backend."""

    def __init__(self, backend, tuning: GpuTuning, params: ScanParams) -> None:
        self.be = backend
        self.xp = backend.xp
        self.t = tuning
        self.params = params
        self.gaps = gap_scalars(params)
        self.threshold = int(params.score_threshold)
        #: Counters: tasks, repaired tasks, candidates, survivors, pairs whose traceback left its window;
        #: seconds per stage (host setup, task tables, pass 1, checks and repairs, sort and
        #: suppression, tracebacks, results).
        self.stats = {"tasks": 0, "repaired_tasks": 0, "candidates": 0, "survivors": 0, "trace_fallback_pairs": 0,
                      "setup_s": 0.0, "tasks_s": 0.0, "pass1_s": 0.0, "verify_repair_s": 0.0, "suppress_s": 0.0,
                      "trace_s": 0.0, "assemble_s": 0.0}

    # -- helpers ---------------------------------------------------------------------------
    def _zeros(self, shape, dtype):
        return self.xp.zeros(shape, dtype=dtype)

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

    def _sorted_candidates(self, cands, d_task_pair, n_pairs: int, rows: int, max_ref: int):
        """Candidates ordered by (pair, score desc, j asc, i asc): backend arrays (pair, i, j, score).

        Sorted on the device with one packed 64-bit key when it fits (it does for any realistic
        input), else with a host lexsort.
        """
        xp, be = self.xp, self.be
        n = int(cands.shape[0])
        if n == 0:
            z = xp.zeros(0, np.int32)
            return xp.zeros(0, np.int64), z, z, z
        pair = d_task_pair[cands[:, 0]].astype(np.int64)
        i, j, score = cands[:, 1], cands[:, 2], cands[:, 3]
        smax = int(score.max())
        smin = int(score.min())
        bp = max(1, int(n_pairs).bit_length())
        bs = max(1, int(smax - smin).bit_length())
        bj = max(1, int(max_ref + 1).bit_length())
        bi = max(1, int(rows + 1).bit_length())
        if bp + bs + bj + bi <= 63:
            key = (((pair << bs) | (smax - score.astype(np.int64))) << bj | j.astype(np.int64)) << bi | i.astype(np.int64)
            order = xp.argsort(key)
            return pair[order], i[order], j[order], score[order]
        pair, i, j, score = (be.to_host(a) for a in (pair, i, j, score))
        order = np.lexsort((i, j, -score.astype(np.int64), pair))
        return tuple(be.asarray(np.ascontiguousarray(a[order])) for a in (pair, i, j, score))

    def _suppress(self, pair, i, j, n_pairs: int, rows: int, qlen: np.ndarray, rlen: np.ndarray):
        """Survivor mask (backend array) of sorted candidates: on the device (one thread per pair),
        with pairs of more than ``suppress_limit`` candidates (or all, if the device path is off)
        done on the host by :func:`suppress_sorted`."""
        xp, be, t = self.xp, self.be, self.t
        n = int(pair.shape[0])
        if n == 0:
            return xp.zeros(0, bool)
        if not t.device_suppress:
            return be.asarray(suppress_sorted(be.to_host(pair), be.to_host(i), be.to_host(j), qlen, rlen))
        start = xp.searchsorted(pair, xp.arange(n_pairs + 1, dtype=np.int64)).astype(np.int64)
        keep = xp.zeros(n, np.uint8)
        diag = xp.empty(n, np.int32)
        be.launch("scan_suppress", rows, n_pairs,
                  [np.int32(n_pairs), start, xp.ascontiguousarray(i), xp.ascontiguousarray(j),
                   np.int32(DIAGONAL_WINDOW), np.int32(t.suppress_limit), keep, diag], t.block, plain=True)
        keep = keep.astype(bool)
        big = be.to_host(xp.flatnonzero(xp.diff(start) > t.suppress_limit))  # found where `start` is
        for p in big.tolist():  # rare: pairs with very many candidates
            a, b = (int(x) for x in be.to_host(start[p:p + 2]))
            mask = suppress_sorted(be.to_host(pair[a:b]), be.to_host(i[a:b]), be.to_host(j[a:b]), qlen, rlen)
            keep[a:b] = be.asarray(mask)
        return keep

    def run(self, rows: int, qtabs: dict, q_of_pair: np.ndarray, references: SequenceSet, r_of_pair: np.ndarray,
            seglen: int, pair_ids: np.ndarray, results: _Collector) -> None:
        """Align pairs (q_of_pair[k], r_of_pair[k]) into ``results[pair_ids[k]]``.

        Pairs left unassigned (a traceback left its window) are redone on the CPU by the caller.
        """
        be, t = self.be, self.t
        began = time.perf_counter()
        n_pairs = q_of_pair.shape[0]
        # Query slots: profiles bottom-aligned in `rows` rows.
        uq, q_slot = dense_slots(q_of_pair)
        prof = np.full((uq.shape[0], 5, rows), PAD_SCORE, np.int32)
        pad = np.zeros(uq.shape[0], np.int32)
        qlen_slot = np.zeros(uq.shape[0], np.int64)
        for s, q in enumerate(uq):
            tab = qtabs[int(q)]
            L = tab.qrev.shape[0]
            pad[s] = rows - L
            qlen_slot[s] = L
            prof[s, :, rows - L :] = tab.profile[:, 1:]
        # Reference slots.
        ur, r_slot = dense_slots(r_of_pair)
        flat, rlen_slot = gather_sequences(references, ur)
        ref_off = np.zeros(ur.shape[0], np.int64)
        if ur.shape[0] > 1:
            ref_off[1:] = np.cumsum(rlen_slot)[:-1]
        d_refs = be.asarray(np.ascontiguousarray(flat, dtype=np.int8) if flat.size else np.zeros(1, np.int8))
        d_ref_off = be.asarray(ref_off)
        d_ref_len = be.asarray(rlen_slot.astype(np.int32))  # <= MAX_GPU_REFERENCE (checked in align)
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
        b_L = L[batch]
        # Tasks: (local pair, segment). Full segments first, grouped by query for cache locality,
        # then the pairs' partial last segments, longest first (one compiled pass, O(pairs)).
        task_pair, task_seg, pair_tasks, pair_task0, pair_cp = task_tables(
            np.ascontiguousarray(q_slot[batch]), np.ascontiguousarray(b_R), int(q_slot.max()) + 1 if nb else 1,
            seglen, t.cpint)
        n_tasks = int(pair_task0[-1])
        total_cp = int(pair_cp[-1])

        common = _Common(
            d_refs, d_ref_off, d_ref_len, be.asarray(q_slot[batch].astype(np.int32)),
            be.asarray(r_slot[batch].astype(np.int32)), be.asarray(pair_cp[:-1].copy()), d_prof, d_pad,
            seglen, t.cpint, t.warm, self.gaps, self.threshold,
        )
        d_task_pair = be.asarray(task_pair)
        d_task_seg = be.asarray(task_seg)
        d_cp = xp.empty(max(total_cp, 1) * 2 * rows, dtype=np.int32)
        d_entry = xp.empty(max(n_tasks, 1) * 2 * rows, dtype=np.int32)
        cap = max(4096, n_tasks)
        self.stats["tasks"] += n_tasks
        clock = self._lap("tasks_s", began)
        cands = self._collect(
            "scan_pass1", rows, n_tasks, [np.int32(n_tasks), d_task_pair, d_task_seg, *common.args(), d_cp, d_entry],
            [], cap,
        )
        clock = self._lap("pass1_s", clock)
        # Check every speculative segment start against the exact checkpoint before it.
        # (On the device: the task arrays are there already.)
        later = xp.flatnonzero(d_task_seg > 0)
        if later.size:
            cp_idx = common.pair_cp[d_task_pair[later]] + (d_task_seg[later].astype(np.int64) * seglen) // t.cpint - 1
            ent = d_entry.reshape(-1, 2 * rows)[later]
            ref_state = d_cp.reshape(-1, 2 * rows)[cp_idx]
            bad = be.to_host(later[~xp.all(ent == ref_state, axis=1)])
        else:
            bad = np.zeros(0, np.int64)
        if bad.size:
            first = np.full(nb, np.iinfo(np.int32).max, np.int32)
            np.minimum.at(first, task_pair[bad], task_seg[bad])
            rp_pair = np.nonzero(first < np.iinfo(np.int32).max)[0].astype(np.int32)
            rp_seg = np.ascontiguousarray(first[rp_pair])
            recomputed = self._zeros(max(n_tasks, 1), np.uint8)
            rcands = self._collect(
                "scan_repair", rows, rp_pair.shape[0],
                [np.int32(rp_pair.shape[0]), be.asarray(rp_pair), be.asarray(rp_seg), be.asarray(pair_task0[:-1].copy()),
                 be.asarray(pair_tasks), *common.args(), d_cp, d_entry, recomputed],
                [], max(1024, rp_pair.shape[0] * 16),
            )
            redone = recomputed[:n_tasks].astype(bool)
            self.stats["repaired_tasks"] += int(redone.sum())
            cands = xp.concatenate([cands[~redone[cands[:, 0]]], rcands])
        clock = self._lap("verify_repair_s", clock)
        # Sort (pair, score desc, j asc, i asc) and suppress diagonals.
        c_pair, c_i, c_j, c_s = self._sorted_candidates(cands, d_task_pair, nb, rows, int(b_R.max()) if nb else 0)
        keep = self._suppress(c_pair, c_i, c_j, nb, rows, b_L.astype(np.int64), b_R.astype(np.int64))
        d_sv = [xp.ascontiguousarray(a[keep].astype(np.int32)) for a in (c_pair, c_i, c_j)]
        sv_pair, sv_i, sv_j = (be.to_host(a) for a in d_sv)
        sv_s = be.to_host(c_s[keep].astype(np.int32))
        self.stats["candidates"] += int(cands.shape[0])
        self.stats["survivors"] += int(sv_pair.shape[0])
        clock = self._lap("suppress_s", clock)
        i0, j0, nops, flat, offs = self._trace(rows, common, d_cp, *d_sv)
        self.stats["trace_fallback_pairs"] += int(np.unique(sv_pair[nops < 0]).shape[0])
        clock = self._lap("trace_s", clock)
        self._assemble(pair_ids[batch], sv_pair, sv_s, sv_i, sv_j, i0, j0, nops, flat, offs, results)
        self._lap("assemble_s", clock)

    def _lap(self, key: str, since: float) -> float:
        now = time.perf_counter()
        self.stats[key] += now - since
        return now

    def _trace(self, rows, common, d_cp, sv_pair, sv_i, sv_j):
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
            d_i0 = xp.empty(m, dtype=np.int32)
            d_j0 = xp.empty(m, dtype=np.int32)
            d_n = xp.empty(m, dtype=np.int32)
            d_ops = xp.empty(m * opcap, dtype=np.uint8)
            scratch = xp.empty(m * stride // 4, dtype=np.uint32)
            be.launch(
                "scan_trace", rows, m,
                [np.int32(m), be.asarray(sv_pair[a:b].copy()), be.asarray(sv_i[a:b].copy()), be.asarray(sv_j[a:b].copy()),
                 *common.args(), d_cp, np.int32(K), scratch, np.int64(m), d_i0, d_j0, d_n, d_ops, np.int64(opcap)],
                t.block,
            )
            i0[a:b] = be.to_host(d_i0)
            j0[a:b] = be.to_host(d_j0)
            nops[a:b] = be.to_host(d_n)
            widest = int(nops[a:b].max())
            if widest > 0:
                ops = be.to_host(xp.ascontiguousarray(d_ops.reshape(m, opcap)[:, :widest]))
                pieces.append(gather_ops(ops, np.maximum(nops[a:b], 0).astype(np.int64))[0])
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(np.maximum(nops, 0), out=offsets[1:])
        return i0, j0, nops, np.concatenate(pieces), offsets

    @staticmethod
    def _assemble(pairs, sv_pair, sv_s, sv_i, sv_j, i0, j0, nops, flat, offs, results: _Collector) -> None:
        """Record a batch's results: survivors of pairs ``pairs[sv_pair]``; the others have none.

        A pair whose traceback left its window stays unassigned: it is redone on the CPU.
        """
        results.assigned[pairs] = True
        n = sv_pair.shape[0]
        if n == 0:
            return
        # Survivors are grouped by pair (sorted by pair first): runs of equal sv_pair.
        starts = np.flatnonzero(np.r_[True, sv_pair[1:] != sv_pair[:-1]])
        ends = np.append(starts[1:], n)
        failed = np.zeros(pairs.shape[0], bool)
        failed[sv_pair[nops < 0]] = True
        local = sv_pair[starts]
        ok = ~failed[local]
        results.add_batch((sv_s, sv_i, sv_j, i0, j0, offs, flat), pairs[local[ok]], starts[ok], ends[ok])
        results.assigned[pairs[local[~ok]]] = False


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------


class GpuEngine:
    """miRanda-exact alignment on CUDA GPUs ``gpu_ids`` (pairs split evenly by cells).

    Returns exactly what the CPU engines return. ``threads`` is used for the
    CPU engine that handles queries longer than :data:`MAX_GPU_QUERY` and rare fallbacks.
    """

    name = "cuda"
    energy_device = "auto"

    def __init__(self, gpu_ids: Sequence[int], threads: int | None = None, *, tuning: GpuTuning | None = None,
                 backends: Sequence[Any] | None = None) -> None:
        from gamut.scanning.engines.simd import SimdEngine

        self.tuning = tuning or GpuTuning()
        if backends is None:
            if not gpu_ids:
                raise DeviceError("no CUDA GPU selected for the GPU engine")
            backends = [CupyBackend(int(g)) for g in gpu_ids]
        self.backends = list(backends)
        self.gpu_ids = [b.device_id for b in self.backends]
        self.cpu = SimdEngine(threads)
        #: The runner may hand this many cells per ``align`` call (GPU launches want big chunks).
        self.preferred_chunk_cells = CHUNK_CELLS_PER_DEVICE * len(self.backends)
        #: ... and this many pairs (Python work per call is small next to the GPU's).
        self.preferred_chunk_pairs = CHUNK_PAIRS_PER_DEVICE * len(self.backends)
        self.stats: dict[str, float] = {}
        self._stats_lock = threading.Lock()
        self._query_cache: tuple | None = None

    @property
    def peak_device_bytes(self) -> int:
        """Largest CuPy memory-pool size seen on any device (bytes)."""
        return max((b.peak_bytes for b in self.backends), default=0)

    def align(self, queries: SequenceSet, references: SequenceSet, pairs: np.ndarray,
              params: ScanParams) -> ChunkAlignments:
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        n = pairs.shape[0]
        out = _Collector(n)
        if n == 0:
            return out.chunk()
        q_lengths = queries.lengths()
        r_lengths = references.lengths()
        qlen = q_lengths[pairs[:, 0]]
        rlen = r_lengths[pairs[:, 1]]
        longest = int(rlen.max())
        if longest > MAX_GPU_REFERENCE:
            raise InputError(f"a reference of {longest:,} nt is longer than the GPU engine's limit of "
                             f"{MAX_GPU_REFERENCE:,} nt (split it into pieces)")
        check_int32_scores(int(qlen.max()), longest, params)
        trivial = (qlen == 0) | (rlen == 0)
        out.assigned[trivial] = True
        buckets = np.searchsorted(np.array(ROW_BUCKETS), q_lengths)  # smallest bucket that fits
        buckets = np.where(buckets < len(ROW_BUCKETS), np.array(ROW_BUCKETS + (0,))[buckets], 0)[pairs[:, 0]]
        gpu_idx = np.nonzero(~trivial & (buckets > 0))[0]
        began = time.perf_counter()
        cache = self._query_cache  # query tables, built once per query set and parameters
        if cache is None or cache[0] is not queries or cache[1] != params:
            cache = self._query_cache = (queries, params, {}, {})
        tables, schemes = cache[2], cache[3]
        for q in small_unique(pairs[gpu_idx, 0], q_lengths.shape[0]).tolist():
            if q in tables:
                continue
            length = int(q_lengths[q])
            if length not in schemes:
                schemes[length] = row_scheme(length, params)
            tables[q] = query_tables(queries.class_codes(q), params, schemes[length])
        with self._stats_lock:
            self.stats["tables_s"] = self.stats.get("tables_s", 0.0) + time.perf_counter() - began
        refs = references
        nd = len(self.backends)
        shares = split_over_devices(gpu_idx, qlen[gpu_idx] * rlen[gpu_idx], nd) if nd > 1 else [gpu_idx]

        errors: list[BaseException] = []

        def work(d: int) -> None:
            try:
                self._align_on(self.backends[d], shares[d], pairs, buckets, tables, refs, r_lengths, params, out)
            except BaseException as exc:  # re-raised in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(d,)) for d in range(nd) if shares[d].shape[0]]
        if len(threads) == 1:
            threads[0].run()
        else:
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        if errors:
            raise errors[0]
        rest = np.flatnonzero(~out.assigned)
        done = out.chunk()
        if rest.size == 0:
            return done
        on_cpu = self.cpu.align(queries, references, pairs[rest], params)
        gpu_part = np.flatnonzero(out.assigned)
        return ChunkAlignments.concat(
            [ChunkAlignments(done.sv_start[gpu_part], done.sv_stop[gpu_part], *(getattr(done, f) for f in
              ("score", "i_end", "j_end", "i_start", "j_start", "op_start", "op_end", "ops"))), on_cpu],
            [gpu_part, rest], n)

    def _align_on(self, backend, idx: np.ndarray, pairs, buckets, tables, refs, r_lengths, params, out) -> None:
        """Align the pairs ``idx`` on one backend, its row buckets on ``bucket_threads`` threads
        with a stream each, so that one bucket's host work overlaps another's kernels."""
        t = self.tuning
        bucket_of = buckets[idx]
        rows_list = small_unique(bucket_of, max(ROW_BUCKETS) + 1).tolist()
        workers = max(1, min(len(rows_list), t.bucket_threads))
        free_streams: queue.SimpleQueue = queue.SimpleQueue()
        for slot in range(workers):
            free_streams.put(slot)

        def bucket(rows: int) -> None:
            sel = idx[bucket_of == rows]
            r = pairs[sel, 1]
            seg = -(-int(r_lengths[r].sum()) // t.target_tasks)  # about target_tasks threads
            seg = min(max(seg, t.min_seg), t.max_seg)
            seg = -(-seg // t.cpint) * t.cpint
            run = _DeviceRun(backend, t, params)
            slot = free_streams.get()  # a stream no other running bucket uses
            try:
                with backend.device(), backend.stream(slot):
                    run.run(rows, tables, pairs[sel, 0], refs, r, seg, sel, out)
            finally:
                free_streams.put(slot)
            with self._stats_lock:
                for key, value in run.stats.items():
                    self.stats[key] = self.stats.get(key, 0) + value

        if workers == 1:
            for rows in rows_list:
                bucket(rows)
            return
        with ThreadPoolExecutor(workers) as pool:
            for done in [pool.submit(bucket, rows) for rows in rows_list]:
                done.result()
