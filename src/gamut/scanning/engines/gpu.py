"""The CUDA alignment engine: miRanda-exact DP, candidates and tracebacks on one or more GPUs.

Pipeline for a chunk of pairs (kernels in ``gamut/cuda/kernels/scan_dp.cu``, driven per device by
:mod:`.gpu_device`; work split by :mod:`.gpu_plan`):

1. Pass 1, one GPU thread per (pair, reference segment): a score-only DP started ``warm``
   columns before the segment from an all-zero column. It emits candidates (best >= threshold,
   not ending in state B), stores the exact DP state every ``cpint`` columns (checkpoints) and its
   speculative state at the segment's start.
2. Every speculative start state is compared with the previous segment's checkpoint. Segments
   that differ are recomputed from the exact state (repair kernel), so results never depend on
   the warm-up being long enough.
3. Candidates are sorted (score desc, j asc, i asc) and diagonal-suppressed (miranda-model §6).
4. Pass 2, one thread per survivor: full DP with trace bytes over a window that starts at a
   checkpoint at least ``K`` columns before the candidate, then the traceback. A pair whose
   traceback needs columns before the window (very long gaps) is redone by the CPU engine.

Queries longer than :data:`~.gpu_plan.MAX_GPU_QUERY` letters are aligned by the CPU engine;
references longer than :data:`~.gpu_plan.MAX_GPU_REFERENCE` are an error. CuPy is imported only
when a :class:`GpuEngine` is created.
"""
from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from gamut.errors import DeviceError, InputError
from gamut.scanning.alignments import ChunkAlignments
from gamut.scanning.engines.common import QueryCache
from gamut.scanning.engines.gpu_device import Collector, CupyBackend, DeviceRun
from gamut.scanning.engines.gpu_plan import (
    CHUNK_CELLS_PER_DEVICE,
    CHUNK_PAIRS_PER_DEVICE,
    MAX_GPU_REFERENCE,
    ROW_BUCKETS,
    GpuTuning,
    bucket_for,
    check_int32_scores,
    small_unique,
    split_over_devices,
)
from gamut.scanning.engines.simd import SimdEngine
from gamut.scanning.params import ScanParams, query_tables, row_scheme
from gamut.scanning.sequences import SequenceSet


class GpuEngine:
    """miRanda-exact alignment on CUDA GPUs ``gpu_ids`` (pairs split evenly by cells).

    Returns exactly what the CPU engines return. ``threads`` is used for the
    CPU engine that handles queries longer than :data:`~.gpu_plan.MAX_GPU_QUERY` and rare fallbacks.
    """

    name = "cuda"
    energy_device = "auto"

    def __init__(self, gpu_ids: Sequence[int], threads: int | None = None, *, tuning: GpuTuning | None = None,
                 backends: Sequence[Any] | None = None) -> None:
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
        #: Per query set and parameters: query tables by query and row schemes by length.
        self._query_tables: QueryCache[tuple[dict, dict]] = QueryCache(lambda queries, params: ({}, {}))

    @property
    def peak_device_bytes(self) -> int:
        """Largest CuPy memory-pool size seen on any device (bytes)."""
        return max((b.peak_bytes for b in self.backends), default=0)

    def align(self, queries: SequenceSet, references: SequenceSet, pairs: np.ndarray,
              params: ScanParams) -> ChunkAlignments:
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        n = pairs.shape[0]
        if n == 0:
            return ChunkAlignments.empty(0)
        out = Collector(n)
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
        buckets = bucket_for(q_lengths)[pairs[:, 0]]
        gpu_idx = np.nonzero(~trivial & (buckets > 0))[0]
        began = time.perf_counter()
        tables, schemes = self._query_tables.get(queries, params)  # filled as queries come
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
        parts, pair_index = out.parts()
        rest = np.flatnonzero(~out.assigned)
        if rest.size:  # long queries, and pairs whose traceback left its window
            parts.append(self.cpu.align(queries, references, pairs[rest], params))
            pair_index.append(rest)
        return ChunkAlignments.concat(parts, pair_index, n)

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
            run = DeviceRun(backend, t, params)
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

