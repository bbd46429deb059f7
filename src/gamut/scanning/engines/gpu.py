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

import functools
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from gamut.errors import DeviceError, InputError
from gamut.numerals import env_count, env_switch
from gamut.scanning.alignments import ChunkAlignments
from gamut.scanning.engines.common import QueryCache
from gamut.scanning.engines.gpu_device import Collector, CupyBackend, DeviceRun, bucket_profiles, upload_references
from gamut.scanning.engines.gpu_grid import DeviceRefs, GridChunk, GridRun, RectChunk, grid_chunk
from gamut.scanning.engines.gpu_plan import (
    MAX_GPU_REFERENCE,
    ROW_BUCKETS,
    GpuTuning,
    bucket_for,
    chunk_sizes,
    check_int32_scores,
    small_unique,
    split_over_devices,
)
from gamut.scanning.engines.simd import SimdEngine
from gamut.scanning.pair_run import rect_of, run_of
from gamut.scanning.params import ScanParams, row_scheme, same_length_tables
from gamut.scanning.sequences import SequenceSet


class GpuEngine:
    """miRanda-exact alignment on CUDA GPUs ``gpu_ids`` (pairs split evenly by cells).

    Returns exactly what the CPU engines return. ``threads`` is used for the
    CPU engine that handles queries longer than :data:`~.gpu_plan.MAX_GPU_QUERY` and rare fallbacks.
    """

    name = "cuda"
    energy_device = "auto"
    occupies_cores = False
    #: Chunks the runner may align at once (each on threads and streams of its own): one chunk's
    #: host work (task tables, transfers, survivors, results) overlaps another's kernels.
    #: ``GAMUT_GPU_LANES`` sets an engine's count (1-16), a measurement knob for one process per GPU
    #: (a Dask worker, a one-GPU scan): in run n on 2x H200 (2026-11-28) such a process kept its two
    #: chunks in flight 86% of the time and aligned 60 chunks a second, where the two processes of two
    #: chunks each that ``--gpus`` runs on a GPU aligned 77 a second together.
    concurrent_chunks = 2

    def __init__(self, gpu_ids: Sequence[int], threads: int | None = None, *, tuning: GpuTuning | None = None,
                 backends: Sequence[Any] | None = None) -> None:
        self.tuning = tuning or GpuTuning()
        if not env_switch("GAMUT_GPU_PACKED", True):  # a measurement knob: the int32 pass 1 everywhere
            self.tuning = replace(self.tuning, packed=False)
        self.concurrent_chunks = env_count("GAMUT_GPU_LANES", type(self).concurrent_chunks, at_most=16)
        if backends is None:
            if not gpu_ids:
                raise DeviceError("no CUDA GPU selected for the GPU engine")
            backends = [CupyBackend(int(g)) for g in gpu_ids]
        self.backends = list(backends)
        self.gpu_ids = [b.device_id for b in self.backends]
        self.cpu = SimdEngine(threads)
        #: The runner may hand this many cells and pairs per ``align`` call (GPU launches want big
        #: chunks; Python work per call is small next to the GPU's): :func:`~.gpu_plan.chunk_sizes`.
        self.preferred_chunk_cells, self.preferred_chunk_pairs = chunk_sizes(len(self.backends))
        self.stats: dict[str, float] = {}
        self._stats_lock = threading.Lock()
        #: Per query set and parameters: query tables by query and row schemes by length.
        self._query_tables: QueryCache[tuple[dict, dict]] = QueryCache(lambda queries, params: ({}, {}))
        #: Per device: (reference set, index range, DeviceRefs) of the references last uploaded.
        self._refs_held: list = [None] * len(self.backends)
        self._refs_lock = threading.Lock()
        #: Per device: the streams free for a job (each running job holds one: ``bucket_threads``
        #: per chunk aligned at once), shared by concurrent ``align`` calls.
        self._free_streams: list[queue.SimpleQueue] = []
        for _ in self.backends:
            free: queue.SimpleQueue = queue.SimpleQueue()
            for slot in range(self.tuning.bucket_threads * self.concurrent_chunks):
                free.put(slot)
            self._free_streams.append(free)

    @property
    def peak_device_bytes(self) -> int:
        """Largest CuPy memory-pool size seen on any device (bytes)."""
        return max((b.peak_bytes for b in self.backends), default=0)

    def align(self, queries: SequenceSet, references: SequenceSet, pairs: np.ndarray,
              params: ScanParams) -> ChunkAlignments:
        first, rect = run_of(pairs, len(references)), rect_of(pairs)  # O(1) (asarray makes plain pairs)
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        n = pairs.shape[0]
        if n == 0:
            return ChunkAlignments.empty(0)
        grid = grid_chunk(pairs, len(references), first, rect)
        if grid is not None:
            out, rest = self._align_grid(queries, references, grid, params)
        else:
            out, rest = self._align_listed(queries, references, pairs, params)
        with self._stats_lock:
            key = "grid_chunks" if grid is not None else "listed_chunks"
            self.stats[key] = self.stats.get(key, 0) + 1
        parts, pair_index = out.parts()
        rest = np.concatenate([rest, out.failed()])
        if rest.size:  # long queries, and pairs whose traceback left its window
            rest.sort()
            parts.append(self.cpu.align(queries, references, pairs[rest], params))
            pair_index.append(rest)
        return ChunkAlignments.concat(parts, pair_index, n)

    def _tables(self, queries: SequenceSet, wanted: np.ndarray, params: ScanParams) -> dict:
        """Query tables of query indices ``wanted`` (built as queries first come)."""
        began = time.perf_counter()
        tables, schemes = self._query_tables.get(queries, params)
        lengths = queries.lengths()
        new = np.array([q for q in wanted.tolist() if q not in tables], np.int64)
        for length in np.unique(lengths[new]).tolist():  # the queries of one length at once
            of_length = new[lengths[new] == length]
            if length not in schemes:
                schemes[length] = row_scheme(length, params)
            for q, built in zip(of_length.tolist(), same_length_tables(queries, of_length, length, schemes[length])):
                tables[q] = built
        with self._stats_lock:
            self.stats["tables_s"] = self.stats.get("tables_s", 0.0) + time.perf_counter() - began
        return tables

    @staticmethod
    def _check_sizes(longest_query: int, longest_ref: int, params: ScanParams) -> None:
        if longest_ref > MAX_GPU_REFERENCE:
            raise InputError(f"a reference of {longest_ref:,} nt is longer than the GPU engine's limit of "
                             f"{MAX_GPU_REFERENCE:,} nt (split it into pieces)")
        check_int32_scores(longest_query, longest_ref, params)

    def _align_grid(self, queries: SequenceSet, references: SequenceSet, grid: GridChunk | RectChunk,
                    params: ScanParams) -> tuple[Collector, np.ndarray]:
        """A chunk of consecutive pairs (:mod:`.gpu_grid`): returns the results and the pairs for the CPU."""
        ra, rb = grid.ref_range
        qs, lo, hi = grid.rows()
        q_len = queries.lengths()[qs]
        r_len = references.lengths()[ra:rb]
        self._check_sizes(int(q_len.max()), int(r_len.max()), params)
        buckets = bucket_for(q_len)
        live = (q_len > 0) & (hi > lo) & (int(r_len.max()) > 0)
        first_pair = grid.first_pair(qs)
        on_cpu = np.flatnonzero(live & (buckets == 0))
        counts = (hi[on_cpu] - lo[on_cpu]).astype(np.int64)
        rest = (np.repeat(first_pair[on_cpu] + lo[on_cpu] - np.cumsum(counts) + counts, counts)
                + np.arange(int(counts.sum())))
        on_gpu = live & (buckets > 0)
        tables = self._tables(queries, qs[on_gpu], params)
        out = Collector()
        nd = len(self.backends)
        jobs: list[list] = [[] for _ in range(nd)]
        for rows in small_unique(buckets[on_gpu], max(ROW_BUCKETS) + 1).tolist():
            sel = np.flatnonzero(on_gpu & (buckets == rows))
            for d, part in enumerate(np.array_split(sel, nd)):
                if part.size:
                    jobs[d].append(functools.partial(self._grid_job, d, rows, part, qs, lo, hi, first_pair, tables,
                                                     references, (ra, rb), params, out))
        self._run_jobs(jobs)
        return out, rest

    def _grid_job(self, d: int, rows: int, part: np.ndarray, qs, lo, hi, first_pair, tables, references, ref_range,
                  params, out: Collector) -> dict:
        t = self.tuning
        backend = self.backends[d]
        refs = self._device_refs(d, references, ref_range)
        prof, pad = bucket_profiles(tables, qs[part], rows)
        seg = t.segment_length(int(refs.lengths.sum()) * part.shape[0])
        run = GridRun(backend, t, params)
        run.run_grid(rows, prof, pad, lo[part], hi[part], refs, seg, first_pair[part], out)
        return run.stats

    def _device_refs(self, d: int, references: SequenceSet, ref_range: tuple[int, int]) -> DeviceRefs:
        """References ``ref_range`` on device ``d``, uploaded once while chunks use the same ones."""
        with self._refs_lock:
            held = self._refs_held[d]
            if held is None or held[0] is not references or held[1] != ref_range:
                backend = self.backends[d]
                with backend.device():
                    letters, offsets, lengths_dev, lengths = upload_references(
                        backend, references, np.arange(*ref_range, dtype=np.int64))
                    backend.synchronize()  # on the device before jobs on other streams read them
                held = self._refs_held[d] = (references, ref_range, DeviceRefs(letters, offsets, lengths_dev, lengths))
            return held[2]

    def _align_listed(self, queries: SequenceSet, references: SequenceSet, pairs: np.ndarray,
                      params: ScanParams) -> tuple[Collector, np.ndarray]:
        """Any list of pairs (e.g. -restrict): returns the results and the pairs for the CPU."""
        q_lengths = queries.lengths()
        r_lengths = references.lengths()
        qlen = q_lengths[pairs[:, 0]]
        rlen = r_lengths[pairs[:, 1]]
        self._check_sizes(int(qlen.max()), int(rlen.max()), params)
        trivial = (qlen == 0) | (rlen == 0)
        buckets = bucket_for(q_lengths)[pairs[:, 0]]
        gpu_idx = np.flatnonzero(~trivial & (buckets > 0))
        rest = np.flatnonzero(~trivial & (buckets == 0))
        tables = self._tables(queries, small_unique(pairs[gpu_idx, 0], q_lengths.shape[0]), params)
        out = Collector()
        nd = len(self.backends)
        shares = split_over_devices(gpu_idx, qlen[gpu_idx] * rlen[gpu_idx], nd) if nd > 1 else [gpu_idx]
        jobs: list[list] = []
        for d, idx in enumerate(shares):
            bucket_of = buckets[idx]
            jobs.append([functools.partial(self._listed_job, d, rows, idx[bucket_of == rows], pairs, tables,
                                           references, r_lengths, params, out)
                         for rows in small_unique(bucket_of, max(ROW_BUCKETS) + 1).tolist()])
        self._run_jobs(jobs)
        return out, rest

    def _listed_job(self, d: int, rows: int, sel: np.ndarray, pairs, tables, references, r_lengths, params,
                    out: Collector) -> dict:
        t = self.tuning
        r = pairs[sel, 1]
        seg = t.segment_length(int(r_lengths[r].sum()))
        run = DeviceRun(self.backends[d], t, params)
        run.run(rows, tables, pairs[sel, 0], references, r, seg, sel, out)
        return run.stats

    def _run_jobs(self, jobs: list[list]) -> None:
        """Run ``jobs[d]`` (callables returning stats) on device d, all devices at once; on each,
        up to ``bucket_threads`` jobs at a time, each on a stream no other running job (of this
        call or of another chunk aligned at once) uses, so that one job's host work overlaps
        another's kernels."""
        errors: list[BaseException] = []

        def on_device(d: int) -> None:
            try:
                self._run_on(d, jobs[d])
            except BaseException as exc:  # re-raised in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=on_device, args=(d,)) for d in range(len(jobs)) if jobs[d]]
        if len(threads) == 1:
            threads[0].run()
        else:
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        if errors:
            raise errors[0]

    def _run_on(self, d: int, jobs: list) -> None:
        backend = self.backends[d]
        workers = max(1, min(len(jobs), self.tuning.bucket_threads))
        free_streams = self._free_streams[d]

        def one(job) -> None:
            slot = free_streams.get()
            try:
                with backend.device(), backend.stream(slot):
                    stats = job()
            finally:
                free_streams.put(slot)
            with self._stats_lock:
                for key, value in stats.items():
                    self.stats[key] = self.stats.get(key, 0) + value

        if workers == 1:
            for job in jobs:
                one(job)
            return
        with ThreadPoolExecutor(workers) as pool:
            for done in [pool.submit(one, job) for job in jobs]:
                done.result()
