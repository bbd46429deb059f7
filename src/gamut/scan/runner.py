"""Run a scan: pairs in miRanda's order, aligned in chunks by an engine, post-processed, written."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from gamut.scan.alignments import AlignmentEngine, EncodedSeq
from gamut.scan.alphabet import encode
from gamut.scan.fasta import SeqRecord
from gamut.scan.hits import NOENERGY_VALUE, Hit, mark_reported, pair_hits
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

    def pairs(self) -> list[tuple[int, int]]:
        """All (query, reference) index pairs in output order, after -restrict."""
        allowed = self.params.restrict
        return [
            (qi, ri)
            for qi, q in enumerate(self.queries)
            for ri, r in enumerate(self.references)
            if allowed is None or (q.id, r.id) in allowed
        ]

    def cells(self, pairs: Sequence[tuple[int, int]]) -> int:
        return sum(len(self.query_codes[q]) * len(self.reference_codes[r]) for q, r in pairs)


def _chunks(scan_input: ScanInput, pairs: list[tuple[int, int]], chunk_cells: int) -> Iterator[list[tuple[int, int]]]:
    chunk: list[tuple[int, int]] = []
    cells = 0
    for q, r in pairs:
        chunk.append((q, r))
        cells += len(scan_input.query_codes[q]) * len(scan_input.reference_codes[r])
        if cells >= chunk_cells or len(chunk) >= DEFAULT_CHUNK_PAIRS:
            yield chunk
            chunk, cells = [], 0
    if chunk:
        yield chunk


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
    chunk_cells: int = DEFAULT_CHUNK_CELLS,
    progress: Callable[[int], None] | None = None,
) -> Iterator[PairResult]:
    """Yield a :class:`PairResult` per scanned pair, in miRanda's output order.

    ``progress`` is called with the number of cells finished after each chunk.
    """
    params = scan_input.params
    counter = 0
    for chunk in _chunks(scan_input, scan_input.pairs(), chunk_cells):
        alignments = engine.align(
            scan_input.query_codes, scan_input.reference_codes, np.asarray(chunk, dtype=np.int64), params
        )
        results: list[PairResult] = []
        for (qi, ri), found in zip(chunk, alignments):
            counter += 1
            q, r = scan_input.queries[qi], scan_input.references[ri]
            seq = scan_input.trimmed[ri]
            hits = pair_hits(q.id, q.sequence, r.id, seq, found)
            results.append(PairResult(q, r, len(seq), counter, hits))
        all_hits = [h for res in results for h in res.hits]
        assign_energies(all_hits, params, threads)
        mark_reported(all_hits, float(params.energy_threshold), params.strict)
        if progress is not None:
            progress(scan_input.cells(chunk))
        yield from results
