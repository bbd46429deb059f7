"""How the CUDA alignment engine (:mod:`gamut.scanning.engines.gpu`) splits its work, on the host:
row buckets, limits, tuning knobs, the split over devices, query and reference slots, and the task
tables of a batch (pair, reference segment)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numba import njit

from gamut.errors import UsageError
from gamut.io.textcols import gather
from gamut.scanning.params import ScanParams, c_trunc, gap_rise, row_scheme, score_bound
from gamut.scanning.sequences import SequenceSet

#: Register-array heights the kernels are instantiated for (a query uses the smallest that fits).
ROW_BUCKETS = (8, 16, 24, 32, 40, 48, 56, 64)
#: Longer queries go to the CPU engine.
MAX_GPU_QUERY = ROW_BUCKETS[-1]
#: Longest reference the kernels index with int columns (segment ends may pass it by a segment).
MAX_GPU_REFERENCE = 2**31 - 2**24
#: Cells and pairs per ``align`` call the engine asks the runner for, per device.
CHUNK_CELLS_PER_DEVICE = 16_000_000_000
CHUNK_PAIRS_PER_DEVICE = 1_000_000


def chunk_sizes(devices: int = 1) -> tuple[int, int]:
    """Cells and pairs per ``align`` call of an engine on ``devices`` GPUs (``GAMUT_GPU_CHUNK_CELLS``
    sets another size per device, for measurements): what the engine asks for, and what a
    process that plans a GPU run's chunks without an engine (Parquet's row groups) must use too."""
    cells = int(float(os.environ.get("GAMUT_GPU_CHUNK_CELLS") or CHUNK_CELLS_PER_DEVICE))
    return cells * devices, CHUNK_PAIRS_PER_DEVICE * devices


@dataclass(frozen=True)
class GpuTuning:
    """Work-splitting knobs (all results are exact for any values; they only change speed).

    ``cpint``: columns between checkpoints; ``warm``: warm-up columns before a segment;
    ``min_seg``/``max_seg``: segment length bounds (multiples of ``cpint``); ``target_tasks``:
    threads per device to aim for; ``trace_margin``: extra columns (beyond the query length) a
    traceback window covers; ``max_tasks``/``max_state_bytes``: batch limits per launch;
    ``scratch_bytes``: trace-window memory per pass-2 launch; ``device_suppress``: diagonal
    suppression on the device (pairs of more than ``suppress_limit`` candidates on the host);
    ``bucket_threads``: row buckets aligned at once on a device (each on its own stream);
    ``packed``: pass 1 of chunks of consecutive pairs two queries per thread in 16-bit lanes where
    the scores fit (:func:`fits_16_bits`) and the device has DPX instructions (compute capability 9.0+).
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
    packed: bool = True

    def segment_length(self, columns: int) -> int:
        """Reference columns per task for ``columns`` columns in all: about ``target_tasks`` tasks,
        within ``min_seg``..``max_seg``, a multiple of ``cpint``."""
        seg = min(max(-(-columns // self.target_tasks), self.min_seg), self.max_seg)
        return -(-seg // self.cpint) * self.cpint


def bucket_for(lengths):
    """The smallest row bucket holding each of ``lengths`` rows (0 where the query is too long)."""
    return np.array(ROW_BUCKETS + (0,))[np.searchsorted(np.array(ROW_BUCKETS), lengths)]


def score_range(query_length: int, ref_length: int, params: ScanParams) -> tuple[int, int]:
    """Bounds (low, high) on every value the kernels' DP holds or sums for a query of
    ``query_length`` rows against a reference of ``ref_length`` letters: from the best row score,
    the query length and the gap rise."""
    z = float(params.scale)
    best_row = max(5, c_trunc(5 * z), c_trunc(-3 * z), c_trunc(-z), c_trunc(z))
    rise = gap_rise(params)
    high = score_bound(query_length * best_row, rise, ref_length) + max(best_row, rise)
    low = 2 * min(params.gap_open, params.gap_extend, c_trunc(z * params.gap_open), c_trunc(z * params.gap_extend),
                  -3 * max(1, c_trunc(abs(z))) - 1)
    return low, high


def check_int32_scores(query_length: int, ref_length: int, params: ScanParams) -> None:
    """Refuse parameters whose scores could leave the kernels' int32 cells (the CPU engine widens
    its lanes instead)."""
    low, high = score_range(query_length, ref_length, params)
    limit = 2**31 - 3
    if high >= limit or low <= -limit:
        raise UsageError(f"with these scoring parameters scores could reach {max(high, -low):,}, beyond the GPU "
                         f"engine's 32-bit cells (limit {limit:,}); use --device cpu, which widens them")


#: The packed pass 1 (``scan_pass1_grid2``: two queries per thread, 16-bit lanes) needs every value
#: within +-PACKED_LIMIT; its unused top rows score -PACKED_LIMIT (their A stays 0, no sum wraps).
PACKED_LIMIT = 2**14
#: Row buckets that take the packed pass 1: it holds their two states in registers (1.7-1.9x the int32
#: kernel's cells per second for 24 and 32 rows on an H200); taller buckets would spill.
PACKED_ROWS = (16, 24, 32)


def fits_16_bits(query_length: int, ref_length: int, params: ScanParams) -> bool:
    """Whether the packed pass 1 computes exactly what the int32 one does for these sizes."""
    low, high = score_range(query_length, ref_length, params)
    return high < PACKED_LIMIT and low > -PACKED_LIMIT


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




def gather_sequences(seqs: SequenceSet, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The class codes of sequences ``which``, concatenated, and their lengths (no loop per sequence)."""
    lengths = (seqs.offsets[which + 1] - seqs.offsets[which]).astype(np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int8), lengths
    # One compiled copy per sequence, on the calling thread (an alignment thread: the cores are the
    # post-processing's), rather than a per-letter index (np.arange + np.repeat), which builds
    # and reads an index array as large as the letters themselves.
    codes, _ = gather(seqs.codes.view(np.uint8), seqs.offsets[which], lengths)
    return codes.view(np.int8), lengths

