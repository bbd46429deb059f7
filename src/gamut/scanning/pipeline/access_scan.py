"""A scan with ``--accessibility`` (:mod:`gamut.scanning.site_access`): every hit needs the opening
energy of its site, which needs the reference folded, and a reference's hits are known only once
every query has been aligned against it (the output order is query-major). So:

1. the scan runs whole (alignment, hits, energies, site filter), holding each chunk's result
   while the held results fit a memory budget, and collecting every hit's span as it goes;
2. the references that have hits are folded once (:func:`~gamut.scanning.site_access.site_energies`,
   on the device the scan aligns on, by a folder made on a thread while the scan aligns);
3. the held results get their ``dG_open`` (and ``--ddg-threshold``; each hit's place among the
   spans is found while the references fold) and go to the sinks; chunks past
   the budget are scanned again from their alignments, kept in a compact form by a
   :class:`~gamut.scanning.pipeline.replay.RecordingEngine` while those fit (else aligned again).

Nothing is aligned, and nothing's energy is computed, twice while the results fit the budget.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from gamut.access.model import SiteAccess
from gamut.io.threads import Parallel
from gamut.progress import progress_bar
from gamut.scanning.alignments import AlignmentEngine
from gamut.scanning.pipeline.pairs import ScanInput
from gamut.scanning.pipeline.replay import RecordingEngine, chunk_key, replay_budget
from gamut.scanning.pipeline.scan_loop import scan_chunks
from gamut.scanning.results import ChunkResult


def result_bytes(result: ChunkResult) -> int:
    """Host bytes a chunk's result holds (its pairs and hit columns)."""
    hits = result.hits
    columns = (getattr(hits, f.name) for f in dataclasses.fields(hits))
    return int(result.pairs.nbytes) + sum(int(a.nbytes) for a in columns if isinstance(a, np.ndarray))


@dataclass
class FirstPass:
    """What the scan's first pass leaves: the results it holds, in order; ``(first pair, pairs)``
    of every chunk after them (not held: past the budget) and their cells; every hit span's key,
    distinct, sorted."""

    held: list[ChunkResult]
    rest: list[tuple[int, int]]
    keys: np.ndarray
    rest_cells: int = 0


def first_pass(scan_input: ScanInput, recorder: RecordingEngine, base: int, budget: int, threads: int | None,
               show_progress: bool) -> FirstPass:
    """Scan every chunk (no site access) through ``recorder``, holding results while they fit
    ``budget`` bytes (their recorded alignments let go), and collect the hit spans' keys
    (:func:`~gamut.scanning.site_access.span_keys` in ``base``)."""
    from gamut.scanning import site_access

    held: list[ChunkResult] = []
    held_bytes = 0
    rest: list[tuple[int, int]] = []
    rest_cells = 0
    keys: list[np.ndarray] = []
    plain = scan_input.with_params(replace(scan_input.params, site_access=None))
    with progress_bar(f"scan [{recorder.name}]", scan_input.total_cells(), show_progress, unit="cells") as tracker:
        for result, _ in scan_chunks(plain, recorder, threads=threads, progress=tracker):
            keys.append(site_access.span_keys(result, base))
            size = result_bytes(result)
            if not rest and held_bytes + size <= budget:
                held.append(result)
                held_bytes += size
                recorder.forget(chunk_key(result.pairs))  # held whole: its alignments are not needed again
            else:
                rest.append((result.counter0, len(result)))
                rest_cells += scan_input.span_cells(result.counter0, result.counter0 + len(result))
    return FirstPass(held, rest, site_access.distinct_keys(np.concatenate(keys) if keys else np.zeros(0, np.int64)),
                     rest_cells)


def fold_sites(folder, scan_input: ScanInput, keys: np.ndarray, base: int, access: SiteAccess,
               show_progress: bool):
    """:func:`~gamut.scanning.site_access.site_energies` with ``folder`` (not yet entered), then closed."""
    from gamut.scanning import site_access

    with folder:
        return site_access.site_energies(scan_input, keys, base, access, folder, show_progress)


def scan_with_site_access(scan_input: ScanInput, engine: AlignmentEngine, *, threads: int | None = None,
                          show_progress: bool = False) -> Iterator[tuple[ChunkResult, Parallel]]:
    """:func:`~gamut.scanning.pipeline.scan_loop.scan_chunks`' ``(result, spare_cores)`` of a scan
    whose params have a ``site_access``, every result with its ``dG_open``, in output order."""
    from gamut.scanning import site_access

    access = scan_input.params.site_access
    if access is None:
        raise ValueError("scan_with_site_access needs params with a site_access")
    budget = replay_budget() // 2  # half for the held results, half for the alignments of the others
    recorder = RecordingEngine(engine, budget)
    base = site_access.span_base(scan_input)
    with ThreadPoolExecutor(1, thread_name_prefix="gamut-folder") as pool:
        making = pool.submit(site_access.site_folder, access, engine, threads)  # ready when the alignment ends
        try:
            done = first_pass(scan_input, recorder, base, budget, threads, show_progress)
        except BaseException:
            with contextlib.suppress(Exception):
                making.result().__exit__(None, None, None)
            raise
        folding = pool.submit(fold_sites, making.result(), scan_input, done.keys, base, access, show_progress)
        # While the references fold (on the GPU: this thread waits), every held hit finds its span's
        # place among the keys, on every core (NumPy's sorts and searches free the GIL).
        with ThreadPoolExecutor(threads or os.cpu_count() or 1, thread_name_prefix="gamut-sites") as lookups:
            places = list(lookups.map(lambda result: site_access.hit_span_index(result, done.keys, base), done.held))
        table = folding.result()
    held, noenergy = done.held, scan_input.params.noenergy
    held.reverse()
    places.reverse()
    while held:  # each result let go once written
        result, at = held.pop(), places.pop()
        result.dg_open = site_access.set_dg_open(result.hits, table.energies[at], access, noenergy)
        yield result, True  # nothing aligns beside the writing now: every core is free
    if done.rest:  # past the budget: scanned again, with a bar of its own
        chunks = (scan_input.pair_range(start, start + n) for start, n in done.rest)
        with progress_bar(f"scan, past the memory budget [{engine.name}]", done.rest_cells, show_progress,
                          unit="cells") as tracker:
            yield from scan_chunks(scan_input, recorder.replay(), threads=threads, chunks=chunks,
                                   counter0=done.rest[0][0], site_energies=table, progress=tracker)
