"""What every sink formats from: a chunk's reported hits as columns, and the run's id columns.

:data:`HIT_COLUMNS` are the fields of a hit table (API, TSV, JSONL, Parquet), in miRanda's order.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from gamut.io.textcols import StringColumn, TextBuilder
from gamut.scanning.fasta import SeqRecord

if TYPE_CHECKING:
    from gamut.scanning.pipeline.pairs import ScanInput
    from gamut.scanning.pipeline.scan_loop import ChunkResult

#: Columns of a hit table (API, TSV, JSONL, Parquet), in miRanda's order.
HIT_COLUMNS = (
    "query_id", "reference_id", "score", "energy", "query_start", "query_end", "ref_start",
    "ref_end", "aln_length", "identity", "similarity", "aln_mirna", "aln_map", "aln_utr",
)
#: The alignment strings (letters, '|', ':', ' ' and '-' only: quoted without escaping in JSON lines).
ALIGNMENT_COLUMNS = ("aln_mirna", "aln_map", "aln_utr")


def read_line(record: SeqRecord) -> str:
    """miRanda's 'Read Sequence' line of a record."""
    return f"Read Sequence:{record.id} {record.description}({len(record)} nt)\n"


class ReportedHits:
    """The reported hits of a chunk, in output order: their rows in the chunk's hit table, pair,
    query and reference indices, and any field of :class:`~gamut.scanning.hits.HitTable`."""

    def __init__(self, result: ChunkResult, scan_input: ScanInput) -> None:
        hits = result.hits
        self.result = result
        self.rows = np.flatnonzero(hits.reported)
        self.pair = hits.pair[self.rows]
        self.q = result.pairs[self.pair, 0]
        self.r = result.pairs[self.pair, 1]
        self.hits = hits
        self.noenergy = scan_input.params.noenergy

    def __len__(self) -> int:
        return int(self.rows.size)

    def field(self, name: str) -> np.ndarray:
        return getattr(self.hits, name)[self.rows]

    def energy(self) -> np.ndarray:
        """Energies as reported (0 with -noenergy), float32."""
        return np.zeros(self.rows.size, np.float32) if self.noenergy else self.field("energy")

    def energy_rounded(self) -> np.ndarray:
        """Energies as the tables hold them: float64 rounded to 2 decimals (0 with -noenergy)."""
        return np.zeros(self.rows.size) if self.noenergy else np.round(self.field("energy").astype(np.float64), 2)

    def lines(self, builder: TextBuilder, which: int) -> tuple[np.ndarray, np.ndarray]:
        """Alignment line ``which`` (0 query, 1 map, 2 reference) of each reported hit."""
        return builder.buffer(self.hits.text, self.line_starts(which), self.hits.width[self.rows])

    def line_starts(self, which: int) -> np.ndarray:
        h = self.hits
        return h.text_off[self.rows] + which * h.width[self.rows]


class IdColumns:
    """Run-wide string columns (ids, 'Read Sequence' lines), built once per sequence on first use."""

    def __init__(self, scan_input: ScanInput) -> None:
        self.input = scan_input
        self._cache: dict[str, StringColumn] = {}

    def get(self, name: str) -> StringColumn:
        col = self._cache.get(name)
        if col is None:
            q, r = self.input.queries, self.input.references
            texts = {
                "qid": lambda: [x.id for x in q],
                "rid": lambda: [x.id for x in r],
                "qread": lambda: [read_line(x) for x in q],
                "rread": lambda: [read_line(x) for x in r],
                "qjson": lambda: [json.dumps(x.id) for x in q],
                "rjson": lambda: [json.dumps(x.id) for x in r],
            }[name]()
            col = self._cache[name] = StringColumn(texts)
        return col
