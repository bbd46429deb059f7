"""Run a scan: pairs in miRanda's order, aligned in chunks by an engine, post-processed, written."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator

import numpy as np

from gamut.scan.alignments import AlignmentEngine, EncodedSeq
from gamut.scan.alphabet import encode
from gamut.scan.fasta import SeqRecord
from gamut.scan.hits import NOENERGY_VALUE, Hit, SequenceSet, chunk_hits, mark_reported
from gamut.scan.params import ScanParams
from gamut.scan.report import PairResult

#: Cells (query x reference letters) aligned per engine call; bounds memory and keeps output flowing.
DEFAULT_CHUNK_CELLS = 64_000_000
DEFAULT_CHUNK_PAIRS = 50_000


@dataclass
class ScanInput:
    """Queries and references as read (references already trimmed by -trim, if any)."""

    queries: list[SeqRecord]
    references: list[SeqRecord]
    params: ScanParams

    def __post_init__(self) -> None:
        trim = self.params.trim
        self.trimmed = [r.sequence[:trim] if trim > 0 else r.sequence for r in self.references]
        self.query_codes = [EncodedSeq(encode(q.sequence)) for q in self.queries]
        self.reference_codes = [EncodedSeq(encode(s)) for s in self.trimmed]

    @cached_property
    def flat_queries(self) -> SequenceSet:
        """The queries concatenated once, for the chunk post-processing (:func:`chunk_hits`)."""
        return SequenceSet.build([q.id for q in self.queries], [q.sequence for q in self.queries],
                                 [c.codes for c in self.query_codes])

    @cached_property
    def flat_references(self) -> SequenceSet:
        """The references as miRanda sees them (after -trim), concatenated once."""
        return SequenceSet.build([r.id for r in self.references], self.trimmed,
                                 [c.codes for c in self.reference_codes])

    def pairs(self) -> Iterator[tuple[int, int]]:
        """All (query, reference) index pairs in output order, after -restrict (lazily)."""
        allowed = self.params.restrict
        for qi, q in enumerate(self.queries):
            for ri, r in enumerate(self.references):
                if allowed is None or (q.id, r.id) in allowed:
                    yield qi, ri

    def pair_cells(self, qi: int, ri: int) -> int:
        return len(self.query_codes[qi]) * len(self.reference_codes[ri])

    def total_cells(self) -> int:
        """Cells (query x reference letters) of the whole scan."""
        if self.params.restrict is None:
            return sum(map(len, self.query_codes)) * sum(map(len, self.reference_codes))
        return sum(self.pair_cells(q, r) for q, r in self.pairs())


def _chunks(
    scan_input: ScanInput, chunk_cells: int, chunk_pairs: int
) -> Iterator[tuple[list[tuple[int, int]], int]]:
    """Consecutive runs of at most ``chunk_pairs`` pairs and about ``chunk_cells`` cells, with their cell counts."""
    chunk: list[tuple[int, int]] = []
    cells = 0
    for q, r in scan_input.pairs():
        chunk.append((q, r))
        cells += scan_input.pair_cells(q, r)
        if cells >= chunk_cells or len(chunk) >= chunk_pairs:
            yield chunk, cells
            chunk, cells = [], 0
    if chunk:
        yield chunk, cells


def assign_energies(hits: list[Hit], params: ScanParams, threads: int | None) -> None:
    """Fold every overlap-passing hit (spec §9) in one batch, or apply the -noenergy value."""
    if not hits:
        return
    if params.noenergy:
        for hit in hits:
            hit.energy = NOENERGY_VALUE
        return
    from gamut.scan.energy import duplex_energies

    energies = duplex_energies([h.fold_string for h in hits], model=params.energy_model, threads=threads)
    for hit, energy in zip(hits, energies):
        hit.energy = np.float32(energy)


def run_scan(
    scan_input: ScanInput,
    engine: AlignmentEngine,
    *,
    threads: int | None = None,
    chunk_cells: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[PairResult]:
    """Yield a :class:`PairResult` per scanned pair, in miRanda's output order.

    ``progress`` is called with the number of cells finished after each chunk. Chunks hold
    ``chunk_cells`` cells (default: the engine's ``preferred_chunk_cells``, else 64 M) and at most
    the engine's ``preferred_chunk_pairs`` pairs (else 50,000).
    """
    params = scan_input.params
    if chunk_cells is None:
        chunk_cells = getattr(engine, "preferred_chunk_cells", DEFAULT_CHUNK_CELLS)
    chunk_pairs = getattr(engine, "preferred_chunk_pairs", DEFAULT_CHUNK_PAIRS)
    counter = 0
    for chunk, cells in _chunks(scan_input, chunk_cells, chunk_pairs):
        pairs = np.asarray(chunk, dtype=np.int64)
        alignments = engine.align(scan_input.query_codes, scan_input.reference_codes, pairs, params)
        per_pair = chunk_hits(scan_input.flat_queries, scan_input.flat_references, pairs, alignments)
        queries, references, trimmed = scan_input.queries, scan_input.references, scan_input.trimmed
        results: list[PairResult] = []
        for (qi, ri), hits in zip(chunk, per_pair):
            counter += 1
            results.append(PairResult(queries[qi], references[ri], len(trimmed[ri]), counter, hits))
        all_hits = [h for res in results for h in res.hits]
        assign_energies(all_hits, params, threads)
        mark_reported(all_hits, float(params.energy_threshold), params.strict)
        if progress is not None:
            progress(cells)
        yield from results
