"""Run a scan as a stream of chunks: pairs as arrays, aligned by an engine, hits and energies as columns.

A chunk is a run of consecutive (query, reference) pairs in miRanda's output order (every
reference for the first query, then the second, ...), bounded in cells and pairs. Its pairs are
an int64 array, never one Python object per pair; the engine returns the chunk's alignments as
columns (:class:`~gamut.scanning.alignments.ChunkAlignments`), :func:`~gamut.scanning.hits.chunk_hits`
builds every hit of the chunk in compiled code, the energies of all its hits are folded in one
parallel call, and a sink formats the whole chunk from the columns
(:class:`~gamut.scanning.results.ChunkResult`). Alignment, hits, energies and writing
run at once on four threads, a chunk apart (the compiled kernels release the GIL), so memory
stays bounded by a few chunks whatever the number of pairs.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from gamut.io.threads import Parallel, numba_threads
from gamut.scanning.alignments import AlignmentEngine
from gamut.scanning.hits import NOENERGY_VALUE, HitTable, chunk_hits
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.pairs import ScanInput
from gamut.timeline import span
from gamut.scanning.results import ChunkResult

if TYPE_CHECKING:
    from gamut.scanning.site_access import SiteEnergies

__all__ = ["ScanInput", "hit_energies", "run_scan", "scan_chunks"]

#: Chunks a GPU engine may run ahead of the caller, per chunk it aligns at once. The host work
#: that follows a chunk (hits, and a stripe worker's rendering and hand-over of a tile) comes in
#: bursts; with only one chunk ahead per lane the GPU waits through each burst. Measured on the
#: transcriptome scan's stripe workers (2x H200, bench/results/scan_engine_probe_*-28g.json):
#: 1 ahead per lane 3.74 s, 3: 3.44 s, 6: 3.24 s, 12: 3.14-3.25 s. A CPU engine keeps one per
#: lane, so that post-processing gets every core whenever no alignment runs.
GPU_AHEAD_PER_LANE = 6


def hit_energies(hits: HitTable, params: ScanParams, threads: int | None, device: str = "cpu") -> np.ndarray:
    """Energies (float32 kcal/mol) of every hit (miranda-model §9), or the -noenergy value; ``device``
    as for :func:`gamut.scanning.energy.cpu.packed_energies_dcal`."""
    if params.noenergy:
        return np.full(len(hits), NOENERGY_VALUE, np.float32)
    if len(hits) == 0:
        return np.zeros(0, np.float32)
    from gamut.scanning.energy.cpu import packed_energies_dcal

    dcal = packed_energies_dcal(hits.fold, hits.fold_off, model=params.energy_model, threads=threads, device=device)
    return (dcal / 100.0).astype(np.float32)


def run_scan(scan_input: ScanInput, engine: AlignmentEngine, **options) -> Iterator[ChunkResult]:
    """:func:`scan_chunks`' results alone (for callers that format nothing)."""
    return (result for result, _ in scan_chunks(scan_input, engine, **options))


