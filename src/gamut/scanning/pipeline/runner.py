"""Run a scan as a stream of chunks: pairs as arrays, aligned by an engine, hits and energies as columns.

A chunk is a run of consecutive (query, reference) pairs in miRanda's output order (every
reference for the first query, then the second, ...), bounded in cells and pairs. Its pairs are
an int64 array, never one Python object per pair; the engine returns the chunk's alignments as
columns (:class:`~gamut.scanning.alignments.ChunkAlignments`), :func:`~gamut.scanning.hits.chunk_hits`
builds every hit of the chunk in compiled code, the energies of all its hits are folded in one
parallel call, and writers format the whole chunk from the columns. The engine aligns the next
chunk on a worker thread while the current one is post-processed and written, so memory stays
bounded by two chunks whatever the number of pairs.
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator

import numpy as np

from gamut.io.threads import Parallel, numba_threads
from gamut.scanning.alignments import AlignmentEngine
from gamut.scanning.alphabet import encode
from gamut.scanning.fasta import SeqRecord
from gamut.scanning.hits import NOENERGY_VALUE, HitTable, SequenceSet, chunk_hits
from gamut.scanning.params import ScanParams

#: Cells (query x reference letters) aligned per engine call; bounds memory and keeps output flowing.
DEFAULT_CHUNK_CELLS = 64_000_000
DEFAULT_CHUNK_PAIRS = 50_000


def _sequence_set(ids: list[str], sequences: list[bytes]) -> SequenceSet:
    """Sequences concatenated once, with their class codes computed in one pass."""
    joined = b"".join(sequences)
    offsets = np.zeros(len(sequences) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, sequences), np.int64, len(sequences)), out=offsets[1:])
    return SequenceSet(list(ids), np.frombuffer(joined, np.uint8), encode(joined), offsets, joined.isascii())


@dataclass
class ScanInput:
    """Queries and references as read; references are used as trimmed by -trim, if any."""

    queries: list[SeqRecord]
    references: list[SeqRecord]
    params: ScanParams

    @cached_property
    def query_set(self) -> SequenceSet:
        return _sequence_set([q.id for q in self.queries], [q.sequence for q in self.queries])

    @cached_property
    def reference_set(self) -> SequenceSet:
        """The references as miRanda sees them (after -trim)."""
        trim = self.params.trim
        return _sequence_set([r.id for r in self.references],
                             [r.sequence[:trim] if trim > 0 else r.sequence for r in self.references])

    @cached_property
    def restricted_pairs(self) -> np.ndarray | None:
        """With -restrict: the allowed (query, reference) index pairs in output order; else None."""
        allowed = self.params.restrict
        if allowed is None:
            return None
        q_index: dict[str, list[int]] = {}
        r_index: dict[str, list[int]] = {}
        for k, q in enumerate(self.queries):
            q_index.setdefault(q.id, []).append(k)
        for k, r in enumerate(self.references):
            r_index.setdefault(r.id, []).append(k)
        found = [(qi, ri) for qid, rid in allowed for qi in q_index.get(qid, ()) for ri in r_index.get(rid, ())]
        pairs = np.array(sorted(found), np.int64).reshape(-1, 2)
        return pairs

    @property
    def n_pairs(self) -> int:
        restricted = self.restricted_pairs
        return len(self.queries) * len(self.references) if restricted is None else int(restricted.shape[0])

    def total_cells(self) -> int:
        """Cells (query x reference letters) of the whole scan."""
        ql, rl = self.query_set.lengths(), self.reference_set.lengths()
        restricted = self.restricted_pairs
        if restricted is None:
            return int(ql.sum()) * int(rl.sum())
        return int((ql[restricted[:, 0]] * rl[restricted[:, 1]]).sum())

    def pair_range(self, start: int, stop: int) -> np.ndarray:
        """Pairs ``start..stop-1`` of the output order as an int64 array (n, 2)."""
        restricted = self.restricted_pairs
        if restricted is not None:
            return restricted[start:stop]
        index = np.arange(start, stop, dtype=np.int64)
        q_of = index // max(len(self.references), 1)
        return np.stack((q_of, index - q_of * len(self.references)), axis=1)

    def pair_cells(self, pairs: np.ndarray) -> np.ndarray:
        """Cells (query x reference letters) of each pair of ``pairs``."""
        return self.query_set.lengths()[pairs[:, 0]] * self.reference_set.lengths()[pairs[:, 1]]

    def cut(self, pairs: np.ndarray, chunk_cells: int, chunk_pairs: int) -> Iterator[np.ndarray]:
        """Split consecutive ``pairs`` into chunks as :meth:`chunks` bounds them."""
        return _cut(pairs, self.pair_cells(pairs), chunk_cells, chunk_pairs)

    def chunks(self, chunk_cells: int, chunk_pairs: int) -> Iterator[np.ndarray]:
        """Consecutive runs of pairs (int64 arrays (n, 2)) of about ``chunk_cells`` cells and at
        most ``chunk_pairs`` pairs, in output order."""
        ql, rl = self.query_set.lengths(), self.reference_set.lengths()
        restricted = self.restricted_pairs
        if restricted is not None:
            yield from _cut(restricted, ql[restricted[:, 0]] * rl[restricted[:, 1]], chunk_cells, chunk_pairs)
            return
        n_ref = rl.shape[0]
        total = ql.shape[0] * n_ref
        rcum = np.zeros(n_ref + 1, np.int64)
        np.cumsum(rl, out=rcum[1:])
        k = 0
        while k < total:
            start, budget = k, chunk_cells
            while k < total and budget > 0 and k - start < chunk_pairs:
                q, r = divmod(k, n_ref)
                room = chunk_pairs - (k - start)
                rest = int(ql[q]) * int(rcum[n_ref] - rcum[r])
                if ql[q] == 0:  # an empty query: its pairs cost no cells
                    k += min(n_ref - r, room)
                    continue
                if rest <= budget and n_ref - r <= room:  # the rest of this query's row
                    k += n_ref - r
                    budget -= rest
                    continue
                # Part of the row: references r..stop-1 hold at least the remaining budget.
                need = -(-budget // int(ql[q]))
                stop = int(np.searchsorted(rcum, rcum[r] + need, side="left"))
                stop = min(max(stop, r + 1), n_ref, r + room)
                k = q * n_ref + stop
                break
            index = np.arange(start, k, dtype=np.int64)
            q_of = index // n_ref
            yield np.stack((q_of, index - q_of * n_ref), axis=1)


def _cut(pairs: np.ndarray, cells: np.ndarray, chunk_cells: int, chunk_pairs: int) -> Iterator[np.ndarray]:
    """Split listed pairs into runs of about ``chunk_cells`` cells and at most ``chunk_pairs`` pairs."""
    cum = np.cumsum(cells)
    start = 0
    while start < pairs.shape[0]:
        base = cum[start - 1] if start else 0
        stop = int(np.searchsorted(cum, base + chunk_cells, side="left")) + 1
        stop = min(max(stop, start + 1), start + chunk_pairs, pairs.shape[0])
        yield pairs[start:stop]
        start = stop


@dataclass
class ChunkResult:
    """A chunk of scanned pairs and their hits. Pair p's miRanda running counter is ``counter0 + p + 1``."""

    pairs: np.ndarray  # int64 (n, 2): query index, reference index
    hits: HitTable  # energies and reported flags set
    counter0: int
    #: Whether this chunk's post-processing may take every core (no alignment runs beside it): a
    #: bool, or a callable asked before each kernel (see :func:`gamut.io.threads.run_kernel`).
    parallel: Parallel = False

    def __len__(self) -> int:
        return int(self.pairs.shape[0])


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


