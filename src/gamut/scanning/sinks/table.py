"""Reported hits as a table of :data:`~gamut.scanning.sinks.columns.HIT_COLUMNS`: TSV (with a
header line) and JSON lines, one row per hit, a chunk at a time."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gamut.io.textcols import TextBuilder, pick
from gamut.io.threads import Parallel
from gamut.scanning.sinks.base import TextSink
from gamut.scanning.sinks.columns import (
    ALIGNMENT_COLUMNS,
    HIT_COLUMNS,
    IdColumns,
    ReportedHits,
)

if TYPE_CHECKING:
    from gamut.scanning.pipeline.job import ScanJob
    from gamut.scanning.pipeline.scan_loop import ChunkResult

#: The integer columns, formatted alike in both layouts.
INTEGER_COLUMNS = ("score", "query_start", "query_end", "ref_start", "ref_end", "aln_length")


class _TableSink(TextSink):
    """The columns both layouts share; subclasses lay out a row."""

    #: The id columns (:class:`IdColumns` names) of the query and reference ids.
    ids = ("qid", "rid")

    def __init__(self, job: ScanJob) -> None:
        super().__init__(job)
        self.columns = IdColumns(self.input)

    def build(self, result: ChunkResult, spare_cores: Parallel) -> TextBuilder:
        b = TextBuilder(spare_cores)
        c = ReportedHits(result, self.input)
        if len(c):
            qid = pick(b, self.columns.get(self.ids[0]), c.q)
            rid = pick(b, self.columns.get(self.ids[1]), c.r)
            ints = {name: b.integers(c.field(name)) for name in INTEGER_COLUMNS}
            b.records(c.pair, 0, c.rows, self.row(b, c, qid, rid, ints, [c.lines(b, w) for w in range(3)]))
        return b

    def row(self, b: TextBuilder, c: ReportedHits, qid, rid, ints: dict, lines: list) -> list:
        raise NotImplementedError


class TsvSink(_TableSink):
    """Tab-separated values with a header line; numbers as miRanda prints them (``%.2f``)."""

    def header(self) -> str:
        return "\t".join(HIT_COLUMNS) + "\n"

    def row(self, b: TextBuilder, c: ReportedHits, qid, rid, ints: dict, lines: list) -> list:
        # '%.2f' of round(x, 2) has the digits of '%.2f' of x (both round the exact value).
        values = [qid, rid, ints["score"], b.fixed(c.energy(), 2), ints["query_start"], ints["query_end"],
                  ints["ref_start"], ints["ref_end"], ints["aln_length"], b.fixed(c.field("identity"), 2),
                  b.fixed(c.field("similarity"), 2), *lines]
        pieces: list = []
        for k, value in enumerate(values):
            pieces += ([] if k == 0 else ["\t"]) + [value]
        pieces.append("\n")
        return pieces


class JsonlSink(_TableSink):
    """One JSON object per hit and line, with the TSV's values (numbers bare, strings quoted)."""

    ids = ("qjson", "rjson")

    def row(self, b: TextBuilder, c: ReportedHits, qid, rid, ints: dict, lines: list) -> list:
        # JSON numbers with the TSV's values: round(x, 2) is the number '%.2f' of x prints.
        two = lambda v: json.dumps(round(float(v), 2))
        values = [qid, rid, ints["score"], b.formatted(c.energy(), two), ints["query_start"], ints["query_end"],
                  ints["ref_start"], ints["ref_end"], ints["aln_length"], b.formatted(c.field("identity"), two),
                  b.formatted(c.field("similarity"), two), *lines]
        pieces: list = []
        for k, (name, value) in enumerate(zip(HIT_COLUMNS, values)):
            quoted = name in ALIGNMENT_COLUMNS  # ids come JSON-encoded; numbers are bare
            pieces += [("{" if k == 0 else ", ") + json.dumps(name) + ": " + ('"' if quoted else ""), value]
            if quoted:
                pieces.append('"')
        pieces.append("}\n")
        return pieces