def scan_chunks(
    scan_input: ScanInput,
    engine: AlignmentEngine,
    *,
    threads: int | None = None,
    chunk_cells: int | None = None,
    chunk_pairs: int | None = None,
    progress: Callable[[int], None] | None = None,
    chunks: Iterable[np.ndarray | tuple[np.ndarray, int]] | None = None,
    counter0: int = 0,
    site_energies: SiteEnergies | None = None,
) -> Iterator[tuple[ChunkResult, Parallel]]:
    """Yield ``(result, spare_cores)`` per chunk of pairs, in miRanda's output order.

    Four stages run at once, each on its own thread, in chunk order: the engine aligns, the hits
    of an aligned chunk are built, then its energies and site filter are computed, and the caller
    formats and writes the chunk (a CPU engine runs one chunk ahead of the caller; in default mode
    the hits and the energies of a chunk each take about as long as its formatting, so one thread
    for both bounded a GPU scan: 2026-11-29). An engine whose
    ``concurrent_chunks`` is more than 1 (the GPU's) aligns that many chunks at once, on as many
    threads, and runs that many more chunks ahead. ``spare_cores``
    tells whoever formats the chunk whether its kernels may take every core now (a callable,
    asked before each kernel: see :func:`gamut.io.threads.run_kernel`): only while no alignment
    runs beside them. ``progress`` is called with the number of cells finished after each chunk.
    Chunks hold about ``chunk_cells`` cells and at most ``chunk_pairs`` pairs (default: the
    engine's ``preferred_chunk_cells`` and ``preferred_chunk_pairs``). ``chunks`` (consecutive
    runs of pairs of the output order, e.g. one partition's: :meth:`ScanInput.chunks` of a range)
    scans those chunks only, as they are; their first pair's running counter is ``counter0 + 1``
    (an item ``(pairs, counter)`` starts the count again: its first pair's is ``counter + 1``, as
    at the start of a partition).
    ``site_energies`` (with the params' ``site_access``) gives every hit its ``dG_open``
    (:func:`gamut.scanning.site_access.site_energies` computes it). ``threads`` bounds
    post-processing (hits, energies and, between chunks, the caller's sink: Numba's thread count
    in the calling thread until the iteration ends); ``None`` takes every core.
    """
    params = scan_input.params
    chunk_cells = engine.preferred_chunk_cells if chunk_cells is None else chunk_cells
    chunk_pairs = engine.preferred_chunk_pairs if chunk_pairs is None else chunk_pairs
    queries, references = scan_input.query_set, scan_input.reference_set
    aligning: deque = deque()  # futures of (pairs, alignments) or None, in order

    def spare_cores() -> bool:
        # Beside an engine that keeps every core busy (the CPU's), post-processing takes every
        # core only while no alignment runs: once the chunks ahead are aligned (or there are none);
        # each kernel asks again. A GPU engine's host work leaves the cores free.
        return not engine.occupies_cores or all(f.done() for f in list(aligning))

    chunks = iter(chunks) if chunks is not None else scan_input.chunks(int(chunk_cells), int(chunk_pairs))
    counter = counter0  # the running counter before the next chunk (kept by the hits thread)
    # An engine that aligns several chunks at once gets them on as many threads; each takes its
    # chunk in submission order (the k-th call the k-th chunk), whichever thread runs it.
    lanes = max(1, int(getattr(engine, "concurrent_chunks", 1)))
    turn = threading.Condition()
    taken = [0]

    def align_next(k: int):
        """Chunk ``k``'s pairs and alignments (the chunk is cut on this thread too); None when there are no more."""
        with turn:
            while taken[0] != k:
                turn.wait()
            try:
                chunk = next(chunks, None)
            finally:
                taken[0] += 1
                turn.notify_all()
        if chunk is None:
            return None
        chunk, restart = chunk if isinstance(chunk, tuple) else (chunk, None)
        with span("align", chunk=k):
            return chunk, engine.align(queries, references, chunk, params), restart

    def find_hits(aligned) -> tuple[np.ndarray, HitTable, int | None] | None:
        """A chunk's pairs, hits and restart of the counter, once it is aligned; None after the last one."""
        got = aligned.result()
        if got is None:
            return None
        chunk, alignments, restart = got
        with numba_threads(threads), span("hits"):
            return chunk, chunk_hits(queries, references, chunk, alignments, parallel=spare_cores), restart

    def post_process(found) -> tuple[ChunkResult, int] | None:
        """A chunk's result and its cells (for progress), once its hits are built; None after the last one."""
        nonlocal counter
        got = found.result()
        if got is None:
            return None
        chunk, hits, restart = got
        if restart is not None:
            counter = int(restart)
        with numba_threads(threads), span("energies"):
            energies = hit_energies(hits, params, threads, engine.energy_device)
            hits.set_energies(energies, params.energy_cutoff, params.strict)
            result = ChunkResult(chunk, hits, counter)
            if params.site_access is not None:  # --accessibility: dG_open, and --ddg-threshold
                from gamut.scanning.site_access import apply_site_access

                if site_energies is None:
                    raise ValueError("a scan with site_access needs its site_energies (the first pass)")
                result.dg_open = apply_site_access(hits, chunk[hits.pair, 1], site_energies, params.site_access,
                                                   params.noenergy)
            if params.site_types is not None:  # --site-types: only hits of those types are reported
                from gamut.scanning.sites import site_filter

                site_filter(result, scan_input, params.site_types, spare_cores)
        counter += len(result)
        cells = scan_input.chunk_cells(chunk) if progress is not None else 0
        return result, cells

    processing: deque = deque()  # futures of (ChunkResult, cells), in order
    ahead = 1 + lanes if engine.occupies_cores else 1 + GPU_AHEAD_PER_LANE * lanes
    submitted = 0
    finding: deque = deque()  # futures of (pairs, HitTable, restart), in order
    with ThreadPoolExecutor(lanes, thread_name_prefix="gamut-align") as aligner, \
            ThreadPoolExecutor(1, thread_name_prefix="gamut-hits") as hitter, \
            ThreadPoolExecutor(1, thread_name_prefix="gamut-energies") as energizer, numba_threads(threads):
        try:
            while True:
                while len(aligning) < ahead:  # keep the engine up to `ahead` chunks ahead
                    aligning.append(aligner.submit(align_next, submitted))
                    submitted += 1
                    finding.append(hitter.submit(find_hits, aligning[-1]))
                    processing.append(energizer.submit(post_process, finding[-1]))
                got = processing.popleft().result()
                aligning.popleft()
                finding.popleft()
                if got is None:  # past the last chunk
                    break
                result, cells = got
                if progress is not None:
                    progress(cells)
                yield result, spare_cores
        finally:  # done, or stopped early (an error, or the caller closed us): no work for chunks nobody takes
            for future in (*aligning, *finding, *processing):
                future.cancel()