def run_scan(
    scan_input: ScanInput,
    engine: AlignmentEngine,
    *,
    threads: int | None = None,
    chunk_cells: int | None = None,
    chunk_pairs: int | None = None,
    progress: Callable[[int], None] | None = None,
    pairs: np.ndarray | None = None,
    counter0: int = 0,
) -> Iterator[ChunkResult]:
    """Yield a :class:`ChunkResult` per chunk of pairs, in miRanda's output order.

    ``progress`` is called with the number of cells finished after each chunk. Chunks hold about
    ``chunk_cells`` cells (default: the engine's ``preferred_chunk_cells``, else 64 M) and at
    most ``chunk_pairs`` pairs (default: the engine's ``preferred_chunk_pairs``, else 50,000).
    The engine aligns chunk k+1 on a worker thread while chunk k is post-processed.
    ``pairs`` (consecutive pairs of the output order, e.g. one partition of a cluster run)
    scans those pairs only; their first pair's running counter is ``counter0 + 1``. ``threads``
    bounds post-processing as well (hits, energies and, between chunks, the caller's writers: Numba's
    thread count in the calling thread until the iteration ends); ``None`` takes every core.
    """
    params = scan_input.params
    if chunk_cells is None:
        chunk_cells = getattr(engine, "preferred_chunk_cells", DEFAULT_CHUNK_CELLS)
    if chunk_pairs is None:
        chunk_pairs = getattr(engine, "preferred_chunk_pairs", DEFAULT_CHUNK_PAIRS)
    queries, references = scan_input.query_set, scan_input.reference_set
    ql, rl = queries.lengths(), references.lengths()
    # Energies go to the GPU with a GPU alignment engine, once the GPU energy engine is verified.
    energy_device = "auto" if getattr(engine, "name", "cpu") == "cuda" else "cpu"

    def align(pairs: np.ndarray):
        return pairs, engine.align(queries, references, pairs, params)

    counter = counter0
    # Post-processing (here and in the caller between chunks: the writers) uses at most `threads`.
    with ThreadPoolExecutor(1, thread_name_prefix="gamut-align") as pool, numba_threads(threads):
        pending: deque = deque()
        if pairs is None:
            chunks = scan_input.chunks(int(chunk_cells), int(chunk_pairs))
        else:
            chunks = scan_input.cut(np.asarray(pairs, np.int64).reshape(-1, 2), int(chunk_cells), int(chunk_pairs))
        exhausted = False
        while True:
            while not exhausted and len(pending) < 2:  # keep the engine one chunk ahead
                pairs = next(chunks, None)
                if pairs is None:
                    exhausted = True
                else:
                    pending.append(pool.submit(align, pairs))
            if not pending:
                break
            pairs, alignments = pending.popleft().result()
            # Post-processing may take every core only while no alignment runs beside it: once the
            # next chunk is aligned (or there is none). Until then the engine (all cores on the CPU;
            # host passes on one core for a GPU) keeps the cores; each kernel asks again, so a chunk
            # whose next one finishes aligning meanwhile goes on on every core.
            spare_cores: Parallel = pending[0].done if pending else True
            hits = chunk_hits(queries, references, pairs, alignments, parallel=spare_cores)
            energies = hit_energies(hits, params, threads, energy_device)
            hits.set_energies(energies, float(params.energy_threshold), params.strict)
            result = ChunkResult(pairs, hits, counter, spare_cores)
            counter += len(result)
            if progress is not None:
                progress(int((ql[pairs[:, 0]] * rl[pairs[:, 1]]).sum()))
            yield result
